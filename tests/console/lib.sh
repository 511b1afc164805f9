# shellcheck shell=bash
# Helpers for the control-plane tests (suite 'console'); sourced after nothing else: it
# sources the bridge tests' helpers (../bridge/lib.sh: fabric per test, bridges,
# listeners, senders, final counters).
#
# Environment (set by tests/console/meson.build), besides the bridge tests' variables:
#   BCOM          the console client
#   NOTIFYLISTEN  the sd_notify listener (tests/control/notifylisten.c)

: "${BCOM:?BCOM must name the bcom program}"

# shellcheck source-path=SCRIPTDIR source=../bridge/lib.sh
. "$(dirname "$0")/../bridge/lib.sh"

# bc NAME COMMAND...: bcom to bridge NAME's socket; output in $SF_TMP/bcom.out, its exit
# status in BC_RC (the function itself never fails).
bc() {
	local name=$1

	shift
	BC_RC=0
	timeout -k 2 20 "$BCOM" --control "$SF_TMP/$name.sock" "$@" >"$SF_TMP/bcom.out" \
		2>"$SF_TMP/bcom.err" || BC_RC=$?
}

# bc_ok NAME COMMAND...: bcom must succeed; prints its output.
bc_ok() {
	bc "$@"
	[ "$BC_RC" = 0 ] || br_fail "bcom $*: exit status $BC_RC: $(cat "$SF_TMP/bcom.out" "$SF_TMP/bcom.err")" "$1"
	cat "$SF_TMP/bcom.out"
}

# bc_fail NAME STATUS COMMAND...: bcom must exit with STATUS; prints its output.
bc_fail() {
	local name=$1 want=$2

	shift 2
	bc "$name" "$@"
	[ "$BC_RC" = "$want" ] || br_fail "bcom $*: exit status $BC_RC, expected $want: $(cat "$SF_TMP/bcom.out" "$SF_TMP/bcom.err")" "$name"
	cat "$SF_TMP/bcom.out" "$SF_TMP/bcom.err"
}

# expect_in TEXT PATTERN WHAT [NAME]: TEXT must match the extended regex PATTERN.
expect_in() {
	printf '%s\n' "$1" | grep -Eq -- "$2" || br_fail "$3: expected /$2/ in:
$1" "${4:-bridge}"
}

# json NAME FILTER: stats --json of bridge NAME through jq FILTER (jq -e: fails on
# null/false and on JSON that does not parse).
json() {
	local out

	bc "$1" stats --json
	[ "$BC_RC" = 0 ] || br_fail "stats --json: exit status $BC_RC" "$1"
	out=$(jq -e -r "$2" <"$SF_TMP/bcom.out") || br_fail "stats --json: jq '$2' failed on: $(cat "$SF_TMP/bcom.out")" "$1"
	printf '%s\n' "$out"
}

# stall_worker NAME: hold worker 0 of bridge NAME (the stall feature) and wait until it
# stopped: its pass counter no longer moves (15 s at most). The NIC-drop tests then send
# more than its receive queue holds; `bc_ok NAME disable stall` lets it go on.
stall_worker() {
	local prev=-1 n=0 p

	bc_ok "$1" enable stall=1 >/dev/null
	while :; do
		p=$(json "$1" '.workers[0].passes')
		[ "$p" != "$prev" ] || return 0
		prev=$p
		n=$((n + 1))
		[ "$n" -le 50 ] || br_fail "worker 0 does not stall" "$1"
		sleep 0.3
	done
}

# wait_json NAME FILTER VALUE [SECS]: poll until jq FILTER gives VALUE.
wait_json() {
	local n=0 v lim=$((${4:-10} * 10))

	while :; do
		v=$(json "$1" "$2" 2>/dev/null || true)
		[ "$v" = "$3" ] && return 0
		n=$((n + 1))
		[ "$n" -le "$lim" ] || br_fail "stats --json $2 = '$v', expected '$3' within ${4:-10} s" "$1"
		sleep 0.1
	done
}
