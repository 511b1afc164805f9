# shellcheck shell=bash
# tests/lib/tune.sh (prefix tune_): the tuning report's tests (suite 'tune'): fake /sys,
# /proc, /etc and /dev trees that ib2roce reads through --tune-root, and running
# --tune-check on them; sourced by each test (bash, set -eu). Sources con.sh (bridges,
# bcom, a fabric per test). The NICs are the simulated fabric's sim_ib0 and sim_roce0, whose ibdev_path is
# /dev/shm/simfabric.<fabric>.sys/class/infiniband/<name> (the simulated sysfs,
# docs/simfabric.md): the trees hold those directories (tune_nic_dir).
#
# The fake host: 4 CPUs, two cores of two threads (cpu0+cpu2, cpu1+cpu3), one NUMA node.
# The bridge runs one worker on cpu1 (--cpus 1) and its control thread on cpu0
# (the test script's own affinity, taskset -p), so the tests need a machine with two CPUs.

[ -z "${T_LIB_TUNE:-}" ] || return 0
T_LIB_TUNE=1

# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "${BASH_SOURCE[0]%/*}/con.sh"

# tune_put FILE TEXT: write TEXT and a newline to FILE, creating its directory.
tune_put() {
	mkdir -p "$(dirname "$1")"
	printf '%s\n' "$2" >"$1"
}

# tune_put_s32 FILE VALUE: a binary little-endian 32-bit value (as /dev/cpu_dma_latency reads).
tune_put_s32() {
	local v=$2

	mkdir -p "$(dirname "$1")"
	# shellcheck disable=SC2059 # the format is the four octal escapes
	printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((v & 255)) $(((v >> 8) & 255)) \
		$(((v >> 16) & 255)) $(((v >> 24) & 255)))" >"$1"
}

# nic_dir: where the simulated devices' ibdev_path directories are (after sf_init).
tune_nic_dir() {
	printf '%s\n' "/dev/shm/simfabric.$SIMFABRIC.sys/class/infiniband"
}

# tune_host_tuned DIR: a host tuned as docs/tuning.md says (every check PASSes for cpu1).
tune_host_tuned() {
	local d=$1 c s cpu=$1/sys/devices/system/cpu roce nic

	nic=$d$(tune_nic_dir)

	tune_put "$cpu/online" 0-2
	tune_put "$cpu/isolated" 1
	tune_put "$cpu/nohz_full" 1
	for c in 0 1 2 3; do
		tune_put "$cpu/cpu$c/topology/thread_siblings_list" "$((c % 2)),$((c % 2 + 2))"
		[ "$c" = 0 ] || tune_put "$cpu/cpu$c/online" 1
		tune_put "$cpu/cpu$c/cpufreq/scaling_governor" performance
		s=0
		for st in POLL:0 C1:2 C1E:10 C6:133; do
			tune_put "$cpu/cpu$c/cpuidle/state$s/name" "${st%:*}"
			tune_put "$cpu/cpu$c/cpuidle/state$s/latency" "${st#*:}"
			# C1E and C6 disabled (echo 1 > .../disable), as intel_idle.max_cstate=1
			tune_put "$cpu/cpu$c/cpuidle/state$s/disable" $((s >= 2))
			s=$((s + 1))
		done
	done
	tune_put "$cpu/cpu3/online" 0
	tune_put "$d/sys/devices/system/node/node0/cpulist" 0-3
	tune_put "$d/proc/cmdline" "BOOT_IMAGE=/vmlinuz root=/dev/sda1 isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 intel_idle.max_cstate=1"
	# sim_ib0: a PCI device directory with MSI-X IRQs 40-42.
	for s in 40 41 42; do
		tune_put "$nic/sim_ib0/device/msi_irqs/$s" msix
		tune_put "$d/proc/irq/$s/smp_affinity_list" 0
	done
	tune_put "$nic/sim_ib0/device/numa_node" 0
	# sim_roce0: device links to its PCI directory (as in sysfs), no msi_irqs: its IRQs
	# are the /proc/interrupts lines naming the PCI address.
	roce=$d/sys/devices/pci0000:00/0000:3b:00.0
	tune_put "$roce/numa_node" 0
	mkdir -p "$nic/sim_roce0"
	# From DIR/dev/shm/simfabric.<fabric>.sys/class/infiniband/sim_roce0 up to DIR.
	ln -s ../../../../../../sys/devices/pci0000:00/0000:3b:00.0 "$nic/sim_roce0/device"
	cat >"$d/proc/interrupts" <<'INT'
           CPU0       CPU1       CPU2       CPU3
  0:         31          0          0          0  IR-IO-APIC    2-edge      timer
 40:          5          0          0          0  IR-PCI-MSIX-0000:18:00.0    0-edge      mlx5_async0@pci:0000:18:00.0
 50:          9          0          0          0  IR-PCI-MSIX-0000:3b:00.0    0-edge      mlx5_async0@pci:0000:3b:00.0
 51:        100          0          0          0  IR-PCI-MSIX-0000:3b:00.0    1-edge      mlx5_comp0@pci:0000:3b:00.0
 52:        100          0          0          0  IR-PCI-MSIX-0000:3b:00.0    2-edge      mlx5_comp1@pci:0000:3b:00.0
INT
	for s in 50 51 52; do
		tune_put "$d/proc/irq/$s/smp_affinity_list" 0,2
	done
	tune_put "$d/proc/1/comm" systemd
	tune_put "$d/proc/812/comm" sshd
	tune_put "$d/sys/kernel/mm/transparent_hugepage/enabled" "always [madvise] never"
	tune_put "$d/proc/swaps" "Filename				Type		Size		Used		Priority"
	tune_put "$d/proc/sys/vm/swappiness" 10
	tune_put "$d/proc/sys/kernel/sched_rt_runtime_us" -1
	tune_put "$d/proc/sys/kernel/timer_migration" 0
	# Held at 0 by another process (e.g. tuned's latency-performance profile).
	tune_put_s32 "$d/dev/cpu_dma_latency" 0
}

# tune_host_desktop DIR: a distribution's defaults on the same machine.
tune_host_desktop() {
	local d=$1 c s cpu=$1/sys/devices/system/cpu

	tune_host_tuned "$d"
	tune_put "$cpu/online" 0-3
	tune_put "$cpu/cpu3/online" 1
	tune_put "$cpu/isolated" ""
	tune_put "$cpu/nohz_full" "(null)"
	tune_put "$d/proc/cmdline" "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet splash"
	for c in 0 1 2 3; do
		tune_put "$cpu/cpu$c/cpufreq/scaling_governor" powersave
	done
	for s in 40 41 42 50 51 52; do
		tune_put "$d/proc/irq/$s/smp_affinity_list" 0-3
	done
	tune_put "$d/proc/812/comm" irqbalance
	tune_put "$d/sys/kernel/mm/transparent_hugepage/enabled" "[always] madvise never"
	tune_put "$d/proc/sys/vm/swappiness" 60
	printf '/dev/sda2                               partition\t8388604\t\t0\t\t-2\n' >>"$d/proc/swaps"
	tune_put "$d/proc/sys/kernel/sched_rt_runtime_us" 950000
	tune_put "$d/proc/sys/kernel/timer_migration" 1
	tune_put_s32 "$d/dev/cpu_dma_latency" 2000000000
	for c in 0 1 2 3; do
		tune_put "$cpu/cpu$c/cpuidle/state2/disable" 0
		tune_put "$cpu/cpu$c/cpuidle/state3/disable" 0
	done
}

# tune_check ROOT EXIT ARG...: --tune-check on ROOT (worker cpu1, a pool of
# 1024 buffers, 4160 KiB) must exit with EXIT; the report is in $SF_TMP/tune.out.
tune_check() {
	local root=$1 want=$2 rc=0

	shift 2
	timeout -k 2 30 "$IB2ROCE" --tune-check --tune-root "$root" -d sim_ib0 \
		-r sim_roce0 --workers 1 --cpus 1 -e buffers=1024 "$@" >"$SF_TMP/tune.out" \
		2>"$SF_TMP/tune.err" || rc=$?
	[ "$rc" = "$want" ] || sf_fail "--tune-check on $root $*: exit status $rc, expected $want" \
		"$SF_TMP/tune.out" "$SF_TMP/tune.err"
}

# tune_expect_report EXPECTED-FILE: the report must be exactly the file's lines.
tune_expect_report() {
	diff -u "$1" "$SF_TMP/tune.out" >"$SF_TMP/tune.diff" ||
		sf_fail "report differs from the expected one" "$SF_TMP/tune.diff"
}

# tune_expect_row 'CHECK|TARGET|STATUS|DETAIL[|FIX]': the report must hold this row (columns
# compared exactly, the padding between them ignored: it follows the widest cell).
tune_expect_row() {
	sed 's/   *\([^ ]\)/|\1/g' "$SF_TMP/tune.out" | grep -Fxq -- "$1" ||
		sf_fail "no row '$1' in the report" "$SF_TMP/tune.out"
}

# tune_expect_line LINE: the report must hold exactly this line.
tune_expect_line() {
	grep -Fxq -- "$1" "$SF_TMP/tune.out" ||
		sf_fail "no line '$1' in the report" "$SF_TMP/tune.out"
}
