#!/bin/bash
# Device removal: the RoCE device goes away (simfab remove: DEVICE_FATAL and rdma_cm
# DEVICE_REMOVAL). The bridge stops that side cleanly and says so: its groups are left,
# the IB side keeps its joins, nothing is forwarded (IB packets count as side_down), the
# console still answers and shows the side removed, a join is refused; SIGINT then ends
# the bridge with its final counters and exit status 1 (it did not run as configured).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-removal
g=239.1.2.3
n=100

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g"
"$SIMFAB" remove sim_roce0 >/dev/null
con_wait_json bridge '.sides[1].state' removed
grep -q "RoCE sim_roce0: .*this side is stopped, nothing is forwarded" "$SF_TMP/bridge.err" ||
	br_fail "no message about the stopped side" bridge
[ "$(con_json bridge '.groups[0].ib.state')" = joined ] || br_fail "the IB side lost its join" bridge
br_send tx "$IB_NET.2" -g "$g" -n "$n" --rate 20000
con_wait_json bridge '.sides[0].drop_reasons.side_down' "$n"
con_expect_in "$(con_must_exit bridge 1 status)" "removed" "status shows the side removed (unhealthy: exit 1)"
out=$(con_must_exit bridge 1 join 239.1.2.9)
con_expect_in "$out" "is stopped" "join while a side is stopped"

tpid=$(br_pid bridge)
kill -INT "$(sf_child "$tpid")"
sf_wait_exit "$tpid"
[ "$SF_RC" = 1 ] || br_fail "exit status $SF_RC after a device removal, expected 1" bridge
grep -q '^ib2roce: final counters$' "$SF_TMP/bridge.out" || br_fail "no final counters" bridge
br_expect bridge IB drop_side_down "$n"
br_expect bridge IB fwd_pkts 0
sf_log "PASS"
