#!/bin/bash
# Socket activation: systemd-socket-activate (the same protocol as an ib2roce.socket
# unit: LISTEN_FDS/LISTEN_PID) holds the console socket and starts the bridge on the
# first connection; that first bcom is answered once the bridge runs, the bridge says it
# took the socket from systemd, and shutdown stops it. Skipped without systemd-socket-activate.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

if ! command -v systemd-socket-activate >/dev/null; then
	echo "sockact: no systemd-socket-activate: skipped"
	exit 77
fi
sf_init console-sockact
sock=$SF_TMP/bridge.sock

br_start bridge 120 systemd-socket-activate -l "$sock" -E LD_LIBRARY_PATH -E SIMFABRIC \
	${LD_PRELOAD:+-E LD_PRELOAD} ${ASAN_OPTIONS:+-E ASAN_OPTIONS} ${UBSAN_OPTIONS:+-E UBSAN_OPTIONS} "$IB2ROCE" --debug --control "$sock" \
	--idle backoff -e statint=0 -d sim_ib0 -r sim_roce0 -m 239.1.2.3
BR_BRIDGES=bridge
t_wait_until 5 test -S "$sock" || br_fail "systemd-socket-activate did not listen" bridge
grep -q 'console on' "$SF_TMP/bridge.err" && br_fail "the bridge started before a connection" bridge
# The bridge may still be joining (status then exits 1: not healthy yet): it answers.
con_bc bridge status
[ "$CON_RC" = 0 ] || [ "$CON_RC" = 1 ] || br_fail "first status: exit status $CON_RC" bridge
con_expect_in "$(cat "$SF_TMP/bcom.out")" "sim_ib0" "the first connection is served by the activated bridge"
grep -q 'console on the socket from systemd' "$SF_TMP/bridge.err" ||
	br_fail "the bridge did not use the socket it was given" bridge
con_ok bridge shutdown >/dev/null
sf_wait_exit "$(br_pid bridge)"
[ "$SF_RC" = 0 ] || br_fail "exit status $SF_RC after shutdown" bridge
grep -q '^ib2roce: final counters$' "$SF_TMP/bridge.out" || br_fail "no final counters" bridge
sf_log "PASS"
