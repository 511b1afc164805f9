#!/bin/bash
# 16 000 groups (the IB multicast LID space), two workers: every group joined on both
# sides, 1 000 of them forwarding both ways, with exact accounting. The structure of
# issue 28 seen from the console: each worker holds half the groups on its channel
# pairs, polls two CQs per pass (one per side, shared by its QPs there) and receives
# from one SRQ per side.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-groups16k
ngroups=16000
nsend=1000
first=239.3.0.0
n=3 # packets per sending group and direction

args=()
for i in $(seq 0 $((ngroups - 1))); do
	args+=(-m "239.3.$((i / 256)).$((i % 256))")
done
# A config file for the reloads below (a group added, then left).
echo "# groups16k: reloads" >"$SF_TMP/extra.conf"
# Two workers and the control thread on a two-CPU machine share CPUs: oversubscribe.
BR_JOIN_SECS=240 BR_BRIDGE_SECS=400 br_bridge bridge "$ngroups" -d sim_ib0 -r sim_roce0 \
	--workers 2 -e oversubscribe -c "$SF_TMP/extra.conf" "${args[@]}"
# 240 groups per QP on the simulated ConnectX: 67 pairs, rounded up to 68 so that the
# two workers hold as many.
grep -q ' 68 channel pairs, 2 workers$' "$SF_TMP/bridge.err" ||
	br_fail "16000 groups: expected 68 channel pairs on 2 workers" bridge

for w in 0 1; do
	[ "$(con_json bridge ".workers[$w].groups")" = 8000 ] ||
		br_fail "worker $w holds $(con_json bridge ".workers[$w].groups") groups, expected 8000" bridge
	[ "$(con_json bridge ".workers[$w].channels")" = 68 ] ||
		br_fail "worker $w has $(con_json bridge ".workers[$w].channels") channels, expected 68" bridge
	[ "$(con_json bridge ".workers[$w].cqs")" = 2 ] || br_fail "worker $w: cqs not 2" bridge
done
[ "$(con_json bridge '[.channels[] | select(.srq)] | length')" = 136 ] ||
	br_fail "not every channel receives from its worker's SRQ" bridge

br_listen ib2roce "$ROCE_NET.2" -g "$first" --groups "$nsend" -n $((n * nsend)) --verify \
	--timeout 60
br_send send_ib "$IB_NET.2" -g "$first" --groups "$nsend" -n "$n" --imm --rate 10000
# One sender QP; its 1 000 groups are on 68 pairs: as many RoCE sources.
br_expect_listener ib2roce $((n * nsend)) 68 "$nsend"

br_listen roce2ib "$IB_NET.3" -g "$first" --groups "$nsend" -n $((n * nsend)) --verify \
	--timeout 60
br_send send_roce "$ROCE_NET.4" -g "$first" --groups "$nsend" -n "$n" --imm --rate 10000
br_expect_listener roce2ib $((n * nsend)) 68 "$nsend"

# Two CQ polls per pass whatever the number of groups, four at most (a full poll of
# several QPs takes more in a second one); the counters are read one after the other
# while the worker runs: a pass may end between them.
for w in 0 1; do
	con_json bridge ".workers[$w] | select(.cq_polls <= 4 * .passes + 4 and .cq_polls >= 2 * .passes - 2) | .id" >/dev/null ||
		br_fail "worker $w: not 2 to 4 CQ polls per pass" bridge
done
out=$(con_ok bridge workers)
con_expect_in "$out" ' 68 +8000 +8000 +2 +[2-3]\.[0-9][0-9] ' "bcom workers: channels, groups, weight, cqs, polls/pass"

# A reload matches the running 16 000 groups against the configuration's (parsed twice):
# one group added, then left again; the others stay. Before the groups' index (mgid.c)
# each reload kept the control thread from its loop for 9-11 s: no console, joins or
# watchdog pings meanwhile (a systemd watchdog of 10 s would have killed the bridge).
# Now about 0.1 s of CPU; the check below allows half of such a watchdog (CPUs shared
# with two spinning workers, a sanitizer build).
# The log's clock: local time (control/log.c), as date's.
reload_from=$(date +%Y-%m-%dT%H:%M:%S.%3N)
echo "multicast 239.9.0.1" >>"$SF_TMP/extra.conf"
out=$(con_ok bridge reload)
con_expect_in "$out" "^joining 239\.9\.0\.1 [(]both[)]$" "reload joins the added group"
con_expect_in "$out" "^1 group added, 0 removed$" "reload adds one group of 16 001"
sf_wait_line "$SF_TMP/bridge.err" "RoCE joined 239\.9\.0\.1" "$(br_pid bridge)" 60
echo "# groups16k: reloads" >"$SF_TMP/extra.conf"
out=$(con_ok bridge reload)
con_expect_in "$out" "^leaving 239\.9\.0\.1$" "reload leaves the group taken out"
con_expect_in "$out" "^0 groups added, 1 removed$" "reload removes one group of 16 001"

br_stop bridge
# The control loop logs a gap of more than a second when it resumes (control/ctl.c).
long=$(awk -v from="[$reload_from" '$1 >= from && /control thread was stalled for/ {
	for (i = 1; i < NF; i++) if ($i == "for" && $(i + 1) + 0 >= 5) print }' "$SF_TMP/bridge.err")
[ -z "$long" ] || br_fail "a reload stalled the control thread: $long" bridge
lines=$(grep -c '^group ' "$SF_TMP/bridge.out") || lines=0
[ "$lines" = "$ngroups" ] || br_fail "bridge printed $lines group lines, expected $ngroups" bridge
# The first 1 000 groups forwarded n packets each way, the others none; all joined.
bad=$(awk -v n="$n" -v ns="$nsend" '$1 == "group" {
	split($2, a, "."); i = a[3] * 256 + a[4]; want = i < ns ? n : 0
	if ($3 != "ib_to_roce=" want || $4 != "roce_to_ib=" want || $5 != "ib=joined" ||
	    $6 != "roce=joined") print }' "$SF_TMP/bridge.out")
[ -z "$bad" ] || br_fail "groups with other counts: $(echo "$bad" | head -5)" bridge
for s in IB RoCE; do
	br_expect bridge "$s" rx_pkts $((n * nsend))
	br_expect bridge "$s" fwd_pkts $((n * nsend))
	br_expect bridge "$s" tx_pkts $((n * nsend))
	br_expect bridge "$s" drops 0
done
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
