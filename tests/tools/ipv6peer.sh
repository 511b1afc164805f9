#!/bin/bash
# Two bridges on the same two fabrics bridging one IPv6 group (ff0e::1234, the same 128
# bits on both sides), each with --peer set to the other's IPv6 RoCE address (as
# tests/bridge/twobridges.sh does with IPv4): A on sim_ib0/sim_roce0 (fd00:0:0:1::1), B on
# sim_ib3/sim_roce3 (fd00:0:0:1::4). What one bridge forwarded is never forwarded back:
# - IB -> RoCE: both forward the IB sender's packets (the RoCE listener gets each twice);
#   each drops the other's RoCE copies as peer_bridge.
# - RoCE -> IB: both forward to IB with the hop-limit marker; each drops the other's IB
#   copies as loop.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-ipv6peer
g=ff0e::1234
n=200

br_bridge a 1 -d sim_ib0 -r sim_roce0 --workers 1 --peer fd00:0:0:1::4 -m "$g"
br_bridge b 1 -d sim_ib3 -r sim_roce3 --workers 0 --peer fd00:0:0:1::1 -m "$g"

# IB -> RoCE.
tools_listen p1_roce -r sim_roce2 -m "$g" -D 60
tools_send p1_tx -d sim_ib1 -m "$g" -n "$n" --rate 10000
for x in a b; do
	con_wait_json "$x" '.sides[0].fwd_pkts' "$n"
	con_wait_json "$x" '.sides[1].drop_reasons.peer_bridge' "$n"
done
tools_stop p1_roce
# One stream (mcsender's), every packet once per bridge: each bridge's peer_bridge drops
# above show that the other sent from its own IPv6 address.
tools_expect p1_roce received=$((2 * n)) unique="$n" dup="$n" lost=0 streams=1

# RoCE -> IB.
tools_listen p2_ib -d sim_ib2 -m "$g" -D 60
tools_send p2_tx -r sim_roce1 -m "$g" -n "$n" --rate 10000
for x in a b; do
	con_wait_json "$x" '.sides[1].fwd_pkts' "$n"
	con_wait_json "$x" '.sides[0].drop_reasons.loop' "$n"
done
tools_stop p2_ib
tools_expect p2_ib received=$((2 * n)) unique="$n" dup="$n" lost=0 streams=1

br_stop a
br_stop b
br_expect_peer_pair "$g" "$n" a b
br_conservation a sim_ib0 sim_roce0
br_conservation b sim_ib3 sim_roce3
sf_log "PASS"
