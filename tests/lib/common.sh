# shellcheck shell=bash
# tests/lib/common.sh: the bottom of the shell test libraries (prefix t_); sources
# nothing. Every other library in tests/lib/ sources it through sf.sh.
#
# The libraries, each sourcing only those below it (tests/README.md):
#   common.sh  t_     waiting for a condition, for a process to exit
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
