#!/bin/bash
# mckey from Debian's rdmacm-utils, unmodified, with an IPv6 group on RoCE
# (docs/simfabric.md, "IPv6 on RoCE ports"): bound to the RoCE port's IPv6 address it
# resolves the group, then rdma_join_multicast is refused with the kernel's ENOTSUPP
# (errno 524), as Linux's cma_iboe_join_multicast refuses IPv6 groups on a RoCE v2 port;
# no group is made on the fabric. The same mckey with the port's IPv4 address and an
# IPv4 group, right after, joins and exchanges its messages (IPv4 unchanged).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init mckey6
sf_need mckey
out=$SF_TMP

rc=0
sf_tool 30 mckey -m ff0e::1234 -b fd00:0:0:1::2 -C 1 >"$out/v6.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] || sf_fail "mckey joined an IPv6 group on RoCE" "$out/v6.txt"
grep -q '^mckey: failure joining: Unknown error 524$' "$out/v6.txt" ||
	sf_fail "mckey: no 'failure joining: Unknown error 524' (ENOTSUPP)" "$out/v6.txt"
"$SIMFAB" groups >"$out/groups.txt" 2>&1 || sf_fail "simfab groups failed" "$out/groups.txt"
if grep -Fq 'ff0e::1234' "$out/groups.txt"; then
	sf_fail "a group ff0e::1234 exists after the refused join" "$out/groups.txt"
fi

# An address no port owns: mckey's bind fails (EADDRNOTAVAIL), as on a host without it.
rc=0
sf_tool 30 mckey -m ff0e::1234 -b fd00:0:0:9::1 -C 1 >"$out/nobind.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q '^mckey: addr bind failure: Cannot assign requested address$' \
	"$out/nobind.txt" || sf_fail "mckey -b fd00:0:0:9::1: status $rc" "$out/nobind.txt"

# IPv4 on the same ports still works: a receiver and a sender, 5 messages.
sf_start "$out/recv.txt" 60 mckey -m 239.1.2.9 -b 198.19.0.2 -C 5
r=$SF_PID
sf_wait_line "$out/recv.txt" 'joined' "$r" 20
sf_tool 30 mckey -m 239.1.2.9 -b 198.19.0.4 -s -o -C 5 >"$out/send.txt" 2>&1 ||
	sf_fail "IPv4 sender failed" "$out/send.txt"
sf_wait_line "$out/recv.txt" '^data transfers complete$' "$r" 15
sf_wait_exit "$r"
[ "$SF_RC" = 0 ] || sf_fail "IPv4 receiver exited with $SF_RC" "$out/recv.txt"
sf_log "PASS"
