#!/bin/bash
# The systemd protocol against a real NOTIFY_SOCKET (tests/control/notifylisten):
# - RoCE port down at start: READY=1 comes when the join timeout passes, with STATUS=
#   naming the group not joined; when the port comes up the bridge joins and forwards;
# - WATCHDOG_USEC=1 s: WATCHDOG=1 about every 0.5 s; when a worker is stalled on purpose
#   (the stall feature) the pings stop and STATUS= says UNHEALTHY (workers), and both
#   come back when it runs again; the same for the control thread (ctlstall), whose
#   stall is also logged and counted once it is over;
# - a second bridge with both ports up: READY=1 only after its joins (the "all groups
#   joined" log line comes first);
# - STOPPING=1 on SIGTERM.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"
: "${NOTIFYLISTEN:?NOTIFYLISTEN must name the notifylisten tool}"

sf_init console-notify
g=239.1.2.3
n=100
nsock=$SF_TMP/notify.sock

# notify_listen NAME: a listener on $SF_TMP/NAME.nsock, lines in $SF_TMP/NAME.out.
# In the sanitizer build the helper runs without LeakSanitizer: once, its exit-time leak
# check (a ptrace tracer) spun at 97% CPU for minutes after the test had passed, left
# behind with the tests that followed. The helper is not what this test checks.
notify_listen() {
	br_start "$1" 90 env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"$NOTIFYLISTEN" "$SF_TMP/$1.nsock" 80
	t_wait_until 5 test -S "$SF_TMP/$1.nsock" || sf_fail "notifylisten did not bind" "$SF_TMP/$1.err"
}

# count NAME FIELD: how many FIELD lines the listener NAME received so far.
count() {
	grep -c " $2\$" "$SF_TMP/$1.out" || true
}

"$SIMFAB" port sim_roce0 down >/dev/null
notify_listen n1
br_start bridge 120 env NOTIFY_SOCKET="$SF_TMP/n1.nsock" WATCHDOG_USEC=1000000 "$IB2ROCE" --debug --control "$SF_TMP/bridge.sock" --idle backoff \
	-e statint=1 -e join_timeout=2 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g"
BR_BRIDGES=bridge
SF_PIDS="$SF_PIDS $(sf_child "$BR_PID")"
sf_wait_line "$SF_TMP/n1.out" ' READY=1$' "$BR_PID" 15
grep -q "STATUS=1 group not joined: $g" "$SF_TMP/n1.out" ||
	br_fail "READY after the join timeout without a STATUS naming the group" bridge n1
grep -q "RoCE sim_roce0 port 1 is down: its joins wait" "$SF_TMP/bridge.err" ||
	br_fail "no message about the port being down" bridge
[ "$(con_json bridge '.sides[1].state')" = down ] || br_fail "RoCE side not down in the JSON" bridge
"$SIMFAB" port sim_roce0 up >/dev/null
con_wait_json bridge '.groups[0].roce.state' joined 10
br_listen rx "$ROCE_NET.2" -g "$g" -n "$n" --verify --timeout 20
br_send tx "$IB_NET.2" -g "$g" -n "$n" --rate 20000
br_expect_listener rx "$n" 1

# The watchdog cadence: WATCHDOG_USEC 1 s, pinged at half of it.
w0=$(count n1 WATCHDOG=1)
sleep 3
w1=$(count n1 WATCHDOG=1)
[ $((w1 - w0)) -ge 4 ] && [ $((w1 - w0)) -le 8 ] ||
	br_fail "$((w1 - w0)) WATCHDOG=1 in 3 s, expected about 6" bridge n1
grep -q ' STATUS=forwarding' "$SF_TMP/n1.out" || br_fail "no STATUS summary line" bridge n1
# A stalled worker: the pings stop (after the 1 s grace, seen at the next 1 s rate
# tick) and come back.
con_ok bridge enable stall=1 >/dev/null
sleep 3
w2=$(count n1 WATCHDOG=1)
sleep 2
w3=$(count n1 WATCHDOG=1)
[ "$w3" = "$w2" ] || br_fail "$((w3 - w2)) WATCHDOG=1 while the worker was stalled" bridge n1
grep -q "workers: 1 stalled (worker 0 on CPU [-0-9]*: no progress for [0-9]* ms.*): withholding the watchdog" \
	"$SF_TMP/bridge.err" || br_fail "no log line about the stalled worker" bridge
# STATUS= follows the health at once: not "forwarding" while the watchdog is withheld.
grep -q ' STATUS=UNHEALTHY (workers): forwarding 1/1 groups' "$SF_TMP/n1.out" ||
	br_fail "STATUS= did not say unhealthy while the worker was stalled" bridge n1
con_ok bridge disable stall >/dev/null
sleep 2
w4=$(count n1 WATCHDOG=1)
[ "$w4" -gt "$w3" ] || br_fail "WATCHDOG=1 did not resume after the stall" bridge n1
grep 'STATUS=' "$SF_TMP/n1.out" | tail -n 1 | grep -q ' STATUS=forwarding 1/1 groups' ||
	br_fail "STATUS= not back to forwarding after the stall" bridge n1

# A stalled control thread (the ctlstall fault injection stops it for 4 s): no
# WATCHDOG=1 while it is stopped (a gap of at least 4 s between two pings), the stall is
# logged once it is over and counted in stats --json and status, and the pings resume.
con_ok bridge enable ctlstall=4000 >/dev/null
t_wait_until 15 grep -q 'ib2roce warning: control thread was stalled for [0-9.]* s' "$SF_TMP/bridge.err" ||
	br_fail "no log line about the control thread's stall" bridge
secs=$(sed -n 's/.*control thread was stalled for \([0-9]*\)\.[0-9] s.*/\1/p' "$SF_TMP/bridge.err")
[ "$secs" -ge 4 ] || br_fail "the stall was logged as $secs s, at least 4 s expected" bridge
[ "$(con_json bridge '.ctl_stalls >= 1 and .ctl_stall_max_ms >= 4000')" = true ] ||
	br_fail "stats --json: ctl_stalls $(con_json bridge .ctl_stalls), ctl_stall_max_ms $(con_json bridge .ctl_stall_max_ms)" bridge
con_expect_in "$(con_ok bridge status)" "control thread stalled " "status"
w5=$(count n1 WATCHDOG=1)
# count_above NAME FIELD N: the listener NAME received more than N FIELD lines.
count_above() {
	[ "$(count "$1" "$2")" -gt "$3" ]
}
t_wait_until 10 count_above n1 WATCHDOG=1 "$w5" ||
	br_fail "WATCHDOG=1 did not resume after the control thread's stall" bridge n1
gap=$(awk '$2 == "WATCHDOG=1" { if (p && $1 - p > g) g = $1 - p; p = $1 } END { print g + 0 }' \
	"$SF_TMP/n1.out")
[ "$gap" -ge 4000 ] || br_fail "longest gap between WATCHDOG=1 is $gap ms: pinged during the stall" bridge n1

# STOPPING=1 on SIGTERM, then a clean exit.
kill -TERM "$(sf_child "$(br_pid bridge)")"
sf_wait_exit "$(br_pid bridge)"
[ "$SF_RC" = 0 ] || br_fail "bridge exited $SF_RC after SIGTERM" bridge
sleep 0.2
grep -q ' STOPPING=1$' "$SF_TMP/n1.out" || br_fail "no STOPPING=1" bridge n1

# Both ports up: READY=1 only after the joins.
notify_listen n2
br_start bridge2 120 env NOTIFY_SOCKET="$SF_TMP/n2.nsock" "$IB2ROCE" --debug --control "$SF_TMP/bridge2.sock" --idle backoff \
	-d sim_ib0 -r sim_roce0 --workers 1 -m "$g" -m 239.1.2.4
BR_BRIDGES="bridge2"
SF_PIDS="$SF_PIDS $(sf_child "$BR_PID")"
sf_wait_line "$SF_TMP/n2.out" ' READY=1$' "$BR_PID" 15
ready_ms=$(awk '$2 == "READY=1" { print $1; exit }' "$SF_TMP/n2.out")
# The log's wall-clock ISO 8601 time, in ms since the epoch (notifylisten's clock).
joined=$(sed -n 's/^\[\([^]]*\)\] ib2roce notice: all 2 groups joined.*/\1/p' "$SF_TMP/bridge2.err")
[ -n "$joined" ] || br_fail "no 'all 2 groups joined' line" bridge2
joined=$(date -d "$joined" +%s%3N) || br_fail "log time '$joined' is not ISO 8601" bridge2
[ "$ready_ms" -ge "$joined" ] ||
	br_fail "READY=1 at $ready_ms ms, before the joins completed at $joined ms" bridge2 n2
grep -q ' STATUS=forwarding 2/2 groups' "$SF_TMP/n2.out" ||
	br_fail "no STATUS summary with READY" bridge2 n2
br_stop bridge2
sf_log "PASS"
