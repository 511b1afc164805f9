#!/bin/bash
# Placement plans (host/placement.c) on machines described as hwloc XML files:
# `ib2roce --check --show-placement` with HWLOC_XMLFILE, the NICs mlx5_0 (IB) and mlx5_1
# (RoCE) given as OpenFabrics OS devices in the XML (not opened: no RDMA device needed),
# isolated CPUs and RT throttling read under IB2ROCE_SYSFS_ROOT, the allowed CPUs given
# with --allowed-cpus (the machines have more CPUs than the one running the test).
# The printed plan is compared line by line with fixtures/CASE-N.plan (the N-th full
# plan of the case; the other checks look for single lines).
#
# Usage: plan.sh CASE (see the case statement). Environment: IB2ROCE, the bridge.
#
# The XML files (fixtures/) were made from hwloc synthetic topologies (hwloc_topology_export_xml of
# "pack:2 numa:1 core:4 pu:2" and the like) with a PCIDev + OSDev (osdev_type 3,
# OpenFabrics) per NIC added under the package the NIC is attached to:
#   one-socket.xml      1 package, 4 cores, no SMT; both NICs on it
#   eight-cores.xml     1 package, 8 cores, no SMT; both NICs on it
#   two-socket-smt.xml  2 packages (nodes 0, 1), 4 cores x 2 threads each; NICs on node 1
#   split-nics.xml      the same machine; IB NIC on node 1, RoCE NIC on node 0
#   nic-unknown.xml     2 packages (nodes 0, 1), 2 cores each; NICs under the machine
#                       itself: no locality known
set -eu

: "${IB2ROCE:?IB2ROCE must name the ib2roce program}"
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# An empty /sys and /proc: no isolated CPUs, RT throttling unknown, unless a case adds.
root=$tmp/root
mkdir -p "$root/sys/devices/system/cpu" "$root/proc/sys/kernel"
export IB2ROCE_SYSFS_ROOT=$root

fail() {
	echo "FAIL: $*" >&2
	echo "--- stdout" >&2
	cat "$tmp/out" >&2
	echo "--- stderr" >&2
	cat "$tmp/err" >&2
	exit 1
}

# plan XML RC ARG...: the dry run on machine XML, expecting exit status RC.
plan() {
	local xml=$1 rc=$2 got=0

	shift 2
	HWLOC_XMLFILE=$here/fixtures/$xml "$IB2ROCE" --check --show-placement -d mlx5_0 -r mlx5_1 "$@" \
		>"$tmp/out" 2>"$tmp/err" || got=$?
	[ "$got" = "$rc" ] || fail "$xml $*: exit status $got, expected $rc"
}

# expect NAME: stdout is exactly the plan in fixtures/NAME.plan (the fake root's path
# written ROOT there).
expect() {
	sed "s|$root|ROOT|g" "$tmp/out" >"$tmp/out.plan"
	[ -z "${REGEN:-}" ] || cp "$tmp/out.plan" "$here/fixtures/$1.plan"
	diff -u "$here/fixtures/$1.plan" "$tmp/out.plan" >"$tmp/diff" || {
		cat "$tmp/diff" >&2
		fail "the plan differs (diff above: - expected, + printed)"
	}
}

# expect_out TEXT: stdout holds the line TEXT (fixed string).
expect_out() {
	grep -qxF -- "$1" "$tmp/out" || fail "stdout lacks the line: $1"
}

# expect_err TEXT: stderr holds TEXT (fixed string).
expect_err() {
	grep -qF -- "$1" "$tmp/err" || fail "stderr lacks: $1"
}

case ${1:-} in
one-socket)
	# 1 package, no SMT: the control thread on CPU 0, workers on the next cores
	plan one-socket.xml 0 --allowed-cpus 0-3 -m 239.1.1.1 --workers 2
	expect one-socket-1
	# the order given, ranges expanded; SMT siblings in a forced list are only warned about
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 3 --cpus 12,8-9
	expect_out "0        12    6    1 no       --cpus"
	expect_out "1         8    4    1 no       --cpus"
	expect_out "2         9    4    1 no       --cpus"
	expect_out "warning: workers 1 and 2 share core 4 (SMT siblings CPU 8 and 9)"
	;;
two-socket-smt)
	# NICs on node 1: workers on its cores, one per core, siblings idle; control off node 1
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2
	expect two-socket-smt-1
	;;
isolated)
	# isolated (isolated + nohz_full) CPUs first; the control thread not on one
	echo 4-5 >"$root/sys/devices/system/cpu/isolated"
	echo 6-7 >"$root/sys/devices/system/cpu/nohz_full"
	plan eight-cores.xml 0 --allowed-cpus 0-7 -m 239.1.1.1 --workers 3
	expect isolated-1
	rm "$root/sys/devices/system/cpu/isolated"
	rm "$root/sys/devices/system/cpu/nohz_full"
	echo 4-7 >"$root/sys/devices/system/cpu/isolated"
	plan eight-cores.xml 0 --allowed-cpus 0-7 -m 239.1.1.1 --workers 5
	expect isolated-2
	rm "$root/sys/devices/system/cpu/isolated"
	;;
allowed-remote)
	# an allowed mask without the NICs' node: remote cores, with warnings
	plan two-socket-smt.xml 0 --allowed-cpus 0-7 -m 239.1.1.1 --workers 2
	expect allowed-remote-1
	;;
more-workers)
	# more workers than local cores: then remote cores; more than cores: refused unless oversubscribe
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 6
	expect more-workers-1
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 8
	expect_err '8 workers need 8 physical cores, 7 are free (allowed CPUs 0-15, the control thread on CPU 0): use fewer --workers, or --enable oversubscribe'
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 8 -e oversubscribe
	expect_out '7         9    4    1 no       oversubscribed: SMT sibling of worker 0 (CPU 8)'
	expect_out 'warning: worker 7 on CPU 9: oversubscribed: SMT sibling of worker 0 (CPU 8)'
	;;
split-nics)
	# IB and RoCE NICs on different nodes: the node of the side receiving most groups, ties to IB
	plan split-nics.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2
	expect split-nics-1
	plan split-nics.xml 0 --allowed-cpus 0-15 -o 239.1.1.1 -o 239.1.1.2 -i 239.1.1.3 --workers 2
	expect split-nics-2
	plan split-nics.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 0
	expect_out "control: CPU 8, core 4, node 1, isolated no: runs the event-driven data path: on the NIC's node"
	;;
cpus)
	# --cpus forces the choice; twice the same CPU, a CPU outside the allowed set or none at all is refused
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2 --cpus 9,9
	expect_err 'ib2roce: --cpus: workers 0 and 1 on CPU 9: give distinct CPUs, or --enable oversubscribe'
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 3 --cpus 8,9 -e oversubscribe
	expect cpus-1
	plan two-socket-smt.xml 2 --allowed-cpus 0-7 -m 239.1.1.1 --workers 1 --cpus 9
	expect_err 'ib2roce: --cpus: CPU 9 is outside the CPUs workers may use, 0-7 (--allowed-cpus); fix: give the service'"'"'s cgroup the worker CPUs (systemd: AllowedCPUs= in the unit or its slice; cgroup v1: cpuset.cpus), or plan with --check --show-placement --allowed-cpus CPUSET:AFFINITY; or --enable oversubscribe to try anyway'
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 1 --cpus 16
	expect_err 'ib2roce: --cpus: CPU 16 does not exist (CPUs 0-15)'
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 1 --cpus 8 --control-cpu 8
	expect_err "ib2roce: --control-cpu 8 is worker 0's CPU: give another, or --enable oversubscribe"
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2 --control-cpu 8
	expect cpus-2
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2 --cpus 8-9x
	expect_err "ib2roce: option --cpus: CPU list '8-9x': '8-9x' is not a CPU or a range like 4-7"
	# issue 21 D8: a number past the largest CPU is refused (it wrapped to CPU 1), and "-1"
	# is named (it was "empty CPU list"), in --cpus and in --allowed-cpus
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 1 --cpus 4294967297
	expect_err "ib2roce: option --cpus: CPU list '4294967297': '4294967297': CPU 4294967297 is out of range (0-8191)"
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 1 --cpus=-1
	expect_err "ib2roce: option --cpus: CPU list '-1': '-1' is not a CPU or a range like 4-7"
	plan two-socket-smt.xml 2 --allowed-cpus 0-4294967297 -m 239.1.1.1 --workers 1
	expect_err "ib2roce: --allowed-cpus '0-4294967297': '0-4294967297': CPU 4294967297 is out of range (0-8191)"
	plan two-socket-smt.xml 2 --allowed-cpus 4294967297,8 -m 239.1.1.1 --workers 1
	expect_err "ib2roce: --allowed-cpus '4294967297,8': '4294967297': CPU 4294967297 is out of range (0-8191)"
	plan two-socket-smt.xml 2 --allowed-cpus 0-1 -m 239.1.1.1 --workers 2 --cpus 0-1
	expect_err 'ib2roce: no allowed CPU is left for the control thread (allowed CPUs 0-1, all running workers): give it one with --control-cpu or a shorter --cpus, or --enable oversubscribe'
	;;
recipe)
	# docs/tuning.md's recipe: housekeeping affinity 0-1 (taskset -c 0-1, CPUAffinity=0-1),
	# a cpuset of every CPU: workers on CPUs outside the affinity, the control thread in it
	plan eight-cores.xml 0 --allowed-cpus 0-7:0-1 -m 239.1.1.1 --workers 4 --cpus 2-5
	expect recipe-1
	# automatic: the isolated CPUs first although the affinity lacks them, then the
	# CPUs outside the affinity; the control thread on a housekeeping CPU
	echo 4-5 >"$root/sys/devices/system/cpu/isolated"
	plan eight-cores.xml 0 --allowed-cpus 0-7:0-1 -m 239.1.1.1 --workers 3
	expect recipe-2
	# a worker CPU inside the affinity narrower than the cpuset: CPUAffinity covers it
	plan eight-cores.xml 0 --allowed-cpus 0-7:0-2 -m 239.1.1.1 --workers 1 --cpus 2
	expect_out 'warning: worker 0 on CPU 2: inside the process affinity 0-2 where the control, log and helper threads run (CPUAffinity=, taskset); fix: CPUAffinity= only the housekeeping CPUs, without the worker CPUs'
	expect_out 'warning: worker 0 on CPU 2: not isolated while CPUs 4-5 are (--cpus)'
	rm "$root/sys/devices/system/cpu/isolated"
	;;
cgroup-v2)
	# the cpuset of the process's cgroup (v2: cpuset.cpus.effective of the nearest
	# cgroup that has one), the affinity given
	mkdir -p "$root/proc/self" "$root/sys/fs/cgroup/trading.slice/ib2roce.service"
	echo 0::/trading.slice/ib2roce.service >"$root/proc/self/cgroup"
	echo 0-5 >"$root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective"
	plan eight-cores.xml 0 --allowed-cpus :0 -m 239.1.1.1 --workers 2
	expect cgroup-v2-1
	# offline CPUs are not used, and --cpus naming one is refused
	echo 0-3,5-7 >"$root/sys/devices/system/cpu/online"
	plan eight-cores.xml 0 --allowed-cpus :0 -m 239.1.1.1 --workers 4
	expect_out "allowed CPUs: 0-3,5 (cgroup cpuset $root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective)"
	expect_out '3         5    5    0 no       local to the NIC'"'"'s node 0'
	plan eight-cores.xml 2 --allowed-cpus :0 -m 239.1.1.1 --workers 1 --cpus 4
	expect_err 'ib2roce: --cpus: CPU 4 is offline (/sys/devices/system/cpu/online: 0-3,5-7); fix: give online CPUs, or bring it online (echo 1 > /sys/devices/system/cpu/cpu4/online)'
	rm "$root/sys/devices/system/cpu/online"
	# a cpuset without the isolated CPUs: refused, naming the file
	echo 6-7 >"$root/sys/devices/system/cpu/isolated"
	plan eight-cores.xml 2 --allowed-cpus :0 -m 239.1.1.1 --workers 2
	expect_err "ib2roce: the isolated CPUs 6-7 are outside the CPUs workers may use, 0-5 (cgroup cpuset $root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective); fix: give the service's cgroup the worker CPUs (systemd: AllowedCPUs= in the unit or its slice; cgroup v1: cpuset.cpus), or plan with --check --show-placement --allowed-cpus CPUSET:AFFINITY; or give --cpus to run the workers on those CPUs anyway"
	# ... unless --cpus says where: warned
	plan eight-cores.xml 0 --allowed-cpus :0 -m 239.1.1.1 --workers 1 --cpus 3
	expect_out "warning: worker 0 on CPU 3: not isolated while CPUs 6-7 are (6-7 outside cgroup cpuset $root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective); fix: let the cgroup cpuset include them (AllowedCPUs=)"
	rm "$root/sys/devices/system/cpu/isolated"
	# bad cpuset files: empty, malformed (exit 2, naming the file); missing: the affinity
	# is the limit, warned
	: >"$root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective"
	plan eight-cores.xml 2 --allowed-cpus :0 -m 239.1.1.1 --workers 1
	expect_err "ib2roce: cgroup cpuset $root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective is empty: no CPU to run on; fix: "
	echo 0-3x >"$root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective"
	plan eight-cores.xml 2 --allowed-cpus :0 -m 239.1.1.1 --workers 1
	expect_err "ib2roce: cgroup cpuset $root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective: '0-3x' is not a CPU or a range like 4-7; fix: "
	rm "$root/sys/fs/cgroup/trading.slice/cpuset.cpus.effective"
	plan eight-cores.xml 0 --allowed-cpus :0-1 -m 239.1.1.1 --workers 1
	expect_out 'allowed CPUs: 0-1 (process affinity: no cpuset)'
	expect_out "warning: cgroup cpuset: $root/sys/fs/cgroup/cpuset.cpus.effective missing: workers limited to the process affinity; fix: give the service's cgroup the worker CPUs (systemd: AllowedCPUs= in the unit or its slice; cgroup v1: cpuset.cpus), or plan with --check --show-placement --allowed-cpus CPUSET:AFFINITY"
	rm -r "$root/proc/self" "$root/sys/fs"
	;;
cgroup-v1)
	# cgroup v1 (and the hybrid layout's 0:: line): the cpuset hierarchy's cpuset.cpus
	mkdir -p "$root/proc/self" "$root/sys/fs/cgroup/cpuset/trading"
	printf '5:memory:/\n3:cpuset:/trading\n0::/\n' >"$root/proc/self/cgroup"
	echo 1-7 >"$root/sys/fs/cgroup/cpuset/trading/cpuset.cpus"
	echo 6-7 >"$root/sys/devices/system/cpu/nohz_full"
	plan eight-cores.xml 0 --allowed-cpus :1 -m 239.1.1.1 --workers 3
	expect cgroup-v1-1
	rm "$root/sys/devices/system/cpu/nohz_full"
	rm -r "$root/proc/self" "$root/sys/fs"
	;;
no-cgroup)
	# no /proc/self/cgroup (a container without it, a kernel without cgroups): every CPU
	plan eight-cores.xml 0 --allowed-cpus :0-1 -m 239.1.1.1 --workers 2
	expect no-cgroup-1
	;;
rt)
	# rt=PRIO: refused while RT throttling is on, planned when it is off
	echo 950000 >"$root/proc/sys/kernel/sched_rt_runtime_us"
	plan one-socket.xml 1 --allowed-cpus 0-3 -m 239.1.1.1 --workers 1 -e rt=50
	expect_err 'ib2roce: rt=50 refused: kernel.sched_rt_runtime_us is 950000 of a 1000000 us period: RT throttling would stop every busy SCHED_FIFO worker for 50000 us each period; fix: sysctl kernel.sched_rt_runtime_us=-1'
	rm "$root/proc/sys/kernel/sched_rt_runtime_us"
	echo -1 >"$root/proc/sys/kernel/sched_rt_runtime_us"
	plan one-socket.xml 0 --allowed-cpus 0-3 -m 239.1.1.1 --workers 1 -e rt=50
	expect_out 'workers: SCHED_FIFO priority 50'
	rm "$root/proc/sys/kernel/sched_rt_runtime_us"
	;;
nic-unknown)
	# no NIC locality known: local to every node, no node preferred, said so
	plan nic-unknown.xml 0 --allowed-cpus 0-3 -m 239.1.1.1 --workers 2
	expect nic-unknown-1
	;;
options)
	# --show-placement and --allowed-cpus only with --check; exit 2 otherwise
	got=0
	"$IB2ROCE" --show-placement -m 239.1.1.1 >"$tmp/out" 2>"$tmp/err" || got=$?
	[ "$got" = 2 ] || fail "--show-placement without --check: exit status $got"
	expect_err "show-placement needs --check"
	got=0
	"$IB2ROCE" --allowed-cpus 0-3 -m 239.1.1.1 >"$tmp/out" 2>"$tmp/err" || got=$?
	[ "$got" = 2 ] || fail "--allowed-cpus without --check: exit status $got"
	expect_err "allowed-cpus is for planning: only with --check --show-placement"
	# a device neither openable here nor in the topology: exit 1
	plan one-socket.xml 1 --allowed-cpus 0-3 -d nosuch -m 239.1.1.1
	[ ! -s "$tmp/out" ] || fail "a plan was printed for a device that does not exist"
	;;
*)
	echo "usage: $0 CASE" >&2
	exit 2
	;;
esac
