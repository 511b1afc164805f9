#!/bin/bash
# bench/harness.py -s drain --quick --no-callgrind (issue 28): one worker empties a
# receive queue filled while it was stopped, at 1, 1000, 4096 and 16000 groups. It exits
# 0; results.json has a drain entry per group count, each with 3 bursts timed (--quick;
# a burst the watch could not time is replaced, 6 at most), every packet the sender sent
# (the first burst and one per round, 30 000 each) forwarded: none lost at the bridge's
# NIC (a burst fits in its receive queue: what the scenario relies on), none dropped,
# none unaccounted; the printed table has a row per group count. Numbers are not judged:
# this is not a timing test.
set -eu
build=$1
src=$2
if [ -n "${BENCH_SANITIZED:-}" ]; then
	echo "bench-drain: SKIP: a sanitizer build is not measured"
	exit 77
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-drain.XXXXXX")
trap 'rm -rf "$out"' EXIT

if ! nice "$src/bench/harness.py" --quick --no-callgrind -s drain -B "$build" -o "$out" \
	>"$out/stdout" 2>"$out/stderr"; then
	echo "bench-drain: harness failed" >&2
	cat "$out/stdout" "$out/stderr" >&2
	exit 1
fi
cat "$out/stdout"
/usr/bin/python3 - "$out" <<'PY'
import json, os, sys

out = sys.argv[1]
doc = json.load(open(os.path.join(out, "results.json")))
assert not doc["errors"], doc["errors"]
runs = doc["drain"]
assert sorted(r["groups"] for r in runs) == [1, 1000, 4096, 16000], runs
for r in runs:
    assert r["fill"] == 30000, r
    assert r["sent"] == (4 + r["untimed"]) * r["fill"] and r["untimed"] <= 3, r
    assert r["fwd"] == r["sent"] and r["drops"] == 0 and r["nic_drop"] == 0, r
    assert r["unaccounted"] == 0, ("packets lost where no counter names them", r)
    assert len(r["rounds"]) == 3 and all(v > 0 for v in r["rounds"]), ("bursts not timed", r)
    assert r["mpps"] > 0, r
table = open(os.path.join(out, "stdout")).read().split("\ndrain:", 1)
assert len(table) == 2, "no drain table"
rows = [l.split() for l in table[1].splitlines()[2:6]]
assert [int(r[1]) for r in rows] == [1, 1000, 4096, 16000], rows
print("bench-drain: %d runs, every packet forwarded, %d bursts timed"
      % (len(runs), sum(len(r["rounds"]) for r in runs)))
PY
