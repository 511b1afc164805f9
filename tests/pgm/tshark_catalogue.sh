#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# tshark_catalogue.sh PGMTOOL COMPARE_SCRIPT
#
# Write the valid packets of the test catalogue and the builders' output into a pcap
# (UDP encapsulation) and check that tshark and pgm/ read every field alike, checksums
# included. Exit 77 without tshark.
set -eu

tool=$1
compare=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

"$tool" write-pcap "$tmp/catalogue.pcap"
sh "$compare" "$tool" "$tmp/catalogue.pcap"
