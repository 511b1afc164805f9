#!/bin/bash
# Duplicates counted exactly: a second sender replays the same stream (same stream id,
# or the same PGM TSI: same GSI and source port) after the first one ended: every one of
# its packets is a duplicate; nothing is lost or reordered.
# Reordering counted exactly: the first sending loses packets on the way (simfab loss),
# one more packet (--first-seq) raises the highest sequence number above all of them,
# and the replay brings them: each one fills a gap below it (reordered), the others are
# duplicates, and in the end nothing is lost.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-dup
n=300
for mode in plain pgm; do
	extra=()
	[ "$mode" = plain ] || extra=(--pgm)
	tools_listen "listen_$mode" -d sim_ib3 -m 239.1.2.9 -D 50
	tools_send "send1_$mode" -d sim_ib1 -m 239.1.2.9 -n "$n" --stream-id 77 --rate 20000 "${extra[@]}"
	tools_send "send2_$mode" -d sim_ib2 -m 239.1.2.9 -n "$n" --stream-id 77 --rate 20000 "${extra[@]}"
	tools_stop "listen_$mode"
	tools_expect "listen_$mode" received=$((2 * n)) unique="$n" dup="$n" lost=0 gaps=0 \
		reordered=0 streams=1 pgm_bad=0
done
tools_listen listen_reorder -d sim_ib3 -m 239.1.2.9 -D 50
"$SIMFAB" loss ib0 0.3 >/dev/null
tools_send send1_reorder -d sim_ib1 -m 239.1.2.9 -n "$n" --stream-id 78 --rate 20000
"$SIMFAB" loss ib0 0 >/dev/null
lost=$(sf_counter sim_ib3 sim_loss)
[ "$lost" -gt 0 ] || br_fail "the fabric lost nothing at probability 0.3" listen_reorder
tools_send next_reorder -d sim_ib1 -m 239.1.2.9 -n 1 --first-seq "$n" --stream-id 78
tools_send send2_reorder -d sim_ib2 -m 239.1.2.9 -n "$n" --stream-id 78 --rate 20000
tools_stop listen_reorder
tools_expect listen_reorder received=$((2 * n - lost + 1)) unique=$((n + 1)) reordered="$lost" \
	dup=$((n - lost)) lost=0 streams=1
sf_log "PASS"
