#!/bin/bash
# The counters a runbook needs are Prometheus counters (docs/metrics.md, "Metrics"):
# ib2roce_ctl_stalls_total, ib2roce_log_dropped_total, ib2roce_capture_dropped_total,
# ib2roce_console_tty_dropped_total, ib2roce_reloads_total{outcome}, ib2roce_pgm_gaps_total,
# ib2roce_pgm_missed_sqns_total and ib2roce_role_transitions_total{partition} exist from
# the start (TYPE counter, value 0), and increase: a control-thread stall (ctlstall), a
# reload that applies, one that is refused (an unknown option: nothing changed), a role
# change, a PGM stream with sequence gaps (mcsender --skip-every: 29 gaps of one
# sequence number each), a packet capture whose ring (2 entries) fills. stats --json has
# the same counts: reloads{ok,refused,failed}, pgm_gaps_total, pgm_missed_sqns_total,
# capture.dropped. The file passes `promtool check metrics` (when installed). (The log
# drop counter rising: console-logblock.)
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-counters
g=239.1.2.13
prom=$SF_TMP/ib2roce.prom
conf=$SF_TMP/bridge.conf
cdir=$SF_TMP/cap
mkdir -m 0750 "$cdir"
printf 'device sim_ib0\nroce sim_roce0\nmulticast %s\n' "$g" >"$conf"

br_bridge bridge 1 --workers 1 -c "$conf" --metrics-file "$prom" -e statint=1 \
	--capture-dir "$cdir" --capture-ring 2
con_wait_json bridge '.ready | tostring' true

# wait_prom LINE: the metrics file holds LINE within 10 s.
wait_prom() {
	t_wait_until 10 grep -sqx -- "$1" "$prom" || br_fail "metrics file without '$1': $(grep -E "${1%% *}" "$prom")" bridge
}
wait_prom 'ib2roce_ready 1'
for m in ib2roce_ctl_stalls_total ib2roce_log_dropped_total ib2roce_capture_dropped_total \
	ib2roce_console_tty_dropped_total ib2roce_reloads_total ib2roce_pgm_gaps_total \
	ib2roce_pgm_missed_sqns_total ib2roce_role_transitions_total; do
	grep -q "^# TYPE $m counter$" "$prom" || br_fail "no counter $m" bridge
done
for l in 'ib2roce_ctl_stalls_total 0' 'ib2roce_log_dropped_total 0' \
	'ib2roce_capture_dropped_total 0' 'ib2roce_pgm_gaps_total 0' \
	'ib2roce_pgm_missed_sqns_total 0' 'ib2roce_reloads_total{outcome="ok"} 0' \
	'ib2roce_reloads_total{outcome="refused"} 0' 'ib2roce_reloads_total{outcome="failed"} 0' \
	'ib2roce_role_transitions_total{partition="default"} 0'; do
	wait_prom "$l"
done
if command -v promtool >/dev/null; then
	promtool check metrics <"$prom" >"$SF_TMP/promtool.out" 2>&1 ||
		br_fail "promtool check metrics: $(cat "$SF_TMP/promtool.out")" bridge
fi

for k in reloads.ok reloads.refused reloads.failed pgm_gaps_total pgm_missed_sqns_total \
	capture.dropped; do
	[ "$(con_json bridge ".$k")" = 0 ] || br_fail "stats --json .$k is not 0 at the start" bridge
done

# A control-thread stall.
con_ok bridge enable ctlstall=1200 >/dev/null
sf_wait_line "$SF_TMP/bridge.err" 'control thread was stalled for' "$(br_pid bridge)" 15
wait_prom 'ib2roce_ctl_stalls_total 1'
grep -qx 'ib2roce_ctl_stall_max_seconds 1\.[2-9][0-9]*' "$prom" ||
	br_fail "ib2roce_ctl_stall_max_seconds: $(grep stall_max "$prom")" bridge

# Reloads: one applied, one refused (nothing changed).
con_ok bridge reload >/dev/null
wait_prom 'ib2roce_reloads_total{outcome="ok"} 1'
printf 'frobnicate yes\n' >>"$conf"
con_must_exit bridge 1 reload >/dev/null
wait_prom 'ib2roce_reloads_total{outcome="refused"} 1'
wait_prom 'ib2roce_reloads_total{outcome="ok"} 1'
wait_prom 'ib2roce_reloads_total{outcome="failed"} 0'
[ "$(con_json bridge '.reloads | "\(.ok) \(.refused) \(.failed)"')" = '1 1 0' ] ||
	br_fail "stats --json reloads: $(con_json bridge .reloads)" bridge

# A role change of the partition.
con_ok bridge role default standby >/dev/null
wait_prom 'ib2roce_role_transitions_total{partition="default"} 1'
con_ok bridge role default active >/dev/null
wait_prom 'ib2roce_role_transitions_total{partition="default"} 2'

# A PGM stream with gaps, captured into a ring of 2: sequence numbers 0..2999, every
# 100th (99, 199, ..., 2899; never the last) not sent.
con_ok bridge capture start gaps.pcapng >/dev/null
br_start pgmsend 60 "$MCSENDER" -d sim_ib1 --pgm -n 3000 --rate 5000 --skip-every 100 \
	--stream-id 4242 "$g"
sf_wait_exit "$BR_PID"
[ "$SF_RC" = 0 ] || br_fail "mcsender exited with status $SF_RC" pgmsend
grep -q '^mcsender: sent=2971 .* errors=0 ' "$SF_TMP/pgmsend.out" ||
	br_fail "mcsender did not send 2971 packets without errors" pgmsend
wait_prom 'ib2roce_pgm_gaps_total 29'
wait_prom 'ib2roce_pgm_missed_sqns_total 29'
[ "$(con_json bridge '"\(.pgm_gaps_total) \(.pgm_missed_sqns_total)"')" = '29 29' ] ||
	br_fail "stats --json pgm totals: $(con_json bridge '[.pgm_gaps_total, .pgm_missed_sqns_total]')" bridge
out=$(con_ok bridge capture stop)
d=$(printf '%s\n' "$out" | sed -n 's/.*stopped: [0-9]* packets written, \([0-9]*\) captures dropped.*/\1/p')
[ -n "$d" ] && [ "$d" -gt 0 ] || br_fail "no capture dropped with a ring of 2: '$out'" bridge
[ "$(con_json bridge .capture.dropped)" -ge "$d" ] || br_fail "stats --json capture.dropped" bridge
# capture_dropped_at_least N: the metrics file's ib2roce_capture_dropped_total is N or more.
capture_dropped_at_least() {
	[ "$(sed -n 's/^ib2roce_capture_dropped_total //p' "$prom")" -ge "$1" ] 2>/dev/null
}
t_wait_until 10 capture_dropped_at_least "$d" ||
	br_fail "ib2roce_capture_dropped_total below $d: $(grep capture_dropped "$prom")" bridge
if command -v promtool >/dev/null; then
	promtool check metrics <"$prom" >"$SF_TMP/promtool.out" 2>&1 ||
		br_fail "promtool check metrics: $(cat "$SF_TMP/promtool.out")" bridge
fi

br_stop bridge
sf_log "PASS"
