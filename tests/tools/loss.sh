#!/bin/bash
# Loss counted exactly: the fabric drops packets on the listener's segment at random
# (simfab loss); the listener's lost count equals the packets its port lost (sim_loss),
# received + lost equals what was sent, and nothing is a duplicate. The sender announces
# each stream's length, so a lost last packet is counted too. The same for the drops of a
# port whose receive queue is full.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-loss
n=2000
tools_listen listen -r sim_roce2 -m 239.1.2.3 -D 50
"$SIMFAB" loss eth0 0.2 >/dev/null
tools_send send -r sim_roce1 -m 239.1.2.3 -n "$n" --streams 2 --rate 50000 --burst 16
tools_stop listen
lost=$(sf_counter sim_roce2 sim_loss)
[ "$lost" -gt 0 ] || br_fail "the fabric lost nothing at probability 0.2" listen
tools_expect listen received=$((2 * n - lost)) unique=$((2 * n - lost)) lost="$lost" dup=0 \
	reordered=0 streams=2
gaps=$(tools_field listen gaps)
if [ "$gaps" -lt 1 ] || [ "$gaps" -gt "$lost" ]; then
	br_fail "listener: gaps=$gaps, lost=$lost" listen
fi
# A small receive queue (16): what the port drops for want of a posted receive
# (out_of_buffer, as mlx5 counts it) is what the listener counts lost, however many.
"$SIMFAB" loss eth0 0 >/dev/null
tools_listen small -r sim_roce3 -m 239.1.2.3 -D 50 --rq 16
tools_send send2 -r sim_roce1 -m 239.1.2.3 -n "$n" --rate 0 --burst 64
tools_stop small
oob=$(sf_counter sim_roce3 out_of_buffer)
tools_expect small received=$((n - oob)) lost="$oob" dup=0 rx_errors=0
sf_log "PASS"
