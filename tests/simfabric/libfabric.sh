#!/bin/bash
# fi_pingpong from Debian's libfabric-bin, unmodified, on libfabric's verbs provider
# over UD: 100 ping-pongs of 64 bytes with data checks (-c) between a server on device 1
# and a client on device 2, fi_pingpong's own control connection over TCP on 127.0.0.1.
#
# Usage: libfabric.sh MODE
#   dgram-ib    verbs FI_EP_DGRAM (a UD QP per endpoint) on sim_ib1/sim_ib2
#   dgram-roce  the same on sim_roce1/sim_roce2
#   rxd-ib      verbs;ofi_rxd: libfabric's reliable datagram layer (FI_EP_RDM) over it
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

usage() {
	echo "usage: $0 dgram-ib|dgram-roce|rxd-ib" >&2
	exit 2
}
[ $# = 1 ] || usage
case $1 in
dgram-ib) prov=verbs ep=dgram dev=sim_ib ;;
dgram-roce) prov=verbs ep=dgram dev=sim_roce ;;
rxd-ib) prov='verbs;ofi_rxd' ep=rdm dev=sim_ib ;;
*) usage ;;
esac

sf_init "libfabric-$1"
sf_need fi_pingpong
out=$SF_TMP
iters=100

port=$(sf_free_tcp_port)

sf_start "$out/server.txt" 90 fi_pingpong -p "$prov" -e "$ep" -d "${dev}1-dgram" -B "$port" \
	-I "$iters" -S 64 -c
srv=$SF_PID
sf_wait_listen "$srv" "$port" "$out/server.txt"

rc=0
sf_tool 60 fi_pingpong -p "$prov" -e "$ep" -d "${dev}2-dgram" -P "$port" -I "$iters" -S 64 \
	-c 127.0.0.1 >"$out/client.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || sf_fail "client exited with $rc" "$out/client.txt" "$out/server.txt"
sf_wait_exit "$srv"
[ "$SF_RC" = 0 ] || sf_fail "server exited with $SF_RC" "$out/server.txt" "$out/client.txt"
for side in client server; do
	grep -Eq "^64 +$iters +=$iters " "$out/$side.txt" ||
		sf_fail "$side: not $iters transfers acknowledged" "$out/$side.txt"
done
# Every ping and pong crossed the fabric between the two ports.
for d in "${dev}1" "${dev}2"; do
	v=$(sf_counter "$d" xmit_pkts)
	[ "$v" -ge "$iters" ] || sf_fail "$d sent $v datagrams, expected at least $iters"
	v=$(sf_counter "$d" rcv_pkts)
	[ "$v" -ge "$iters" ] || sf_fail "$d received $v datagrams, expected at least $iters"
done
sf_log "PASS"
