# Instructions executed by one object file's code, from a callgrind output file:
#   awk -v obj=ib2roce -f bench/cg_engine.awk callgrind.out
#   awk -v obj=ib2roce -v sim='/simfabric/' -f bench/cg_engine.awk callgrind.out
# Counts the cost lines of every function whose object's path ends in /OBJ, inlined code
# included (callgrind names inlined header code after its file, but keeps the object).
# The line after a calls= line is the inclusive cost of that call: skipped, unless `sim`
# is set: then the calls OBJ's functions make into other objects whose path does not
# match the regular expression SIM (libc, liburcu, libnuma, ...) count with their
# inclusive cost (what they call in turn included), and calls into SIM (the simulated
# libibverbs and librdmacm) do not. Without `sim`: OBJ's own code only.
/^c?ob=/ {
	is_c = substr($0, 1, 1) == "c"
	v = substr($0, index($0, "=") + 1)
	if (match(v, /^\([0-9]+\)/)) {
		id = substr(v, RSTART, RLENGTH)
		rest = substr(v, RLENGTH + 2)
		if (rest != "")
			name[id] = rest
		v = name[id]
	}
	if (is_c)
		callee = v
	else
		cur = v
	next
}
/^fn=/ { callee = ""; next }
/^calls=/ {
	skip = 1
	# The callee's object: the cob= line before this calls=, else the caller's object.
	cobj = callee != "" ? callee : cur
	callee = ""
	next
}
/^[0-9+*-]/ {
	if (skip) {
		skip = 0
		if (sim != "" && cur ~ ("/" obj "$") && cobj !~ ("/" obj "$") && cobj !~ sim)
			total += $NF
		next
	}
	if (cur ~ ("/" obj "$"))
		total += $NF
	next
}
END { printf "%d\n", total }
