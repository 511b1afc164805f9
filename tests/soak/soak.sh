#!/bin/bash
# The fault-injection soak: a steady stream both ways through one bridge while faults
# chosen by a seeded PRNG are injected, in epochs; at the end of each epoch the faults
# are undone, the traffic stops and drains, and every identity is checked on the
# cumulative counters (a quiescent checkpoint):
#   I1  the bridge accounts for every packet (br_conservation on `bcom stats`: received =
#       forwarded + named drops, forwarded on one side = sent on the other + tx_full),
#       and each bridge port's counters = the bridge's (packets delivered = received,
#       packets sent = sent: exact in each epoch without a fault at that port, bounded by
#       the port's port_down in the others);
#       The bridge's nic_rx_dropped equals its port's out_of_buffer (offered = NIC drops
#       + received by the bridge).
#   I2  offered = NIC drops + received, at each bridge port: the copies the sender of its
#       segment put on the wire (the sender port's xmit_pkts) = the port's rcv_pkts +
#       its drop counters (out_of_buffer, sim_loss, port_down, no_member, ...);
#   I3  the same at each listener's port: the copies sent on its segment by the sender
#       and the bridge = rcv_pkts + drops;
#   I4  each listener that ran the whole epoch counted exactly what its port delivered
#       (rcv_pkts), and every listener saw nothing corrupt, duplicated or with bad
#       immediate data (mcpkt --verify, exit 0);
#   I5  the bridge's RSS and fd count at the end are within a small bound of those at
#       the end of the first epoch (its buffer pool, kept small, is resident by then);
#   I6  the console answered throughout: a watcher runs `bcom status` every second and
#       records the worst response time; a reply slower than 5 s captures the bridge's
#       thread stacks into the log (gdb, else /proc/PID/task/*/stack); no answer within
#       bcom's 20 s time-out fails the soak. The time itself is reported, not asserted.
# Fault classes (dealt from a deck shuffled by the PRNG: every class once per round):
# port down/up of each bridge port, SM client re-register (IB), injected
# loss on each segment, SIGHUP with a changed config file, runtime join/leave, zap,
# feature toggles (bridging, pgm), misbehaving console clients (idle, garbage, a line
# without newline, a flood of commands never read), kill -9 and restart of a sender or
# a listener.
#
# Usage: soak.sh SECONDS SEED [REPORT]
#   SECONDS  how long to inject faults (the checks and drains come on top)
#   SEED     seeds bash's $RANDOM: the same seed gives the same faults in the same order
#   REPORT   also write the report (faults per class, identities checked) to this file
# Environment: as tests/bridge (SIMLIB, SIMFAB, IB2ROCE, MCPKT) plus BCOM; SOAK_SLOW=1
# (sanitizer builds) lowers the rates and lengthens the drains; SOAK_EPOCH (seconds of
# faults per epoch, default 20).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 SECONDS SEED [REPORT]" >&2
	exit 2
fi
duration=$1
seed=$2
report=${3:-}
case "$duration$seed" in
*[!0-9]* | "") echo "$0: SECONDS and SEED are numbers" >&2 && exit 2 ;;
esac
sf_init soak
RANDOM=$seed
sf_log "seed $seed, $duration s of faults (replay: tests/soak/soak.sh $duration $seed)"

g=239.1.2.3  # the stream, bridged all along
g2=239.1.2.9 # joined and left at run time
g3=239.1.2.8 # added and removed by reloads
if [ "${SOAK_SLOW:-0}" = 1 ]; then
	rate=150 drain=4 pause=1
else
	rate=1000 drain=2 pause=1
fi
epoch_len=${SOAK_EPOCH:-20}
conf=$SF_TMP/bridge.conf
sock=$SF_TMP/bridge.sock
run_secs=$((duration + 600))

write_conf() { # 0: the stream only; 1: also g3 and a changed statint
	{
		echo "device sim_ib0"
		echo "roce sim_roce0"
		echo "multicast $g"
		# A small pool: all of it is in use (resident) after the first epoch, so that
		# the RSS that follows is flat unless something leaks.
		echo "enable buffers=4096"
		if [ "$1" = 1 ]; then
			echo "multicast $g3 # added by a reload"
			echo "enable statint=7"
		fi
	} >"$conf"
}
write_conf 0

# The bridge, with a time limit of the soak's length.
BR_BRIDGE_SECS=$run_secs br_bridge bridge 1 --workers 1 -c "$conf"
bpid=$(sf_child "$(br_pid bridge)")

# The console watcher: `bcom status` every second; "MS RC" per line in watch.log.
watcher() {
	local t0 t1 rc dt

	while kill -0 "$bpid" 2>/dev/null; do
		t0=$(date +%s%N)
		rc=0
		timeout -k 2 20 "$BCOM" --control "$sock" status >/dev/null 2>&1 || rc=$?
		t1=$(date +%s%N)
		dt=$(((t1 - t0) / 1000000))
		echo "$dt $rc" >>"$SF_TMP/watch.log"
		if [ "$dt" -gt 5000 ]; then
			{
				echo "=== console stall: status took $dt ms (rc $rc) at $(date -u +%T)"
				if command -v gdb >/dev/null 2>&1; then
					timeout 60 gdb -batch -p "$bpid" -ex 'thread apply all bt' 2>&1
				else
					for t in /proc/"$bpid"/task/*; do
						echo "--- $t $(cat "$t/comm" 2>/dev/null)"
						cat "$t/stack" 2>/dev/null || true
					done
				fi
			} >>"$SF_TMP/stalls.log"
		fi
		sleep 1
	done
}
: >"$SF_TMP/watch.log"
watcher &
SF_PIDS="$SF_PIDS $!"

# ---- traffic ----
# Listener l_ib on sim_ib2 (IB_NET.3), l_roce on sim_roce1 (ROCE_NET.2); senders s_ib on
# sim_ib1 (IB_NET.2), s_roce on sim_roce3 (ROCE_NET.4).
declare -A dev_of=([l_ib]=sim_ib2 [l_roce]=sim_roce1 [s_ib]=sim_ib1 [s_roce]=sim_roce3)
declare -A addr_of=([l_ib]=$IB_NET.3 [l_roce]=$ROCE_NET.2 [s_ib]=$IB_NET.2 [s_roce]=$ROCE_NET.4)
declare -A dirty=()
declare -A runs=() # instances started per process name, for unique output files

start_listener() {
	local n=$1 i=$((${runs[$1]:-0} + 1))

	runs[$n]=$i
	# Small receive queues and buffers: the processes that deliver to a listener (the
	# bridge, the senders) keep its rings mapped after it exits (simfabric leaves stale
	# mappings in place), so each listener started costs them its ring size in RssShmem.
	br_start "${n}_$i" "$run_secs" "$MCPKT" recv -b "${addr_of[$n]}" -g "$g" --verify --imm \
		--size 100 --rq 1024 --timeout "$run_secs"
	printf -v "${n}_cur" '%s' "${n}_$i"
	sf_wait_line "$SF_TMP/${n}_$i.out" '^mcpkt: joined ' "$BR_PID" 30
}

# start_sender NAME SECS: a sender of SECS seconds at the soak's rate.
start_sender() {
	local n=$1 i=$((${runs[$1]:-0} + 1)) secs=$2

	[ "$secs" -ge 1 ] || secs=1
	runs[$n]=$i
	br_start "${n}_$i" "$run_secs" "$MCPKT" send -b "${addr_of[$n]}" -g "$g" --imm \
		-n $((rate * secs)) --rate "$rate" --timeout "$run_secs"
	printf -v "${n}_cur" '%s' "${n}_$i"
}

cur() {
	local v="${1}_cur"

	printf '%s\n' "${!v}"
}

# kill9 NAME: SIGKILL to the current instance of NAME; waits for it.
kill9() {
	local c tpid

	c=$(cur "$1")
	tpid=$(br_pid "$c")
	kill -KILL "$(sf_child "$tpid")" 2>/dev/null || true
	wait "$tpid" 2>/dev/null || true
}

# ---- faults ----
declare -A nfaults=()
classes=(port_ib port_roce reregister loss_ib loss_roce reload joinleave zap feature
	console_idle console_garbage console_partial console_flood kill_sender kill_listener)
if [ -n "${SOAK_CLASSES:-}" ]; then
	read -r -a classes <<<"$SOAK_CLASSES"
fi
reloaded=0

console_client() { # KIND: a client that misbehaves, in the background, bounded
	timeout -k 2 15 python3 - "$sock" "$1" <<'P' >/dev/null 2>&1 &
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
kind = sys.argv[2]
if kind == "idle":
    time.sleep(4)
elif kind == "garbage":
    s.sendall(os.urandom(3000) + b"\n" + bytes(range(256)) + b"\nstatus\n")
    s.settimeout(5)
    try:
        s.recv(65536)
    except OSError:
        pass
elif kind == "partial":
    s.sendall(b"stat")
    time.sleep(3)
elif kind == "flood":
    s.setblocking(False)
    try:
        for _ in range(20000):
            s.send(b"status\nmulticast\nhelp\n")
    except BlockingIOError:
        pass
    time.sleep(2)
s.close()
P
	SF_PIDS="$SF_PIDS $!"
}

inject() {
	local c=$1 side

	nfaults[$c]=$((${nfaults[$c]:-0} + 1))
	case $c in
	port_ib | port_roce)
		if [ "$c" = port_ib ]; then side=sim_ib0; else side=sim_roce0; fi
		dirty[$side]=1
		"$SIMFAB" port "$side" down >/dev/null
		sleep "0.$((RANDOM % 9 + 1))"
		"$SIMFAB" port "$side" up >/dev/null
		;;
	reregister)
		dirty[sim_ib0]=1
		"$SIMFAB" reregister sim_ib0 >/dev/null
		;;
	loss_ib | loss_roce)
		if [ "$c" = loss_ib ]; then side=ib0; else side=eth0; fi
		"$SIMFAB" loss "$side" "0.0$((RANDOM % 9 + 1))" >/dev/null
		sleep "0.$((RANDOM % 9 + 1))"
		"$SIMFAB" loss "$side" 0 >/dev/null
		;;
	reload)
		reloaded=$((1 - reloaded))
		write_conf "$reloaded"
		kill -HUP "$bpid"
		;;
	joinleave)
		con_bc bridge join "$g2"
		sleep "0.$((RANDOM % 9 + 1))"
		con_bc bridge leave "$g2"
		;;
	zap) con_bc bridge zap ;;
	feature)
		if [ $((RANDOM % 2)) = 0 ]; then side=bridging; else side=pgm; fi
		con_bc bridge disable "$side"
		sleep "0.$((RANDOM % 9 + 1))"
		con_bc bridge enable "$side"
		;;
	console_*) console_client "${c#console_}" ;;
	kill_sender | kill_listener)
		if [ $((RANDOM % 2)) = 0 ]; then side=ib; else side=roce; fi
		if [ "$c" = kill_sender ]; then
			# Copies in flight when a sender dies are counted nowhere: the epoch is
			# not checked at the ports of its segment.
			kill9 "s_$side"
			if [ "$side" = ib ]; then
				dirty[sim_ib0]=1 dirty[l_ib]=1
			else
				dirty[sim_roce0]=1 dirty[l_roce]=1
			fi
			start_sender "s_$side" $((e_end - $(date +%s)))
		else
			kill9 "l_$side"
			dirty[l_$side]=1
			start_listener "l_$side"
		fi
		;;
	esac
}

# next_class: the next fault class in c. The classes are dealt from a deck shuffled by
# the PRNG, so that every class comes once in each round of ${#classes[@]} faults.
deck=()
next_class() {
	local i j t

	if [ ${#deck[@]} = 0 ]; then
		deck=("${classes[@]}")
		for ((i = ${#deck[@]} - 1; i > 0; i--)); do
			j=$((RANDOM % (i + 1)))
			t=${deck[$i]} deck[$i]=${deck[$j]} deck[$j]=$t
		done
	fi
	c=${deck[0]}
	deck=("${deck[@]:1}")
}

# Undo what a fault may have left: ports up, no loss, features on, g2 left, the config
# with the stream only (reloaded), the stream's group joined on both sides again.
restore() {
	"$SIMFAB" port sim_ib0 up >/dev/null
	"$SIMFAB" port sim_roce0 up >/dev/null
	"$SIMFAB" loss ib0 0 >/dev/null
	"$SIMFAB" loss eth0 0 >/dev/null
	con_bc bridge enable bridging
	con_bc bridge enable pgm
	con_bc bridge leave "$g2"
	if [ "$reloaded" = 1 ]; then
		reloaded=0
		write_conf 0
		kill -HUP "$bpid"
	fi
	con_wait_json bridge ".groups | length" 1 30
	con_wait_json bridge ".groups[] | select(.group == \"$g\") | .ib.state + .roce.state" \
		joinedjoined 30
}

# ---- checkpoints ----
sum_drops_at() { # DEV: the port's drop counters, all of them
	local d=0 k

	for k in out_of_buffer qkey_viol sim_loss port_down no_member cq_overrun len_err prot_err; do
		d=$((d + $(sf_counter "$1" "$k")))
	done
	printf '%s\n' "$d"
}

declare -A base_rcv=() base_off=() base_acc=() base_xmit=() base_tx=()
checks=0
rss0="" fd0=""

checkpoint() {
	local n c v p off got drops x

	sleep "$drain"
	br_alive bridge
	# I4: every listener exits cleanly; one that lived the whole epoch counted exactly
	# what its port delivered in it.
	for n in l_ib l_roce; do
		c=$(cur "$n")
		br_listen_stop "$c"
		v=$(sf_counter "${dev_of[$n]}" rcv_pkts)
		if [ -z "${dirty[$n]:-}" ]; then
			[ "$BR_RECEIVED" = $((v - ${base_rcv[$n]:-0})) ] ||
				br_fail "epoch $epoch: listener $c counted $BR_RECEIVED, its port delivered $((v - ${base_rcv[$n]:-0}))" "$c"
			checks=$((checks + 1))
		fi
		base_rcv[$n]=$v
	done
	# I1 on the running bridge's cumulative counters (`stats` is not reset by zap).
	con_bc bridge stats
	[ "$CON_RC" = 0 ] || br_fail "epoch $epoch: bcom stats: exit status $CON_RC" bridge
	cp "$SF_TMP/bcom.out" "$SF_TMP/ckpt.out"
	BR_PGM_PARTIAL=1 BR_NO_PORT_CHECK=1 br_conservation ckpt sim_ib0 sim_roce0
	checks=$((checks + 1))
	# I1 at the bridge's ports: each delivered what the bridge counted received (less the
	# error completions), and sent what it counted sent (less the failed sends). A send
	# posted in the moment between a port going down and the bridge hearing of it
	# completes but is counted in the port's port_down, not xmit_pkts: in an epoch with
	# a port fault the sends are only bounded (xmit <= tx - tx_error <= xmit + port_down).
	for p in "IB sim_ib0" "RoCE sim_roce0"; do
		# shellcheck disable=SC2086 # two words
		set -- $p
		v=$(sf_counter "$2" rcv_pkts)
		x=$(($(br_field ckpt "$1" rx_pkts) - $(br_field ckpt "$1" drop_rx_error)))
		[ "$v" = "$x" ] ||
			br_fail "epoch $epoch: port $2 delivered $v packets, $1 rx_pkts - drop_rx_error = $x" bridge
		# Offered to the bridge = received + the NIC's drops (nic_rx_dropped, the port's
		# out_of_buffer as the bridge reads it from sysfs).
		nic=$(br_nic ckpt "$1")
		if [ "$nic" != - ]; then
			oob=$(sf_counter "$2" out_of_buffer)
			[ $((v + oob)) = $((x + nic)) ] ||
				br_fail "epoch $epoch: port $2 rcv_pkts $v + out_of_buffer $oob != $1 rx_pkts - drop_rx_error $x + nic_rx_dropped $nic" bridge
			checks=$((checks + 1))
		fi
		v=$(sf_counter "$2" xmit_pkts)
		x=$(($(br_field ckpt "$1" tx_pkts) - $(br_field ckpt "$1" drop_tx_error)))
		down=$(sf_counter "$2" port_down)
		if [ -z "${dirty[$2]:-}" ]; then
			[ $((v - ${base_xmit[$2]:-0})) = $((x - ${base_tx[$2]:-0})) ] ||
				br_fail "epoch $epoch: port $2 sent $((v - ${base_xmit[$2]:-0})) packets in the epoch, $1 tx_pkts - drop_tx_error: $((x - ${base_tx[$2]:-0}))" bridge
		fi
		[ "$v" -le "$x" ] && [ "$x" -le $((v + down)) ] ||
			br_fail "epoch $epoch: port $2 sent $v packets (port_down $down), $1 tx_pkts - drop_tx_error = $x" bridge
		base_xmit[$2]=$v
		base_tx[$2]=$x
		checks=$((checks + 2))
	done
	# I2 and I3: offered = drops + received in the epoch, at the bridge's ports and at
	# the listeners' ports. Exact when the receiving QP stayed attached all along: a QP
	# that is not attached gets no copy, counted nowhere (a listener killed and started
	# again, a bridge port that went down or was re-registered: the bridge attaches
	# again when it joins again), so such an epoch is not checked at that port.
	for p in "sim_ib0 sim_ib0 sim_ib1" "sim_roce0 sim_roce0 sim_roce3" "sim_ib2 l_ib sim_ib1 sim_ib0" \
		"sim_roce1 l_roce sim_roce3 sim_roce0"; do
		# shellcheck disable=SC2086 # a list of words
		set -- $p
		off=0
		for x in "${@:3}"; do
			off=$((off + $(sf_counter "$x" xmit_pkts)))
		done
		got=$(sf_counter "$1" rcv_pkts)
		drops=$(sum_drops_at "$1")
		if [ -z "${dirty[$2]:-}" ]; then
			[ $((off - ${base_off[$1]:-0})) = $((got + drops - ${base_acc[$1]:-0})) ] ||
				br_fail "epoch $epoch: port $1: offered $((off - ${base_off[$1]:-0})) in the epoch (xmit of ${*:3}) != rcv_pkts + drops $((got + drops - ${base_acc[$1]:-0}))" bridge
			checks=$((checks + 1))
		fi
		base_off[$1]=$off
		base_acc[$1]=$((got + drops))
	done
	dirty=()
	# I5: the bridge's memory and descriptors.
	# RssAnon: the bridge's own memory. RssShmem holds the simulated fabric's rings,
	# which are not the bridge's (on hardware they are the NIC's).
	rss=$(awk '$1 == "RssAnon:" { print $2 }' "/proc/$bpid/status")
	fds=$(find "/proc/$bpid/fd" -mindepth 1 -maxdepth 1 | wc -l)
	shm=$(awk '$1 == "RssShmem:" { print $2 }' "/proc/$bpid/status")
	sf_log "epoch $epoch: checkpoint passed (RssAnon $rss kB, RssShmem $shm kB, $fds fds, $(grep -c /dev/shm "/proc/$bpid/maps") fabric mappings)"
	if [ -z "$rss0" ] && [ "$epoch" = 1 ]; then
		rss0=$rss fd0=$fds
	fi
}

# ---- the soak ----
t_end=$(($(date +%s) + duration))
epoch=0
start_listener l_ib
start_listener l_roce
base_rcv[l_ib]=$(sf_counter sim_ib2 rcv_pkts)
base_rcv[l_roce]=$(sf_counter sim_roce1 rcv_pkts)
checkpoint # the baseline: nothing sent yet
while [ "$(date +%s)" -lt "$t_end" ]; do
	epoch=$((epoch + 1))
	start_listener l_ib
	start_listener l_roce
	e_end=$(($(date +%s) + epoch_len))
	[ "$e_end" -le "$t_end" ] || e_end=$t_end
	start_sender s_ib $((e_end - $(date +%s)))
	start_sender s_roce $((e_end - $(date +%s)))
	while [ "$(date +%s)" -lt "$e_end" ]; do
		next_class
		inject "$c"
		sleep "$pause.$((RANDOM % 10))"
	done
	restore
	br_send_end "$(cur s_ib)"
	br_send_end "$(cur s_roce)"
	checkpoint
done

# I6: the console answered every time.
worst=$(sort -n "$SF_TMP/watch.log" | tail -n 1 | cut -d' ' -f1)
polls=$(wc -l <"$SF_TMP/watch.log")
# bcom exits 0 or 1 when the bridge replied (1: unhealthy, e.g. a side down), 3 when it
# could not connect, 124 when the reply did not come within 20 s.
unanswered=$(awk '$2 != 0 && $2 != 1' "$SF_TMP/watch.log" | wc -l)
unhealthy=$(awk '$2 == 1' "$SF_TMP/watch.log" | wc -l)
stalls=$(grep -c '^=== console stall' "$SF_TMP/stalls.log" 2>/dev/null || true)
stalls=${stalls:-0}
[ "$unanswered" = 0 ] ||
	br_fail "the console did not answer $unanswered of $polls status polls" bridge "$SF_TMP/stalls.log"
# I5: flat memory and descriptors (RSS within 16 MB, 64 MB in a sanitizer build).
if [ "${SOAK_SLOW:-0}" = 1 ]; then rss_bound=65536; else rss_bound=16384; fi
[ $((rss - rss0)) -le "$rss_bound" ] ||
	br_fail "RssAnon grew from $rss0 kB to $rss kB (bound $rss_bound kB)" bridge
[ $((fds - fd0)) -le 2 ] || br_fail "fds grew from $fd0 to $fds" bridge
checks=$((checks + 3))
br_stop bridge
# The ports were checked at the last checkpoint; nothing was sent since.
BR_PGM_PARTIAL=1 BR_NO_PORT_CHECK=1 br_conservation bridge sim_ib0 sim_roce0

{
	echo "soak: seed $seed, $duration s, $epoch epochs, $checks identity checks passed"
	total=0
	for c in "${classes[@]}"; do
		printf 'soak: faults %-16s %d\n' "$c" "${nfaults[$c]:-0}"
		total=$((total + ${nfaults[$c]:-0}))
	done
	echo "soak: faults total $total"
	echo "soak: traffic IB->RoCE $(br_field bridge IB fwd_pkts) RoCE->IB $(br_field bridge RoCE fwd_pkts) forwarded, drops IB $(br_field bridge IB drops) RoCE $(br_field bridge RoCE drops)"
	echo "soak: console $polls status polls ($unhealthy unhealthy), worst $worst ms, $stalls stalls over 5 s"
	echo "soak: bridge RssAnon $rss0 -> $rss kB, fds $fd0 -> $fds (RssShmem $shm kB)"
	echo "soak: PASS"
} | tee ${report:+"$report"} >&2
if [ -s "$SF_TMP/stalls.log" ] && [ -n "$report" ]; then
	cat "$SF_TMP/stalls.log" >>"$report"
fi
