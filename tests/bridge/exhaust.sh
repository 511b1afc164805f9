#!/bin/bash
# Buffer exhaustion: a bridge with the smallest receive queues (-e rqdepth=64) and the
# smallest pool it accepts with them (br_min_buffers) gets an unpaced burst both ways at
# once, far more than its queues and pool hold. It must neither stall nor crash: what it cannot take is counted (its drop
# counters, or the fabric's out_of_buffer on its ports when no receive was posted), what
# it forwards arrives intact. Then, at a low rate, everything is forwarded again.
#
# Usage: exhaust.sh WORKERS [sq]
#   WORKERS  the bridge's --workers (0 = event-driven)
#   sq       also the smallest send queues (-e sqdepth=64): the burst fills them, so
#            packets wait in the bounded backlog (backlog_max > 0) or are dropped as
#            tx_full, and the backlog must drain
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

usage() {
	echo "usage: $0 0|1 [sq]" >&2
	exit 2
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	usage
fi
workers=$1
case $workers in
0 | 1) ;;
*) usage ;;
esac
queues=(-e rqdepth=64)
if [ $# = 2 ]; then
	[ "$2" = sq ] || usage
	queues+=(-e sqdepth=64)
fi
sf_init "bridge-exhaust-$workers${2:+-$2}"
group=239.1.2.3
burst=30000
m=300

buffers=$(br_min_buffers -d sim_ib0 -r sim_roce0 --workers "$workers" "${queues[@]}" -m "$group")
sf_log "buffers=$buffers"
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers "$workers" -e buffers="$buffers" \
	"${queues[@]}" -m "$group"

# Phase 1: the burst. Listeners without a count: they check what arrives.
br_listen p1_roce "$ROCE_NET.2" -g "$group" --verify --timeout 30
br_listen p1_ib "$IB_NET.3" -g "$group" --verify --timeout 30
br_send_start p1_send_ib "$IB_NET.2" -g "$group" -n "$burst" -s 1000 --imm
br_send_start p1_send_roce "$ROCE_NET.4" -g "$group" -n "$burst" -s 1000 --imm
br_send_end p1_send_ib
br_send_end p1_send_roce
sleep 0.5
br_alive bridge
br_listen_stop p1_roce
[ "$BR_RECEIVED" = "$(sf_counter sim_roce1 rcv_pkts)" ] ||
	br_fail "listener p1_roce counted $BR_RECEIVED packets, its port delivered $(sf_counter sim_roce1 rcv_pkts)" p1_roce
br_listen_stop p1_ib
[ "$BR_RECEIVED" = "$(sf_counter sim_ib2 rcv_pkts)" ] ||
	br_fail "listener p1_ib counted $BR_RECEIVED packets, its port delivered $(sf_counter sim_ib2 rcv_pkts)" p1_ib
oob_ib=$(sf_counter sim_ib0 out_of_buffer)
oob_roce=$(sf_counter sim_roce0 out_of_buffer)
rcv_ib=$(sf_counter sim_ib0 rcv_pkts)
rcv_roce=$(sf_counter sim_roce0 rcv_pkts)
sf_log "burst: bridge ports delivered IB $rcv_ib RoCE $rcv_roce, out_of_buffer IB $oob_ib RoCE $oob_roce"
# Every packet of the burst reached the bridge's port: taken or dropped there.
[ $((rcv_ib + oob_ib)) = "$burst" ] ||
	br_fail "sim_ib0: delivered $rcv_ib + out_of_buffer $oob_ib != $burst sent" bridge
[ $((rcv_roce + oob_roce)) = "$burst" ] ||
	br_fail "sim_roce0: delivered $rcv_roce + out_of_buffer $oob_roce != $burst sent" bridge

# Phase 2: recovery. Each listener gets its own fabric's sender and the bridged copies
# of the other fabric's sender, all of them.
br_listen p2_roce "$ROCE_NET.2" -g "$group" -n $((2 * m)) --verify --imm --timeout 10
br_listen p2_ib "$IB_NET.3" -g "$group" -n $((2 * m)) --verify --imm --timeout 10
br_send_start p2_send_ib "$IB_NET.2" -g "$group" -n "$m" --imm --rate 2000
br_send_start p2_send_roce "$ROCE_NET.4" -g "$group" -n "$m" --imm --rate 2000
br_send_end p2_send_ib
br_send_end p2_send_roce
br_expect_listener p2_roce $((2 * m)) 2
br_expect_listener p2_ib $((2 * m)) 2

br_stop bridge
drops=$(($(br_field bridge IB drops) + $(br_field bridge RoCE drops)))
starved=$(($(br_field bridge IB rx_starved) + $(br_field bridge RoCE rx_starved)))
sf_log "bridge drops $drops, rx_starved $starved"
[ $((drops + oob_ib + oob_roce)) -gt 0 ] ||
	br_fail "the burst overloaded nothing: no drop at the bridge or its ports" bridge
if [ $# = 2 ]; then
	bl=$(($(br_field bridge IB backlog_max) + $(br_field bridge RoCE backlog_max)))
	txf=$(($(br_field bridge IB drop_tx_full) + $(br_field bridge RoCE drop_tx_full)))
	sf_log "backlog_max IB+RoCE $bl, tx_full $txf"
	[ $((bl + txf)) -gt 0 ] || br_fail "the burst never filled a send queue" bridge
fi
# Phase 2 lost nothing at the bridge's ports.
sf_expect_counter sim_ib0 out_of_buffer "$oob_ib"
sf_expect_counter sim_roce0 out_of_buffer "$oob_roce"
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
