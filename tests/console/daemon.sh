#!/bin/bash
# Daemon mode (neither --debug nor systemd): the command returns once the bridge runs
# in the background, the pid file names the daemon and is locked (a second instance
# refuses to start, saying which pid runs), the console works, traffic is forwarded,
# shutdown stops the daemon and removes its socket and pid file. A daemon that cannot start
# reports the error and its exit status through the command that started it.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-daemon
g=239.1.2.3
n=200
sock=$SF_TMP/bridge.sock
pidf=$SF_TMP/bridge.pid

rc=0
timeout 30 "$IB2ROCE" --control "$sock" -d sim_ib0 -r sim_roce0 --idle backoff -m "$g" \
	>"$SF_TMP/start.out" 2>"$SF_TMP/start.err" || rc=$?
[ "$rc" = 0 ] || sf_fail "daemon start: exit status $rc" "$SF_TMP/start.out" "$SF_TMP/start.err"
[ -s "$pidf" ] || sf_fail "no pid file $pidf"
dpid=$(cat "$pidf")
SF_PIDS="$SF_PIDS $dpid"
kill -0 "$dpid" 2>/dev/null || sf_fail "daemon $dpid from the pid file is not running"
[ "$(ps -o ppid= -p "$dpid" | tr -d ' ')" != "$$" ] || sf_fail "the daemon is still our child"
sid=$(ps -o sid= -p "$dpid" | tr -d ' ')
[ "$sid" != "$dpid" ] || sf_fail "the daemon is a session leader (no second fork)"
[ "$(readlink "/proc/$dpid/cwd")" = / ] || sf_fail "the daemon did not chdir to /"

con_wait_json bridge '.groups[0].ib.state + .groups[0].roce.state' joinedjoined 20
con_wait_json bridge '.healthy | tostring' true
out=$(con_ok bridge status)
con_expect_in "$out" "sim_roce0" "status from the daemon"
# Every command answers the same way from the daemon.
for c in help multicast channels interfaces buffers senders endpoints tsi events workers \
	cores enable stats zap; do
	con_ok bridge "$c" >/dev/null
done
con_must_exit bridge 1 frobnicate >/dev/null

br_listen rx "$ROCE_NET.2" -g "$g" -n "$n" --verify --timeout 20
br_send tx "$IB_NET.2" -g "$g" -n "$n" --rate 20000
br_expect_listener rx "$n" 1
[ "$(con_json bridge '.sides[0].fwd_pkts')" = "$n" ] || br_fail "daemon fwd_pkts" bridge

# A second instance with the same control path: refused by the pid file lock.
rc=0
timeout 30 "$IB2ROCE" --control "$sock" -d sim_ib0 -r sim_roce0 -m 239.1.2.4 \
	>"$SF_TMP/second.out" 2>"$SF_TMP/second.err" || rc=$?
[ "$rc" = 1 ] || sf_fail "second instance: exit status $rc, expected 1" "$SF_TMP/second.err"
grep -q "another ib2roce (pid $dpid) is running ($pidf)" "$SF_TMP/second.err" ||
	sf_fail "second instance: no clear refusal" "$SF_TMP/second.err"
kill -0 "$dpid" || sf_fail "the daemon died when a second instance tried"
# The same in the foreground with only the socket path shared: refused by the socket.
rc=0
timeout 30 "$IB2ROCE" --debug --control "$sock" --pidfile "$SF_TMP/other.pid" -d sim_ib0 \
	-r sim_roce0 -m 239.1.2.4 >"$SF_TMP/third.out" 2>"$SF_TMP/third.err" || rc=$?
[ "$rc" = 1 ] || sf_fail "third instance: exit status $rc, expected 1" "$SF_TMP/third.err"
grep -q "another bridge is listening on $sock" "$SF_TMP/third.err" ||
	sf_fail "third instance: no clear refusal" "$SF_TMP/third.err"
con_ok bridge status >/dev/null

# shutdown: the daemon leaves, cleans up.
con_ok bridge shutdown >/dev/null
t_wait_until 10 t_pid_gone "$dpid" || sf_fail "daemon still running 10 s after shutdown"
[ ! -e "$pidf" ] || sf_fail "pid file left behind"
[ ! -e "$sock" ] || sf_fail "socket left behind"
con_must_exit bridge 3 status >/dev/null

# Relative paths name files in the directory the daemon was started from, though it works
# in /: the socket, pid file and metrics file land there, the HA peer is looked for there, bcom finds the bridge from there,
# a reload (which reads the command line again) needs no restart, a second start from
# there is refused by the pid file, and shutdown removes both files.
rel=$SF_TMP/rel
mkdir "$rel"
rc=0
(cd "$rel" && timeout 30 "$IB2ROCE" --control r.sock --metrics-file m.prom -e statint=1 \
	--ha-peer-control peer.sock -d sim_ib0 -r sim_roce0 --idle backoff -m "$g") >"$SF_TMP/rel.out" 2>"$SF_TMP/rel.err" ||
	rc=$?
[ "$rc" = 0 ] || sf_fail "relative paths: exit status $rc" "$SF_TMP/rel.out" "$SF_TMP/rel.err"
if [ ! -S "$rel/r.sock" ]; then
	# The defect this checks: the daemon bound /r.sock after its chdir("/"); stop it.
	[ -S /r.sock ] && timeout 10 "$BCOM" --control /r.sock shutdown >/dev/null 2>&1
	sf_fail "relative --control r.sock: no socket in the start directory"
fi
[ -s "$rel/r.pid" ] || sf_fail "relative --control r.sock: no pid file $rel/r.pid"
rpid=$(cat "$rel/r.pid")
SF_PIDS="$SF_PIDS $rpid"
relbc() { (cd "$rel" && timeout -k 2 20 "$BCOM" --control r.sock "$@"); }
relbc status >"$SF_TMP/rel.status" 2>&1 ||
	sf_fail "bcom --control r.sock from the start directory" "$SF_TMP/rel.status"
grep -q "sim_roce0" "$SF_TMP/rel.status" || sf_fail "relative: status" "$SF_TMP/rel.status"
relbc config >"$SF_TMP/rel.config" || sf_fail "relative: config" "$SF_TMP/rel.config"
grep -qx "control $rel/r.sock" "$SF_TMP/rel.config" ||
	sf_fail "relative: bcom config does not name the absolute socket path" "$SF_TMP/rel.config"
relbc ha >"$SF_TMP/rel.ha" || sf_fail "relative: ha" "$SF_TMP/rel.ha"
grep -qx "peer_control $rel/peer.sock" "$SF_TMP/rel.ha" ||
	sf_fail "relative --ha-peer-control peer.sock: not the start directory's" "$SF_TMP/rel.ha"
rc=0
relbc reload >"$SF_TMP/rel.reload" 2>&1 || rc=$?
[ "$rc" = 0 ] || sf_fail "relative: a reload that changes nothing: exit $rc" "$SF_TMP/rel.reload"
grep -q "0 groups added, 0 removed" "$SF_TMP/rel.reload" ||
	sf_fail "relative: a reload that changes nothing did not say so" "$SF_TMP/rel.reload"
t_wait_until 10 test -s "$rel/m.prom" || sf_fail "relative --metrics-file m.prom: not written"
rc=0
(cd "$rel" && timeout 30 "$IB2ROCE" --control r.sock -d sim_ib0 -r sim_roce0 -m 239.1.2.4) \
	>"$SF_TMP/rel2.out" 2>"$SF_TMP/rel2.err" || rc=$?
[ "$rc" = 1 ] || sf_fail "relative, second instance: exit status $rc, expected 1" "$SF_TMP/rel2.err"
grep -q "another ib2roce (pid $rpid) is running ($rel/r.pid)" "$SF_TMP/rel2.err" ||
	sf_fail "relative, second instance: no clear refusal" "$SF_TMP/rel2.err"
relbc shutdown >/dev/null || sf_fail "relative: shutdown"
t_wait_until 10 t_pid_gone "$rpid" || sf_fail "relative: daemon still running after shutdown"
[ ! -e "$rel/r.pid" ] || sf_fail "relative: pid file left behind"
[ ! -e "$rel/r.sock" ] || sf_fail "relative: socket left behind"

# Start-up failure in the background: the error and status reach the caller.
rc=0
timeout 30 "$IB2ROCE" --control "$sock" -d sim_nosuch -r sim_roce0 -m "$g" \
	>"$SF_TMP/bad.out" 2>"$SF_TMP/bad.err" || rc=$?
[ "$rc" = 1 ] || sf_fail "bad device: exit status $rc, expected 1" "$SF_TMP/bad.err"
grep -q "sim_nosuch" "$SF_TMP/bad.err" || sf_fail "bad device: error not shown" "$SF_TMP/bad.err"
[ ! -e "$pidf" ] || sf_fail "pid file left behind by a failed start"
sf_log "PASS"
