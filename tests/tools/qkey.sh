#!/bin/bash
# Q_Keys of mcsender and mclisten (issue 25): a group's #qkey= (or --qkey, the default of
# the groups that follow) is the listener's QP Q_Key and the Q_Key of each send work
# request, on one fabric side (argument: ib or roce), no bridge. A matching non-default
# Q_Key exchanges every datagram; a listener with another Q_Key than the sender's
# receives nothing and its port counts each datagram as qkey_viol (simfab counters), in
# both directions of the mismatch. Groups with two Q_Keys in one listener go on two QPs
# (one Q_Key each) and both receive. mcsender refuses a controlled Q_Key (high bit): a
# work request cannot carry it.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

fabric=${1:?usage: qkey.sh ib|roce}
sf_init "tools-qkey-$fabric"
n=100
if [ "$fabric" = ib ]; then
	tx=(-d sim_ib1) rx=(-d sim_ib2) rxdev=sim_ib2
else
	tx=(-r sim_roce1) rx=(-r sim_roce2) rxdev=sim_roce2
fi
viol=0 # the listener port's qkey_viol so far

# viol_is N: the listener port's qkey_viol is N.
viol_is() {
	[ "$(sf_counter "$rxdev" qkey_viol)" = "$1" ]
}

# send_to NAME ARG...: mcsender to the end, n packets to each group it is given.
send_to() {
	local name=$1

	shift
	tools_send "$name" "${tx[@]}" -n "$n" --rate 20000 "$@"
}

# 1. The same non-default Q_Key both ends (#qkey= on one, --qkey on the other).
tools_listen match "${rx[@]}" -m '239.1.2.3#qkey=0x11111111' -n "$n"
send_to match_tx --qkey 0x11111111 -m 239.1.2.3
tools_end match
tools_expect match received="$n"
sf_expect_counter "$rxdev" qkey_viol "$viol"

# 2. The listener's Q_Key is not the sender's (rdma_cm's default): nothing received,
# every datagram a qkey_viol at the listener's port.
tools_listen mismatch1 "${rx[@]}" --qkey 0x22222222 -m 239.1.2.4
send_to mismatch1_tx -m 239.1.2.4
viol=$((viol + n))
t_wait_until 10 viol_is "$viol" || true
tools_stop mismatch1
tools_expect mismatch1 received=0
sf_expect_counter "$rxdev" qkey_viol "$viol"

# 3. The sender's Q_Key is not the listener's (default): the same.
tools_listen mismatch2 "${rx[@]}" -m 239.1.2.5
send_to mismatch2_tx -m '239.1.2.5#qkey=0x33333333'
viol=$((viol + n))
t_wait_until 10 viol_is "$viol" || true
tools_stop mismatch2
tools_expect mismatch2 received=0
sf_expect_counter "$rxdev" qkey_viol "$viol"

# 4. Two Q_Keys in one listener (two QPs), the side's own key (ibqkey=/roceqkey=) and
# the other side's ignored on this fabric.
if [ "$fabric" = ib ]; then
	k1='ibqkey=0x44444444,roceqkey=0x1' k2='roceqkey=0x55555555'
else
	k1='roceqkey=0x44444444,ibqkey=0x1' k2='ibqkey=0x55555555'
fi
tools_listen two "${rx[@]}" -m "239.1.2.6#$k1" -m "239.1.2.7#$k2" -n $((2 * n))
send_to two_tx -m '239.1.2.6#qkey=0x44444444' -m 239.1.2.7
tools_end two
tools_expect two received=$((2 * n))
sf_expect_counter "$rxdev" qkey_viol "$viol"

# 5. A controlled Q_Key is refused by mcsender, the group named.
rc=0
timeout 20 "$MCSENDER" "${tx[@]}" -n 1 -m '239.1.2.8#qkey=0x80010000' >"$SF_TMP/ctl.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || sf_fail "mcsender sent with a controlled Q_Key" "$SF_TMP/ctl.out"
grep -q "239.1.2.8#qkey=0x80010000: Q_Key 0x80010000 is a controlled Q_Key (high bit set)" \
	"$SF_TMP/ctl.out" || sf_fail "mcsender: no message naming the controlled Q_Key" "$SF_TMP/ctl.out"
[ "$(wc -l <"$SF_TMP/ctl.out")" = 1 ] || sf_fail "mcsender: more than one line" "$SF_TMP/ctl.out"

# 6. w= (the bridge's weight of a group) means nothing to the tools: refused, not ignored.
for p in "$MCSENDER" "$MCLISTEN"; do
	rc=0
	timeout 20 "$p" "${tx[@]}" -m '239.1.2.9#w=2' >"$SF_TMP/w.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || sf_fail "$p: w=2: exit $rc, expected 2" "$SF_TMP/w.out"
	grep -q "group '239.1.2.9#w=2': w= (the bridge's weight) is not an option of ${p##*/}" \
		"$SF_TMP/w.out" || sf_fail "$p: w= not refused by name" "$SF_TMP/w.out"
done

sf_log "PASS"
