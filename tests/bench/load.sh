#!/bin/bash
# bench/harness.py's accounting on a loaded machine: the scenarios single and pgm, 5 times
# (--quick, timed runs only), each beside a CPU hog (a busy loop per CPU) and with the
# bridge held off its CPUs for 1.5 s every 3.5 s (SIGSTOP ... SIGCONT, the "worker
# waited 1 035 ms for a CPU" of the run that failed): every packet of every phase must be
# accounted for (unaccounted 0), at the listener or where a counter names it.
#
# The hogs are not niced: a process at nice 19 weighs 15 against the bridge's 1024 and
# would take almost nothing from it; at nice 0 each takes its CPU's fair share, as the
# other tests of a parallel run do (they are what starved the bridge then). They run
# only while the harness does. The pause is what makes the test deterministic: the hogs
# alone starve the worker for a second only on a crowded machine, the pause always does;
# before harness.py's settle() and its reading of the simulated ports' own counters the
# pause left up to the receive queue's 16 384 packets in no counter.
set -eu
build=$1
src=$2
if [ -n "${BENCH_SANITIZED:-}" ]; then
	echo "bench-load: SKIP: a sanitizer build is not measured"
	exit 77
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-load.XXXXXX")
hogs=()
pauser=
cleanup() {
	for p in "${hogs[@]}" $pauser; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT

ncpu=$(nproc)
for ((i = 0; i < ncpu; i++)); do
	/usr/bin/python3 -c 'while True: pass' &
	hogs+=($!)
done

# The pauser: every ib2roce child of the harness is stopped 1.5 s, then runs 2 s.
pause_bridges() {
	local harness=$1 pids
	while kill -0 "$harness" 2>/dev/null; do
		pids=$(pgrep -P "$harness" -x ib2roce || true)
		if [ -n "$pids" ]; then
			kill -STOP $pids 2>/dev/null || true
			sleep 1.5
			kill -CONT $pids 2>/dev/null || true
			echo x >>"$out/paused"
		fi
		sleep 2
	done
}

for run in 1 2 3 4 5; do
	"$src/bench/harness.py" --quick --no-callgrind -s single,pgm -B "$build" \
		-o "$out/run$run" >"$out/stdout" 2>"$out/stderr" &
	h=$!
	pause_bridges $h &
	pauser=$!
	rc=0
	wait $h || rc=$?
	kill $pauser 2>/dev/null || true
	wait $pauser 2>/dev/null || true
	pauser=
	if [ "$rc" != 0 ]; then
		echo "bench-load: run $run: harness exited $rc" >&2
		cat "$out/stdout" "$out/stderr" >&2
		exit 1
	fi
	grep -A20 '^where the offered' "$out/stdout"
done
echo "bench-load: the bridge was paused $(wc -l <"$out/paused" 2>/dev/null || echo 0) times"
/usr/bin/python3 - "$out" <<'PY'
import json, os, sys

out = sys.argv[1]
n = 0
for run in range(1, 6):
    doc = json.load(open(os.path.join(out, "run%d" % run, "results.json")))
    assert not doc["errors"], doc["errors"]
    seen = set()
    for d in doc["accounting"]:
        for ph, a in d["phases"].items():
            seen.add((d["scenario"], ph))
            named = (a["sender_nic"] + (a["bridge_nic"] or 0) + sum(a["bridge_drops"].values())
                     + a["bridge_rq"] + (a["listener_nic"] or 0))
            assert a["wire"] > 0 and a["wire"] == a["listener"] + named + a["unaccounted"], \
                (run, d["scenario"], ph, a)
            assert a["unaccounted"] == 0, ("packets lost where no counter names them", run,
                                          d["scenario"], ph, a)
            # What the senders counted is what their port put on the wire.
            assert a["sender_port_xmit"] == a["wire"], (run, d["scenario"], ph, a)
            n += 1
    for sc in ("single", "pgm"):
        for ph in ("rate", "below", "latency"):
            assert (sc, ph) in seen, (run, sc, ph)
print("bench-load: %d phases, every packet accounted for" % n)
PY
