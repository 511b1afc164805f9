#!/bin/bash
# A reader of the bridge's stderr that goes away must not kill the bridge (issue 21, D6:
# SIGPIPE ended it with exit status 141, no final counters, no leaves; only the daemon
# ignored it). In --debug, and in --systemd without a journal socket (stderr is then the
# fallback), the bridge logs into a FIFO whose reader takes the first line and exits.
# The bridge must go on: its console answers, the messages stderr refused are counted in
# stats --json (log_dropped), and SIGINT ends it with status 0 (in --debug after the
# final counters on stdout).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-sigpipe

modes="debug"
if [ -S /run/systemd/journal/socket ]; then
	sf_log "a journal socket exists: --systemd logs there, only --debug is tested"
else
	modes="debug systemd"
fi

# answers_or_gone MODE PID: the console of the --MODE bridge answers `status`, or the
# bridge (timeout process PID) exited: what follows reports it.
answers_or_gone() {
	timeout 5 "$BCOM" --control "$SF_TMP/$1.sock" status >/dev/null 2>&1 || ! kill -0 "$2" 2>/dev/null
}

for mode in $modes; do
	fifo=$SF_TMP/$mode.fifo
	mkfifo "$fifo"
	# The reader: the first line, then gone (the pipe has no reader from then on).
	head -n 1 <"$fifo" >"$SF_TMP/$mode.first" &
	SF_PIDS="$SF_PIDS $!"
	# Debug level: every console connection logs a line ("console: client pid ...").
	timeout -k 5 120 env -u NOTIFY_SOCKET "$IB2ROCE" "--$mode" \
		--control "$SF_TMP/$mode.sock" --pidfile "$SF_TMP/$mode.pid" --idle backoff \
		-e statint=0 -e loglevel=7 -d sim_ib0 -r sim_roce0 --workers 1 -m 239.1.2.3 \
		>"$SF_TMP/$mode.out" 2>"$fifo" </dev/null &
	tpid=$!
	SF_PIDS="$SF_PIDS $tpid $(sf_child "$tpid")"
	t_wait_until 10 answers_or_gone "$mode" "$tpid" ||
		sf_fail "--$mode: the console did not answer within 10 s" \
			"$SF_TMP/$mode.out" "$SF_TMP/$mode.first"
	# Each client is a debug line into the pipe without a reader.
	for i in 1 2 3 4 5; do
		timeout 10 "$BCOM" --control "$SF_TMP/$mode.sock" status >"$SF_TMP/bcom.out" 2>&1 || {
			sf_wait_exit "$tpid"
			sf_fail "--$mode: console client $i not answered after stderr's reader left (bridge exit status $SF_RC)" \
				"$SF_TMP/bcom.out" "$SF_TMP/$mode.out" "$SF_TMP/$mode.first"
		}
	done
	drops=$(timeout 10 "$BCOM" --control "$SF_TMP/$mode.sock" stats --json | jq -e .log_dropped) ||
		sf_fail "--$mode: stats --json has no log_dropped"
	[ "$drops" -gt 0 ] ||
		sf_fail "--$mode: log_dropped=$drops after messages into a pipe without a reader"
	kill -INT "$(sf_child "$tpid")"
	sf_wait_exit "$tpid"
	[ "$SF_RC" = 0 ] || sf_fail "--$mode: bridge exited with status $SF_RC" "$SF_TMP/$mode.out"
	if [ "$mode" = debug ]; then
		grep -q '^ib2roce: final counters$' "$SF_TMP/$mode.out" ||
			sf_fail "--debug: no final counters on stdout" "$SF_TMP/$mode.out"
	fi
	sf_log "--$mode: log_dropped $drops, exit status 0"
done
sf_log "PASS"
