#!/bin/bash
# The tuning report on fake hosts (tests/lib/tune.sh builds them): hosts.sh SCENARIO, one of
#   tuned     every check PASSes (exit 0); cpu_dma_latency writes 0 and holds the file;
#             without it the C-state and QoS lines; QoS held by another process;
#             --workers 0; a device that does not open
#   desktop   a distribution's defaults: every WARN and FAIL with its fix (exit 3); the
#             merged kernel command line and CPUAffinity= for two workers
#   irq       NIC IRQs on the worker CPU with irqbalance running, then banned, then fixed
#   smt       the worker's sibling online (WARN); two workers on one core (FAIL)
#   swap      a swap area (WARN)
#   memlock   RLIMIT_MEMLOCK below the pool (FAIL, or WARN with CAP_IPC_LOCK)
#   console   bcom tuning on a running bridge prints the same report; disabling
#             cpu_dma_latency closes the file; bad arguments
#   realhost  this machine's own /sys and /proc: runs, exits 0, 1 or 3; bad options
# Reports are compared line for line with fixtures/*.txt or single exact lines.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tune.sh
. "$(dirname "$0")/../lib/tune.sh"

scenario=$1

# holds PID FILE: does process PID have FILE open?
holds() {
	local fd

	for fd in /proc/"$1"/fd/*; do
		[ "$(readlink "$fd")" != "$2" ] || return 0
	done
	return 1
}

sf_init "tune-$scenario"
exp=$(dirname "$0")/fixtures
root=$SF_TMP/host
mkdir -p "$root"
# The control thread (and everything else this test starts) on cpu0, the worker on cpu1.
taskset -pc 0 $$ >/dev/null
# A memlock limit the pool (4160 KiB) fits in, the same everywhere.
ulimit -S -l 8192 2>/dev/null || { sf_log "SKIP: cannot set RLIMIT_MEMLOCK to 8192 KiB"; exit 77; }

case $scenario in
tuned)
	tune_host_tuned "$root"
	tune_put_s32 "$root/dev/cpu_dma_latency" 2000000000
	tune_check "$root" 0 -e cpu_dma_latency
	tune_expect_report "$exp/tuned.txt"
	[ "$(od -An -tx1 "$root/dev/cpu_dma_latency" | tr -d ' ')" = 00000000 ] ||
		sf_fail "cpu_dma_latency: $(od -An -tx1 "$root/dev/cpu_dma_latency") written, expected 4 zero bytes"
	# Without the feature: C1 is the deepest state (2 us, a PASS), the QoS file is not held.
	tune_put_s32 "$root/dev/cpu_dma_latency" 2000000000
	tune_check "$root" 1
	tune_expect_row "cstate|cpu1|PASS|deepest reachable C1, exit 2 us"
	tune_expect_row "cpu_dma_latency|host|WARN|not held (limit 2000000000 us)|--enable cpu_dma_latency"
	tune_expect_line "summary: 17 PASS, 1 WARN, 0 FAIL"
	# Another process holds the limit at 0: only POLL is reachable.
	tune_put_s32 "$root/dev/cpu_dma_latency" 0
	tune_check "$root" 0
	tune_expect_row "cstate|cpu1|PASS|deepest reachable POLL, exit 0 us"
	tune_expect_row "cpu_dma_latency|host|PASS|held at 0 us by another process"
	# --workers 0: no worker CPU, so no per-CPU rows; the rest is checked.
	tune_check "$root" 0 --workers 0
	tune_expect_row "workers|-|PASS|none: event-driven data path on the control thread"
	tune_expect_line "summary: 13 PASS, 0 WARN, 0 FAIL"
	# A device that does not exist: its line FAILs, the rest is still reported.
	tune_check "$root" 3 -d nosuch
	tune_expect_line "summary: 16 PASS, 0 WARN, 1 FAIL"
	grep -Eq '^nic +nosuch +FAIL .*-d/-r naming an active port$' "$SF_TMP/tune.out" ||
		sf_fail "no FAIL line for device nosuch" "$SF_TMP/tune.out"
	;;
desktop)
	tune_host_desktop "$root"
	taskset -pc 0,1 $$ >/dev/null
	tune_check "$root" 3
	tune_expect_report "$exp/desktop.txt"
	# Two workers: one kernel command line and one CPUAffinity= line for both, the
	# per-CPU rows' fixes name them both too.
	tune_check "$root" 3 --workers 2 --cpus 1,3
	tune_expect_line "kernel command line for the worker CPUs: isolcpus=managed_irq,domain,1,3 nohz_full=1,3 rcu_nocbs=1,3 irqaffinity=0,2"
	tune_expect_line "unit [Service] for the housekeeping CPUs: CPUAffinity=0,2"
	[ "$(grep -c '^kernel command line' "$SF_TMP/tune.out")" = 1 ] ||
		sf_fail "more than one kernel command line" "$SF_TMP/tune.out"
	;;
irq)
	tune_host_tuned "$root"
	tune_put "$root/proc/irq/41/smp_affinity_list" 1
	tune_put "$root/proc/irq/51/smp_affinity_list" 1-3
	tune_put "$root/proc/812/comm" irqbalance
	tune_put "$root/etc/default/irqbalance" "IRQBALANCE_BANNED_CPULIST=3"
	tune_check "$root" 3
	# shellcheck disable=SC2016 # $i is the fix's own shell variable
	tune_expect_row 'irq|sim_ib0|FAIL|1 of 3 IRQs may run on worker CPU 1: IRQ 41|for i in 41; do echo 0,2 > /proc/irq/$i/smp_affinity_list; done'
	# shellcheck disable=SC2016
	tune_expect_row 'irq|sim_roce0|FAIL|1 of 3 IRQs may run on worker CPU 1: IRQ 51|for i in 51; do echo 0,2 > /proc/irq/$i/smp_affinity_list; done'
	tune_expect_row 'irqbalance|host|WARN|running: may move IRQs onto worker CPUs|systemctl stop irqbalance, or IRQBALANCE_BANNED_CPULIST=1 in /etc/default/irqbalance'
	tune_expect_line "summary: 15 PASS, 1 WARN, 2 FAIL"
	# Banned in its configuration, or (without a list there) isolated: irqbalance passes.
	tune_put "$root/etc/default/irqbalance" 'IRQBALANCE_BANNED_CPULIST="1,3"'
	tune_put "$root/proc/irq/41/smp_affinity_list" 0
	tune_put "$root/proc/irq/51/smp_affinity_list" 0,2
	tune_check "$root" 0
	tune_expect_row "irqbalance|host|PASS|running, worker CPUs banned (IRQBALANCE_BANNED_CPULIST)"
	tune_expect_row "irq|sim_ib0|PASS|3 IRQs, none on worker CPUs"
	rm "$root/etc/default/irqbalance"
	tune_check "$root" 0
	tune_expect_row "irqbalance|host|PASS|running, worker CPUs banned (isolated/nohz_full)"
	;;
smt)
	tune_host_tuned "$root"
	tune_put "$root/sys/devices/system/cpu/cpu3/online" 1
	tune_check "$root" 1
	tune_expect_row "smt|cpu1|WARN|sibling cpu3 online|echo 0 > /sys/devices/system/cpu/cpu3/online"
	tune_expect_line "summary: 17 PASS, 1 WARN, 0 FAIL"
	# Two workers on the two threads of one core.
	tune_put "$root/sys/devices/system/cpu/cpu0/topology/thread_siblings_list" 0-1
	tune_put "$root/sys/devices/system/cpu/cpu1/topology/thread_siblings_list" 0-1
	tune_check "$root" 3 --workers 2 --cpus 0,1
	tune_expect_row "smt|cpu0|FAIL|sibling cpu1 is a worker too|--cpus with one CPU per core"
	tune_expect_row "smt|cpu1|FAIL|sibling cpu0 is a worker too|--cpus with one CPU per core"
	;;
swap)
	tune_host_tuned "$root"
	printf '/swapfile                               file\t\t2097148\t\t0\t\t-2\n' >>"$root/proc/swaps"
	tune_check "$root" 1
	tune_expect_row "swap|host|WARN|1 swap area, swappiness 10|swapoff -a"
	tune_expect_line "summary: 17 PASS, 1 WARN, 0 FAIL"
	;;
memlock)
	tune_host_tuned "$root"
	ulimit -S -l 64
	if [ $((0x$(sed -n 's/^CapEff:\t*//p' /proc/self/status) >> 14 & 1)) = 1 ]; then
		tune_check "$root" 1
		tune_expect_row "memlock|host|WARN|64 KiB < pool 4160 KiB; only CAP_IPC_LOCK lets it register|ulimit -l unlimited (systemd: LimitMEMLOCK=infinity)"
	else
		tune_check "$root" 3
		tune_expect_row "memlock|host|FAIL|64 KiB < pool 4160 KiB|ulimit -l unlimited (systemd: LimitMEMLOCK=infinity)"
	fi
	;;
console)
	tune_host_tuned "$root"
	# A live bridge is placed (host/placement.c): both CPUs allowed, the control
	# thread pinned to cpu0 as the report expects.
	taskset -pc 0,1 $$ >/dev/null
	# The smallest queues, so that the pool of 1024 buffers (4160 KiB) is accepted.
	br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 --cpus 1 --control-cpu 0 \
		-e buffers=1024 -e rqdepth=64 -e sqdepth=64 \
		--tune-root "$root" -e cpu_dma_latency -m 239.1.2.3
	con_ok bridge tuning >"$SF_TMP/tune.out"
	tune_expect_report "$exp/tuned.txt"
	pid=$(sf_child "$(br_pid bridge)")
	holds "$pid" "$root/dev/cpu_dma_latency" ||
		br_fail "the bridge does not hold $root/dev/cpu_dma_latency" bridge
	con_ok bridge disable cpu_dma_latency >/dev/null
	if holds "$pid" "$root/dev/cpu_dma_latency"; then
		br_fail "disable cpu_dma_latency left the file open" bridge
	fi
	tune_put_s32 "$root/dev/cpu_dma_latency" 2000000000
	con_ok bridge tuning >"$SF_TMP/tune.out"
	tune_expect_row "cpu_dma_latency|host|WARN|not held (limit 2000000000 us)|--enable cpu_dma_latency"
	out=$(con_ok bridge help)
	con_expect_in "$out" "^tuning " "help lists tuning"
	out=$(con_must_exit bridge 1 tuning now)
	con_expect_in "$out" "^tuning: unexpected argument 'now'" "tuning with an argument"
	br_stop bridge
	;;
realhost)
	# This host as it is: the placement plan chooses the CPUs from both.
	taskset -pc 0,1 $$ >/dev/null
	rc=0
	timeout -k 2 30 "$IB2ROCE" --tune-check -d sim_ib0 -r sim_roce0 --workers 1 \
		-e buffers=1024 >"$SF_TMP/tune.out" 2>"$SF_TMP/tune.err" || rc=$?
	case $rc in
	0 | 1 | 3) ;;
	*) sf_fail "--tune-check on this host: exit status $rc" "$SF_TMP/tune.out" "$SF_TMP/tune.err" ;;
	esac
	head -1 "$SF_TMP/tune.out" | grep -Eq '^CHECK +TARGET +STATUS +DETAIL +FIX$' ||
		sf_fail "no header line" "$SF_TMP/tune.out"
	tail -1 "$SF_TMP/tune.out" | grep -Eq '^summary: [0-9]+ PASS, [0-9]+ WARN, [0-9]+ FAIL$' ||
		sf_fail "no summary line" "$SF_TMP/tune.out"
	grep -Eq '^(isolcpus|nohz_full|rcu_nocbs|smt|governor|cstate) +cpu[0-9]+ +(PASS|WARN|FAIL) ' \
		"$SF_TMP/tune.out" || sf_fail "no worker CPU lines" "$SF_TMP/tune.out"
	rc=0
	"$IB2ROCE" --tune-check --tune-root '' >"$SF_TMP/tune.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || sf_fail "--tune-root '': exit status $rc, expected 2" "$SF_TMP/tune.out"
	grep -q "option --tune-root: empty directory" "$SF_TMP/tune.out" ||
		sf_fail "--tune-root '': no message" "$SF_TMP/tune.out"
	;;
*)
	sf_fail "unknown scenario $scenario"
	;;
esac
