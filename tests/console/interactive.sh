#!/bin/bash
# bcom on a terminal (a pseudo-terminal driven by ptyrun.py): Tab completes commands,
# features and groups (lists asked of the bridge); UTF-8 is edited by characters; the
# history is kept in ~/.bcom_history; ^C drops the line; quit, exit and ^D leave bcom
# and the bridge keeps running; "shut" is not shutdown; shutdown asks first (no: nothing
# happens, yes: the bridge stops). From a script: bcom shutdown stops without asking,
# bcom quit is a usage error.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-interactive
g=239.1.2.3
sock=$SF_TMP/bridge.sock
export HOME=$SF_TMP

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g"

# session NAME: play $SF_TMP/NAME.steps against an interactive bcom.
session() {
	timeout -k 2 60 python3 "$(dirname "$0")/ptyrun.py" "$SF_TMP/$1.steps" -- \
		"$BCOM" --control "$sock" >"$SF_TMP/$1.out" 2>&1 ||
		br_fail "interactive session $1 failed: $(tail -c 2000 "$SF_TMP/$1.out")" bridge
}

cat >"$SF_TMP/one.steps" <<'S'
expect ib2roce> $
# Tab completes a command (the list comes from help).
send mult\t
expect multicast $
send \r
expect 239\.1\.2\.3 .*joined
expect ib2roce> $
# A feature after enable/disable (from the enable list), a group after leave.
send disable ppsd\t
expect ppsdisplay $
send \r
expect disabled ppsdisplay
send leave 239.1.2\t
expect 239\.1\.2\.3 $
# ^C drops the line: the group is not left.
send \x03
expect \^C
expect ib2roce> $
# UTF-8: the cursor moves by characters, so x lands before the é, not inside it.
send join é\x1b[Dx\r
expect 'xé'
expect ib2roce> $
# A command never reached by a prefix.
send shut\r
expect did you mean shutdown\?
send shutdown\r
expect Stop the bridge at .*\? \[y/N\] $
send n\r
expect not stopped
send quit\r
exit 0
S
session one
[ "$(con_json bridge '.groups | length')" = 1 ] || br_fail "a group was left or joined" bridge
br_alive bridge
grep -qx 'multicast' "$HOME/.bcom_history" || br_fail "no history file: $(cat "$HOME/.bcom_history" 2>&1)" bridge

# The history is there in the next session (Up), ^D leaves.
cat >"$SF_TMP/two.steps" <<'S'
expect ib2roce> $
send \x1b[A
expect quit$
send \x1b[A
expect shutdown$
send \x15\x04
exit 0
S
session two
br_alive bridge
con_ok bridge multicast >/dev/null

# From a script: quit is a usage error (it would have stopped the bridge), shutdown
# stops it without asking (stdin is not a terminal).
out=$(con_must_exit bridge 2 quit)
con_expect_in "$out" "bridge keeps running" "bcom quit"
out=$(con_must_exit bridge 1 shut)
con_expect_in "$out" "did you mean shutdown" "bcom shut"
br_alive bridge

# Interactive shutdown, answered yes: the bridge stops cleanly.
cat >"$SF_TMP/three.steps" <<'S'
expect ib2roce> $
send shutdown\r
expect \[y/N\] $
send y\r
expect stopping the bridge
exit 0
S
session three
tpid=$(br_pid bridge)
sf_wait_exit "$tpid"
[ "$SF_RC" = 0 ] || br_fail "bridge exited $SF_RC after shutdown" bridge
grep -q '^ib2roce: final counters$' "$SF_TMP/bridge.out" || br_fail "no final counters after shutdown" bridge
sf_log "PASS"
