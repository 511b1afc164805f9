#!/bin/bash
# The terminal console (--debug, commands on stdin) must not stop the control thread
# when standard output is not read (issue 21, D11: a full stdout pipe stalled it 7 s in
# fflush). The bridge reads commands from a FIFO and writes the replies into a FIFO
# (shrunk to one page) that nobody reads until told: 800 "help" commands (over 2 MB of
# replies) fill the pipe and the 1 MiB buffer behind it. Meanwhile the console socket
# must answer; the replies that did not fit are counted in stats --json
# (console_tty_dropped). Once the reader drains the pipe, a new command's reply comes
# through, and the bridge stops with status 0 and its final counters.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-ttyblock
cmd=$SF_TMP/cmd.fifo
out=$SF_TMP/out.fifo
go=$SF_TMP/reader.go
mkfifo "$cmd" "$out"

# The reader: one page of pipe, nothing read until $go exists, then everything.
python3 - "$out" "$go" "$SF_TMP/bridge.out" <<'PY' &
import fcntl, os, sys, time
F_SETPIPE_SZ = 1031
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, F_SETPIPE_SZ, 4096)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
with open(sys.argv[3], "ab", buffering=0) as f:
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        f.write(b)
PY
SF_PIDS="$SF_PIDS $!"
# A writer that keeps the command FIFO open (no end of input between commands).
sleep 600 >"$cmd" &
SF_PIDS="$SF_PIDS $!"

timeout -k 5 120 "$IB2ROCE" --debug --control "$SF_TMP/bridge.sock" --idle backoff \
	-e statint=0 -d sim_ib0 -r sim_roce0 --workers 1 -m 239.1.2.3 \
	>"$out" 2>"$SF_TMP/bridge.err" <"$cmd" &
tpid=$!
SF_PIDS="$SF_PIDS $tpid $(sf_child "$tpid")"
# console_answers: the bridge's console answers `status` (within 5 s).
console_answers() {
	timeout 5 "$BCOM" --control "$SF_TMP/bridge.sock" status >/dev/null 2>&1
}
t_wait_until 10 console_answers || sf_fail "the bridge's console did not answer within 10 s" "$SF_TMP/bridge.err"

for _ in $(seq 1 800); do echo help; done >"$cmd"
# The socket console answers while stdout is blocked (bcom waits 10 s at most).
for i in 1 2 3 4 5; do
	timeout 10 "$BCOM" --control "$SF_TMP/bridge.sock" status >"$SF_TMP/bcom.out" 2>&1 ||
		sf_fail "console client $i not answered while the terminal's stdout was blocked" \
			"$SF_TMP/bcom.out" "$SF_TMP/bridge.err"
done
# tty_dropped: stats --json counts console replies dropped (the count in drops).
tty_dropped() {
	drops=$(timeout 10 "$BCOM" --control "$SF_TMP/bridge.sock" stats --json |
		jq -e '.console_tty_dropped') && [ "$drops" -gt 0 ]
}
t_wait_until 10 tty_dropped ||
	sf_fail "stats --json: console_tty_dropped=${drops:-none} after 2 MB of replies into a blocked pipe" \
		"$SF_TMP/bridge.err"
grep -q 'console: the terminal.s output is blocked ([0-9]* bytes unread): reply dropped' \
	"$SF_TMP/bridge.err" || sf_fail "no warning about the dropped replies" "$SF_TMP/bridge.err"

# The reader drains; a new command's reply comes through. The command waits until the
# reader has every reply the bridge kept (800 less the dropped ones): sent earlier, its
# reply could find the buffer still full (the kept replies may leave a few bytes only)
# and be dropped as it should.
touch "$go"
# drained: bridge.out holds every kept help reply.
drained() {
	drops=$(timeout 10 "$BCOM" --control "$SF_TMP/bridge.sock" stats --json |
		jq -e '.console_tty_dropped') &&
		[ "$(grep -c '^Commands may be abbreviated' "$SF_TMP/bridge.out" || true)" -eq $((800 - drops)) ]
}
t_wait_until 20 drained ||
	sf_fail "the reader did not get the $((800 - ${drops:-0})) help replies kept" "$SF_TMP/bridge.err"
echo multicast >"$cmd"
t_wait_until 10 grep -sq '239\.1\.2\.3' "$SF_TMP/bridge.out" ||
	sf_fail "no reply to multicast after the reader drained" "$SF_TMP/bridge.err"
helps=$(grep -c '^help' "$SF_TMP/bridge.out" || true)
sf_log "console_tty_dropped $drops; replies seen: $helps help lines"

kill -INT "$(sf_child "$tpid")"
sf_wait_exit "$tpid"
[ "$SF_RC" = 0 ] || sf_fail "bridge exited with status $SF_RC" "$SF_TMP/bridge.err"
t_wait_until 5 grep -q '^ib2roce: final counters$' "$SF_TMP/bridge.out" ||
	sf_fail "no final counters on stdout" "$SF_TMP/bridge.out"
sf_log "PASS"
