#!/bin/bash
# ucx_perftest from Debian's ucx-utils, unmodified, over UCX's UD transport (ud_verbs):
# an active-message latency test of 1000 iterations between a server and a client, their
# own exchange over TCP on 127.0.0.1. UCX uses an RDMA device only when its
# /dev/infiniband/uverbs<N> node exists: both run under `simfab exec`, which provides
# the nodes in a private mount namespace (needs root; skipped otherwise).
#
# ucx_perftest's server takes the client's test parameters, the device (-d) included:
# on one host both processes use the client's device, and the datagrams go from that
# port to itself. On RoCE UCX finds the destination address in the 40-byte header by
# the packet type that mlx5 reports in wc.sl (RoCEv2/IPv4: 0xA); with sl 0 it looks at
# the wrong bytes, drops every datagram and the test times out.
#
# Usage: ucx.sh ib|roce
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

[ $# = 1 ] || {
	echo "usage: $0 ib|roce" >&2
	exit 2
}
case $1 in
ib) dev=sim_ib2 ;;
roce) dev=sim_roce2 ;;
*)
	echo "usage: $0 ib|roce" >&2
	exit 2
	;;
esac

sf_init "ucx-$1"
sf_need ucx_perftest
out=$SF_TMP
iters=1000
# Skipped where the namespace cannot be made (not root, no overlayfs: exit 1); a simfab
# without exec (bad usage, exit 2) fails.
rc=0
"$SIMFAB" exec true 2>"$out/exec.txt" || rc=$?
if [ "$rc" = 1 ]; then
	sf_log "SKIP: simfab exec cannot run here (root and overlayfs needed): $(cat "$out/exec.txt")"
	exit 77
fi
[ "$rc" = 0 ] || sf_fail "simfab exec true exited with $rc" "$out/exec.txt"
# UCX's own malloc/mmap hooks stay off: in the sanitizer build ASan owns the allocator.
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no

port=$(sf_free_tcp_port)

sf_start "$out/server.txt" 90 "$SIMFAB" exec ucx_perftest -p "$port"
srv=$SF_PID
sf_wait_listen "$srv" "$port" "$out/server.txt"

rc=0
sf_tool 60 "$SIMFAB" exec ucx_perftest -d "$dev:1" -x ud_verbs -t am_lat -n "$iters" \
	-p "$port" 127.0.0.1 >"$out/client.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || sf_fail "client exited with $rc" "$out/client.txt" "$out/server.txt"
sf_wait_exit "$srv"
[ "$SF_RC" = 0 ] || sf_fail "server exited with $SF_RC" "$out/server.txt" "$out/client.txt"
grep -Eq "^Final: +$iters " "$out/client.txt" || sf_fail "no final result" "$out/client.txt"

# Both processes on the client's device: every message and its answer crossed its port.
v=$(sf_counter "$dev" xmit_pkts)
[ "$v" -ge $((2 * iters)) ] || sf_fail "$dev sent $v datagrams, expected at least $((2 * iters))"
v=$(sf_counter "$dev" rcv_pkts)
[ "$v" -ge $((2 * iters)) ] || sf_fail "$dev received $v datagrams, expected at least $((2 * iters))"
sf_log "PASS"
