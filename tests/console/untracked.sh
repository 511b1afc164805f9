#!/bin/bash
# A full sender table: a bridge with 16 sender records (-e senders=16) and 24 senders
# (24 UD QPs of one mcpkt). Every packet is forwarded all the same; the packets whose
# sender got no record are counted in senders_untracked (stats --json, status, the
# final counters), and the control thread logs the full table once.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-untracked
group=239.1.2.3
nq=24
n=3

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e senders=16 -m "$group"
[ "$(con_json bridge .senders_untracked)" = 0 ] || br_fail "senders_untracked before any packet" bridge
br_listen listener "$ROCE_NET.2" -g "$group" -n $((nq * n)) --verify --timeout 30
br_send send "$IB_NET.2" -g "$group" -n "$n" --qps "$nq" --rate 20000
br_expect_listener listener $((nq * n)) "$nq"

untracked=$(con_json bridge .senders_untracked)
[ "$untracked" -ge $(((nq - 16) * n)) ] ||
	br_fail "senders_untracked=$untracked, expected at least $(((nq - 16) * n))" bridge
[ "$(con_json bridge .senders)" = 16 ] || br_fail "senders: $(con_json bridge .senders), expected 16" bridge
con_expect_in "$(con_ok bridge status)" "senders_untracked [0-9]+ .sender table full" "status"
sf_wait_line "$SF_TMP/bridge.err" "sender table full .16 records per worker." "$(br_pid bridge)" 10

# More untracked packets: still one line in the log.
br_listen listener2 "$ROCE_NET.2" -g "$group" -n $((nq * n)) --verify --timeout 30
br_send send2 "$IB_NET.2" -g "$group" -n "$n" --qps "$nq" --rate 20000
br_expect_listener listener2 $((nq * n)) "$nq"
con_wait_json bridge ".senders_untracked > $untracked" true
sleep 1.5 # the control thread looks once a second: give it the chance to log again
[ "$(grep -c "sender table full" "$SF_TMP/bridge.err")" = 1 ] ||
	br_fail "the full sender table was logged more than once" bridge

br_stop bridge
grep -q "^senders_untracked=[1-9]" "$SF_TMP/bridge.out" ||
	br_fail "no senders_untracked in the final counters" bridge
br_expect bridge IB rx_pkts $((2 * nq * n))
br_expect bridge IB fwd_pkts $((2 * nq * n))
br_expect bridge IB drops 0
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
