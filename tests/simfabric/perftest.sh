#!/bin/bash
# perftest from Debian's perftest package, unmodified, over UD with its default options
# (the ibv_wr_* post API on QPs made by ibv_create_qp_ex with send_ops_flags): a server
# on device 1 and a client on device 2 of a segment, perftest's own out-of-band exchange
# over TCP on 127.0.0.1. Both must finish their 1000 iterations and exit 0; the port
# counters show the datagrams on the fabric.
#
# Usage: perftest.sh KIND PROGRAM
#   KIND     ib (sim_ib1, sim_ib2) or roce (sim_roce1, sim_roce2: perftest picks the
#            RoCE v2 GID of the port from the GID table in the simulated sysfs)
#   PROGRAM  ib_send_bw or ib_send_lat
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

usage() {
	echo "usage: $0 ib|roce ib_send_bw|ib_send_lat" >&2
	exit 2
}

[ $# = 2 ] || usage
kind=$1
prog=$2
case $kind in
ib) dev=sim_ib link=IB ;;
roce) dev=sim_roce link=Ethernet ;;
*) usage ;;
esac
case $prog in
ib_send_bw) size=4096 ;; # perftest sends MTU-sized datagrams over UD
ib_send_lat) size=2 ;;
*) usage ;;
esac

sf_init "perftest-$kind-${prog#ib_send_}"
# In the sanitizer build (ASan preloaded into perftest, see tests/lib/sf.sh) LeakSanitizer would
# report perftest's own leaks at exit (its buffers and parameter strings, the device
# list, one of its CQs: perftest frees none of them) and fail the run; the
# simulated libraries' own leaks are checked by the instrumented tests (wrapi, conform).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
sf_need "$prog"
out=$SF_TMP
iters=1000

# perftest exchanges QP numbers and addresses over TCP.
port=$(sf_free_tcp_port)

sf_start "$out/server.txt" 90 "$prog" -c UD -d "${dev}1" -p "$port"
srv=$SF_PID
sf_wait_listen "$srv" "$port" "$out/server.txt"

rc=0
sf_tool 90 "$prog" -c UD -d "${dev}2" -p "$port" 127.0.0.1 >"$out/client.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || sf_fail "client exited with $rc" "$out/client.txt" "$out/server.txt"
sf_wait_exit "$srv"
[ "$SF_RC" = 0 ] || sf_fail "server exited with $SF_RC" "$out/server.txt" "$out/client.txt"

for side in client server; do
	f=$out/$side.txt
	grep -Eq '^ ibv_wr\* API +: ON' "$f" || sf_fail "$side: not on the ibv_wr_* API" "$f"
	grep -Eq '^ Connection type : UD' "$f" || sf_fail "$side: not UD" "$f"
	grep -Eq "^ Link type +: $link\$" "$f" || sf_fail "$side: link type not $link" "$f"
	grep -Eq "^ $size +$iters " "$f" || sf_fail "$side: no result line for $iters x $size bytes" "$f"
done

# Every iteration crossed the fabric: the client's port sent at least 1000 datagrams
# and the server's port received them (the latency test sends both ways).
for d in "${dev}2" "${dev}1"; do
	v=$(sf_counter "$d" xmit_pkts)
	if [ "$d" = "${dev}2" ] || [ "$prog" = ib_send_lat ]; then
		[ "$v" -ge "$iters" ] || sf_fail "$d sent $v datagrams, expected at least $iters"
	fi
done
v=$(sf_counter "${dev}1" rcv_pkts)
[ "$v" -ge "$iters" ] || sf_fail "${dev}1 received $v datagrams, expected at least $iters"
if [ "$prog" = ib_send_lat ]; then
	v=$(sf_counter "${dev}2" rcv_pkts)
	[ "$v" -ge "$iters" ] || sf_fail "${dev}2 received $v datagrams, expected at least $iters"
fi
sf_log "PASS"
