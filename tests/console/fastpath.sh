#!/bin/bash
# The data path's flow fast path (engine/fwd.c rx_fast_run, docs/architecture.md) gives
# every packet the full path's verdict when runtime features change between the bursts
# of one stream: phases of one group's traffic IB -> RoCE, a feature switched on the
# console between phases, exact counts per phase (drop reasons, PGM inspection, per
# sender, per group), and the listener gets exactly what was forwarded.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-fastpath
g=239.1.2.9

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g"
# Forwarded: A 500 + B 300 + D 200 + F 100 (C and E drop everything).
br_listen listener "$ROCE_NET.2" -g "$g" -n 1100 --timeout 60

# phase NAME COUNT FILTER VALUE: send COUNT packets from a new sender (a new QP), then
# wait until the JSON counter FILTER reaches VALUE.
phase() {
	br_send "$1" "$IB_NET.2" -g "$g" -n "$2" --rate 20000
	con_wait_json bridge "$3" "$4"
}

# A: nothing switched: every packet forwarded, every payload inspected (mcpkt's payload
# is not PGM: pgm_not_pgm, not pgm_malformed, and forwarded).
phase a 500 '.sides[0].fwd_pkts' 500
[ "$(con_json bridge '.sides[0].pgm_not_pgm')" = 500 ] || br_fail "A: pgm_not_pgm" bridge
[ "$(con_json bridge '.sides[0].pgm_malformed')" = 0 ] || br_fail "A: non-PGM counted as malformed" bridge

# B: drop=4 drops every 4th packet after inspection (injected).
con_ok bridge enable drop=4 >/dev/null
phase b 400 '.sides[0].rx_pkts' 900
con_wait_json bridge '.sides[0].drop_reasons.injected' 100
con_wait_json bridge '.sides[0].fwd_pkts' 800
con_ok bridge disable drop >/dev/null

# C: pgm_strict drops what is not PGM: all of it.
con_ok bridge enable pgm_strict >/dev/null
phase c 300 '.sides[0].drop_reasons.pgm' 300
con_ok bridge disable pgm_strict >/dev/null
[ "$(con_json bridge '.sides[0].pgm_not_pgm')" = 1200 ] || br_fail "C: pgm_not_pgm" bridge

# D: PGM inspection off: forwarded, not inspected.
con_ok bridge disable pgm >/dev/null
phase d 200 '.sides[0].fwd_pkts' 1000
[ "$(con_json bridge '.sides[0].pgm_not_pgm')" = 1200 ] || br_fail "D: inspected with pgm off" bridge
con_ok bridge enable pgm >/dev/null

# E: bridging off: counted before the sender and PGM steps.
con_ok bridge disable bridging >/dev/null
phase e 100 '.sides[0].drop_reasons.bridging_off' 100
con_ok bridge enable bridging >/dev/null

# F: all back on.
phase f 100 '.sides[0].fwd_pkts' 1100

# Per sender (the fast path counts senders packet by packet): every phase's QP sent its
# packets, bridging_off ones excepted (they never reach the sender step).
out=$(con_ok bridge senders)
counts=$(printf '%s\n' "$out" | awk '$1 == "IB" { print $5 }' | sort -n | tr '\n' ' ')
[ "$counts" = "100 200 300 400 500 " ] ||
	br_fail "senders: IB packet counts '$counts', expected '100 200 300 400 500 ': $out" bridge

br_expect_listener listener 1100
br_stop bridge
br_expect bridge IB rx_pkts 1600
br_expect bridge IB fwd_pkts 1100
br_expect bridge IB drop_injected 100
br_expect bridge IB drop_pgm 300
br_expect bridge IB drop_bridging_off 100
br_expect bridge IB pgm_not_pgm 1300
br_expect bridge IB pgm_malformed 0
br_expect bridge RoCE tx_pkts 1100
br_expect_group bridge "$g" ib_to_roce 1100
BR_PGM_PARTIAL=1 br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
