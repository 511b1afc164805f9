#!/bin/bash
# 500 groups joined at run time (one bcom session, one join per line) while two other
# groups carry a steady stream each way: the stream loses nothing and every new group
# forwards both ways once joined. Three workers, so three channel pairs exist from the
# start (channels are made at start-up: the 500 groups go to their room, 240 per pair),
# each worker's QPs on one CQ and one SRQ per side.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-addgroups
ga=239.4.0.1 # IB -> RoCE stream
gb=239.4.0.2 # RoCE -> IB stream
nadd=500
first=239.5.0.0
ns=12000 # stream packets per direction (~12 s at 1000 pps)
n=2      # packets per new group and direction

# Three workers and the control thread on a two-CPU machine share CPUs: oversubscribe.
br_bridge bridge 2 -d sim_ib0 -r sim_roce0 --workers 3 -e oversubscribe -i "$ga" -o "$gb"
grep -q ' 3 channel pairs, 3 workers$' "$SF_TMP/bridge.err" ||
	br_fail "expected 3 channel pairs on 3 workers" bridge

br_listen a_rx "$ROCE_NET.2" -g "$ga" -n "$ns" --verify --timeout 90
br_listen b_rx "$IB_NET.3" -g "$gb" -n "$ns" --verify --timeout 90
br_send_start a_tx "$IB_NET.2" -g "$ga" -n "$ns" --rate 1000
br_send_start b_tx "$ROCE_NET.4" -g "$gb" -n "$ns" --rate 1000

# The joins, while the streams flow.
con_join_many bridge "$nadd"
con_wait_json bridge "[.groups[] | select(.ib.state == \"joined\" and .roce.state == \"joined\")] | length" $((nadd + 2)) 120

# The new groups' QPs are the start's: every channel on its worker's SRQ, two CQs each.
[ "$(con_json bridge '[.channels[] | select(.srq)] | length')" = 6 ] ||
	br_fail "not every channel receives from its worker's SRQ" bridge
[ "$(con_json bridge '[.workers[] | select(.cqs == 2)] | length')" = 3 ] ||
	br_fail "not every worker polls two CQs" bridge
[ "$(con_json bridge '[.workers[].groups] | add')" = $((nadd + 2)) ] ||
	br_fail "the workers hold $(con_json bridge '[.workers[].groups] | add') groups" bridge

# The streams lost nothing.
br_send_end a_tx
br_send_end b_tx
br_expect_listener a_rx "$ns" 1 1
br_expect_listener b_rx "$ns" 1 1

# Every new group forwards both ways.
br_listen c_roce "$ROCE_NET.3" -g "$first" --groups "$nadd" -n $((n * nadd)) --verify --imm \
	--timeout 60
br_send c_tx_ib "$IB_NET.4" -g "$first" --groups "$nadd" -n "$n" --imm --rate 10000
br_expect_listener c_roce $((n * nadd)) 3 "$nadd"
br_listen c_ib "$IB_NET.3" -g "$first" --groups "$nadd" -n $((n * nadd)) --verify --imm \
	--timeout 60
br_send c_tx_roce "$ROCE_NET.4" -g "$first" --groups "$nadd" -n "$n" --imm --rate 10000
br_expect_listener c_ib $((n * nadd)) 3 "$nadd"

br_stop bridge
for s in IB RoCE; do
	br_expect bridge "$s" fwd_pkts $((ns + n * nadd))
	br_expect bridge "$s" drops 0
done
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
