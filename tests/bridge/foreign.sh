#!/bin/bash
# The interface-subnet rule with real network interfaces behind the simulated devices
# (simfab netns): the bridge finds eth0 holding its RoCE address 198.19.0.1/24, so a
# RoCE source outside that subnet (a routed feed, 198.20.0.9 on the same segment) is
# dropped as foreign_source, a source inside it is forwarded, and with the `foreign`
# feature both are. The whole test runs inside the namespace: the fabric's event sockets
# are abstract AF_UNIX sockets, which belong to a network namespace.
#
# Needs root and network namespaces (skipped otherwise, exit 77).
set -eu

# The default topology, plus a RoCE port on another subnet of the same segment.
topology() {
	t_topology_default
	echo 'device sim_roce9  segment eth0  mac 02:00:00:00:01:09  ipv4 198.20.0.9/24'
}

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
t_netns_reexec foreign "$0" topology

# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-foreign
export SIMFABRIC_TOPOLOGY=$T_NETNS_TOPO
"$SIMFAB" reset >/dev/null
g=239.1.2.7
n=200

# The interfaces the kernel shows agree with the simulated GID table.
ip -br addr show dev eth0 | grep -q ' 198\.19\.0\.1/24' ||
	sf_fail "$T_NETNS: eth0 does not hold 198.19.0.1/24"
[ "$(cat /sys/class/net/eth0/ifindex)" = 104 ] ||
	sf_fail "eth0 ifindex $(cat /sys/class/net/eth0/ifindex), the GID table says 104"

for mode in default foreign; do
	b=bridge_$mode
	if [ "$mode" = foreign ]; then
		set -- -e foreign
		expect=$((2 * n))
	else
		set --
		expect=$n
	fi
	br_bridge "$b" 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" "$@"
	grep -q 'source subnet not checked' "$SF_TMP/$b.err" &&
		br_fail "$mode: the bridge did not find eth0 holding its address" "$b"
	br_listen "rx_$mode" "$IB_NET.2" -g "$g" -n "$expect" --timeout 20
	br_send "local_$mode" "$ROCE_NET.3" -g "$g" -n "$n" --rate 20000
	br_send "routed_$mode" 198.20.0.9 -g "$g" -n "$n" --rate 20000
	if [ "$mode" = default ]; then
		br_expect_listener "rx_$mode" "$n" 1
	else
		br_expect_listener "rx_$mode" $((2 * n)) 2
	fi
	br_stop "$b"
	if [ "$mode" = default ]; then
		br_expect "$b" RoCE drop_foreign_source "$n"
		br_expect "$b" RoCE fwd_pkts "$n"
	else
		br_expect "$b" RoCE drop_foreign_source 0
		br_expect "$b" RoCE fwd_pkts $((2 * n))
	fi
	br_expect "$b" RoCE rx_pkts $((2 * n))
	br_conservation "$b" sim_ib0 sim_roce0
	# The next bridge starts on fresh port counters.
	"$SIMFAB" reset >/dev/null
done
sf_log "PASS"
