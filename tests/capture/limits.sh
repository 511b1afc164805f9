#!/bin/bash
# What bounds a capture (issue 21, D9, D10, D13):
# - capture-dir obeys the rules of the control socket's directory (paths.h): a symbolic
#   link in a place where others may create entries, a directory writable by others, one
#   owned by another user are refused (--capture at start: exit status 1, the directory
#   and the reason named); they were accepted.
# - a capture stopped by a write error (RLIMIT_FSIZE here) says so in capture status and
#   stats --json (capture.stop_reason), and its byte count is what the file holds (it
#   counted bytes never written).
# - the rings are bounded before they are made: without mlock by 1 GiB in all, under
#   mlock without CAP_IPC_LOCK by what RLIMIT_MEMLOCK leaves (refused, naming the limit);
#   and they are freed at the stop (the process's resident memory goes back down).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init capture-limits
g=239.1.2.12

# refused NAME DIR TEXT: a bridge with --capture-dir DIR --capture f must exit 1 naming TEXT.
refused() {
	local name=$1 dir=$2 text=$3 rc=0

	timeout -k 5 30 "$IB2ROCE" --debug --control "$SF_TMP/$name.sock" --idle backoff \
		-e statint=0 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" \
		--capture-dir "$dir" --capture f.pcapng \
		>"$SF_TMP/$name.out" 2>"$SF_TMP/$name.err" </dev/null || rc=$?
	[ "$rc" = 1 ] || br_fail "--capture-dir $dir: exit status $rc, expected 1" "$name"
	grep -qF -- "$text" "$SF_TMP/$name.err" ||
		br_fail "--capture-dir $dir: no message '$text'" "$name"
	[ ! -e "$dir/f.pcapng" ] || br_fail "--capture-dir $dir: the file was created" "$name"
}

# started NAME CMD...: run CMD (a wrapper around the bridge, which gets --debug --control
# NAME.sock from here) like br_bridge, and wait until its console answers.
started() {
	local name=$1

	shift
	BR_BRIDGES="$BR_BRIDGES $name"
	br_start "$name" 120 "$@" --debug --control "$SF_TMP/$name.sock" --idle backoff \
		-e statint=0 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" --capture-dir "$SF_TMP/cap"
	SF_PIDS="$SF_PIDS $(sf_child "$BR_PID")"
	t_wait_until 30 console_up "$name" || br_fail "bridge $name: no console within 30 s" "$name"
}

# console_up NAME: bridge NAME's console answers `status`; fails the test when it does
# not and the bridge exited.
console_up() {
	timeout 5 "$BCOM" --control "$SF_TMP/$1.sock" status >/dev/null 2>&1 && return 0
	kill -0 "$BR_PID" 2>/dev/null || br_fail "bridge $1 exited" "$1"
	return 1
}

# --- D9: the directory rules ---
mkdir -m 0750 "$SF_TMP/real"
mkdir -m 1777 "$SF_TMP/shared"
chmod 1777 "$SF_TMP/shared"
ln -s "$SF_TMP/real" "$SF_TMP/shared/cap"
refused link "$SF_TMP/shared/cap" "capture: capture_dir $SF_TMP/shared/cap: not a directory"
mkdir "$SF_TMP/open"
chmod 0777 "$SF_TMP/open"
refused open "$SF_TMP/open" "capture: capture_dir $SF_TMP/open: writable by others (mode 0777)"
ln -s "$SF_TMP/open" "$SF_TMP/tolink"
refused tolink "$SF_TMP/tolink" "writable by others (mode 0777)"
if [ "$(id -u)" = 0 ]; then
	mkdir -m 0750 "$SF_TMP/theirs"
	chown 65534 "$SF_TMP/theirs"
	refused theirs "$SF_TMP/theirs" "capture: capture_dir $SF_TMP/theirs: owned by uid 65534, not by root or uid 0"
fi
sf_log "D9: capture-dir refused as a symbolic link in a shared place, writable by others, another's"

# --- D13: the bound without mlock (1 GiB) ---
mkdir -m 0750 "$SF_TMP/cap"
br_bridge big 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" --capture-dir "$SF_TMP/cap" \
	--capture-ring 1048576
con_expect_in "$(con_must_exit big 1 capture start big.pcapng)" \
	'capture: rings of [0-9]+ MiB \(capture-ring 1048576 x 1 workers\) exceed the 1024 MiB allowed' \
	"1 GiB bound" big
[ ! -e "$SF_TMP/cap/big.pcapng" ] || br_fail "a refused capture created its file" big
br_stop big

# --- D13: the rings are freed at the stop ---
# Locked (-e mlock) where we may lock (root: CAP_IPC_LOCK), the case of the report; VmRSS
# counts locked pages too.
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
lck() { awk '/^VmLck:/ { print $2 }' "/proc/$1/status"; }
# rss_at_most PID KB: the process's VmRSS is KB kB or less.
rss_at_most() { [ "$(rss "$1")" -le "$2" ]; }
lock=""
[ "$(id -u)" != 0 ] || lock="-e mlock -e buffers=1024 -e rqdepth=64 -e sqdepth=64"
if ldd "$IB2ROCE" | grep -q libasan; then
	sf_log "SKIP the memory check: AddressSanitizer keeps freed memory in quarantine"
else
	# shellcheck disable=SC2086 # the options, split
	br_bridge free 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" \
		--capture-dir "$SF_TMP/cap" --capture-ring 8192 $lock
	pid=$(sf_child "$(br_pid free)")
	before=$(rss "$pid")
	lbefore=$(lck "$pid")
	con_ok free capture start free.pcapng >/dev/null
	con_wait_json free '.capture.active | tostring' true
	during=$(rss "$pid")
	[ "$during" -ge $((before + 30000)) ] ||
		br_fail "VmRSS $before kB before the capture, $during kB during it: 8192 x 4 KiB rings were not made" free
	locked=$(lck "$pid")
	[ -z "$lock" ] || [ "$locked" -ge $((lbefore + 30000)) ] ||
		br_fail "-e mlock: VmLck $lbefore kB before, $locked kB during the capture: the rings are not locked" free
	con_ok free capture stop >/dev/null
	t_wait_until 10 rss_at_most "$pid" $((before + 10000)) ||
		br_fail "VmRSS $before kB before the capture, $during kB during it, $(rss "$pid") kB 10 s after the stop: the rings were kept" free
	[ "$(lck "$pid")" -le $((lbefore + 10000)) ] ||
		br_fail "VmLck $lbefore kB before the capture, $locked kB during it, $(lck "$pid") kB after the stop" free
	# A second capture gets rings again, and stops.
	con_expect_in "$(con_ok free capture start again.pcapng)" \
		'^capture (started|starting: allocating the rings)' "start again" free
	con_wait_json free '.capture.active | tostring' true
	con_ok free capture stop >/dev/null
	# Stopped at once (maybe while its rings are still being made): then nothing runs,
	# and the next capture starts.
	con_ok free capture start third.pcapng >/dev/null
	con_expect_in "$(con_ok free capture stop)" '^capture third.pcapng stopped' "stop at once" free
	con_wait_json free '.capture.starting | tostring' false
	[ "$(con_json free '.capture.active | tostring')" = false ] || br_fail "a stopped capture runs" free
	con_ok free capture start fourth.pcapng >/dev/null
	con_wait_json free '.capture.active | tostring' true
	con_ok free capture stop >/dev/null
	br_stop free
	sf_log "D13: VmRSS $before kB, $during kB with the rings (VmLck $lbefore kB, $locked kB), back down after the stop"
fi

# --- D13: under mlock without CAP_IPC_LOCK, RLIMIT_MEMLOCK bounds the rings ---
if ldd "$IB2ROCE" | grep -q libasan; then
	sf_log "SKIP the RLIMIT_MEMLOCK check: mlockall is a no-op under AddressSanitizer"
elif ! command -v setpriv >/dev/null || ! command -v prlimit >/dev/null; then
	sf_log "SKIP the RLIMIT_MEMLOCK check: no setpriv or prlimit"
elif ! prlimit --memlock=536870912 true 2>/dev/null; then
	sf_log "SKIP the RLIMIT_MEMLOCK check: the hard limit is below 512 MiB here"
else
	started locked prlimit --memlock=536870912 -- setpriv --bounding-set=-ipc_lock \
		--inh-caps=-ipc_lock -- "$IB2ROCE" -e buffers=1024 -e rqdepth=64 \
		-e sqdepth=64 -e mlock --capture-ring 262144
	con_expect_in "$(con_must_exit locked 1 capture start locked.pcapng)" \
		'capture: rings of [0-9]+ MiB \(capture-ring 262144 x 1 workers\) do not fit in what may still be locked: RLIMIT_MEMLOCK 512 MiB, [0-9]+ MiB locked' \
		"RLIMIT_MEMLOCK bound" locked
	br_stop locked
	sf_log "D13: RLIMIT_MEMLOCK bounds the rings under mlock"
fi

# --- D10: a write error is the stop's reason, bytes are what the file holds ---
# RLIMIT_FSIZE 256 KiB on the running bridge (set once it runs: the simulated fabric's
# files grow at start-up), SIGXFSZ ignored from its start: the write fails with EFBIG.
# shellcheck disable=SC2016
started fsize bash -c 'trap "" XFSZ; exec "$@"' fsize "$IB2ROCE"
prlimit --pid "$(sf_child "$(br_pid fsize)")" --fsize=262144 ||
	br_fail "prlimit --fsize on the bridge failed" fsize
con_ok fsize capture start full.pcapng >/dev/null
br_send s "$IB_NET.2" -g "$g" -n 2000 -s 1024 --rate 20000
# capture_stopped NAME: `capture status` of bridge NAME says stopped.
capture_stopped() {
	con_ok "$1" capture status | grep -q '^capture: stopped'
}
t_wait_until 10 capture_stopped fsize || br_fail "the capture did not stop at RLIMIT_FSIZE within 10 s" fsize
con_expect_in "$(con_ok fsize capture status)" \
	"capture: stopped \\(write error: File too large\\) $SF_TMP/cap/full.pcapng" "status" fsize
[ "$(con_json fsize '.capture.stop_reason')" = "write error: File too large" ] ||
	br_fail "stats --json capture.stop_reason: $(con_json fsize '.capture.stop_reason')" fsize
bytes=$(con_json fsize '.capture.bytes')
size=$(stat -c %s "$SF_TMP/cap/full.pcapng")
[ "$bytes" = "$size" ] ||
	br_fail "capture.bytes $bytes, the file holds $size bytes" fsize
[ "$size" -le $((256 * 1024)) ] || br_fail "the file grew past RLIMIT_FSIZE: $size" fsize
br_stop fsize
sf_log "D10: stopped by a write error, said so; bytes $bytes = file size"
sf_log "PASS"
