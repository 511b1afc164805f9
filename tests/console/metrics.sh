#!/bin/bash
# What monitoring sees (docs/metrics.md, monitoring/): the metrics file of a live bridge
# passes `promtool check metrics`; the latency is a histogram in seconds (cumulative
# buckets, le="+Inf" = _count); build_info, healthy; the group totals, and the groups'
# own series only with metrics_groups on; the shipped alert rules pass
# `promtool check rules` and the Grafana dashboard is JSON whose metric names all exist
# in the file. A stalled worker (the stall feature) is logged with --debug, makes health
# fail (exit 1, one line) and the file say ib2roce_healthy 0; it recovers. A clean stop
# leaves the file with ib2roce_up 0, still valid. --metrics-port serves the same over
# HTTP on 127.0.0.1 (GET /metrics). Skipped without promtool (Debian:
# prometheus).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

command -v promtool >/dev/null || { echo "SKIP: no promtool"; exit 77; }
sf_init console-metrics
g=239.1.2.3
n=300
src=$(cd "$(dirname "$0")/../.." && pwd)
prom=$SF_TMP/ib2roce.prom

# A free loopback port for --metrics-port (another process could take it meanwhile: the
# bridge would then fail to start, and the test says so).
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 --metrics-file "$prom" -e statint=1 \
	--metrics-port "$mport" -m "$g"
br_listen rx "$ROCE_NET.2" -g "$g" -n "$n" --timeout 20
br_send tx "$IB_NET.2" -g "$g" -n "$n" --rate 20000
br_expect_listener rx "$n" 1

# wait_prom REGEX: a line of the metrics file matches REGEX within 10 s.
wait_prom() {
	t_wait_until 10 grep -sEq -- "$1" "$prom" ||
		br_fail "metrics file: no line /$1/: $(head -c 3000 "$prom" 2>&1)" bridge
}
wait_prom "^ib2roce_worker_latency_seconds_count\\{worker=\"0\"\\} $n\$"
wait_prom '^ib2roce_healthy 1$'

promtool check metrics <"$prom" >"$SF_TMP/promtool.out" 2>&1 ||
	br_fail "promtool check metrics: $(cat "$SF_TMP/promtool.out")" bridge
grep -q '^# TYPE ib2roce_worker_latency_seconds histogram$' "$prom" || br_fail "no latency histogram" bridge
grep -q 'quantile=' "$prom" && br_fail "a quantile label in the metrics file" bridge
grep -q '_nanoseconds' "$prom" && br_fail "a metric in nanoseconds" bridge
# Buckets cumulative, ending in +Inf equal to _count; _sum in seconds (under 1 s here).
awk -v n="$n" '
	/^ib2roce_worker_latency_seconds_bucket\{worker="0"/ {
		if ($2 < last) { print "bucket decreases: " $0; bad = 1 }
		last = $2; lastline = $0
	}
	/^ib2roce_worker_latency_seconds_sum\{worker="0"\}/ { sum = $2 }
	END {
		if (lastline !~ /le="\+Inf"\} / || last != n) { print "last bucket: " lastline; bad = 1 }
		if (!(sum > 0 && sum < 1)) { print "sum " sum; bad = 1 }
		exit bad
	}' "$prom" >"$SF_TMP/hist.out" || br_fail "histogram: $(cat "$SF_TMP/hist.out")" bridge
grep -Eq '^ib2roce_build_info\{version="[^"]+",describe="[^"]+"\} 1$' "$prom" || br_fail "build_info" bridge
grep -Eq '^ib2roce_start_time_seconds [0-9]+$' "$prom" || br_fail "start_time" bridge
# The side counters are flushed by the worker apart from its latency histogram: wait.
wait_prom '^ib2roce_pgm_not_pgm_total\{side="IB",device="sim_ib0"\} '"$n"'$'
grep -q '^ib2roce_pgm_malformed_total{side="IB",device="sim_ib0"} 0$' "$prom" ||
	br_fail "non-PGM traffic counted as malformed" bridge
grep -q '^ib2roce_pgm_stream_gaps ' "$prom" || br_fail "no stream gaps" bridge

# The same metrics over HTTP (--metrics-port): GET /metrics on 127.0.0.1, valid; other
# paths 404.
python3 - "$mport" >"$SF_TMP/http.out" 2>&1 <<'PY' || br_fail "GET /metrics: $(cat "$SF_TMP/http.out")" bridge
import sys, urllib.request, urllib.error
base = "http://127.0.0.1:%s" % sys.argv[1]
r = urllib.request.urlopen(base + "/metrics", timeout=10)
assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
sys.stdout.buffer.write(r.read())
try:
    urllib.request.urlopen(base + "/", timeout=10)
    raise SystemExit("/ answered 200")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
PY
grep -q '^ib2roce_up 1$' "$SF_TMP/http.out" || br_fail "GET /metrics: no ib2roce_up 1" bridge
promtool check metrics <"$SF_TMP/http.out" >"$SF_TMP/promtool.out" 2>&1 ||
	br_fail "promtool check metrics (HTTP): $(cat "$SF_TMP/promtool.out")" bridge

# The shipped rules and dashboard; every ib2roce metric they name is in the file.
promtool check rules "$src/monitoring/ib2roce.rules.yml" >"$SF_TMP/rules.out" 2>&1 ||
	br_fail "promtool check rules: $(cat "$SF_TMP/rules.out")" bridge
jq -e '.panels | length > 0' "$src/monitoring/ib2roce.dashboard.json" >/dev/null ||
	br_fail "the dashboard is not JSON with panels" bridge
for m in $( (jq -r '.. | .expr? // empty' "$src/monitoring/ib2roce.dashboard.json"
	grep 'expr' -A3 "$src/monitoring/ib2roce.rules.yml") |
	grep -o 'ib2roce_[a-z_]*' | sed 's/_bucket$//' | sort -u); do
	grep -q "^# TYPE $m " "$prom" || br_fail "monitoring/ names $m, not in the metrics file" bridge
done

# The group totals, and the group's own series; metrics_groups off (at run time) leaves
# those out and keeps the totals, the file still valid; on again, they are back.
grep -q '^ib2roce_groups 1$' "$prom" || br_fail "no ib2roce_groups 1" bridge
for s in IB RoCE; do
	grep -q "^ib2roce_groups_joined{side=\"$s\"} 1\$" "$prom" ||
		br_fail "no ib2roce_groups_joined 1 for $s" bridge
done
grep -q "^ib2roce_group_forwarded_packets_total{group=\"$g\",direction=\"ib_to_roce\"} $n\$" \
	"$prom" || br_fail "no forwarded packets of group $g" bridge
con_ok bridge disable metrics_groups >/dev/null
# no_group_series: the metrics file has no series of a group.
no_group_series() {
	! grep -q '^ib2roce_group_' "$prom"
}
t_wait_until 10 no_group_series ||
	br_fail "metrics_groups off: per-group series still written" bridge
grep -q '^ib2roce_groups_joined{side="RoCE"} 1$' "$prom" ||
	br_fail "metrics_groups off: no ib2roce_groups_joined" bridge
promtool check metrics <"$prom" >"$SF_TMP/promtool.out" 2>&1 ||
	br_fail "promtool check metrics (metrics_groups off): $(cat "$SF_TMP/promtool.out")" bridge
con_ok bridge enable metrics_groups >/dev/null
wait_prom '^ib2roce_group_joined\{group="'"$g"'",side="IB"\} 1$'

# A stalled worker: logged (this bridge runs with --debug, no watchdog), health fails.
con_ok bridge enable stall=1 >/dev/null
sf_wait_line "$SF_TMP/bridge.err" 'worker 0 on CPU [-0-9]*: no progress for' "$(br_pid bridge)" 15
out=$(con_must_exit bridge 1 health)
con_expect_in "$out" "^health FAILED workers: 1 stalled" "health with a stalled worker"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || br_fail "health: one line per failed condition: $out" bridge
wait_prom '^ib2roce_healthy 0$'
con_ok bridge disable stall >/dev/null
sf_wait_line "$SF_TMP/bridge.err" 'every worker makes progress again' "$(br_pid bridge)" 10
con_ok bridge health >/dev/null

# A clean stop: the file stays, says up 0, and is still valid.
br_stop bridge
grep -q '^ib2roce_up 0$' "$prom" || br_fail "no ib2roce_up 0 after a clean stop" bridge
grep -q '^ib2roce_healthy 0$' "$prom" || br_fail "healthy after a clean stop" bridge
promtool check metrics <"$prom" >"$SF_TMP/promtool.out" 2>&1 ||
	br_fail "promtool check metrics (final file): $(cat "$SF_TMP/promtool.out")" bridge
sf_log "PASS"
