#!/bin/bash
# Partitions of thousands of groups (control/ha.c, the map's index by RoCE MGID): 2 000
# groups, each listed in one of two partitions (`--partition p0:G`, one option a group,
# in any spelling of the group), standby p1: `bcom ha` counts 1 000 groups in each, a
# packet to a p0 group is forwarded and one to a p1 group counted as standby; a listed
# group left and joined again at run time goes back to its partition; `role p1 active`
# turns them all.
# Bad partitions change nothing and name the group: one listed in two partitions (exit
# 2), one listed but not bridged (exit 2).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init ha-partitions
ngroups=2000
n=50

args=()
for i in $(seq 0 $((ngroups - 1))); do
	g="239.5.$((i / 256)).$((i % 256))"
	# Every other group's partition line spells it another way (port and format).
	if [ $((i % 4)) -lt 2 ]; then spec=$g; else spec="$g:4711/ipv4"; fi
	args+=(-m "$g" --partition "p$((i % 2)):$spec")
done
args+=(--role p1=standby)
BR_JOIN_SECS=120 br_bridge bridge "$ngroups" -d sim_ib0 -r sim_roce0 --workers 1 "${args[@]}"
out=$(con_ok bridge ha)
con_expect_in "$out" '^p1 +standby +1000 ' "bcom ha: p1"
# A listed group left and joined again at run time goes back to its partition.
con_ok bridge leave 239.5.7.207 >/dev/null
out=$(con_ok bridge ha)
con_expect_in "$out" '^p1 +standby +999 ' "bcom ha: p1 after a leave"
con_ok bridge join 239.5.7.207 both >/dev/null
con_wait_json bridge '[.groups[] | select(.ib.state == "joined" and .roce.state == "joined")] | length | tostring' "$ngroups" 20
out=$(con_ok bridge ha)
con_expect_in "$out" '^p0 +active +1000 ' "bcom ha: p0"
con_expect_in "$out" '^p1 +standby +1000 ' "bcom ha: p1 with the group joined again"
con_expect_in "$out" '^default +active +0 ' "bcom ha: default"

# A p0 group forwards, a p1 group is standby here.
br_listen rx0 "$ROCE_NET.2" -g 239.5.3.232 -n "$n" --timeout 20
br_send tx0 "$IB_NET.2" -g 239.5.3.232 -n "$n" --rate 20000
br_expect_listener rx0 "$n" 1
br_send tx1 "$IB_NET.2" -g 239.5.3.233 -n "$n" --rate 20000
con_wait_json bridge '.sides[0].standby | tostring' "$n" 10
con_ok bridge role p1 active >/dev/null
out=$(con_ok bridge ha)
con_expect_in "$out" '^p1 +active +1000 ' "bcom ha after role p1 active"
br_listen rx1 "$ROCE_NET.2" -g 239.5.7.207 -n "$n" --timeout 20
br_send tx2 "$IB_NET.2" -g 239.5.7.207 -n "$n" --rate 20000
br_expect_listener rx1 "$n" 1
br_stop bridge

# refused NAME EXPECT ARG...: ib2roce --check ARG... exits 2 naming the problem.
refused() {
	local name=$1 expect=$2 rc=0

	shift 2
	timeout 30 "$IB2ROCE" --check -d sim_ib0 -r sim_roce0 "$@" >"$SF_TMP/$name.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || sf_fail "$name: exit $rc, expected 2" "$SF_TMP/$name.out"
	grep -qF -- "$expect" "$SF_TMP/$name.out" || sf_fail "$name: no '$expect'" "$SF_TMP/$name.out"
}
refused twice "partition p1: group 239.5.0.1:4711/ipv4 is in partition p0 already" \
	-m 239.5.0.1 -m 239.5.0.2 --partition p0:239.5.0.2,239.5.0.1 \
	--partition p1:239.5.0.1:4711/ipv4
refused unbridged "partition p1: group 239.5.0.3 is not bridged (-m, -i, -o)" \
	-m 239.5.0.1 -m 239.5.0.2 --partition p0:239.5.0.2,239.5.0.1 --partition p1:239.5.0.3
sf_log "PASS"
