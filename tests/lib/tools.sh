# shellcheck shell=bash
# tests/lib/tools.sh (prefix tools_): the tests of mcsender and mclisten (tests/tools);
# sourced by each test (bash, set -eu). Sources con.sh, so the bridge and console helpers
# (con.sh, br.sh, sf.sh: a fabric per test, br_start, br_bridge, br_stop, br_field,
# con_wait_json, ...) are available too.
#
# Environment (tests/tools/meson.build), besides the console tests' variables:
#   MCSENDER  the sender program
#   MCLISTEN  the listener program

: "${MCSENDER:?MCSENDER must name the mcsender program}"
: "${MCLISTEN:?MCLISTEN must name the mclisten program}"

[ -z "${T_LIB_TOOLS:-}" ] || return 0
T_LIB_TOOLS=1

# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "${BASH_SOURCE[0]%/*}/con.sh"

# tools_listen NAME ARG...: start mclisten ARG... in the background and wait for it to have
# joined its groups and posted its receives (its "joined" line: on stderr with --json).
tools_listen() {
	local name=$1 a

	TOOLS_JOINED_IN=out
	for a in "$@"; do
		if [ "$a" = --json ] || [ "$a" = -j ]; then
			TOOLS_JOINED_IN=err
		fi
	done

	shift
	br_start "$name" 60 "$MCLISTEN" "$@"
	t_wait_until 30 tools_joined "$name" || br_fail "listener $name: not joined within 30 s" "$name"
}

# tools_joined NAME: listener NAME printed its "joined" line; fails the test when it did not
# and exited.
tools_joined() {
	! grep -q '^mclisten: joined ' "$SF_TMP/$1.$TOOLS_JOINED_IN" || return 0
	kill -0 "$BR_PID" 2>/dev/null || br_fail "listener $1 exited before joining" "$1"
	return 1
}

# tools_send NAME ARG...: run mcsender ARG... to the end; it must exit 0 with a summary
# without errors (in TOOLS_SENT: its sent= value).
tools_send() {
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
	TOOLS_SENT=$(printf '%s\n' "$line" | sed -n 's/^mcsender: sent=\([0-9]*\) .*/\1/p')
}

# tools_stop NAME: SIGTERM to a listener (the senders are done: simfabric has delivered
# everything into its receive queue, which it drains before reporting); it must exit 0.
tools_stop() {
	local tpid

	tpid=$(br_pid "$1")
	if kill -0 "$tpid" 2>/dev/null; then
		kill -TERM "$(sf_child "$tpid")" 2>/dev/null || true
	fi
	tools_end "$1"
}

# tools_end NAME: wait for a listener to exit by itself (-n, -D); it must exit 0.
tools_end() {
	sf_wait_exit "$(br_pid "$1")"
	[ "$SF_RC" = 0 ] || br_fail "listener $1 exited with status $SF_RC" "$1"
}

# tools_field NAME KEY: a value of the listener's summary line ("mclisten: received=..").
tools_field() {
	local v

	v=$(grep '^mclisten: received=' "$SF_TMP/$1.out" | tr ' ' '\n' |
		sed -n "s/^$2=\([0-9][0-9]*\)$/\1/p")
	[ -n "$v" ] || br_fail "listener $1: no $2 in its summary" "$1"
	printf '%s\n' "$v"
}

# tools_expect NAME KEY=VALUE...: the listener's summary has these values.
tools_expect() {
	local name=$1 kv v

	shift
	for kv in "$@"; do
		v=$(tools_field "$name" "${kv%%=*}")
		[ "$v" = "${kv#*=}" ] || br_fail "listener $name: ${kv%%=*}=$v, expected ${kv#*=}" "$name"
	done
}

# tools_json NAME FILTER: jq FILTER over the JSON report of listener NAME (jq -e: fails on
# false/null).
tools_json() {
	jq -e -r "$2" <"$SF_TMP/$1.out" 2>/dev/null ||
		br_fail "listener $1: jq '$2' failed on its report" "$1"
}
