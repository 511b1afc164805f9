#!/bin/bash
# A handover that fails never takes effect later (control/ha.c: takeover prepare/commit
# with an exchange id; issue 21 D2). An HA pair as in pair.sh, a active for default (g1),
# b active for p2 (g2):
# 1. b's control thread stalls (ctlstall) longer than a handover's time; `handover
#    default` on a fails; once b runs again (and has read what a sent), default is still
#    active on a and standby on b: exactly one active.
# 2. b's side of the protocol, driven by hand (fakepeer.py ask): a commit with an id that
#    was not prepared, and one prepared longer ago than a handover's time, are refused; a
#    commit whose asker shut its socket down before b read it (b stalled meanwhile) is
#    refused or undone: b stays standby.
# 3. Both bridges hand over to each other at once (a: default, b: p2; both stalled
#    before, so that the two commands overlap): whatever the outcome of each, every
#    partition is active on exactly one bridge.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
: "${BCOM:?BCOM must name the bcom program}"

sf_init ha-stale
g1=239.1.2.3
g2=239.1.2.4
fake="$(dirname "$0")/fakepeer.py"

# roles NAME: "PARTITION=ROLE ..." of bridge NAME (its `ha`).
roles() {
	con_must "$1" ha
	awk '$2 == "active" || $2 == "standby" { printf "%s=%s ", $1, $2 }' "$SF_TMP/bcom.out"
}

# one_active PARTITION: active on exactly one of a and b.
one_active() {
	local n=0

	case " $(roles a)" in *" $1=active "*) n=$((n + 1)) ;; esac
	case " $(roles b)" in *" $1=active "*) n=$((n + 1)) ;; esac
	[ "$n" = 1 ] || br_fail "partition $1 is active on $n bridges (a: $(roles a); b: $(roles b))" a b
}

# ask STEP...: fakepeer.py ask on b's console; its lines in $SF_TMP/ask.out.
ask() {
	timeout -k 2 30 python3 "$fake" ask "$SF_TMP/b.sock" "$@" >"$SF_TMP/ask.out" 2>&1 ||
		br_fail "fakepeer ask $*: $(cat "$SF_TMP/ask.out")" b
}

br_bridge a 2 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" \
	--ha-peer-control "$SF_TMP/b.sock" --partition p2:"$g2" --role p2=standby -m "$g1" -m "$g2"
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" \
	--ha-peer-control "$SF_TMP/a.sock" --partition p2:"$g2" --role default=standby -m "$g1" -m "$g2"
ha_role_is a default active
ha_role_is b default standby
ha_role_is b p2 active

# 1. The peer stalls through the handover.
con_must b enable ctlstall=4000
con_bc a handover default
[ "$CON_RC" = 1 ] || br_fail "handover to a stalled peer: exit $CON_RC: $(cat "$SF_TMP/bcom.out")" a
cp "$SF_TMP/bcom.out" "$SF_TMP/ho1.out"
# b runs again: what a sent is read by now (its connection came before this one); a
# second command makes sure the batch that held it is over.
con_must b ha
con_must b ha
one_active default
ha_role_is a default active
ha_role_is b default standby
grep -q '^partition default: not handed over: the peer: no answer within the handover.s time: staying active$' \
	"$SF_TMP/ho1.out" || br_fail "handover to a stalled peer: $(cat "$SF_TMP/ho1.out")" a

# 2. b refuses stale, expired and abandoned commits.
ask "send:takeover commit default 1.2.3"
grep -q '^fail takeover: partition default: refused: exchange 1.2.3 is not prepared here' "$SF_TMP/ask.out" ||
	br_fail "a commit never prepared: $(cat "$SF_TMP/ask.out")" b
ask "send:takeover prepare default 1.2.4" "send:takeover commit default 1.2.3"
if ! grep -q '^ok takeover: partition default: prepared (standby here now)$' "$SF_TMP/ask.out" ||
	! grep -q '^fail .*exchange 1.2.3 is not prepared here' "$SF_TMP/ask.out"; then
	br_fail "a commit of another exchange than the prepared one: $(cat "$SF_TMP/ask.out")" b
fi
# Longer than a handover's time (2 s, HA_HANDOVER_MS) between prepare and commit.
ask "send:takeover prepare default 1.2.5" "sleep:3" "send:takeover commit default 1.2.5"
grep -q '^fail .*exchange 1.2.5 is not prepared here (stale, expired or replaced)' "$SF_TMP/ask.out" ||
	br_fail "an expired prepare was committed: $(cat "$SF_TMP/ask.out")" b
ha_role_is b default standby
# The asker gives up: it sends the commit while b is stalled, shuts its socket down and
# leaves before b reads the commit.
timeout -k 2 30 python3 "$fake" ask "$SF_TMP/b.sock" "send:takeover prepare default 1.2.6" \
	"send:enable ctlstall=1500" "sendgone:takeover commit default 1.2.6" >"$SF_TMP/ask.out" 2>&1 ||
	br_fail "fakepeer ask (gone): $(cat "$SF_TMP/ask.out")" b
con_must b ha
ha_role_is b default standby
grep -Eq 'takeover commit of partition default \(1.2.6\) refused: the handing-over bridge gave up|partition default: the handing-over bridge gave up before our answer came: taking over undone' \
	"$SF_TMP/b.err" || br_fail "bridge b: no refusal of the abandoned commit in its log" b
ha_role_is a default active
one_active default
one_active p2

# 3. Both hand over to each other at once: both control threads stall first, so that
#    both commands wait in their sockets and run when the two wake up together.
con_must a enable ctlstall=1500
con_must b enable ctlstall=1500
timeout -k 2 30 "$BCOM" --control "$SF_TMP/a.sock" handover >"$SF_TMP/ho-a.out" 2>&1 &
ha_pid=$!
timeout -k 2 30 "$BCOM" --control "$SF_TMP/b.sock" handover >"$SF_TMP/ho-b.out" 2>&1 &
hb_pid=$!
sf_wait_exit "$ha_pid"
ra=$SF_RC
sf_wait_exit "$hb_pid"
rb=$SF_RC
if [ "$ra" -gt 1 ] || [ "$rb" -gt 1 ]; then
	br_fail "handovers at once: exit $ra and $rb: $(cat "$SF_TMP/ho-a.out" "$SF_TMP/ho-b.out")" a b
fi
sf_log "handovers at once: a exit $ra: $(tr '\n' ' ' <"$SF_TMP/ho-a.out")"
sf_log "handovers at once: b exit $rb: $(tr '\n' ' ' <"$SF_TMP/ho-b.out")"
# Let a late request be read by each before looking.
con_must a ha
con_must b ha
sleep 1
one_active default
one_active p2
br_stop a
br_stop b
sf_log "PASS"
