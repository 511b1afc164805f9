#!/bin/bash
# The data path's flow table (engine/fwd.c flow_find, docs/architecture.md): traffic that
# interleaves groups and senders packet by packet is forwarded from a flow per (source,
# group) and gets the full path's verdict when runtime features and groups change
# between phases: exact counts per phase, per group and per sender, and the listener
# gets exactly what was forwarded.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-fastpath-groups
first=239.1.3.0
ng=8
args=()
for i in $(seq 0 $((ng - 1))); do
	args+=(-m "239.1.3.$i")
done

br_bridge bridge "$ng" -d sim_ib0 -r sim_roce0 --workers 1 "${args[@]}"
# Forwarded: A 800 + B 300 + C 800 + D 350.
br_listen listener "$ROCE_NET.2" -g "$first" --groups "$ng" -n 2250 --timeout 60

# phase NAME FILTER VALUE MCPKT_ARGS...: send from a new sender, interleaving the 8
# groups packet by packet, then wait until the JSON counter FILTER reaches VALUE.
phase() {
	local name=$1 filter=$2 value=$3

	shift 3
	br_send "$name" "$IB_NET.2" -g "$first" --groups "$ng" --rate 20000 "$@"
	con_wait_json bridge "$filter" "$value"
}

# group_pkts GROUP: ib_to_roce_pkts of the group.
group_pkts() {
	con_json bridge ".groups[] | select(.group == \"$1\") | .ib_to_roce_pkts"
}

# A: one sender, 100 packets per group, every packet to the next group.
phase a '.sides[0].fwd_pkts' 800 -n 100
for i in $(seq 0 $((ng - 1))); do
	[ "$(group_pkts "239.1.3.$i")" = 100 ] || br_fail "A: group 239.1.3.$i" bridge
done

# B: drop=4 drops every 4th packet (injected), whatever its flow.
con_ok bridge enable drop=4 >/dev/null
phase b '.sides[0].rx_pkts' 1200 -n 50
con_wait_json bridge '.sides[0].drop_reasons.injected' 100
con_wait_json bridge '.sides[0].fwd_pkts' 1100
con_ok bridge disable drop >/dev/null

# C: four senders (QPs): every packet another (group, sender).
phase c '.sides[0].fwd_pkts' 1900 -n 25 --qps 4

# D: group 239.1.3.5 left (the bridge's QP leaves it: its packets no longer arrive), the
# other groups' flows go on.
con_ok bridge leave 239.1.3.5 >/dev/null
phase d '.sides[0].fwd_pkts' 2250 -n 50
for i in 0 1 2 3 4 6 7; do
	v=$(group_pkts "239.1.3.$i")
	# A 100, B 50 less the injected drops of the group, C 100, D 50.
	[ "$v" -ge 250 ] && [ "$v" -le 300 ] || br_fail "D: group 239.1.3.$i: $v packets" bridge
done

# Per sender: A 800, B 400 (drop=N counts after the sender step), C 200 x 4, D 350.
out=$(con_ok bridge senders)
counts=$(printf '%s\n' "$out" | awk '$1 == "IB" { print $5 }' | sort -n | tr '\n' ' ')
[ "$counts" = "200 200 200 200 350 400 800 " ] ||
	br_fail "senders: IB packet counts '$counts', expected '200 200 200 200 350 400 800 ': $out" bridge

br_expect_listener listener 2250 7 "$ng"
br_stop bridge
br_expect bridge IB rx_pkts 2350
br_expect bridge IB fwd_pkts 2250
br_expect bridge IB drop_injected 100
[ "$(br_group bridge 239.1.3.0 ib_to_roce)" = 300 ] || br_fail "group 239.1.3.0: A+B+C+D" bridge
br_expect bridge RoCE tx_pkts 2250
BR_PGM_PARTIAL=1 br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
