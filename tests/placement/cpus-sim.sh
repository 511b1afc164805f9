#!/bin/bash
# --cpus on the simulated fabric: a CPU given twice is refused (exit status 2, nothing
# started); with --enable oversubscribe the bridge starts with both workers on that CPU,
# logs one placement line per worker and for the control thread, and shows the plan in
# the console's workers table and in stats --json ("placement"). Under `taskset -c 0`
# (the documented recipe) a worker given --cpus 1 runs on CPU 1, the control thread on 0.
set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init "place-cpus"
group=239.1.2.3

# The dry run with devices that open: their locality through ibdev_path, a plan, exit 0.
rc=0
timeout -k 5 30 "$IB2ROCE" --check --show-placement -d sim_ib0 -r sim_roce0 --workers 1 \
	-m "$group" >"$SF_TMP/dry.out" 2>"$SF_TMP/dry.err" || rc=$?
[ "$rc" = 0 ] || br_fail "--check --show-placement: exit status $rc" dry
for re in '^IB NIC: ' '^RoCE NIC: ' '^worker  cpu core node isolated why$' \
	'^0 +[0-9]+ +[0-9]+ +-?[0-9]+ (yes|no) ' '^control: CPU '; do
	grep -Eq -- "$re" "$SF_TMP/dry.out" ||
		br_fail "--check --show-placement: no line /$re/ in the plan" dry
done

rc=0
timeout -k 5 30 "$IB2ROCE" --debug --control "$SF_TMP/refused.sock" --idle backoff \
	-d sim_ib0 -r sim_roce0 --workers 2 --cpus 1,1 -m "$group" \
	>"$SF_TMP/refused.out" 2>"$SF_TMP/refused.err" || rc=$?
[ "$rc" = 2 ] || br_fail "--cpus 1,1: exit status $rc, expected 2" refused
grep -qF -- '--cpus: workers 0 and 1 on CPU 1: give distinct CPUs, or --enable oversubscribe' \
	"$SF_TMP/refused.err" || br_fail "--cpus 1,1: no message naming the duplicate" refused
if grep -q 'joined' "$SF_TMP/refused.err"; then
	br_fail "--cpus 1,1: the refused bridge joined groups" refused
fi

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 2 --cpus 1,1 -e oversubscribe \
	-m "$group"
for w in 0 1; do
	grep -Eq "ib2roce info: worker $w: CPU 1, core [0-9]+, node -?[0-9]+, isolated (yes|no): --cpus" \
		"$SF_TMP/bridge.err" || br_fail "no placement line for worker $w" bridge
done
grep -q 'ib2roce info: control thread: CPU 0, ' "$SF_TMP/bridge.err" ||
	br_fail "the control thread is not on CPU 0, the only CPU no worker uses" bridge
grep -qF 'placement: workers 0 and 1 share CPU 1 (oversubscribe)' "$SF_TMP/bridge.err" ||
	br_fail "no warning about the shared CPU" bridge

out=$(con_ok bridge workers)
con_expect_in "$out" "^ *worker +cpu +core +node +isolated " "workers table: placement columns"
con_expect_in "$out" "--cpus \(oversubscribed\)" "workers table: why worker 1 is on CPU 1"
con_expect_in "$out" "^control thread: CPU 0, " "workers table: the control thread's CPU"
[ "$(con_json bridge '.placement.workers | map(.cpu) | join(",")')" = "1,1" ] ||
	br_fail "stats --json: placement.workers CPUs" bridge
[ "$(con_json bridge '.placement.control.cpu')" = 0 ] ||
	br_fail "stats --json: placement.control.cpu" bridge
[ "$(con_json bridge '.placement.warnings | length')" -ge 1 ] ||
	br_fail "stats --json: placement.warnings" bridge
br_stop bridge

# docs/tuning.md's recipe, `taskset -c 0 ib2roce --cpus 1`: the inherited affinity is
# for housekeeping, the worker is pinned outside it (the cgroup cpuset is the limit).
if taskset -c 1 true 2>/dev/null && taskset -c 0 true 2>/dev/null; then
	printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$IB2ROCE" >"$SF_TMP/taskset0"
	chmod +x "$SF_TMP/taskset0"
	real=$IB2ROCE
	IB2ROCE=$SF_TMP/taskset0
	br_bridge recipe 1 -d sim_ib0 -r sim_roce0 --workers 1 --cpus 1 -m "$group"
	IB2ROCE=$real
	grep -Eq 'ib2roce info: worker 0: CPU 1, core [0-9]+, node -?[0-9]+, isolated (yes|no): --cpus' \
		"$SF_TMP/recipe.err" || br_fail "taskset -c 0 --cpus 1: worker 0 not planned on CPU 1" recipe
	grep -q 'ib2roce info: control thread: CPU 0, ' "$SF_TMP/recipe.err" ||
		br_fail "taskset -c 0 --cpus 1: the control thread not on CPU 0" recipe
	grep -q 'housekeeping CPUs 0 (process affinity)' "$SF_TMP/recipe.err" ||
		br_fail "taskset -c 0: the housekeeping CPUs not logged" recipe
	out=$(con_ok recipe workers)
	con_expect_in "$out" "^ *0 +1 " "workers table: worker 0 pinned to CPU 1 (outside the affinity)"
	br_stop recipe
else
	sf_log "recipe part skipped: CPUs 0 and 1 are not both usable here"
fi

# A worker on a non-isolated CPU while an isolated CPU exists (a fake sysfs root with
# isolated = 1): a warning in the log and bcom workers, the DEGRADED condition placement
# in health (still healthy: exit 0), the metrics (ib2roce_degraded, the condition) and
# stats --json (health.placement, degraded).
mkdir -p "$SF_TMP/root/sys/devices/system/cpu"
echo 1 >"$SF_TMP/root/sys/devices/system/cpu/isolated"
IB2ROCE_SYSFS_ROOT=$SF_TMP/root br_bridge warned 1 -d sim_ib0 -r sim_roce0 --workers 1 \
	--cpus 0 --metrics-file "$SF_TMP/warned.prom" -e statint=1 -m "$group"
warn='worker 0 on CPU 0: not isolated while CPUs 1 are (--cpus)'
warn_re='worker 0 on CPU 0: not isolated while CPUs 1 are \(--cpus\)'
grep -qF "ib2roce warning: placement: $warn" "$SF_TMP/warned.err" ||
	br_fail "no placement warning in the log" warned
out=$(con_ok warned workers)
con_expect_in "$out" "^warning: $warn_re" "workers: the placement warning" warned
out=$(con_ok warned health)
con_expect_in "$out" "^health DEGRADED placement: 1 worker warning: $warn_re" "health: the warning" warned
[ "$(con_json warned '.health.placement')" = "placement: 1 worker warning: $warn" ] ||
	br_fail "stats --json: health.placement" warned
[ "$(con_json warned '.healthy')" = true ] || br_fail "stats --json: not healthy" warned
[ "$(con_json warned '.degraded')" = true ] || br_fail "stats --json: not degraded" warned
# warned_degraded: the metrics file shows the placement condition degraded.
warned_degraded() {
	grep -sqx 'ib2roce_health_condition{condition="placement",level="degraded"} 1' "$SF_TMP/warned.prom" &&
		grep -qx 'ib2roce_degraded 1' "$SF_TMP/warned.prom"
}
t_wait_until 10 warned_degraded ||
	br_fail "metrics: no ib2roce_health_condition{condition=\"placement\"} 1 or ib2roce_degraded 1" warned
br_stop warned
sf_log "ok"
