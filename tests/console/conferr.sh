#!/bin/bash
# Configuration errors: each broken file gives "FILE:LINE: reason" on stderr and exit
# status 2, and nothing starts (no socket, no pid file). --check: a valid file and the
# devices give status 0 and a summary; a device that does not exist gives 1. Under
# NOTIFY_SOCKET an invalid configuration also sets STATUS=.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-conferr
sock=$SF_TMP/bridge.sock

# conf NAME LINE REASON_REGEX < body: write NAME.conf, run the bridge on it, expect
# exit status 2 and "NAME.conf:LINE: REASON" on stderr.
conf() {
	local f=$SF_TMP/$1.conf rc=0

	cat >"$f"
	timeout 20 "$IB2ROCE" --debug --control "$sock" -c "$f" >"$SF_TMP/$1.out" \
		2>"$SF_TMP/$1.err" || rc=$?
	[ "$rc" = 2 ] || sf_fail "$1: exit status $rc, expected 2" "$f" "$SF_TMP/$1.err"
	grep -Eq "^ib2roce: $f:$2: $3" "$SF_TMP/$1.err" ||
		sf_fail "$1: expected '$f:$2: $3'" "$f" "$SF_TMP/$1.err"
	[ "$(wc -l <"$SF_TMP/$1.err")" = 1 ] || sf_fail "$1: more than one line on stderr" "$SF_TMP/$1.err"
	[ ! -e "$sock" ] || sf_fail "$1: a socket was created"
	[ ! -e "$SF_TMP/bridge.pid" ] || sf_fail "$1: a pid file was created"
}

conf unknown 3 "unknown option$" <<'C'
# a comment
device sim_ib0
frobnicate 1
C
conf badgroup 2 "multicast: group '\.\.\.': not an IPv4 address$" <<'C'
roce sim_roce0
multicast 239.1.2.300
C
conf linklocal 2 "multicast: group '\.\.\.': 224\.0\.0\.0/24 is link-local network control \(RFC 5771\), never forwarded$" <<'C'
roce sim_roce0
multicast 224.0.0.5
C
# The same on the command line (which may quote what it was given).
rc=0
timeout 20 "$IB2ROCE" --check -d sim_ib0 -r sim_roce0 -m 224.0.0.1 >"$SF_TMP/ll.out" \
	2>"$SF_TMP/ll.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "-m 224.0.0.1: exit status $rc, expected 2" "$SF_TMP/ll.err"
grep -q "group '224.0.0.1': 224.0.0.0/24 is link-local network control" "$SF_TMP/ll.err" ||
	sf_fail "-m 224.0.0.1: message" "$SF_TMP/ll.err"
# stall=N for a worker that does not exist; a peer that is not a unicast address.
cl_refused() {
	local name=$1 want=$2 rc=0

	shift 2
	timeout 20 "$IB2ROCE" --check -d sim_ib0 -r sim_roce0 -m 239.1.2.3 "$@" \
		>"$SF_TMP/$name.out" 2>"$SF_TMP/$name.err" || rc=$?
	[ "$rc" = 2 ] || sf_fail "$name: exit status $rc, expected 2" "$SF_TMP/$name.err"
	grep -q "$want" "$SF_TMP/$name.err" || sf_fail "$name: expected '$want'" "$SF_TMP/$name.err"
}
cl_refused stall5 "feature 'stall': there is no worker 4 (the bridge has 1 worker)$" -e stall=5
cl_refused stall2 "feature 'stall': there is no worker 1 (the bridge has 1 worker)$" -e stall=2 \
	--workers 1
cl_refused stall0w "feature 'stall': there is no worker 0 (the bridge has 0 workers)$" \
	--workers 0 -e stall=1
cl_refused peer0 "peer: '0.0.0.0' is not a unicast address" --peer 0.0.0.0
cl_refused peermc "peer: '239.1.1.1' is not a unicast address" --peer 239.1.1.1
cl_refused peerbc "peer: '255.255.255.255' is not a unicast address" --peer 255.255.255.255
conf noarg 1 "option 'multicast' requires an argument" <<'C'
multicast
C
conf noarg2 2 "option 'debug' doesn't allow an argument" <<'C'

debug yes
C
conf badfeature 1 "enable: feature 'mcqp': '\.\.\.' is not a number" <<'C'
enable mcqp=abc
C
conf unknownfeature 1 "enable: unknown feature '\.\.\.'" <<'C'
enable nosuch
C
conf range 1 "workers: '\.\.\.' is out of range 0\.\.64" <<'C'
workers 99
C
conf dupgroup 2 "multicast: group '\.\.\.': its IB MGID is already bridged by '\.\.\.'" <<'C'
multicast 239.1.2.3
multicast 239.1.2.3:5000
C
conf checkinfile 1 "check: check is a command-line option" <<'C'
check
C
printf 'device sim_ib0\nroce \001sim\n' | conf ctrl 2 "control character in line"
conf badgroupname 1 "control-group: no group '\.\.\.'" <<'C'
control-group no-such-group-here
C
# A bare mgid lists the formats on a command line; in a file it is an error (it printed
# the list and exited 0: a bridge that never started, its log only the list).
conf baremgid 2 "mgid: a format is required here \(RDMA, IPv4, IPv6, PORT, IB\)$" <<'C'
roce sim_roce0
mgid
multicast 239.1.2.3
C
# An included file: the error names the inner file and line, then where it was included.
printf 'roce sim_roce0\nmgid NOPE\n' >"$SF_TMP/inner.conf"
rc=0
printf '# outer\nconfig %s\n' "$SF_TMP/inner.conf" >"$SF_TMP/outer.conf"
timeout 20 "$IB2ROCE" --debug --control "$sock" -c "$SF_TMP/outer.conf" 2>"$SF_TMP/outer.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "include: exit status $rc" "$SF_TMP/outer.err"
grep -q "inner.conf:2: mgid: unknown MGID format '\.\.\.'.*(included from $SF_TMP/outer.conf:2)" \
	"$SF_TMP/outer.err" || sf_fail "include: message" "$SF_TMP/outer.err"
# A missing file.
rc=0
timeout 20 "$IB2ROCE" --debug --control "$sock" -c "$SF_TMP/none.conf" 2>"$SF_TMP/none.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "missing file: exit status $rc" "$SF_TMP/none.err"
grep -q "none.conf: No such file or directory" "$SF_TMP/none.err" || sf_fail "missing file: message" "$SF_TMP/none.err"

# Errors never quote the file: a line of a file the reader may not be allowed to see.
printf 'root:$6$SECRET:19000:0:99999:7:::\n' >"$SF_TMP/shadow"
chmod 600 "$SF_TMP/shadow"
printf '# outer\nconfig %s\n' "$SF_TMP/shadow" >"$SF_TMP/withshadow.conf"
rc=0
timeout 20 "$IB2ROCE" --check -c "$SF_TMP/withshadow.conf" >"$SF_TMP/shadow.out" \
	2>"$SF_TMP/shadow.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "shadow: exit status $rc, expected 2" "$SF_TMP/shadow.err"
grep -q "^ib2roce: $SF_TMP/shadow:1: unknown option (included from $SF_TMP/withshadow.conf:2)$" \
	"$SF_TMP/shadow.err" || sf_fail "shadow: message" "$SF_TMP/shadow.err"
if grep -q SECRET "$SF_TMP/shadow.err"; then
	sf_fail "shadow: the file's content is quoted" "$SF_TMP/shadow.err"
fi

# Only regular files, read whole: /dev/zero used to eat memory and then pass as valid; a
# FIFO blocked --check (and would block a reload) for ever.
rc=0
timeout 20 "$IB2ROCE" --check -c /dev/zero >"$SF_TMP/zero.out" 2>"$SF_TMP/zero.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "/dev/zero: exit status $rc, expected 2" "$SF_TMP/zero.err"
grep -q "^ib2roce: /dev/zero: not a regular file$" "$SF_TMP/zero.err" ||
	sf_fail "/dev/zero: message" "$SF_TMP/zero.err"
mkfifo "$SF_TMP/fifo.conf"
printf 'roce sim_roce0\nconfig fifo.conf\n' >"$SF_TMP/withfifo.conf"
rc=0
timeout 20 "$IB2ROCE" --check -c "$SF_TMP/withfifo.conf" >"$SF_TMP/fifo.out" 2>"$SF_TMP/fifo.err" ||
	rc=$?
[ "$rc" = 2 ] || sf_fail "fifo: exit status $rc, expected 2" "$SF_TMP/fifo.err"
grep -q "withfifo.conf:2: config: .*: not a regular file$" "$SF_TMP/fifo.err" ||
	sf_fail "fifo: message" "$SF_TMP/fifo.err"
# A line longer than 4096 bytes.
{ printf 'roce sim_roce0\nmulticast 239.1.2.3:'; head -c 5000 /dev/zero | tr '\0' 9; echo; } |
	conf longline 2 "line too long \(max 4096 bytes\)$"

# --check: valid configuration and devices.
cat >"$SF_TMP/good.conf" <<'C'
device sim_ib0
roce sim_roce0
multicast 239.1.2.3
inbound 239.1.2.4:5000
enable statint=5
C
rc=0
timeout 20 "$IB2ROCE" --check -c "$SF_TMP/good.conf" >"$SF_TMP/check.out" 2>"$SF_TMP/check.err" || rc=$?
[ "$rc" = 0 ] || sf_fail "--check good: exit status $rc" "$SF_TMP/check.out" "$SF_TMP/check.err"
grep -q "^configuration valid: IB sim_ib0:1 <-> RoCE sim_roce0:1, 2 groups" "$SF_TMP/check.out" ||
	sf_fail "--check good: no summary" "$SF_TMP/check.out"
# --check: a device that does not exist (after -c: the last -d wins).
rc=0
timeout 20 "$IB2ROCE" --check -c "$SF_TMP/good.conf" -d sim_nosuch >"$SF_TMP/check2.out" \
	2>"$SF_TMP/check2.err" || rc=$?
[ "$rc" = 1 ] || sf_fail "--check bad device: exit status $rc, expected 1" "$SF_TMP/check2.err"
grep -q "IB device sim_nosuch: not found (devices: sim_ib0, .*sim_roce0" "$SF_TMP/check2.err" ||
	sf_fail "--check bad device: message without the devices there are" "$SF_TMP/check2.err"
# The RoCE device named as the IB one: it exists, but is not InfiniBand.
rc=0
timeout 20 "$IB2ROCE" --check -c "$SF_TMP/good.conf" -d sim_roce0 >"$SF_TMP/check3.out" \
	2>"$SF_TMP/check3.err" || rc=$?
[ "$rc" = 1 ] || sf_fail "--check wrong device: exit status $rc, expected 1" "$SF_TMP/check3.err"
grep -q "IB device sim_roce0: not InfiniBand or no port (devices: sim_ib0, .*sim_roce0" \
	"$SF_TMP/check3.err" || sf_fail "--check wrong device: message" "$SF_TMP/check3.err"
# A mistyped feature: the closest name is suggested.
rc=0
timeout 20 "$IB2ROCE" --check -c "$SF_TMP/good.conf" -e bridgeing >"$SF_TMP/check4.out" \
	2>"$SF_TMP/check4.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "--check -e bridgeing: exit status $rc, expected 2" "$SF_TMP/check4.err"
grep -q "unknown feature 'bridgeing': did you mean bridging?" "$SF_TMP/check4.err" ||
	sf_fail "-e bridgeing: no suggestion" "$SF_TMP/check4.err"
# Under systemd (NOTIFY_SOCKET): an invalid configuration also says so in STATUS=, what
# `systemctl status` shows (the unit's RestartPreventExitStatus=2 keeps it down).
: "${NOTIFYLISTEN:?NOTIFYLISTEN must name the notifylisten tool}"
"$NOTIFYLISTEN" "$SF_TMP/n.sock" 30 >"$SF_TMP/n.out" 2>&1 &
nl_pid=$!
SF_PIDS="${SF_PIDS:-} $nl_pid"
t_wait_until 5 test -S "$SF_TMP/n.sock" || sf_fail "notifylisten did not bind" "$SF_TMP/n.out"
printf 'device sim_ib0\nroce sim_roce0\nfrobnicate\n' >"$SF_TMP/sd.conf"
rc=0
NOTIFY_SOCKET=$SF_TMP/n.sock timeout 20 "$IB2ROCE" --control "$sock" -c "$SF_TMP/sd.conf" \
	>"$SF_TMP/sd.out" 2>"$SF_TMP/sd.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "under NOTIFY_SOCKET: exit status $rc, expected 2" "$SF_TMP/sd.err"
grep -qF "$SF_TMP/sd.conf:3: unknown option" "$SF_TMP/sd.err" ||
	sf_fail "under NOTIFY_SOCKET: no message on stderr (the journal)" "$SF_TMP/sd.err"
# A plan the machine cannot honour is an invalid configuration too.
rc=0
NOTIFY_SOCKET=$SF_TMP/n.sock timeout 20 "$IB2ROCE" --control "$sock" -d sim_ib0 -r sim_roce0 \
	--workers 2 --cpus 1,1 -m 239.1.2.3 >"$SF_TMP/sd2.out" 2>"$SF_TMP/sd2.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "--cpus 1,1 under NOTIFY_SOCKET: exit status $rc, expected 2" "$SF_TMP/sd2.err"
# two_invalid: the listener got two STATUS=configuration invalid lines.
two_invalid() {
	[ "$(grep -c 'STATUS=configuration invalid' "$SF_TMP/n.out")" -ge 2 ]
}
t_wait_until 5 two_invalid || sf_fail "no two STATUS=configuration invalid lines" "$SF_TMP/n.out"
grep -qF "STATUS=configuration invalid (exit status 2, not restarted): $SF_TMP/sd.conf:3: unknown option" \
	"$SF_TMP/n.out" || sf_fail "STATUS= does not name the file and line" "$SF_TMP/n.out"
grep -qF "STATUS=configuration invalid (exit status 2, not restarted): --cpus: workers 0 and 1 on CPU 1" \
	"$SF_TMP/n.out" || sf_fail "STATUS= does not name the placement error" "$SF_TMP/n.out"
kill "$nl_pid" 2>/dev/null || true
wait "$nl_pid" 2>/dev/null || true
# --version: one line, the version and the git description.
"$IB2ROCE" --version >"$SF_TMP/version.out" || sf_fail "--version failed" "$SF_TMP/version.out"
grep -Eq '^ib2roce [0-9]+\.[0-9]+\.[0-9]+ \(git [^,]+, built .+\)$' "$SF_TMP/version.out" ||
	sf_fail "--version: unexpected output" "$SF_TMP/version.out"
sf_log "PASS"
