#!/bin/bash
# N distinct senders (N UD QPs of one mcpkt process, two packets each) on IB, bridged to
# RoCE: the bridge's sender table holds all of them, nothing is dropped, the listener
# gets every packet of every sender exactly once.
#
# Usage: senders.sh N RATE [BRIDGE OPTION...]
#   senders.sh 10000 20000                          the default sender caches
#   senders.sh 70000 50000 -e senders=140000        the channel caches sized from
#       `senders` (engine/setup.c, chan_cache_sizes: a QPN cache of 2^18 entries, a
#       2-way cache of 2^19) used past their default sizes; mcpkt's QPs are send-only
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

nq=${1:?usage: senders.sh N RATE [BRIDGE OPTION...]}
rate=${2:?usage: senders.sh N RATE [BRIDGE OPTION...]}
shift 2
sf_init "bridge-senders$nq"
group=239.1.2.3
n=2

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 "$@" -m "$group"
br_listen listener "$ROCE_NET.2" -g "$group" -n $((nq * n)) --verify --timeout 60
br_send send "$IB_NET.2" -g "$group" -n "$n" --qps "$nq" --rate "$rate" --timeout 50
# The payload names its sender QP: nq senders behind one source (the bridge).
br_expect_listener listener $((nq * n)) "$nq"

br_stop bridge
senders=$(sed -n 's/^senders=\([0-9]*\)$/\1/p' "$SF_TMP/bridge.out")
if [ -z "$senders" ] || [ "$senders" -lt "$nq" ]; then
	br_fail "bridge: senders=${senders:-none}, expected at least $nq" bridge
fi
br_expect bridge IB rx_pkts $((nq * n))
br_expect bridge IB fwd_pkts $((nq * n))
br_expect bridge IB drops 0
br_expect bridge RoCE tx_pkts $((nq * n))
br_expect bridge RoCE drops 0
br_conservation bridge sim_ib0 sim_roce0
sf_expect_counter sim_ib0 out_of_buffer 0
sf_log "PASS"
