#!/bin/bash
# Many groups from a config file (-c, one "multicast" line each): 300 groups are more than
# one QP may attach (240 on simfabric), so the listener spreads them over two QPs; every
# group gets its packets, every stream is complete.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

sf_init tools-many
ng=300
n=4
for i in $(seq 0 $((ng - 1))); do
	printf 'multicast 239.2.%d.%d\n' $((i / 200)) $((i % 200 + 1))
done >"$SF_TMP/groups.conf"
tl_listen listen -r sim_roce2 -c "$SF_TMP/groups.conf" -D 50
tl_send send -r sim_roce1 -c "$SF_TMP/groups.conf" -n "$n" --rate 0 --stream-id 1
tl_stop listen
tl_expect listen received=$((ng * n)) unique=$((ng * n)) lost=0 dup=0 streams="$ng" \
	groups="$ng" unknown_group=0
sf_log "PASS"
