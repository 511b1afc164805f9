#!/bin/bash
# A group whose two sides are on channels of different pairs of one worker: its packets
# are received on one channel and sent on a channel that is not that channel's peer,
# while another group's packets reach the same send channel through the flow fast path.
# The worker's send work requests are one set per side (struct wr_tmpl, engine/fwd.c),
# holding one channel's chain at a time: this checks that the chains of the two do not
# mix (every packet exactly once, byte-exact, immediate data exactly where it was sent).
# One worker, one group per channel (-e mcqp=1), built at run time:
#   A (in)  IB channel 0 -> RoCE channel 0   (the start: pair 0)
#   B (out) RoCE channel 0                   (pair 0's free side; left again below)
#   G (out) RoCE channel 1 -> IB channel 1   (no room on pair 0: a new pair 1)
#   C (both) IB channel 1, RoCE channel 0    (pair 0 has room on RoCE only, pair 1 on IB
#                                             only: "on channels IB 1, RoCE 0")
# Then A and C from IB and G from RoCE at once, A plain, C and G with immediate data.
# Argument: the workers (default 1; 0: the event-driven data path, the same bursts).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

workers=${1:-1}
sf_init "console-splitpair$([ "$workers" = 1 ] || echo "-w$workers")"
ga=239.1.2.30
gc=239.1.2.31
gb=239.1.2.40
gg=239.1.2.41
n=2000

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers "$workers" -e mcqp=1 -i "$ga"
for j in "$gb out" "$gg out"; do
	out=$(con_ok bridge join $j)
	con_expect_in "$out" "joining ${j% *}" "join ${j% *}"
done
con_wait_json bridge ".groups[] | select(.group == \"$gg\") | .ib.state + .roce.state" joinedjoined
con_expect_in "$(con_ok bridge leave "$gb")" "left $gb" "leave B"
con_expect_in "$(con_ok bridge join "$gc" both)" "joining $gc" "join C"
con_wait_json bridge ".groups[] | select(.group == \"$gc\") | .ib.state + .roce.state" joinedjoined
grep -q "bridging $gc (both) on channels IB 1, RoCE 0$" "$SF_TMP/bridge.err" ||
	br_fail "C is not on IB channel 1 and RoCE channel 0 of one worker" bridge

# A and C on RoCE, G on IB; all three senders at once.
br_listen a_rx "$ROCE_NET.2" -g "$ga" -n "$n" --verify --timeout 60
br_listen c_rx "$ROCE_NET.3" -g "$gc" -n "$n" --verify --imm --timeout 60
br_listen g_rx "$IB_NET.3" -g "$gg" -n "$n" --verify --imm --timeout 60
br_send_start a_tx "$IB_NET.2" -g "$ga" -n "$n" --rate 20000
br_send_start c_tx "$IB_NET.4" -g "$gc" -n "$n" --imm --rate 20000
br_send_start g_tx "$ROCE_NET.4" -g "$gg" -n "$n" --imm --rate 20000
for s in a_tx c_tx g_tx; do
	br_send_end "$s"
done
br_expect_listener a_rx "$n" 1 1
br_expect_listener c_rx "$n" 1 1
br_expect_listener g_rx "$n" 1 1
br_stop bridge
br_expect bridge IB fwd_pkts $((2 * n))
br_expect bridge RoCE fwd_pkts "$n"
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
