#!/bin/bash
# A bridge does not re-forward its own output. Traffic both ways at once (a sender on
# each fabric, same group): every listener gets each packet exactly once, the one from
# its own fabric's sender plus the bridged one from the other fabric; nothing the bridge
# sent comes back through it.
#
# Usage: noecho.sh lb|nolb
#   lb    loopback blocked in the NIC (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, the default):
#         the bridge never receives its own packets
#   nolb  -y loopbackprev: the bridge receives its own packets and must drop them (own)
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

if [ $# != 1 ] || { [ "$1" != lb ] && [ "$1" != nolb ]; }; then
	echo "usage: $0 lb|nolb" >&2
	exit 2
fi
mode=$1
sf_init "bridge-noecho-$mode"
group=239.1.2.3
n=300

if [ "$mode" = lb ]; then
	br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$group"
	own=0
else
	br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -y loopbackprev -m "$group"
	own=$n
fi

br_listen ib "$IB_NET.3" -g "$group" -n $((2 * n)) --verify --imm --timeout 30
br_listen roce "$ROCE_NET.3" -g "$group" -n $((2 * n)) --verify --imm --timeout 30
br_send_start send_ib "$IB_NET.2" -g "$group" -n "$n" --imm --rate 10000
br_send_start send_roce "$ROCE_NET.2" -g "$group" -n "$n" --imm --rate 10000
br_send_end send_ib
br_send_end send_roce
# Two senders each: the fabric's own sender and the bridge.
br_expect_listener ib $((2 * n)) 2
br_expect_listener roce $((2 * n)) 2

br_stop bridge
# Each side received the other fabric's sender once (and, without loopback blocking,
# its own n bridged packets, dropped as own), forwarded exactly n, sent exactly n.
for s in IB RoCE; do
	br_expect bridge "$s" rx_pkts $((n + own))
	br_expect bridge "$s" fwd_pkts "$n"
	br_expect bridge "$s" tx_pkts "$n"
	br_expect bridge "$s" drop_own "$own"
	br_expect bridge "$s" drops "$own"
done
br_expect_group bridge "$group" ib_to_roce "$n"
br_expect_group bridge "$group" roce_to_ib "$n"
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
