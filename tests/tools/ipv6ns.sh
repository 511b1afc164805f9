#!/bin/bash
# RoCEv2 over IPv6 with real network interfaces behind the simulated devices (simfab
# netns): the bridge's MLD memberships on its RoCE port's netdev (eth0, ifindex 104, as
# the GID table says) show in /proc/net/igmp6 while it runs and are gone after it stops;
# a link-local group (ff02::1:3) is sent from the port's link-local address (GID 1), a
# global one (ff0e::1234) from the global address (GID 5); the interface's IPv6 prefix
# (fd00:0:0:1::/64, from getifaddrs) drops a source outside it as foreign_source. The
# whole test runs inside the namespace (the fabric's event sockets belong to one).
#
# Needs root and network namespaces (skipped otherwise, exit 77).
set -eu

# The default topology, plus a RoCE port with an IPv6 address of another prefix.
topology() {
	t_topology_default
	echo 'device sim_roce9  segment eth0  mac 02:00:00:00:01:09  ipv4 198.19.0.9/24  ipv6 fd00:0:0:2::9/64'
}

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
t_netns_reexec ipv6ns "$0" topology

# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-ipv6ns
export SIMFABRIC_TOPOLOGY=$T_NETNS_TOPO
"$SIMFAB" reset >/dev/null
n=200
g=ff0e::1234
gl=ff02::1:3

[ "$(cat /sys/class/net/eth0/ifindex)" = 104 ] ||
	sf_fail "eth0 ifindex $(cat /sys/class/net/eth0/ifindex), the GID table says 104"

# igmp6 NAME DEV GROUP: whether /proc/net/igmp6 lists GROUP (32 hex digits) on DEV.
igmp6() {
	awk -v d="$1" -v a="$2" '$2 == d && $3 == a { f = 1 } END { exit !f }' /proc/net/igmp6
}
ghex=ff0e0000000000000000000000001234
glhex=ff020000000000000000000000010003

br_bridge bridge 2 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" -m "$gl"
grep -q "RoCE joined $g (IPv6, GID index 5, MLD)" "$SF_TMP/bridge.err" ||
	br_fail "bridge: $g not joined with GID 5 and MLD" bridge
grep -q "RoCE joined $gl (IPv6, GID index 1, MLD)" "$SF_TMP/bridge.err" ||
	br_fail "bridge: $gl (link-local scope) not joined with the link-local GID 1 and MLD" bridge
grep -q 'MLD membership' "$SF_TMP/bridge.err" && br_fail "bridge: an MLD membership was refused" bridge
igmp6 eth0 "$ghex" || br_fail "igmp6: eth0 is not a member of $g: $(cat /proc/net/igmp6)" bridge
igmp6 eth0 "$glhex" || br_fail "igmp6: eth0 is not a member of $gl" bridge

# RoCE -> IB: a source in the interface's prefix is forwarded, one outside it
# (fd00:0:0:2::9 on the same Ethernet) dropped as foreign_source.
tools_listen on_ib -d sim_ib2 -m "$g" -D 60
tools_send local_tx -r sim_roce1 -m "$g" -n "$n" --rate 20000
tools_send routed_tx -r sim_roce9 -m "$g" -n "$n" --rate 20000
con_wait_json bridge '.sides[1].drop_reasons.foreign_source' "$n"
con_wait_json bridge '.sides[1].fwd_pkts' "$n"
tools_stop on_ib
tools_expect on_ib received="$n" lost=0 dup=0 streams=1

# IB -> RoCE on the link-local group: sent from the port's link-local address.
tools_listen on_roce -r sim_roce2 -m "$gl" -D 60
igmp6 eth2 "$glhex" || br_fail "igmp6: mclisten's eth2 is not a member of $gl" on_roce
tools_send ib_tx -d sim_ib1 -m "$gl" -n "$n" --rate 20000
con_wait_json bridge '.sides[0].fwd_pkts' "$n"
tools_stop on_roce
tools_expect on_roce received="$n" lost=0 dup=0 streams=1
grep -Eq "^id:[0-9]+ +$gl +fe80::ff:fe00:101/0x[0-9a-f]+ +$n " "$SF_TMP/on_roce.out" ||
	br_fail "on_roce: no stream of $n packets from fe80::ff:fe00:101 on $gl" on_roce

br_stop bridge
! igmp6 eth0 "$ghex" || br_fail "igmp6: eth0 still a member of $g after the bridge stopped" bridge
! igmp6 eth0 "$glhex" || br_fail "igmp6: eth0 still a member of $gl after the bridge stopped" bridge
br_expect bridge RoCE rx_pkts $((2 * n))
br_expect bridge RoCE drop_foreign_source "$n"
br_expect bridge RoCE fwd_pkts "$n"
br_expect bridge IB fwd_pkts "$n"
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
