#!/bin/bash
# The simulated libraries export the whole ABI of Debian's libibverbs.so.1,
# librdmacm.so.1 and libibumad.so.3: every symbol in its version node, default and
# compatibility versions alike, and the same chain of version definitions. So a newer rdma-core that adds a
# call shows here as a failure, not as a program dying with "undefined symbol".
#
# Usage: abi.sh (environment SIMLIB: the directory of the simulated libraries)
set -eu

: "${SIMLIB:?SIMLIB must name the directory of the simulated libraries}"
# real_lib NAME: the path of Debian's library NAME, from the dynamic linker's cache.
real_lib() {
	ldconfig -p | awk -v n="$1" '$1 == n {print $NF; exit}'
}
fail=0

# syms LIB: "name version" for every defined dynamic symbol; compatibility (hidden)
# versions keep objdump's parentheses.
syms() {
	objdump -T "$1" | awk '($0 ~ / DF / || $0 ~ / DO /) && $0 !~ /\*UND\*/ {print $NF, $(NF-1)}' |
		sort -u
}

# verdefs LIB: the version definitions with their parents, one line each.
verdefs() {
	objdump -p "$1" | awk '/^Version definitions:/ {on = 1; next}
		/^Version References:/ {on = 0}
		on && NF >= 4 {if (cur) print cur; cur = $4; next}
		on && NF == 1 {cur = cur " <- " $1}
		END {if (cur) print cur}' | grep -v '^lib' | grep -v SIMFABRIC || true
}

for lib in libibverbs.so.1 librdmacm.so.1 libibumad.so.3; do
	real=$(real_lib "$lib")
	sim=$SIMLIB/$lib
	[ -n "$real" ] && [ -f "$real" ] || {
		echo "not ok - $lib not found (libibverbs1/librdmacm1/libibumad3 installed?)"
		exit 1
	}
	missing=$(comm -23 <(syms "$real") <(syms "$sim"))
	n_real=$(syms "$real" | wc -l)
	if [ -n "$missing" ]; then
		echo "not ok - $lib: $(printf '%s\n' "$missing" | wc -l) of $n_real symbols missing:"
		printf '%s\n' "$missing" | sed 's/^/#   /'
		fail=1
	else
		echo "ok - $lib: all $n_real symbols of $real exported with their versions"
	fi
	extra=$(comm -13 <(syms "$real") <(syms "$sim") | grep -v SIMFABRIC_PRIVATE_1 || true)
	if [ -n "$extra" ]; then
		echo "not ok - $lib exports what the real library does not:"
		printf '%s\n' "$extra" | sed 's/^/#   /'
		fail=1
	else
		echo "ok - $lib: nothing public beyond the real library"
	fi
	if diff <(verdefs "$real") <(verdefs "$sim") >/dev/null; then
		echo "ok - $lib: the same version nodes and parents"
	else
		echo "not ok - $lib: version definitions differ:"
		diff <(verdefs "$real") <(verdefs "$sim") | sed 's/^/#   /' || true
		fail=1
	fi
done
exit $fail
