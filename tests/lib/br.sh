# shellcheck shell=bash
# tests/lib/br.sh (prefix br_): the bridge's end-to-end tests: bridges, mcpkt listeners
# and senders, final counters; sourced by each test (bash, set -eu) and by con.sh. Sources
# sf.sh (a fabric per test, cleanup trap, Debian's tools, port counters).
#
# Environment (set by tests/bridge/meson.build), besides SIMLIB, SIMFAB, SIM_PRELOAD:
#   IB2ROCE  the bridge program
#   MCPKT    the traffic tool (tests/bridge/mcpkt.c)
#
# Every program runs under `timeout`, so a hung bridge or listener fails the test
# instead of blocking the suite. The bridges always run with --idle backoff: the
# machines the tests run on may have two CPUs, shared by the bridge, the senders and the
# listeners.

: "${IB2ROCE:?IB2ROCE must name the ib2roce program}"
: "${MCPKT:?MCPKT must name the mcpkt test tool}"

[ -z "${T_LIB_BR:-}" ] || return 0
T_LIB_BR=1

# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "${BASH_SOURCE[0]%/*}/sf.sh"

# Addresses of the default topology (docs/simfabric.md), used by the tests.
# shellcheck disable=SC2034
IB_NET=198.18.0
# shellcheck disable=SC2034
ROCE_NET=198.19.0

# br_files NAME...: the output files of the named processes, for sf_fail.
br_files() {
	local n

	for n in "$@"; do
		printf '%s\n' "$SF_TMP/$n.out" "$SF_TMP/$n.err"
	done
}

BR_BRIDGES=""

# br_fail MSG NAME...: fail, showing the output of the named processes (listeners,
# senders), of every bridge started, and the fabric's port counters.
br_fail() {
	local msg=$1 b names=""

	shift
	for b in $BR_BRIDGES; do
		case " $* " in
		*" $b "*) ;;
		*) names="$names $b" ;;
		esac
	done
	"$SIMFAB" counters >"$SF_TMP/simfab-counters.out" 2>&1 || true
	br_final_counters
	# shellcheck disable=SC2046,SC2086 # file names without blanks
	sf_fail "$msg" $(br_files "$@" $names) "$SF_TMP/simfab-counters.out"
}

# br_final_counters: SIGINT to the bridges still running, so that their final counters
# show in a failure report; waits up to 5 s for them.
br_final_counters() {
	local b tpid child

	for b in $BR_BRIDGES; do
		tpid=$(br_pid "$b")
		kill -0 "$tpid" 2>/dev/null || continue
		child=$(cat "/proc/$tpid/task/$tpid/children" 2>/dev/null || true)
		[ -n "$child" ] || continue
		kill -INT "${child%% *}" 2>/dev/null || true
		t_wait_until 5 t_pid_gone "$tpid" || true
	done
}

# br_start NAME SECS CMD...: run one of our programs in the background, bounded by
# timeout, stdout in $SF_TMP/NAME.out, stderr in NAME.err. Sets BR_PID (the timeout
# process, whose exit status is the program's) and records it as NAME_pid.
br_start() {
	local name=$1 secs=$2

	shift 2
	: >"$SF_TMP/$name.out"
	: >"$SF_TMP/$name.err"
	timeout -k 5 "$secs" "$@" >>"$SF_TMP/$name.out" 2>>"$SF_TMP/$name.err" &
	BR_PID=$!
	SF_PIDS="$SF_PIDS $BR_PID"
	printf -v "${name}_pid" '%s' "$BR_PID"
}

# br_min_buffers ARG...: the smallest pool (-e buffers) the bridge accepts with ARG...:
# 1024 (the feature's minimum) when --check accepts that, else the minimum its refusal
# states ("buffers=1024 is too small: this configuration needs at least M (...)").
br_min_buffers() {
	local out rc=0

	out=$(timeout -k 5 30 "$IB2ROCE" --check --control "$SF_TMP/min-buffers.sock" "$@" \
		-e buffers=1024 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		echo 1024
		return
	fi
	out=$(printf '%s\n' "$out" | sed -n 's/.*buffers=1024 is too small: this configuration needs at least \([0-9]*\) .*/\1/p')
	[ "$rc" = 2 ] && [ -n "$out" ] || sf_fail "ib2roce --check $*: exit $rc, no minimum pool stated"
	printf '%s\n' "$out"
}

# br_pid NAME: the timeout process of NAME.
br_pid() {
	local v="${1}_pid"

	printf '%s\n' "${!v}"
}

# br_bridge NAME NGROUPS ARG...: start ib2roce with ARG... (--idle backoff added), and
# wait until both sides joined NGROUPS groups ("IB joined" / "RoCE joined" lines), at
# most BR_JOIN_SECS (default 30 s). Its time limit is BR_BRIDGE_SECS (default 120 s).
br_bridge() {
	local name=$1 ngroups=$2 pid

	shift 2
	BR_BRIDGES="$BR_BRIDGES $name"
	br_start "$name" "${BR_BRIDGE_SECS:-120}" "$IB2ROCE" --debug --control "$SF_TMP/$name.sock" --idle backoff \
		-e statint=0 "$@"
	pid=$BR_PID
	# The exit trap kills the recorded processes (TERM, then KILL): a bridge that does not
	# stop on TERM is killed itself, not only the timeout process above it.
	SF_PIDS="$SF_PIDS $(sf_child "$pid")"
	t_wait_until "${BR_JOIN_SECS:-30}" br_joined "$name" "$ngroups" "$pid" ||
		br_fail "bridge $name: $ngroups joins per side not done in ${BR_JOIN_SECS:-30} s" "$name"
}

# br_joined NAME NGROUPS PID: bridge NAME logged NGROUPS joins on each side; fails the
# test when it did not and PID exited.
br_joined() {
	local ib ro

	ib=$(grep -c '^\[.*\] ib2roce info: IB joined ' "$SF_TMP/$1.err") || ib=0
	ro=$(grep -c '^\[.*\] ib2roce info: RoCE joined ' "$SF_TMP/$1.err") || ro=0
	[ "$ib" -lt "$2" ] || [ "$ro" -lt "$2" ] || return 0
	kill -0 "$3" 2>/dev/null || br_fail "bridge $1 exited before joining" "$1"
	return 1
}

# br_stop NAME: SIGINT to the bridge; it must exit 0 within 10 s and print its final
# counters.
br_stop() {
	local name=$1 tpid child

	tpid=$(br_pid "$name")
	child=$(sf_child "$tpid")
	# The final counters read the NIC's drops from sysfs: let the last ones be published.
	sf_sysfs_settle
	kill -INT "$child" 2>/dev/null || br_fail "bridge $name is not running" "$name"
	t_wait_until 10 t_pid_gone "$tpid" ||
		br_fail "bridge $name did not exit within 10 s of SIGINT" "$name"
	sf_wait_exit "$tpid"
	[ "$SF_RC" = 0 ] || br_fail "bridge $name exited with status $SF_RC" "$name"
	grep -q '^ib2roce: final counters$' "$SF_TMP/$name.out" ||
		br_fail "bridge $name printed no final counters" "$name"
}

# br_alive NAME: fail unless the bridge is still running.
br_alive() {
	kill -0 "$(br_pid "$1")" 2>/dev/null || br_fail "bridge $1 died" "$1"
}

# br_listen NAME DEV_ADDR ARG...: start `mcpkt recv -b DEV_ADDR ARG...` in the background
# and wait for it to have joined.
br_listen() {
	local name=$1 addr=$2

	shift 2
	br_start "$name" 60 "$MCPKT" recv -b "$addr" "$@"
	sf_wait_line "$SF_TMP/$name.out" '^mcpkt: joined ' "$BR_PID" 30
}

# br_send NAME DEV_ADDR ARG...: run `mcpkt send -b DEV_ADDR ARG...` to the end; it must
# exit 0 having sent everything.
br_send() {
	br_send_start "$@"
	br_send_end "$1"
}

# br_send_start NAME DEV_ADDR ARG...: the same in the background; br_send_end NAME waits.
br_send_start() {
	local name=$1 addr=$2

	shift 2
	br_start "$name" 60 "$MCPKT" send -b "$addr" "$@"
}

br_send_end() {
	sf_wait_exit "$(br_pid "$1")"
	[ "$SF_RC" = 0 ] || br_fail "sender $1 exited with status $SF_RC" "$1"
	grep -q '^mcpkt: sent=[0-9]* completed=[0-9]* errors=0 ' "$SF_TMP/$1.out" ||
		br_fail "sender $1: no clean summary" "$1"
}

# br_listen_end NAME: wait for a listener to exit; its exit status in SF_RC, its summary
# line in BR_SUMMARY.
br_listen_end() {
	sf_wait_exit "$(br_pid "$1")"
	BR_SUMMARY=$(grep '^mcpkt: received=' "$SF_TMP/$1.out" || true)
	[ -n "$BR_SUMMARY" ] || br_fail "listener $1 printed no summary (status $SF_RC)" "$1"
}

# br_listen_stop NAME: SIGTERM to a listener started without -n; it prints its summary
# (in BR_SUMMARY) and must exit 0 (nothing corrupt, duplicated or with bad immediate
# data). Its received count in BR_RECEIVED.
br_listen_stop() {
	local tpid

	tpid=$(br_pid "$1")
	if kill -0 "$tpid" 2>/dev/null; then
		kill -TERM "$(sf_child "$tpid")" 2>/dev/null || true
	fi
	br_listen_end "$1"
	[ "$SF_RC" = 0 ] || br_fail "listener $1 failed (status $SF_RC): $BR_SUMMARY" "$1"
	# shellcheck disable=SC2034 # read by the tests
	BR_RECEIVED=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* received=\([0-9]*\) .*/\1/p')
}

# br_expect_listener NAME RECEIVED [SENDERS [GROUPS]]: wait for the listener started
# with -n RECEIVED; it must exit 0 (every packet exactly once, byte-exact, no bad
# immediate data) and have seen SENDERS senders and GROUPS groups when given.
br_expect_listener() {
	local name=$1 want=$2

	br_listen_end "$name"
	[ "$SF_RC" = 0 ] || br_fail "listener $name failed (status $SF_RC): $BR_SUMMARY" "$name"
	case " ${BR_SUMMARY#mcpkt: } " in
	*" received=$want bad=0 dup=0 imm_bad=0 "*) ;;
	*) br_fail "listener $name: expected received=$want bad=0 dup=0 imm_bad=0: $BR_SUMMARY" "$name" ;;
	esac
	if [ $# -ge 3 ] && [[ " $BR_SUMMARY " != *" senders=$3 "* ]]; then
		br_fail "listener $name: expected senders=$3: $BR_SUMMARY" "$name"
	fi
	if [ $# -ge 4 ] && [[ " $BR_SUMMARY " != *" groups=$4 "* ]]; then
		br_fail "listener $name: expected groups=$4: $BR_SUMMARY" "$name"
	fi
}

# br_field NAME SIDE KEY: a value of the bridge's final counter line for SIDE (IB or
# RoCE): rx_pkts, fwd_pkts, tx_pkts, drops, drop_<reason> (0 when not printed), ...
br_field() {
	local line v

	line=$(grep "^$2 " "$SF_TMP/$1.out" || true)
	[ -n "$line" ] || br_fail "bridge $1: no final '$2' counter line" "$1"
	v=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$3=\([0-9][0-9]*\)$/\1/p")
	if [ -z "$v" ]; then
		case $3 in
		drop_*) v=0 ;;
		*) br_fail "bridge $1: no $3 in the $2 counter line" "$1" ;;
		esac
	fi
	printf '%s\n' "$v"
}

# br_nic NAME SIDE: nic_rx_dropped of the final counter line for SIDE: a number, or "-"
# when the port has no such counter.
br_nic() {
	local v

	v=$(grep "^$2 " "$SF_TMP/$1.out" | tr ' ' '\n' | sed -n 's/^nic_rx_dropped=\([0-9][0-9]*\|-\)$/\1/p')
	[ -n "$v" ] || br_fail "bridge $1: no nic_rx_dropped in the $2 counter line" "$1"
	printf '%s\n' "$v"
}

# br_group NAME GROUP KEY: ib_to_roce, roce_to_ib, ib or roce of a group's final line.
br_group() {
	local v

	v=$(awk -v g="$2" -v k="$3" '$1 == "group" && $2 == g {
		for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' \
		"$SF_TMP/$1.out")
	[ -n "$v" ] || br_fail "bridge $1: no $3 for group $2" "$1"
	printf '%s\n' "$v"
}

# br_expect NAME SIDE KEY VALUE: a final counter must have that value.
br_expect() {
	local v

	v=$(br_field "$1" "$2" "$3")
	[ "$v" = "$4" ] || br_fail "bridge $1: $2 $3=$v, expected $4" "$1"
}

# br_expect_group NAME GROUP KEY VALUE
br_expect_group() {
	local v

	v=$(br_group "$1" "$2" "$3")
	[ "$v" = "$4" ] || br_fail "bridge $1: group $2 $3=$v, expected $4" "$1"
}

# br_expect_peer_pair GROUP N NAME...: the final counters of stopped bridges that bridge
# GROUP with --peer set to each other, after N packets each way from native senders:
# each got the senders' packets and the other bridge's copies of the other direction,
# forwarded the former and dropped the latter (IB: the hop-limit marker, loop; RoCE: the
# peer's source address, peer_bridge), N of each per side and per group direction.
br_expect_peer_pair() {
	local group=$1 n=$2 x

	shift 2
	for x in "$@"; do
		br_expect "$x" IB rx_pkts $((2 * n))
		br_expect "$x" IB fwd_pkts "$n"
		br_expect "$x" IB drop_loop "$n"
		br_expect "$x" IB drops "$n"
		br_expect "$x" RoCE rx_pkts $((2 * n))
		br_expect "$x" RoCE fwd_pkts "$n"
		br_expect "$x" RoCE drop_peer_bridge "$n"
		br_expect "$x" RoCE drops "$n"
		br_expect_group "$x" "$group" ib_to_roce "$n"
		br_expect_group "$x" "$group" roce_to_ib "$n"
	done
}

# br_conservation NAME: the final counters of a stopped bridge account for every packet:
# - on each side the named drop counters add up to `drops`;
# - every received packet was forwarded, counted standby (its HA partition is standby
#   here) or dropped for a receive-side reason:
#   rx_pkts = fwd_pkts + standby + drops - drop_tx_full - drop_tx_error (tx_full and tx_error are
#   counted on the channel that failed to send, i.e. against the other side's packets);
# - every packet forwarded from one side was posted on the other or dropped there for
#   lack of send-queue space: fwd_pkts(A) = tx_pkts(B) + drop_tx_full(B);
# - the per-group forward counters (with those of groups left at run time) add up to the
#   side's fwd_pkts;
# - the bridge's device ports agree: simfab xmit_pkts of each bridge port = tx_pkts -
#   drop_tx_error (a send counted in tx_pkts that failed is in drop_tx_error), and every
#   packet the port delivered into one of the bridge's receive buffers (rcv_pkts) was
#   counted in rx_pkts, which also counts the error completions (drop_rx_error) the
#   port did not deliver (not checked with BR_NO_PORT_CHECK=1);
# - what the senders offered to a bridge port was received by the bridge or dropped by
#   its NIC: port rcv_pkts + out_of_buffer = rx_pkts - drop_rx_error + nic_rx_dropped
#   (the bridge's NIC drops since its start, read from sysfs; the fabric is fresh, so
#   the port counts since then too). nic_rx_dropped may be "-" (the port has no
#   hw_counters file) only for a side named in BR_NIC_MISSING (not checked with
#   BR_NO_PORT_CHECK=1);
# - PGM inspection counted each packet once at most (pgm_pkts + pgm_not_pgm + pgm_malformed <=
#   rx_pkts), and every packet when nothing was dropped and inspection was on all along
#   (set BR_PGM_PARTIAL=1 when a test switches it during the run).
# Arguments: NAME IB_DEV ROCE_DEV.
br_conservation() {
	local name=$1 s o dev sum_drops r v rx fwd sb drops txf txe tx_o txf_o key gsum nic oob

	for s in IB RoCE; do
		if [ "$s" = IB ]; then o=RoCE dev=$2 key=ib_to_roce; else o=IB dev=$3 key=roce_to_ib; fi
		rx=$(br_field "$name" "$s" rx_pkts)
		fwd=$(br_field "$name" "$s" fwd_pkts)
		drops=$(br_field "$name" "$s" drops)
		txf=$(br_field "$name" "$s" drop_tx_full)
		txe=$(br_field "$name" "$s" drop_tx_error)
		sum_drops=0
		for r in rx_error no_grh bad_header unicast own loop peer_bridge foreign_source \
			unknown_group mgid_format sendonly_side not_joined side_down bridging_off injected \
			tx_full tx_error pgm too_big; do
			v=$(br_field "$name" "$s" "drop_$r")
			sum_drops=$((sum_drops + v))
		done
		[ "$sum_drops" = "$drops" ] ||
			br_fail "bridge $name: $s drops=$drops but the drop_* counters add up to $sum_drops" "$name"
		sb=$(br_field "$name" "$s" standby)
		[ "$rx" = $((fwd + sb + drops - txf - txe)) ] ||
			br_fail "bridge $name: $s rx_pkts=$rx != fwd_pkts=$fwd + standby=$sb + receive drops=$((drops - txf - txe))" "$name"
		tx_o=$(br_field "$name" "$o" tx_pkts)
		txf_o=$(br_field "$name" "$o" drop_tx_full)
		[ "$fwd" = $((tx_o + txf_o)) ] ||
			br_fail "bridge $name: $s fwd_pkts=$fwd != $o tx_pkts=$tx_o + $o drop_tx_full=$txf_o" "$name"
		# Groups left at run time are summed in the "groups_left" line.
		gsum=$(awk -v k="$key" '$1 == "group" || $1 == "groups_left" { for (i = 2; i <= NF; i++) {
			split($i, kv, "="); if (kv[1] == k) n += kv[2] } } END { print n + 0 }' \
			"$SF_TMP/$name.out")
		[ "$gsum" = "$fwd" ] ||
			br_fail "bridge $name: the groups' $key add up to $gsum, $s fwd_pkts=$fwd" "$name"
		# PGM inspection sees a packet once at most; with nothing dropped, every packet
		# (unless inspection was off, or switched during the run: BR_PGM_PARTIAL=1).
		v=$(($(br_field "$name" "$s" pgm_pkts) + $(br_field "$name" "$s" pgm_not_pgm) +
			$(br_field "$name" "$s" pgm_malformed)))
		[ "$v" -le "$rx" ] ||
			br_fail "bridge $name: $s pgm_pkts + pgm_not_pgm + pgm_malformed = $v > rx_pkts=$rx" "$name"
		[ "$v" = 0 ] || [ "$drops" != 0 ] || [ "${BR_PGM_PARTIAL:-0}" = 1 ] || [ "$v" = "$rx" ] ||
			br_fail "bridge $name: $s inspected $v of rx_pkts=$rx packets, nothing dropped" "$name"
		# The ports' side (BR_NO_PORT_CHECK=1: checked by the caller, e.g. the soak).
		[ "${BR_NO_PORT_CHECK:-0}" = 0 ] || continue
		v=$(sf_counter "$dev" xmit_pkts)
		tx_o=$(br_field "$name" "$s" tx_pkts)
		[ "$v" = $((tx_o - txe)) ] ||
			br_fail "bridge $name: $s tx_pkts=$tx_o - drop_tx_error=$txe but port $dev sent $v" "$name"
		v=$(sf_counter "$dev" rcv_pkts)
		r=$(br_field "$name" "$s" drop_rx_error)
		[ "$v" = $((rx - r)) ] ||
			br_fail "bridge $name: port $dev delivered $v packets, $s rx_pkts=$rx - drop_rx_error=$r" "$name"
		nic=$(br_nic "$name" "$s")
		if [ "$nic" = - ]; then
			[[ " ${BR_NIC_MISSING:-} " == *" $s "* ]] ||
				br_fail "bridge $name: $s nic_rx_dropped unavailable" "$name"
		else
			oob=$(sf_counter "$dev" out_of_buffer)
			[ $((v + oob)) = $((rx - r + nic)) ] ||
				br_fail "bridge $name: port $dev offered rcv_pkts=$v + out_of_buffer=$oob != $s rx_pkts=$rx - drop_rx_error=$r + nic_rx_dropped=$nic" "$name"
		fi
	done
}
