#!/bin/bash
# The event-driven data path (--workers 0) past its capacity: a sender as fast as it can
# go (well over 300 kpps here) into a bridge with deep receive queues. The bridge may
# lose packets only at the NIC (out_of_buffer, no receive posted), never inside: no
# tx_full, every received packet forwarded, and every packet offered is either received
# by the bridge's port or counted by it as out_of_buffer. Before the event loop drained
# a channel pair together, the send queue of the other side filled (hundreds of
# thousands of tx_full drops at 2 Mpps).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-evload
g=239.1.2.8
n=1000000

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 0 -e buffers=65536 -e rqdepth=16384 -m "$g"
br_send blast "$IB_NET.2" -g "$g" -n "$n"
sleep 0.5
br_stop bridge
br_expect bridge RoCE drop_tx_full 0
br_expect bridge IB drops 0
rx=$(br_field bridge IB rx_pkts)
br_expect bridge IB fwd_pkts "$rx"
oob=$(sf_counter sim_ib0 out_of_buffer)
[ $((rx + oob)) = "$n" ] ||
	br_fail "offered $n != received by the bridge $rx + NIC drops (out_of_buffer) $oob" bridge blast
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS: $rx forwarded, $oob dropped at the NIC, none inside the bridge"
