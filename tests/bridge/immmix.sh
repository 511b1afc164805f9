#!/bin/bash
# Packets with and without immediate data through the same send slots: the bridge's
# chained send WRs keep a template opcode (IBV_WR_SEND) and flags that only a send with
# immediate data or a signaled one changes, and the post restores (engine/fwd.c,
# wr_tmpl.dirty). A slot left as SEND_WITH_IMM would give a later plain packet an immediate
# value, one left plain would strip it: the listeners check, per packet, that the
# immediate data is there exactly when its sender set it (mcpkt --verify). First a run
# with immediate data then a plain one from the same sender (every slot reused), then
# two senders at once, one of each kind, both ways.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-immmix
group=239.1.2.4
n=300

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$group"

# IB -> RoCE, in turn: sim_ib1 sends n with immediate data, then n without.
br_listen a_roce2 "$ROCE_NET.3" -g "$group" -n $((2 * n)) --verify --timeout 30
br_send a_imm "$IB_NET.2" -g "$group" -n "$n" -s 64 --imm --rate 20000
br_send a_plain "$IB_NET.2" -g "$group" -n "$n" -s 64 --rate 20000
br_expect_listener a_roce2 $((2 * n))

# IB -> RoCE at once: sim_ib1 with immediate data, sim_ib2 without.
br_listen b_roce2 "$ROCE_NET.3" -g "$group" -n $((4 * n)) --verify --timeout 30
br_send_start b_imm "$IB_NET.2" -g "$group" -n $((2 * n)) -s 64 --imm --rate 40000
br_send_start b_plain "$IB_NET.3" -g "$group" -n $((2 * n)) -s 64 --rate 40000
br_send_end b_imm
br_send_end b_plain
br_expect_listener b_roce2 $((4 * n))

# RoCE -> IB, in turn (sim_roce3), then at once (sim_roce3 with, sim_roce1 without).
br_listen c_ib2 "$IB_NET.3" -g "$group" -n $((4 * n)) --verify --timeout 30
br_send c_plain "$ROCE_NET.4" -g "$group" -n "$n" -s 64 --rate 20000
br_send c_imm "$ROCE_NET.4" -g "$group" -n "$n" -s 64 --imm --rate 20000
br_send_start c_imm2 "$ROCE_NET.4" -g "$group" -n "$n" -s 64 --imm --rate 40000
br_send_start c_plain2 "$ROCE_NET.2" -g "$group" -n "$n" -s 64 --rate 40000
br_send_end c_imm2
br_send_end c_plain2
br_expect_listener c_ib2 $((4 * n))

br_stop bridge
br_expect bridge IB fwd_pkts $((6 * n))
br_expect bridge RoCE fwd_pkts $((4 * n))
br_expect bridge IB drops 0
br_expect bridge RoCE drops 0
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
