#!/bin/bash
# The fault-injection soak (tests/soak/soak.sh) for as long as asked: a steady stream
# both ways through a bridge on the simulated fabric while seeded faults are injected;
# every identity is checked at the end of each epoch. Prints (and writes to
# bench/results/soak-<date>-seed<S>.txt) the faults injected per class and the
# identities' results; on a failure, the failing identity and the logs of the processes
# involved. See docs/operations.md, "The soak".
#
# Usage: bench/soak.sh --minutes N [--seed S] [--epoch SECS] [--faults "CLASS..."] [-B BUILDDIR]
#   --minutes N     minutes of faults (the checks come on top)
#   --seed S        seeds the fault PRNG (default: from the clock; printed, so a failure
#                   can be replayed with the same seed)
#   --epoch SECS    seconds of faults between checkpoints (default 20)
#   --faults LIST   only these fault classes (names as in the report)
#   -B BUILDDIR     build directory (default build)
# Exit status: 0 when every identity held, 1 when one did not, 2 for usage errors.
set -euo pipefail

cd "$(dirname "$0")/.."
minutes="" seed=$(($(date +%s) % 32768)) builddir=build
usage() {
	sed -n '9,15p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) minutes=${2:-} && shift 2 ;;
	--seed) seed=${2:-} && shift 2 ;;
	--epoch) export SOAK_EPOCH=${2:-} && shift 2 ;;
	--faults) export SOAK_CLASSES=${2:-} && shift 2 ;;
	-B) builddir=${2:-} && shift 2 ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
done
case "$minutes" in '' | *[!0-9]* | 0) echo "soak.sh: --minutes needs a positive number" >&2 && usage ;; esac
case "$seed" in '' | *[!0-9]*) echo "soak.sh: --seed needs a number" >&2 && usage ;; esac
b=$builddir
for f in simfabric/simfab simfabric/libibverbs.so.1 app/ib2roce tools/bcom \
	tests/bridge/mcpkt; do
	[ -e "$b/$f" ] || { echo "soak.sh: $b/$f missing: build first (meson setup $b && ninja -C $b)" >&2 && exit 1; }
done
mkdir -p bench/results
report=bench/results/soak-$(date -u +%Y%m%dT%H%M%S)-seed$seed.txt
echo "soak.sh: $minutes min, seed $seed, report in $report"
rc=0
SIMLIB=$PWD/$b/simfabric SIMFAB=$PWD/$b/simfabric/simfab IB2ROCE=$PWD/$b/app/ib2roce \
	MCPKT=$PWD/$b/tests/bridge/mcpkt BCOM=$PWD/$b/tools/bcom \
	tests/soak/soak.sh $((minutes * 60)) "$seed" "$report" 2>&1 | tee "$report.log" || rc=$?
if [ "$rc" != 0 ]; then
	echo "soak.sh: FAILED (seed $seed): see $report.log; replay with --seed $seed"
fi
exit "$rc"
