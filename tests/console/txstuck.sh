#!/bin/bash
# A send queue that stops completing (docs/operations.md "A stuck send queue"): the bridge
# forwards IB -> RoCE, then its RoCE channel's send queue hangs (`simfab qp sim_roce0 QPN
# sq-hang on`): sends accepted, never completed. The queue and its backlog fill, every
# later packet is drop_tx_full, and after 1 s without a send completion the worker counts
# tx_stuck; the control thread logs it once, `bcom health` fails with a "health FAILED
# tx_stuck" line naming the channel (exit 1), `bcom channels` says TX_STUCK, stats --json
# and the metrics file show it, and the HA notify reader's --health-file says 1 (fail
# over). Released (`sq-hang off`): the held sends complete, the condition clears (logged
# once), health is ok again and the bridge forwards again. On the old bridge there is no
# tx_stuck anywhere: health stays ok while the whole stream is dropped.
# Argument: the number of workers (default 1; 0: the event-driven data path).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

workers=${1:-1}
sf_init "console-txstuck-w$workers"
g=239.1.2.13
prom=$SF_TMP/ib2roce.prom
HA_NOTIFY=$(cd "$(dirname "$0")/../.." && pwd)/ha/ib2roce-notify.sh

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers "$workers" -e sqdepth=64 -e backlog=64 \
	--metrics-file "$prom" -e statint=1 -m "$g"
con_wait_json bridge '.healthy | tostring' true
con_expect_in "$(con_ok bridge health)" "^health ok$" "health at start"

# wait_prom LINE: the metrics file holds LINE within 10 s.
wait_prom() { con_wait_prom "$prom" bridge "$1"; }
roce='side="RoCE",device="sim_roce0"'
wait_prom 'ib2roce_health_condition{condition="tx_stuck",level="failed"} 0'
wait_prom "ib2roce_tx_stuck_channels{$roce} 0"

# The notify reader's health file, fed by `bcom health` every 0.1 s (as under keepalived).
con_health_reader bridge

# Traffic IB -> RoCE, a listener on RoCE; forwarded before the fault.
br_listen rx "$ROCE_NET.4" -g "$g"
br_send_start tx "$IB_NET.2" -g "$g" -n 60000 --rate 1000
t_wait_until 20 con_json_is bridge '.sides[1].tx_pkts > 100 | tostring' true ||
	br_fail "the bridge does not forward IB -> RoCE before the fault" bridge

qpn=$(con_json bridge '.channels[] | select(.side == "RoCE") | .qpn')
qpx=$(printf '%#x' "$qpn")
"$SIMFAB" qp sim_roce0 "$qpn" sq-hang on

# Stuck: counted, health FAILED naming the channel, the channel table, JSON, metrics.
con_wait_json bridge '.sides[1].tx_stuck_channels' 1 20
out=$(con_must_exit bridge 1 health)
con_expect_in "$out" "^health FAILED tx_stuck: RoCE sim_roce0 channel 0 \\(QP $qpx\\): send queue full, no send completion for [0-9]+\\.[0-9] s$" \
	"health with a stuck send queue"
[ "$(printf '%s\n' "$out" | grep -c '^health FAILED')" = 1 ] ||
	br_fail "health: tx_stuck the only FAILED condition: $out" bridge
con_expect_in "$(con_must_exit bridge 1 status)" "^health FAILED tx_stuck" "status"
con_expect_in "$(con_ok bridge channels)" "^RoCE +0 +$qpx .* TX_STUCK " "bcom channels"
[ "$(con_json bridge '.sides[1].tx_stuck')" = 1 ] || br_fail "json sides[1].tx_stuck not 1" bridge
[ "$(con_json bridge '.sides[0].tx_stuck')" = 0 ] || br_fail "json sides[0].tx_stuck not 0" bridge
con_json bridge '.channels[] | select(.side == "RoCE") | .tx_stuck_ms >= 1000' >/dev/null
[ "$(con_json bridge '.health_level')" = failed ] || br_fail "json health_level not failed" bridge
con_json bridge '.health.tx_stuck | test("^tx_stuck: RoCE sim_roce0 channel 0")' >/dev/null
wait_prom "ib2roce_tx_stuck_channels{$roce} 1"
wait_prom "ib2roce_tx_stuck_total{$roce} 1"
wait_prom 'ib2roce_health_condition{condition="tx_stuck",level="failed"} 1'
wait_prom 'ib2roce_healthy 0'
t_wait_until 10 grep -qx 1 "$SF_TMP/ka.health" || br_fail "health file not 1 with a stuck send queue" bridge
stuck_tx=$(con_json bridge '.sides[1].tx_pkts')
full=$(con_json bridge '.sides[1].drop_reasons.tx_full')
t_wait_until 10 con_json_is bridge ".sides[1].drop_reasons.tx_full > $full | tostring" true ||
	br_fail "the stuck queue's packets are not counted as tx_full" bridge
# Logged once for the episode, however long it lasts.
sleep 1
n=$(grep -c "RoCE sim_roce0 channel 0 (QP $qpx): send queue stuck: [0-9]* sends outstanding, no send completion for [0-9]* ms" \
	"$SF_TMP/bridge.err") || n=0
[ "$n" = 1 ] || br_fail "$n log lines for the stuck send queue, expected 1" bridge
t_wait_until 10 grep -q 'health: tx_stuck: RoCE sim_roce0 channel 0' "$SF_TMP/bridge.err" ||
	br_fail "no health log line for tx_stuck" bridge

# Released: the held sends complete, it clears (logged once), forwarding goes on.
"$SIMFAB" qp sim_roce0 "$qpn" sq-hang off
con_wait_json bridge '.sides[1].tx_stuck_channels' 0 20
con_wait_json bridge '.healthy | tostring' true 10
# (exit 0: no FAILED line; a DEGRADED ctl_stall of a starved 2-CPU machine may remain)
out=$(con_ok bridge health)
case $out in *tx_stuck*) br_fail "health after the release: $out" bridge ;; esac
t_wait_until 10 con_json_is bridge ".sides[1].tx_pkts > $stuck_tx + 100 | tostring" true ||
	br_fail "no forwarding after the release (tx_pkts $stuck_tx)" bridge
wait_prom "ib2roce_tx_stuck_channels{$roce} 0"
wait_prom "ib2roce_tx_stuck_total{$roce} 1"
wait_prom 'ib2roce_health_condition{condition="tx_stuck",level="failed"} 0'
t_wait_until 10 grep -qx 0 "$SF_TMP/ka.health" || br_fail "health file not 0 after the release" bridge
again="RoCE sim_roce0 channel 0 (QP $qpx): send queue completes again"
t_wait_until 10 grep -q "$again" "$SF_TMP/bridge.err" || true
n=$(grep -c "$again" "$SF_TMP/bridge.err") || n=0
[ "$n" = 1 ] || br_fail "$n log lines for the cleared send queue, expected 1" bridge
t_wait_until 10 grep -q 'health: tx_stuck ok again' "$SF_TMP/bridge.err" ||
	br_fail "no health recovery log line" bridge

kill "$READER"
wait "$READER" 2>/dev/null || true
READER=""
exec 4>&-
kill -TERM "$(sf_child "$(br_pid tx)")" 2>/dev/null || true
br_listen_stop rx
[ "$BR_RECEIVED" -gt 0 ] || br_fail "the listener received nothing" rx
br_stop bridge
[ "$(br_field bridge RoCE tx_stuck)" = 1 ] || br_fail "final counters: RoCE tx_stuck not 1" bridge
[ "$(br_field bridge IB tx_stuck)" = 0 ] || br_fail "final counters: IB tx_stuck not 0" bridge
sf_log "PASS"
