#!/bin/bash
# SIGHUP reload: the bridge re-reads its config file; groups removed from it are left,
# new ones joined, live, without disturbing the group that stays; runtime features take
# their new values; a start-up-only change is reported as needing a restart and kept; a
# file with an error changes nothing. The console's reload does the same and replies
# with the report. A doubled SIGINT stops it gracefully.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

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

cat >"$conf" <<C
device sim_ib0
roce sim_roce0
multicast $ga
# B is gone, C is new
multicast $gc
enable statint=7
enable buffers=2048
C
kill -HUP "$pid"
wait_json bridge "[.groups[].group] | sort | join(\",\")" "$ga,$gc"
wait_json bridge ".groups[] | select(.group == \"$gc\") | .ib.state + .roce.state" joinedjoined
sf_wait_line "$SF_TMP/bridge.err" 'reload: 1 group added, 1 removed' "$(br_pid bridge)" 10
grep -q "reload: leaving $gb" "$SF_TMP/bridge.err" || br_fail "no 'leaving $gb'" bridge
grep -q "reload: joining $gc (both)" "$SF_TMP/bridge.err" || br_fail "no 'joining $gc'" bridge
grep -q "reload: feature 'buffers': 65536 -> 2048 needs a restart" "$SF_TMP/bridge.err" ||
	br_fail "buffers change not reported as needing a restart" bridge
expect_in "$(bc_ok bridge enable)" "statint +7" "statint took its new value"
expect_in "$(bc_ok bridge enable)" "buffers +65536" "buffers kept its value"

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
[ "$(json bridge "[.groups[].group] | sort | join(\",\")")" = "$ga,$gc" ] ||
	br_fail "a broken file changed the groups" bridge
expect_in "$(bc_ok bridge enable)" "statint +7" "a broken file changed statint"

# The console's reload: the report is the reply; a device change needs a restart.
cat >"$conf" <<C
device sim_ib1
roce sim_roce0
multicast $ga
C
out=$(bc_ok bridge reload)
expect_in "$out" "device: changed, needs a restart" "reload reports the device change"
expect_in "$out" "leaving $gc" "reload leaves C"
expect_in "$out" "0 groups added, 1 removed" "reload summary"

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
