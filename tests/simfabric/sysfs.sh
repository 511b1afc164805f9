#!/bin/bash
# The simulated sysfs (docs/simfabric.md): ibv_device.ibdev_path names a directory laid
# out like /sys/class/infiniband/<dev> of an mlx5 host, with the kernel's formats, modes
# 0444/0755, port state and counters kept live (they equal `simfab counters` once traffic
# stopped, while the processes still run), removed by `simfab reset`.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init sysfs
sf_need ibv_devinfo mckey
out=$SF_TMP
root=/dev/shm/simfabric.$SIMFABRIC.sys
ib=$root/class/infiniband

# expect_file FILE TEXT: the file holds exactly TEXT (one line).
expect_file() {
	local v

	[ -f "$1" ] || sf_fail "no file $1"
	v=$(cat "$1")
	[ "$v" = "$2" ] || sf_fail "$1 is '$v', expected '$2'"
}

# ibv_devinfo still works, and reads board_id through ibdev_path.
sf_tool 30 ibv_devinfo -d sim_ib0 >"$out/devinfo.txt" 2>&1 ||
	sf_fail "ibv_devinfo failed" "$out/devinfo.txt"
grep -Eq 'board_id:[[:space:]]+MT_0000000223$' "$out/devinfo.txt" ||
	sf_fail "ibv_devinfo shows no board_id" "$out/devinfo.txt"
devs=$(find "$ib" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')
[ "$devs" = "sim_ib0 sim_ib1 sim_ib2 sim_ib3 sim_roce0 sim_roce1 sim_roce2 sim_roce3 " ] ||
	sf_fail "$ib does not hold the eight devices: $devs"

d=$ib/sim_ib1
expect_file "$d/node_type" "1: CA"
expect_file "$d/node_guid" "0002:c903:00a0:b020"
expect_file "$d/sys_image_guid" "0002:c903:00a0:b020"
expect_file "$d/ports/1/state" "4: ACTIVE"
expect_file "$d/ports/1/phys_state" "5: LinkUp"
expect_file "$d/ports/1/link_layer" "InfiniBand"
expect_file "$d/ports/1/lid" "0x2"
expect_file "$d/ports/1/sm_lid" "0x1"
expect_file "$d/ports/1/rate" "200 Gb/sec (4X HDR)"
expect_file "$d/ports/1/gids/0" "fe80:0000:0000:0000:0002:c903:00a0:b020"
expect_file "$d/ports/1/gid_attrs/types/0" "IB/RoCE v1"
expect_file "$d/ports/1/pkeys/0" "0xffff"
n=$(find "$d/ports/1/gids" -type f | wc -l)
[ "$n" = 128 ] || sf_fail "sim_ib1 has $n GID entries, expected 128 (the IB table)"
expect_file "$ib/sim_roce1/ports/1/link_layer" "Ethernet"
expect_file "$ib/sim_roce1/ports/1/rate" "100 Gb/sec (4X EDR)"
expect_file "$ib/sim_roce1/ports/1/gid_attrs/types/3" "RoCE v2"
expect_file "$ib/sim_roce1/ports/1/gids/3" "0000:0000:0000:0000:0000:ffff:c613:0002"
# The netdev's IPv6 address fd00:0:0:1::2, RoCE v1 then v2, after the IPv4 entries
# (docs/simfabric.md, "IPv6 on RoCE ports"); the entry after it is empty, without a type.
expect_file "$ib/sim_roce1/ports/1/gids/4" "fd00:0000:0000:0001:0000:0000:0000:0002"
expect_file "$ib/sim_roce1/ports/1/gid_attrs/types/4" "IB/RoCE v1"
expect_file "$ib/sim_roce1/ports/1/gids/5" "fd00:0000:0000:0001:0000:0000:0000:0002"
expect_file "$ib/sim_roce1/ports/1/gid_attrs/types/5" "RoCE v2"
expect_file "$ib/sim_roce1/ports/1/gids/6" "0000:0000:0000:0000:0000:0000:0000:0000"
[ ! -e "$ib/sim_roce1/ports/1/gid_attrs/types/6" ] || sf_fail "empty GID entry 6 has a type"

# The NUMA node of the topology, and the CPUs of that node on this machine (its cpumap,
# in the kernel's own format), or every CPU without NUMA.
node=$("$SIMFAB" devices | awk '$1 == "sim_ib1" { print $8 }')
expect_file "$d/device/numa_node" "$node"
if [ -f "/sys/devices/system/node/node$node/cpumap" ]; then
	expect_file "$d/device/local_cpus" "$(cat "/sys/devices/system/node/node$node/cpumap")"
fi
grep -Eq '^[0-9a-f]+(,[0-9a-f]{8})*$' "$d/device/local_cpus" ||
	sf_fail "local_cpus is not a kernel cpumask: $(cat "$d/device/local_cpus")"

# Modes as sysfs: files 0444, directories not writable by others; the lock/state file
# of the tree is private.
bad=$(find "$root/class" -type f ! -perm 0444 | head -3)
[ -z "$bad" ] || sf_fail "files not 0444: $bad"
bad=$(find "$root/class" -type d -perm /022 | head -3)
[ -z "$bad" ] || sf_fail "directories writable by group or others: $bad"
[ "$(stat -c %a "$root/.state")" = 600 ] || sf_fail "$root/.state is not 0600"

# Traffic: a receiver on sim_ib1 that waits for more than will come (it stays up with
# its device open), a full-member sender on sim_ib3 whose own QP gets the loopback copies
# and has no receive posted: out_of_buffer rises on sim_ib3.
count=20
sf_start "$out/recv.txt" 60 mckey -m 239.1.2.3 -b 198.18.0.2 -C $((count * 2))
r=$SF_PID
sf_wait_line "$out/recv.txt" 'joined' "$r" 20
sf_start "$out/send.txt" 30 mckey -m 239.1.2.3 -b 198.18.0.4 -s -C "$count"
s=$SF_PID
sf_wait_exit "$s"
[ "$SF_RC" = 0 ] || sf_fail "sender exited with $SF_RC" "$out/send.txt"

# The files follow while the receiver runs (its refresher thread publishes them).
# rcv_packets_is N: sim_ib1's port_rcv_packets file shows N.
rcv_packets_is() {
	[ "$(cat "$d/ports/1/counters/port_rcv_packets")" = "$1" ]
}
t_wait_until 10 rcv_packets_is "$count" ||
	sf_fail "sim_ib1 port_rcv_packets is $(cat "$d/ports/1/counters/port_rcv_packets"), expected $count" "$out/recv.txt"
kill -0 "$r" 2>/dev/null || sf_fail "the receiver exited early" "$out/recv.txt"
expect_file "$ib/sim_ib3/ports/1/hw_counters/out_of_buffer" "$count"
for dev in sim_ib1 sim_ib3; do
	p=$ib/$dev/ports/1
	expect_file "$p/counters/port_rcv_packets" "$(sf_counter "$dev" rcv_pkts)"
	expect_file "$p/counters/port_xmit_packets" "$(sf_counter "$dev" xmit_pkts)"
	expect_file "$p/counters/port_rcv_data" "$(($(sf_counter "$dev" rcv_bytes) / 4))"
	expect_file "$p/counters/port_xmit_data" "$(($(sf_counter "$dev" xmit_bytes) / 4))"
	expect_file "$p/hw_counters/out_of_buffer" "$(sf_counter "$dev" out_of_buffer)"
done
[ "$(cat "$ib/sim_ib3/ports/1/counters/port_xmit_packets")" = "$count" ] ||
	sf_fail "sim_ib3 port_xmit_packets is not $count"

# Port state follows fault injection.
"$SIMFAB" port sim_ib1 down
expect_file "$d/ports/1/state" "1: DOWN"
expect_file "$d/ports/1/phys_state" "3: Disabled"
"$SIMFAB" port sim_ib1 up
expect_file "$d/ports/1/state" "4: ACTIVE"

kill -TERM "$(sf_child "$r")" 2>/dev/null || true
sf_wait_exit "$r"

# simfab reset removes the tree with the fabric.
"$SIMFAB" reset
[ ! -e "$root" ] || sf_fail "simfab reset left $root"
sf_log "PASS"
