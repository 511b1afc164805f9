#!/bin/bash
# Every console command over the socket with bcom, on a bridge in the foreground
# (--debug): the tables, the JSON report and the metrics file (Prometheus text, written
# every statint, ib2roce_up 0 at exit) against the traffic that was sent, zap, ppsdisplay,
# runtime features, errors (unknown with a suggestion, ambiguous, bad arguments: exit
# status 1), hostile input on the raw socket (binary, overlong, a stuck client), quit (stops
# nothing) and shutdown.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-cmds
g=239.1.2.3
n=200

prom=$SF_TMP/ib2roce.prom
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 --metrics-file "$prom" -e statint=1 \
	-m "$g"
sock=$SF_TMP/bridge.sock
[ "$(stat -c %a "$sock")" = 660 ] || br_fail "socket mode $(stat -c %a "$sock"), expected 660" bridge

br_listen rx "$ROCE_NET.2" -g "$g" -n "$n" --verify --imm --timeout 20
br_send tx "$IB_NET.2" -g "$g" -n "$n" --imm --rate 20000
br_expect_listener rx "$n" 1
con_wait_json bridge '.sides[0].fwd_pkts' "$n"

# JSON: parses, stable names, counters equal to the traffic.
[ "$(con_json bridge '.program')" = ib2roce ] || br_fail "json program" bridge
[ "$(con_json bridge '.sides[0].side + " " + .sides[0].device')" = "IB sim_ib0" ] ||
	br_fail "json side 0" bridge
[ "$(con_json bridge '.sides[0].rx_pkts')" = "$n" ] || br_fail "json IB rx_pkts" bridge
[ "$(con_json bridge '.sides[1].tx_pkts')" = "$n" ] || br_fail "json RoCE tx_pkts" bridge
[ "$(con_json bridge '.groups[0].group')" = "$g" ] || br_fail "json group" bridge
[ "$(con_json bridge '.groups[0].ib_to_roce_pkts')" = "$n" ] || br_fail "json group pkts" bridge
[ "$(con_json bridge '.groups[0].ib.state + " " + .groups[0].roce.state')" = "joined joined" ] ||
	br_fail "json join states" bridge
[ "$(con_json bridge '.ready')" = true ] || br_fail "json ready" bridge
[ "$(con_json bridge '.senders')" = 1 ] || br_fail "json senders" bridge
[ "$(con_json bridge '.workers | length')" = 1 ] || br_fail "json workers" bridge
[ "$(con_json bridge '.sides[0].drop_reasons | length')" -ge 18 ] || br_fail "json drop_reasons" bridge

# The metrics file catches up within a stats interval (1 s here).
t_wait_until 5 grep -sq "^ib2roce_forwarded_packets_total{side=\"IB\",device=\"sim_ib0\"} $n\$" "$prom" ||
	br_fail "metrics file without $n forwarded packets: $(cat "$prom" 2>&1 | head -20)" bridge
grep -q '^# TYPE ib2roce_forwarded_packets_total counter$' "$prom" || br_fail "metrics: no TYPE line" bridge
grep -q "^ib2roce_group_forwarded_packets_total{group=\"$g\",direction=\"ib_to_roce\"} $n\$" "$prom" ||
	br_fail "metrics: group counter" bridge
grep -q '^ib2roce_up 1$' "$prom" || br_fail "metrics: ib2roce_up" bridge
[ -z "$(find "$SF_TMP" -maxdepth 1 -name '.ib2roce.prom.tmp*')" ] || br_fail "metrics: temp file left" bridge

# ppsdisplay: a rate line every second while on.
con_ok bridge enable ppsdisplay >/dev/null
sf_wait_line "$SF_TMP/bridge.err" 'notice: IB rx [0-9]* pps fwd [0-9]* pps' "$(br_pid bridge)" 5
con_ok bridge disable ppsdisplay >/dev/null

# The tables.
out=$(con_ok bridge help)
for c in buffers channels enable disable events health interfaces join leave multicast quit \
	reload senders shutdown stats status tsi workers zap; do
	con_expect_in "$out" "^$c( |$)" "help lists $c"
done
# A syntax longer than the help's column is shown whole (it was cut at 63 characters).
grep -qxF 'capture start FILE [group G] [side ib|roce|both] [count N] [snaplen N] | stop | status' \
	<<<"$out" || br_fail "help does not show the capture syntax whole: $out" bridge
out=$(con_ok bridge status)
con_expect_in "$out" "sim_ib0" "status names the IB device"
con_expect_in "$out" "\b$n\b" "status shows $n packets"
out=$(con_ok bridge mult)
con_expect_in "$out" "$g .*joined" "multicast (prefix 'mult') shows the group joined"
out=$(con_ok bridge channels)
con_expect_in "$out" "IB" "channels"
out=$(con_ok bridge interfaces)
con_expect_in "$out" "sim_roce0" "interfaces shows sim_roce0"
con_expect_in "$out" "fe80:|::ffff:" "interfaces shows a GID table"
out=$(con_ok bridge interfaces sim_roce0)
printf '%s\n' "$out" | grep -q sim_ib0 && br_fail "interfaces sim_roce0 also showed sim_ib0" bridge
out=$(con_must_exit bridge 1 interfaces nosuch)
con_expect_in "$out" "no interface 'nosuch'" "interfaces nosuch"
out=$(con_ok bridge buffers)
con_expect_in "$out" "free" "buffers"
# The default pool (65 536) leaves the SRQs at their depth room for caches of 2048.
con_expect_in "$out" "^worker caches \(each spills beyond 2048 buffers\):$" "buffers: cache size"
out=$(con_ok bridge senders)
con_expect_in "$out" "$IB_NET.2|::ffff:|fe80" "senders lists the sender"
out=$(con_ok bridge endpoints 5)
out=$(con_must_exit bridge 1 senders many)
out=$(con_ok bridge workers)
con_expect_in "$out" "p50|p99" "workers shows latency percentiles"
out=$(con_ok bridge cores)
out=$(con_ok bridge events)
con_expect_in "$out" "stats|rates" "events lists the timers"
con_ok bridge tsi >/dev/null
out=$(con_ok bridge stats)
con_expect_in "$out" "^IB sim_ib0 rx_pkts=$n " "stats (final-counters format)"
con_expect_in "$out" "^ib2roce: counters after [0-9]+ s \(running\)$" "stats header on a running bridge"
printf '%s\n' "$out" | grep -q 'final counters' && br_fail "stats on a running bridge says final counters" bridge
out=$(con_ok bridge status)
con_expect_in "$out" "^ib2roce [0-9.]+ \(git .*, built .*\)$" "status shows the version and build"
con_expect_in "$out" "^health ok$" "status shows the health"
# bcom without a command and stdin not a terminal: one command per line, one connection.
out=$(printf 'status\n# a comment\n\nmulticast\n' | timeout 20 "$BCOM" --control "$sock") ||
	br_fail "bcom batch mode failed: $out" bridge
con_expect_in "$out" "sim_ib0" "batch: status"
con_expect_in "$out" "$g .*joined" "batch: multicast"
rc=0
printf 'status\nfrobnicate\n' | timeout 20 "$BCOM" --control "$sock" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || br_fail "bcom batch with a failed command: exit $rc, expected 1" bridge

# zap: the tables start again from zero; the JSON report does not.
con_ok bridge zap >/dev/null
out=$(con_ok bridge multicast)
printf '%s\n' "$out" | grep -q "\b$n\b" && br_fail "multicast still shows $n after zap: $out" bridge
[ "$(con_json bridge '.sides[0].rx_pkts')" = "$n" ] || br_fail "zap changed the JSON counters" bridge

# Runtime features.
out=$(con_ok bridge enable)
con_expect_in "$out" "bridging" "enable without a name lists the features"
con_ok bridge disable bridging >/dev/null
br_send tx2 "$IB_NET.2" -g "$g" -n 50 --rate 20000
con_wait_json bridge '.sides[0].drop_reasons.bridging_off' 50
con_ok bridge enable bridging >/dev/null
out=$(con_must_exit bridge 1 enable nosuchfeature)
con_expect_in "$out" "unknown feature" "enable nosuchfeature"
out=$(con_must_exit bridge 1 enable statnit=2)
con_expect_in "$out" "unknown feature 'statnit': did you mean statint\?" "enable statnit: a suggestion"
out=$(con_must_exit bridge 1 enable buffers=2048)
con_expect_in "$out" "needs a restart" "enable buffers while running"
# stall=N freezes worker N-1: only a worker that exists (this bridge has one).
out=$(con_must_exit bridge 1 enable stall=5)
con_expect_in "$out" "feature 'stall': there is no worker 4 .the bridge has 1 worker." "enable stall=5"
out=$(con_must_exit bridge 1 enable stall=2)
con_expect_in "$out" "there is no worker 1" "enable stall=2"
con_expect_in "$(con_ok bridge enable)" "stall +0" "a refused stall changed nothing"
con_ok bridge enable statint=5 >/dev/null
con_expect_in "$(con_ok bridge enable)" "statint +5" "statint is 5 now"

# Errors: exit status 1, a message, the bridge unchanged.
out=$(con_must_exit bridge 1 frobnicate)
con_expect_in "$out" "unknown command 'frobnicate'" "unknown command"
out=$(con_must_exit bridge 1 mutlicast)
con_expect_in "$out" "unknown command 'mutlicast': did you mean multicast\?" "a mistyped command: a suggestion"
out=$(con_must_exit bridge 1 e)
con_expect_in "$out" "ambiguous command 'e'" "ambiguous prefix"
out=$(con_must_exit bridge 1 status extra)
con_expect_in "$out" "unexpected argument" "status with an argument"
out=$(con_must_exit bridge 1 stats --xml)

# Hostile input on the raw socket: binary, an overlong line, then a client that sends
# half a line and stalls: each gets an error or is dropped, others are served meanwhile.
python3 - "$sock" >"$SF_TMP/raw.out" 2>&1 <<'PY' || br_fail "raw socket checks: $(cat "$SF_TMP/raw.out")" bridge
import socket, sys, time
path = sys.argv[1]

pending = {}

def reply(s):
    """One reply: the text up to NUL, status byte, newline (replies may arrive together)."""
    buf = pending.get(s, b"")
    while True:
        i = buf.find(b"\0")
        if i >= 0 and len(buf) >= i + 3:
            pending[s] = buf[i + 3:]
            assert buf[i + 2:i + 3] == b"\n", buf
            return buf[:i].decode(errors="replace"), buf[i + 1:i + 2]
        d = s.recv(65536)
        if not d:
            raise SystemExit("connection closed early: %r" % buf)
        buf += d

s = socket.socket(socket.AF_UNIX); s.connect(path)
s.sendall(b"sta\x01\x02tus\n")
body, st = reply(s)
assert st == b"1" and "control characters" in body, (body, st)
s.sendall(b"x" * 5000 + b"\n")
body, st = reply(s)
assert st == b"1" and "too long" in body, (body, st)
s.sendall(b"help\nstatus\n")            # pipelined: two replies, in order
b1, st1 = reply(s)
assert st1 == b"0" and "multicast" in b1, b1
b2, st2 = reply(s)
assert st2 == b"0" and "sim_ib0" in b2, b2
stuck = socket.socket(socket.AF_UNIX); stuck.connect(path)
stuck.sendall(b"stat")                   # never finished
s.sendall(b"status\n")
b3, st3 = reply(s)
assert st3 == b"0", b3
stuck.settimeout(15)
data = stuck.recv(4096)                  # dropped after the line timeout
assert b"not finished" in data, data
print("raw ok")
PY
grep -q 'raw ok' "$SF_TMP/raw.out" || br_fail "raw socket checks" bridge

# quit on the raw socket stops nothing: it says so and closes the connection.
python3 - "$sock" >"$SF_TMP/rawquit.out" 2>&1 <<'PY' || br_fail "raw quit: $(cat "$SF_TMP/rawquit.out")" bridge
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"q\n")
data = b""
while True:
    d = s.recv(4096)
    if not d:
        break
    data += d
assert b"bridge keeps running" in data and data.endswith(b"\x000\n"), data
PY
br_alive bridge
# shutdown is never reached by a prefix; spelled out (with -y, as a script would) it
# stops the bridge gracefully (status 0, final counters, the metrics file says up 0).
out=$(con_must_exit bridge 1 shutdow)
con_expect_in "$out" "did you mean shutdown" "shutdow is not shutdown"
br_alive bridge
out=$(con_ok bridge -y shutdown)
con_expect_in "$out" "stopping" "shutdown"
sf_wait_exit "$(br_pid bridge)"
[ "$SF_RC" = 0 ] || br_fail "bridge exited $SF_RC after shutdown" bridge
grep -q '^ib2roce: final counters$' "$SF_TMP/bridge.out" || br_fail "no final counters after shutdown" bridge
[ ! -e "$sock" ] || br_fail "socket left behind after shutdown" bridge
grep -q '^ib2roce_up 0$' "$prom" || br_fail "metrics file without ib2roce_up 0 after shutdown" bridge
br_conservation bridge sim_ib0 sim_roce0
con_must_exit bridge 3 status >/dev/null
sf_log "PASS"
