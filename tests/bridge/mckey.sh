#!/bin/bash
# mckey from Debian's rdmacm-utils, unmodified, through the bridge: a sender on one
# fabric, the bridge on sim_ib0/sim_roce0, two receivers on the other fabric; every
# receiver gets every message, and the bridge's counters account for each of them.
#
# Usage: mckey.sh DIRECTION WORKERS
#   DIRECTION  ib2roce  sender sim_ib1, receivers sim_roce1 and sim_roce2
#              roce2ib  sender sim_roce3, receivers sim_ib1 and sim_ib2
#   WORKERS    the bridge's --workers (0 = event-driven on the control thread)
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

usage() {
	echo "usage: $0 ib2roce|roce2ib WORKERS" >&2
	exit 2
}

[ $# = 2 ] || usage
dir=$1
workers=$2
case $dir in
ib2roce)
	src=$IB_NET.2 rx1=$ROCE_NET.2 rx2=$ROCE_NET.3 side_in=IB side_out=RoCE key=ib_to_roce
	;;
roce2ib)
	src=$ROCE_NET.4 rx1=$IB_NET.2 rx2=$IB_NET.3 side_in=RoCE side_out=IB key=roce_to_ib
	;;
*)
	usage
	;;
esac
case $workers in
0 | 1 | 2) ;;
*) usage ;;
esac

sf_init "bmk-$dir-$workers"
sf_need mckey
out=$SF_TMP
group=239.1.2.3
count=25

# Two workers and the control thread on a two-CPU machine share CPUs: oversubscribe.
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers "$workers" -e oversubscribe -m "$group"

# Receivers first; both must have joined before the sender starts (it sends 3 s after
# its own join).
sf_start "$out/recv1.out" 40 mckey -m "$group" -b "$rx1" -C "$count"
r1=$SF_PID
sf_start "$out/recv2.out" 40 mckey -m "$group" -b "$rx2" -C "$count"
r2=$SF_PID
sf_wait_line "$out/recv1.out" 'joined' "$r1" 20
sf_wait_line "$out/recv2.out" 'joined' "$r2" 20
sf_start "$out/send.out" 30 mckey -m "$group" -b "$src" -s -C "$count"
s=$SF_PID

sf_wait_exit "$s"
[ "$SF_RC" = 0 ] || br_fail "mckey sender exited with $SF_RC" send bridge
grep -q '^data transfers complete$' "$out/send.out" || br_fail "mckey sender did not send" send

# Each receiver waits for all its messages (mckey exits only then, or at the timeout).
for r in 1 2; do
	if [ "$r" = 1 ]; then pid=$r1; else pid=$r2; fi
	sf_wait_exit "$pid"
	[ "$SF_RC" = 0 ] || br_fail "mckey receiver $r exited with $SF_RC" "recv$r" bridge
	if ! grep -q '^data transfers complete$' "$out/recv$r.out" ||
		! grep -q '^return status 0$' "$out/recv$r.out"; then
		br_fail "mckey receiver $r did not receive all $count messages" "recv$r"
	fi
done

br_alive bridge
br_stop bridge
br_expect bridge "$side_in" rx_pkts "$count"
br_expect bridge "$side_in" fwd_pkts "$count"
br_expect bridge "$side_in" drops 0
br_expect bridge "$side_out" tx_pkts "$count"
br_expect bridge "$side_out" fwd_pkts 0
br_expect_group bridge "$group" "$key" "$count"
br_conservation bridge sim_ib0 sim_roce0
# The receivers' ports got exactly the bridged messages, none lost for lack of receives.
for d in "$rx1" "$rx2"; do
	case $d in
	"$IB_NET".*) dev=sim_ib$((${d##*.} - 1)) ;;
	*) dev=sim_roce$((${d##*.} - 1)) ;;
	esac
	sf_expect_counter "$dev" rcv_pkts "$count"
	sf_expect_counter "$dev" out_of_buffer 0
done
sf_log "PASS"
