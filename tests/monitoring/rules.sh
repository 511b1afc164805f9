#!/bin/bash
# The shipped alert rules (monitoring/ib2roce.rules.yml): `promtool check rules` and
# `promtool test rules` (rules-test.yml, a healthy pair first: nothing fires; and
# tests/ha/rules-test.yml for the partitions). Every
# alert has a summary, a description naming a console command that exists (bcom help),
# a test where it fires and one where it does not, and a runbook section in
# docs/operations.md ("#### IB2RoCEName"). The dashboard names only metrics the bridge
# exports (docs/metrics.md) and shows every metric an alert reads. Skipped without promtool (Debian: prometheus).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
rules=$src/monitoring/ib2roce.rules.yml
command -v promtool >/dev/null || { echo "SKIP: no promtool"; exit 77; }
fail() {
	echo "monitoring-rules: FAIL: $*" >&2
	exit 1
}
promtool check rules "$rules" || fail "promtool check rules"
# The HA pair's partition alerts are tested in tests/ha/rules-test.yml.
promtool test rules "$here/rules-test.yml" "$src/tests/ha/rules-test.yml" ||
	fail "promtool test rules"
python3 - "$rules" "$here/rules-test.yml" "$src/docs/operations.md" "$src" \
	"$src/tests/ha/rules-test.yml" "$src/docs/metrics.md" "$src/monitoring/ib2roce.dashboard.json" \
	<<'PY' || fail "rules checks"
import glob, re, sys, yaml
rules, test, ops = (open(p).read() for p in sys.argv[1:4])
test2 = open(sys.argv[5]).read()
# The console's commands: each module registers its table (console_cmd_register).
console = "".join(open(p).read() for d in ("control", "ops", "app")
                  for p in glob.glob(f"{sys.argv[4]}/{d}/*.c"))
cmds = set(re.findall(r'\{\{"([a-z_]+)"', console))
alerts = [r for g in yaml.safe_load(rules)["groups"] for r in g["rules"] if "alert" in r]
fired, quiet = set(), set()
for t in yaml.safe_load(test)["tests"] + yaml.safe_load(test2)["tests"]:
    for a in t.get("alert_rule_test", []):
        (fired if a.get("exp_alerts") else quiet).add(a["alertname"])
bad = []
for r in alerts:
    n, ann = r["alert"], r.get("annotations", {})
    if not ann.get("summary"):
        bad.append(f"{n}: no summary")
    used = re.findall(r"`bcom ([a-z_]+)", ann.get("description", ""))
    if not used:
        bad.append(f"{n}: the description names no bcom command")
    bad += [f"{n}: bcom {c} is no console command" for c in used if c not in cmds]
    if n not in fired:
        bad.append(f"{n}: no test where it fires")
    if n not in quiet:
        bad.append(f"{n}: no test where it stays quiet")
    if not re.search(rf"^#### {n}\b", ops, re.M):
        bad.append(f"{n}: no runbook section '#### {n}' in docs/operations.md")
    if "for" in r and re.search(r"increase\(.*\[1m\]", r["expr"]):
        bad.append(f"{n}: a loss alert with a for: clause")
# The dashboard: every metric a query names is one the bridge exports (docs/metrics.md's
# table; tests/console/metrics.sh checks the same against a live scrape), and every
# ib2roce metric an alert reads has a panel.
import json
metrics_md = open(sys.argv[6]).read()
doc = set(re.findall(r"^\| `(ib2roce_[a-z_]+)`", metrics_md, re.M))
dash = json.load(open(sys.argv[7]))
def exprs(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "expr":
                yield v
            else:
                yield from exprs(v)
    elif isinstance(o, list):
        for v in o:
            yield from exprs(v)
def names(e):
    return {re.sub(r"_(bucket|sum|count)$", "", n) for n in re.findall(r"ib2roce_[a-z_]+", e)}
dnames = set().union(*(names(e) for e in exprs(dash)))
bad += [f"dashboard: {n} is not exported (not in docs/metrics.md)" for n in sorted(dnames - doc)]
for r in alerts:
    rn = names(r["expr"])
    bad += [f"{r['alert']}: {n} is not exported (not in docs/metrics.md)" for n in sorted(rn - doc)]
    bad += [f"{r['alert']}: no dashboard panel shows {n}" for n in sorted(rn - dnames)]
print("\n".join(bad) or f"{len(alerts)} alerts checked, {len(dnames)} dashboard metrics")
sys.exit(1 if bad else 0)
PY
echo "monitoring-rules: PASS"
