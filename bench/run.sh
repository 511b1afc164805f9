#!/bin/bash
# Run sf_bench on the simulated fabric several times, print the medians and write them
# with every run to bench/results/sf_bench-<date>.json (kept out of git; the numbers of
# record go to docs/benchmarks.md).
#
# Usage: bench/run.sh [-n RUNS] [-B BUILDDIR] [-- SF_BENCH_OPTION...]
#   -n RUNS      repetitions of each mode (default 5)
#   -B BUILDDIR  build directory with simfabric/ and bench/sf_bench (default build)
#   options after -- go to every sf_bench run (both modes), e.g. -- -S 256
# Each repetition runs the rate mode (5 million 64-byte datagrams, as fast as possible)
# and the ping mode (20000 timestamps, one every 100 us): sf_bench's defaults, which
# options after -- change; sender on CPU 0, receiver on CPU 1. Needs two CPUs that are
# otherwise idle.
set -euo pipefail

cd "$(dirname "$0")/.."
runs=5
builddir=build
while getopts "n:B:h" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	B) builddir=$OPTARG ;;
	h)
		sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $runs in
'' | *[!0-9]* | 0)
	echo "run.sh: -n needs a positive number" >&2
	exit 2
	;;
esac

bench=$builddir/bench/sf_bench
if [ ! -x "$bench" ] || [ ! -e "$builddir/simfabric/libibverbs.so.1" ]; then
	echo "run.sh: build first (meson setup $builddir && ninja -C $builddir)" >&2
	exit 1
fi
export LD_LIBRARY_PATH="$builddir/simfabric"
export SIMFABRIC="bench-$$"
unset SIMFABRIC_TOPOLOGY
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sf_bench.XXXXXX")
cleanup() {
	"$builddir/simfabric/simfab" reset >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

for _ in $(seq "$runs"); do
	for mode in rate ping; do
		# A fresh fabric per run: counters and groups of the previous run do not matter
		# to the numbers, but every run then starts from the same state.
		"$builddir/simfabric/simfab" reset >/dev/null
		timeout 120 "$bench" -j -m "$mode" "$@" >>"$tmp/$mode.jsonl"
		tail -n 1 "$tmp/$mode.jsonl" >&2
	done
done

mkdir -p bench/results
out=bench/results/sf_bench-$(date -u +%Y%m%dT%H%M%SZ).json
python3 - "$tmp/rate.jsonl" "$tmp/ping.jsonl" "$out" "$*" <<'EOF'
import json, os, platform, statistics, sys

rate_file, ping_file, out, extra = sys.argv[1:5]
rate = [json.loads(l) for l in open(rate_file)]
ping = [json.loads(l) for l in open(ping_file)]


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


result = {
    "machine": {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
    },
    "options": extra,
    "runs": len(rate),
    "median": {
        "rate": {k: med(rate, k) for k in ("tx_pps", "rx_pps", "lost", "rq_full")},
        "ping": {k: med(ping, k) for k in
                 ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns")},
    },
    "rate_runs": rate,
    "ping_runs": ping,
}
with open(out, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")

r, p = result["median"]["rate"], result["median"]["ping"]
print(f"sf_bench, median of {len(rate)} runs ({result['machine']['cpu']}, "
      f"{result['machine']['cpus']} CPUs)")
print(f"  rate: sent {r['tx_pps'] / 1e6:.2f} Mpps, received {r['rx_pps'] / 1e6:.2f} Mpps, "
      f"lost {r['lost']:.0f} of {rate[0]['sent']}")
print(f"  ping: one-way latency ns p50 {p['p50_ns']:.0f}  p90 {p['p90_ns']:.0f}  "
      f"p99 {p['p99_ns']:.0f}  p99.9 {p['p999_ns']:.0f}  max {p['max_ns']:.0f}")
print(f"  written to {out}")
EOF
