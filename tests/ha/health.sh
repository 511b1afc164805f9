#!/bin/bash
# A peer takes a partition over only when it can forward it, and a handover tries every
# partition (control/ha.c; issue 21 D3, D4, D12). Bridges a (active) and b (standby),
# groups g1 in partition p1 and g2 in p2, so that the implicit partition default has no
# group:
# 1. the metrics (--metrics-file) give p1 and p2 a role and default none (D12), and the
#    HA alert rules do what they say on such samples (promtool test rules, when there);
# 2. b's RoCE port down: `handover` on a fails, each partition refused with b's reason
#    (the port), both stay active on a, b stays standby (D3);
# 3. port up again, b left g1 (it cannot forward p1): `handover` hands p2 over and
#    reports p1 refused with the reason, after p1 (D4);
# 4. SIGTERM of a with b still unable for p1: a logs that p1 goes dark and why; p2 (given
#    back to a first) is handed over before a exits.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
: "${BCOM:?BCOM must name the bcom program}"

sf_init ha-health
g1=239.1.2.3
g2=239.1.2.4
prom="$SF_TMP/a-ib2roce.prom"

br_bridge a 2 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" \
	--ha-peer-control "$SF_TMP/b.sock" --partition p1:"$g1" --partition p2:"$g2" \
	--metrics-file "$prom" -e statint=1 -m "$g1" -m "$g2"
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" \
	--ha-peer-control "$SF_TMP/a.sock" --partition p1:"$g1" --partition p2:"$g2" \
	--role standby -m "$g1" -m "$g2"

# 1. No role for the partition without groups.
t_wait_until 10 grep -sq '^ib2roce_role{partition="p2"}' "$prom" ||
	br_fail "no ib2roce_role in $prom within 10 s" a
grep -q '^ib2roce_role{partition="p1"} 1$' "$prom" || br_fail "metrics: p1 not active: $(grep role "$prom")" a
grep -q '^ib2roce_role{partition="default"}' "$prom" &&
	br_fail "metrics: the empty partition default has a role: $(grep role "$prom")" a
# The alert rules on those samples (tests/ha/rules-test.yml).
if command -v promtool >/dev/null; then
	promtool test rules "$(dirname "$0")/rules-test.yml" >"$SF_TMP/rules.out" 2>&1 ||
		br_fail "promtool test rules: $(cat "$SF_TMP/rules.out")" a
else
	sf_log "no promtool: the HA alert rules' unit test (rules-test.yml) not run"
fi

# 2. b cannot forward anything: its RoCE port is down.
"$SIMFAB" port sim_roce3 down >/dev/null
# b_health_has TEXT: `bcom health` of bridge b answers (any status) with TEXT.
b_health_has() {
	con_bc b health && grep -q "$1" "$SF_TMP/bcom.out"
}
t_wait_until 10 b_health_has 'sim_roce3 port 1 down' ||
	br_fail "bridge b does not see its RoCE port down" b
con_bc a handover
[ "$CON_RC" = 1 ] || br_fail "handover to a peer with its port down: exit $CON_RC: $(cat "$SF_TMP/bcom.out")" a
cp "$SF_TMP/bcom.out" "$SF_TMP/ho.out"
for p in p1 p2; do
	grep -q "^partition $p: not handed over: takeover: partition $p: refused: cannot forward it here: RoCE sim_roce3 port 1 down: staying active$" \
		"$SF_TMP/ho.out" || br_fail "handover: no refusal with the reason for $p: $(cat "$SF_TMP/ho.out")" a
	ha_role_is a "$p" active
	ha_role_is b "$p" standby
done
grep -q '^handover: 0 of 2 partitions handed over$' "$SF_TMP/ho.out" ||
	br_fail "handover: no summary: $(cat "$SF_TMP/ho.out")" a

# 3. Port up; b stops bridging g1, so it can forward p2 only.
"$SIMFAB" port sim_roce3 up >/dev/null
# b_healthy: `bcom health` of bridge b exits 0.
b_healthy() {
	con_bc b health && [ "$CON_RC" = 0 ]
}
t_wait_until 30 b_healthy ||
	br_fail "bridge b not healthy again within 30 s: $(cat "$SF_TMP/bcom.out")" b
con_must b leave "$g1"
con_bc a handover
[ "$CON_RC" = 1 ] || br_fail "handover with p1 refused: exit $CON_RC: $(cat "$SF_TMP/bcom.out")" a
grep -q '^partition p1: not handed over: takeover: partition p1: refused: cannot forward it here: no group of partition p1 here: staying active$' \
	"$SF_TMP/bcom.out" || br_fail "handover: p1's refusal not reported: $(cat "$SF_TMP/bcom.out")" a
grep -q '^partition p2: active -> standby$' "$SF_TMP/bcom.out" ||
	br_fail "handover: p2 not handed over after p1 was refused: $(cat "$SF_TMP/bcom.out")" a
grep -q '^handover: 1 of 2 partitions handed over$' "$SF_TMP/bcom.out" ||
	br_fail "handover: no summary: $(cat "$SF_TMP/bcom.out")" a
ha_role_is a p1 active
ha_role_is a p2 standby
ha_role_is b p2 active
ha_role_is b p1 standby

# 4. SIGTERM: p2 back on a first, then a stops; b takes p2, p1 goes dark (logged).
con_must a role p2 active
con_must b role p2 standby
kill -TERM "$(sf_child "$(br_pid a)")"
sf_wait_exit "$(br_pid a)"
[ "$SF_RC" = 0 ] || br_fail "bridge a: exit $SF_RC after SIGTERM" a
grep -q 'ib2roce error: SIGTERM: partition p1 goes dark when this bridge stops: not handed over to .*b.sock: takeover: partition p1: refused: cannot forward it here: no group of partition p1 here$' \
	"$SF_TMP/a.err" || br_fail "bridge a: SIGTERM did not log p1 going dark and why" a
grep -q 'partition p2: active -> standby (SIGTERM: peer active)' "$SF_TMP/a.err" ||
	br_fail "bridge a: SIGTERM did not hand p2 over after p1 was refused" a
ha_role_is b p2 active
br_stop b
sf_log "PASS"
