#!/bin/bash
# simfab capture (docs/simfabric.md): every datagram that reaches the captured ports,
# recorded by the delivering processes, read back by tshark. The PGM session of
# tests/pgm/fixtures is replayed on IB (sim_ib1 -> sim_ib2) and on RoCE (sim_roce1 ->
# sim_roce2) while `simfab capture -c 80 sim_ib2 sim_roce2` runs: 40 InfiniBand frames
# (ERF records) with the group's MGID, 40 RoCEv2 frames to the group on UDP 4791, each
# with BTH opcode UD SEND only to QP 0xffffff and a DETH, and the payloads are the PGM
# packets of the session (tshark decodes them once re-wrapped in UDP: Wireshark 4.0 has
# no decode-as from an InfiniBand payload to PGM). Ports not named are not recorded.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

: "${PGMREPLAY:?PGMREPLAY must name the pgmreplay program}"
: "${PGM_FIXTURES:?PGM_FIXTURES must name tests/pgm/fixtures}"
command -v tshark >/dev/null 2>&1 || { echo "tshark not installed: skipping"; exit 77; }
command -v text2pcap >/dev/null 2>&1 || { echo "text2pcap not installed: skipping"; exit 77; }

sf_init capture-simfab
g=239.1.2.13
pcap=$PGM_FIXTURES/openpgm-session.pcap
f=$SF_TMP/fabric.pcapng

br_start cap 60 "$SIMFAB" capture "$f" -c 80 sim_ib2 sim_roce2
sf_wait_line "$SF_TMP/cap.err" '^simfab: capturing to ' "$BR_PID" 10
for side in ib roce; do
	net=$IB_NET
	[ $side = ib ] || net=$ROCE_NET
	br_start "recv_$side" 30 "$PGMREPLAY" recv -b "$net.3" -g "$g" -n 40 -o "$SF_TMP/$side.rec"
	sf_wait_line "$SF_TMP/recv_$side.out" 'joined' "$BR_PID" 10
	"$PGMREPLAY" send -b "$net.2" -g "$g" --pcap "$pcap" --gap-us 200 >"$SF_TMP/send_$side.out" 2>&1 ||
		br_fail "pgmreplay send on $side" "send_$side"
	sf_wait_exit "$(br_pid "recv_$side")"
	[ "$SF_RC" = 0 ] || br_fail "receiver on $side: status $SF_RC" "recv_$side"
done
sf_wait_exit "$(br_pid cap)"
[ "$SF_RC" = 0 ] || br_fail "simfab capture: status $SF_RC" cap
grep -q '^captured 80 packets, 0 lost' "$SF_TMP/cap.out" || br_fail "simfab capture summary" cap

t() { tshark -n -r "$@" 2>"$SF_TMP/tshark.err" || br_fail "tshark: $(cat "$SF_TMP/tshark.err")" cap; }
n=$(t "$f" -Y 'erf && infiniband.grh.dgid == ff12:401b:ffff::f01:20d || infiniband.grh.dgid == ff12:4001:ffff::f01:20d' | wc -l)
[ "$n" = 40 ] || br_fail "tshark: $n InfiniBand frames to the group's MGID, expected 40" cap
n=$(t "$f" -Y "eth && ip.dst == $g && udp.dstport == 4791" | wc -l)
[ "$n" = 40 ] || br_fail "tshark: $n RoCEv2 frames to $g, expected 40" cap
n=$(t "$f" -Y 'infiniband.bth.opcode == 100 && infiniband.bth.destqp == 0xffffff && infiniband.deth.q_key == 0x01234567 && infiniband.deth.srcqp != 0' | wc -l)
[ "$n" = 80 ] || br_fail "tshark: $n frames with BTH UD SEND only to QP 0xffffff and the DETH, expected 80" cap
n=$(t "$f" -Y 'frame.interface_name == "sim_ib2"' | wc -l)
[ "$n" = 40 ] || br_fail "tshark: $n frames on interface sim_ib2, expected 40" cap

# The payloads, re-wrapped in UDP, are the session's PGM packets (same types, in order).
# One text2pcap packet per line: offset 0, then the bytes.
t "$f" -T fields -e data.data | sed -e 's/../& /g' -e 's/^/000000 /' >"$SF_TMP/payloads.txt"
text2pcap -q -4 198.18.0.2,$g -u 3056,3056 "$SF_TMP/payloads.txt" "$SF_TMP/payloads.pcap" ||
	br_fail "text2pcap" cap
fields="-T fields -e pgm.hdr.type -e pgm.hdr.tsdulen -e pgm.hdr.gsi -e pgm.hdr.sport -e pgm.hdr.dport"
# shellcheck disable=SC2086 # fields
t "$SF_TMP/payloads.pcap" -d udp.port==3056,pgm -Y pgm $fields >"$SF_TMP/got.tsv"
# shellcheck disable=SC2086 # fields
t "$pcap" -d udp.port==3055,pgm -d udp.port==3056,pgm -Y pgm $fields >"$SF_TMP/want1.tsv"
cat "$SF_TMP/want1.tsv" "$SF_TMP/want1.tsv" >"$SF_TMP/want.tsv"
cmp -s "$SF_TMP/got.tsv" "$SF_TMP/want.tsv" ||
	br_fail "PGM in the captured payloads differs from the session: $(diff "$SF_TMP/want.tsv" "$SF_TMP/got.tsv" | head)" cap

# A second capture while one runs is refused; bad usage is exit 2.
br_start cap2 30 "$SIMFAB" capture "$SF_TMP/x.pcapng"
sf_wait_line "$SF_TMP/cap2.err" '^simfab: capturing to ' "$BR_PID" 10
rc=0
"$SIMFAB" capture "$SF_TMP/y.pcapng" >"$SF_TMP/cap3.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q 'another simfab capture is running' "$SF_TMP/cap3.out" ||
	br_fail "second capture: status $rc: $(cat "$SF_TMP/cap3.out")" cap2
kill -INT "$(sf_child "$(br_pid cap2)")"
sf_wait_exit "$(br_pid cap2)"
[ "$SF_RC" = 0 ] || br_fail "simfab capture after SIGINT: status $SF_RC" cap2
grep -q '^captured 0 packets, 0 lost' "$SF_TMP/cap2.out" || br_fail "capture 2 summary" cap2
rc=0
"$SIMFAB" capture "$SF_TMP/z.pcapng" -c x >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || br_fail "simfab capture -c x: status $rc, expected 2" cap2
sf_log "PASS"
