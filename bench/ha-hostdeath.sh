#!/bin/bash
# Whole-host death of an HA pair on two "hosts" (tests/ha/twohost.sh, th-lib.sh): the
# packets lost while the surviving host's keepalived takes the dead host's partition,
# RUNS times at each RATE, the median and the range in packets and ms; also the split
# brain of the test's partition (duplicates, losses). For docs/operations.md, "What each
# failure costs". As root, from a configured build directory:
#   bench/ha-hostdeath.sh [BUILD_DIR] [RUNS] [RATE...]   (defaults: build 10 10000 100000)
# HD_BATCH=N: interleaved: the test runs N deaths at a time, at each rate (and each
# HD_PRIOS variant) in turn, until RUNS deaths of each; the partition part is left out
# (TH_NO_SPLIT), and before each death the same stream runs without one (TH_BASELINE:
# the loss that the rate alone costs on this machine). Without HD_BATCH: RUNS deaths in
# one test per rate, one rate after the other, the partition part included.
# HD_VARIANTS="NAME:VAR=VALUE,VAR=VALUE;NAME:...": the settings to compare, each in its
# own series, interleaved (the test's environment: TH_PRIO=LOW/HIGH, the VRRP priorities
# of tests/ha/twohost.sh; KA_NOTIFY_RT=N, the notify reader's real-time priority, empty:
# time-shared; TH_RQDEPTH=N, the bridges' receive queue depth; default: one variant,
# the test's own settings). HD_BASELINE=0: no
# baseline streams. The series of docs/operations.md:
#   HD_BATCH=5 HD_BASELINE=0 HD_VARIANTS="ts:KA_NOTIFY_RT=;rt:KA_NOTIFY_RT=1" \
#     bench/ha-hostdeath.sh build 10 10000 100000
# and the receive depths (TH_RQDEPTH: the bridges' rqdepth, the test's default 16384):
#   HD_BATCH=3 HD_VARIANTS="rq2k:TH_RQDEPTH=2048;rq16k:TH_RQDEPTH=16384" \
#     bench/ha-hostdeath.sh build 6 100000
# Per run it also prints the loss's structure (the listener's and the sender's mcpkt
# traces, the fabric's port drop counters: tests/lib/ka.sh, ka_loss_structure):
# `takeover`, the packets missing where the forwarding source went from the dead bridge
# to the survivor, `last_old` and `first_new` (ms after the kill) when the packets
# around that gap arrived, `due_first`/`due_end` when the sender was due to send the
# first missing one and the one after the gap; `pre` and `post`, the packets of the
# other gaps before and after it ("packets/gaps"); `tail`; `oob_a_before` and
# `oob_a_after`, the survivor's IB port drops (no receive posted) before the kill
# (standby: no loss) and after it; `oob_b_before`, the dead bridge's before the kill
# (lost); `oob_listener`, the listener's; `standby_after`, what the survivor dropped as
# standby after the counters were read before the kill; `lag_kill`, the sender's
# largest lateness (ms) in an episode that began within 100 ms of the kill. Then the
# median of each, and of the baseline's parts (pre: all its gaps).
# Before each test it prints what else runs: the load, real-time processes that are not
# the kernel's, bridges and keepalived left running (a survivor whose control thread
# cannot run loses everything until it can: docs/operations.md). Per run, where the
# stream went on the survivor and the takeover's steps in ms after the kill (keepalived's
# MASTER event read by the notify reader, its `role active` returned, the survivor's log
# of the change); the logs of the bridges, keepalived and the notify readers' traces are
# kept in /tmp/ha-hostdeath-VARIANT.d (the last test of it), the test's log in
# /tmp/ha-hostdeath-VARIANT.log (all of them).
set -eu
build=${1:-build}
runs=${2:-10}
shift 2 2>/dev/null || shift $#
rates=${*:-10000 100000}
batch=${HD_BATCH:-}
vspec=${HD_VARIANTS:-}
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"

# variants: "RATE NAME" (NAME "-": the test's own settings); venv[NAME]: its settings.
declare -A venv=([-]="")
variants=()
IFS=';' read -ra vl <<<"$vspec"
[ ${#vl[@]} -gt 0 ] || vl=(-)
for rate in $rates; do
	for v in "${vl[@]}"; do
		variants+=("$rate ${v%%:*}")
		[ "$v" = - ] || venv[${v%%:*}]=${v#*:}
	done
done
vname() { if [ "$2" = - ]; then echo "$1"; else echo "$1-$2"; fi; }
for v in "${variants[@]}"; do
	# shellcheck disable=SC2086 # two words
	rm -f "/tmp/ha-hostdeath-$(vname $v).log"
done

# one RATE NAME N: N deaths in one test; its log appended to the variant's.
one() {
	local rate=$1 vn=$2 n=$3 name keep extra=()

	name=$(vname "$rate" "$vn")
	keep=/tmp/ha-hostdeath-$name.d
	rm -rf "$keep"
	mkdir -p "$keep"
	echo "$name: load $(cut -d' ' -f1-3 /proc/loadavg);" \
		"real-time: $(ps -eo cls=,rtprio=,comm= | awk '$1 != "TS" && $1 != "-" && $3 !~ /^(migration|watchdog|irq|rcu|cpuhp|idle_inject)/ { printf "%s(%s %s) ", $3, $1, $2 }')" \
		"running: $(pgrep -c -x ib2roce || true) ib2roce, $(pgrep -c -x keepalived || true) keepalived"
	[ -z "${venv[$vn]}" ] || IFS=, read -ra extra <<<"${venv[$vn]}"
	[ -z "$batch" ] || extra+=(TH_NO_SPLIT=1)
	[ -z "$batch" ] || [ "${HD_BASELINE:-1}" = 0 ] || extra+=(TH_BASELINE=1)
	echo "$name: settings: ${extra[*]}"
	env "${extra[@]}" TH_RATE="$rate" TH_DEATH_RUNS="$n" KA_KILL_MAX_LOST=$((rate * 10)) \
		TH_KEEP_LOGS="$keep" meson test -C "$build" ha-twohost -t 10 >/dev/null 2>&1 ||
		echo "$name: the test failed (its log: /tmp/ha-hostdeath-$name.log)"
	cat "$build/meson-logs/testlog.txt" >>"/tmp/ha-hostdeath-$name.log"
}

if [ -z "$batch" ]; then
	for v in "${variants[@]}"; do
		# shellcheck disable=SC2086 # two words
		one $v "$runs"
	done
else
	done_n=0
	while [ "$done_n" -lt "$runs" ]; do
		n=$((runs - done_n < batch ? runs - done_n : batch))
		for v in "${variants[@]}"; do
			# shellcheck disable=SC2086 # two words
			one $v "$n"
		done
		done_n=$((done_n + n))
	done
fi

# median LABEL UNIT_DIV: the values on stdin (one a line): "LABEL: N values, median M
# (range A-B)"; UNIT_DIV > 0 also prints them in ms (value * 1000 / UNIT_DIV).
median() {
	sort -n | awk -v l="$1" -v r="$2" '{ v[NR] = $1 } END {
		if (!NR) { print l ": no runs"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s: %d runs, median %s, range %s-%s", l, NR, m, v[1], v[NR]
		if (r > 0) printf " (%.1f ms, %.1f-%.1f ms)", m * 1000 / r, v[1] * 1000 / r, v[NR] * 1000 / r
		printf "\n" }'
}

for v in "${variants[@]}"; do
	# shellcheck disable=SC2086 # two words
	set -- $v
	rate=$1
	name=$(vname "$@")
	log=/tmp/ha-hostdeath-$name.log
	sed -n 's/^ha-twohost: \(partition between.*\|heal: .*\)$/'"$name"': \1/p' "$log"
	sed -n 's/^ha-twohost: hostdeath run \([0-9]*\): a IB /'"$name"' run \1: survivor /p' "$log"
	sed -n 's/^ha-twohost: hostdeath steps run \([0-9]*\) rate=[0-9]*: /'"$name"' run \1: ms after the kill: /p' "$log"
	sed -n 's/^ha-twohost: hostdeath rate=[0-9]* lost=\([0-9]*\) .*/\1/p' "$log" |
		median "$name lost" "$rate"
	# Lost less the survivor's NIC drops of that run.
	sed -n 's/^ha-twohost: hostdeath rate=[0-9]* lost=\([0-9]*\) ms=[0-9]* nic_drops=\([0-9]*\)$/\1 \2/p' "$log" |
		awk '{ print ($1 > $2 ? $1 - $2 : 0) }' | median "$name lost less NIC drops" "$rate"
	sed -n 's/^ha-twohost: hostdeath baseline rate=[0-9]* lost=\([0-9]*\) .*/\1/p' "$log" |
		median "$name baseline (same stream, no death) lost" "$rate"
	# The loss's structure per run (tests/ha/twohost.sh, ka_loss_structure of
	# tests/lib/ka.sh: packets, times in ms after the kill) and the median of each part.
	sed -n 's/^ha-twohost: hostdeath structure run \([0-9]*\) rate=[0-9]*: /'"$name"' run \1: structure: /p' "$log"
	sed -n 's/^ha-twohost: hostdeath baseline structure run \([0-9]*\): /'"$name"' baseline \1: structure: /p' "$log"
	for key in takeover last_old first_new due_first due_end pre post tail late oob_a_before \
		oob_a_after oob_b_before oob_listener standby_after lag_kill; do
		sed -n 's/^ha-twohost: hostdeath structure run .* '"$key"'=\(-\?[0-9.]*\).*/\1/p' "$log" |
			median "$name structure: $key" 0
	done
	for key in pre oob_b oob_listener; do
		sed -n 's/^ha-twohost: hostdeath baseline structure run .* '"$key"'=\(-\?[0-9.]*\).*/\1/p' "$log" |
			median "$name baseline structure: $key" 0
	done
	for step in read "done" active; do
		sed -n 's/^ha-twohost: hostdeath steps run .* '"$step"'=\(-\?[0-9]*\) .*/\1/p' "$log" |
			median "$name ms from the kill to $step" 0
	done
done
