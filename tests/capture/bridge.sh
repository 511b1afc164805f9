#!/bin/bash
# The bridge's packet capture (docs/operations.md, "Capturing"): --capture from the
# start, capture start/stop/status on the console, files refused outside capture_dir,
# and tshark reads what was written: IB frames (LRH, GRH MGID, BTH
# opcode and destination QP, DETH Q_Key and source QP, in ERF records) and RoCEv2 frames (Ethernet,
# IPv4, UDP 4791, BTH, DETH), one comment per packet with its verdict; the counts match
# the bridge's counters. Argument: the number of workers (1, or 0: the event-driven data
# path on the control thread, which then also drains the capture).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

command -v tshark >/dev/null 2>&1 || { echo "tshark not installed: skipping"; exit 77; }

workers=${1:-1}
sf_init "capture-bridge-w$workers"
g=239.1.2.11
dir=$SF_TMP/cap
mkdir -m 0750 "$dir"

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers "$workers" -m "$g" \
	--capture-dir "$dir" --capture first.pcapng
con_expect_in "$(con_ok bridge capture status)" 'capture: running .*/first.pcapng' "status"

# Names outside capture_dir, an existing file or a symbolic link are refused, and a second
# capture while one runs.
con_expect_in "$(con_must_exit bridge 1 capture start ../x.pcapng)" "must not contain '/'" "refuse ../"
con_expect_in "$(con_must_exit bridge 1 capture start ..x)" "must not contain '..'" "refuse .."
con_expect_in "$(con_must_exit bridge 1 capture start a/b)" "must not contain '/'" "refuse /"
con_expect_in "$(con_must_exit bridge 1 capture start other)" "is running" "second capture"

# 1: IB -> RoCE: 300 forwarded, then 100 dropped (bridging off).
br_listen listener "$ROCE_NET.2" -g "$g" -n 300 --timeout 60
br_send a "$IB_NET.2" -g "$g" -n 300 --rate 20000
con_wait_json bridge '.sides[0].fwd_pkts' 300
con_ok bridge disable bridging >/dev/null
br_send b "$IB_NET.2" -g "$g" -n 100 --rate 20000
con_wait_json bridge '.sides[0].drop_reasons.bridging_off' 100
con_ok bridge enable bridging >/dev/null
con_wait_json bridge '.capture.written' 400
con_expect_in "$(con_ok bridge capture stop)" 'stopped: 400 packets written, 0 captures dropped' "stop"
br_expect_listener listener 300
[ "$(con_json bridge '.capture.dropped')" = 0 ] || br_fail "capture dropped" bridge

# The links are refused (O_EXCL|O_NOFOLLOW), as an existing file is.
ln -s "$SF_TMP/elsewhere" "$dir/link"
con_expect_in "$(con_must_exit bridge 1 capture start link)" 'File exists' "refuse a symlink"
[ ! -e "$SF_TMP/elsewhere" ] || br_fail "the link was followed" bridge
con_expect_in "$(con_must_exit bridge 1 capture start first.pcapng)" 'File exists' "refuse a file"

f=$dir/first.pcapng
[ "$(stat -c %a "$f")" = 640 ] || br_fail "mode $(stat -c %a "$f"), expected 640" bridge
t() { tshark -n -r "$@" 2>"$SF_TMP/tshark.err" || br_fail "tshark: $(cat "$SF_TMP/tshark.err")" bridge; }
n=$(t "$f" -Y 'infiniband' | wc -l)
[ "$n" = 400 ] || br_fail "tshark: $n InfiniBand frames, expected 400" bridge
n=$(t "$f" -Y 'frame.comment contains "drop bridging_off"' | wc -l)
[ "$n" = 100 ] || br_fail "tshark: $n frames with the comment drop bridging_off, expected 100" bridge
n=$(t "$f" -Y "frame.comment contains \"forwarded group $g\"" | wc -l)
[ "$n" = 300 ] || br_fail "tshark: $n forwarded frames, expected 300" bridge
# One frame's fields: the MGID of the group, UD SEND Only (0x64) to QP 0xffffff, the
# rdma_cm Q_Key, the sender's QP.
line=$(t "$f" -c 1 -T fields -E separator=' ' -e frame.protocols -e infiniband.grh.dgid \
	-e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.deth.q_key \
	-e infiniband.deth.srcqp -e infiniband.lrh.slid)
# shellcheck disable=SC2086 # split into fields
set -- $line
[ $# = 7 ] || br_fail "tshark fields: '$line'" bridge
case "$1" in erf:infiniband*) ;; *) br_fail "protocols '$1'" bridge ;; esac
# The group's MGID in rdma_cm's format: ff12:401b:<P_Key>::<28 bits of 239.1.2.11>.
[ "$2" = ff12:401b:ffff::f01:20b ] || [ "$2" = ff12:4001:ffff::f01:20b ] ||
	br_fail "GRH MGID '$2'" bridge
[ "$3" = 100 ] || br_fail "BTH opcode '$3' (expected 100 = UD SEND only)" bridge
[ "$4" = 0xffffff ] || br_fail "BTH destination QP '$4'" bridge
[ "$5" = 0x0000000001234567 ] || br_fail "DETH Q_Key '$5'" bridge
[ "$6" != 0x00000000 ] || br_fail "DETH source QP 0" bridge
[ "$7" != 0 ] || br_fail "LRH SLID 0" bridge

# 2: RoCE -> IB, only the RoCE side, count 50 of 200.
con_ok bridge capture start second.pcapng side roce count 50 >/dev/null
br_listen listener2 "$IB_NET.2" -g "$g" -n 200 --timeout 60
br_send c "$ROCE_NET.2" -g "$g" -n 200 --rate 20000
con_wait_json bridge '.sides[1].fwd_pkts' 200
con_wait_json bridge '.capture.active | tostring' false
br_expect_listener listener2 200
f=$dir/second.pcapng
n=$(t "$f" -Y "ip.dst == $g && udp.dstport == 4791 && infiniband.bth.opcode == 100" | wc -l)
[ "$n" = 50 ] || br_fail "tshark: $n RoCEv2 frames to $g, expected 50" bridge
n=$(t "$f" -Y 'infiniband.deth.q_key == 0x01234567 && infiniband.bth.destqp == 0xffffff' | wc -l)
[ "$n" = 50 ] || br_fail "tshark: $n frames with the DETH Q_Key and multicast QP, expected 50" bridge

br_stop bridge
br_expect bridge IB fwd_pkts 300
br_expect bridge RoCE fwd_pkts 200
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
