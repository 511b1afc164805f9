#!/bin/bash
# An HA pair elected by real keepalived (tests/lib/ka.sh: two keepalived processes in
# two network namespaces, the settings of ha/keepalived.conf.example): bridges a and b
# start standby, one partition (default), a's priority higher.
# - ha/keepalived.conf.example passes `keepalived -t` without a complaint;
# - keepalived makes a active (b stays standby);
# - the cost of a role change (notify script, bcom alone) is printed;
# - kill -9 of a during a stream: keepalived 1 sees the process gone (track_process),
#   goes FAULT and tells keepalived 2 (priority 0 advertisement), which becomes master
#   and makes b active through the notify FIFO (ha/ib2roce-notify.sh --fifo). The packets lost meanwhile (the gap)
#   are printed; asserted only: fewer than KA_KILL_MAX_LOST lost (a bound that holds
#   on a loaded machine, far above the ~1 s a one-second health check alone costs), no
#   duplicates, no loop (b's RoCE -> IB direction forwards nothing: hop-limit marker
#   and --peer), b's counters add up.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ka.sh
. "$(dirname "$0")/../lib/ka.sh"

ka_init ha-keepalived
g1=239.1.2.3
m=10000
: "${KA_KILL_MAX_LOST:=1000}"

# ha/keepalived.conf.example is a configuration keepalived takes without a complaint
# (with this build's paths and the test's interface).
sed -e "s|/usr/bin/bcom|$BCOM|g" -e "s|/usr/share/ib2roce/ib2roce-notify.sh|$HA_NOTIFY|" \
	-e "s|interface eth0|interface kav2-$$|" "$(dirname "$HA_NOTIFY")/keepalived.conf.example" \
	>"$SF_TMP/example.conf"
ip netns exec "$KA_NS2" "$KA" -t -f "$SF_TMP/example.conf" >"$SF_TMP/example.out" 2>&1 ||
	sf_fail "keepalived -t refuses ha/keepalived.conf.example" "$SF_TMP/example.out"
[ ! -s "$SF_TMP/example.out" ] ||
	sf_fail "keepalived -t complains about ha/keepalived.conf.example" "$SF_TMP/example.out"

br_bridge a 1 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" --role standby -m "$g1"
br_bridge b 1 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" --role standby -m "$g1"
ka_start 1 a default:61:250
ka_start 2 b default:61:240
ka_wait_role a default active
ka_wait_role b default standby
ka_check_conf 1
ka_check_conf 2

# What a role change costs keepalived's side: 10 runs each that change nothing (b is
# standby already) of the notify script started per state (sh + bcom + logger) and of
# bcom alone (what the notify FIFO's reader runs per change).
t0=$(date +%s%N)
for _ in 1 2 3 4 5 6 7 8 9 10; do
	"$HA_NOTIFY" --bcom "$BCOM" "$SF_TMP/b.sock" default FAULT >/dev/null ||
		br_fail "notify script on b failed" b
done
t1=$(date +%s%N)
for _ in 1 2 3 4 5 6 7 8 9 10; do
	con_bc b role default standby
	[ "$CON_RC" = 0 ] || br_fail "bcom role on b failed" b
done
t2=$(date +%s%N)
sf_log "a role change: notify script $(((t1 - t0) / 10000)) us, bcom alone $(((t2 - t1) / 10000)) us"

# Planned: keepalived 1 stopped (as `systemctl stop keepalived` on a's host before
# maintenance): keepalived 2 takes over, b active, a standby; then started again: a
# takes the partition back (preemption).
ka_stream p0 "$g1" "$m"
sleep 1
ka_stop_one 1
ka_wait_role b default active
ka_wait_role a default standby
ka_start 1 a default:61:250
ka_wait_role a default active
ka_wait_role b default standby
ka_stream_end p0 "$m" "keepalived of the active bridge stopped, then started again"

ka_stream p1 "$g1" "$m"
sleep 1
kill -KILL "$(sf_child "$(br_pid a)")"
ka_wait_role b default active
ka_stream_end p1 "$m" "kill -9 of the active bridge, keepalived failover"
[ "$KA_DUP" = 0 ] || br_fail "keepalived failover: $KA_DUP duplicates" p1
[ "$KA_LOST" -lt "$KA_KILL_MAX_LOST" ] ||
	br_fail "keepalived failover lost $KA_LOST packets (bound $KA_KILL_MAX_LOST)" p1 ka1 ka2
grep -q 'partition default: standby -> active (console role command)' "$SF_TMP/b.err" ||
	br_fail "bridge b was not made active by the notify script" b
ka_stop
br_stop b
[ "$(br_field b RoCE fwd_pkts)" = 0 ] || br_fail "bridge b forwarded RoCE -> IB: a loop" b
br_conservation b sim_ib3 sim_roce3
sf_log "PASS"
