#!/bin/bash
# Duplicates counted exactly: a second sender replays the same stream (same stream id,
# or the same PGM TSI: same GSI and source port) after the first one ended: every one of
# its packets is a duplicate; nothing is lost or reordered.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

sf_init tools-dup
n=300
for mode in plain pgm; do
	extra=()
	[ "$mode" = plain ] || extra=(--pgm)
	tl_listen "listen_$mode" -d sim_ib3 -m 239.1.2.9 -D 50
	tl_send "send1_$mode" -d sim_ib1 -m 239.1.2.9 -n "$n" --stream-id 77 --rate 20000 "${extra[@]}"
	tl_send "send2_$mode" -d sim_ib2 -m 239.1.2.9 -n "$n" --stream-id 77 --rate 20000 "${extra[@]}"
	tl_stop "listen_$mode"
	tl_expect "listen_$mode" received=$((2 * n)) unique="$n" dup="$n" lost=0 gaps=0 \
		reordered=0 streams=1 pgm_bad=0
done
sf_log "PASS"
