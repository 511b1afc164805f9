#!/bin/bash
# bench/harness.py checks what it needs before it runs anything: without matplotlib (a
# PYTHONPATH entry that hides it) and without valgrind (a PATH without it) it exits 2 at
# once with a one-line message naming the missing part, runs no bridge and writes no
# result; --no-callgrind needs no valgrind.
set -eu
build=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "bench-deps: FAIL: $*" >&2
	exit 1
}

# A matplotlib that cannot be imported, found first.
mkdir -p "$tmp/hide/matplotlib"
echo 'raise ImportError("hidden by tests/bench/deps.sh")' >"$tmp/hide/matplotlib/__init__.py"
rc=0
PYTHONPATH="$tmp/hide" /usr/bin/python3 "$src/bench/harness.py" --quick --no-callgrind \
	-B "$build" -o "$tmp/out1" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "no matplotlib: exit $rc, expected 2: $(cat "$tmp/out" "$tmp/err")"
grep -q 'python3-matplotlib missing' "$tmp/err" || fail "no matplotlib: $(cat "$tmp/err")"
grep -q '^\[1/' "$tmp/err" && fail "no matplotlib: a step ran: $(cat "$tmp/err")"
[ ! -e "$tmp/out1" ] || fail "no matplotlib: results written"

# A PATH without valgrind (python3, git and the coreutils stay reachable by full path).
mkdir "$tmp/bin"
for t in git nice awk; do
	p=$(command -v "$t") && ln -s "$p" "$tmp/bin/$t"
done
rc=0
PATH="$tmp/bin" /usr/bin/python3 "$src/bench/harness.py" --quick -B "$build" -o "$tmp/out2" \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "no valgrind: exit $rc, expected 2: $(cat "$tmp/out" "$tmp/err")"
grep -q 'valgrind missing' "$tmp/err" || fail "no valgrind: $(cat "$tmp/err")"
grep -q '^\[1/' "$tmp/err" && fail "no valgrind: a step ran: $(cat "$tmp/err")"
[ ! -e "$tmp/out2" ] || fail "no valgrind: results written"
echo "bench-deps: a missing matplotlib or valgrind stops the harness before it starts"
