#!/bin/bash
# infiniband-diags on the simulated fabric, unmodified, through simfabric's libibumad.so.3:
# ibstat shows every CA as ibv_devinfo does (name, port state, LIDs, GUIDs, firmware,
# link layer) and follows a port taken down; ibaddr asks the SM agents for a port's GID
# and LID, its own (directed route) and another's (by LID); smpquery reads another
# port's NodeInfo and NodeDescription.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init ibstat
sf_need ibstat ibaddr smpquery ibv_devinfo ibv_devices
out=$SF_TMP
# ibstat never calls umad_release_ca (infiniband-diags/ibstat.c): in the sanitizer build
# what umad_get_ca allocated for it is its leak, not the library's.
printf 'leak:umad_get_ca\n' >"$out/lsan.supp"
export LSAN_OPTIONS="suppressions=$out/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# The CA list is the verbs device list.
sf_tool 20 ibstat -l >"$out/list.txt" 2>&1 || sf_fail "ibstat -l failed" "$out/list.txt"
sf_tool 20 ibv_devices >"$out/devices.txt" 2>&1 || sf_fail "ibv_devices failed" "$out/devices.txt"
awk 'NR > 2 {print $1}' "$out/devices.txt" | sort >"$out/devnames.txt"
sort "$out/list.txt" | diff - "$out/devnames.txt" >"$out/diff.txt" ||
	sf_fail "ibstat -l differs from ibv_devices" "$out/diff.txt"
[ "$(wc -l <"$out/list.txt")" = 8 ] || sf_fail "ibstat -l: not 8 CAs" "$out/list.txt"

# devinfo DEV FIELD: a field of ibv_devinfo -d DEV ("node_guid", "port_lid", ...).
devinfo() {
	sf_tool 20 ibv_devinfo -d "$1" | awk -v f="$2:" '$1 == f {print $2; exit}'
}

# expect FILE LINE: FILE has exactly this line (leading blanks ignored).
expect() {
	sed 's/^[[:space:]]*//' "$1" | grep -qxF -- "$2" || sf_fail "no line '$2'" "$1"
}

for dev in sim_ib0 sim_ib1 sim_ib2 sim_ib3 sim_roce1; do
	sf_tool 20 ibstat "$dev" >"$out/$dev.txt" 2>&1 || sf_fail "ibstat $dev failed" "$out/$dev.txt"
	guid=0x$(devinfo "$dev" node_guid | tr -d :)
	expect "$out/$dev.txt" "CA '$dev'"
	expect "$out/$dev.txt" "CA type: MT$(devinfo "$dev" vendor_part_id)"
	expect "$out/$dev.txt" "Number of ports: 1"
	expect "$out/$dev.txt" "Firmware version: $(devinfo "$dev" fw_ver)"
	expect "$out/$dev.txt" "Node GUID: $guid"
	expect "$out/$dev.txt" "System image GUID: 0x$(devinfo "$dev" sys_image_guid | tr -d :)"
	expect "$out/$dev.txt" "State: Active"
	expect "$out/$dev.txt" "Physical state: LinkUp"
	expect "$out/$dev.txt" "Base lid: $(devinfo "$dev" port_lid)"
	expect "$out/$dev.txt" "SM lid: $(devinfo "$dev" sm_lid)"
	expect "$out/$dev.txt" "Link layer: $(devinfo "$dev" link_layer)"
	case $dev in
	sim_ib*)
		# The port GUID is the node GUID (ConnectX-4 and later), GID[0]'s interface ID.
		expect "$out/$dev.txt" "Port GUID: $guid"
		expect "$out/$dev.txt" "Rate: 200"
		;;
	*)
		expect "$out/$dev.txt" "Rate: 100"
		;;
	esac
done

# A port taken down shows at once (simfab publishes the sysfs state).
"$SIMFAB" port sim_ib3 down >/dev/null
sf_tool 20 ibstat sim_ib3 >"$out/down.txt" 2>&1 || sf_fail "ibstat sim_ib3 failed" "$out/down.txt"
expect "$out/down.txt" "State: Down"
expect "$out/down.txt" "Physical state: Disabled"
"$SIMFAB" port sim_ib3 up >/dev/null

# ibaddr: the own port by directed route, another by LID, through the SMA.
sf_tool 20 ibaddr -C sim_ib1 >"$out/ibaddr1.txt" 2>&1 || sf_fail "ibaddr failed" "$out/ibaddr1.txt"
expect "$out/ibaddr1.txt" "GID fe80::2:c903:a0:b020 LID start 0x2 end 0x2"
sf_tool 20 ibaddr -C sim_ib1 3 >"$out/ibaddr3.txt" 2>&1 || sf_fail "ibaddr 3 failed" "$out/ibaddr3.txt"
expect "$out/ibaddr3.txt" "GID fe80::2:c903:a0:b030 LID start 0x3 end 0x3"
# smpquery: NodeInfo and NodeDescription of LID 3 (sim_ib2).
sf_tool 20 smpquery -C sim_ib1 nodeinfo 3 >"$out/ni.txt" 2>&1 || sf_fail "smpquery nodeinfo" "$out/ni.txt"
expect "$out/ni.txt" "NodeType:........................Channel Adapter"
expect "$out/ni.txt" "Guid:............................0x$(devinfo sim_ib2 node_guid | tr -d :)"
expect "$out/ni.txt" "DevId:...........................0x101b"
sf_tool 20 smpquery -C sim_ib1 nodedesc 3 >"$out/nd.txt" 2>&1 || sf_fail "smpquery nodedesc" "$out/nd.txt"
expect "$out/nd.txt" "Node Description:...............simfabric sim_ib2"
# LID 9 is nobody's: the query times out.
if sf_tool 20 ibaddr -C sim_ib1 -t 100 9 >"$out/ibaddr9.txt" 2>&1; then
	sf_fail "ibaddr of LID 9 succeeded" "$out/ibaddr9.txt"
fi
sf_log "PASS"
