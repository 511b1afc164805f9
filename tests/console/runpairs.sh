#!/bin/bash
# Channel pairs made at run time (issue 28): a bridge with one channel pair (one worker,
# or --workers 0) joins 500 groups while two other groups carry a steady stream each way.
# A pair holds 240 groups per QP (mcqp), so the joins need two pairs more: they are made
# at run time on the worker's two CQs and its SRQs (or, without SRQs, each QP with its
# own receive queue, filled by its worker). The streams lose nothing, every new group
# forwards both ways, and after every new group left again the accounting is exact.
#   runpairs.sh srq     one worker, SRQs
#   runpairs.sh nosrq   one worker, a device without SRQs (SIMFABRIC_NO_SRQ=1)
#   runpairs.sh w0      --workers 0 (event-driven on the control thread), SRQs
#   runpairs.sh reload  one worker, SRQs: a reload of the configuration file to 300 groups
#                       makes a pair at run time; a reload back leaves them again
#   runpairs.sh nobufs  no SRQs and the smallest pool for one pair: the join that needs a
#                       new pair is refused with the pool's figures and changes nothing
# On the code before run-time pairs the 241st join failed: "no channel has room".
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

mode=${1:?srq, nosrq or w0}
sf_init "console-runpairs-$mode"
ga=239.4.0.1 # IB -> RoCE stream
gb=239.4.0.2 # RoCE -> IB stream
nadd=500
first=239.5.0.0
ns=8000 # stream packets per direction (~8 s at 1000 pps)
n=2     # packets per new group and direction
workers=1 srq=true
case $mode in
srq) ;;
nosrq)
	export SIMFABRIC_NO_SRQ=1
	srq=false
	;;
w0) workers=0 ;;
reload)
	conf=$SF_TMP/bridge.conf
	printf 'device sim_ib0\nroce sim_roce0\nmulticast %s\nmulticast %s\n' "$ga" "$gb" >"$conf"
	br_bridge bridge 2 --workers 1 -c "$conf"
	[ "$(con_json bridge '.channels | length')" = 2 ] || br_fail "expected 1 pair at start" bridge
	for i in $(seq 0 299); do echo "multicast 239.5.$((i / 256)).$((i % 256))"; done >>"$conf"
	out=$(con_ok bridge reload)
	con_wait_json bridge "[.groups[] | select(.ib.state == \"joined\" and .roce.state == \"joined\")] | length" 302 120
	[ "$(con_json bridge '.channels | length')" = 4 ] || br_fail "the reload made no second pair: $out" bridge
	# The last group, on the pair made by the reload, forwards both ways.
	gl=239.5.1.43
	[ "$(con_json bridge ".groups[] | select(.group == \"$gl\") | .pair")" = 1 ] ||
		br_fail "$gl is not on pair 1" bridge
	br_listen l_roce "$ROCE_NET.3" -g "$gl" -n 100 --verify --timeout 30
	br_send l_tx_ib "$IB_NET.4" -g "$gl" -n 100 --rate 1000
	br_expect_listener l_roce 100 1 1
	br_listen l_ib "$IB_NET.3" -g "$gl" -n 100 --verify --timeout 30
	br_send l_tx_roce "$ROCE_NET.4" -g "$gl" -n 100 --rate 1000
	br_expect_listener l_ib 100 1 1
	printf 'device sim_ib0\nroce sim_roce0\nmulticast %s\nmulticast %s\n' "$ga" "$gb" >"$conf"
	con_ok bridge reload >/dev/null
	[ "$(con_json bridge '.groups | length')" = 2 ] || br_fail "the reload back left groups" bridge
	br_stop bridge
	for s in IB RoCE; do
		br_expect bridge "$s" fwd_pkts 100
		br_expect bridge "$s" drops 0
	done
	br_conservation bridge sim_ib0 sim_roce0
	sf_log "PASS"
	exit 0
	;;
nobufs)
	export SIMFABRIC_NO_SRQ=1
	min=$(br_min_buffers -d sim_ib0 -r sim_roce0 --workers 1 -e mcqp=1 -m "$ga")
	br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e mcqp=1 -e buffers="$min" \
		-m "$ga"
	out=$(con_must_exit bridge 1 join 239.5.0.0)
	con_expect_in "$out" "no channel has room for another group \(mcqp 1, 1 channel pair\), and no new pair: buffers=$min holds no other channel pair: its receive queues need [0-9]+ with the others" "refused pair"
	[ "$(con_json bridge '.groups | length')" = 1 ] || br_fail "the refused join left a group" bridge
	[ "$(con_json bridge '.channels | length')" = 2 ] || br_fail "the refused join left channels" bridge
	br_listen a_rx "$ROCE_NET.2" -g "$ga" -n 100 --verify --timeout 30
	br_send a_tx "$IB_NET.2" -g "$ga" -n 100 --rate 1000
	br_expect_listener a_rx 100 1 1
	br_stop bridge
	br_expect bridge IB fwd_pkts 100
	br_conservation bridge sim_ib0 sim_roce0
	sf_log "PASS"
	exit 0
	;;
*) sf_fail "unknown mode $mode" ;;
esac

br_bridge bridge 2 -d sim_ib0 -r sim_roce0 --workers "$workers" -i "$ga" -o "$gb"
grep -q " 1 channel pair, $workers worker" "$SF_TMP/bridge.err" ||
	br_fail "expected 1 channel pair at start" bridge

br_listen a_rx "$ROCE_NET.2" -g "$ga" -n "$ns" --verify --timeout 90
br_listen b_rx "$IB_NET.3" -g "$gb" -n "$ns" --verify --timeout 90
br_send_start a_tx "$IB_NET.2" -g "$ga" -n "$ns" --rate 1000
br_send_start b_tx "$ROCE_NET.4" -g "$gb" -n "$ns" --rate 1000

# The joins, while the streams flow: past the 240 groups of the one pair.
con_join_many bridge "$nadd"
con_wait_json bridge "[.groups[] | select(.ib.state == \"joined\" and .roce.state == \"joined\")] | length" $((nadd + 2)) 120

# Three pairs now, all the worker's: six QPs on its two CQs, on its SRQs or not.
[ "$(con_json bridge '.channels | length')" = 6 ] ||
	br_fail "expected 6 channels (3 pairs), found $(con_json bridge '.channels | length')" bridge
[ "$(con_json bridge "[.channels[] | select(.srq == $srq)] | length")" = 6 ] ||
	br_fail "expected every channel with srq=$srq" bridge
[ "$(con_json bridge '.workers | length')" = 1 ] || br_fail "expected one worker" bridge
[ "$(con_json bridge '.workers[0].cqs')" = 2 ] || br_fail "the worker polls more than two CQs" bridge
[ "$(con_json bridge '.workers[0].channels')" = 6 ] || br_fail "the worker owns $(con_json bridge '.workers[0].channels') channels" bridge
[ "$(con_json bridge '[.groups[] | select(.pair == 2)] | length')" -gt 0 ] ||
	br_fail "no group on the third pair" bridge
grep -q 'on channels IB 2, RoCE 2$' "$SF_TMP/bridge.err" || br_fail "no group logged on pair 2" bridge
# bcom channels names each QP's CQ: the worker's of its side, for the new pairs too.
chans=$(con_ok bridge channels)
[ "$(printf '%s\n' "$chans" | awk '$5 == "cq"' | wc -l)" = 1 ] || br_fail "no cq column: $chans" bridge
for s in IB RoCE; do
	[ "$(printf '%s\n' "$chans" | awk -v s=$s '$1 == s && $5 == "w0." s' | wc -l)" = 3 ] ||
		br_fail "expected 3 $s channels on CQ w0.$s: $chans" bridge
done

# The streams lost nothing.
br_send_end a_tx
br_send_end b_tx
br_expect_listener a_rx "$ns" 1 1
br_expect_listener b_rx "$ns" 1 1

# Every new group forwards both ways (the pairs made at run time too).
br_listen c_roce "$ROCE_NET.3" -g "$first" --groups "$nadd" -n $((n * nadd)) --verify --imm \
	--timeout 60
br_send c_tx_ib "$IB_NET.4" -g "$first" --groups "$nadd" -n "$n" --imm --rate 10000
br_expect_listener c_roce $((n * nadd)) 3 "$nadd"
br_listen c_ib "$IB_NET.3" -g "$first" --groups "$nadd" -n $((n * nadd)) --verify --imm \
	--timeout 60
br_send c_tx_roce "$ROCE_NET.4" -g "$first" --groups "$nadd" -n "$n" --imm --rate 10000
br_expect_listener c_ib $((n * nadd)) 3 "$nadd"

# Leave them again; the pairs stay, the first two groups still forward.
sed 's/^join \([^ ]*\) both$/leave \1/' "$SF_TMP/joins.txt" >"$SF_TMP/leaves.txt"
timeout -k 2 120 "$BCOM" --control "$SF_TMP/bridge.sock" <"$SF_TMP/leaves.txt" \
	>"$SF_TMP/leaves.out" 2>&1 || br_fail "bcom leaves failed: $(tail -3 "$SF_TMP/leaves.out")" bridge
left=$(grep -c '^left 239\.5\.' "$SF_TMP/leaves.out") || left=0
[ "$left" = "$nadd" ] || br_fail "$left of $nadd leaves done: $(grep -v '^left' "$SF_TMP/leaves.out" | head -3)" bridge
[ "$(con_json bridge '.groups | length')" = 2 ] || br_fail "groups left behind" bridge
br_listen d_rx "$ROCE_NET.2" -g "$ga" -n 100 --verify --timeout 30
br_send d_tx "$IB_NET.2" -g "$ga" -n 100 --rate 1000
br_expect_listener d_rx 100 1 1

br_stop bridge
for s in IB RoCE; do
	br_expect bridge "$s" drops 0
done
br_expect bridge IB fwd_pkts $((ns + 100 + n * nadd))
br_expect bridge RoCE fwd_pkts $((ns + n * nadd))
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
