#!/bin/bash
# Slow and idle console clients cannot lock others out, and cannot flood the log.
# - 16 clients connected (the limit): a 17th is admitted, and the least recently active
#   one is told why and disconnected.
# - A client without a command for console_idle seconds (-e console_idle=2 here; 300 by
#   default) is told and disconnected.
# - 300 connections in a row, each evicting another: the log holds at most 10 of those
#   warnings per 10 s window and one line that counts the rest.
# - As root (setpriv): 200 refused connections of a user outside the group are
#   rate-limited the same way.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-clients
chmod 0711 "$SF_TMP"
sock=$SF_TMP/bridge.sock
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e statint=0 -e console_idle=2 \
	-m 239.1.2.3

python3 - "$sock" >"$SF_TMP/raw.out" 2>&1 <<'PY' || br_fail "clients: $(cat "$SF_TMP/raw.out")" bridge
import socket, sys, time
path = sys.argv[1]

def command(s, line):
    """Send a command, return (text, status byte)."""
    s.sendall(line.encode() + b"\n")
    buf = b""
    while True:
        i = buf.find(b"\0")
        if i >= 0 and len(buf) >= i + 3:
            return buf[:i].decode(errors="replace"), buf[i + 1:i + 2]
        d = s.recv(65536)
        if not d:
            raise SystemExit("connection closed early: %r" % buf)
        buf += d

def closed_with(s, words):
    """The bridge closes s, after a message holding words."""
    s.settimeout(30)
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    assert words.encode() in buf, buf

def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s

# 16 clients, each active once, the first one longest ago.
cl = []
for i in range(16):
    s = connect()
    assert command(s, "help")[1] == b"0"
    cl.append(s)
# A 17th gets in; the least recently active (the first) is told and closed.
new = connect()
text, st = command(new, "status")
assert st == b"0" and "sim_ib0" in text, (text, st)
closed_with(cl[0], "console full: disconnected to admit a new client")
print("eviction ok")

# Idle: the others send nothing more and are closed after console_idle.
for s in cl[1:] + [new]:
    closed_with(s, "no command for too long: disconnected")
print("idle ok")

# 300 connections in a row: each one evicts another.
keep = [connect() for _ in range(16)]
for i in range(300):
    keep.append(connect())
    keep.pop(0).close()
    time.sleep(0.001)
print("flood ok")
PY
grep -q 'flood ok' "$SF_TMP/raw.out" || br_fail "clients: $(cat "$SF_TMP/raw.out")" bridge

# At most 10 client warnings per window, then one line with the count of the rest.
sf_wait_line "$SF_TMP/bridge.err" "more client warnings in 10 s not logged" "$(br_pid bridge)" 30
n=$(grep -c "console: .*disconnected" "$SF_TMP/bridge.err")
[ "$n" -le 40 ] || br_fail "$n client warnings in the log for 300 connections" bridge

# Refusals of a user outside the group (root only: setpriv), through the same limit.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 0666 "$sock"
	before=$(grep -c "console: refused pid" "$SF_TMP/bridge.err" || true)
	# perl, not python3: the test's python may live where uid 65534 cannot reach it.
	timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups -- perl -MIO::Socket::UNIX -e '
		for (1 .. 200) {
			my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!";
			my $d = "";
			$s->recv($d, 4096);
			$d =~ /permission denied/ or die "no refusal: $d";
		}
		print "refused ok\n";' "$sock" >"$SF_TMP/refused.out" 2>&1 ||
		br_fail "refused: $(cat "$SF_TMP/refused.out")" bridge
	sf_wait_line "$SF_TMP/bridge.err" "console: 1[0-9][0-9] more client warnings in 10 s not logged" \
		"$(br_pid bridge)" 30
	n=$(($(grep -c "console: refused pid" "$SF_TMP/bridge.err") - before))
	[ "$n" -le 20 ] || br_fail "$n refusal lines in the log for 200 connections" bridge
fi
con_ok bridge status >/dev/null
br_stop bridge
sf_log "PASS"
