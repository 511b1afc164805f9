#!/bin/bash
# The smallest pool the bridge accepts forwards one-sided load completely (issue 15,
# defect 1: an idle channel's receive queue kept every buffer and the busy one starved,
# silently and for good).
#
# - A pool below the minimum of the configuration is refused, by --check and at start,
#   with exit 2 and "buffers=N is too small: this configuration needs at least M (...)".
# - With buffers=M (the minimum stated) the bridge starts, and traffic in one direction
#   at a time, more packets than the pool holds, arrives complete on the other fabric:
#   first IB -> RoCE, then RoCE -> IB. Nothing starves (rx_starved 0), every packet is
#   accounted for (br_conservation).
#
# Usage: poolmin.sh MODE
#   w1     --workers 1, one group (one channel pair)
#   w0     --workers 0 (event-driven on the control thread), one group
#   w2     --workers 2, -e mcqp=1 and 4 groups (4 channel pairs, 2 per worker: the
#          listener sees 4 senders, one QP per pair)
#   pairs  --workers 1, -e mcqp=1 and 20 groups with buffers=16384 (accepted) on devices
#          without shared receive queues (SIMFABRIC_NO_SRQ=1: the per-QP fallback, which
#          the log says): the 40 receive queues at the default depth do not fit, so they
#          shrink to fit and the start-up log says so; idle, no channel starves
#   srq20  --workers 1, -e mcqp=1 and 20 groups (20 channel pairs) with SRQs: the minimum
#          is no larger than a single group's (one SRQ per worker and side, whatever the
#          QPs),
#          and that pool forwards one-sided load over the 20 pairs completely
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

[ $# = 1 ] || {
	echo "usage: $0 w1|w0|w2|pairs|srq20" >&2
	exit 2
}
mode=$1
group=239.1.3.1
case $mode in
w1) ngroups=1 opts=(--workers 1) ;;
w0) ngroups=1 opts=(--workers 0) ;;
# Two workers and the control thread on a two-CPU machine share CPUs: oversubscribe.
w2) ngroups=4 opts=(--workers 2 -e oversubscribe -e mcqp=1) ;;
pairs) ngroups=20 opts=(--workers 1 -e mcqp=1) ;;
srq20) ngroups=20 opts=(--workers 1 -e mcqp=1) ;;
*)
	echo "usage: $0 w1|w0|w2|pairs|srq20" >&2
	exit 2
	;;
esac
sf_init "bridge-poolmin-$mode"
groups=()
for i in $(seq 0 $((ngroups - 1))); do
	groups+=(-m "239.1.3.$((1 + i))")
done
devs=(-d sim_ib0 -r sim_roce0)

# check NAME BUFFERS: ib2roce --check with this pool; exit status in SF_RC.
check() {
	local rc=0

	: >"$SF_TMP/$1.out"
	timeout -k 5 30 "$IB2ROCE" --check --control "$SF_TMP/$1.sock" "${devs[@]}" \
		"${opts[@]}" -e buffers="$2" "${groups[@]}" >"$SF_TMP/$1.out" 2>"$SF_TMP/$1.err" || rc=$?
	SF_RC=$rc
}

if [ "$mode" = pairs ]; then
	# Devices without SRQs, as some providers are: a receive queue per QP.
	export SIMFABRIC_NO_SRQ=1
	min=16384
	check check_ok "$min"
	[ "$SF_RC" = 0 ] || br_fail "--check -e buffers=$min: exit $SF_RC, expected 0" check_ok
	br_bridge bridge "$ngroups" "${devs[@]}" "${opts[@]}" -e buffers="$min" "${groups[@]}"
	grep -q 'ib2roce info: IB sim_ib0: no shared receive queues (max_srq 0): a receive queue per QP' \
		"$SF_TMP/bridge.err" || br_fail "no log line of the per-QP receive queue fallback" bridge
	grep -Eq 'ib2roce info: receive queues: 40 x [0-9]+ buffers \(rqdepth=2048 does not fit in buffers=16384\)' \
		"$SF_TMP/bridge.err" || br_fail "no log line of the receive queues fitted to the pool" bridge
	depth=$(sed -n 's/.*receive queues: 40 x \([0-9]*\) buffers.*/\1/p' "$SF_TMP/bridge.err")
	[ $((40 * depth)) -le "$min" ] || br_fail "40 receive queues of $depth exceed the pool" bridge
	sleep 1
else
	# Too small: refused with the minimum, by --check and at start.
	check check_small 1024
	[ "$SF_RC" = 2 ] || br_fail "--check -e buffers=1024: exit $SF_RC, expected 2" check_small
	msg=$(grep -o 'buffers=1024 is too small: this configuration needs at least [0-9]* (.*)' \
		"$SF_TMP/check_small.err" || true)
	[ -n "$msg" ] || br_fail "--check -e buffers=1024: no 'is too small' message" check_small
	min=$(printf '%s\n' "$msg" | sed 's/.* at least \([0-9]*\) .*/\1/')
	sf_log "$msg"
	check check_below $((min - 1))
	[ "$SF_RC" = 2 ] || br_fail "--check -e buffers=$((min - 1)): exit $SF_RC, expected 2" check_below
	br_start small 30 "$IB2ROCE" --debug --control "$SF_TMP/small.sock" --idle backoff \
		"${devs[@]}" "${opts[@]}" -e buffers=1024 "${groups[@]}"
	sf_wait_exit "$BR_PID"
	[ "$SF_RC" = 2 ] || br_fail "bridge with buffers=1024: exit $SF_RC, expected 2" small
	grep -q 'buffers=1024 is too small' "$SF_TMP/small.err" ||
		br_fail "bridge with buffers=1024: no 'is too small' message" small
	check check_min "$min"
	[ "$SF_RC" = 0 ] || br_fail "--check -e buffers=$min: exit $SF_RC, expected 0" check_min
	grep -q "receive queues: IB one SRQ per worker, RoCE one SRQ per worker, depth [0-9]*; buffers=$min, at least $min" \
		"$SF_TMP/check_min.out" || br_fail "--check does not state the minimum $min" check_min
	if [ "$mode" = srq20 ]; then
		# The minimum does not grow with the channel pairs: one group's is not smaller
		# (one pair holds its sends' buffers for its peer, 20 pairs on an SRQ do not).
		one=$(timeout -k 5 30 "$IB2ROCE" --check --control "$SF_TMP/one.sock" "${devs[@]}" \
			"${opts[@]}" -e buffers=1024 -m 239.1.3.1 2>&1 >/dev/null |
			sed -n 's/.* at least \([0-9]*\) .*/\1/p' || true)
		sf_log "minimum with $ngroups groups: $min, with one: $one"
		[ -n "$one" ] && [ "$min" -le "$one" ] ||
			br_fail "$ngroups groups need $min buffers, one group ${one:-?}" check_min
	fi

	# The minimum forwards one-sided load: more packets than the pool, each way in turn.
	br_bridge bridge "$ngroups" "${devs[@]}" "${opts[@]}" -e buffers="$min" "${groups[@]}"
	# The minimum counts caches of 512: at the minimum nothing is left for larger ones.
	con_expect_in "$(con_ok bridge buffers)" "^worker caches \(each spills beyond 512 buffers\):$" \
		"buffers: the smallest pool's cache size"
	n=$(((min + 2000) / ngroups))
	total=$((n * ngroups))
	sf_log "buffers=$min, $total packets each way"
	br_listen to_roce "$ROCE_NET.2" -g "$group" --groups "$ngroups" -n "$total" --verify --imm \
		--timeout 40
	br_send send_ib "$IB_NET.2" -g "$group" --groups "$ngroups" -n "$n" --imm --rate 2000 \
		--timeout 40
	br_expect_listener to_roce "$total" "$ngroups" "$ngroups"
	br_listen to_ib "$IB_NET.3" -g "$group" --groups "$ngroups" -n "$total" --verify --imm \
		--timeout 40
	br_send send_roce "$ROCE_NET.4" -g "$group" --groups "$ngroups" -n "$n" --imm --rate 2000 \
		--timeout 40
	br_expect_listener to_ib "$total" "$ngroups" "$ngroups"
fi

br_stop bridge
br_expect bridge IB rx_starved 0
br_expect bridge RoCE rx_starved 0
if [ "$mode" != pairs ]; then
	br_expect bridge IB fwd_pkts "$total"
	br_expect bridge RoCE fwd_pkts "$total"
fi
sf_expect_counter sim_ib0 out_of_buffer 0
sf_expect_counter sim_roce0 out_of_buffer 0
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
