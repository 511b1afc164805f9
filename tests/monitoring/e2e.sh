#!/bin/bash
# The shipped rules against a real Prometheus (Debian's prometheus 2.42), started here on
# 127.0.0.1 with its own storage, scrape and evaluation every 1 s, scraping a bridge's
# --metrics-port on the simulated fabric (job "ib2roce", as the rules expect):
#   1. healthy: no alert at all, not even pending, for 20 s: twice the longest `for:` a
#      running bridge can reach (IB2RoCEFailed, 10 s); the loss alerts have no `for:`
#      and fire at the first evaluation after their counter moved, so a longer wait
#      would only repeat the same evaluations. Any alert counts, pending included, so a
#      rule whose expression turns true is caught at the next evaluation whatever its
#      `for:`. A full minute on a loaded test machine meets real control-thread
#      stalls (IB2RoCEControlStall, rightly) from CPU starvation (docs/metrics.md);
#   2. a NIC-drop burst (a worker paused with small receive queues) fires
#      IB2RoCENICDrops within 15 s;
#   2b. a PGM stream with sequence gaps (mcsender --skip-every) fires IB2RoCEPGMGaps
#      within 15 s;
#   3. a port down (simfab port ... down) fires IB2RoCEFailed{condition="sides"}; it
#      resolves (leaves /api/v1/alerts) once the port is back up;
#   4. kill -9 of the bridge fires IB2RoCEScrapeDown.
# Alerts are read through Prometheus' HTTP API (/api/v1/alerts). Skipped without the
# prometheus binary or curl.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

command -v prometheus >/dev/null || { echo "SKIP: no prometheus"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
sf_init monitoring-e2e
g=239.1.2.14
src=$(cd "$(dirname "$0")/../.." && pwd)
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
mport=$(free_port)
pport=$(free_port)

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e rqdepth=64 --metrics-port "$mport" \
	-m "$g"
con_wait_json bridge '.healthy | tostring' true

mkdir -p "$SF_TMP/prom"
cat >"$SF_TMP/prom/prometheus.yml" <<P
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - $src/monitoring/ib2roce.rules.yml
scrape_configs:
  - job_name: ib2roce
    static_configs:
      - targets: ['127.0.0.1:$mport']
P
prometheus --config.file="$SF_TMP/prom/prometheus.yml" --storage.tsdb.path="$SF_TMP/prom/data" \
	--web.listen-address="127.0.0.1:$pport" --log.level=warn >"$SF_TMP/prom/out" 2>&1 &
PROM=$!
SF_PIDS="$SF_PIDS $PROM"
api=http://127.0.0.1:$pport/api/v1

prom_fail() {
	br_fail "$1; alerts: $(curl -s "$api/alerts" 2>&1 | head -c 3000)" bridge
}
# alerts JQ_FILTER: the alerts (name state labels) the filter selects, one per line.
alerts() {
	curl -sf "$api/alerts" | jq -r ".data.alerts[] | select($1) |
		\"\\(.labels.alertname) \\(.state) \\(.labels | tostring)\""
}
# wait_alert SECS JQ_FILTER WHAT: an alert that the filter selects is there within SECS.
wait_alert() {
	t_wait_until "$1" alerting "$2" || prom_fail "$3 not within $1 s"
}

# alerting SELECTOR: an alert matching SELECTOR fires.
alerting() {
	[ -n "$(alerts "$1" 2>/dev/null)" ]
}

# Prometheus up, scraping the bridge, the rules loaded.
# scraping: prometheus scrapes the bridge (its "up" is 1).
scraping() {
	[ "$(curl -sf "$api/query?query=up%7Bjob%3D%22ib2roce%22%7D" | jq -r '.data.result[0].value[1]' 2>/dev/null)" = 1 ]
}
t_wait_until 30 scraping || br_fail "prometheus does not scrape the bridge: $(cat "$SF_TMP/prom/out")" bridge
[ "$(curl -sf "$api/rules" | jq '[.data.groups[].rules[]] | length')" -ge 17 ] ||
	br_fail "prometheus did not load the rules: $(cat "$SF_TMP/prom/out")" bridge

# 1. Healthy: nothing, for 20 s. Prometheus may evaluate the rules once before its first
# scrape is stored (IB2RoCEAbsent then goes pending): start once that is over.
# quiet SELECTOR: no alert matching SELECTOR fires.
quiet() {
	[ -z "$(alerts "$1")" ]
}
t_wait_until 10 quiet true || prom_fail "alerts at start do not clear"
for _ in $(seq 20); do
	a=$(alerts true) || br_fail "GET /api/v1/alerts failed" bridge
	[ -z "$a" ] || prom_fail "a healthy bridge raised: $a"
	sleep 1
done
sf_log "healthy: no alert in 20 s"

# 2. A NIC-drop burst: pause the worker, send more than its receive queue holds.
con_stall_worker bridge
br_send burst "$IB_NET.2" -g "$g" -n 500
con_ok bridge disable stall >/dev/null
[ "$(sf_counter sim_ib0 out_of_buffer)" -gt 0 ] || br_fail "the burst did not overflow the receive queue" bridge
wait_alert 15 '.labels.alertname == "IB2RoCENICDrops" and .state == "firing" and .labels.side == "IB"' \
	"IB2RoCENICDrops firing"
sf_log "NIC drops: $(alerts '.labels.alertname == "IB2RoCENICDrops"')"

# 2b. PGM sequence gaps: sequence numbers 49, 99, 149 of 200 not sent (3 gaps).
br_start pgmsend 60 "$MCSENDER" -d sim_ib1 --pgm -n 200 --rate 2000 --skip-every 50 \
	--stream-id 4343 "$g"
sf_wait_exit "$BR_PID"
[ "$SF_RC" = 0 ] || br_fail "mcsender exited with status $SF_RC" pgmsend
con_wait_json bridge '.pgm_gaps_total' 3
wait_alert 15 '.labels.alertname == "IB2RoCEPGMGaps" and .state == "firing"' \
	"IB2RoCEPGMGaps firing"
sf_log "PGM gaps: $(alerts '.labels.alertname == "IB2RoCEPGMGaps"')"

# 3. A port down: IB2RoCEFailed (sides) fires; it resolves once the port is back.
con_wait_json bridge '.healthy | tostring' true
"$SIMFAB" port sim_roce0 down >/dev/null
con_wait_json bridge '.sides[1].state' down
sel_failed='.labels.alertname == "IB2RoCEFailed" and .labels.condition == "sides"'
wait_alert 30 "$sel_failed and .state == \"firing\"" "IB2RoCEFailed (sides) firing"
sf_log "port down: $(alerts "$sel_failed")"
"$SIMFAB" port sim_roce0 up >/dev/null
con_wait_json bridge '.healthy | tostring' true 15
t_wait_until 30 quiet "$sel_failed" || prom_fail "IB2RoCEFailed (sides) did not resolve"
sf_log "port up: IB2RoCEFailed resolved"

# 4. kill -9: the scrape fails, IB2RoCEScrapeDown fires.
kill -KILL "$(sf_child "$(br_pid bridge)")"
wait_alert 30 '.labels.alertname == "IB2RoCEScrapeDown" and .state == "firing"' \
	"IB2RoCEScrapeDown firing after kill -9"
sf_log "kill -9: $(alerts '.labels.alertname == "IB2RoCEScrapeDown"')"

kill -TERM "$PROM"
wait "$PROM" 2>/dev/null || true
sf_log "PASS"
