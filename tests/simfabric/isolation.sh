#!/bin/bash
# Two fabrics with different SIMFABRIC names are isolated: a sender on fabric B does not
# reach a receiver on fabric A (same devices, addresses and group), while a sender on
# fabric A does.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init isolation
sf_need mckey
out=$SF_TMP
fab_b=""
sf_new_fabric fab_b isolation-b
SIMFABRIC=$fab_b "$SIMFAB" reset >/dev/null
group=239.1.2.4
count=5

# RoCE: any QP attached to the MGID on the segment receives, no SA membership needed, so
# only the fabric boundary stands between the sender and this receiver.
sf_start "$out/recv.txt" 60 mckey -m "$group" -b 198.19.0.2 -C "$count"
r=$SF_PID
sf_wait_line "$out/recv.txt" 'joined' "$r" 20

# Fabric B: a sender to the same group from the same device and address.
SIMFABRIC=$fab_b sf_start "$out/send-b.txt" 30 mckey -m "$group" -b 198.19.0.4 -s -C "$count"
sb=$SF_PID
sf_wait_exit "$sb"
[ "$SF_RC" = 0 ] || sf_fail "sender on fabric B exited with $SF_RC" "$out/send-b.txt"
grep -q '^data transfers complete$' "$out/send-b.txt" ||
	sf_fail "sender on fabric B did not send" "$out/send-b.txt"
# Delivery is synchronous with the send; give a stray copy time to show anyway.
sleep 0.5
if grep -q 'data transfers complete' "$out/recv.txt" || ! kill -0 "$r" 2>/dev/null; then
	sf_fail "the receiver on fabric A finished after a send on fabric B" "$out/recv.txt"
fi
SIMFABRIC=$fab_b sf_expect_counter sim_roce3 xmit_pkts "$count"
for d in sim_roce0 sim_roce1 sim_roce2 sim_roce3; do
	SIMFABRIC=$fab_b sf_expect_counter "$d" rcv_pkts 0
	sf_expect_counter "$d" rcv_pkts 0
	sf_expect_counter "$d" xmit_pkts 0
done

# The same sender on fabric A reaches the receiver.
sf_start "$out/send-a.txt" 30 mckey -m "$group" -b 198.19.0.4 -s -C "$count"
sa=$SF_PID
sf_wait_exit "$sa"
[ "$SF_RC" = 0 ] || sf_fail "sender on fabric A exited with $SF_RC" "$out/send-a.txt"
sf_wait_line "$out/recv.txt" '^data transfers complete$' "$r" 15
sf_wait_exit "$r"
[ "$SF_RC" = 0 ] || sf_fail "receiver exited with $SF_RC" "$out/recv.txt"
sf_expect_counter sim_roce1 rcv_pkts "$count"
SIMFABRIC=$fab_b sf_expect_counter sim_roce1 rcv_pkts 0
sf_log "PASS"
