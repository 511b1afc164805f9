# shellcheck shell=bash
# tests/lib/con.sh (prefix con_): bcom to a bridge's console and its stats --json, for
# the control-plane tests (suite 'console') and every test that drives a bridge through
# its console; sourced by each test (bash, set -eu) and by ha.sh, ka.sh, tools.sh,
# tune.sh. Sources br.sh (fabric per test, bridges, listeners, senders, final counters).
#
# Environment (set by tests/console/meson.build), besides the bridge tests' variables:
#   BCOM          the console client
#   NOTIFYLISTEN  the sd_notify listener (tests/control/notifylisten.c)

: "${BCOM:?BCOM must name the bcom program}"

[ -z "${T_LIB_CON:-}" ] || return 0
T_LIB_CON=1

# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "${BASH_SOURCE[0]%/*}/br.sh"

# con_bc NAME COMMAND...: bcom to bridge NAME's socket; output in $SF_TMP/bcom.out, its
# exit status in CON_RC (the function itself never fails).
con_bc() {
	local name=$1

	shift
	CON_RC=0
	timeout -k 2 20 "$BCOM" --control "$SF_TMP/$name.sock" "$@" >"$SF_TMP/bcom.out" \
		2>"$SF_TMP/bcom.err" || CON_RC=$?
}

# con_ok NAME COMMAND...: bcom must succeed; prints its output.
con_ok() {
	con_bc "$@"
	[ "$CON_RC" = 0 ] || br_fail "bcom $*: exit status $CON_RC: $(cat "$SF_TMP/bcom.out" "$SF_TMP/bcom.err")" "$1"
	cat "$SF_TMP/bcom.out"
}

# con_must NAME COMMAND...: bcom must succeed; its output is left in $SF_TMP/bcom.out,
# nothing printed.
con_must() {
	con_ok "$@" >/dev/null
}

# con_must_exit NAME STATUS COMMAND...: bcom must exit with STATUS; prints its output.
con_must_exit() {
	local name=$1 want=$2

	shift 2
	con_bc "$name" "$@"
	[ "$CON_RC" = "$want" ] || br_fail "bcom $*: exit status $CON_RC, expected $want: $(cat "$SF_TMP/bcom.out" "$SF_TMP/bcom.err")" "$name"
	cat "$SF_TMP/bcom.out" "$SF_TMP/bcom.err"
}

# con_expect_in TEXT PATTERN WHAT [NAME]: TEXT must match the extended regex PATTERN.
con_expect_in() {
	printf '%s\n' "$1" | grep -Eq -- "$2" || br_fail "$3: expected /$2/ in:
$1" "${4:-bridge}"
}

# con_json NAME FILTER: stats --json of bridge NAME through jq FILTER (jq -e: fails on
# null/false and on JSON that does not parse).
con_json() {
	local out

	con_bc "$1" stats --json
	[ "$CON_RC" = 0 ] || br_fail "stats --json: exit status $CON_RC" "$1"
	out=$(jq -e -r "$2" <"$SF_TMP/bcom.out") || br_fail "stats --json: jq '$2' failed on: $(cat "$SF_TMP/bcom.out")" "$1"
	printf '%s\n' "$out"
}

# con_stall_worker NAME: hold worker 0 of bridge NAME (the stall feature) and wait until
# it stopped: its pass counter no longer moves between two looks 0.3 s apart (15 s at
# most). The NIC-drop tests then send more than its receive queue holds;
# `con_ok NAME disable stall` lets it go on.
con_stall_worker() {
	local prev=-1 n=0 p

	con_ok "$1" enable stall=1 >/dev/null
	while :; do
		p=$(con_json "$1" '.workers[0].passes')
		[ "$p" != "$prev" ] || return 0
		prev=$p
		n=$((n + 1))
		[ "$n" -le 50 ] || br_fail "worker 0 does not stall" "$1"
		sleep 0.3
	done
}

# con_join_many NAME N: join N groups 239.5.0.0, 239.5.0.1, ... (both directions) on
# bridge NAME in one bcom session (120 s at most); every join must be accepted
# ("joining"). Its output in $SF_TMP/joins.out. Does not wait for the joins to complete.
con_join_many() {
	local name=$1 n=$2 i joining

	for i in $(seq 0 $((n - 1))); do
		echo "join 239.5.$((i / 256)).$((i % 256)) both"
	done >"$SF_TMP/joins.txt"
	timeout -k 2 120 "$BCOM" --control "$SF_TMP/$name.sock" <"$SF_TMP/joins.txt" \
		>"$SF_TMP/joins.out" 2>&1 || br_fail "bcom joins failed: $(tail -3 "$SF_TMP/joins.out")" "$name"
	joining=$(grep -c '^joining 239\.5\.' "$SF_TMP/joins.out") || joining=0
	[ "$joining" = "$n" ] ||
		br_fail "$joining of $n joins accepted: $(grep -v '^joining' "$SF_TMP/joins.out" | head -3)" "$name"
}

# con_wait_json NAME FILTER VALUE [SECS]: poll until jq FILTER gives VALUE (10 s at most).
con_wait_json() {
	t_wait_until "${4:-10}" con_json_is "$1" "$2" "$3" ||
		br_fail "stats --json $2 = '$CON_JSON', expected '$3' within ${4:-10} s" "$1"
}

# con_json_is NAME FILTER VALUE: jq FILTER over stats --json gives VALUE (the value it
# gave in CON_JSON).
con_json_is() {
	CON_JSON=$(con_json "$1" "$2" 2>/dev/null || true)
	[ "$CON_JSON" = "$3" ]
}

# con_wait_prom FILE NAME LINE: bridge NAME's metrics file FILE holds the line LINE within
# 10 s (br_fail otherwise).
con_wait_prom() {
	t_wait_until 10 grep -sqx -- "$3" "$1" || br_fail "metrics file without '$3'" "$2"
}

# con_health_reader NAME: the HA notify reader (ha/ib2roce-notify.sh) on a fifo of its own,
# writing $SF_TMP/ka.health from `bcom health` every 0.1 s of bridge NAME, as under
# keepalived; READER is its pid (also in SF_PIDS), fd 4 holds the fifo open; returns once
# the file says 0.
con_health_reader() {
	mkfifo "$SF_TMP/ka.fifo"
	"$HA_NOTIFY" --bcom "$BCOM" --health-file "$SF_TMP/ka.health" --fifo "$SF_TMP/$1.sock" \
		"$SF_TMP/ka.fifo" 2>"$SF_TMP/reader.err" &
	READER=$!
	SF_PIDS="$SF_PIDS $READER"
	exec 4<>"$SF_TMP/ka.fifo"
	t_wait_until 10 grep -sqx 0 "$SF_TMP/ka.health" || br_fail "health file not 0 at start" "$1"
}
