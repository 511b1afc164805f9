#!/bin/bash
# Two partitions split over the two bridges by keepalived (tests/lib/ka.sh, the
# settings of ha/keepalived.conf.example): partition md (g1) prefers bridge a
# (priorities 250 / 240), partition orders (g2) prefers bridge b (240 / 250), so each
# keepalived is master of one partition. Each partition carries a stream (IB -> RoCE,
# counted once across both bridges with --any-source).
# - before: a active for md only, b for orders only;
# - kill -9 of a: b carries both; md's gap is printed and bounded (KA_KILL_MAX_LOST),
#   no duplicates; orders, on b throughout, loses nothing;
# no loop (b forwarded nothing RoCE -> IB), b's counters add up.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ka.sh
. "$(dirname "$0")/../lib/ka.sh"

ka_init ha-keepalived-split
g1=239.1.2.3
g2=239.1.2.4
m=10000
: "${KA_KILL_MAX_LOST:=1000}"

for n in a b; do
	if [ "$n" = a ]; then
		set -- -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4"
	else
		set -- -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1"
	fi
	br_bridge "$n" 2 "$@" -m "$g1" -m "$g2" --partition "md:$g1" --partition "orders:$g2" \
		--role md=standby --role orders=standby
done
ka_start 1 a md:61:250 orders:62:240
ka_start 2 b md:61:240 orders:62:250
ka_wait_role a md active
ka_wait_role a orders standby
ka_wait_role b md standby
ka_wait_role b orders active
ka_check_conf 1
ka_check_conf 2

br_listen q1 "$ROCE_NET.2" -g "$g1" --verify --imm --any-source --rq 16384 --timeout 120
br_listen q2 "$ROCE_NET.3" -g "$g2" --verify --imm --any-source --rq 16384 --timeout 120
br_send_start q1_send "$IB_NET.2" -g "$g1" -n "$m" --imm --rate "$KA_RATE"
br_send_start q2_send "$IB_NET.3" -g "$g2" -n "$m" --imm --rate "$KA_RATE"
sleep 1
kill -KILL "$(sf_child "$(br_pid a)")"
ka_wait_role b md active
ka_wait_role b orders active
ka_stream_end q1 "$m" "kill -9 of bridge a (active for md), md to bridge b"
[ "$KA_DUP" = 0 ] || br_fail "md: $KA_DUP duplicates" q1
[ "$KA_LOST" -lt "$KA_KILL_MAX_LOST" ] ||
	br_fail "md: lost $KA_LOST packets (bound $KA_KILL_MAX_LOST)" q1 ka1 ka2
ka_stream_end q2 "$m" "kill -9 of bridge a, orders stays on bridge b"
if [ "$KA_LOST" != 0 ] || [ "$KA_DUP" != 0 ]; then
	br_fail "orders (on b throughout): lost $KA_LOST, duplicates $KA_DUP" q2
fi
ka_stop
br_stop b
[ "$(br_field b RoCE fwd_pkts)" = 0 ] || br_fail "bridge b forwarded RoCE -> IB: a loop" b
br_conservation b sim_ib3 sim_roce3
sf_log "PASS"
