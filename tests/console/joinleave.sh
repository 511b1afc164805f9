#!/bin/bash
# join and leave at run time. A bridge with two workers and one group per channel
# (-e mcqp=1) bridges A (IB -> RoCE) and B (RoCE -> IB). While a steady stream flows on
# A, group C (both ways) is joined: no pair has room on both sides, so C is received
# on IB channel 1 (worker 1) and on RoCE channel 0 (worker 0), and packets cross
# workers through the hand-off rings. C forwards both ways, byte-exact; then C is left
# and no longer forwarded; A lost nothing meanwhile. Errors: a second join of a bridged
# address, a bad spec, a link-local control group (224.0.0.0/24), no room, leave of an
# unknown group.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-joinleave
ga=239.1.2.3
gb=239.1.2.4
gc=239.1.2.5
na=3000
n=300

br_bridge bridge 2 -d sim_ib0 -r sim_roce0 --workers 2 -e oversubscribe -e mcqp=1 -i "$ga" -o "$gb"

# A steady stream on A for ~3 s, across the join and the leave of C.
br_listen a_rx "$ROCE_NET.2" -g "$ga" -n "$na" --verify --timeout 40
br_send_start a_tx "$IB_NET.2" -g "$ga" -n "$na" --rate 1000

out=$(con_ok bridge join "$gc" both)
con_expect_in "$out" "joining $gc" "join"
con_wait_json bridge ".groups[] | select(.group == \"$gc\") | .ib.state + .roce.state" joinedjoined
grep -q "bridging $gc (both) on channels IB 1, RoCE 0 (workers hand over)" "$SF_TMP/bridge.err" ||
	br_fail "C was not placed across workers" bridge
con_expect_in "$(con_ok bridge multicast)" "$gc" "multicast lists C"

# C forwards both ways, through the hand-off rings.
# (One direction at a time: a listener also hears its own fabric's senders.)
br_listen c_roce "$ROCE_NET.3" -g "$gc" -n "$n" --verify --imm --timeout 20
br_send c_tx_ib "$IB_NET.4" -g "$gc" -n "$n" --imm --rate 20000
br_expect_listener c_roce "$n" 1
br_listen c_ib "$IB_NET.3" -g "$gc" -n "$n" --verify --imm --timeout 20
br_send c_tx_roce "$ROCE_NET.4" -g "$gc" -n "$n" --imm --rate 20000
br_expect_listener c_ib "$n" 1
ho=$(con_json bridge '[.channels[].handoff_out // 0] | add')
h0=$(con_json bridge '.sides[0].handoff_out + .sides[1].handoff_out')
[ "$h0" -ge $((2 * n)) ] || br_fail "hand-off counted $h0 (channels: $ho), expected >= $((2 * n))" bridge

# Leave C: not forwarded any more, gone from the tables.
out=$(con_ok bridge leave "$gc")
con_expect_in "$out" "left $gc" "leave"
printf '%s\n' "$(con_ok bridge multicast)" | grep -q "$gc" && br_fail "multicast still lists C" bridge
br_listen c_gone "$ROCE_NET.3" -g "$gc" -n 0 --timeout 2
br_send c_tx_after "$IB_NET.4" -g "$gc" -n 100 --rate 20000
br_expect_listener c_gone 0

# Errors change nothing.
out=$(con_must_exit bridge 1 join "$ga")
con_expect_in "$out" "already bridged" "second join of A"
out=$(con_must_exit bridge 1 join 300.1.2.3)
out=$(con_must_exit bridge 1 join 239.1.2.9 sideways)
con_expect_in "$out" "expected both, in or out" "bad direction"
# RFC 5771: 224.0.0.0/24 is link-local network control, never forwarded.
out=$(con_must_exit bridge 1 join 224.0.0.1)
con_expect_in "$out" "224.0.0.0/24 is link-local network control" "join 224.0.0.1"
out=$(con_must_exit bridge 1 join 224.0.0.251:5353 in)
con_expect_in "$out" "224.0.0.0/24 is link-local network control" "join 224.0.0.251"
printf '%s\n' "$(con_ok bridge multicast)" | grep -q "224\.0\.0\." && br_fail "a 224.0.0.x group is bridged" bridge
con_ok bridge join "$gc" >/dev/null
# No channel has room on IB (mcqp 1): a third pair is made at run time (issue 28).
out=$(con_ok bridge join 239.1.2.10)
con_expect_in "$out" "joining 239.1.2.10" "join on a new pair"
grep -q "bridging 239.1.2.10 (both) on channels IB 2, RoCE 2$" "$SF_TMP/bridge.err" ||
	br_fail "239.1.2.10 is not on the new pair 2" bridge
[ "$(con_json bridge '.channels | length')" = 6 ] || br_fail "expected 6 channels" bridge
con_ok bridge leave 239.1.2.10 >/dev/null
out=$(con_must_exit bridge 1 leave 239.9.9.9)
con_expect_in "$out" "not bridged" "leave of an unknown group"

# A: every packet arrived while C came and went.
br_send_end a_tx
br_expect_listener a_rx "$na" 1
br_stop bridge
br_expect_group bridge "$ga" ib_to_roce "$na"
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
