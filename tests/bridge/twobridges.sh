#!/bin/bash
# Two bridges on the same two fabrics, bridging the same group: A on sim_ib0/sim_roce0,
# B on sim_ib3/sim_roce3, each with --peer set to the other's RoCE address. What one
# bridge forwarded is never forwarded back by the other:
# - IB -> RoCE: both bridges forward the IB sender's packets to RoCE (the RoCE listener
#   gets them twice, once per bridge, as two distinct sources); each bridge drops the
#   other's RoCE packets as peer_bridge; the IB listener gets each packet exactly once.
# - RoCE -> IB: both forward to IB with the hop-limit marker; each drops the other's IB
#   packets as loop; the RoCE listener gets each packet exactly once.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-twobridges
group=239.1.2.3
n=200

br_bridge a 1 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" -m "$group"
br_bridge b 1 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" -m "$group"

# IB -> RoCE.
br_listen p1_ib "$IB_NET.3" -g "$group" -n "$n" --verify --imm --timeout 30
br_listen p1_roce "$ROCE_NET.2" -g "$group" -n $((2 * n)) --verify --imm --timeout 30
br_send p1_send "$IB_NET.2" -g "$group" -n "$n" --imm --rate 10000
br_expect_listener p1_ib "$n" 1
br_expect_listener p1_roce $((2 * n)) 2

# RoCE -> IB.
br_listen p2_roce "$ROCE_NET.3" -g "$group" -n "$n" --verify --imm --timeout 30
br_listen p2_ib "$IB_NET.3" -g "$group" -n $((2 * n)) --verify --imm --timeout 30
br_send p2_send "$ROCE_NET.2" -g "$group" -n "$n" --imm --rate 10000
br_expect_listener p2_roce "$n" 1
br_expect_listener p2_ib $((2 * n)) 2

br_stop a
br_stop b
br_expect_peer_pair "$group" "$n" a b
br_conservation a sim_ib0 sim_roce0
br_conservation b sim_ib3 sim_roce3
sf_log "PASS"
