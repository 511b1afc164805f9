#!/bin/bash
# bench/harness.py --quick (scenarios single and pgm, timed and under callgrind) against
# the same build as baseline: it exits 0 and writes results.json (both builds, every
# scenario with a rate and instructions per packet, the new/old ratios, the machine and
# build fields), results.csv (a row per scenario, build and metric) and three PNG plots
# that decode, and every packet of every phase is accounted for (at the listener or in a
# named drop counter: unaccounted 0). Numbers are not judged: this is not a timing test.
set -eu
build=$1
src=$2
if [ -n "${BENCH_SANITIZED:-}" ]; then
	echo "bench-smoke: SKIP: a sanitizer build is not measured (callgrind cannot run ASan)"
	exit 77
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-smoke.XXXXXX")
trap 'rm -rf "$out"' EXIT

if ! nice "$src/bench/harness.py" --quick -B "$build" --baseline "$build" -o "$out" \
	>"$out/stdout" 2>"$out/stderr"; then
	echo "bench-smoke: harness failed" >&2
	cat "$out/stdout" "$out/stderr" >&2
	exit 1
fi
cat "$out/stdout"
/usr/bin/python3 - "$out" <<'PY'
import csv, json, os, sys
import matplotlib.image

out = sys.argv[1]
doc = json.load(open(os.path.join(out, "results.json")))
for k in ("commit", "buildtype", "compiler"):
    assert all(b.get(k) for b in doc["builds"]), "build field %s missing" % k
assert [b["label"] for b in doc["builds"]] == ["old", "new"], doc["builds"]
for k in ("cpu", "kernel", "cpus"):
    assert doc["machine"].get(k), "machine field %s missing" % k
assert not doc["errors"], doc["errors"]
assert set(doc["results"]) == {"single", "pgm"}, doc["results"].keys()
for name, per_build in doc["results"].items():
    for label in ("old", "new"):
        r = per_build[label]
        assert r["rate_pps"] and r["rate_pps"]["median"] > 0, (name, label, r)
        assert r["ipp"] and r["ipp"]["median"] > 0, (name, label, r)
        assert r["p50"] and r["p50"]["median"] > 0, (name, label, r)
    assert doc["ratios_new_over_old"][name]["ipp"] > 0
# Every packet each phase put on the wire is accounted for: at the listener, or dropped
# where a counter names it (the bridge's NIC, a bridge drop reason, the listener's NIC).
phases = set()
for d in doc["accounting"]:
    for ph, a in d["phases"].items():
        phases.add((d["scenario"], d["build"], ph))
        named = (a["sender_nic"] + (a["bridge_nic"] or 0) + sum(a["bridge_drops"].values()) +
                 a["bridge_rq"] + (a["listener_nic"] or 0))
        assert a["listener_nic"] is not None and a["bridge_nic"] is not None, (d, ph, a)
        assert a["wire"] > 0 and a["wire"] == a["listener"] + named + a["unaccounted"], (d, ph, a)
        assert a["unaccounted"] == 0, ("packets lost where no counter names them", d, ph, a)
for name in ("single", "pgm"):
    for label in ("old", "new"):
        for ph in ("rate", "below", "latency"):
            assert (name, label, ph) in phases, (name, label, ph)
        assert doc["results"][name][label]["loss_below"] is not None, (name, label)
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
seen = {(r["scenario"], r["build"], r["metric"]) for r in rows}
for name in ("single", "pgm"):
    for label in ("old", "new"):
        for m in ("rate_pps", "ipp", "p50"):
            assert (name, label, m) in seen, (name, label, m)
            float(next(r["median"] for r in rows
                       if (r["scenario"], r["build"], r["metric"]) == (name, label, m)))
for png in ("rate.png", "latency.png", "ipp.png"):
    img = matplotlib.image.imread(os.path.join(out, png))
    assert img.shape[0] > 100 and img.shape[1] > 100, (png, img.shape)
print("bench-smoke: results.json, results.csv and 3 PNGs parse")
PY
