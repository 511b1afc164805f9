#!/bin/bash
# ha/ib2roce-notify.sh without keepalived: a stand-in bcom records the commands it is
# given (one line each: the --control path and the command).
# - per state: MASTER -> role P active, BACKUP/FAULT/STOP -> role P standby, the exit
#   status is bcom's (a failure also on stderr, with bcom's reply); bad usage and an unknown state: exit 2, no bcom run;
# - --fifo: lines written into the FIFO as keepalived writes them are applied in their
#   order; other instances and other lines are ignored; SIGTERM makes the partitions it
#   made active (and only those) standby, and it exits 0;
# - --health-file: the file holds 0 while `bcom health` succeeds, 1 once it fails or
#   finds no bridge; a bridge that does not answer (control thread stalled) keeps it 0
#   for 4 polls, 1 from the 5th; the poll ends with the reader, even when the reader is
#   killed with SIGKILL;
# - --health: exit 0 healthy or no answer, 1 failed or no bridge;
# - --rt N: the reader real-time (SCHED_RR N).
set -eu
: "${HA_NOTIFY:?HA_NOTIFY must name ha/ib2roce-notify.sh}"
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

T=$(mktemp -d "${TMPDIR:-/tmp}/ha-notify.XXXXXX")
READER=""
cleanup() {
	[ -z "$READER" ] || kill -KILL "$READER" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "ha-notify: FAIL: $*" >&2
	for f in "$T"/log "$T"/err; do
		[ ! -e "$f" ] || { echo "--- ${f##*/}"; cat "$f"; } >&2
	done
	exit 1
}

# The stand-in bcom: records its arguments after --control; `health` fails while
# $T/sick exists, exits 3 (no bridge) while $T/gone exists, never answers while $T/hang
# exists; `role x ...` fails (exit 1).
cat >"$T/bcom" <<EOB
#!/bin/sh
shift
echo "\$*" >>"$T/log"
case \$2 in
health)
	[ ! -e "$T/hang" ] || exec sleep 30
	[ ! -e "$T/gone" ] || exit 3
	[ ! -e "$T/sick" ]
	;;
role) [ "\$3" != x ] || { echo "no partition x"; exit 1; } ;;
esac
EOB
chmod +x "$T/bcom"

# wait_for WHAT CMD...: until CMD succeeds (10 s at most).
wait_for() {
	local what=$1

	shift
	t_wait_until 10 "$@" 2>/dev/null || fail "$what"
}

# Per state.
"$HA_NOTIFY" --bcom "$T/bcom" /c md MASTER || fail "MASTER: exit $?"
"$HA_NOTIFY" --bcom "$T/bcom" /c md BACKUP || fail "BACKUP: exit $?"
"$HA_NOTIFY" --bcom "$T/bcom" /c md FAULT || fail "FAULT: exit $?"
"$HA_NOTIFY" --bcom "$T/bcom" /c md STOP || fail "STOP: exit $?"
rc=0
"$HA_NOTIFY" --bcom "$T/bcom" /c x MASTER 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "bcom failing: exit $rc, not 1"
# The failure is on stderr too (it went only to syslog: by hand, nothing was said).
grep -q "partition x: MASTER: role active: exit 1: no partition x$" "$T/err" ||
	fail "bcom failing: stderr does not say why"
printf '%s\n' "/c role md active" "/c role md standby" "/c role md standby" \
	"/c role md standby" "/c role x active" >"$T/want"
cmp -s "$T/want" "$T/log" || fail "per-state commands differ from $(cat "$T/want")"
: >"$T/log"
for args in "/c md" "/c md MASTER extra" "/c md master" "--fifo /c" "--bcom" \
	"--health-file $T/h /c md MASTER"; do
	rc=0
	# shellcheck disable=SC2086 # the words of args
	"$HA_NOTIFY" --bcom "$T/bcom" $args 2>"$T/err" || rc=$?
	[ "$rc" = 2 ] || fail "'$args': exit $rc, not 2"
	grep -q 'usage\|unknown state' "$T/err" || fail "'$args': no usage message"
done
[ ! -s "$T/log" ] || fail "bad usage ran bcom"

# --fifo and --health-file.
mkfifo "$T/fifo"
"$HA_NOTIFY" --bcom "$T/bcom" --health-file "$T/health" --fifo /c "$T/fifo" 2>"$T/err" &
READER=$!
exec 4<>"$T/fifo"
wait_for "health file not written" grep -qx 0 "$T/health"
{
	echo 'INSTANCE "ib2roce_md" BACKUP 150'
	echo 'INSTANCE "ib2roce_md" MASTER 150'
	echo 'INSTANCE "other" MASTER 100'
	echo 'GROUP "g" MASTER'
	echo 'INSTANCE "ib2roce_orders" MASTER 100'
	echo 'INSTANCE "ib2roce_orders" BACKUP 100'
	echo 'INSTANCE "ib2roce_risk" MASTER 100'
	echo 'INSTANCE "ib2roce_risk" FAULT 100'
	echo 'INSTANCE "ib2roce_fx" MASTER 100'
} >&4
touch "$T/sick"
wait_for "health file not 1 with bcom health failing" grep -qx 1 "$T/health"
rm "$T/sick"
wait_for "health file not 0 again" grep -qx 0 "$T/health"
wait_for "FIFO lines not applied" grep -q 'role fx active' "$T/log"
# A bridge that does not answer (its control thread stalled): the verdict stays 0 past
# the first unanswered poll (the second one has started), becomes 1 only after
# HEALTH_HANG (5) unanswered polls, and 0 again once it answers. No bridge there (exit
# 3): 1 at once.
nhealth() { grep -c ' health$' "$T/log" || true; }
h0=$(nhealth)
touch "$T/hang"
polled() { [ "$(nhealth)" -ge "$1" ]; }
t_wait_until 30 polled $((h0 + 2)) 2>/dev/null ||
	fail "second poll of a hanging bridge not started"
grep -qx 0 "$T/health" || fail "health file $(cat "$T/health") after one unanswered poll, not 0"
t_wait_until 30 grep -qx 1 "$T/health" 2>/dev/null || fail "health file not 1 after 5 unanswered polls"
[ "$(nhealth)" -ge $((h0 + 5)) ] || fail "health file 1 after fewer than 5 unanswered polls"
rm "$T/hang"
wait_for "health file not 0 after the bridge answered again" grep -qx 0 "$T/health"
touch "$T/gone"
wait_for "health file not 1 with no bridge (exit 3)" grep -qx 1 "$T/health"
rm "$T/gone"
wait_for "health file not 0 after the bridge came back" grep -qx 0 "$T/health"
kill -TERM "$READER"
rc=0
wait "$READER" || rc=$?
READER=""
[ "$rc" = 0 ] || fail "reader: exit $rc after SIGTERM"
exec 4>&-
grep -v ' health$' "$T/log" >"$T/roles"
printf '%s\n' "/c role md standby" "/c role md active" "/c role orders active" \
	"/c role orders standby" "/c role risk active" "/c role risk standby" \
	"/c role fx active" "/c role md standby" "/c role fx standby" >"$T/want"
cmp -s "$T/want" "$T/roles" || fail "FIFO commands $(cat "$T/roles") differ from $(cat "$T/want")"

# --health CONTROL (keepalived's vrrp_script): 0 healthy or no answer (1 s), 1 FAILED or
# no bridge.
for c in ok hang sick gone; do
	[ "$c" = ok ] || touch "$T/$c"
	rc=0
	"$HA_NOTIFY" --bcom "$T/bcom" --health /c 2>"$T/err" || rc=$?
	rm -f "$T/$c"
	want=1
	[ "$c" != ok ] && [ "$c" != hang ] || want=0
	[ "$rc" = "$want" ] || fail "--health with a bridge $c: exit $rc, not $want"
done

# --rt N: the reader runs SCHED_RR N (as root; skipped otherwise); a bad N is a usage
# error.
rc=0
"$HA_NOTIFY" --bcom "$T/bcom" --rt 0 --fifo /c "$T/fifo" 2>"$T/err" || rc=$?
if [ "$rc" != 2 ] || ! grep -q "'0'" "$T/err"; then
	fail "--rt 0: exit $rc, not 2 with a message"
fi
if [ "$(id -u)" = 0 ]; then
	"$HA_NOTIFY" --bcom "$T/bcom" --rt 3 --fifo /c "$T/fifo" 2>"$T/err" &
	READER=$!
	rt_is() { chrt -p "$READER" 2>/dev/null | grep -q 'policy: SCHED_RR' && chrt -p "$READER" | grep -q 'priority: 3$'; }
	wait_for "--rt 3: the reader not SCHED_RR 3: $(chrt -p "$READER" 2>&1)" rt_is
	kill -TERM "$READER"
	wait "$READER" || true
	READER=""
fi

# The poll ends with a reader killed without its trap.
: >"$T/log"
"$HA_NOTIFY" --bcom "$T/bcom" --health-file "$T/health" --fifo /c "$T/fifo" 2>"$T/err" &
READER=$!
wait_for "health poll not running" grep -q ' health$' "$T/log"
kill -KILL "$READER"
wait "$READER" 2>/dev/null || true
READER=""
sleep 0.5
: >"$T/log"
sleep 1
[ ! -s "$T/log" ] || fail "health poll still running after its reader was killed"
echo "ha-notify: PASS"
