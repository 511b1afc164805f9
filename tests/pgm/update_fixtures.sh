#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# update_fixtures.sh PGMTOOL CAPTURE TSHARK_TSV FIXTURES_DIR
#
# Called by interop.sh when PGM_UPDATE_FIXTURES=1: keep the OpenPGM capture and one
# packet of each kind from it as fixtures, with tshark's reading of each packet
# (index.tsv) and the stream table's reading of the whole capture (.streams), and add
# the packets to the fuzzer's seed corpus.
set -eu

tool=$1
pcap=$2
tsv=$3
dir=$4
corpus=$(dirname "$0")/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$dir" "$tmp/all"
cp "$pcap" "$dir/openpgm-session.pcap"
"$tool" extract "$pcap" "$tmp/all"

first_frame() {
	tshark -n -r "$pcap" -d udp.port==3056,pgm -Y "$1" -T fields -e frame.number \
		2>/dev/null | head -n 1
}

: >"$dir/index.tsv"
for spec in \
	"spm|pgm.hdr.type == 0x00 && !pgm.opts.tlen" \
	"spm-fin|pgm.hdr.type == 0x00 && pgm.opts.tlen" \
	"odata|pgm.hdr.type == 0x04 && !pgm.opts.tlen" \
	"odata-fragment|pgm.hdr.type == 0x04 && pgm.opts.fragment.first_sqn" \
	"nak|pgm.hdr.type == 0x08" \
	"ncf|pgm.hdr.type == 0x0a" \
	"rdata|pgm.hdr.type == 0x05 && !pgm.opts.tlen" \
	"rdata-fragment|pgm.hdr.type == 0x05 && pgm.opts.fragment.first_sqn"; do
	kind=${spec%%|*}
	filter=${spec#*|}
	frame=$(first_frame "$filter")
	[ -n "$frame" ] || { echo "update_fixtures: no packet for $kind"; exit 1; }
	src=$(ls "$tmp/all/$(printf %04u "$frame")"-*.bin)
	cp "$src" "$dir/openpgm-$kind.bin"
	cp "$src" "$corpus/ok--openpgm-$kind.bin"
	awk -F '\t' -v f="$frame" -v name="openpgm-$kind.bin" \
		'BEGIN { OFS = "\t" } $1 == f { $1 = name; print }' "$tsv" >>"$dir/index.tsv"
done
"$tool" streams "$dir/openpgm-session.pcap" >"$dir/openpgm-session.streams"
echo "update_fixtures: wrote $(ls "$dir"/*.bin | wc -l) packets to $dir"
