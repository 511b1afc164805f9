#!/bin/bash
# A rolling upgrade of an HA pair under a steady stream, exactly as docs/operations.md "A
# rolling upgrade, step by step" says: bridge a (sim_ib0/sim_roce0) is active for
# partition default, bridge b (sim_ib3/sim_roce3) for partition p2; a stream flows each
# way in both partitions (IB -> RoCE on g1 and g2, RoCE -> IB on g3 and g4) while
#  1. b is checked healthy with its partitions joined;
#  2. a hands every partition over to b;
#  3. a shows every partition standby;
#  4. a is stopped (SIGTERM: nothing left to hand over) and started again from the
#     "new" binary (a copy of the build) with --role standby; READY awaited;
#  5. b hands everything over to the new a, and is upgraded the same way;
#  6. each bridge gets its partition back (b takes p2 from a).
# Asserts: zero loss in both directions (each listener counts each packet once across
# both bridges, --any-source; on a loaded machine a descheduled bridge's NIC may drop
# packets: the loss is then at most its nic_rx_dropped), nothing corrupt, duplicates bounded (printed: the packets
# both bridges forwarded during the 3 handovers; for each at most what the sender sent
# while the handover command ran, with 0.5 s of slack, plus a burst per bridge: see
# docs/operations.md "What each failure costs"), the roles at each step, and every
# bridge run's counters add up (br_conservation, stopped runs included).
# With HA_TWOHOST=1 (test ha-twohost-upgrade) the two bridges run on two "hosts"
# (tests/ha/th-lib.sh: network namespaces cabled to a switch) and hand over in TLS
# (--ha-listen, --ha-peer, --ha-psk) instead of through each other's console socket.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
: "${BCOM:?BCOM must name the bcom program}"

if [ -n "${HA_TWOHOST:-}" ]; then
	# shellcheck source-path=SCRIPTDIR source=th-lib.sh
	. "$(dirname "$0")/th-lib.sh"
	TH_NO_KEEPALIVED=1 th_init ha-upgrade2
else
	sf_init ha-upgrade
fi
g1=239.1.2.3 # g1, g2: IB -> RoCE; g3, g4: RoCE -> IB
g3=239.1.2.5
p2="239.1.2.4,239.1.2.6" # g2 and g4: partition p2; g1 and g3: default
rate=2000                # per sender (both groups together)
burst=32                 # the worker's poll burst (engine/fwd.c)

# handover NAME [PARTITION]: `bcom handover` on NAME; adds its bound on the duplicates
# (dup_bound, ../ha/pair.sh) to SLACK.
SLACK=0
handover() {
	local t0 t1

	t0=$(date +%s%N)
	# shellcheck disable=SC2086 # the partition, when given
	con_must "$1" handover ${2:-}
	t1=$(date +%s%N)
	grep -q 'active -> standby$' "$SF_TMP/bcom.out" ||
		br_fail "bcom $1 handover moved nothing: $(cat "$SF_TMP/bcom.out")" "$1"
	SLACK=$((SLACK + rate * ((t1 - t0) / 1000000 + 500) / 1000 + 2 * burst))
}

# bridge NAME BINARY ARG...: start bridge NAME from BINARY, wait for its joins (4 groups)
# and its READY ("all 4 groups joined on both sides").
bridge() {
	local name=$1 bin=$2

	shift 2
	if [ -n "${HA_TWOHOST:-}" ]; then
		# The binary started in the bridge's host.
		printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$SF_TMP/run-$name" "$bin" >"$SF_TMP/$name.run"
		chmod +x "$SF_TMP/$name.run"
		bin=$SF_TMP/$name.run
	fi
	IB2ROCE=$bin br_bridge "$name" 4 -m "$g1" -m 239.1.2.4 -m "$g3" -m 239.1.2.6 \
		--partition p2:"$p2" "$@"
	sf_wait_line "$SF_TMP/$name.err" 'all 4 groups joined on both sides' "$(br_pid "$name")" 30
}
a_args=(-d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" --ha-peer-control "$SF_TMP/b.sock")
b_args=(-d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" --ha-peer-control "$SF_TMP/a.sock")
if [ -n "${HA_TWOHOST:-}" ]; then
	psk=(--ha-psk "$SF_TMP/keys/pair.psk")
	a_args=(-d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" "${psk[@]}" --ha-psk-identity a
		--ha-listen "$TH_A:$TH_PORT" --ha-peer "$TH_B:$TH_PORT")
	b_args=(-d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" "${psk[@]}" --ha-psk-identity b
		--ha-listen "$TH_B:$TH_PORT" --ha-peer "$TH_A:$TH_PORT")
fi

# stop NAME: SIGTERM (what systemctl stop sends); exit 0, final counters that add up.
stop() {
	local dev

	kill -TERM "$(sf_child "$(br_pid "$1")")"
	sf_wait_exit "$(br_pid "$1")"
	[ "$SF_RC" = 0 ] || br_fail "bridge $1 exited with status $SF_RC after SIGTERM" "$1"
	grep -q '^ib2roce: final counters$' "$SF_TMP/$1.out" ||
		br_fail "bridge $1 printed no final counters" "$1"
	# The stream goes on: the ports' counters are not this run's alone.
	BR_NO_PORT_CHECK=1 br_conservation "$1" - -
	nic_drops "$1"
	# Keep this run's output; the next run of NAME starts new files.
	for dev in out err; do
		mv "$SF_TMP/$1.$dev" "$SF_TMP/$1-old.$dev"
	done
}

# nic_drops NAME: add the final nic_rx_dropped of bridge NAME to NIC_ib and NIC_roce.
NIC_ib=0 NIC_roce=0
nic_drops() {
	NIC_ib=$((NIC_ib + $(br_nic "$1" IB)))
	NIC_roce=$((NIC_roce + $(br_nic "$1" RoCE)))
}

new=$SF_TMP/ib2roce.new # the "upgraded" binary
cp "$IB2ROCE" "$new"

bridge a "$IB2ROCE" "${a_args[@]}" --role p2=standby
bridge b "$IB2ROCE" "${b_args[@]}" --role default=standby
ha_role_is a default active
ha_role_is a p2 standby
ha_role_is b p2 active

# The streams: a listener per direction (each packet once across both bridges), and per
# direction a sender loop, runs of 2000 packets one after the other until $SF_TMP/stop
# exists (a run cannot be stopped in its middle: mcpkt waits for its last completions).
br_start rx_roce 300 "$MCPKT" recv -b "$ROCE_NET.2" -g "$g1" --groups 2 --verify --imm \
	--any-source --rq 16384 --timeout 280
sf_wait_line "$SF_TMP/rx_roce.out" '^mcpkt: joined ' "$BR_PID" 30
br_start rx_ib 300 "$MCPKT" recv -b "$IB_NET.3" -g "$g3" --groups 2 --verify --imm \
	--any-source --rq 16384 --timeout 280
sf_wait_line "$SF_TMP/rx_ib.out" '^mcpkt: joined ' "$BR_PID" 30
for s in tx_ib:"$IB_NET.2":"$g1" tx_roce:"$ROCE_NET.2":"$g3"; do
	IFS=: read -r name addr g <<<"$s"
	: >"$SF_TMP/$name.out"
	(
		while [ ! -e "$SF_TMP/stop" ]; do
			timeout -k 5 60 "$MCPKT" send -b "$addr" -g "$g" --groups 2 -n 1000 --imm \
				--rate "$rate" || exit 1
		done
	) >>"$SF_TMP/$name.out" 2>>"$SF_TMP/$name.err" &
	SF_PIDS="$SF_PIDS $!"
	printf -v "${name}_pid" '%s' "$!"
done
sleep 1

# 1. b is healthy, its partitions joined.
con_must b health
con_must b ha
con_must b multicast
# 2. a hands everything over to b; 3. a is standby for every partition.
handover a
ha_role_is a default standby
ha_role_is a p2 standby
ha_role_is b default active
ha_role_is b p2 active
# 4. Stop a (SIGTERM: nothing to hand over), start the new a standby, wait for READY.
stop a
! grep -q '(SIGTERM: peer active)' "$SF_TMP/a-old.err" ||
	br_fail "bridge a handed over on SIGTERM: it had nothing active" a
bridge a "$new" "${a_args[@]}" --role standby
con_must a health
ha_role_is a default standby
# 5. b hands everything over to the new a, then is upgraded the same way.
handover b
ha_role_is a default active
ha_role_is a p2 active
ha_role_is b default standby
ha_role_is b p2 standby
stop b
bridge b "$new" "${b_args[@]}" --role standby
con_must b health
# 6. Each bridge gets its partition back: b takes p2 from a.
handover a p2
ha_role_is a default active
ha_role_is a p2 standby
ha_role_is b p2 active
ha_role_is b default standby
sleep 1

# The end: the sender loops finish their runs, the last packets go through, the
# listeners stop.
touch "$SF_TMP/stop"
for name in tx_ib tx_roce; do
	sf_wait_exit "$(br_pid "$name")"
	[ "$SF_RC" = 0 ] || br_fail "sender loop $name failed (status $SF_RC)" "$name"
	[ "$(grep -c '^mcpkt: sent=' "$SF_TMP/$name.out")" = \
		"$(grep -c '^mcpkt: sent=[0-9]* completed=[0-9]* errors=0 ' "$SF_TMP/$name.out")" ] ||
		br_fail "sender loop $name: a run without a clean summary" "$name"
done
sleep 1
for d in ib:rx_roce roce:rx_ib; do
	IFS=: read -r side name <<<"$d"
	kill -TERM "$(sf_child "$(br_pid "$name")")" 2>/dev/null || true
	br_listen_end "$name"
	case " ${BR_SUMMARY#mcpkt: } " in
	*" bad=0 "*" imm_bad=0 "*) ;;
	*) br_fail "listener $name: corrupt packets: $BR_SUMMARY" "$name" ;;
	esac
	printf -v "rx_$side" '%s' "$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* received=\([0-9]*\) .*/\1/p')"
	printf -v "dup_$side" '%s' "$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* dup=\([0-9]*\) .*/\1/p')"
done
br_stop a
br_stop b
BR_NO_PORT_CHECK=1 br_conservation a - -
BR_NO_PORT_CHECK=1 br_conservation b - -
nic_drops a
nic_drops b
# Zero loss, unless a bridge's NIC dropped packets (its receive queue overflowed: on a
# loaded test machine a worker may be descheduled for a second), when the only active
# bridge's drops are the loss: a lost packet is always counted in nic_rx_dropped.
for side in ib roce; do
	sent=$(awk -F'[= ]' '/^mcpkt: sent=/ { n += $3 } END { print n + 0 }' "$SF_TMP/tx_$side.out")
	rx="rx_$side" dup="dup_$side" nic="NIC_$side"
	lost=$((sent - (${!rx} - ${!dup})))
	sf_log "$side -> other side: sent $sent, lost $lost, duplicates ${!dup} (3 handovers, bound $SLACK), NIC drops ${!nic}"
	[ "$lost" -le "${!nic}" ] ||
		br_fail "rolling upgrade: $side stream lost $lost packets, the NICs dropped ${!nic} (duplicates ${!dup})"
	[ "${!dup}" -le "$SLACK" ] ||
		br_fail "rolling upgrade: $side stream: ${!dup} duplicates, more than the bound $SLACK"
done
sf_log "PASS"
