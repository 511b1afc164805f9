#!/bin/bash
# One-way groups: -i GROUP forwards IB -> RoCE only (the RoCE side joins send-only, so
# RoCE traffic to it never reaches the bridge), -o GROUP forwards RoCE -> IB only.
# Traffic on each group in both directions: the allowed direction arrives complete and
# byte-exact, the other direction arrives nowhere on the far fabric.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-oneway
gin=239.1.2.4
gout=239.1.2.5
n=100

br_bridge bridge 2 -d sim_ib0 -r sim_roce0 --workers 1 -i "$gin" -o "$gout"
grep -q "RoCE joined $gin (mlid 0) send-only" "$SF_TMP/bridge.err" ||
	br_fail "-i $gin: the RoCE side did not join send-only" bridge
grep -q "IB joined $gout (mlid 0x[0-9a-f]*) send-only" "$SF_TMP/bridge.err" ||
	br_fail "-o $gout: the IB side did not join send-only" bridge

# -i: IB -> RoCE arrives.
br_listen in_fwd "$ROCE_NET.2" -g "$gin" -n "$n" --verify --imm --timeout 20
br_send in_send_ib "$IB_NET.2" -g "$gin" -n "$n" --imm --rate 20000
br_expect_listener in_fwd "$n" 1
# -i: RoCE -> IB does not; the IB listener watches for 2 s after the send.
br_listen in_rev "$IB_NET.2" -g "$gin" -n 0 --timeout 2
br_send in_send_roce "$ROCE_NET.4" -g "$gin" -n "$n" --rate 20000
br_expect_listener in_rev 0

# -o: RoCE -> IB arrives.
br_listen out_fwd "$IB_NET.3" -g "$gout" -n "$n" --verify --imm --timeout 20
br_send out_send_roce "$ROCE_NET.4" -g "$gout" -n "$n" --imm --rate 20000
br_expect_listener out_fwd "$n" 1
# -o: IB -> RoCE does not.
br_listen out_rev "$ROCE_NET.3" -g "$gout" -n 0 --timeout 2
br_send out_send_ib "$IB_NET.2" -g "$gout" -n "$n" --rate 20000
br_expect_listener out_rev 0

br_stop bridge
br_expect_group bridge "$gin" ib_to_roce "$n"
br_expect_group bridge "$gin" roce_to_ib 0
br_expect_group bridge "$gout" roce_to_ib "$n"
br_expect_group bridge "$gout" ib_to_roce 0
# Traffic on the send-only side either never reached the bridge (no attach: the usual
# case) or was dropped as sendonly_side; it was never forwarded.
for s in IB RoCE; do
	rx=$(br_field bridge "$s" rx_pkts)
	so=$(br_field bridge "$s" drop_sendonly_side)
	[ "$rx" = $((n + so)) ] || br_fail "bridge: $s rx_pkts=$rx, expected $n + sendonly_side $so" bridge
	br_expect bridge "$s" fwd_pkts "$n"
done
br_expect bridge IB tx_pkts "$n"
br_expect bridge RoCE tx_pkts "$n"
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
