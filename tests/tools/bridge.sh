#!/bin/bash
# mcsender -> ib2roce -> mclisten across the fabrics, both ways at once: PGM from IB to
# RoCE, plain payloads from RoCE to IB. The bridge drops every 7th packet it receives
# (-e drop=7, counted as drop_injected per input side): each listener's loss (data) plus
# the SPMs it missed is exactly the bridge's injected drops on that side, every gap is a
# single packet, nothing is duplicated, and the PGM that crossed still parses (checksums);
# the plain payloads are counted as not PGM.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-bridge
n=500
g1=239.1.2.5
g2=239.1.2.6
br_bridge bridge 2 -d sim_ib0 -r sim_roce0 --workers 1 -e drop=7 -m "$g1" -m "$g2"
tools_listen on_roce -r sim_roce2 -m "$g1" -D 50
tools_listen on_ib -d sim_ib2 -m "$g2" -D 50
# One direction after the other, each until the bridge has handled every packet (its
# stats): then every forwarded packet is in the listener's receive queue.
tools_send ib_tx -d sim_ib1 -m "$g1" -n "$n" --pgm --rate 20000 --spm-interval 20
spm_tx=$(sed -n 's/^mcsender: .* spm=\([0-9]*\) .*/\1/p' "$SF_TMP/ib_tx.out")
con_wait_json bridge '.sides[0].fwd_pkts + .sides[0].drop_reasons.injected' $((n + spm_tx))
tools_send roce_tx -r sim_roce1 -m "$g2" -n "$n" --streams 2 --stream-id 1000 --rate 20000
con_wait_json bridge '.sides[1].fwd_pkts + .sides[1].drop_reasons.injected' $((2 * n))
tools_stop on_roce
tools_stop on_ib
br_stop bridge

# IB -> RoCE (PGM).
inj=$(br_field bridge IB drop_injected)
lost=$(tools_field on_roce lost)
spm_rx=$(tools_field on_roce spm)
[ "$inj" -gt 0 ] || br_fail "bridge: no injected drops on IB" bridge
[ $((lost + spm_tx - spm_rx)) = "$inj" ] ||
	br_fail "on_roce: lost=$lost + missed SPMs $((spm_tx - spm_rx)) != bridge IB drop_injected=$inj" on_roce ib_tx
tools_expect on_roce received=$((n - lost)) gaps="$lost" dup=0 reordered=0 pgm_bad=0 streams=1
br_expect bridge IB rx_pkts $((n + spm_tx))

# RoCE -> IB (plain, two streams). The worker counts every 7th packet of both sides
# together: the RoCE phase continues the count of the IB phase.
inj=$(br_field bridge RoCE drop_injected)
[ $(($(br_field bridge IB drop_injected) + inj)) = $(((n + spm_tx + 2 * n) / 7)) ] ||
	br_fail "bridge: injected drops do not add up to 1 in 7" bridge
tools_expect on_ib received=$((2 * n - inj)) lost="$inj" gaps="$inj" dup=0 reordered=0 streams=2
# mcsender's plain header is not PGM-shaped (byte 4, PGM's type, is 0xff): the bridge's
# PGM inspection counts every plain packet as not PGM, none as malformed PGM (with the
# "MCT1" header, stream id 1000 put 0x00, an SPM, in that byte).
br_expect bridge RoCE pgm_not_pgm $((2 * n))
br_expect bridge RoCE pgm_malformed 0
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
