#!/bin/bash
# RoCEv2 over IPv6 through the bridge (docs/architecture.md "RoCEv2 over IPv6"), with
# exact accounting: bridge counters, per-group counters, the ports' simfab counters
# (br_conservation) and every listener's count. One bridge, four groups mixed:
#   ff0e::1234            the same 128 bits on both sides: a native MGID on IB, an IPv6
#                         group on RoCE
#   239.1.2.3=ff0e::1:2   IB MGID made from 239.1.2.3, an IPv6 group on RoCE
#   239.1.2.4             IPv4 as before
#   ff0e::5678            native both sides, for Debian's mckey on IB (-M: the MGID
#                         itself through AF_IB; `-m ff0e::5678` would join rdma_cm's IPoIB
#                         mapping ff12:6001:ffff::5678 instead, as the kernel does)
# IB -> RoCE and RoCE -> IB with mcsender/mclisten (the IPv6 groups joined by attach,
# MLD and an AH of their own, as the bridge does), then mckey. The bridge's RoCE joins of
# IPv6 groups do not use rdma_cm: simfab shows its QP attached and no rdma_cm join, and
# mckey's rdma_cm join of an IPv6 group on RoCE is refused with 524 (ENOTSUPP) as on
# Linux. Outside a network namespace the port's netdev (ifindex 104) does not exist: the
# bridge logs the refused MLD membership once, counts it (console `events`, stats --json
# `mld_refused`, the metric ib2roce_mld_refused_total), forwards.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-ipv6
n=200
g1=ff0e::1234
g2=239.1.2.3=ff0e::1:2
g2ib=239.1.2.3
g2roce=ff0e::1:2
g3=239.1.2.4
g4=ff0e::5678

# A bad --peer is refused with the item named, before anything starts.
if "$IB2ROCE" -d sim_ib0 -r sim_roce0 -m "$g1" --peer ff02::1 >"$SF_TMP/badpeer.out" 2>&1; then
	br_fail "--peer ff02::1 was accepted" badpeer
fi
grep -q "'ff02::1' is not a unicast IPv6 address" "$SF_TMP/badpeer.out" ||
	br_fail "--peer ff02::1: no message naming it" badpeer

capdir=$SF_TMP/cap
mkdir -m 0750 "$capdir"
br_bridge bridge 4 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g1" -m "$g2" -m "$g3" -m "$g4" \
	--peer fd00:0:0:1::9 --peer 198.19.0.9 --capture-dir "$capdir" --metrics-file "$SF_TMP/metrics.prom"
for g in "$g1" "$g2" "$g4"; do
	grep -q "RoCE joined $g (IPv6, GID index 5)" "$SF_TMP/bridge.err" ||
		br_fail "bridge: $g not joined on RoCE with the IPv6 RoCE v2 GID (index 5)" bridge
done
[ "$(grep -c 'MLD membership of .* refused' "$SF_TMP/bridge.err")" = 1 ] ||
	br_fail "bridge: the refused MLD memberships were not logged exactly once" bridge
# The RoCE side of an IPv6 group: the bridge's QP attached, no rdma_cm join (Linux has
# none to give); the IB side joined through rdma_cm (AF_IB, the native MGID).
"$SIMFAB" groups >"$SF_TMP/groups.txt"
awk '$1 == "eth0" && $2 == "ff0e::1234"' "$SF_TMP/groups.txt" | grep -q "qp *sim_roce0" ||
	br_fail "simfab: the bridge's RoCE QP is not attached to ff0e::1234" groups
# (A row naming a segment starts a group; the rows below it are indented.)
if awk '$1 == "eth0" || $1 == "ib0" { seg = $1; mgid = $2 }
	seg == "eth0" && mgid !~ /^::ffff:/ && /join +sim_roce0/' "$SF_TMP/groups.txt" | grep -q .; then
	cat "$SF_TMP/groups.txt" >&2
	br_fail "simfab: the bridge joined an IPv6 RoCE group through rdma_cm" groups
fi
grep -q "^ib0 *ff0e::1234 " "$SF_TMP/groups.txt" ||
	br_fail "simfab: no IB group with MGID ff0e::1234" groups
con_ok bridge events >"$SF_TMP/events.txt"
grep -q "^mld .* 3 memberships refused, last: .* on ifindex 104 refused: No such device" \
	"$SF_TMP/events.txt" || br_fail "bridge: events does not count 3 refused MLD memberships" events
# ... and so do stats --json and the metrics (read from the file written at exit, below).
[ "$(con_json bridge '.mld_refused')" = 3 ] ||
	br_fail "stats --json: mld_refused is '$(con_json bridge '.mld_refused')', not 3" bridge

tools_listen on_roce -r sim_roce2 -m "$g1" -m "$g2roce" -m "$g3" -D 60
tools_listen on_ib -d sim_ib2 -m "$g1" -m "$g2ib" -m "$g3" -D 60

# IB -> RoCE: n packets to each group; then RoCE -> IB. Each until the bridge handled all.
tools_send ib_tx -d sim_ib1 -m "$g1" -m "$g2ib" -m "$g3" -n "$n" --rate 20000
con_wait_json bridge '.sides[0].fwd_pkts' $((3 * n))
# RoCE -> IB captured, only the group ff0e::1234 (an IPv6 group: the filter by group).
con_expect_in "$(con_ok bridge capture start v6.pcapng group "$g1" side roce)" "" "capture start"
con_expect_in "$(con_ok bridge capture status)" "group $g1" "capture status names the group"
tools_send roce_tx -r sim_roce1 -m "$g1" -m "$g2roce" -m "$g3" -n "$n" --rate 20000
con_wait_json bridge '.sides[1].fwd_pkts' $((3 * n))
con_wait_json bridge '.capture.written' "$n"
con_expect_in "$(con_ok bridge capture stop)" "stopped: $n packets written, 0 captures dropped" "capture stop"
tools_stop on_roce
tools_stop on_ib

# Each listener: n per stream from the bridge (3 streams) and n per stream straight from
# its own fabric's sender (3 streams), nothing lost or repeated.
for l in on_roce on_ib; do
	tools_expect "$l" received=$((6 * n)) lost=0 dup=0 reordered=0 streams=6 unknown_group=0 rx_errors=0
done
# The bridge sent the IPv6 groups from its RoCE port's global IPv6 address (GID 5), the
# IPv4 group from its IPv4 address.
for g in "$g1" "$g2roce"; do
	grep -Eq "^id:[0-9]+ +$g +fd00:0:0:1::1/0x[0-9a-f]+ +$n " "$SF_TMP/on_roce.out" ||
		br_fail "on_roce: no stream of $n packets from fd00:0:0:1::1 on $g" on_roce
	grep -Eq "^id:[0-9]+ +$g +fd00:0:0:1::2/0x[0-9a-f]+ +$n " "$SF_TMP/on_roce.out" ||
		br_fail "on_roce: no stream of $n packets from the RoCE sender on $g" on_roce
done
grep -Eq "^id:[0-9]+ +$g3 +198\.19\.0\.1/0x[0-9a-f]+ +$n " "$SF_TMP/on_roce.out" ||
	br_fail "on_roce: no stream of $n packets from 198.19.0.1 on $g3" on_roce

# The capture as tshark reads it: Ethernet (33:33 + the group's last 32 bits, RFC 2464) /
# IPv6 / UDP 4791 / InfiniBand BTH+DETH, the RoCE sender's address, each one's comment.
t() { tshark -n -r "$@" 2>"$SF_TMP/tshark.err" || br_fail "tshark: $(cat "$SF_TMP/tshark.err")" bridge; }
f=$capdir/v6.pcapng
k=$(t "$f" -Y "ipv6.dst == $g1 && udp.dstport == 4791 && infiniband.bth.opcode == 100 && eth.dst == 33:33:00:00:12:34 && ipv6.src == fd00:0:0:1::2" | wc -l)
[ "$k" = "$n" ] || br_fail "tshark: $k Ethernet/IPv6/UDP 4791 RoCE frames to $g1 from fd00:0:0:1::2, expected $n" bridge
k=$(t "$f" -Y "frame.comment contains \"forwarded group $g1\"" | wc -l)
[ "$k" = "$n" ] || br_fail "tshark: $k frames with the comment 'forwarded group $g1', expected $n" bridge
k=$(t "$f" | wc -l)
[ "$k" = "$n" ] || br_fail "tshark: $k frames, expected $n (the group filter)" bridge
line=$(t "$f" -c 1 -T fields -E separator=' ' -e frame.protocols -e infiniband.deth.q_key -e ipv6.hlim)
case "$line" in
"eth:ethertype:ipv6:udp:infiniband"*" 0x0000000001234567 64") ;;
*) br_fail "tshark: first frame '$line'" bridge ;;
esac

# PGM in an IPv6 group, RoCE -> IB: the SPMs carry the sender's IPv6 address (path NLA
# AFI 2); the bridge's inspection parses every packet as PGM (nothing malformed) and the
# listener reads them back.
tools_listen pgm_ib -d sim_ib3 -m "$g1" -D 60
tools_send pgm_tx -r sim_roce1 -m "$g1" -n "$n" --pgm --rate 20000 --spm-interval 20
spm_tx=$(sed -n 's/^mcsender: .* spm=\([0-9]*\) .*/\1/p' "$SF_TMP/pgm_tx.out")
[ "$spm_tx" -gt 0 ] || br_fail "mcsender sent no SPM" pgm_tx
con_wait_json bridge '.sides[1].fwd_pkts' $((4 * n + spm_tx))
tools_stop pgm_ib
tools_expect pgm_ib received="$n" lost=0 dup=0 pgm_bad=0 spm="$spm_tx" streams=1

# mckey on IB with the native MGID, both ways through the bridge (its payloads are
# "other" to mclisten: not mcsender's), and mckey's own rdma_cm
# join of an IPv6 group on RoCE refused as Linux refuses it.
c=20
sf_start "$SF_TMP/mk_rx.out" 40 mckey -M "$g4" -b 198.18.0.3 -C "$c"
mk=$SF_PID
sf_wait_line "$SF_TMP/mk_rx.out" 'joined' "$mk" 20
tools_send mk_roce_tx -r sim_roce3 -m "$g4" -n "$c" -S 100 --rate 2000
sf_wait_exit "$mk"
[ "$SF_RC" = 0 ] || br_fail "mckey receiver on IB exited with $SF_RC" mk_rx
grep -q '^data transfers complete$' "$SF_TMP/mk_rx.out" || br_fail "mckey receiver: not complete" mk_rx
tools_listen mk_roce_rx -r sim_roce2 -m "$g4" -D 60
sf_start "$SF_TMP/mk_tx.out" 40 mckey -M "$g4" -b 198.18.0.2 -s -C "$c"
mk=$SF_PID
sf_wait_exit "$mk"
[ "$SF_RC" = 0 ] || br_fail "mckey sender on IB exited with $SF_RC" mk_tx
con_wait_json bridge '.sides[0].fwd_pkts' $((3 * n + c))
tools_stop mk_roce_rx
tools_expect mk_roce_rx received=0 other="$c" unknown_group=0 rx_errors=0
if sf_tool 30 mckey -m "$g1" -b fd00:0:0:1::4 -C 1 >"$SF_TMP/mk_roce.out" 2>&1; then
	br_fail "mckey: rdma_cm join of $g1 on RoCE succeeded" mk_roce
fi
grep -q 'failure joining: Unknown error 524' "$SF_TMP/mk_roce.out" ||
	br_fail "mckey: the RoCE join of $g1 was not refused with 524" mk_roce

br_stop bridge
for g in "$g1" "$g2" "$g3"; do
	br_expect_group bridge "$g" ib_to_roce "$n"
done
br_expect_group bridge "$g1" roce_to_ib $((2 * n + spm_tx))
for g in "$g2" "$g3"; do
	br_expect_group bridge "$g" roce_to_ib "$n"
done
br_expect_group bridge "$g4" ib_to_roce "$c"
br_expect_group bridge "$g4" roce_to_ib "$c"
br_expect bridge IB rx_pkts $((3 * n + c))
br_expect bridge IB fwd_pkts $((3 * n + c))
br_expect bridge RoCE rx_pkts $((4 * n + spm_tx + c))
br_expect bridge RoCE fwd_pkts $((4 * n + spm_tx + c))
# The plain payloads are not PGM; the PGM ones (and their IPv6 NLAs) parse.
br_expect bridge RoCE pgm_pkts $((n + spm_tx))
br_expect bridge RoCE pgm_malformed 0
for s in IB RoCE; do
	br_expect bridge "$s" drops 0
done
br_conservation bridge sim_ib0 sim_roce0
grep -qx 'ib2roce_mld_refused_total 3' "$SF_TMP/metrics.prom" ||
	br_fail "metrics: $(grep -s mld_refused "$SF_TMP/metrics.prom" || echo 'no ib2roce_mld_refused_total')" bridge
sf_log "PASS"
