#!/bin/bash
# Debian's ibv_devices and ibv_devinfo, unmodified, see the eight devices of the default
# topology (docs/simfabric.md) with their GUIDs, port attributes and GID tables.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init devices
sf_need ibv_devices ibv_devinfo
out=$SF_TMP

# ibv_devices: exactly these eight devices and node GUIDs, in this order.
sf_tool 30 ibv_devices >"$out/devices.txt" 2>&1 || sf_fail "ibv_devices failed" "$out/devices.txt"
cat >"$out/devices.expected" <<'EOF'
sim_ib0 0002c90300a0b010
sim_ib1 0002c90300a0b020
sim_ib2 0002c90300a0b030
sim_ib3 0002c90300a0b040
sim_roce0 0200000300000101
sim_roce1 0200000300000102
sim_roce2 0200000300000103
sim_roce3 0200000300000104
EOF
# Header lines ("device  node GUID", "------  ----") are not devices.
awk 'NF == 2 && $1 != "device" && $1 !~ /^-+$/ { print $1, $2 }' "$out/devices.txt" \
	>"$out/devices.got"
if ! cmp -s "$out/devices.expected" "$out/devices.got"; then
	diff -u "$out/devices.expected" "$out/devices.got" >"$out/devices.diff" || true
	sf_fail "ibv_devices does not list the default topology" "$out/devices.txt" \
		"$out/devices.diff"
fi

# ibv_devinfo without -d: every device, each with one active port.
sf_tool 30 ibv_devinfo >"$out/devinfo.txt" 2>&1 || sf_fail "ibv_devinfo failed" "$out/devinfo.txt"
n=$(grep -c '^hca_id:' "$out/devinfo.txt" || true)
[ "$n" = 8 ] || sf_fail "ibv_devinfo lists $n devices, expected 8" "$out/devinfo.txt"
n=$(grep -c 'state:[[:space:]]*PORT_ACTIVE (4)' "$out/devinfo.txt" || true)
[ "$n" = 8 ] || sf_fail "$n active ports, expected 8" "$out/devinfo.txt"

# expect FILE REGEX: FILE has a line matching the extended regular expression.
expect() {
	grep -Eq -- "$2" "$1" || sf_fail "no line matching '$2'" "$1"
}

# An IB port: LID 2 on sim_ib1 (LIDs 1-4), the SM at LID 1, MTU 4096.
sf_tool 30 ibv_devinfo -d sim_ib1 >"$out/ib1.txt" 2>&1 || sf_fail "ibv_devinfo -d sim_ib1" "$out/ib1.txt"
expect "$out/ib1.txt" '^hca_id:[[:space:]]+sim_ib1$'
expect "$out/ib1.txt" 'node_guid:[[:space:]]+0002:c903:00a0:b020$'
expect "$out/ib1.txt" 'state:[[:space:]]+PORT_ACTIVE \(4\)$'
expect "$out/ib1.txt" 'active_mtu:[[:space:]]+4096 \(5\)$'
expect "$out/ib1.txt" 'port_lid:[[:space:]]+2$'
expect "$out/ib1.txt" 'sm_lid:[[:space:]]+1$'
expect "$out/ib1.txt" 'link_layer:[[:space:]]+InfiniBand$'

# A RoCE port: Ethernet, no LID, and with -v the GID table mlx5 builds: the IPv4-mapped
# address as RoCE v2 at index 3, which rdma_cm binds to.
sf_tool 30 ibv_devinfo -v -d sim_roce1 >"$out/roce1.txt" 2>&1 ||
	sf_fail "ibv_devinfo -v -d sim_roce1" "$out/roce1.txt"
expect "$out/roce1.txt" '^hca_id:[[:space:]]+sim_roce1$'
expect "$out/roce1.txt" 'node_guid:[[:space:]]+0200:0003:0000:0102$'
expect "$out/roce1.txt" 'state:[[:space:]]+PORT_ACTIVE \(4\)$'
expect "$out/roce1.txt" 'active_mtu:[[:space:]]+4096 \(5\)$'
expect "$out/roce1.txt" 'port_lid:[[:space:]]+0$'
expect "$out/roce1.txt" 'link_layer:[[:space:]]+Ethernet$'
expect "$out/roce1.txt" 'GID\[[[:space:]]*3\]:[[:space:]]+::ffff:198\.19\.0\.2, RoCE v2$'
expect "$out/roce1.txt" 'GID\[[[:space:]]*1\]:[[:space:]]+fe80::ff:fe00:102, RoCE v2$'

# ibv_devinfo -v: ConnectX-6 limits on every device.
sf_tool 30 ibv_devinfo -v >"$out/devinfo-v.txt" 2>&1 ||
	sf_fail "ibv_devinfo -v failed" "$out/devinfo-v.txt"
n=$(grep -Ec 'max_mcast_qp_attach:[[:space:]]+240$' "$out/devinfo-v.txt" || true)
[ "$n" = 8 ] || sf_fail "max_mcast_qp_attach 240 on $n devices, expected 8" "$out/devinfo-v.txt"
n=$(grep -Ec 'vendor_id:[[:space:]]+0x02c9$' "$out/devinfo-v.txt" || true)
[ "$n" = 8 ] || sf_fail "vendor_id 0x02c9 on $n devices, expected 8" "$out/devinfo-v.txt"
expect "$out/devinfo-v.txt" 'GID\[[[:space:]]*0\]:[[:space:]]+fe80:0000:0000:0000:0002:c903:00a0:b040'

# A device that does not exist is an error, not an empty listing.
if sf_tool 30 ibv_devinfo -d sim_nonexistent >"$out/none.txt" 2>&1; then
	sf_fail "ibv_devinfo -d sim_nonexistent succeeded" "$out/none.txt"
fi
sf_log "PASS"
