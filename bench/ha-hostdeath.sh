#!/bin/bash
# Whole-host death of an HA pair on two "hosts" (tests/ha/twohost.sh, th-lib.sh): the
# packets lost while the surviving host's keepalived takes the dead host's partition,
# RUNS times at each RATE, the median and the range in packets and ms; also the split
# brain of the test's partition (duplicates, losses). For docs/operations.md, "What each
# failure costs". As root, from a configured build directory:
#   bench/ha-hostdeath.sh [BUILD_DIR] [RUNS] [RATE...]   (defaults: build 10 10000 100000)
# Before each series it prints what else runs: the load, real-time processes that are not
# the kernel's, bridges and keepalived left running (a survivor whose control thread
# cannot run loses everything until it can: docs/operations.md). Per run, where the
# stream went on the survivor; the logs of the bridges and keepalived are kept in
# /tmp/ha-hostdeath-RATE.d, the test's log in /tmp/ha-hostdeath-RATE.log.
set -eu
build=${1:-build}
runs=${2:-10}
shift 2 2>/dev/null || shift $#
rates=${*:-10000 100000}
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
for rate in $rates; do
	echo "rate $rate: load $(cut -d' ' -f1-3 /proc/loadavg);" \
		"real-time: $(ps -eo cls=,rtprio=,comm= | awk '$1 != "TS" && $1 != "-" && $3 !~ /^(migration|watchdog|irq|rcu|cpuhp|idle_inject)/ { printf "%s(%s %s) ", $3, $1, $2 }')" \
		"running: $(pgrep -c -x ib2roce || true) ib2roce, $(pgrep -c -x keepalived || true) keepalived"
	log=$(mktemp)
	keep=/tmp/ha-hostdeath-$rate.d
	rm -rf "$keep"
	mkdir -p "$keep"
	TH_RATE=$rate TH_DEATH_RUNS=$runs KA_KILL_MAX_LOST=$((rate * 10)) TH_KEEP_LOGS=$keep \
		meson test -C "$build" ha-twohost -t 10 >/dev/null 2>&1 || echo "rate $rate: the test failed (its log: /tmp/ha-hostdeath-$rate.log)"
	cp "$build/meson-logs/testlog.txt" "$log"
	cp "$log" "/tmp/ha-hostdeath-$rate.log"
	sed -n 's/^ha-twohost: \(partition between.*\|heal: .*\)$/rate '"$rate"': \1/p' "$log"
	sed -n 's/^ha-twohost: hostdeath run \([0-9]*\): a IB /rate '"$rate"' run \1: survivor /p' "$log"
	# Per run: lost, and lost less the survivor's NIC drops of that run.
	for col in 1 2; do
		sed -n 's/^ha-twohost: hostdeath rate=[0-9]* lost=\([0-9]*\) ms=[0-9]* nic_drops=\([0-9]*\)$/\1 \2/p' "$log" |
			awk -v c="$col" '{ print c == 1 ? $1 : ($1 > $2 ? $1 - $2 : 0) }' | sort -n |
			awk -v r="$rate" -v c="$col" '{ v[NR] = $1 } END {
				if (!NR) { print "rate " r ": no runs"; exit }
				m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "rate %d pps: %d runs, %s median %s (%.1f ms), range %d-%d (%.1f-%.1f ms)\n",
					r, NR, c == 1 ? "lost" : "lost less NIC drops", m, m * 1000 / r,
					v[1], v[NR], v[1] * 1000 / r, v[NR] * 1000 / r }'
	done
	rm -f "$log"
done
