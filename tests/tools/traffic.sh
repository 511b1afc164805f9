#!/bin/bash
# mcsender -> mclisten on one fabric (argument: ib or roce; plain or pgm): two groups,
# three streams per group over two QPs, a size mix. Every packet arrives exactly once:
# the listener counts what the sender sent, per stream and in total, without loss, gaps,
# duplicates or reordering, and times every packet (same host: one clock). With pgm,
# every packet passes the project's PGM parser (checksums included) and the SPMs are
# counted per stream; the packets mclisten dumped (--dump) decode alike with tshark and
# pgm/ (tests/pgm/compare_tshark.sh).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

fabric=$1
mode=$2
sf_init "tools-traffic-$fabric-$mode"
n=200
if [ "$fabric" = ib ]; then
	tx=(-d sim_ib1) rx=(-d sim_ib2:1)
else
	tx=(-r sim_roce1) rx=(-r sim_roce2)
fi
extra=()
sizes=64,300,1500,4096
if [ "$mode" = pgm ]; then
	extra=(--pgm --spm-interval 50)
	sizes=68-4096
fi

# Ports 3055 and 3056: where tshark and pgm/'s pgmtool look for UDP-encapsulated PGM.
tools_listen listen "${rx[@]}" -p 3055 -m 239.1.2.3 239.1.2.4:3056/PORT --json -D 50 \
	--dump "$SF_TMP/listen.pcap"
tools_send send "${tx[@]}" -p 3055 -m 239.1.2.3 239.1.2.4:3056/PORT -n "$n" --streams 3 --qps 2 \
	--burst 8 --rate 20000 --size "$sizes" --stream-id 1000 --clock monotonic "${extra[@]}"
[ "$TOOLS_SENT" = $((n * 6)) ] || br_fail "sender: sent=$TOOLS_SENT, expected $((n * 6))" send
tools_stop listen

tools_json listen '.totals | select(.received == '$((n * 6))' and .unique == '$((n * 6))' and
	.lost == 0 and .gaps == 0 and .dup == 0 and .reordered == 0 and .late == 0 and
	.streams == 6 and .groups == 2 and .other == 0 and .pgm_bad == 0 and
	.unknown_group == 0 and .rx_errors == 0 and .lat_negative == 0)' >/dev/null
# Per stream: n packets, complete, timed; ids 1000.. or TSIs with source ports 32768..
tools_json listen '[.streams[] | select(.received == '$n' and .expected == '$n' and
	.first_seq == 0 and .last_seq == '$((n - 1))' and .complete and
	.latency_ns.count == '$n' and .latency_ns.clock == "monotonic" and
	.latency_ns.p50 <= .latency_ns.p99 and .latency_ns.p99 <= .latency_ns.max)] |
	length == 6' >/dev/null
# Two streams per QP and group: the QPs are distinct sources.
v=$(tools_json listen '[.streams[].source] | unique | length')
[ "$v" = 2 ] || br_fail "listener: $v distinct sources, expected 2 (--qps 2)" listen
if [ "$mode" = pgm ]; then
	tools_json listen '[.streams[] | select(.pgm and (.stream | startswith("tsi:000003e84d43.")))] |
		length == 6' >/dev/null
	# The sender's SPMs: one per stream before the data, ambient ones, a final one.
	spm=$(sed -n 's/^mcsender: .* spm=\([0-9]*\) .*/\1/p' "$SF_TMP/send.out")
	tools_json listen '.totals.spm == '"$spm"' and ([.streams[].spm >= 2] | all)' >/dev/null
	# What arrived, as mclisten --dump wrote it, decodes alike with tshark and pgm/: every
	# field, checksums included; and tshark sees every ODATA and SPM with a good checksum.
	if command -v tshark >/dev/null 2>&1; then
		sh "$(dirname "$0")/../pgm/compare_tshark.sh" "$PGMTOOL" "$SF_TMP/listen.pcap" \
			>"$SF_TMP/compare.out" 2>&1 || br_fail "tshark and pgm/ disagree" compare
		v=$(tshark -n -r "$SF_TMP/listen.pcap" -d udp.port==3055,pgm -d udp.port==3056,pgm \
			-Y 'pgm.hdr.type == 4 && pgm.hdr.cksum.status == "Good"' 2>/dev/null | wc -l)
		[ "$v" = $((n * 6)) ] || br_fail "tshark: $v good ODATA, expected $((n * 6))" listen
		v=$(tshark -n -r "$SF_TMP/listen.pcap" -d udp.port==3055,pgm -d udp.port==3056,pgm \
			-Y 'pgm.hdr.type == 0 && pgm.hdr.cksum.status == "Good"' 2>/dev/null | wc -l)
		[ "$v" = "$spm" ] || br_fail "tshark: $v good SPMs, expected $spm" listen
	fi
else
	ids=$(tools_json listen '[.streams[].stream] | sort | join(",")')
	[ "$ids" = "id:1000,id:1001,id:1002,id:1003,id:1004,id:1005" ] ||
		br_fail "listener: streams $ids" listen
fi
# Sizes: the bytes the sender sent are the bytes the listener counted (SPMs included).
bytes=$(sed -n 's/^mcsender: .* bytes=\([0-9]*\) .*/\1/p' "$SF_TMP/send.out")
tools_json listen '([.groups[].bytes] | add) == '"$bytes" >/dev/null
sf_log "PASS"
