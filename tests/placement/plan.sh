#!/bin/bash
# Placement plans (control/placement.c) on machines described as hwloc XML files:
# `ib2roce --check --show-placement` with HWLOC_XMLFILE, the NICs mlx5_0 (IB) and mlx5_1
# (RoCE) given as OpenFabrics OS devices in the XML (not opened: no RDMA device needed),
# isolated CPUs and RT throttling read under IB2ROCE_SYSFS_ROOT, the allowed CPUs given
# with --allowed-cpus (the machines have more CPUs than the one running the test).
# The printed plan is compared line by line with expected/CASE-N.plan (the N-th full
# plan of the case; the other checks look for single lines).
#
# Usage: plan.sh CASE (see the case statement). Environment: IB2ROCE, the bridge.
#
# The XML files were made from hwloc synthetic topologies (hwloc_topology_export_xml of
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
	HWLOC_XMLFILE=$here/$xml "$IB2ROCE" --check --show-placement -d mlx5_0 -r mlx5_1 "$@" \
		>"$tmp/out" 2>"$tmp/err" || got=$?
	[ "$got" = "$rc" ] || fail "$xml $*: exit status $got, expected $rc"
}

# expect NAME: stdout is exactly the plan in expected/NAME.plan.
expect() {
	diff -u "$here/expected/$1.plan" "$tmp/out" >"$tmp/diff" || {
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
	expect_err 'ib2roce: --cpus: CPU 9 is outside the allowed CPUs 0-7 (taskset, cgroup cpuset); --enable oversubscribe to try anyway'
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
