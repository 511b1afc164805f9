#!/bin/bash
# Port events: RoCE port down while traffic flows (the bridge leaves, counts what it
# receives meanwhile as side_down, and says it is unhealthy: health, status, stats --json
# and the metrics file), up again (healthy again) (it joins again, traffic resumes); an SM
# client re-register on IB (it leaves and joins again); the IB port down and up. The
# bridge never exits; every packet it received is accounted for.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-portevents
g=239.1.2.3
n=200

prom=$SF_TMP/ib2roce.prom
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" --metrics-file "$prom" \
	-e statint=1

round() { # round NAME: n packets IB -> RoCE must arrive
	br_listen "$1_rx" "$ROCE_NET.2" -g "$g" -n "$n" --verify --timeout 20
	br_send "$1_tx" "$IB_NET.2" -g "$g" -n "$n" --rate 20000
	br_expect_listener "$1_rx" "$n" 1
}
round before
con_wait_json bridge '.healthy | tostring' true
con_expect_in "$(con_ok bridge health)" "^health ok$" "health while forwarding"
con_ok bridge status >/dev/null

# wait_prom LINE: the metrics file holds LINE within 10 s.
wait_prom() {
	t_wait_until 10 grep -sqx -- "$1" "$prom" || br_fail "metrics file without '$1'" bridge
}
wait_prom 'ib2roce_healthy 1'

# RoCE port down: the bridge leaves on RoCE and counts IB packets as side_down. It is
# still "ready" (startup is over) but not healthy: one line per failed condition, and
# status and health exit 1.
"$SIMFAB" port sim_roce0 down >/dev/null
con_wait_json bridge '.sides[1].state' down
[ "$(con_json bridge '.groups[0].roce.state')" != joined ] || br_fail "still joined on a down port" bridge
br_send down_tx "$IB_NET.2" -g "$g" -n "$n" --rate 20000
con_wait_json bridge '.sides[0].drop_reasons.side_down' "$n"
[ "$(con_json bridge '.sides[0].drop_reasons.not_joined')" = 0 ] || br_fail "port down counted as not_joined" bridge
[ "$(con_json bridge '.healthy | tostring')" = false ] || br_fail "json healthy with a port down" bridge
[ "$(con_json bridge '.ready')" = true ] || br_fail "json ready" bridge
con_expect_in "$(con_json bridge '.health.sides')" "RoCE sim_roce0 port 1 down" "json health.sides"
out=$(con_must_exit bridge 1 health)
con_expect_in "$out" "^health FAILED sides: RoCE sim_roce0 port 1 down" "health: sides"
con_expect_in "$out" "^health FAILED groups: 1 of 1 not forwarding" "health: groups"
out=$(con_must_exit bridge 1 status)
con_expect_in "$out" "^health FAILED sides:" "status shows the failed health"
wait_prom 'ib2roce_healthy 0'
wait_prom 'ib2roce_health_condition_ok{condition="sides"} 0'
"$SIMFAB" port sim_roce0 up >/dev/null
con_wait_json bridge '.groups[0].roce.state' joined 10
round roce_up
con_wait_json bridge '.healthy | tostring' true
grep -q "health: sides: RoCE sim_roce0 port 1 down" "$SF_TMP/bridge.err" || br_fail "no health log line" bridge
grep -q "RoCE sim_roce0 port 1 down: 1 group left" "$SF_TMP/bridge.err" || br_fail "no port down message" bridge
grep -q "RoCE sim_roce0: port active: joining 1 group again" "$SF_TMP/bridge.err" ||
	grep -q "RoCE sim_roce0: .*joining 1 group again" "$SF_TMP/bridge.err" || br_fail "no re-join message" bridge

# SM client re-register on IB: leave and join again, traffic resumes.
j0=$(grep -c 'IB joined ' "$SF_TMP/bridge.err")
"$SIMFAB" reregister sim_ib0 >/dev/null
# ib_joins_above N: the bridge logged more than N IB joins.
ib_joins_above() {
	[ "$(grep -c 'IB joined ' "$SF_TMP/bridge.err")" -gt "$1" ]
}
t_wait_until 10 ib_joins_above "$j0" || br_fail "no IB re-join after client re-register" bridge
con_wait_json bridge '.groups[0].ib.state' joined
round rereg

# IB port down and up: the IB side leaves (and RoCE -> IB traffic is counted), then joins.
"$SIMFAB" port sim_ib0 down >/dev/null
con_wait_json bridge '.sides[0].state' down
br_send down_tx2 "$ROCE_NET.4" -g "$g" -n 50 --rate 20000
con_wait_json bridge '.sides[1].drop_reasons.side_down' 50
"$SIMFAB" port sim_ib0 up >/dev/null
con_wait_json bridge '.groups[0].ib.state' joined 10
round ib_up
[ "$(con_json bridge '.sides[0].port_events')" -ge 3 ] || br_fail "IB port_events" bridge
[ "$(con_json bridge '.sides[1].rejoins')" -ge 1 ] || br_fail "RoCE rejoins" bridge

# A port set to the state it is in raises no event (as a driver: events come with a
# change of state): the bridge does not join again.
ev_ib=$(con_json bridge '.sides[0].port_events') ev_roce=$(con_json bridge '.sides[1].port_events')
"$SIMFAB" port sim_ib0 up >/dev/null
"$SIMFAB" port sim_roce0 up >/dev/null
br_send noop_tx "$IB_NET.2" -g "$g" -n 10 --rate 20000
con_wait_json bridge '.sides[0].fwd_pkts' $((4 * n + 10))
[ "$(con_json bridge '.sides[0].port_events')" = "$ev_ib" ] ||
	br_fail "IB port_events $(con_json bridge '.sides[0].port_events') after a port up on an up port, was $ev_ib" bridge
[ "$(con_json bridge '.sides[1].port_events')" = "$ev_roce" ] ||
	br_fail "RoCE port_events $(con_json bridge '.sides[1].port_events') after a port up on an up port, was $ev_roce" bridge

br_stop bridge
br_expect bridge IB fwd_pkts $((4 * n + 10))
br_expect bridge IB drop_side_down "$n"
br_expect bridge RoCE drop_side_down 50
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
