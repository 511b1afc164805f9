# shellcheck shell=bash
# tests/lib/common.sh: the bottom of the shell test libraries (prefix t_); sources
# nothing. Every other library in tests/lib/ sources it through sf.sh.
#
# The libraries, each sourcing only those below it (tests/README.md):
#   common.sh  t_     waiting for a condition, for a process to exit, network namespaces
#   sf.sh      sf_    a simulated fabric per test, the cleanup trap, Debian's tools
#   br.sh      br_    bridges, mcpkt listeners and senders, final counters
#   con.sh     con_   bcom to a bridge's console, stats --json
#   ha.sh      ha_    HA pairs driven through their consoles
#   ka.sh      ka_    HA pairs elected by real keepalived
#   tools.sh   tools_ mcsender and mclisten
#   tune.sh    tune_  fake /sys, /proc trees for --tune-check

[ -z "${T_LIB_COMMON:-}" ] || return 0
T_LIB_COMMON=1

# t_wait_until SECS CMD...: run CMD (in this shell) every 0.1 s until it succeeds, at
# most SECS seconds (SECS * 10 tries after the first). Returns 0 once CMD succeeded, 1
# when the time is up: the caller fails with its own message (`t_wait_until 10 cond ||
# sf_fail "..."`). CMD may fail the test itself (sf_fail, br_fail), e.g. when the
# process it waits for exited. CMD runs as an `if` condition: set -e is off inside it.
t_wait_until() {
	local lim=$(($1 * 10)) n=0

	shift
	until "$@"; do
		n=$((n + 1))
		[ "$n" -le "$lim" ] || return 1
		sleep 0.1
	done
}

# t_pid_gone PID: process PID no longer runs (a condition for t_wait_until).
t_pid_gone() {
	! kill -0 "$1" 2>/dev/null
}

# t_topology_default: print simfabric's default topology (two segments, sim_ib0-3 and
# sim_roce0-3, docs/simfabric.md) in SIMFABRIC_TOPOLOGY format, for a test's topology
# function to add its own devices to.
t_topology_default() {
	cat <<'TOPO'
segment ib0   ib   prefix fe80::  sm 1
segment eth0  eth
device sim_ib0    segment ib0   lid 1  ipv4 198.18.0.1/24
device sim_ib1    segment ib0   lid 2  ipv4 198.18.0.2/24
device sim_ib2    segment ib0   lid 3  ipv4 198.18.0.3/24
device sim_ib3    segment ib0   lid 4  ipv4 198.18.0.4/24
device sim_roce0  segment eth0  mac 02:00:00:00:01:01  ipv4 198.19.0.1/24
device sim_roce1  segment eth0  mac 02:00:00:00:01:02  ipv4 198.19.0.2/24
device sim_roce2  segment eth0  mac 02:00:00:00:01:03  ipv4 198.19.0.3/24
device sim_roce3  segment eth0  mac 02:00:00:00:01:04  ipv4 198.19.0.4/24
TOPO
}

# t_netns_reexec NAME SCRIPT TOPOLOGY_FN: run the test SCRIPT (the caller's "$0") again
# inside a network namespace with a netdev per simulated device (`simfab netns`), so that
# it sees real interfaces behind the devices; the fabric's event sockets are abstract
# AF_UNIX sockets, which belong to a namespace, so the whole test runs inside. Called at
# the top of the test, before any other library: inside the namespace (T_NETNS set) it
# returns at once, with T_NETNS the namespace and T_NETNS_TOPO the topology file (the
# test exports it as SIMFABRIC_TOPOLOGY after sf_init). Outside, it writes the topology
# that the shell function TOPOLOGY_FN prints, makes the namespace, runs `bash SCRIPT`
# in it, deletes the namespace and the file, and exits with the script's status; it
# exits 77 (skip) without root or when simfab netns fails. Needs SIMFAB (the simfab
# tool). NAME names the namespace and the skip messages.
t_netns_reexec() {
	local name=$1 script=$2 topofn=$3 ns topo rc=0

	[ -z "${T_NETNS:-}" ] || return 0
	: "${SIMFAB:?SIMFAB must name the simfab tool}"
	if [ "$(id -u)" != 0 ]; then
		echo "$name: SKIP: needs root for network namespaces" >&2
		exit 77
	fi
	ns=ibr-$name-$$
	topo=$(mktemp "${TMPDIR:-/tmp}/$name-topo.XXXXXX")
	"$topofn" >"$topo"
	# shellcheck disable=SC2064 # the names are fixed now
	trap "ip netns delete '$ns' 2>/dev/null || true; SIMFABRIC='ns-$name-$$' '$SIMFAB' reset >/dev/null 2>&1 || true; rm -f '$topo' '$topo.netns'" EXIT
	if ! SIMFABRIC=ns-$name-$$ SIMFABRIC_TOPOLOGY=$topo "$SIMFAB" netns "$ns" >"$topo.netns" 2>&1; then
		echo "$name: SKIP: simfab netns failed (no namespace support?):" >&2
		cat "$topo.netns" >&2
		exit 77
	fi
	T_NETNS=$ns T_NETNS_TOPO=$topo ip netns exec "$ns" bash "$script" || rc=$?
	exit "$rc"
}
