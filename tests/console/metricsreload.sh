#!/bin/bash
# A scrape during a reload or a shutdown answers or closes cleanly (issue 24, "Bad
# input"): a client scrapes --metrics-port in a loop, as fast as it is answered, while
# `bcom reload` runs 40 times (the configuration alternating between one group and two,
# so that each reload joins or leaves a group), then while `bcom shutdown` stops the
# bridge. Every connection must end as one of:
#   - a complete exposition: HTTP 200, exactly Content-Length bytes of body, the body
#     ends with a newline after the last sample and every line parses (a comment or
#     `name{labels} value`), counted "ok";
#   - closed before any byte of an answer (the bridge closing its listener and its
#     connections at shutdown), or refused once the bridge is gone, counted "closed";
# anything else (a truncated body, a wrong status, a line that does not parse) is
# "bad" and fails the test. The bridge exits 0 with its final counters; the reloads are
# counted ok in stats --json and in ib2roce_reloads_total; a body scraped during the
# reloads passes `promtool check metrics` (when installed).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-metricsreload
g1=239.1.2.15
g2=239.1.2.16
conf=$SF_TMP/bridge.conf
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
one() { printf 'device sim_ib0\nroce sim_roce0\nmulticast %s\n' "$g1" >"$conf"; }
two() { printf 'device sim_ib0\nroce sim_roce0\nmulticast %s\nmulticast %s\n' "$g1" "$g2" >"$conf"; }
one

br_bridge bridge 1 --workers 1 -c "$conf" --metrics-port "$mport"
con_wait_json bridge '.ready | tostring' true

# The scraper: until $SF_TMP/stop exists; a summary line "ok=N closed=N bad=N" at the
# end, the first bad answers in scraper.bad, a body from the middle in sample.prom.
python3 - "$mport" "$SF_TMP/stop" "$SF_TMP/scraper.bad" "$SF_TMP/sample.prom" \
	>"$SF_TMP/scraper.out" 2>&1 <<'PY' &
import os, re, socket, sys

port, stop, badf, samplef = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
sample_re = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? '
                       r'(-?[0-9.e+-]+|NaN|[+-]Inf)$')
n = {"ok": 0, "closed": 0, "bad": 0}
bad = []

def check(resp):
    """None when resp is a complete, valid exposition, else why not."""
    head, sep, body = resp.partition(b"\r\n\r\n")
    if not sep:
        return "no end of the header"
    lines = head.decode("latin-1").split("\r\n")
    if lines[0] != "HTTP/1.0 200 OK":
        return "status %r" % lines[0]
    cl = [l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("content-length:")]
    if len(cl) != 1 or int(cl[0]) != len(body):
        return "Content-Length %s, body %d bytes" % (cl, len(body))
    if not body.endswith(b"\n"):
        return "body does not end with a newline"
    text = body.decode()
    samples = 0
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        if not sample_re.match(line):
            return "line does not parse: %r" % line
        samples += 1
    if not samples or not re.search(r"^ib2roce_up [01]$", text, re.M):
        return "no ib2roce_up sample"
    return None

while not os.path.exists(stop):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect(("127.0.0.1", port))
    except (ConnectionRefusedError, ConnectionResetError):
        n["closed"] += 1
        s.close()
        continue
    resp = b""
    err = None
    try:
        s.sendall(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        while True:
            b = s.recv(65536)
            if not b:
                break
            resp += b
    except (ConnectionResetError, BrokenPipeError) as e:
        err = e
    except socket.timeout:
        err = "timeout"
    s.close()
    if not resp and err != "timeout":
        n["closed"] += 1
        continue
    why = check(resp) if err is None else "%s after %d bytes" % (err, len(resp))
    if why:
        n["bad"] += 1
        bad.append(why)
    else:
        n["ok"] += 1
        if n["ok"] == 200 or not os.path.exists(samplef):
            with open(samplef, "wb") as f:
                f.write(resp.partition(b"\r\n\r\n")[2])
with open(badf, "w") as f:
    f.write("\n".join(bad[:20]) + ("\n" if bad else ""))
print("ok=%d closed=%d bad=%d" % (n["ok"], n["closed"], n["bad"]))
PY
SCRAPER=$!
SF_PIDS="$SF_PIDS $SCRAPER"

# Reloads under the scrapes, each joining or leaving g2.
for i in $(seq 1 40); do
	if [ $((i % 2)) = 1 ]; then two; else one; fi
	con_ok bridge reload >/dev/null
done
con_wait_json bridge '.reloads.ok' 40
[ "$(con_json bridge '.groups | length')" = 1 ] || br_fail "not back to one group after 40 reloads" bridge
early=$(sed -n 's/^ok=\([0-9]*\) .*/\1/p' "$SF_TMP/scraper.out")
[ -z "$early" ] || br_fail "the scraper ended early: $(cat "$SF_TMP/scraper.out")" bridge

# Shutdown under the scrapes.
tpid=$(br_pid bridge)
con_ok bridge shutdown >/dev/null
t_wait_until 10 t_pid_gone "$tpid" || br_fail "the bridge did not exit within 10 s of shutdown" bridge
sf_wait_exit "$tpid"
[ "$SF_RC" = 0 ] || br_fail "the bridge exited with status $SF_RC under scrapes" bridge
grep -q '^ib2roce: final counters$' "$SF_TMP/bridge.out" || br_fail "no final counters" bridge
# A few refused connections after the exit, then the scraper stops.
sleep 0.5
touch "$SF_TMP/stop"
sf_wait_exit "$SCRAPER"
[ "$SF_RC" = 0 ] || sf_fail "the scraper failed ($SF_RC)" "$SF_TMP/scraper.out"
sum=$(cat "$SF_TMP/scraper.out")
case "$sum" in
ok=*" closed="*" bad=0") ;;
*) sf_fail "scrapes not answered or closed cleanly: $sum; $(cat "$SF_TMP/scraper.bad")" "$SF_TMP/scraper.out" ;;
esac
ok=${sum#ok=}
ok=${ok%% *}
[ "$ok" -ge 40 ] || sf_fail "only $ok complete scrapes during 40 reloads: $sum" "$SF_TMP/scraper.out"
grep -q '^ib2roce_reloads_total{outcome="ok"} [0-9]' "$SF_TMP/sample.prom" ||
	sf_fail "the sampled scrape has no reload counter" "$SF_TMP/sample.prom"
if command -v promtool >/dev/null; then
	promtool check metrics <"$SF_TMP/sample.prom" >"$SF_TMP/promtool.out" 2>&1 ||
		sf_fail "promtool check metrics: $(cat "$SF_TMP/promtool.out")" "$SF_TMP/sample.prom"
fi
sf_log "scrapes under 40 reloads and a shutdown: $sum"
sf_log "PASS"
