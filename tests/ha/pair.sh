#!/bin/bash
# An HA pair: bridge a (sim_ib0/sim_roce0) and bridge b (sim_ib3/sim_roce3) bridge the
# same groups, each with --peer set to the other and --ha-peer-control to the other's
# console. Asserts counts, never times:
# 1. a active, b standby: the RoCE listener gets each packet exactly once (from a); b
#    counts every packet it received as standby and forwards none.
# 2. Two partitions split over the two bridges (each active for one): each listener gets
#    each packet of both groups exactly once.
# 3. Planned handover (a -> b) during a steady stream: zero loss; duplicates printed.
# 4. Role switch on the console during a stream: a goes standby only after b went active
#    (make before break by hand): zero loss.
# 5. kill -9 of the active bridge (b), then `role active` on a (manual failover): the gap
#    (packets lost) is printed; packets after it arrive.
set -eu
# shellcheck source-path=SCRIPTDIR source=../bridge/lib.sh
. "$(dirname "$0")/../bridge/lib.sh"
: "${BCOM:?BCOM must name the bcom program}"

sf_init ha-pair
g1=239.1.2.3
g2=239.1.2.4
n=200

# bc NAME COMMAND...: bcom to bridge NAME; output in $SF_TMP/bcom.out; must succeed.
bc() {
	local name=$1

	shift
	timeout -k 2 20 "$BCOM" --control "$SF_TMP/$name.sock" "$@" >"$SF_TMP/bcom.out" \
		2>"$SF_TMP/bcom.err" ||
		br_fail "bcom $name $*: failed: $(cat "$SF_TMP/bcom.out" "$SF_TMP/bcom.err")" "$name"
}

# role_is NAME PARTITION ROLE: `ha` of bridge NAME shows PARTITION in ROLE.
role_is() {
	bc "$1" ha
	awk -v p="$2" -v r="$3" '$1 == p && $2 == r { ok = 1 } END { exit !ok }' "$SF_TMP/bcom.out" ||
		br_fail "bridge $1: partition $2 is not $3: $(cat "$SF_TMP/bcom.out")" "$1"
}

# standby_pkts NAME SIDE: the standby counter of a running bridge.
standby_pkts() {
	bc "$1" ha
	sed -n "s/^$2 standby_pkts=\([0-9]*\)$/\1/p" "$SF_TMP/bcom.out"
}

# stream NAME COUNT: listener NAME on RoCE for g1 (no count: it may see duplicates), a
# sender of COUNT packets on IB started in the background (NAME_send).
stream() {
	br_listen "$1" "$ROCE_NET.2" -g "$g1" --verify --imm --any-source --timeout 60
	br_send_start "$1_send" "$IB_NET.2" -g "$g1" -n "$2" --imm --rate 2000
}

# stream_end NAME COUNT: wait for the sender, stop the listener; LOST and DUP set.
stream_end() {
	local rx

	br_send_end "$1_send"
	sleep 1 # the last packets' way through the bridge
	kill -TERM "$(sf_child "$(br_pid "$1")")" 2>/dev/null || true
	br_listen_end "$1"
	rx=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* received=\([0-9]*\) .*/\1/p')
	DUP=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* dup=\([0-9]*\) .*/\1/p')
	case " ${BR_SUMMARY#mcpkt: } " in
	*" bad=0 "*" imm_bad=0 "*) ;;
	*) br_fail "listener $1: corrupt packets: $BR_SUMMARY" "$1" ;;
	esac
	LOST=$(($2 - (rx - DUP)))
}

br_bridge a 2 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" \
	--ha-peer-control "$SF_TMP/b.sock" --partition p2:"$g2" -m "$g1" -m "$g2"
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" \
	--ha-peer-control "$SF_TMP/a.sock" --partition p2:"$g2" --role standby -m "$g1" -m "$g2"
role_is a default active
role_is b default standby
role_is b p2 standby

# 1. One bridge forwards, the standby counts.
br_listen p1 "$ROCE_NET.2" -g "$g1" -n "$n" --verify --imm --any-source --timeout 30
br_send p1_send "$IB_NET.2" -g "$g1" -n "$n" --imm --rate 10000
br_expect_listener p1 "$n" 1
v=$(standby_pkts b IB)
[ "$v" = "$n" ] || br_fail "bridge b: IB standby_pkts=$v, expected $n" b

# 2. Two partitions split over the bridges: b takes p2.
bc b role p2 active
bc a role p2 standby
role_is b p2 active
role_is a p2 standby
br_listen p2 "$ROCE_NET.2" -g "$g1" --groups 2 -n $((2 * n)) --verify --imm --any-source --timeout 30
br_send p2_send "$IB_NET.2" -g "$g1" --groups 2 -n "$n" --imm --rate 10000
br_expect_listener p2 $((2 * n)) 1 2
bc a stats --json
grep -q '"partitions":\[{"name":"default","role":"active"' "$SF_TMP/bcom.out" ||
	br_fail "bridge a: stats --json has no active default partition: $(head -c 600 "$SF_TMP/bcom.out")" a

# 3. Planned handover of the default partition from a to b during a stream.
m=4000
stream p3 "$m"
sleep 1
bc a handover default
role_is a default standby
role_is b default active
stream_end p3 "$m"
sf_log "handover a -> b: sent $m, lost $LOST, duplicates $DUP"
[ "$LOST" = 0 ] || br_fail "handover lost $LOST packets (duplicates $DUP)" p3

# 4. Role switch by hand, make before break (a active first, then b standby).
stream p4 "$m"
sleep 1
bc a role default active
bc b role default standby
stream_end p4 "$m"
sf_log "role switch b -> a: sent $m, lost $LOST, duplicates $DUP"
[ "$LOST" = 0 ] || br_fail "role switch lost $LOST packets (duplicates $DUP)" p4
bc a ha
grep -q '^default  *active .* 2  *console role command$' "$SF_TMP/bcom.out" ||
	br_fail "bridge a: ha does not show 2 transitions, the last by the console: $(cat "$SF_TMP/bcom.out")" a

# 5. Manual failover: b takes default over, is killed (-9), a is made active again.
bc b role default active
bc a role default standby
stream p5 "$m"
sleep 1
kill -KILL "$(sf_child "$(br_pid b)")"
sleep 0.5
bc a role default active
stream_end p5 "$m"
sf_log "kill -9 of the active bridge, manual failover: sent $m, lost $LOST (the gap), duplicates $DUP"
[ "$LOST" -lt "$m" ] || br_fail "nothing arrived after the failover" p5
[ "$DUP" = 0 ] || br_fail "failover after a kill: $DUP duplicates" p5

br_stop a
br_conservation a sim_ib0 sim_roce0
v=$(br_field a IB standby)
[ "$v" -gt 0 ] || br_fail "bridge a: no IB standby packets in its final counters" a
sf_log "PASS"
