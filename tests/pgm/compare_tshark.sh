#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# compare_tshark.sh PGMTOOL PCAP [FIELDS_OUT]
#
# Decode every PGM packet of PCAP (UDP encapsulation on ports 3055/3056) twice: with
# tshark and with pgm/ (pgmtool fields), in the same TSV layout, and fail on any
# difference. The field list matches the columns pgmtool prints (see print_fields() in
# pgmtool.c for the fields left out and why). Exit 77 when tshark is not installed.
# With FIELDS_OUT, tshark's view is also written there (for fixture indexes).
set -eu

tool=$1
pcap=$2
out=${3:-}

if ! command -v tshark >/dev/null 2>&1; then
	echo "compare_tshark: tshark not installed, skipping"
	exit 77
fi

FIELDS="frame.number pgm.hdr.sport pgm.hdr.dport pgm.hdr.type pgm.hdr.opts
pgm.hdr.cksum.status pgm.hdr.gsi pgm.hdr.tsdulen
pgm.spm.sqn pgm.spm.trail pgm.spm.lead pgm.spm.pathafi pgm.spm.path.ipv4 pgm.spm.path.ipv6
pgm.nak.sqn pgm.nak.srcafi pgm.nak.src.ipv4 pgm.nak.src.ipv6
pgm.nak.grpafi pgm.nak.grp.ipv4 pgm.nak.grp.ipv6
pgm.poll.sqn pgm.poll.round pgm.poll.subtype pgm.poll.pathafi pgm.poll.path.ipv4
pgm.poll.backoff_ivl pgm.poll.rand_str pgm.poll.matching_bmask
pgm.polr.sqn pgm.polr.round pgm.ack.maxsqn pgm.ack.bitmap
pgm.opts.type pgm.opts.len pgm.opts.tlen
pgm.genopts.type pgm.genopts.len pgm.genopts.opx pgm.genopts.end
pgm.opts.fragment.first_sqn pgm.opts.fragment.fragment_offset pgm.opts.fragment.total_length
pgm.opts.join.min_join pgm.opts.parity_prm.op pgm.opts.parity_prm.prm_grp
pgm.opts.nak_bo_ivl.bo_ivl pgm.opts.nak_bo_ivl.bo_ivl_sqn
pgm.opts.nak_bo_rng.min_bo_ivl pgm.opts.nak_bo_rng.max_bo_ivl
pgm.opts.redirect.afi pgm.opts.redirect.dlr.ipv4 pgm.opts.redirect.dlr.ipv6
pgm.opts.ccdata.afi pgm.opts.ccdata.acker.ipv4 pgm.opts.ccdata.acker.ipv6
pgm.opts.ccdata.lossrate"

args=""
for f in $FIELDS; do
	args="$args -e $f"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck disable=SC2086
tshark -n -r "$pcap" -d udp.port==3055,pgm -d udp.port==3056,pgm -Y pgm \
	-T fields -E separator=/t -E occurrence=a $args 2>"$tmp/tshark.err" |
	# Wireshark 4.0 puts two values under pgm.hdr.cksum.status; the status is the last.
	awk -F '\t' 'BEGIN { OFS = "\t" } { n = split($6, v, ","); $6 = v[n]; print }' \
		>"$tmp/tshark.tsv" || { cat "$tmp/tshark.err"; exit 1; }
"$tool" fields "$pcap" >"$tmp/pgm.tsv"

if [ -n "$out" ]; then
	cp "$tmp/tshark.tsv" "$out"
fi

packets=$(wc -l <"$tmp/tshark.tsv")
if [ "$packets" -eq 0 ]; then
	echo "compare_tshark: tshark found no PGM packet in $pcap"
	exit 1
fi
if ! diff -u "$tmp/tshark.tsv" "$tmp/pgm.tsv" >"$tmp/diff"; then
	echo "compare_tshark: pgm/ and tshark disagree (- tshark, + pgm/):"
	cat "$tmp/diff"
	exit 1
fi
fields=$(echo $FIELDS | wc -w)
echo "compare_tshark: $packets PGM packets, $fields fields each: pgm/ matches tshark"
