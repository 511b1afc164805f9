#!/bin/bash
# SIGHUP reload: the bridge re-reads its config file; groups removed from it are left,
# new ones joined, live, without disturbing the group that stays; runtime features take
# their new values, each change logged old -> new; a change that needs a restart (a
# start-up-only feature, workers, a device) refuses the whole reload: nothing changes,
# the log and the reply name each setting, `bcom reload` exits 1, `bcom config` and
# `stats --json` still report the running configuration; `ib2roce --check
# --running-config` says the same of the file beforehand. A file with an error changes
# nothing. The console's reload replies with the report and logs it. A doubled SIGINT
# stops it gracefully.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-reload
ga=239.1.2.3
gb=239.1.2.4
gc=239.1.2.5
n=200
conf=$SF_TMP/bridge.conf

cat >"$conf" <<C
device sim_ib0
roce sim_roce0
multicast $ga
multicast $gb
C
br_bridge bridge 2 --workers 1 -c "$conf"
pid=$(sf_child "$(br_pid bridge)")

# A steady stream on A across both reloads.
br_listen a_rx "$ROCE_NET.2" -g "$ga" -n 2000 --verify --timeout 40
br_send_start a_tx "$IB_NET.2" -g "$ga" -n 2000 --rate 1000

# A start-up-only feature and the workers changed (to 0: this machine may have only 2
# CPUs, and --check plans the workers), with a group change and a runtime feature:
# refused as a whole, nothing changes.
cat >"$conf" <<C
device sim_ib0
roce sim_roce0
workers 0
multicast $ga
multicast $gc
enable statint=7
enable buffers=16384
C
con_ok bridge config >"$SF_TMP/running.conf"
con_expect_in "$(cat "$SF_TMP/running.conf")" "^workers 1$" "config: the running workers"
con_expect_in "$(cat "$SF_TMP/running.conf")" "^feature buffers 65536$" "config: start-up features"
# The deployment tool's question, before the reload: --check against the running one,
# with the command line the bridge runs with (br_bridge's).
same=(--control "$SF_TMP/bridge.sock" --idle backoff -e statint=0 --workers 1)
rc=0
"$IB2ROCE" "${same[@]}" --check -c "$conf" --running-config "$SF_TMP/running.conf" \
	>"$SF_TMP/check.out" 2>"$SF_TMP/check.err" || rc=$?
[ "$rc" = 3 ] || br_fail "--check --running-config: exit status $rc, expected 3: $(cat "$SF_TMP/check.out" "$SF_TMP/check.err")" bridge
grep -qxF "needs a restart: workers 1 -> 0 (the engine sized its workers and channel pairs at start)" \
	"$SF_TMP/check.out" || br_fail "--check: no 'needs a restart: workers 1 -> 0'" bridge
grep -qxF "needs a restart: feature buffers 65536 -> 16384 (start-up only: the engine sized or set it at start)" \
	"$SF_TMP/check.out" || br_fail "--check: no 'needs a restart: feature buffers'" bridge
[ "$(grep -c '^needs a restart' "$SF_TMP/check.out")" = 2 ] ||
	br_fail "--check: more than the two changes: $(cat "$SF_TMP/check.out")" bridge
kill -HUP "$pid"
sf_wait_line "$SF_TMP/bridge.err" 'reload: reload refused: 2 settings need a restart; nothing changed' \
	"$(br_pid bridge)" 10
grep -qF "reload: needs a restart: workers 1 -> 0 (the engine sized its workers" "$SF_TMP/bridge.err" ||
	br_fail "the log does not name the workers change" bridge
grep -qF "reload: needs a restart: feature buffers 65536 -> 16384 (start-up only" "$SF_TMP/bridge.err" ||
	br_fail "the log does not name the buffers change" bridge
if grep -q "reload: joining $gc\|reload: leaving $gb\|feature 'statint'" "$SF_TMP/bridge.err"; then
	br_fail "a refused reload changed groups or features" bridge
fi
[ "$(con_json bridge "[.groups[].group] | sort | join(\",\")")" = "$ga,$gb" ] ||
	br_fail "a refused reload changed the groups" bridge
[ "$(con_json bridge '.workers | length')" = 1 ] || br_fail "stats --json: workers changed" bridge
con_expect_in "$(con_ok bridge enable)" "statint +0" "a refused reload changed statint"
con_expect_in "$(con_ok bridge enable)" "buffers +65536" "buffers kept its value"
out=$(con_must_exit bridge 1 reload)
con_expect_in "$out" "^needs a restart: workers 1 -> 0 " "bcom reload names the workers change"
con_expect_in "$out" "^reload refused: 2 settings need a restart; nothing changed" "bcom reload refuses"
sf_wait_line "$SF_TMP/bridge.err" 'console: reloading the configuration' "$(br_pid bridge)" 10
[ "$(con_ok bridge config)" = "$(cat "$SF_TMP/running.conf")" ] ||
	br_fail "config changed after refused reloads" bridge

# The same without the restart settings: applied, each change logged.
cat >"$conf" <<C
device sim_ib0
roce sim_roce0
multicast $ga
# B is gone, C is new
multicast $gc
enable statint=7
C
rc=0
"$IB2ROCE" "${same[@]}" --check -c "$conf" --running-config - <"$SF_TMP/running.conf" \
	>"$SF_TMP/check.out" 2>"$SF_TMP/check.err" || rc=$?
[ "$rc" = 0 ] || br_fail "--check --running-config: exit status $rc, expected 0: $(cat "$SF_TMP/check.out")" bridge
grep -qxF "a reload applies it: no setting needs a restart" "$SF_TMP/check.out" ||
	br_fail "--check: no 'a reload applies it'" bridge
kill -HUP "$pid"
con_wait_json bridge "[.groups[].group] | sort | join(\",\")" "$ga,$gc"
con_wait_json bridge ".groups[] | select(.group == \"$gc\") | .ib.state + .roce.state" joinedjoined
sf_wait_line "$SF_TMP/bridge.err" 'reload: 1 group added, 1 removed' "$(br_pid bridge)" 10
grep -q "reload: leaving $gb" "$SF_TMP/bridge.err" || br_fail "no 'leaving $gb'" bridge
grep -q "reload: joining $gc (both)" "$SF_TMP/bridge.err" || br_fail "no 'joining $gc'" bridge
grep -qF "reload: feature 'statint': 0 -> 7" "$SF_TMP/bridge.err" ||
	br_fail "the statint change not logged old -> new" bridge
con_expect_in "$(con_ok bridge enable)" "statint +7" "statint took its new value"

# C forwards; B does not.
br_listen c_rx "$ROCE_NET.3" -g "$gc" -n "$n" --verify --timeout 20
br_send c_tx "$IB_NET.4" -g "$gc" -n "$n" --rate 20000
br_expect_listener c_rx "$n" 1
br_listen b_rx "$ROCE_NET.3" -g "$gb" -n 0 --timeout 2
br_send b_tx "$IB_NET.4" -g "$gb" -n 50 --rate 20000
br_expect_listener b_rx 0

# A broken file: nothing changes.
cat >"$conf" <<C
device sim_ib0
roce sim_roce0
multicast $ga
multicast 239.1.2.6
enable statint=3
frobnicate
C
kill -HUP "$pid"
sf_wait_line "$SF_TMP/bridge.err" "reload: $conf:6: unknown option; nothing changed" \
	"$(br_pid bridge)" 10
[ "$(con_json bridge "[.groups[].group] | sort | join(\",\")")" = "$ga,$gc" ] ||
	br_fail "a broken file changed the groups" bridge
con_expect_in "$(con_ok bridge enable)" "statint +7" "a broken file changed statint"

# The console's reload: the report is the reply; a device change needs a restart.
cat >"$conf" <<C
device sim_ib1
roce sim_roce0
multicast $ga
C
out=$(con_must_exit bridge 1 reload)
con_expect_in "$out" "needs a restart: device sim_ib0 -> sim_ib1 \(the devices are opened at start\)" \
	"reload reports the device change"
con_expect_in "$out" "reload refused: 1 setting needs a restart; nothing changed" "reload refused"
[ "$(con_json bridge "[.groups[].group] | sort | join(\",\")")" = "$ga,$gc" ] ||
	br_fail "a refused console reload changed the groups" bridge

br_send_end a_tx
br_expect_listener a_rx 2000 1
# The same SIGINT twice at once (as timeout(1) delivers it: to the child, then to the
# group) is one request: a graceful stop with exit status 0, not a forced exit.
child=$(sf_child "$(br_pid bridge)")
kill -INT "$child"
kill -INT "$child"
sf_wait_exit "$(br_pid bridge)"
[ "$SF_RC" = 0 ] || br_fail "exit status $SF_RC after a doubled SIGINT" bridge
grep -q '^ib2roce: final counters$' "$SF_TMP/bridge.out" || br_fail "no final counters" bridge
br_expect_group bridge "$ga" ib_to_roce 2000
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
