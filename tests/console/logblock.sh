#!/bin/bash
# A log output that stops taking data must not stop the control thread (issue 15,
# defect 6: the bridge's stderr, a pipe nobody read for a while, blocked the control
# thread in write(): no console, statistics or joins, while the worker forwarded on).
#
# The bridge logs to a FIFO (shrunk to one page) that a reader leaves unread until told:
# the pipe fills after a few dozen lines, then the writer thread's ring, then messages
# are dropped and counted. Meanwhile every console client must be answered. Once the
# reader drains the pipe, the count of dropped messages appears in the log, in sequence,
# and in stats --json (log_dropped), and ib2roce_log_dropped_total on --metrics-port
# rises from 0 to at least that count (the scrape logs nothing itself).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-logblock
fifo=$SF_TMP/log.fifo
go=$SF_TMP/reader.go
mkfifo "$fifo"
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# scrape_log_dropped: ib2roce_log_dropped_total from --metrics-port.
scrape_log_dropped() {
	python3 - "$mport" <<'PY'
import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read()
for line in body.decode().splitlines():
    if line.startswith("ib2roce_log_dropped_total "):
        print(line.split()[1])
        break
else:
    sys.exit("no ib2roce_log_dropped_total")
PY
}

# The reader: one page of pipe, nothing read until $go exists, then everything into
# bridge.err until the bridge closes its end.
python3 - "$fifo" "$go" "$SF_TMP/bridge.err" <<'PY' &
import fcntl, os, sys, time
F_SETPIPE_SZ = 1031
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, F_SETPIPE_SZ, 4096)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
with open(sys.argv[3], "ab", buffering=0) as out:
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        out.write(b)
PY
SF_PIDS="$SF_PIDS $!"

# Debug level: every console connection logs a line ("console: client pid ...").
timeout -k 5 120 "$IB2ROCE" --debug --control "$SF_TMP/bridge.sock" --idle backoff \
	-e statint=0 -e loglevel=7 --metrics-port "$mport" -d sim_ib0 -r sim_roce0 --workers 1 -m 239.1.2.3 \
	>"$SF_TMP/bridge.out" 2>"$fifo" </dev/null &
BR_PID=$!
bridge_pid=$BR_PID
SF_PIDS="$SF_PIDS $BR_PID $(sf_child "$BR_PID")"
# console_answers: the bridge's console answers `status` (within 5 s).
console_answers() {
	timeout 5 "$BCOM" --control "$SF_TMP/bridge.sock" status >/dev/null 2>&1
}
t_wait_until 10 console_answers || sf_fail "the bridge's console did not answer within 10 s"

before=$(scrape_log_dropped) || sf_fail "no ib2roce_log_dropped_total on --metrics-port"
[ "$before" = 0 ] || sf_fail "ib2roce_log_dropped_total $before before the log output filled"

# 500 clients: far more lines than the pipe and the ring hold. Each must be answered.
for i in $(seq 1 500); do
	timeout 10 "$BCOM" --control "$SF_TMP/bridge.sock" status >"$SF_TMP/bcom.out" 2>&1 ||
		sf_fail "console client $i not answered while the log output was blocked" "$SF_TMP/bcom.out"
done
drops=$(timeout 10 "$BCOM" --control "$SF_TMP/bridge.sock" stats --json | jq -e .log_dropped) ||
	sf_fail "stats --json has no log_dropped"
[ "$drops" -gt 0 ] || sf_fail "stats --json: log_dropped=$drops after 500 lines into a blocked pipe"

# The reader drains; the next message comes after the count of those dropped.
touch "$go"
# drops_logged: the bridge logged its count of dropped log messages; if not, one more
# console client (a line to log).
drops_logged() {
	grep -sq 'ib2roce warning: [0-9]* log messages dropped: the log output was blocked' \
		"$SF_TMP/bridge.err" && return 0
	timeout 10 "$BCOM" --control "$SF_TMP/bridge.sock" status >/dev/null 2>&1 || true
	return 1
}
t_wait_until 10 drops_logged || sf_fail "no count of dropped log messages" "$SF_TMP/bridge.err"
logged=$(sed -n 's/.*ib2roce warning: \([0-9]*\) log messages dropped.*/\1/p' "$SF_TMP/bridge.err" |
	awk '{ n += $1 } END { print n + 0 }')
drops=$(timeout 10 "$BCOM" --control "$SF_TMP/bridge.sock" stats --json | jq -e .log_dropped)
[ "$logged" -gt 0 ] && [ "$logged" -le "$drops" ] ||
	sf_fail "the log counts $logged dropped messages, stats --json $drops" "$SF_TMP/bridge.err"
after=$(scrape_log_dropped) || sf_fail "no ib2roce_log_dropped_total on --metrics-port"
[ "$after" -ge "$drops" ] ||
	sf_fail "ib2roce_log_dropped_total $after, below stats --json log_dropped $drops"
sf_log "log_dropped $drops, logged $logged, ib2roce_log_dropped_total 0 -> $after"

kill -INT "$(sf_child "$bridge_pid")"
sf_wait_exit "$bridge_pid"
[ "$SF_RC" = 0 ] || sf_fail "bridge exited with status $SF_RC" "$SF_TMP/bridge.err"
sf_log "PASS"
