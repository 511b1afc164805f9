#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# fixtures.sh PGMTOOL COMPARE_SCRIPT FIXTURES_DIR
#
# The OpenPGM packets kept in FIXTURES_DIR still read as tshark read them when they were
# captured (index.tsv holds tshark's fields), and the stream table still accounts the
# whole capture the same way (openpgm-session.streams). When tshark is installed the
# capture is also compared against it afresh. Runs without root or OpenPGM.
set -eu

tool=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
compare=$2
dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cut -f1 "$dir/index.tsv" >"$tmp/files"
[ -s "$tmp/files" ] || { echo "fixtures: empty index"; exit 1; }
(cd "$dir" && xargs "$tool" fields-bin <"$tmp/files") >"$tmp/pgm.tsv"
if ! diff -u "$dir/index.tsv" "$tmp/pgm.tsv"; then
	echo "fixtures: pgm/ reads the fixtures differently from tshark (- tshark, + pgm/)"
	exit 1
fi
echo "fixtures: $(wc -l <"$tmp/files") packets read as tshark read them"

"$tool" streams "$dir/openpgm-session.pcap" >"$tmp/streams"
if ! diff -u "$dir/openpgm-session.streams" "$tmp/streams"; then
	echo "fixtures: stream accounting of the capture changed"
	exit 1
fi
echo "fixtures: stream accounting of the capture unchanged"

if command -v tshark >/dev/null 2>&1; then
	sh "$compare" "$tool" "$dir/openpgm-session.pcap"
fi
