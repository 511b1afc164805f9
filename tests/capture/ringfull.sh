#!/bin/bash
# A capture at full load with a tiny ring (capture-ring 2) loses captures, never packets:
# the capture drop counter is above zero, captures written + dropped = packets received,
# and the bridge's conservation holds (every packet forwarded or in a drop counter).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init capture-ringfull
g=239.1.2.12
dir=$SF_TMP/cap
mkdir -m 0750 "$dir"

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g" \
	--capture-dir "$dir" --capture-ring 2 --capture full.pcapng
br_listen listener "$ROCE_NET.2" -g "$g" -n 5000 --timeout 60
br_send a "$IB_NET.2" -g "$g" -n 5000 --rate 5000
br_expect_listener listener 5000
con_wait_json bridge '.sides[0].fwd_pkts' 5000
out=$(con_ok bridge capture stop)
w=$(printf '%s\n' "$out" | sed -n 's/.*stopped: \([0-9]*\) packets written, \([0-9]*\) captures dropped/\1/p')
d=$(printf '%s\n' "$out" | sed -n 's/.*stopped: \([0-9]*\) packets written, \([0-9]*\) captures dropped/\2/p')
[ -n "$w" ] && [ -n "$d" ] || br_fail "capture stop: '$out'" bridge
[ "$d" -gt 0 ] || br_fail "no capture dropped with a ring of 2: '$out'" bridge
[ $((w + d)) = 5000 ] || br_fail "written $w + dropped $d != 5000 received" bridge
[ "$(con_json bridge '.capture.dropped')" = "$d" ] || br_fail "stats --json capture.dropped" bridge
if command -v tshark >/dev/null 2>&1; then
	n=$(tshark -n -r "$dir/full.pcapng" 2>/dev/null | wc -l)
	[ "$n" = "$w" ] || br_fail "tshark read $n packets, the bridge wrote $w" bridge
fi
br_stop bridge
br_expect bridge IB rx_pkts 5000
br_expect bridge IB fwd_pkts 5000
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
