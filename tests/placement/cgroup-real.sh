#!/bin/bash
# A real cgroup v1 cpuset (where this machine allows making one: root, a writable
# /sys/fs/cgroup/cpuset; skipped with the reason otherwise): the plan reads the cpuset
# of the cgroup the process is in (/proc/self/cgroup), not a fake tree.
#   - cpuset 0: --cpus 1 is refused (exit status 2) naming that cgroup's cpuset.cpus;
#   - cpuset 0-1 and taskset -c 0 (the documented recipe): --cpus 1 is planned, the
#     control thread on CPU 0, the file named in the plan.
# The cgroup is removed at the end. Environment: IB2ROCE, SIMLIB, SIMFAB.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"
: "${IB2ROCE:?IB2ROCE must name the ib2roce program}"

SF_TEST=placement-cgroup-real
v1=/sys/fs/cgroup/cpuset
if [ ! -f "$v1/cpuset.cpus" ]; then
	sf_log "SKIP: no cgroup v1 cpuset hierarchy at $v1 (cgroup v2 needs the cpuset controller delegated)"
	exit 77
fi
if ! taskset -c 1 true 2>/dev/null || ! taskset -c 0 true 2>/dev/null; then
	sf_log "SKIP: CPUs 0 and 1 are not both usable here"
	exit 77
fi
cg=$v1/ib2roce-test-$$
if ! mkdir "$cg" 2>/dev/null; then
	sf_log "SKIP: cannot create a cpuset cgroup under $v1 (not root, or read-only)"
	exit 77
fi
sf_init placement-cgroup-real
trap 'rc=$?; rmdir "$cg" 2>/dev/null || true; (exit $rc); sf_cleanup' EXIT
cat "$v1/cpuset.mems" >"$cg/cpuset.mems"

# in_cgroup CPUS OUT CMD...: run CMD in the cgroup with cpuset CPUS; its exit status.
in_cgroup() {
	local cpus=$1 out=$2 rc=0

	shift 2
	echo "$cpus" >"$cg/cpuset.cpus"
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@" >"$out" 2>&1 || rc=$?
	return "$rc"
}

rc=0
in_cgroup 0 "$SF_TMP/narrow.out" timeout -k 5 30 "$IB2ROCE" --check --show-placement \
	-d sim_ib0 -r sim_roce0 -m 239.1.2.3 --workers 1 --cpus 1 || rc=$?
[ "$rc" = 2 ] || sf_fail "cpuset 0, --cpus 1: exit status $rc, expected 2" "$SF_TMP/narrow.out"
grep -qF -- "--cpus: CPU 1 is outside the CPUs workers may use, 0 (cgroup cpuset $cg/cpuset.cpus); fix: " \
	"$SF_TMP/narrow.out" || sf_fail "cpuset 0: the message does not name the cgroup's file" \
	"$SF_TMP/narrow.out"

rc=0
in_cgroup 0-1 "$SF_TMP/recipe.out" taskset -c 0 timeout -k 5 30 "$IB2ROCE" --check \
	--show-placement -d sim_ib0 -r sim_roce0 -m 239.1.2.3 --workers 1 --cpus 1 || rc=$?
[ "$rc" = 0 ] || sf_fail "cpuset 0-1, taskset -c 0, --cpus 1: exit status $rc" "$SF_TMP/recipe.out"
grep -qxF "allowed CPUs: 0-1 (cgroup cpuset $cg/cpuset.cpus)" "$SF_TMP/recipe.out" ||
	sf_fail "the plan does not name the cgroup's cpuset" "$SF_TMP/recipe.out"
grep -qxF "housekeeping CPUs: 0 (process affinity)" "$SF_TMP/recipe.out" ||
	sf_fail "the plan's housekeeping CPUs" "$SF_TMP/recipe.out"
grep -Eq '^0 +1 +[0-9]+ +-?[0-9]+ (yes|no) +--cpus$' "$SF_TMP/recipe.out" ||
	sf_fail "worker 0 not on CPU 1" "$SF_TMP/recipe.out"
grep -q '^control: CPU 0, ' "$SF_TMP/recipe.out" || sf_fail "control thread not on CPU 0" \
	"$SF_TMP/recipe.out"
sf_log "PASS"
