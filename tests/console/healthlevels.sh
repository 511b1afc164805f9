#!/bin/bash
# Health levels (ops/health.h, docs/operations.md "Health: FAILED and DEGRADED"): a
# control-thread stall (ctlstall) and NIC drops (a burst into a briefly stalled worker
# with small receive queues) are DEGRADED: `bcom health` and `status` print a "health
# DEGRADED" line and exit 0, stats --json says healthy and degraded, the metrics file
# ib2roce_healthy 1, ib2roce_degraded 1 and ib2roce_health_condition{...} 1, and the HA
# notify reader's --health-file stays 0 (no failover for a microburst). A port down is
# FAILED on top: its lines come first, health exits 1 and the health file says 1; it
# resolves when the port comes back while the DEGRADED lines stay for their hold time.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-healthlevels
g=239.1.2.12
prom=$SF_TMP/ib2roce.prom
HA_NOTIFY=$(cd "$(dirname "$0")/../.." && pwd)/ha/ib2roce-notify.sh

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e rqdepth=64 --metrics-file "$prom" \
	-e statint=1 -m "$g"
con_wait_json bridge '.healthy | tostring' true
con_expect_in "$(con_ok bridge health)" "^health ok$" "health at start"

# wait_prom LINE: the metrics file holds LINE within 10 s.
wait_prom() { con_wait_prom "$prom" bridge "$1"; }
wait_prom 'ib2roce_degraded 0'
wait_prom 'ib2roce_health_condition{condition="nic_drops",level="degraded"} 0'
wait_prom 'ib2roce_health_condition{condition="sides",level="failed"} 0'

# The notify reader's health file, fed by `bcom health` every 0.1 s (as under keepalived).
con_health_reader bridge

# A control-thread stall of 1.5 s: DEGRADED, not FAILED.
con_ok bridge enable ctlstall=1500 >/dev/null
sf_wait_line "$SF_TMP/bridge.err" 'control thread was stalled for' "$(br_pid bridge)" 15
out=$(con_ok bridge health)
con_expect_in "$out" "^health DEGRADED ctl_stall: the control thread stalled for 1\\.[5-9] s" \
	"health after a control-thread stall"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || br_fail "health: one line per condition: $out" bridge
con_expect_in "$(con_ok bridge status)" "^health DEGRADED ctl_stall" "status (exit 0) when degraded"
[ "$(con_json bridge '.healthy | tostring')" = true ] || br_fail "json healthy false when degraded" bridge
[ "$(con_json bridge '.degraded | tostring')" = true ] || br_fail "json degraded false" bridge
[ "$(con_json bridge '.health_level')" = degraded ] || br_fail "json health_level" bridge
wait_prom 'ib2roce_health_condition{condition="ctl_stall",level="degraded"} 1'
wait_prom 'ib2roce_degraded 1'
wait_prom 'ib2roce_healthy 1'

# NIC drops: stall the worker, send more than its receive queue holds, let it go on.
con_stall_worker bridge
br_send burst "$IB_NET.2" -g "$g" -n 500
con_ok bridge disable stall >/dev/null
[ "$(sf_counter sim_ib0 out_of_buffer)" -gt 0 ] || br_fail "the burst did not overflow the receive queue" bridge
con_wait_json bridge '.health.nic_drops | length > 0 | tostring' true
out=$(con_ok bridge health)
con_expect_in "$out" "^health DEGRADED nic_drops: the NIC's receive drop counter rose" "health after NIC drops"
wait_prom 'ib2roce_health_condition{condition="nic_drops",level="degraded"} 1'
wait_prom 'ib2roce_healthy 1'
# The reader saw DEGRADED for over a second (10 polls): the file never said 1.
sleep 1
grep -qx 0 "$SF_TMP/ka.health" || br_fail "health file $(cat "$SF_TMP/ka.health") while only degraded" bridge

# A port down: FAILED first, exit 1, the health file says 1; back up: 0 again.
"$SIMFAB" port sim_roce0 down >/dev/null
con_wait_json bridge '.sides[1].state' down
out=$(con_must_exit bridge 1 health)
con_expect_in "$out" "^health FAILED sides: RoCE sim_roce0 port 1 down" "health: sides"
[ "$(printf '%s\n' "$out" | head -1 | cut -d' ' -f2)" = FAILED ] || br_fail "FAILED lines not first: $out" bridge
con_expect_in "$out" "^health DEGRADED nic_drops" "health: degraded kept beside failed"
[ "$(con_json bridge '.health_level')" = failed ] || br_fail "json health_level not failed" bridge
wait_prom 'ib2roce_healthy 0'
wait_prom 'ib2roce_health_condition{condition="sides",level="failed"} 1'
t_wait_until 10 grep -qx 1 "$SF_TMP/ka.health" || br_fail "health file not 1 with a port down" bridge
"$SIMFAB" port sim_roce0 up >/dev/null
con_wait_json bridge '.healthy | tostring' true 10
t_wait_until 10 grep -qx 0 "$SF_TMP/ka.health" ||
	br_fail "health file not 0 after the port came back" bridge
grep -q 'health: nic_drops: ' "$SF_TMP/bridge.err" || br_fail "no health log line for nic_drops" bridge

kill "$READER"
wait "$READER" 2>/dev/null || true
READER=""
exec 4>&-
br_stop bridge
sf_log "PASS"
