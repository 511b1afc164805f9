# shellcheck shell=bash
# Helpers for the tests of mcsender and mclisten (tools/); sourced by each test (bash,
# set -eu) after which the bridge and console helpers (../console/lib.sh and
# ../bridge/lib.sh: a fabric per test, br_start, br_bridge, br_stop, br_field, wait_json,
# ...) are available too.
#
# Environment (tests/tools/meson.build), besides the console tests' variables:
#   MCSENDER  the sender program
#   MCLISTEN  the listener program

: "${MCSENDER:?MCSENDER must name the mcsender program}"
: "${MCLISTEN:?MCLISTEN must name the mclisten program}"

# shellcheck source-path=SCRIPTDIR source=../console/lib.sh
. "$(dirname "$0")/../console/lib.sh"

# tl_listen NAME ARG...: start mclisten ARG... in the background and wait for it to have
# joined its groups and posted its receives (its "joined" line: on stderr with --json).
tl_listen() {
	local name=$1 a n

	TL_JOINED_IN=out
	for a in "$@"; do
		if [ "$a" = --json ] || [ "$a" = -j ]; then
			TL_JOINED_IN=err
		fi
	done

	shift
	br_start "$name" 60 "$MCLISTEN" "$@"
	n=0
	while ! grep -q '^mclisten: joined ' "$SF_TMP/$name.$TL_JOINED_IN"; do
		kill -0 "$BR_PID" 2>/dev/null || br_fail "listener $name exited before joining" "$name"
		n=$((n + 1))
		[ "$n" -le 300 ] || br_fail "listener $name: not joined within 30 s" "$name"
		sleep 0.1
	done
}

# tl_send NAME ARG...: run mcsender ARG... to the end; it must exit 0 with a summary
# without errors (in TL_SENT: its sent= value).
tl_send() {
	local name=$1 line

	shift
	br_start "$name" 60 "$MCSENDER" "$@"
	sf_wait_exit "$BR_PID"
	[ "$SF_RC" = 0 ] || br_fail "sender $name exited with status $SF_RC" "$name"
	line=$(grep '^mcsender: sent=' "$SF_TMP/$name.out" || true)
	case "$line" in
	*" errors=0 "*) ;;
	*) br_fail "sender $name: no summary without errors" "$name" ;;
	esac
	# shellcheck disable=SC2034 # read by the tests
	TL_SENT=$(printf '%s\n' "$line" | sed -n 's/^mcsender: sent=\([0-9]*\) .*/\1/p')
}

# tl_stop NAME: SIGTERM to a listener (the senders are done: simfabric has delivered
# everything into its receive queue, which it drains before reporting); it must exit 0.
tl_stop() {
	local tpid

	tpid=$(br_pid "$1")
	if kill -0 "$tpid" 2>/dev/null; then
		kill -TERM "$(sf_child "$tpid")" 2>/dev/null || true
	fi
	tl_end "$1"
}

# tl_end NAME: wait for a listener to exit by itself (-n, -D); it must exit 0.
tl_end() {
	sf_wait_exit "$(br_pid "$1")"
	[ "$SF_RC" = 0 ] || br_fail "listener $1 exited with status $SF_RC" "$1"
}

# tl_field NAME KEY: a value of the listener's summary line ("mclisten: received=..").
tl_field() {
	local v

	v=$(grep '^mclisten: received=' "$SF_TMP/$1.out" | tr ' ' '\n' |
		sed -n "s/^$2=\([0-9][0-9]*\)$/\1/p")
	[ -n "$v" ] || br_fail "listener $1: no $2 in its summary" "$1"
	printf '%s\n' "$v"
}

# tl_expect NAME KEY=VALUE...: the listener's summary has these values.
tl_expect() {
	local name=$1 kv v

	shift
	for kv in "$@"; do
		v=$(tl_field "$name" "${kv%%=*}")
		[ "$v" = "${kv#*=}" ] || br_fail "listener $name: ${kv%%=*}=$v, expected ${kv#*=}" "$name"
	done
}

# tl_json NAME FILTER: jq FILTER over the JSON report of listener NAME (jq -e: fails on
# false/null).
tl_json() {
	jq -e -r "$2" <"$SF_TMP/$1.out" 2>/dev/null ||
		br_fail "listener $1: jq '$2' failed on its report" "$1"
}
