#!/bin/bash
# Unequal MTUs (the reference bridge required equal ones): the bridge's RoCE port has an
# MTU of 1024, the IB fabric 4096. IB packets larger than 1024 bytes cannot be sent on
# RoCE: each is dropped before the post and counted (too_big, on the IB side) and nothing
# else changes; smaller packets keep
# flowing both ways, in particular the RoCE side keeps receiving.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-mtu
group=239.1.2.3
big=50
n=100
m=300

# The default topology with sim_roce0 at MTU 1024.
"$SIMFAB" topology >"$SF_TMP/default.topo" 2>&1 || sf_fail "simfab topology failed" "$SF_TMP/default.topo"
sed 's/^\(device[[:space:]]\{1,\}sim_roce0[[:space:]].*mtu[[:space:]]\{1,\}\)4096/\11024/' \
	"$SF_TMP/default.topo" >"$SF_TMP/mtu.topo"
grep -Eq '^device[[:space:]]+sim_roce0[[:space:]].*mtu[[:space:]]+1024' "$SF_TMP/mtu.topo" ||
	sf_fail "could not set the MTU of sim_roce0" "$SF_TMP/default.topo"
"$SIMFAB" reset >/dev/null
export SIMFABRIC_TOPOLOGY=$SF_TMP/mtu.topo

# A small receive queue: a side that stopped refilling it shows within 64 packets.
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e rqdepth=64 -m "$group"

# IB -> RoCE: $big packets of 2000 bytes (dropped), then $n of 1000 bytes (forwarded).
br_listen to_roce "$ROCE_NET.2" -g "$group" -n "$n" --verify --imm --timeout 10
br_send big_ib "$IB_NET.2" -g "$group" -n "$big" -s 2000 --imm --rate 5000
br_send small_ib "$IB_NET.2" -g "$group" -n "$n" -s 1000 --imm --rate 5000
br_expect_listener to_roce "$n" 1

# RoCE -> IB afterwards: all of it.
br_listen to_ib "$IB_NET.3" -g "$group" -n "$m" --verify --imm --timeout 10
br_send small_roce "$ROCE_NET.3" -g "$group" -n "$m" -s 1000 --imm --rate 5000
br_expect_listener to_ib "$m" 1

br_stop bridge
br_expect bridge IB rx_pkts $((big + n))
br_expect bridge IB fwd_pkts "$n"
br_expect bridge IB drop_too_big "$big"
br_expect bridge RoCE tx_pkts "$n"
br_expect bridge RoCE drop_tx_error 0
br_expect bridge RoCE rx_pkts "$m"
br_expect bridge RoCE fwd_pkts "$m"
br_expect bridge IB tx_pkts "$m"
br_conservation bridge sim_ib0 sim_roce0
sf_expect_counter sim_roce0 out_of_buffer 0
sf_log "PASS"
