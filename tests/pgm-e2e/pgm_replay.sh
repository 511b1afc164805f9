#!/bin/bash
# End to end: the PGM session OpenPGM produced (tests/pgm/fixtures/openpgm-session.pcap:
# 40 packets, SPM, ODATA, NAK, NCF, RDATA, SPM with OPT_FIN) replayed with pgmreplay as
# UD multicast datagrams through the bridge on the simulated fabric.
#
# Usage: pgm_replay.sh TEST
#   ib-to-roce       sender sim_ib1 -> bridge (sim_ib0/sim_roce0) -> receiver sim_roce2.
#                    Every payload arrives byte-identical; the bridge's IB stream line is
#                    the fixture's (openpgm-session.streams: SQNs, counts, gaps exactly
#                    as OpenPGM produced them); IB rx = fwd = pgm = 40, no drop.
#   gap              the same with ODATA SQN 10 and 11 left out by the sender: the other
#                    38 packets arrive byte-identical and the stream line shows one more
#                    gap of two SQNs (see expect_gap_line).
#   roce-to-ib-loop  sender sim_roce3 -> receiver sim_ib2, checked the same way on the
#                    RoCE side; then, in the same bridge run, the same stream (same TSI)
#                    replayed from the IB side (sim_ib1): its downstream packets are PGM
#                    loops (the stream's origin is RoCE), dropped and counted, and a
#                    RoCE receiver gets none of them; its upstream packets (the NAKs) are
#                    never loops and cross to RoCE (pgm/stream.c pgm_stream_update(),
#                    docs/pgm.md "Loop avoidance").
#
# Environment (set by meson.build): SIMLIB, SIMFAB (see ../lib/sf.sh), IB2ROCE the
# bridge, PGMREPLAY, PGMTOOL (tests/pgm/pgmtool), PGM_FIXTURES (tests/pgm/fixtures).
set -eu
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

: "${IB2ROCE:?IB2ROCE must name the ib2roce program}"
: "${BCOM:?BCOM must name the bcom program}"
: "${PGMREPLAY:?PGMREPLAY must name the pgmreplay program}"
: "${PGMTOOL:?PGMTOOL must name tests/pgm/pgmtool}"
: "${PGM_FIXTURES:?PGM_FIXTURES must name tests/pgm/fixtures}"

GROUP=239.192.0.1
PCAP=$PGM_FIXTURES/openpgm-session.pcap
STREAMS=$PGM_FIXTURES/openpgm-session.streams
NPKTS=40  # PGM packets in the capture (fixtures/README.md)
NAK=8     # PGM type of a NAK
GAP_US=2000

usage() {
	echo "usage: $0 ib-to-roce|gap|roce-to-ib-loop" >&2
	exit 2
}

[ $# = 1 ] || usage
case $1 in
ib-to-roce | gap | roce-to-ib-loop) ;;
*) usage ;;
esac
sf_init "pgm-$1"
T=$SF_TMP

# ---- processes ----

# files NAME...: the output files of the named processes, for sf_fail.
files() {
	local n

	for n in "$@"; do
		printf '%s\n' "$T/$n.out" "$T/$n.err"
	done
}

# fail MSG NAME...: fail, showing the named processes' output and the port counters.
fail() {
	local msg=$1

	shift
	"$SIMFAB" counters >"$T/simfab-counters.out" 2>&1 || true
	# shellcheck disable=SC2046 # file names without blanks
	sf_fail "$msg" $(files "$@") "$T/simfab-counters.out"
}

# start NAME SECS CMD...: run CMD in the background under timeout, stdout in
# $T/NAME.out, stderr in $T/NAME.err; its timeout process in NAME_pid.
start() {
	local name=$1 secs=$2

	shift 2
	: >"$T/$name.out"
	: >"$T/$name.err"
	timeout -k 5 "$secs" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	SF_PIDS="$SF_PIDS $!"
	printf -v "${name}_pid" '%s' "$!"
}

pid_of() {
	local v="${1}_pid"

	printf '%s\n' "${!v}"
}

# bridge_start: the bridge under test, bridging GROUP between sim_ib0 and sim_roce0;
# returns once both sides joined.
bridge_start() {
	local pid

	start bridge 50 "$IB2ROCE" --debug --control "$T/bridge.sock" -d sim_ib0 -r sim_roce0 \
		--workers 1 --idle backoff \
		-e statint=0 -m "$GROUP"
	pid=$(pid_of bridge)
	t_wait_until 20 bridge_joined "$pid" || fail "the bridge did not join both sides within 20 s" bridge
}

# bridge_joined PID: the bridge joined GROUP on both sides; fails the test when it did
# not and PID exited.
bridge_joined() {
	grep -q "IB joined $GROUP" "$T/bridge.err" && grep -q "RoCE joined $GROUP" "$T/bridge.err" &&
		return 0
	kill -0 "$1" 2>/dev/null || fail "the bridge exited before joining" bridge
	return 1
}

# bridge_stop: the console's `tsi` first, then SIGINT; the bridge must exit 0 within 10 s
# with its final counters, whose stream lines are what `tsi` showed (nothing moved).
bridge_stop() {
	local tpid

	"$BCOM" --control "$T/bridge.sock" tsi >"$T/tsi.out" 2>&1 || fail "bcom tsi failed" bridge
	tpid=$(pid_of bridge)
	kill -INT "$(sf_child "$tpid")" 2>/dev/null || fail "the bridge is not running" bridge
	t_wait_until 10 t_pid_gone "$tpid" || fail "the bridge did not exit within 10 s of SIGINT" bridge
	sf_wait_exit "$tpid"
	[ "$SF_RC" = 0 ] || fail "the bridge exited with status $SF_RC" bridge
	grep -q '^ib2roce: final counters$' "$T/bridge.out" ||
		fail "the bridge printed no final counters" bridge
	grep '^pgm side=' "$T/bridge.out" | cmp -s - "$T/tsi.out" ||
		fail "bcom tsi differs from the final stream lines: $(cat "$T/tsi.out")" bridge
	[ -s "$T/tsi.out" ] || fail "bcom tsi showed no stream" bridge
}

# recv_start NAME ADDR COUNT [LINGER_MS]: pgmreplay recv on the device of ADDR, expecting
# COUNT datagrams and no more: it keeps listening LINGER_MS (default 1000) after the
# last one (with COUNT 0: after joining). Returns once it joined.
recv_start() {
	start "$1" 30 "$PGMREPLAY" recv -b "$2" -g "$GROUP" -n "$3" -o "$T/$1.rec" \
		--timeout 20 --linger "${4:-1000}"
	sf_wait_line "$T/$1.out" '^pgmreplay: joined ' "$(pid_of "$1")" 20
}

# recv_end NAME: the receiver must exit 0 (exactly COUNT datagrams).
recv_end() {
	sf_wait_exit "$(pid_of "$1")"
	[ "$SF_RC" = 0 ] || fail "receiver $1 exited with status $SF_RC" "$1" bridge
}

# replay NAME ADDR EXPECTED_SENT ARG...: pgmreplay send from the device of ADDR, to the
# end; it must exit 0 having sent EXPECTED_SENT packets.
replay() {
	local name=$1 addr=$2 want=$3

	shift 3
	start "$name" 30 "$PGMREPLAY" send -b "$addr" -g "$GROUP" --pcap "$PCAP" \
		--gap-us "$GAP_US" "$@"
	sf_wait_exit "$(pid_of "$name")"
	[ "$SF_RC" = 0 ] || fail "sender $name exited with status $SF_RC" "$name"
	grep -q "^pgmreplay: sent=$want skipped=[0-9]* not_udp=0 records=$NPKTS\$" "$T/$name.out" ||
		fail "sender $name did not send $want packets" "$name"
}

# same_records EXPECTED NAME: the receiver's record file is EXPECTED, byte for byte.
same_records() {
	cmp "$1" "$T/$2.rec" >"$T/cmp.out" 2>&1 ||
		fail "receiver $2 did not get the expected payloads byte for byte: $(cat "$T/cmp.out")" \
			"$2" bridge
}

# ---- the bridge's final counters ----

# field SIDE KEY: a value of the bridge's final counter line of SIDE (IB or RoCE);
# drop_<reason> is 0 when not printed.
field() {
	local line v

	line=$(grep "^$1 sim_" "$T/bridge.out" || true)
	[ -n "$line" ] || fail "no final '$1' counter line" bridge
	v=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$2=\([0-9][0-9]*\)\$/\1/p")
	if [ -z "$v" ]; then
		case $2 in
		drop_*) v=0 ;;
		*) fail "no $2 in the final $1 counter line" bridge ;;
		esac
	fi
	printf '%s\n' "$v"
}

# expect SIDE KEY=VALUE...: final counters of SIDE.
expect() {
	local side=$1 kv v

	shift
	for kv in "$@"; do
		v=$(field "$side" "${kv%%=*}")
		[ "$v" = "${kv#*=}" ] || fail "bridge $side ${kv%%=*}=$v, expected ${kv#*=}" bridge
	done
}

# expect_port DEV KEY=VALUE...: simfab port counters.
expect_port() {
	local dev=$1 kv

	shift
	for kv in "$@"; do
		sf_expect_counter "$dev" "${kv%%=*}" "${kv#*=}"
	done
}

# pgm_line SIDE: the bridge's only stream line for SIDE, without the "pgm side=SIDE "
# prefix: the format of `pgmtool streams` plus " loops=N opx_discard=N".
pgm_line() {
	local n

	n=$(grep -c "^pgm side=$1 " "$T/bridge.out") || n=0
	[ "$n" = 1 ] || fail "$n stream lines for side $1, expected 1" bridge
	sed -n "s/^pgm side=$1 //p" "$T/bridge.out"
}

# expect_pgm_line SIDE EXPECTED LOOPS: the SIDE stream line is EXPECTED (a
# `pgmtool streams` line) followed by " loops=LOOPS opx_discard=0".
expect_pgm_line() {
	local got want

	got=$(pgm_line "$1")
	want="$2 loops=$3 opx_discard=0"
	[ "$got" = "$want" ] ||
		fail "bridge $1 stream line differs:
  got:      $got
  expected: $want" bridge
}

# ---- expectations ----

# The stream line of the whole capture, as recorded with the fixtures.
FIXTURE_LINE=$(grep '^stream ' "$STREAMS")
[ "$(printf '%s\n' "$FIXTURE_LINE" | wc -l)" = 1 ] || sf_fail "$STREAMS: not one stream line"
for tok in odata=20 rdata=3 nak=3 ncf=3 gaps=2 missed=3 late=0 repairs=3 state=fin; do
	case " $FIXTURE_LINE " in
	*" $tok "*) ;;
	*) sf_fail "$STREAMS is not the session these tests expect (no $tok): $FIXTURE_LINE" ;;
	esac
done

# streams_of PCAP: the stream line `pgmtool streams` (pgm/ in one process, no bridge)
# gives for a capture.
streams_of() {
	"$PGMTOOL" streams "$1" >"$T/pgmtool.out" 2>&1 || sf_fail "pgmtool streams $1" "$T/pgmtool.out"
	grep '^stream ' "$T/pgmtool.out"
}

# Skipping ODATA 10 and 11 (test gap). The capture's ODATA SQNs are 0-4, 7-20 and 22 in
# that order (OpenPGM's 5, 6 and 21 were dropped on the way and repaired by RDATA later),
# so the account changes only in: odata 20 -> 18; gaps 2 -> 3 (9 -> 12 is a jump like
# 4 -> 7 and 20 -> 22); missed 3 -> 5 (10 and 11 are never seen: no RDATA repairs them,
# repairs stays 3, late stays 0); SPMs, NAKs, NCFs, the window, the last SQNs and the
# FIN state are untouched. The same line must come out of pgmtool for the capture
# filtered the same way (pgm/ without the bridge).
SKIP_ARGS="--skip-sqn 10 --skip-sqn 11"
expect_gap_line() {
	local reasoned filtered

	reasoned=$(printf '%s\n' "$FIXTURE_LINE" |
		sed -e 's/ odata=20 / odata=18 /' -e 's/ gaps=2 missed=3 / gaps=3 missed=5 /')
	# shellcheck disable=SC2086
	"$PGMREPLAY" filter --pcap "$PCAP" $SKIP_ARGS -o "$T/gap.pcap" >"$T/filter.out" 2>&1 ||
		sf_fail "pgmreplay filter" "$T/filter.out"
	grep -q "^pgmreplay: filter records=$NPKTS kept=38 skipped=2 not_udp=0\$" "$T/filter.out" ||
		sf_fail "pgmreplay filter did not leave out exactly 2 packets" "$T/filter.out"
	filtered=$(streams_of "$T/gap.pcap")
	[ "$filtered" = "$reasoned" ] || sf_fail "pgmtool on the filtered capture disagrees:
  pgmtool:  $filtered
  expected: $reasoned"
	printf '%s\n' "$reasoned"
}

# ---- the tests ----

# One direction: with the bridge running, a receiver on RX_ADDR expecting NRECV
# datagrams, a sender on TX_ADDR sending NSENT packets of the capture (SELECT args); the
# receiver must get exactly the records of EXPECTED_REC.
# Args: TX_ADDR RX_ADDR NSENT NRECV EXPECTED_REC SELECT...
one_way() {
	local tx=$1 rx=$2 nsent=$3 nrecv=$4 exp=$5

	shift 5
	recv_start rx "$rx" "$nrecv"
	replay tx "$tx" "$nsent" "$@"
	recv_end rx
	same_records "$exp" rx
}

# ib-to-roce and gap. SELECT: the sender's selection.
test_ib_to_roce() {
	local nsent=$1 line=$2

	shift 2
	"$PGMREPLAY" expect --pcap "$PCAP" "$@" -o "$T/expected.rec" >"$T/expect.out" 2>&1 ||
		sf_fail "pgmreplay expect" "$T/expect.out"
	bridge_start
	one_way 198.18.0.2 198.19.0.3 "$nsent" "$nsent" "$T/expected.rec" "$@"
	bridge_stop

	expect_pgm_line IB "$line" 0
	if grep -q '^pgm side=RoCE ' "$T/bridge.out"; then
		fail "a RoCE-side stream line: the bridge accounted packets on the wrong side" bridge
	fi
	expect IB rx_pkts="$nsent" fwd_pkts="$nsent" drops=0 pgm_pkts="$nsent" \
		pgm_malformed=0 pgm_bad_csum=0
	expect RoCE tx_pkts="$nsent" rx_pkts=0 fwd_pkts=0 drops=0 pgm_pkts=0
	expect_port sim_ib1 xmit_pkts="$nsent"
	expect_port sim_roce0 xmit_pkts="$nsent"
	expect_port sim_roce2 rcv_pkts="$nsent" out_of_buffer=0
}

test_roce_to_ib_loop() {
	local naks down ib_line

	"$PGMREPLAY" expect --pcap "$PCAP" -o "$T/expected.rec" >"$T/expect.out" 2>&1 ||
		sf_fail "pgmreplay expect" "$T/expect.out"
	"$PGMREPLAY" expect --pcap "$PCAP" --type "$NAK" -o "$T/naks.rec" >"$T/naks.out" 2>&1 ||
		sf_fail "pgmreplay expect --type $NAK" "$T/naks.out"
	naks=$(sed -n 's/^pgmreplay: expect .* kept=\([0-9]*\) .*/\1/p' "$T/naks.out")
	[ "$naks" = 3 ] || sf_fail "the capture has ${naks:-no} NAKs, expected 3" "$T/naks.out"
	down=$((NPKTS - naks)) # SPM, ODATA, RDATA, NCF: downstream

	bridge_start
	# 1. RoCE -> IB: the stream's first packet arrives on RoCE: RoCE is its origin.
	one_way 198.19.0.4 198.18.0.3 "$NPKTS" "$NPKTS" "$T/expected.rec"
	expect_port sim_ib2 rcv_pkts="$NPKTS" out_of_buffer=0

	# 2. The same TSI shows up on IB (as if a second bridge or a router brought it back),
	# downstream packets only (SPM, POLL, ODATA, RDATA, NCF): every one is a loop,
	# dropped. A receiver on RoCE gets nothing: it listens from before the first packet
	# until 3 s after joining, and must still be listening when the sender is done.
	recv_start quiet 198.19.0.3 0 3000
	replay tx2 198.18.0.2 "$down" --type 0 --type 1 --type 4 --type 5 --type 10
	kill -0 "$(pid_of quiet)" 2>/dev/null ||
		fail "the RoCE receiver stopped listening before the replay ended" quiet tx2
	recv_end quiet
	[ ! -s "$T/quiet.rec" ] || fail "looped packets were bridged to RoCE" quiet bridge

	# 3. The whole capture again from IB: the NAKs are upstream (receivers beyond the
	# bridge asking the source for repairs), never a loop: they, and only they, cross to
	# RoCE, byte-identical.
	one_way 198.18.0.2 198.19.0.3 "$NPKTS" "$naks" "$T/naks.rec"
	bridge_stop

	# RoCE side: the whole session, accounted as pgm/ accounts the capture.
	expect_pgm_line RoCE "$FIXTURE_LINE" 0
	# IB side: loops are not counted by type, so only the NAKs of step 3 are; the
	# stream-wide state (SQNs, gaps, FIN) is the origin side's, unchanged by the loops;
	# loops = the downstream packets of steps 2 and 3.
	ib_line=$(printf '%s\n' "$FIXTURE_LINE" |
		sed -E 's/ (spm|poll|odata|rdata|ncf)=[0-9]+/ \1=0/g')
	expect_pgm_line IB "$ib_line" $((2 * down))

	expect RoCE rx_pkts="$NPKTS" fwd_pkts="$NPKTS" drops=0 pgm_pkts="$NPKTS" \
		pgm_malformed=0 tx_pkts="$naks"
	expect IB rx_pkts=$((down + NPKTS)) fwd_pkts="$naks" drops=$((2 * down)) \
		drop_pgm=$((2 * down)) pgm_pkts=$((down + NPKTS)) pgm_malformed=0 \
		tx_pkts="$NPKTS"
	expect_port sim_roce3 xmit_pkts="$NPKTS"
	expect_port sim_ib1 xmit_pkts=$((down + NPKTS))
	expect_port sim_roce0 xmit_pkts="$naks"
	expect_port sim_roce2 rcv_pkts="$naks" out_of_buffer=0
}

case $1 in
ib-to-roce)
	test_ib_to_roce "$NPKTS" "$FIXTURE_LINE"
	;;
gap)
	gap_line=$(expect_gap_line)
	# shellcheck disable=SC2086
	test_ib_to_roce 38 "$gap_line" $SKIP_ARGS
	;;
roce-to-ib-loop)
	test_roce_to_ib_loop
	;;
esac
sed 's/^/bridge: /' "$T/bridge.out" >&2
sf_log PASS
