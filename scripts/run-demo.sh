#!/bin/bash
# The README's main-job command: the bridge with live traffic on the simulated fabric.
# ib2roce bridges 239.1.2.3 between sim_ib0 (InfiniBand) and sim_roce0 (RoCEv2); Debian's
# unmodified mckey (rdmacm-utils) receives on sim_ib1, sim_ib2, sim_roce1 and sim_roce2
# and sends from sim_ib3 (full member) and sim_roce3 (send-only), so every receiver gets
# each message twice: from its own fabric directly and from the other through the
# bridge. `simfab` shows the devices, the groups and the port counters meanwhile; at the
# end the bridge prints its final counters. Installs the dependencies and builds first.
#
# Usage: scripts/run-demo.sh [BUILDDIR]
# Runs on the fabric $SIMFABRIC, "demo" if unset (reset at the start and at the end). About 15 s after the
# build. Exit status 0 if every receiver got every message and the bridge exited cleanly.
set -euo pipefail

cd "$(dirname "$0")/.."
builddir=${1:-build}

./scripts/install-deps.sh
if [ -f "$builddir/meson-private/coredata.dat" ]; then
	meson setup --reconfigure "$builddir" >/dev/null
else
	meson setup "$builddir" >/dev/null
fi
ninja -C "$builddir" >/dev/null

# The user's fabric name if set (it is reset at the start and at the end), else "demo".
export SIMFABRIC=${SIMFABRIC:-demo}
case $builddir in
/*) export LD_LIBRARY_PATH="$builddir/simfabric" ;;
*) export LD_LIBRARY_PATH="$PWD/$builddir/simfabric" ;;
esac
unset SIMFABRIC_TOPOLOGY
simfab=$builddir/simfabric/simfab
group=239.1.2.3
rounds=3
per_round=100
total=$((2 * rounds * per_round)) # each receiver: direct + bridged
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ib2roce-demo.XXXXXX")
pids=""

cleanup() {
	local p

	for p in $pids; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	"$simfab" reset >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Bold headings on a terminal only: no escape codes in a file or a pipe.
if [ -t 1 ]; then
	bold=$'\033[1m' plain=$'\033[0m'
else
	bold= plain=
fi
say() {
	printf '\n%s== %s%s\n' "$bold" "$*" "$plain"
}

# start NAME CMD...: a background program, stdout line-buffered into $tmp/NAME, bounded.
start() {
	local name=$1

	shift
	timeout -k 5 60 stdbuf -oL "$@" >"$tmp/$name" 2>&1 &
	pids="$pids $!"
	eval "pid_$name=$!"
}

# wait_for NAME PATTERN: until $tmp/NAME has a line matching PATTERN (at most 20 s,
# and only while the program runs).
wait_for() {
	local n=0 pid

	eval "pid=\$pid_$1"
	until grep -q -- "$2" "$tmp/$1"; do
		n=$((n + 1))
		if [ "$n" -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
			grep -q -- "$2" "$tmp/$1" && return 0
			echo "demo: $1 did not print '$2':" >&2
			cat "$tmp/$1" >&2
			exit 1
		fi
		sleep 0.1
	done
}

counters() {
	"$simfab" counters | grep -E '^(COUNTER|xmit_pkts|rcv_pkts|out_of_buffer) '
}

"$simfab" reset >/dev/null
say "simfab devices: the default topology (fabric '$SIMFABRIC')"
"$simfab" devices

say "ib2roce: bridging $group between sim_ib0 (IB) and sim_roce0 (RoCEv2)"
start bridge "$builddir/app/ib2roce" --debug --control "$tmp/ib2roce.sock" \
	-d sim_ib0 -r sim_roce0 --idle backoff \
	-e buffers=8192 -e statint=2 -m "$group"
wait_for bridge 'IB joined'
wait_for bridge 'RoCE joined'
grep -E 'ib2roce (info|notice)' "$tmp/bridge"

say "mckey receivers: sim_ib1, sim_ib2 (IB) and sim_roce1, sim_roce2 (RoCEv2), $total messages each"
start ib1 mckey -m "$group" -b 198.18.0.2 -C "$total"
start ib2 mckey -m "$group" -b 198.18.0.3 -C "$total"
start roce1 mckey -m "$group" -b 198.19.0.2 -C "$total"
start roce2 mckey -m "$group" -b 198.19.0.3 -C "$total"
for r in ib1 ib2 roce1 roce2; do
	wait_for "$r" 'joined'
	printf '%-6s %s\n' "$r" "$(grep joined "$tmp/$r")"
done

for round in $(seq "$rounds"); do
	say "round $round/$rounds: senders on sim_ib3 (full member) and sim_roce3 (send-only, -o), $per_round messages each"
	start "ibs$round" mckey -m "$group" -b 198.18.0.4 -s -C "$per_round"
	start "roces$round" mckey -m "$group" -b 198.19.0.4 -s -o -C "$per_round"
	wait_for "ibs$round" 'joined'
	wait_for "roces$round" 'joined'
	if [ "$round" = 1 ]; then
		echo "simfab groups (mckey waits 3 s after joining before it sends):"
		"$simfab" groups
	fi
	wait_for "ibs$round" 'data transfers complete'
	wait_for "roces$round" 'data transfers complete'
	echo "simfab counters after round $round:"
	counters
done

say "receivers: every message must arrive"
ok=1
for r in ib1 ib2 roce1 roce2; do
	wait_for "$r" 'data transfers complete'
	eval "p=\$pid_$r"
	rc=0
	wait "$p" || rc=$?
	if [ "$rc" = 0 ] && grep -q '^return status 0$' "$tmp/$r"; then
		echo "$r: received all $total messages"
	else
		echo "$r: FAILED (exit $rc)"
		cat "$tmp/$r"
		ok=0
	fi
done
for d in sim_ib1 sim_ib2 sim_roce1 sim_roce2; do
	printf '%-10s rcv_pkts %s\n' "$d" \
		"$("$simfab" counters "$d" --json | sed -n 's/.*"rcv_pkts": \([0-9]*\).*/\1/p')"
done
# The IB sender (mckey -s) is a full member with no receive posted: its QP drops its own
# loopback copy of each of its messages, and the bridged copy of each RoCE message that
# arrives while it is joined (how many depends on how the two senders of a round overlap).
oob=$("$simfab" counters sim_ib3 --json | sed -n 's/.*"out_of_buffer": \([0-9]*\).*/\1/p')
own=$((rounds * per_round))
echo "(out_of_buffer $oob on sim_ib3: the IB sender is a full member with no receive posted;"
echo " its QP dropped the loopback copies of its own $own messages and $((oob - own)) bridged"
echo " copies of the RoCE sender's messages that arrived while it was joined.)"

say "the console (bcom): status, multicast, workers"
for c in status multicast workers; do
	echo "\$ bcom $c"
	"$builddir/tools/bcom" --control "$tmp/ib2roce.sock" "$c" || ok=0
done

say "ib2roce: stopping (SIGINT), final counters"
kill -INT "$pid_bridge"
rc=0
wait "$pid_bridge" || rc=$?
sed -n '/final counters/,$p' "$tmp/bridge"
if [ "$rc" != 0 ]; then
	echo "ib2roce exited with status $rc"
	ok=0
fi
want=$((rounds * per_round))
for side in IB RoCE; do
	fwd=$(sed -n "s/^$side .* fwd_pkts=\([0-9]*\).*/\1/p" "$tmp/bridge")
	if [ "$fwd" != "$want" ]; then
		echo "ib2roce forwarded $fwd packets from $side, expected $want"
		ok=0
	fi
done

say "final simfab counters"
"$simfab" counters
[ "$ok" = 1 ]
