#!/bin/bash
# Many groups from a config file (-c, one "multicast" line each): 300 groups are more than
# one QP may attach (240 on simfabric), so the listener spreads them over two QPs; every
# group gets its packets, every stream is complete. The latency histograms of 300 streams
# hold a chunk per power of two they saw (tools/lhist.h): n packets a stream, at most n
# KiB each, whatever the latencies (all 58 KiB of buckets a stream before).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-many
ng=300
n=4
for i in $(seq 0 $((ng - 1))); do
	printf 'multicast 239.2.%d.%d\n' $((i / 200)) $((i % 200 + 1))
done >"$SF_TMP/groups.conf"
tools_listen listen -r sim_roce2 -c "$SF_TMP/groups.conf" -D 50 --json
tools_send send -r sim_roce1 -c "$SF_TMP/groups.conf" -n "$n" --rate 0 --stream-id 1
tools_stop listen
tools_json listen '.totals | select(.received == '$((ng * n))' and .unique == '$((ng * n))' and
	.lost == 0 and .dup == 0 and .streams == '$ng' and .groups == '$ng' and
	.unknown_group == 0 and .lat_unrecorded == 0)' >/dev/null
tools_json listen '[.streams[] | select(.complete and .latency_ns.count == '$n')] |
	length == '$ng >/dev/null
# A header (< 512 bytes) and at most n chunks a stream; the interval histogram at most all.
max=$((ng * (512 + n * 1024) + 512 + 58 * 1024))
v=$(tools_json listen '.totals.lat_hist_bytes')
[ "$v" -le "$max" ] || br_fail "listener: lat_hist_bytes=$v, at most $max expected" listen
sf_log "PASS"
