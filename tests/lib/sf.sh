# shellcheck shell=bash
# tests/lib/sf.sh (prefix sf_): a simulated fabric per test, its cleanup, Debian's tools
# on it; sourced by each test (bash, set -eu) that runs on the simulated fabric, and by
# the libraries above it (br.sh). Sources common.sh.
#
# Environment (set by tests/simfabric/meson.build and the other suites' envs):
#   SIMLIB       directory of the simulated libibverbs.so.1 / librdmacm.so.1
#   SIMFAB       path of the simfab tool
#   SIM_PRELOAD  optional: the ASan runtime, preloaded into the uninstrumented Debian
#                tools (ibv_devices, ibv_devinfo, mckey) when the simulated libraries
#                are built with -fsanitize=address (see meson.build)
#
# Every test runs on its own fabric (sf_init NAME), so tests can run in parallel; the
# exit trap kills what the test started and resets the fabric.

[ -z "${T_LIB_SF:-}" ] || return 0
T_LIB_SF=1

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"

: "${SIMLIB:?SIMLIB must name the directory of the simulated libraries}"
: "${SIMFAB:?SIMFAB must name the simfab tool}"
export LD_LIBRARY_PATH="$SIMLIB"
# The tests rely on the default topology.
unset SIMFABRIC_TOPOLOGY

SF_PIDS=""
SF_TMP=""
SF_FABRICS=""

# The command line a Debian tool runs under: the ASan runtime first in LD_PRELOAD when
# the libraries are instrumented (stdbuf's own preload, if any, follows it), so that
# memory errors and leaks of the simulated libraries inside ibv_devinfo or mckey fail
# the test like those of our own programs.
# shellcheck disable=SC2016
SF_EXEC='if [ -n "${SIM_PRELOAD:-}" ]; then
	LD_PRELOAD="$SIM_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}"
	export LD_PRELOAD
fi
exec "$@"'

sf_log() {
	printf '%s: %s\n' "$SF_TEST" "$*" >&2
}

# Print the files given (tool outputs) and fail the test.
sf_fail() {
	local msg=$1 f

	shift
	sf_log "FAIL: $msg"
	for f in "$@"; do
		if [ -f "$f" ]; then
			printf -- '--- %s\n' "${f##*/}" >&2
			cat "$f" >&2
		fi
	done
	exit 1
}

# sf_all_gone: none of the recorded processes runs.
sf_all_gone() {
	local p

	for p in $SF_PIDS; do
		! kill -0 "$p" 2>/dev/null || return 1
	done
}

sf_cleanup() {
	local rc=$? p f

	trap - EXIT INT TERM
	for p in $SF_PIDS; do
		kill -TERM "$p" 2>/dev/null || true
	done
	t_wait_until 2 sf_all_gone || true
	for p in $SF_PIDS; do
		kill -KILL "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	for f in $SF_FABRICS; do
		SIMFABRIC=$f "$SIMFAB" reset >/dev/null 2>&1 || rm -rf "/dev/shm/simfabric.$f" \
			"/dev/shm/simfabric.$f".*
	done
	if [ -n "$SF_TMP" ]; then
		rm -rf "$SF_TMP"
	fi
	exit "$rc"
}

# sf_init NAME: name the test, choose its fabric (unique per test run), make a scratch
# directory and install the cleanup trap.
sf_init() {
	SF_TEST=$1
	SF_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sftest-$1.XXXXXX")
	trap sf_cleanup EXIT
	trap 'exit 130' INT TERM
	sf_new_fabric SIMFABRIC "$1"
	export SIMFABRIC
	# A stale fabric of the same name (pid reuse after a crash) would not be fresh.
	"$SIMFAB" reset >/dev/null
}

# sf_new_fabric VAR TAG: set VAR to a fabric name unique to this test process (at most
# 31 characters), registered for the reset at exit.
sf_new_fabric() {
	local name

	name="t-$2-$$"
	printf -v "$1" '%.31s' "$name"
	SF_FABRICS="$SF_FABRICS ${!1}"
}

# sf_need PROGRAM...: skip the test (exit 77) when a program is missing.
sf_need() {
	local p

	for p in "$@"; do
		if ! command -v "$p" >/dev/null 2>&1; then
			sf_log "SKIP: $p not installed (apt-get install rdmacm-utils ibverbs-utils)"
			exit 77
		fi
	done
}

# sf_tool SECS CMD...: run a Debian tool on the simulation in the foreground, bounded.
sf_tool() {
	local secs=$1

	shift
	timeout -k 5 "$secs" sh -c "$SF_EXEC" sf_tool "$@"
}

# sf_start OUT SECS CMD...: start a Debian tool in the background, its stdout line-
# buffered into OUT (mckey prints progress with printf), bounded by timeout. Sets
# SF_PID to the timeout process (its exit status is the tool's, 124 on timeout).
sf_start() {
	local out=$1 secs=$2

	shift 2
	timeout -k 5 "$secs" stdbuf -oL -eL sh -c "$SF_EXEC" sf_tool "$@" >"$out" 2>&1 &
	SF_PID=$!
	SF_PIDS="$SF_PIDS $SF_PID"
}

# sf_child PID: the process the timeout process PID runs (stdbuf and sh exec into it).
sf_child() {
	t_wait_until 2 sf_has_child "$1" || sf_fail "no child process of $1"
	printf '%s\n' "$SF_CHILD"
}

# sf_has_child PID: PID has a child process; its pid in SF_CHILD.
sf_has_child() {
	SF_CHILD=$(cat "/proc/$1/task/$1/children" 2>/dev/null || true)
	SF_CHILD=${SF_CHILD%% *}
	[ -n "$SF_CHILD" ]
}

# sf_wait_line FILE PATTERN PID SECS: wait until FILE has a line matching the extended
# regular expression PATTERN; fail if PID exits first or SECS pass.
sf_wait_line() {
	t_wait_until "$4" sf_has_line "$1" "$2" "$3" || sf_fail "no '$2' within $4 s" "$1"
}

# sf_has_line FILE PATTERN PID: FILE has a line matching PATTERN; fails the test when
# it has none and PID exited.
sf_has_line() {
	! grep -Eq -- "$2" "$1" || return 0
	kill -0 "$3" 2>/dev/null && return 1
	grep -Eq -- "$2" "$1" || sf_fail "exited before printing '$2'" "$1"
}

# sf_wait_exit PID: wait for a background process started by sf_start; its exit status
# in SF_RC.
# shellcheck disable=SC2034 # SF_RC is read by the tests
sf_wait_exit() {
	SF_RC=0
	wait "$1" 2>/dev/null || SF_RC=$?
}

# sf_counter DEV NAME: one port counter of DEV from `simfab counters DEV --json`.
sf_counter() {
	local v

	v=$("$SIMFAB" counters "$1" --json | sed -n "s/.*\"$2\": \([0-9][0-9]*\).*/\1/p")
	[ -n "$v" ] || sf_fail "simfab counters $1 --json has no counter $2"
	printf '%s\n' "$v"
}

# sf_sysfs_file DEV FILE: the path of FILE (e.g. ports/1/hw_counters/out_of_buffer) in
# DEV's directory of the simulated sysfs (what ibv_device.ibdev_path names).
sf_sysfs_file() {
	printf '%s\n' "/dev/shm/simfabric.$SIMFABRIC.sys/class/infiniband/$1/$2"
}

# sf_sysfs_settle: wait (up to 5 s) until the simulated sysfs shows every port's
# out_of_buffer as the fabric counts it: files are refreshed every 100 ms by the running
# processes, and a bridge reads its NIC drops from them. Call it once traffic stopped.
sf_sysfs_settle() {
	t_wait_until 5 sf_sysfs_settled || true
}

# sf_sysfs_settled: every port's out_of_buffer file shows the fabric's count.
sf_sysfs_settled() {
	local json dev f v want

	json=$("$SIMFAB" counters --json)
	for f in /dev/shm/simfabric."$SIMFABRIC".sys/class/infiniband/*/ports/1/hw_counters/out_of_buffer; do
		[ -f "$f" ] || continue
		dev=${f#/dev/shm/simfabric."$SIMFABRIC".sys/class/infiniband/}
		dev=${dev%%/*}
		want=$(printf '%s\n' "$json" | sed -n "s/^ *\"$dev\": .*\"out_of_buffer\": \([0-9]*\).*/\1/p")
		v=$(cat "$f" 2>/dev/null || true)
		[ "$v" = "$want" ] || return 1
	done
}

# sf_expect_counter DEV NAME VALUE: fail unless the counter has that value.
sf_expect_counter() {
	local v

	v=$(sf_counter "$1" "$2")
	if [ "$v" != "$3" ]; then
		"$SIMFAB" counters >"$SF_TMP/counters.txt" 2>&1 || true
		sf_fail "$1 $2 is $v, expected $3" "$SF_TMP/counters.txt"
	fi
}

# sf_free_tcp_port: print a TCP port of 127.0.0.1 that no socket uses (in any state),
# below the kernel's ephemeral range, for the out-of-band exchange of perftest, qperf,
# ucx_perftest and fi_pingpong. Fails the test when none of 20 tries is free.
sf_free_tcp_port() {
	local lo p

	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	for p in $(shuf -i 10000-$((lo - 1)) -n 20); do
		if [ -z "$(ss -Htan "sport = :$p")" ]; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	sf_fail "no free TCP port found"
}

# sf_wait_listen PID PORT FILE: wait (up to 30 s) until a TCP socket listens on PORT;
# fail, showing FILE, if PID exits first.
sf_wait_listen() {
	t_wait_until 30 sf_listens "$1" "$2" "$3" || sf_fail "nothing listens on port $2 after 30 s" "$3"
}

# sf_listens PID PORT FILE: a TCP socket listens on PORT; fails the test, showing FILE,
# when none does and PID exited.
sf_listens() {
	[ -z "$(ss -Hltn "sport = :$2")" ] || return 0
	kill -0 "$1" 2>/dev/null || sf_fail "exited before listening on port $2" "$3"
	return 1
}
