#!/bin/bash
# Thousands of groups joined through the SA (issue 28 with issue 25's Q_Keys): a group
# with its own IB Q_Key is joined with an SA MCMemberRecord Set of the bridge's own
# (control/sajoin.c), all of them at start before the first answer is read; the answers
# wait in the umad port's receive list (the kernel's recv_list; simfabric keeps them too,
# beyond what its socket pair holds). 2 000 groups with Q_Key 0x11111111 on two workers:
# every group joined on both sides (no SA join failed or refused) and every channel
# holding the key. (Traffic with a group's own Q_Key on IB needs middleware that joins
# through the SA itself, as native-qkeys and native-perftest do, and mcsender and
# mclisten where the SA refuses their rdma_cm join: tools-saqkey.)
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init native-sajoins
ngroups=2000
qkey=0x11111111

args=()
for i in $(seq 0 $((ngroups - 1))); do
	args+=(-m "239.4.$((i / 256)).$((i % 256))")
done
# Two workers and the control thread on a two-CPU machine share CPUs: oversubscribe.
BR_JOIN_SECS=120 br_bridge bridge "$ngroups" -d sim_ib0 -r sim_roce0 --workers 2 \
	-e oversubscribe --qkey "$qkey" "${args[@]}"
if grep -E "IB SA join of .* (failed|refused)" "$SF_TMP/bridge.err" >"$SF_TMP/sa.err"; then
	br_fail "SA joins failed or were refused: $(wc -l <"$SF_TMP/sa.err") lines, first: $(head -1 "$SF_TMP/sa.err")" bridge
fi
keys=$(con_ok bridge channels | awk 'NR > 1 { print $NF }' | sort -u | tr '\n' ' ')
[ "$keys" = "$qkey " ] || br_fail "channel Q_Keys: $keys" bridge

br_stop bridge
joined=$(grep -c '^group .* ib=joined roce=joined$' "$SF_TMP/bridge.out") || joined=0
[ "$joined" = "$ngroups" ] || br_fail "$joined of $ngroups groups joined on both sides at the end" bridge
sf_log "PASS"
