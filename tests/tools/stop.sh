#!/bin/bash
# mcsender --stop-every N: after every N data packets it stops itself (state T) with
# exactly those delivered, sends nothing while stopped, goes on at SIGCONT, never stops
# after its last packet, and counts its stops (text and JSON summaries). What the drain
# scenario of bench/harness.py relies on to fill a stopped bridge's receive queue.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

# stopped PID: every thread of PID is stopped (job control).
stopped() {
	local st

	for st in /proc/"$1"/task/*/stat; do
		[ "$(sed 's/.*) //' "$st" | cut -d' ' -f1)" = T ] || return 1
	done
}

# rcv: packets the listener's port received since the start of the test.
rcv() {
	echo $(($(sf_counter sim_ib3 rcv_pkts) - rcv0))
}

sf_init tools-stop
tools_listen listen -d sim_ib3 -m 239.1.2.11 -D 60
rcv0=$(sf_counter sim_ib3 rcv_pkts)
br_start send 60 "$MCSENDER" -d sim_ib1 -m 239.1.2.11 -n 12 --stop-every 5 --rate 0 -b 4 \
	--stream-id 91
spid=$(sf_child "$send_pid")
for k in 1 2; do
	t_wait_until 10 stopped "$spid" || br_fail "mcsender not stopped after $((5 * k)) packets" send
	[ "$(rcv)" = $((5 * k)) ] || br_fail "stop $k: the listener's port received $(rcv), expected $((5 * k))" send
	sleep 0.3
	stopped "$spid" || br_fail "stop $k: mcsender went on without SIGCONT" send
	[ "$(rcv)" = $((5 * k)) ] || br_fail "stop $k: $(rcv) received while mcsender was stopped" send
	kill -CONT "$spid"
done
sf_wait_exit "$send_pid"
[ "$SF_RC" = 0 ] || br_fail "mcsender exited $SF_RC after its last packet" send
grep -q '^mcsender: sent=12 .* errors=0 .* stops=2$' "$SF_TMP/send.out" ||
	br_fail "no summary with sent=12 errors=0 stops=2" send
tools_stop listen
tools_expect listen received=12 unique=12 lost=0 dup=0 streams=1

# JSON: stops counted; 10 packets with --stop-every 5 stop once (not after the last one).
tools_listen listen2 -d sim_ib3 -m 239.1.2.11 -D 60
br_start send2 60 "$MCSENDER" -d sim_ib1 -m 239.1.2.11 -n 10 --stop-every 5 --rate 0 --json \
	--stream-id 92
spid=$(sf_child "$send2_pid")
t_wait_until 10 stopped "$spid" || br_fail "mcsender --json not stopped after 5 packets" send2
kill -CONT "$spid"
sf_wait_exit "$send2_pid"
[ "$SF_RC" = 0 ] || br_fail "mcsender --json exited $SF_RC" send2
[ "$(jq -r '"\(.sent) \(.stops) \(.errors)"' <"$SF_TMP/send2.out")" = "10 1 0" ] ||
	br_fail "JSON summary: not sent 10, stops 1, errors 0" send2
tools_stop listen2
tools_expect listen2 received=10 unique=10 lost=0

# The console's status between stops: how often and how long it stopped, and the rate
# so far over the time sending, the 4 s stopped left out (3 pps: the 6 packets after the
# SIGCONT take 2 s, the window for bcom). Counted with the stop, the rate would be 7
# packets in more than 6 s, below 1.2 pps.
br_start send3 60 "$MCSENDER" -d sim_ib1 -m 239.1.2.11 -n 1000 --stop-every 6 --rate 3 -b 1 \
	--stream-id 93 --control "$SF_TMP/send3.sock"
spid=$(sf_child "$send3_pid")
t_wait_until 10 stopped "$spid" || br_fail "mcsender --rate 3 not stopped after 6 packets" send3
sleep 4
kill -CONT "$spid"
out=$(con_ok send3 status)
con_expect_in "$out" '^stopped: every 6 packets, 1 times, [4-9]\.[0-9] s in all$' "status after a stop" send3
rate=$(printf '%s\n' "$out" | sed -n 's/^rate: 3 pps in bursts of 1, \([0-9.]*\) pps so far$/\1/p')
[ -n "$rate" ] && awk -v r="$rate" 'BEGIN { exit !(r >= 2 && r <= 5.5) }' ||
	br_fail "status: rate so far '$rate' pps, expected about 3 (the time stopped left out): $out" send3
con_must send3 shutdown
sf_wait_exit "$send3_pid"
[ "$SF_RC" = 0 ] || br_fail "mcsender exited $SF_RC after shutdown" send3
sf_log "PASS"
