#!/bin/bash
# udaddy from Debian's rdmacm-utils, unmodified, on the simulated fabric: UD "connections"
# through SIDR (rdma_listen / rdma_connect / rdma_accept on RDMA_PS_UDP ids). The client
# learns the server's QPN and Q_Key from the ESTABLISHED event, both exchange 10
# datagrams (udaddy's default) and exit 0.
#
# Usage: udaddy.sh KIND MODE
#   KIND  ib    server on sim_ib1 (198.18.0.2), client on sim_ib2 (198.18.0.3)
#         roce  server on sim_roce1 (198.19.0.2), client on sim_roce2 (198.19.0.3)
#   MODE  bound  the server binds its address (-b)
#         any    the server listens on the wildcard address (every device)
#         many   bound, 30 connections (-c 30): more requests at once than a channel's
#                socket holds (net.unix.max_dgram_qlen), queued and retried
# Before the server starts, a client must get RDMA_CM_EVENT_UNREACHABLE with status 1
# (IB_SIDR_UNSUPPORTED: nothing listens on the service) and exit with that status.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

usage() {
	echo "usage: $0 ib|roce bound|any|many" >&2
	exit 2
}

[ $# = 2 ] || usage
kind=$1
mode=$2
case $kind in
ib)
	net=198.18.0
	dev=sim_ib
	;;
roce)
	net=198.19.0
	dev=sim_roce
	;;
*)
	usage
	;;
esac
conns=1
case $mode in
bound) sargs="-b $net.2" ;;
any) sargs="" ;;
many)
	conns=30
	sargs="-b $net.2 -c $conns"
	;;
*) usage ;;
esac

sf_init "udaddy-$kind-$mode"
sf_need udaddy
out=$SF_TMP
count=$((10 * conns))

# No listener yet: the service is unknown to the server's CM.
rc=0
sf_tool 30 udaddy -s "$net.2" -b "$net.3" >"$out/early.txt" 2>&1 || rc=$?
grep -q '^udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1$' "$out/early.txt" ||
	sf_fail "client without server: no UNREACHABLE status 1" "$out/early.txt"
[ "$rc" = 1 ] || sf_fail "client without server exited with $rc, expected 1" "$out/early.txt"

# shellcheck disable=SC2086
sf_start "$out/server.txt" 60 udaddy $sargs
srv=$SF_PID
sf_wait_line "$out/server.txt" '^udaddy: starting server$' "$srv" 20
# The listener is in the fabric once udaddy's rdma_listen returned.
# listening PID: udaddy's port 7174 is in the fabric's listeners; fails the test when
# it is not and PID exited.
listening() {
	! "$SIMFAB" listeners | grep -Eq "^udp +7174 " || return 0
	kill -0 "$1" 2>/dev/null || sf_fail "server exited before listening" "$out/server.txt"
	return 1
}
t_wait_until 20 listening "$srv" || sf_fail "server not listening within 20 s" "$out/server.txt"
"$SIMFAB" listeners >"$out/listeners.txt"
if [ "$mode" != any ]; then
	want="^udp +7174 +$net\\.2 +${dev}1 +[0-9]+$"
else
	want='^udp +7174 +\* +\* +[0-9]+$'
fi
grep -Eq "$want" "$out/listeners.txt" || sf_fail "simfab listeners: no '$want'" "$out/listeners.txt"

sf_start "$out/client.txt" 60 udaddy -s "$net.2" -b "$net.3" -c "$conns"
cli=$SF_PID
for who in client server; do
	if [ "$who" = client ]; then pid=$cli; else pid=$srv; fi
	sf_wait_exit "$pid"
	[ "$SF_RC" = 0 ] || sf_fail "$who exited with $SF_RC" "$out/client.txt" "$out/server.txt"
	grep -q '^data transfers complete$' "$out/$who.txt" ||
		sf_fail "$who: no data transfers" "$out/$who.txt"
	grep -q '^return status 0$' "$out/$who.txt" || sf_fail "$who failed" "$out/$who.txt"
done
grep -q '^udaddy: event' "$out/client.txt" && sf_fail "client saw an error event" "$out/client.txt"

# The datagrams went between the two ports: the client's 10 per connection to the
# server's QP (the QPN of the ESTABLISHED event) and the server's replies; none dropped.
sf_expect_counter "${dev}2" xmit_pkts "$count"
sf_expect_counter "${dev}1" rcv_pkts "$count"
sf_expect_counter "${dev}1" xmit_pkts "$count"
sf_expect_counter "${dev}2" rcv_pkts "$count"
for d in "${dev}1" "${dev}2"; do
	sf_expect_counter "$d" qkey_viol 0
	sf_expect_counter "$d" out_of_buffer 0
done
# The listener is gone with its process.
"$SIMFAB" listeners >"$out/listeners.txt"
[ ! -s "$out/listeners.txt" ] || sf_fail "listener left after the server exited" "$out/listeners.txt"
sf_log "PASS"
