#!/bin/bash
# The bridge's benchmark on the simulated fabric (issue 3): forwarded packets/s with one
# worker and the latency the bridge adds, against a direct sender -> listener path on
# the same fabric, and the engine's instructions per forwarded packet (callgrind,
# excluding the simulated libraries) with 1 and 10 000 senders of payloads that are not
# PGM, PGM inspection on and off, and with one PGM ODATA stream.
#
# Usage: bench/bridge_bench.sh [-n RUNS] [-B BUILDDIR] [-c] [-C] [-s SCENARIOS] [-p]
#   -n RUNS  repetitions of the timed measurements (default 5; medians are reported)
#   -B DIR   build directory (default build)
#   -c       callgrind only; -C: skip callgrind
#   -s LIST  callgrind scenarios, blank-separated (default "1 10000 pgm"):
#            N     N senders (QPs) of one source to one group (1: sf_bench, else mcpkt)
#            pgm   one PGM ODATA stream (sf_bench -P)
#            gN    N groups from one sender, interleaved packet by packet (mcpkt --groups)
#            gNqM  N groups and M senders, every packet another (group, sender)
#   -p, -P   callgrind with PGM inspection on only, off only (default: on, and off for the non-PGM
#            scenarios)
# Writes bench/results/bridge-<date>.txt (not in git); docs/benchmarks.md has the numbers
# of record. Needs the machine otherwise idle. BB_KEEP=1 keeps the callgrind outputs (the
# log says where); BB_CG_OPTS adds valgrind options (e.g. --dump-instr=yes for
# callgrind_annotate per instruction).
#
# Paths measured (64-byte payload, sf_bench -J: rdma_cm joins, sender sim_ib1 on CPU 0,
# listener on CPU 1, the bridge's worker on CPU 0):
#   direct:  sim_ib1 -> sim_ib2 (IB multicast, no bridge)
#   bridged: sim_ib1 -> ib2roce (sim_ib0 <-> sim_roce0, 1 worker) -> sim_roce2
set -euo pipefail

cd "$(dirname "$0")/.."
runs=5
builddir=build
do_timed=1
do_cg=1
scenarios="1 10000 pgm"
pgm_modes=("" "-y pgm")
while getopts "n:B:cCs:pPh" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	B) builddir=$OPTARG ;;
	c) do_timed=0 ;;
	C) do_cg=0 ;;
	s) scenarios=$OPTARG ;;
	p) pgm_modes=("") ;;
	P) pgm_modes=("-y pgm") ;;
	h)
		sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) exit 2 ;;
	esac
done

bench=$builddir/bench/sf_bench
bridge=$builddir/app/ib2roce
mcpkt=$builddir/tests/bridge/mcpkt
for f in "$bench" "$bridge"; do
	[ -x "$f" ] || {
		echo "bridge_bench: build first: missing $f" >&2
		exit 1
	}
done
case $builddir in
/*) export LD_LIBRARY_PATH=$builddir/simfabric ;;
*) export LD_LIBRARY_PATH=$PWD/$builddir/simfabric ;;
esac
export SIMFABRIC=bridgebench$$
group=239.255.1.1
mkdir -p bench/results
out=bench/results/bridge-$(date +%Y%m%d-%H%M%S).txt
tmp=$(mktemp -d)
bpid=""
mgroups=()

cleanup() {
	[ -n "$bpid" ] && kill -INT "$bpid" 2>/dev/null && wait "$bpid" 2>/dev/null
	rm -rf /dev/shm/simfabric."$SIMFABRIC"*
	[ -n "${BB_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

log() {
	echo "$*" | tee -a "$out"
}

# bridge_start LOG ARGS...: ib2roce bridging $group between sim_ib0 and sim_roce0, or the
# groups in the array mgroups (-m options) when it is set.
bridge_start() {
	local logf=$1 n=0

	shift
	rm -rf /dev/shm/simfabric."$SIMFABRIC"*
	[ "${#mgroups[@]}" -gt 0 ] || mgroups=(-m "$group")
	"$@" --debug --control "$logf.sock" -d sim_ib0 -r sim_roce0 -e statint=0 "${mgroups[@]}" \
		>"$logf" 2>"$logf.err" &
	bpid=$!
	until grep -q 'joined on both sides' "$logf.err" 2>/dev/null; do
		n=$((n + 1))
		[ "$n" -lt 9000 ] || { # 15 min: joins under callgrind on a loaded machine
			echo "bridge did not join" >&2
			cat "$logf.err" >&2
			# Called in a command substitution (cg_run), whose exit runs no trap.
			kill -KILL "$bpid" 2>/dev/null
			exit 1
		}
		sleep 0.1
	done
}

bridge_stop() {
	kill -INT "$bpid"
	wait "$bpid" || true
	bpid=""
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

# rate DEV: received Mpps at the listener for a blast of 2M packets.
rate() {
	timeout 120 "$bench" -J -s sim_ib1 -r "$1" -n 2000000 -Q 32768 |
		sed -n 's/.*received .*: \([0-9.]*\) Mpps.*/\1/p'
}

# ping DEV: "p50 p90 p99" one-way latency in ns.
ping() {
	timeout 120 "$bench" -J -m ping -s sim_ib1 -r "$1" -n 20000 |
		sed -n 's/.* p50 \([0-9]*\) p90 \([0-9]*\) p99 \([0-9]*\) .*/\1 \2 \3/p'
}

log "# bridge_bench $(date -u +%FT%TZ) on $(nproc) CPUs, $runs runs"
if [ "$do_timed" = 1 ]; then
	: >"$tmp/direct"
	: >"$tmp/bridged"
	: >"$tmp/ratio"
	: >"$tmp/lat_direct"
	: >"$tmp/lat_bridged"
	for i in $(seq "$runs"); do
		rm -rf /dev/shm/simfabric."$SIMFABRIC"*
		d=$(rate sim_ib2)
		dl=$(ping sim_ib2)
		# The worker shares CPU 0 with the sender (idle between pings), the listener
		# spins on CPU 1: three busy threads on two CPUs in the rate runs.
		bridge_start "$tmp/b$i" "$bridge" --workers 1 --cpus 0 -e buffers=65536 \
			-e rqdepth=16384
		b=$(rate sim_roce2)
		bl=$(ping sim_roce2)
		bridge_stop
		echo "$d" >>"$tmp/direct"
		echo "$b" >>"$tmp/bridged"
		awk -v b="$b" -v d="$d" 'BEGIN { printf "%.3f\n", b / d }' >>"$tmp/ratio"
		echo "$dl" >>"$tmp/lat_direct"
		echo "$bl" >>"$tmp/lat_bridged"
		log "run $i: direct ${d} Mpps, bridged ${b} Mpps; latency ns (p50 p90 p99) direct $dl, bridged $bl"
	done
	log "median: direct $(median <"$tmp/direct") Mpps, bridged $(median <"$tmp/bridged") Mpps, ratio $(median <"$tmp/ratio")"
	for k in 1 2 3; do
		dk=$(cut -d' ' -f"$k" "$tmp/lat_direct" | median)
		bk=$(cut -d' ' -f"$k" "$tmp/lat_bridged" | median)
		log "median latency p$(echo "50 90 99" | cut -d' ' -f"$k"): direct $dk ns, bridged $bk ns, added $((bk - dk)) ns"
	done
fi

# Engine instructions per forwarded packet. The bridge (1 spinning worker) runs under
# callgrind, collecting only inside chan_burst (what a non-empty burst of completions
# costs: classify, forward, post, retire, refill); counted are the instructions executed
# in the ib2roce binary itself (bench/cg_engine.awk: the engine, pool and PGM code, not
# the simulated libibverbs it calls, not libc). The sender offers 500 kpps in chained
# bursts; the bridge is slowed by callgrind, so its bursts are full. Per packet = the
# difference of two runs' counts divided by the difference of their forwarded packets
# (start-up and first-sight costs cancel: with 10 000 senders the runs offer 40 and 120
# packets per sender, so that every sender is recorded in both).
cg_run() { # N SCENARIO PGM_ARGS -> "Ir forwarded" (N: packets offered)
	local n=$1 sc=$2 f="$tmp/cg.$1.$2" fwd ng=1 nq=1 i

	case $sc in
	g*q*) ng=${sc#g} ng=${ng%q*} nq=${sc#*q} ;;
	g*) ng=${sc#g} ;;
	pgm) ;;
	*) nq=$sc ;;
	esac
	# A channel pair holds 240 groups on the simulated ConnectX (mcqp): the receive
	# queues of all pairs must fit in the 32768 buffers.
	rq=8192
	while [ $((2 * ((ng + 239) / 240) * rq)) -gt 16384 ]; do
		rq=$((rq / 2))
	done
	mgroups=()
	for ((i = 0; i < ng; i++)); do
		mgroups+=(-m "239.255.$((1 + (i + 1) / 256)).$(((i + 1) % 256))") # from $group on
	done
	# --fair-sched=yes: valgrind runs one thread at a time, and without a fair lock the
	# spinning worker starves the control thread (joins of 256 groups: 11 s instead of
	# minutes). join_timeout: the joins of thousands of groups take longer than the
	# default 30 s under callgrind, and a bridge that became ready at the timeout logs
	# "joined on both sides" only since 2026-11-25 (a build before that never would).
	# shellcheck disable=SC2086 # $3: the PGM option, or nothing
	bridge_start "$f.log" valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$f" \
		--collect-atstart=no --toggle-collect=chan_burst \
		--toggle-collect=chan_burst_mixed ${BB_CG_OPTS:-} \
		"$bridge" --workers 1 -e buffers=32768 -e rqdepth=$rq -e join_timeout=3600 \
		-e senders=$((nq > 16384 ? 2 * nq : 16384)) $3
	if [ "$sc" = 1 ] || [ "$sc" = pgm ]; then
		# shellcheck disable=SC2046 # -P (PGM ODATA payloads) or nothing
		timeout 300 "$bench" -J -s sim_ib1 -r sim_roce2 -n "$n" -R 500000 \
			$([ "$sc" = pgm ] && echo -P) >/dev/null
	else
		timeout 900 "$mcpkt" send -b 198.18.0.2 -g "$group" -n $((n / nq / ng)) \
			--groups "$ng" --qps "$nq" -s 64 --rate 500000 >/dev/null
	fi
	sleep 2
	bridge_stop
	mgroups=()
	fwd=$(sed -n 's/^IB .* fwd_pkts=\([0-9]*\).*/\1/p' "$f.log")
	echo "$(awk -v obj=ib2roce -f bench/cg_engine.awk "$f")" \
		"$(awk -v obj=ib2roce -v sim=/simfabric/ -f bench/cg_engine.awk "$f") $fwd"
}

if [ "$do_cg" = 1 ]; then
	command -v valgrind >/dev/null || {
		echo "bridge_bench: valgrind missing" >&2
		exit 1
	}
	for pgm in "${pgm_modes[@]}"; do
		for sc in $scenarios; do
			[ "$sc" != pgm ] || [ -z "$pgm" ] || continue
			if [ "$sc" != 1 ] && [ "$sc" != pgm ] && [ ! -x "$mcpkt" ]; then
				log "callgrind, $sc: skipped ($mcpkt missing)"
				continue
			fi
			# 40 and 120 packets per (group, sender) with more than one, so that every
			# one is seen in both runs and first-sight costs cancel.
			case $sc in
			1 | pgm) na=40000 ;;
			g*q*) na=$((40 * $(echo "${sc#g}" | tr q '*'))) ;;
			g*) na=$((40 * ${sc#g})) ;;
			*) na=$((40 * sc)) ;;
			esac
			[ "$na" -ge 40000 ] || na=$((na * ((40000 + na - 1) / na)))
			read -r ia ja fa <<<"$(cg_run "$na" "$sc" "$pgm")"
			read -r ib jb fb <<<"$(cg_run $((3 * na)) "$sc" "$pgm")"
			case $sc in
			pgm) what="1 sender of PGM ODATA (sf_bench -P)" ;;
			g*q*) what="$(echo "${sc#g}" | sed 's/q/ groups x /') senders, interleaved" ;;
			g*) what="${sc#g} groups from 1 sender, interleaved" ;;
			*) what="$sc sender(s)" ;;
			esac
			log "callgrind, $what, PGM inspection ${pgm:+off (}${pgm:-on}${pgm:+)}: engine Ir $ia for $fa forwarded, $ib for $fb: $(((ib - ia) / (fb - fa))) instructions per forwarded packet (difference); $((ib / fb)) (average of the second run); with the libc and liburcu calls (issue 11's count): $(((jb - ja) / (fb - fa))) (difference), $((jb / fb)) (average)"
		done
	done
fi
[ -z "${BB_KEEP:-}" ] || log "kept: $tmp"
log "results: $out"
