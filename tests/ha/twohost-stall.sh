#!/bin/bash
# A survivor whose control thread stalls as its peer's host dies (tests/ha/th-lib.sh: two
# "hosts", each with its bridge and keepalived, VRRP unicast between them). Bridge b is
# active for the one partition, a standby; during a stream through b, a's control thread
# is stopped for 4 s (the fault injection ctlstall) and host B dies at once. a's
# workers still run; its console does not answer. Its notify reader's health poll (2 s
# limit) and its vrrp_script (1 s) must count the silence as the stall it is, not as a
# failure: a must go active once, never back to standby, never FAULT, and forward the
# rest of the stream. (Before: the poll failed, keepalived put a in FAULT with nobody
# left to take over, and the queued role changes were applied in turn once the thread
# ran: active, standby, active.) Counts and roles asserted, never times.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/ka.sh
. "$(dirname "$0")/../lib/ka.sh"
# shellcheck source-path=SCRIPTDIR source=th-lib.sh
. "$(dirname "$0")/th-lib.sh"

th_init ha-twohost-stall
g1=239.1.7.1

th_bridge a 1 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" --role standby -m "$g1"
th_ka_start 1 a default:71:200
th_bridge b 1 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" --role standby -m "$g1"
th_ka_start 2 b default:71:250
ka_wait_role b default active
ka_wait_role a default standby
ka_wait_healthy a
# Let keepalived 1's vrrp_script see a healthy bridge twice (rise 2) before the test.
sleep 3

# transitions: bridge a's role changes of the partition in its log, "UP DOWN" (standby
# -> active, active -> standby); faults: keepalived 1's FAULT transitions.
transitions() {
	echo "$(grep -c 'partition default: standby -> active' "$SF_TMP/a.err" || true)" \
		"$(grep -c 'partition default: active -> standby' "$SF_TMP/a.err" || true)"
}
faults() { grep -c 'Entering FAULT STATE' "$SF_TMP/ka1.out" || true; }
# a_fwd: bridge a's IB side, packets forwarded.
a_fwd() { con_json a '.sides[0].fwd_pkts'; }

m=$((KA_RATE * 10))
ka_stream s1 "$g1" "$m"
sleep 2
read -r up0 down0 <<<"$(transitions)"
f0=$(faults)
fwd0=$(a_fwd)
con_must a enable ctlstall=4000
th_kill_host b
rm -f "$SF_TMP/ka2.pid"
ka_wait_role a default active
ka_stream_end s1 "$m" "host B's death with a's control thread stalled 4 s"
read -r up1 down1 <<<"$(transitions)"
f1=$(faults)
fwd=$(($(a_fwd) - fwd0))
sf_log "after the death: a went active $((up1 - up0)) time(s), standby $((down1 - down0)); keepalived 1 FAULT $((f1 - f0)) time(s); a forwarded $fwd of $m"
grep -q 'ctlstall: stopping the control thread' "$SF_TMP/a.err" ||
	br_fail "bridge a: the injected stall did not happen" a
if [ $((up1 - up0)) != 1 ] || [ "$down1" != "$down0" ]; then
	br_fail "bridge a: $((up1 - up0)) standby -> active and $((down1 - down0)) active -> standby after the death, not 1 and 0" a ka1
fi
[ "$f1" = "$f0" ] || br_fail "keepalived 1 put a in FAULT $((f1 - f0)) time(s) after the death" a ka1
# The stream lasts 10 s, the death 2 s in, the stall 4 s: a forwards its end.
[ "$fwd" -ge "$KA_RATE" ] || br_fail "bridge a forwarded $fwd packets of the stream, fewer than a second's ($KA_RATE)" a ka1
ka_role_is a default active || br_fail "bridge a not active at the end" a ka1
br_stop a
sf_log "PASS"
