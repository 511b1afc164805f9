#!/bin/bash
# Drops at the listener's own NIC (docs/mclisten.1, nic_rx_dropped): a listener with a
# receive queue of 16 is stopped (SIGSTOP) while a burst comes; simfabric delivers in the
# sender's thread, so the 16 receives are used and the port drops the rest for want of
# a posted receive (out_of_buffer). Continued, the listener shows them as nic_rx_dropped
# in the live line, the console's status and stats --json, and its --json report:
# received + nic_rx_dropped = sent, nic_rx_dropped = the port's out_of_buffer. A port
# whose hw_counters directory is gone before the listener starts has no counter: null in
# JSON, "-" in the summary line, never 0.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-nicdrops
sf_need jq
n=500
rq=16

tools_listen small -r sim_roce2 -m 239.1.2.3 --rq "$rq" --json -e ppsdisplay -I 100 \
	--control "$SF_TMP/small.sock"
out=$(con_ok small status)
con_expect_in "$out" '^loss: .* nic_rx_dropped=0$' "mclisten status at start" small
[ "$(con_json small '.totals.nic_rx_dropped')" = 0 ] ||
	br_fail "stats --json: nic_rx_dropped is not 0 at start" small

# Stop the listener (all of it: the state T in /proc) and send the burst.
pid=$(sf_child "$(br_pid small)")
kill -STOP "$pid"
# stopped PID: the process is in state T (stopped).
stopped() {
	[ "$(awk '{ print $3 }' "/proc/$1/stat")" = T ]
}
t_wait_until 10 stopped "$pid" || br_fail "listener does not stop" small
tools_send burst -r sim_roce1 -m 239.1.2.3 -n "$n" --rate 0 --burst 64
oob=$(sf_counter sim_roce2 out_of_buffer)
[ "$oob" = $((n - rq)) ] ||
	br_fail "sim_roce2: out_of_buffer $oob, expected $((n - rq)) (a receive queue of $rq)" small
kill -CONT "$pid"

# What the receive queue held is received; the rest is the NIC's.
con_wait_json small '.totals.received' "$rq"
con_wait_json small '.totals.nic_rx_dropped' "$oob"
out=$(con_ok small status)
con_expect_in "$out" "^loss: .* nic_rx_dropped=$oob\$" "mclisten status" small
sf_wait_line "$SF_TMP/small.err" "^mclisten: .* pps=.* nic_rx_dropped=$oob " "$(br_pid small)" 10

tools_stop small
rx=$(tools_json small '.totals.received')
nic=$(tools_json small '.totals.nic_rx_dropped')
[ "$nic" -gt 0 ] || br_fail "listener: nic_rx_dropped=$nic after an overflow" small
[ $((rx + nic)) = "$n" ] || br_fail "listener: received $rx + nic_rx_dropped $nic != sent $n" small
[ "$nic" = "$oob" ] || br_fail "listener: nic_rx_dropped=$nic, the port dropped $oob" small
f=$(sf_sysfs_file sim_roce2 ports/1/hw_counters/out_of_buffer)
[ "$(cat "$f")" = "$oob" ] || br_fail "listener: $f is $(cat "$f"), the port dropped $oob" small
[ "$(tools_json small '.totals.lost')" = "$oob" ] || br_fail "listener: lost is not $oob" small

# Without hw_counters (removed before the listeners start; the simulated sysfs exists
# since the processes above listed the devices): unknown, not 0.
f=$(sf_sysfs_file sim_roce3 ports/1/hw_counters)
[ -f "$f/out_of_buffer" ] || br_fail "no $f/out_of_buffer to remove" small
rm -rf "$f"
tools_listen gone_json -r sim_roce3 -m 239.1.2.3 --json
tools_listen gone_text -r sim_roce3 -m 239.1.2.3
tools_send send2 -r sim_roce1 -m 239.1.2.3 -n 100
tools_stop gone_json
tools_stop gone_text
[ "$(sf_counter sim_roce3 out_of_buffer)" = 0 ] || br_fail "sim_roce3 dropped packets" gone_json
[ "$(tools_json gone_json '.totals.received')" = 100 ] || br_fail "listener: received is not 100" gone_json
tools_json gone_json '.totals | has("nic_rx_dropped") and .nic_rx_dropped == null' >/dev/null
tools_expect gone_text received=100
grep -Eq '^mclisten: received=100 .* nic_rx_dropped=-$' "$SF_TMP/gone_text.out" ||
	br_fail "listener: no nic_rx_dropped=- in its summary" gone_text
sf_log "PASS"
