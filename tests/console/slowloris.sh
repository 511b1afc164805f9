#!/bin/bash
# --metrics-port under a slowloris (issue 21, D7: eight connections that sent half a
# request held every slot, and 36 of 44 scrapes failed). Here 64 connections send half a
# request and hold it, and more keep coming (one every 20 ms, each sending a byte now and
# then) while 20 scrapes are made one after another: every scrape must get its 200 and
# the metrics. The slow connections are closed by the bridge (evicted for a new one, or
# after the header time-out), never answered.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-slowloris
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 --metrics-port "$mport" -m 239.1.2.3

python3 - "$mport" >"$SF_TMP/slow.out" 2>&1 <<'PY' || br_fail "scrapes under a slowloris: $(cat "$SF_TMP/slow.out")" bridge
import socket, sys, threading, time, urllib.request

port = int(sys.argv[1])
stop = threading.Event()
slow = []

def opener():
    # Half a request per connection, a byte now and then: never a whole one.
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(b"GET /metr")
            slow.append(s)
        except OSError:
            pass
        for s in list(slow):
            try:
                s.send(b"i")
            except OSError:
                slow.remove(s)
                s.close()
        time.sleep(0.02)

for _ in range(64):
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(b"GET /metr")
    slow.append(s)
t = threading.Thread(target=opener, daemon=True)
t.start()
ok = 0
errors = []
for i in range(20):
    try:
        r = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10)
        body = r.read()
        if r.status == 200 and b"\nib2roce_up 1\n" in body:
            ok += 1
        else:
            errors.append("scrape %d: status %d" % (i, r.status))
    except Exception as e:
        errors.append("scrape %d: %r" % (i, e))
stop.set()
t.join()
print("%d of 20 scrapes answered, %d slow connections open at the end" % (ok, len(slow)))
for e in errors:
    print(e)
sys.exit(0 if ok == 20 else 1)
PY
sf_log "$(head -1 "$SF_TMP/slow.out")"
br_alive bridge
br_stop bridge
sf_log "PASS"
