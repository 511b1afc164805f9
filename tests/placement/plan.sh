#!/bin/bash
# Placement plans (control/placement.c) on machines described as hwloc XML files:
# `ib2roce --check --show-placement` with HWLOC_XMLFILE, the NICs mlx5_0 (IB) and mlx5_1
# (RoCE) given as OpenFabrics OS devices in the XML (not opened: no RDMA device needed),
# isolated CPUs and RT throttling read under IB2ROCE_SYSFS_ROOT, the allowed CPUs given
# with --allowed-cpus (the machines have more CPUs than the one running the test).
# The printed plan is compared line by line.
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

# expect: stdout is exactly stdin.
expect() {
	diff -u - "$tmp/out" >"$tmp/diff" || {
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
	expect <<'E'
topology: 1 NUMA node, 1 package, 4 cores, 4 CPUs
allowed CPUs: 0-3 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 0, local CPUs 0-3 (topology)
RoCE NIC: node 0, local CPUs 0-3 (topology)
node: 0: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         1    1    0 no       local to the NIC's node 0
1         2    2    0 no       local to the NIC's node 0
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated
E
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
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 8 cores, 16 CPUs
allowed CPUs: 0-15 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 1, local CPUs 8-15 (topology)
RoCE NIC: node 1, local CPUs 8-15 (topology)
node: 1: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         8    4    1 no       local to the NIC's node 1
1        10    5    1 no       local to the NIC's node 1
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated, off the workers' node
idle: CPU 9: SMT sibling of worker 0 (CPU 8)
idle: CPU 11: SMT sibling of worker 1 (CPU 10)
E
	;;
isolated)
	# isolated (isolated + nohz_full) CPUs first; the control thread not on one
	echo 4-5 >"$root/sys/devices/system/cpu/isolated"
	echo 6-7 >"$root/sys/devices/system/cpu/nohz_full"
	plan eight-cores.xml 0 --allowed-cpus 0-7 -m 239.1.1.1 --workers 3
	expect <<'E'
topology: 1 NUMA node, 1 package, 8 cores, 8 CPUs
allowed CPUs: 0-7 (--allowed-cpus)
isolated CPUs: 4-7
IB NIC: node 0, local CPUs 0-7 (topology)
RoCE NIC: node 0, local CPUs 0-7 (topology)
node: 0: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         4    4    0 yes      local to the NIC's node 0
1         5    5    0 yes      local to the NIC's node 0
2         6    6    0 yes      local to the NIC's node 0
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated
E
	rm "$root/sys/devices/system/cpu/isolated"
	rm "$root/sys/devices/system/cpu/nohz_full"
	echo 4-7 >"$root/sys/devices/system/cpu/isolated"
	plan eight-cores.xml 0 --allowed-cpus 0-7 -m 239.1.1.1 --workers 5
	expect <<'E'
topology: 1 NUMA node, 1 package, 8 cores, 8 CPUs
allowed CPUs: 0-7 (--allowed-cpus)
isolated CPUs: 4-7
IB NIC: node 0, local CPUs 0-7 (topology)
RoCE NIC: node 0, local CPUs 0-7 (topology)
node: 0: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         4    4    0 yes      local to the NIC's node 0
1         5    5    0 yes      local to the NIC's node 0
2         6    6    0 yes      local to the NIC's node 0
3         7    7    0 yes      local to the NIC's node 0
4         1    1    0 no       local to the NIC's node 0
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated
warning: worker 4 on CPU 1: not isolated, no isolated core is left
E
	rm "$root/sys/devices/system/cpu/isolated"
	;;
allowed-remote)
	# an allowed mask without the NICs' node: remote cores, with warnings
	plan two-socket-smt.xml 0 --allowed-cpus 0-7 -m 239.1.1.1 --workers 2
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 8 cores, 16 CPUs
allowed CPUs: 0-7 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 1, local CPUs 8-15 (topology)
RoCE NIC: node 1, local CPUs 8-15 (topology)
node: 1: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         2    1    0 no       remote: node 1 has 0 free cores for 2 workers
1         4    2    0 no       remote: node 1 has 0 free cores for 2 workers
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated, off the workers' node
idle: CPU 3: SMT sibling of worker 0 (CPU 2)
idle: CPU 5: SMT sibling of worker 1 (CPU 4)
warning: worker 0 on CPU 2 (node 0): remote: node 1 has 0 free cores for 2 workers
warning: worker 1 on CPU 4 (node 0): remote: node 1 has 0 free cores for 2 workers
E
	;;
more-workers)
	# more workers than local cores: then remote cores; more than cores: refused unless oversubscribe
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 6
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 8 cores, 16 CPUs
allowed CPUs: 0-15 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 1, local CPUs 8-15 (topology)
RoCE NIC: node 1, local CPUs 8-15 (topology)
node: 1: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         8    4    1 no       local to the NIC's node 1
1        10    5    1 no       local to the NIC's node 1
2        12    6    1 no       local to the NIC's node 1
3        14    7    1 no       local to the NIC's node 1
4         2    1    0 no       remote: node 1 has 4 free cores for 6 workers
5         4    2    0 no       remote: node 1 has 4 free cores for 6 workers
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated, off the workers' node
idle: CPU 9: SMT sibling of worker 0 (CPU 8)
idle: CPU 11: SMT sibling of worker 1 (CPU 10)
idle: CPU 13: SMT sibling of worker 2 (CPU 12)
idle: CPU 15: SMT sibling of worker 3 (CPU 14)
idle: CPU 3: SMT sibling of worker 4 (CPU 2)
idle: CPU 5: SMT sibling of worker 5 (CPU 4)
warning: worker 4 on CPU 2 (node 0): remote: node 1 has 4 free cores for 6 workers
warning: worker 5 on CPU 4 (node 0): remote: node 1 has 4 free cores for 6 workers
E
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 8
	expect_err '8 workers need 8 physical cores, 7 are free (allowed CPUs 0-15, the control thread on CPU 0): use fewer --workers, or --enable oversubscribe'
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 8 -e oversubscribe
	expect_out '7         9    4    1 no       oversubscribed: SMT sibling of worker 0 (CPU 8)'
	expect_out 'warning: worker 7 on CPU 9: oversubscribed: SMT sibling of worker 0 (CPU 8)'
	;;
split-nics)
	# IB and RoCE NICs on different nodes: the node of the side receiving most groups, ties to IB
	plan split-nics.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 8 cores, 16 CPUs
allowed CPUs: 0-15 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 1, local CPUs 8-15 (topology)
RoCE NIC: node 0, local CPUs 0-7 (topology)
node: 1: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         8    4    1 no       local to the NIC's node 1
1        10    5    1 no       local to the NIC's node 1
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated, off the workers' node
idle: CPU 9: SMT sibling of worker 0 (CPU 8)
idle: CPU 11: SMT sibling of worker 1 (CPU 10)
warning: IB NIC on node 1, RoCE NIC on node 0: workers and pool on node 1, the RoCE NIC's traffic crosses the interconnect
E
	plan split-nics.xml 0 --allowed-cpus 0-15 -o 239.1.1.1 -o 239.1.1.2 -i 239.1.1.3 --workers 2
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 8 cores, 16 CPUs
allowed CPUs: 0-15 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 1, local CPUs 8-15 (topology)
RoCE NIC: node 0, local CPUs 0-7 (topology)
node: 0: the RoCE NIC's (receives 2 groups, IB 1; the side receiving most groups)
worker  cpu core node isolated why
0         0    0    0 no       local to the NIC's node 0
1         2    1    0 no       local to the NIC's node 0
control: CPU 8, core 4, node 1, isolated no: housekeeping: not isolated, off the workers' node
idle: CPU 1: SMT sibling of worker 0 (CPU 0)
idle: CPU 3: SMT sibling of worker 1 (CPU 2)
warning: RoCE NIC on node 0, IB NIC on node 1: workers and pool on node 0, the IB NIC's traffic crosses the interconnect
E
	plan split-nics.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 0
	expect_out "control: CPU 8, core 4, node 1, isolated no: runs the event-driven data path: on the NIC's node"
	;;
cpus)
	# --cpus forces the choice; twice the same CPU, a CPU outside the allowed set or none at all is refused
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2 --cpus 9,9
	expect_err 'ib2roce: --cpus: workers 0 and 1 on CPU 9: give distinct CPUs, or --enable oversubscribe'
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 3 --cpus 8,9 -e oversubscribe
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 8 cores, 16 CPUs
allowed CPUs: 0-15 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 1, local CPUs 8-15 (topology)
RoCE NIC: node 1, local CPUs 8-15 (topology)
node: 1: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0         8    4    1 no       --cpus
1         9    4    1 no       --cpus
2         8    4    1 no       --cpus (oversubscribed)
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated, off the workers' node
warning: workers 0 and 1 share core 4 (SMT siblings CPU 8 and 9)
warning: workers 0 and 2 share CPU 8 (oversubscribe)
E
	plan two-socket-smt.xml 2 --allowed-cpus 0-7 -m 239.1.1.1 --workers 1 --cpus 9
	expect_err 'ib2roce: --cpus: CPU 9 is outside the allowed CPUs 0-7 (taskset, cgroup cpuset); --enable oversubscribe to try anyway'
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 1 --cpus 16
	expect_err 'ib2roce: --cpus: CPU 16 does not exist (CPUs 0-15)'
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 1 --cpus 8 --control-cpu 8
	expect_err "ib2roce: --control-cpu 8 is worker 0's CPU: give another, or --enable oversubscribe"
	plan two-socket-smt.xml 0 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2 --control-cpu 8
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 8 cores, 16 CPUs
allowed CPUs: 0-15 (--allowed-cpus)
isolated CPUs: none
IB NIC: node 1, local CPUs 8-15 (topology)
RoCE NIC: node 1, local CPUs 8-15 (topology)
node: 1: the IB NIC's (receives 1 group, RoCE 1; ties go to IB)
worker  cpu core node isolated why
0        10    5    1 no       local to the NIC's node 1
1        12    6    1 no       local to the NIC's node 1
control: CPU 8, core 4, node 1, isolated no: --control-cpu
idle: CPU 11: SMT sibling of worker 0 (CPU 10)
idle: CPU 13: SMT sibling of worker 1 (CPU 12)
E
	plan two-socket-smt.xml 2 --allowed-cpus 0-15 -m 239.1.1.1 --workers 2 --cpus 8-9x
	expect_err "ib2roce: option --cpus: CPU list '8-9x': '8-9x' is not a CPU or a range like 4-7"
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
	expect <<'E'
topology: 2 NUMA nodes, 2 packages, 4 cores, 4 CPUs
allowed CPUs: 0-3 (--allowed-cpus)
isolated CPUs: none
IB NIC: locality unknown (its topology object covers every CPU): treated as local to every node
RoCE NIC: locality unknown (its topology object covers every CPU): treated as local to every node
node: none: no NIC is local to a single node
worker  cpu core node isolated why
0         1    1    0 no       no node preferred
1         2    2    1 no       no node preferred
control: CPU 0, core 0, node 0, isolated no: housekeeping: not isolated
E
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
