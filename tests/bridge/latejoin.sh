#!/bin/bash
# Joins that complete after the join timeout: with the RoCE port down at start, the bridge
# becomes ready at join_timeout with the groups not joined named ("ready anyway"); when
# the port comes up and the last group joins, "all N groups joined on both sides (after
# the join timeout)" is logged once (the line operators and bench/bridge_bench.sh wait
# for), and the groups forward.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init bridge-latejoin
ngroups=3
first=239.3.0.1
n=5 # packets per group

"$SIMFAB" port sim_roce0 down >/dev/null
BR_BRIDGES=bridge
br_start bridge 90 "$IB2ROCE" --debug --control "$SF_TMP/bridge.sock" --idle backoff \
	-e statint=0 -e join_timeout=1 -d sim_ib0 -r sim_roce0 --workers 1 \
	-m 239.3.0.1 -m 239.3.0.2 -m 239.3.0.3
SF_PIDS="$SF_PIDS $(sf_child "$BR_PID")"
sf_wait_line "$SF_TMP/bridge.err" "ib2roce warning: $ngroups groups not joined after 1 s: 239.3.0.1, 239.3.0.2, 239.3.0.3; ready anyway" \
	"$BR_PID" 20
! grep -q 'joined on both sides' "$SF_TMP/bridge.err" ||
	br_fail "'joined on both sides' logged while the RoCE port was down" bridge
"$SIMFAB" port sim_roce0 up >/dev/null
sf_wait_line "$SF_TMP/bridge.err" "ib2roce notice: all $ngroups groups joined on both sides \(after the join timeout\): forwarding" \
	"$BR_PID" 20
br_listen rx "$ROCE_NET.2" -g "$first" --groups "$ngroups" -n $((n * ngroups)) --verify --timeout 20
br_send tx "$IB_NET.2" -g "$first" --groups "$ngroups" -n "$n" --rate 20000
br_expect_listener rx $((n * ngroups)) 1 "$ngroups"
br_stop bridge
lines=$(grep -c 'joined on both sides' "$SF_TMP/bridge.err") || lines=0
[ "$lines" = 1 ] || br_fail "'joined on both sides' logged $lines times, expected once" bridge
br_expect bridge IB fwd_pkts $((n * ngroups))
br_expect bridge IB drops 0
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
