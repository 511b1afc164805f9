#!/bin/bash
# simfab exec without a network namespace: the program sees /dev/infiniband/umad<N>,
# issm<N> and uverbs<N> of the fabric's 8 devices (uverbs read-write, as UCX wants), the
# host's /dev/shm (the fabric's files) and its other /dev mounts; the host's /dev is
# unchanged afterwards and no scratch directory is left. Needs root (skipped otherwise).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init devns
out=$SF_TMP
# Skipped where the namespace cannot be made (not root, no overlayfs: exit 1); a simfab
# without exec (bad usage, exit 2) fails.
rc=0
"$SIMFAB" exec true 2>"$out/exec.txt" || rc=$?
if [ "$rc" = 1 ]; then
	sf_log "SKIP: simfab exec cannot run here (root and overlayfs needed): $(cat "$out/exec.txt")"
	exit 77
fi
[ "$rc" = 0 ] || sf_fail "simfab exec true exited with $rc" "$out/exec.txt"
before=$(ls -A /dev/infiniband 2>/dev/null || echo absent)
tmp_before=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'simfab-devns.*' | wc -l)
marker=/dev/shm/simfabric.$SIMFABRIC.devns-marker
echo here >"$marker"
rc=0
# shellcheck disable=SC2016 # expanded by the inner shell
"$SIMFAB" exec sh -c '
	for i in $(seq 0 7); do
		n=/dev/infiniband/uverbs$i
		[ -c "$n" ] && [ -r "$n" ] && [ -w "$n" ] || { echo "no node $n"; exit 1; }
		[ -c /dev/infiniband/umad$i ] && [ -c /dev/infiniband/issm$i ] ||
			{ echo "no umad$i/issm$i"; exit 1; }
	done
	[ "$(ls /dev/infiniband | wc -l)" = 24 ] || { echo "not 24 nodes"; exit 1; }
	stat -c "%n %t:%T %a" /dev/infiniband/uverbs3
	[ "$(cat "$1")" = here ] || { echo "not the host /dev/shm"; exit 1; }
	[ -c /dev/null ] && [ -d /dev/pts ] || { echo "/dev incomplete"; exit 1; }
	echo inside-ok' sh "$marker" >"$out/inside.txt" 2>&1 || rc=$?
rm -f "$marker"
if [ "$rc" != 0 ] || ! grep -q '^inside-ok$' "$out/inside.txt"; then
	sf_fail "the namespace is not as expected (rc $rc)" "$out/inside.txt"
fi
# The kernel's numbers (hex): uverbs<N> is 231:192+N.
grep -qx '/dev/infiniband/uverbs3 e7:c3 666' "$out/inside.txt" ||
	sf_fail "uverbs3 is not 231:195 mode 666" "$out/inside.txt"
after=$(ls -A /dev/infiniband 2>/dev/null || echo absent)
[ "$before" = "$after" ] || sf_fail "the host's /dev/infiniband changed: '$before' -> '$after'"
tmp_after=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'simfab-devns.*' | wc -l)
[ "$tmp_before" = "$tmp_after" ] || sf_fail "a scratch directory was left in ${TMPDIR:-/tmp}"
sf_log "PASS"
