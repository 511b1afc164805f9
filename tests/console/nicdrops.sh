#!/bin/bash
# Drops at the NIC (docs/console.md "status", docs/metrics.md): a bridge whose worker is
# stalled (the stall feature) with small receive queues (-e rqdepth=64) gets a burst on
# IB; what does not fit in its receive queue is dropped by the port (out_of_buffer), and
# the bridge shows it as nic_rx_dropped in status, stats --json, the metrics file and
# the final counters, read from the port's sysfs (ibdev_path). Every packet is accounted
# for exactly: sent = rx_pkts + nic_rx_dropped, rx_pkts = fwd_pkts + drops. The RoCE
# port's hw_counters directory is removed before the bridge starts: its counter is
# unavailable, shown as "-" (null in JSON, no metric sample), never as 0.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-nicdrops
sf_need ibv_devinfo
g=239.1.2.11
burst=1000
prom=$SF_TMP/ib2roce.prom

# The simulated sysfs exists once a process listed the devices.
sf_tool 30 ibv_devinfo -d sim_roce0 >"$SF_TMP/devinfo.txt" 2>&1 ||
	sf_fail "ibv_devinfo failed" "$SF_TMP/devinfo.txt"
rm -rf "$(sf_sysfs_file sim_roce0 ports/1/hw_counters)"

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e rqdepth=64 --metrics-file "$prom" \
	-e statint=1 -m "$g"
br_listen listener "$ROCE_NET.2" -g "$g" --timeout 60

# status_nic SIDE: the nic_rx_dropped cell of the side's row in `status` (which exits 1
# while the bridge is unhealthy: the worker is stalled on purpose below).
status_nic() {
	con_bc bridge status
	[ "$CON_RC" = 0 ] || [ "$CON_RC" = 1 ] || br_fail "status: exit status $CON_RC" bridge
	awk -v s="$1" '
		$1 == "side" { for (i = 1; i <= NF; i++) if ($i == "nic_rx_dropped") c = i }
		c && $1 == s { print $c; exit }' "$SF_TMP/bcom.out"
}

[ "$(status_nic IB)" = 0 ] || br_fail "status: IB nic_rx_dropped is not 0 at start" bridge
[ "$(status_nic RoCE)" = - ] || br_fail "status: RoCE nic_rx_dropped is not '-' without hw_counters" bridge
[ "$(con_json bridge '.sides[1].nic_rx_dropped == null')" = true ] ||
	br_fail "stats --json: RoCE nic_rx_dropped is not null" bridge

con_stall_worker bridge

br_send burst "$IB_NET.2" -g "$g" -n "$burst"
rcv=$(sf_counter sim_ib0 rcv_pkts)
oob=$(sf_counter sim_ib0 out_of_buffer)
[ $((rcv + oob)) = "$burst" ] || br_fail "sim_ib0: rcv_pkts $rcv + out_of_buffer $oob != $burst" bridge
[ "$oob" -gt 0 ] || br_fail "the burst did not overflow the receive queue" bridge

# The bridge shows the port's drops (sysfs is refreshed every 100 ms).
con_wait_json bridge '.sides[0].nic_rx_dropped' "$oob"
[ "$(status_nic IB)" = "$oob" ] || br_fail "status: IB nic_rx_dropped is not $oob" bridge
t_wait_until 10 grep -sqx "ib2roce_nic_rx_dropped_total{side=\"IB\",device=\"sim_ib0\"} $oob" "$prom" ||
	br_fail "metrics: no ib2roce_nic_rx_dropped_total $oob for IB: $(grep nic "$prom")" bridge
if grep -q 'ib2roce_nic_rx_dropped_total{side="RoCE"' "$prom"; then
	br_fail "metrics: a RoCE sample without a counter" bridge
fi

# zap: the console's view starts again from 0; the reports keep counting from the start.
con_ok bridge zap >/dev/null
[ "$(status_nic IB)" = 0 ] || br_fail "status: IB nic_rx_dropped is not 0 after zap" bridge
[ "$(con_json bridge '.sides[0].nic_rx_dropped')" = "$oob" ] ||
	br_fail "stats --json: IB nic_rx_dropped changed by zap" bridge

# The worker goes on: what the receive queue held is received and forwarded.
con_ok bridge disable stall >/dev/null
con_wait_json bridge '.sides[0].rx_pkts' "$rcv"
con_wait_json bridge '.sides[1].tx_pkts' "$rcv"
br_listen_stop listener
[ "$BR_RECEIVED" = "$rcv" ] || br_fail "listener got $BR_RECEIVED, the bridge took $rcv" listener

br_stop bridge
rx=$(br_field bridge IB rx_pkts)
nic=$(br_nic bridge IB)
[ "$nic" = "$oob" ] || br_fail "final counters: IB nic_rx_dropped=$nic, the port dropped $oob" bridge
[ $((rx + nic)) = "$burst" ] ||
	br_fail "sent $burst != IB rx_pkts $rx + nic_rx_dropped $nic" bridge
[ "$(br_nic bridge RoCE)" = - ] || br_fail "final counters: RoCE nic_rx_dropped is not '-'" bridge
BR_NIC_MISSING=RoCE br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
