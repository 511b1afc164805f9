# Instructions executed in the code of one object file, from a callgrind output file:
#   awk -v obj=ib2roce -f bench/cg_engine.awk callgrind.out
# Counts the cost lines of every function whose object's path ends in /OBJ, inlined code
# included (callgrind names inlined header code after its file, but keeps the object),
# and nothing the object calls in other objects (libibverbs = simfabric, libc, liburcu).
# The line after a calls= line is the inclusive cost of that call: skipped.
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
	if (!is_c)
		cur = v
	next
}
/^calls=/ { skip = 1; next }
/^[0-9+*-]/ {
	if (skip) { skip = 0; next }
	if (cur ~ ("/" obj "$"))
		total += $NF
	next
}
END { printf "%d\n", total }
