#!/bin/bash
# A datagram larger than the receiving port's MTU is dropped on the way and counted
# (simfab counter mtu_drop of the receiving port): mckey sends 2000-byte messages from a
# RoCE port with MTU 4096 to a group with a receiver on an MTU-4096 port (it gets every
# message) and one on an MTU-1024 port (it gets none).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init mtudrop
sf_need mckey
out=$SF_TMP
cat >"$out/topology" <<'TOPO'
segment eth0 eth
device sim_roce0 segment eth0 ipv4 198.19.0.1/24 mtu 4096
device sim_roce1 segment eth0 ipv4 198.19.0.2/24 mtu 1024
device sim_roce2 segment eth0 ipv4 198.19.0.3/24 mtu 4096
TOPO
export SIMFABRIC_TOPOLOGY=$out/topology
count=10
size=2000

# mckey refuses a message size above its port's MTU: that receiver posts 1000 bytes.
sf_start "$out/small.txt" 60 mckey -m 239.1.2.4 -b 198.19.0.2 -C "$count" -S 1000
small=$SF_PID
sf_start "$out/big.txt" 60 mckey -m 239.1.2.4 -b 198.19.0.3 -C "$count" -S "$size"
big=$SF_PID
sf_wait_line "$out/small.txt" 'joined' "$small" 20
sf_wait_line "$out/big.txt" 'joined' "$big" 20
sf_start "$out/send.txt" 30 mckey -m 239.1.2.4 -b 198.19.0.1 -s -o -C "$count" -S "$size"
s=$SF_PID
sf_wait_exit "$s"
[ "$SF_RC" = 0 ] || sf_fail "sender exited with $SF_RC" "$out/send.txt"

# The MTU-4096 receiver gets everything and exits 0.
sf_wait_line "$out/big.txt" '^data transfers complete$' "$big" 15
sf_wait_exit "$big"
[ "$SF_RC" = 0 ] || sf_fail "receiver on sim_roce2 exited with $SF_RC" "$out/big.txt"
sf_expect_counter sim_roce2 rcv_pkts "$count"
sf_expect_counter sim_roce2 mtu_drop 0

# The MTU-1024 port delivered nothing: every copy was dropped and counted.
sf_expect_counter sim_roce1 rcv_pkts 0
sf_expect_counter sim_roce1 out_of_buffer 0
sf_expect_counter sim_roce1 len_err 0
sf_expect_counter sim_roce1 mtu_drop "$count"
sf_expect_counter sim_roce0 xmit_pkts "$count"
kill -0 "$small" 2>/dev/null || sf_fail "receiver on sim_roce1 exited" "$out/small.txt"
sf_log "PASS"
