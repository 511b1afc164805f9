#!/bin/bash
# Three bridges between the same two fabrics, in any roles: loop prevention (--peer
# naming the two others, the IB hop-limit marker) holds whatever the roles, while the
# roles change under traffic in both directions.
#
# The default topology has four devices per fabric: this test loads its own (the default
# one plus sim_ib4, sim_ib5, sim_roce4 and sim_roce5, docs/simfabric.md "Topology
# files"). Bridges a (sim_ib0/sim_roce0, 1 worker), b (sim_ib3/sim_roce3) and c
# (sim_ib4/sim_roce4, both event-driven) bridge g1 (sent on IB by sim_ib1) and g2 (sent
# on RoCE by sim_roce1). Each group has two listeners on the other fabric: one counting
# duplicates per source (sim_ib2/sim_roce2: the same packet twice from one bridge is a
# duplicate) and one across sources (sim_ib5/sim_roce5, --any-source: a packet missing
# from every bridge is lost). While the senders run, the set of active bridges goes
# through a schedule in which each bridge is switched several times and one, two or three
# are active at once; each change is make before break (the new ones active first).
# Asserts:
# - zero loss (some bridge was active at every moment; on a loaded machine at most what
#   the bridges' NICs dropped, nic_rx_dropped), nothing corrupt;
# - no packet circulates: no listener got a packet twice from one bridge, each listener
#   got exactly the packets the bridges forwarded to its fabric (the sum of the groups'
#   forward counters; so each packet once per bridge active when it passed, never
#   more), and at most three sources;
# - each bridge saw each original packet exactly once (forwarded or standby) and dropped
#   exactly the other two bridges' copies: IB copies by the hop-limit marker (loop),
#   RoCE copies by --peer (peer_bridge);
# - each bridge's counters add up (br_conservation).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
: "${BCOM:?BCOM must name the bcom program}"

sf_init ha-three
topo=$SF_TMP/topology
{
	printf 'segment ib0 ib\nsegment eth0 eth\n'
	for i in 0 1 2 3 4 5; do
		printf 'device sim_ib%d segment ib0 lid %d ipv4 %s.%d/24\n' "$i" $((i + 1)) "$IB_NET" $((i + 1))
	done
	for i in 0 1 2 3 4 5; do
		printf 'device sim_roce%d segment eth0 ipv4 %s.%d/24 mac 02:00:00:00:01:0%d\n' "$i" \
			"$ROCE_NET" $((i + 1)) $((i + 1))
	done
} >"$topo"
"$SIMFAB" topology "$topo" >/dev/null || sf_fail "simfab topology $topo refused" "$topo"
export SIMFABRIC_TOPOLOGY=$topo
"$SIMFAB" reset >/dev/null

g1=239.1.2.3 # IB -> RoCE
g2=239.1.2.4 # RoCE -> IB
rate=1000    # per sender
runs=1000    # packets per sender run

br_bridge a 2 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" --peer "$ROCE_NET.5" \
	-m "$g1" -m "$g2"
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" --peer "$ROCE_NET.5" \
	--role standby -m "$g1" -m "$g2"
br_bridge c 2 -d sim_ib4 -r sim_roce4 --workers 0 --peer "$ROCE_NET.1" --peer "$ROCE_NET.4" \
	--role standby -m "$g1" -m "$g2"

# Listeners: NAME ADDRESS GROUP [--any-source].
for l in ib_src:"$IB_NET.3":"$g2" ib_any:"$IB_NET.6":"$g2":--any-source \
	roce_src:"$ROCE_NET.3":"$g1" roce_any:"$ROCE_NET.6":"$g1":--any-source; do
	IFS=: read -r name addr g any <<<"$l"
	# shellcheck disable=SC2086 # --any-source or nothing
	br_start "$name" 200 "$MCPKT" recv -b "$addr" -g "$g" --verify --imm --rq 16384 \
		--timeout 180 $any
	sf_wait_line "$SF_TMP/$name.out" '^mcpkt: joined ' "$BR_PID" 30
done
# Senders: runs of $runs packets one after the other until $SF_TMP/stop exists (a run
# cannot be stopped in its middle: mcpkt waits for its last completions).
for s in tx_ib:"$IB_NET.2":"$g1" tx_roce:"$ROCE_NET.2":"$g2"; do
	IFS=: read -r name addr g <<<"$s"
	: >"$SF_TMP/$name.out"
	(
		while [ ! -e "$SF_TMP/stop" ]; do
			timeout -k 5 60 "$MCPKT" send -b "$addr" -g "$g" -n "$runs" --imm \
				--rate "$rate" || exit 1
		done
	) >>"$SF_TMP/$name.out" 2>>"$SF_TMP/$name.err" &
	SF_PIDS="$SF_PIDS $!"
	printf -v "${name}_pid" '%s' "$!"
done
sleep 0.5

# The schedule: the sets of active bridges, one after the other. Each bridge goes active
# and standby several times; at times one, two or all three are active.
active=a
for next in ab b bc abc c ac a abc b ab c bc ac abc a; do
	for x in a b c; do # make: the new ones active first
		[[ $next == *$x* && $active != *$x* ]] || continue
		con_must "$x" role active
	done
	for x in a b c; do # break: then the leaving ones standby
		[[ $active == *$x* && $next != *$x* ]] || continue
		con_must "$x" role standby
	done
	active=$next
	sleep 0.3
done
for x in a b c; do
	if [[ $active == *$x* ]]; then ha_role_is "$x" default active; else ha_role_is "$x" default standby; fi
	con_must "$x" ha
	t=$(awk '$1 == "default" { print $5 }' "$SF_TMP/bcom.out")
	[ "$t" -ge 4 ] || br_fail "bridge $x: $t role changes, the schedule makes at least 4" "$x"
done

touch "$SF_TMP/stop"
for name in tx_ib tx_roce; do
	sf_wait_exit "$(br_pid "$name")"
	[ "$SF_RC" = 0 ] || br_fail "sender loop $name failed (status $SF_RC)" "$name"
	[ "$(grep -c '^mcpkt: sent=' "$SF_TMP/$name.out")" = \
		"$(grep -c '^mcpkt: sent=[0-9]* completed=[0-9]* errors=0 ' "$SF_TMP/$name.out")" ] ||
		br_fail "sender loop $name: a run without a clean summary" "$name"
done
sent_ib=$(awk -F'[= ]' '/^mcpkt: sent=/ { n += $3 } END { print n + 0 }' "$SF_TMP/tx_ib.out")
sent_roce=$(awk -F'[= ]' '/^mcpkt: sent=/ { n += $3 } END { print n + 0 }' "$SF_TMP/tx_roce.out")
sleep 1
for name in ib_src ib_any roce_src roce_any; do
	kill -TERM "$(sf_child "$(br_pid "$name")")" 2>/dev/null || true
	br_listen_end "$name"
	printf -v "rx_$name" '%s' "$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* received=\([0-9]*\) .*/\1/p')"
	printf -v "dup_$name" '%s' "$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* dup=\([0-9]*\) .*/\1/p')"
	printf -v "src_$name" '%s' "$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* sources=\([0-9]*\) .*/\1/p')"
	case " ${BR_SUMMARY#mcpkt: } " in
	*" bad=0 "*" imm_bad=0 "*) ;;
	*) br_fail "listener $name: corrupt packets: $BR_SUMMARY" "$name" ;;
	esac
done
nic_ib=0 nic_roce=0
for x in a b c; do
	br_stop "$x"
	nic_ib=$((nic_ib + $(br_nic "$x" IB)))
	nic_roce=$((nic_roce + $(br_nic "$x" RoCE)))
done

# What the bridges forwarded to each fabric.
fwd_roce=0 fwd_ib=0
for x in a b c; do
	fwd_roce=$((fwd_roce + $(br_group "$x" "$g1" ib_to_roce)))
	fwd_ib=$((fwd_ib + $(br_group "$x" "$g2" roce_to_ib)))
done
sf_log "IB -> RoCE: sent $sent_ib, forwarded $fwd_roce copies; RoCE -> IB: sent $sent_roce, forwarded $fwd_ib"
# shellcheck disable=SC2154 # set by printf -v above
for l in roce:"$sent_ib":"$fwd_roce":"$nic_ib" ib:"$sent_roce":"$fwd_ib":"$nic_roce"; do
	IFS=: read -r f sent fwd nic <<<"$l"
	for k in src any; do
		v="rx_${f}_$k"
		[ "${!v}" = "$fwd" ] ||
			br_fail "$f listener ($k): received ${!v}, the bridges forwarded $fwd copies" "${f}_$k"
		v="src_${f}_$k"
		[ "${!v}" -le 3 ] || br_fail "$f listener ($k): ${!v} sources, 3 bridges" "${f}_$k"
	done
	v="dup_${f}_src"
	[ "${!v}" = 0 ] || br_fail "$f listener: ${!v} packets twice from the same bridge" "${f}_src"
	v="dup_${f}_any"
	lost=$((sent - (fwd - ${!v})))
	sf_log "$f listener: $fwd copies of $sent packets, lost $lost, duplicates ${!v}, NIC drops $nic"
	# A lost packet was dropped by the NIC of every bridge active then (a worker
	# descheduled on a loaded machine): zero without NIC drops.
	[ "$lost" -le "$nic" ] || br_fail "$f listener: $lost packets lost, the NICs dropped $nic" "${f}_any"
done
for x in a b c; do
	other_roce=$((fwd_roce - $(br_group "$x" "$g1" ib_to_roce)))
	other_ib=$((fwd_ib - $(br_group "$x" "$g2" roce_to_ib)))
	v=$(($(br_field "$x" IB fwd_pkts) + $(br_field "$x" IB standby)))
	[ "$v" = "$sent_ib" ] || br_fail "bridge $x: IB forwarded + standby = $v, sent $sent_ib" "$x"
	v=$(($(br_field "$x" RoCE fwd_pkts) + $(br_field "$x" RoCE standby)))
	[ "$v" = "$sent_roce" ] || br_fail "bridge $x: RoCE forwarded + standby = $v, sent $sent_roce" "$x"
	br_expect "$x" IB drop_loop "$other_ib"
	br_expect "$x" IB drops "$other_ib"
	br_expect "$x" RoCE drop_peer_bridge "$other_roce"
	br_expect "$x" RoCE drops "$other_roce"
done
br_conservation a sim_ib0 sim_roce0
br_conservation b sim_ib3 sim_roce3
br_conservation c sim_ib4 sim_roce4
sf_log "PASS"
