#!/bin/bash
# --metrics-port on another address with an allow-list (docs/metrics.md, "HTTP"): the
# bridge listens on --metrics-address (127.0.0.3 here: any loopback address is local, so
# the test needs no network), serves a client in --metrics-allow (source 127.0.0.2),
# closes one that is not (source 127.0.0.1) unanswered and counts it in
# ib2roce_metrics_refused_total, logged once. Requests other than GET /metrics get 404 or
# 405. A non-loopback address without an allow-list, a bad address and a bad allow-list
# item are refused at start with a one-line message naming the item.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-metricsallow
g=239.1.2.15
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.3", 0)); print(s.getsockname()[1])')

# Bad input: each a clear message, exit 1, before anything runs.
check_bad() {
	local want=$1 out rc=0

	shift
	out=$(timeout -k 5 30 "$IB2ROCE" --check -d sim_ib0 -r sim_roce0 -m "$g" \
		--control "$SF_TMP/bad.sock" "$@" 2>&1) || rc=$?
	[ "$rc" != 0 ] || sf_fail "ib2roce $* accepted"
	printf '%s\n' "$out" | grep -qF -- "$want" || sf_fail "ib2roce $*: no '$want' in: $out"
}
check_bad "metrics allow-list item '10.0.0.300'" --metrics-port 1 --metrics-allow 10.0.0.1,10.0.0.300
check_bad "metrics allow-list item '10.0.0.0/33'" --metrics-port 1 --metrics-allow 10.0.0.0/33
check_bad "metrics address 'nowhere'" --metrics-port 1 --metrics-address nowhere

# A non-loopback address needs an allow-list: the bridge does not start.
br_start nolist 30 "$IB2ROCE" --debug --control "$SF_TMP/nolist.sock" -d sim_ib0 -r sim_roce0 \
	-m "$g" --metrics-port "$mport" --metrics-address 0.0.0.0
rc=0
wait "$(br_pid nolist)" || rc=$?
[ "$rc" = 1 ] || sf_fail "a bridge on 0.0.0.0 without --metrics-allow: exit $rc" "$SF_TMP/nolist.err"
grep -q "metrics address 0.0.0.0 is not a loopback address: give --metrics-allow" "$SF_TMP/nolist.err" ||
	sf_fail "no message for 0.0.0.0 without an allow-list" "$SF_TMP/nolist.err"

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 --metrics-port "$mport" \
	--metrics-address 127.0.0.3 --metrics-allow 10.9.0.0/16,127.0.0.2 -m "$g"
con_wait_json bridge '.ready | tostring' true

python3 - "$mport" >"$SF_TMP/http.out" 2>&1 <<'PY' || br_fail "HTTP: $(cat "$SF_TMP/http.out")" bridge
import socket, sys
port = int(sys.argv[1])

def ask(src, req):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(10)
    s.connect(("127.0.0.3", port))
    s.sendall(req)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except ConnectionResetError:
        pass
    s.close()
    return out

r = ask("127.0.0.2", b"GET /metrics HTTP/1.0\r\n\r\n")
assert r.startswith(b"HTTP/1.0 200 OK"), r[:200]
assert b"\nib2roce_up 1\n" in r, "no ib2roce_up 1"
assert b"\nib2roce_metrics_refused_total 0\n" in r, "refused not 0 at first"
for src in ("127.0.0.1", "127.0.0.1"):
    r = ask(src, b"GET /metrics HTTP/1.0\r\n\r\n")
    assert r == b"", ("a client outside the allow-list got", r[:200])
r = ask("127.0.0.2", b"POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
assert r.startswith(b"HTTP/1.0 405"), r[:200]
r = ask("127.0.0.2", b"GET /other HTTP/1.0\r\n\r\n")
assert r.startswith(b"HTTP/1.0 404"), r[:200]
r = ask("127.0.0.2", b"GET /metrics HTTP/1.0\r\n\r\n")
assert b"\nib2roce_metrics_refused_total 2\n" in r, "refused not counted"
# Nothing on the loopback address the bridge does not listen on.
try:
    socket.create_connection(("127.0.0.1", port), timeout=5)
    raise SystemExit("127.0.0.1 answers: the bridge listens on every address")
except ConnectionRefusedError:
    pass
print("ok")
PY
[ "$(grep -c 'metrics: refused a connection from 127.0.0.1 (not in the allow-list)' "$SF_TMP/bridge.err")" = 1 ] ||
	br_fail "the refusal is not logged exactly once" bridge
grep -q 'metrics on http://127.0.0.3:[0-9]*/metrics (clients in the allow-list)' "$SF_TMP/bridge.err" ||
	br_fail "no 'metrics on' line with the address" bridge
br_stop bridge
sf_log "PASS"
