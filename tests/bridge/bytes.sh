#!/bin/bash
# Byte-exact forwarding with immediate data, both ways, through one bridge
# (sim_ib0/sim_roce0, one worker, group -m). Payloads of the smallest size mcpkt sends
# (its 32-byte header) and of the path MTU (4096) carry a pattern the listeners check
# byte by byte, and seq in the immediate data. Listeners on the sender's own fabric
# get each packet once, straight from the sender: the bridge sent nothing back.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-bytes
group=239.1.2.3
n=200

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$group"

# IB -> RoCE: sender sim_ib1; RoCE listeners sim_roce1, sim_roce2; IB listener sim_ib2.
for l in roce1:$ROCE_NET.2 roce2:$ROCE_NET.3 ib2:$IB_NET.3; do
	br_listen "a_${l%%:*}" "${l#*:}" -g "$group" -n $((2 * n)) --verify --imm --timeout 30
done
br_send a_send_min "$IB_NET.2" -g "$group" -n "$n" -s 32 --imm --rate 20000
br_send a_send_mtu "$IB_NET.2" -g "$group" -n "$n" -s 4096 --imm --rate 20000
for l in roce1 roce2 ib2; do
	br_expect_listener "a_$l" $((2 * n)) 2
done

# RoCE -> IB: sender sim_roce3; IB listeners sim_ib1, sim_ib2; RoCE listener sim_roce1.
for l in ib1:$IB_NET.2 ib2:$IB_NET.3 roce1:$ROCE_NET.2; do
	br_listen "b_${l%%:*}" "${l#*:}" -g "$group" -n $((2 * n)) --verify --imm --timeout 30
done
br_send b_send_mtu "$ROCE_NET.4" -g "$group" -n "$n" -s 4096 --imm --rate 20000
br_send b_send_odd "$ROCE_NET.4" -g "$group" -n "$n" -s 33 --imm --rate 20000
for l in ib1 ib2 roce1; do
	br_expect_listener "b_$l" $((2 * n)) 2
done

br_stop bridge
br_expect bridge IB rx_pkts $((2 * n))
br_expect bridge IB fwd_pkts $((2 * n))
br_expect bridge IB drops 0
br_expect bridge RoCE rx_pkts $((2 * n))
br_expect bridge RoCE fwd_pkts $((2 * n))
br_expect bridge RoCE drops 0
br_expect bridge IB tx_bytes $((n * (4096 + 33)))
br_expect bridge RoCE tx_bytes $((n * (4096 + 32)))
br_expect_group bridge "$group" ib_to_roce $((2 * n))
br_expect_group bridge "$group" roce_to_ib $((2 * n))
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
