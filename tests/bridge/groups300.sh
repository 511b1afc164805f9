#!/bin/bash
# 300 groups: more than one channel pair (a channel holds at most mcqp groups, by default
# the device's max_mcast_qp_attach, 240 on the simulated ConnectX), two workers. Every
# group forwards both ways, byte-exact, each packet to its own group.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-groups300
ngroups=300
first=239.2.0.0
n=2 # packets per group and direction

args=()
for i in $(seq 0 $((ngroups - 1))); do
	args+=(-m "239.2.$((i / 256)).$((i % 256))")
done
# Two workers and the control thread on a two-CPU machine share CPUs: oversubscribe.
br_bridge bridge "$ngroups" -d sim_ib0 -r sim_roce0 --workers 2 -e oversubscribe "${args[@]}"
grep -q ' 2 channel pairs, 2 workers$' "$SF_TMP/bridge.err" ||
	br_fail "300 groups: expected 2 channel pairs on 2 workers" bridge

br_listen ib2roce "$ROCE_NET.2" -g "$first" --groups "$ngroups" -n $((n * ngroups)) --verify \
	--timeout 30
br_send send_ib "$IB_NET.2" -g "$first" --groups "$ngroups" -n "$n" --imm --rate 10000
# One sender QP, forwarded by the RoCE channels of both pairs: two sources.
br_expect_listener ib2roce $((n * ngroups)) 2 "$ngroups"

br_listen roce2ib "$IB_NET.3" -g "$first" --groups "$ngroups" -n $((n * ngroups)) --verify \
	--timeout 30
br_send send_roce "$ROCE_NET.4" -g "$first" --groups "$ngroups" -n "$n" --imm --rate 10000
br_expect_listener roce2ib $((n * ngroups)) 2 "$ngroups"

br_stop bridge
bad=$(awk -v n="$n" '$1 == "group" && ($3 != "ib_to_roce=" n || $4 != "roce_to_ib=" n ||
	$5 != "ib=joined" || $6 != "roce=joined")' "$SF_TMP/bridge.out")
[ -z "$bad" ] || br_fail "groups that did not forward $n packets each way: $(echo "$bad" | head -5)" bridge
lines=$(grep -c '^group ' "$SF_TMP/bridge.out") || lines=0
[ "$lines" = "$ngroups" ] || br_fail "bridge printed $lines group lines, expected $ngroups" bridge
for s in IB RoCE; do
	br_expect bridge "$s" fwd_pkts $((n * ngroups))
	br_expect bridge "$s" drops 0
done
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
