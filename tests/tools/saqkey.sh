#!/bin/bash
# mcsender and mclisten on an IB group with its own Q_Key, through the bridge: the bridge
# joins 239.1.2.21#ibqkey=0x11111111 through the SA (control/sajoin.c), so the group's
# record holds 0x11111111 and the SA refuses rdma_cm's join (which always asks for
# 0x01234567). The tools then join through the SA themselves (lib/samcm.h) with the
# group's Q_Key and say so; every packet crosses both ways, exactly once, on the group's
# Q_Key (no qkey_viol at any port). A tool with another own Q_Key is refused by the SA:
# it exits 1 with the SA's reason, having sent nothing.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-saqkey
n=300
grp=239.1.2.21
qk=0x11111111
said="$grp#ibqkey=$qk: joined through the SA with Q_Key 0x11111111 (rdma_cm's join, with 0x01234567, was refused)"

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$grp#ibqkey=$qk"
grep -q "IB SA join of .* (failed|refused)" "$SF_TMP/bridge.err" &&
	br_fail "the bridge's SA join failed" bridge
viol0=$(($(sf_counter sim_ib0 qkey_viol) + $(sf_counter sim_ib2 qkey_viol)))

# RoCE -> IB: the IB listener joins through the SA.
tools_listen on_ib -d sim_ib2 -m "$grp#ibqkey=$qk" -D 50
grep -qF "$said" "$SF_TMP/on_ib.err" || br_fail "mclisten: no SA join said" on_ib
tools_send roce_tx -r sim_roce1 -m "$grp" -n "$n" --rate 20000 --stream-id 700
con_wait_json bridge '.sides[1].fwd_pkts' "$n"

# IB -> RoCE: the IB sender joins through the SA (send-only full member); on_ib, on
# the same IB group, receives its packets too.
tools_listen on_roce -r sim_roce2 -m "$grp" -D 50
tools_send ib_tx -d sim_ib1 -m "$grp#ibqkey=$qk" -n "$n" --rate 20000 --stream-id 800
grep -qF "$said" "$SF_TMP/ib_tx.err" || br_fail "mcsender: no SA join said" ib_tx
con_wait_json bridge '.sides[0].fwd_pkts' "$n"
tools_stop on_ib
tools_stop on_roce
# on_ib: the RoCE sender's stream through the bridge, and the IB sender's directly
# (both on the IB fabric, one group).
tools_expect on_ib received=$((2 * n)) unique=$((2 * n)) lost=0 dup=0 streams=2
tools_expect on_roce received="$n" unique="$n" lost=0 dup=0 streams=1
viol=$(($(sf_counter sim_ib0 qkey_viol) + $(sf_counter sim_ib2 qkey_viol) - viol0))
[ "$viol" = 0 ] || br_fail "IB ports counted $viol Q_Key violations" bridge

# Another own Q_Key: the SA refuses the join (the group exists with 0x11111111).
set +e
timeout -k 5 30 "$MCSENDER" -d sim_ib1 -m "$grp#ibqkey=0x22222222" -n 10 >"$SF_TMP/bad.out" \
	2>"$SF_TMP/bad.err"
rc=$?
set -e
[ "$rc" = 1 ] || br_fail "mcsender with Q_Key 0x22222222: exit $rc, expected 1" bad
grep -q "join $grp#ibqkey=0x22222222 through the SA with Q_Key 0x22222222 refused: request invalid" \
	"$SF_TMP/bad.err" || br_fail "mcsender with Q_Key 0x22222222: no refusal said" bad
grep -q '^mcsender: sent=' "$SF_TMP/bad.out" && br_fail "mcsender sent after a refused join" bad
br_stop bridge
br_expect bridge IB rx_pkts "$n"
br_expect bridge RoCE rx_pkts "$n"
sf_log "PASS"
