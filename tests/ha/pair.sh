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
# 5. Handover RoCE -> IB: zero loss, no loops (hop-limit marker, --peer).
# 6. SIGTERM of the active bridge (b) with a reachable peer: it hands over first, zero
#    loss.
# 7. `bcom shutdown` of the active bridge (b) with a reachable peer: it hands over first,
#    zero loss.
# 8. b restarted, made active, killed (-9), then `role active` on a (manual failover):
#    the gap (packets lost) is printed; packets after it arrive. a's final counters add
#    up: received = forwarded + standby + drops (br_conservation).
# In 3-7 the duplicates (printed) are at most the packets sent while the handover ran,
# with slack (dup_bound): never one burst in general (docs/operations.md).
# Bad console commands and options change nothing (exit 1 / exit 2).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
: "${BCOM:?BCOM must name the bcom program}"

sf_init ha-pair
g1=239.1.2.3
g2=239.1.2.4
n=200

# standby_pkts NAME SIDE: the standby counter of a running bridge.
standby_pkts() {
	con_must "$1" ha
	sed -n "s/^$2 standby_pkts=\([0-9]*\)$/\1/p" "$SF_TMP/bcom.out"
}

# timed CMD...: run CMD; WINDOW_MS is how long it took.
timed() {
	local t0

	t0=$(date +%s%N)
	"$@"
	WINDOW_MS=$((($(date +%s%N) - t0) / 1000000))
}

# dup_bound NAME WHAT: the duplicates of a handover that took WINDOW_MS are at most the
# packets that reached both bridges between the peer's switch and ours (both inside the
# window) plus a burst per bridge (a worker that loaded the role before the switch
# forwards the rest of its burst, engine/fwd.c); 0.5 s of slack at the stream's rate
# covers a sender catching up after a descheduling and the peer's receive backlog. Not a
# timing assertion: a slow machine makes the window longer, and the bound with it.
dup_bound() {
	local bound=$((2000 * (WINDOW_MS + 500) / 1000 + 2 * 32))

	sf_log "$2: the handover took $WINDOW_MS ms: duplicates $DUP, bound $bound"
	[ "$DUP" -le "$bound" ] || br_fail "$2: $DUP duplicates, more than $bound" "$1"
}

# stream NAME COUNT: listener NAME on RoCE for g1 (no count: it may see duplicates), a
# sender of COUNT packets on IB started in the background (NAME_send).
stream() {
	br_listen "$1" "$ROCE_NET.2" -g "$g1" --verify --imm --any-source --rq 16384 --timeout 60
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
ha_role_is a default active
ha_role_is b default standby
ha_role_is b p2 standby

# 1. One bridge forwards, the standby counts.
br_listen p1 "$ROCE_NET.2" -g "$g1" -n "$n" --verify --imm --any-source --timeout 30
br_send p1_send "$IB_NET.2" -g "$g1" -n "$n" --imm --rate 10000
br_expect_listener p1 "$n" 1
v=$(standby_pkts b IB)
[ "$v" = "$n" ] || br_fail "bridge b: IB standby_pkts=$v, expected $n" b

# 2. Two partitions split over the bridges: b takes p2.
con_must b role p2 active
con_must a role p2 standby
ha_role_is b p2 active
ha_role_is a p2 standby
# A reload keeps the roles (--role is the role at start) and the partitions.
con_must b reload
ha_role_is b p2 active
ha_role_is b default standby
br_listen p2 "$ROCE_NET.2" -g "$g1" --groups 2 -n $((2 * n)) --verify --imm --any-source --timeout 30
br_send p2_send "$IB_NET.2" -g "$g1" --groups 2 -n "$n" --imm --rate 10000
br_expect_listener p2 $((2 * n)) 1 2
con_must a stats --json
grep -q '"partitions":\[{"name":"default","role":"active"' "$SF_TMP/bcom.out" ||
	br_fail "bridge a: stats --json has no active default partition: $(head -c 600 "$SF_TMP/bcom.out")" a

# 3. Planned handover of the default partition from a to b during a stream.
m=4000
stream p3 "$m"
sleep 1
timed con_must a handover default
ha_role_is a default standby
ha_role_is b default active
stream_end p3 "$m"
dup_bound p3 "handover a -> b"
sf_log "handover a -> b: sent $m, lost $LOST, duplicates $DUP"
[ "$LOST" = 0 ] || br_fail "handover lost $LOST packets (duplicates $DUP)" p3

# 4. Role switch by hand, make before break (a active first, then b standby).
stream p4 "$m"
sleep 1
timed eval 'con_must a role default active; con_must b role default standby'
stream_end p4 "$m"
dup_bound p4 "role switch b -> a"
sf_log "role switch b -> a: sent $m, lost $LOST, duplicates $DUP"
[ "$LOST" = 0 ] || br_fail "role switch lost $LOST packets (duplicates $DUP)" p4
con_must a ha
grep -q '^default  *active .* 2  *console role command$' "$SF_TMP/bcom.out" ||
	br_fail "bridge a: ha does not show 2 transitions, the last by the console: $(cat "$SF_TMP/bcom.out")" a

# 5. The other direction during a switch: RoCE -> IB, the IB listener gets each packet
#    once, and neither bridge forwards the other's IB copies back (hop-limit marker) or
#    its RoCE copies (--peer).
br_listen p5 "$IB_NET.3" -g "$g1" --verify --imm --any-source --rq 16384 --timeout 60
br_send_start p5_send "$ROCE_NET.2" -g "$g1" -n "$m" --imm --rate 2000
sleep 1
timed con_must a handover
stream_end p5 "$m"
dup_bound p5 "handover a -> b (RoCE -> IB)"
sf_log "handover a -> b (RoCE -> IB): sent $m, lost $LOST, duplicates $DUP"
[ "$LOST" = 0 ] || br_fail "handover RoCE -> IB lost $LOST packets (duplicates $DUP)" p5
ha_role_is a default standby
ha_role_is a p2 standby

# 6. SIGTERM of the active bridge (b) hands over first: zero loss.
stream p6 "$m"
sleep 1
# shellcheck disable=SC2016 # expanded by eval
timed eval 'kill -TERM "$(sf_child "$(br_pid b)")"; sf_wait_exit "$(br_pid b)"'
[ "$SF_RC" = 0 ] || br_fail "bridge b exited with status $SF_RC after SIGTERM" b
stream_end p6 "$m"
dup_bound p6 "SIGTERM of the active bridge"
sf_log "SIGTERM of the active bridge (handover): sent $m, lost $LOST, duplicates $DUP"
[ "$LOST" = 0 ] || br_fail "SIGTERM handover lost $LOST packets (duplicates $DUP)" p6
grep -q 'partition default: active -> standby (SIGTERM: peer active)' "$SF_TMP/b.err" ||
	br_fail "bridge b did not hand over on SIGTERM" b
v=$(br_field b IB standby)
[ "$v" -gt 0 ] || br_fail "bridge b: no IB standby packets in its final counters" b
ha_role_is a default active

# 7. The console's shutdown on the active bridge hands over first too, as SIGTERM.
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" \
	--ha-peer-control "$SF_TMP/a.sock" --partition p2:"$g2" --role standby -m "$g1" -m "$g2"
con_must a handover default
ha_role_is b default active
ha_role_is a p2 active
stream p7s "$m"
sleep 1
timed con_must b shutdown
grep -q '^partition default: active -> standby$' "$SF_TMP/bcom.out" ||
	br_fail "bcom b shutdown did not hand over: $(cat "$SF_TMP/bcom.out")" b
sf_wait_exit "$(br_pid b)"
[ "$SF_RC" = 0 ] || br_fail "bridge b exited with status $SF_RC after shutdown" b
stream_end p7s "$m"
dup_bound p7s "console shutdown"
sf_log "console shutdown of the active bridge (handover): sent $m, lost $LOST, duplicates $DUP"
[ "$LOST" = 0 ] || br_fail "console shutdown handover lost $LOST packets (duplicates $DUP)" p7s
grep -q 'partition default: active -> standby (console shutdown: peer active)' "$SF_TMP/b.err" ||
	br_fail "bridge b did not log the handover of its shutdown" b
ha_role_is a default active

# 8. Manual failover: b restarts standby, takes over, is killed (-9); a is made active.
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" \
	--ha-peer-control "$SF_TMP/a.sock" --partition p2:"$g2" --role standby -m "$g1" -m "$g2"
ha_role_is b default standby
con_must b role default active
con_must a role default standby
stream p8 "$m"
sleep 1
kill -KILL "$(sf_child "$(br_pid b)")"
sleep 0.5
con_must a role default active
stream_end p8 "$m"
sf_log "kill -9 of the active bridge, manual failover: sent $m, lost $LOST (the gap), duplicates $DUP"
[ "$LOST" -lt "$m" ] || br_fail "nothing arrived after the failover" p8
[ "$DUP" = 0 ] || br_fail "failover after a kill: $DUP duplicates" p8

# Bad input changes nothing: console, then options (exit 2).
for cmd in "role bogus" "role nosuch active" "role default active extra" "handover nosuch"; do
	# shellcheck disable=SC2086 # words of the command
	if timeout 20 "$BCOM" --control "$SF_TMP/a.sock" $cmd >"$SF_TMP/bcom.out" 2>&1; then
		br_fail "bcom $cmd succeeded: $(cat "$SF_TMP/bcom.out")" a
	fi
done
grep -q "no partition 'nosuch'" "$SF_TMP/bcom.out" || br_fail "handover nosuch: $(cat "$SF_TMP/bcom.out")" a
ha_role_is a default active
con_must a ha
grep -q '^default  *active .*  console role command$' "$SF_TMP/bcom.out" ||
	br_fail "bridge a: bad commands changed the roles: $(cat "$SF_TMP/bcom.out")" a
br_stop a
br_conservation a sim_ib0 sim_roce0
v=$(br_field a IB standby)
[ "$v" -gt 0 ] || br_fail "bridge a: no IB standby packets in its final counters" a
for bad in "--partition p2" "--partition :$g1" "--partition p2:300.1.1.1" "--role p9=active" \
	"--role maybe" "--partition p1:$g1 --partition p2:$g1"; do
	rc=0
	# shellcheck disable=SC2086 # words of the options
	timeout 20 "$IB2ROCE" --check -d sim_ib0 -r sim_roce0 $bad -m "$g1" >"$SF_TMP/bad.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || sf_fail "ib2roce $bad: exit $rc, expected 2" "$SF_TMP/bad.out"
done
sf_log "PASS"
