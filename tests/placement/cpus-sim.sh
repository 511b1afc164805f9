#!/bin/bash
# --cpus on the simulated fabric: a CPU given twice is refused (exit status 2, nothing
# started); with --enable oversubscribe the bridge starts with both workers on that CPU,
# logs one placement line per worker and for the control thread, and shows the plan in
# the console's workers table and in stats --json ("placement").
set -eu

# shellcheck source-path=SCRIPTDIR source=../console/lib.sh
. "$(dirname "$0")/../console/lib.sh"

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

out=$(bc_ok bridge workers)
expect_in "$out" "^ *worker +cpu +core +node +isolated " "workers table: placement columns"
expect_in "$out" "--cpus \(oversubscribed\)" "workers table: why worker 1 is on CPU 1"
expect_in "$out" "^control thread: CPU 0, " "workers table: the control thread's CPU"
[ "$(json bridge '.placement.workers | map(.cpu) | join(",")')" = "1,1" ] ||
	br_fail "stats --json: placement.workers CPUs" bridge
[ "$(json bridge '.placement.control.cpu')" = 0 ] ||
	br_fail "stats --json: placement.control.cpu" bridge
[ "$(json bridge '.placement.warnings | length')" -ge 1 ] ||
	br_fail "stats --json: placement.warnings" bridge
br_stop bridge
sf_log "ok"
