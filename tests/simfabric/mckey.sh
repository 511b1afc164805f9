#!/bin/bash
# mckey from Debian's rdmacm-utils, unmodified, on the simulated fabric: receivers on
# devices 1 and 2 of a segment, a sender on device 3; every message must arrive.
#
# Usage: mckey.sh KIND MODE
#   KIND  ib    sim_ib1..3 (IPoIB 198.18.0.2-4), MGID ff12:4001:ffff::f01:203
#         roce  sim_roce1..3 (198.19.0.2-4), MGID ::ffff:239.1.2.3
#   MODE  plain     the sender joins as a full member: its own QP is attached and gets
#                   the loopback copies, which find no receive posted (out_of_buffer)
#         sendonly  the sender joins send-only (-o): no attach, no loopback
#         noloop    the sender's QP blocks its own loopback (-l,
#                   IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

usage() {
	echo "usage: $0 ib|roce plain|sendonly|noloop" >&2
	exit 2
}

[ $# = 2 ] || usage
kind=$1
mode=$2
case $kind in
ib)
	net=198.18.0
	dev=sim_ib
	mgid='ff12:4001:ffff::f01:203'
	mlid='0xc[0-9a-f]{3}'
	;;
roce)
	net=198.19.0
	dev=sim_roce
	mgid='::ffff:239.1.2.3'
	mlid='0x0'
	;;
*)
	usage
	;;
esac
case $mode in
plain) sflags="" ;;
sendonly) sflags="-o" ;;
noloop) sflags="-l" ;;
*) usage ;;
esac

sf_init "mckey-$kind-$mode"
sf_need mckey
out=$SF_TMP
group=239.1.2.3
count=20
joined="^mckey: joined dgid: ${mgid//./\\.} mlid $mlid sl 0$"

# Receivers first; each must have joined before the sender starts.
sf_start "$out/recv1.txt" 60 mckey -m "$group" -b "$net.2" -C "$count"
r1=$SF_PID
sf_start "$out/recv2.txt" 60 mckey -m "$group" -b "$net.3" -C "$count"
r2=$SF_PID
sf_wait_line "$out/recv1.txt" 'joined' "$r1" 20
sf_wait_line "$out/recv2.txt" 'joined' "$r2" 20
grep -Eq -- "$joined" "$out/recv1.txt" || sf_fail "receiver 1: wrong join event" "$out/recv1.txt"
grep -Eq -- "$joined" "$out/recv2.txt" || sf_fail "receiver 2: wrong join event" "$out/recv2.txt"

# The sender (mckey sleeps 3 s after joining, then sends): look at the group meanwhile.
# shellcheck disable=SC2086
sf_start "$out/send.txt" 30 mckey -m "$group" -b "$net.4" -s -C "$count" $sflags
s=$SF_PID
sf_wait_line "$out/send.txt" 'joined' "$s" 20
grep -Eq -- "$joined" "$out/send.txt" || sf_fail "sender: wrong join event" "$out/send.txt"
"$SIMFAB" groups >"$out/groups.txt" 2>&1 || sf_fail "simfab groups failed" "$out/groups.txt"
grep -Fq -- " $mgid " "$out/groups.txt" || sf_fail "simfab groups: no group $mgid" "$out/groups.txt"
for d in "${dev}1" "${dev}2"; do
	grep -Eq "[[:space:]]qp[[:space:]]+${d}[[:space:]]" "$out/groups.txt" ||
		sf_fail "$d: receiver QP not attached" "$out/groups.txt"
	grep -Eq "[[:space:]]join[[:space:]]+${d}[[:space:]]+-[[:space:]]+full[[:space:]]+active[[:space:]]" \
		"$out/groups.txt" || sf_fail "$d: no active full-member join" "$out/groups.txt"
done
if [ "$mode" = sendonly ]; then
	jtype=send-only
	if grep -Eq "[[:space:]]qp[[:space:]]+${dev}3[[:space:]]" "$out/groups.txt"; then
		sf_fail "send-only sender's QP is attached" "$out/groups.txt"
	fi
else
	jtype=full
	grep -Eq "[[:space:]]qp[[:space:]]+${dev}3[[:space:]]" "$out/groups.txt" ||
		sf_fail "full-member sender's QP is not attached" "$out/groups.txt"
fi
grep -Eq "[[:space:]]join[[:space:]]+${dev}3[[:space:]]+-[[:space:]]+${jtype}[[:space:]]+active[[:space:]]" \
	"$out/groups.txt" || sf_fail "${dev}3: no active $jtype join" "$out/groups.txt"

sf_wait_exit "$s"
[ "$SF_RC" = 0 ] || sf_fail "sender exited with $SF_RC" "$out/send.txt"
grep -q '^data transfers complete$' "$out/send.txt" || sf_fail "sender did not send" "$out/send.txt"

# Every receiver gets every message (mckey waits for all of them) and exits 0.
for r in 1 2; do
	if [ "$r" = 1 ]; then pid=$r1; else pid=$r2; fi
	sf_wait_line "$out/recv$r.txt" '^data transfers complete$' "$pid" 15
	sf_wait_exit "$pid"
	[ "$SF_RC" = 0 ] || sf_fail "receiver $r exited with $SF_RC" "$out/recv$r.txt"
	grep -q '^return status 0$' "$out/recv$r.txt" || sf_fail "receiver $r failed" "$out/recv$r.txt"
done

# The port counters agree: the sender's port sent every message once, each receiver's
# port delivered every message once and dropped none. On the sender's own port only a
# full member without -l gets the loopback copies (its QP has no receive posted).
sf_expect_counter "${dev}3" xmit_pkts "$count"
sf_expect_counter "${dev}3" rcv_pkts 0
sf_expect_counter "${dev}1" rcv_pkts "$count"
sf_expect_counter "${dev}2" rcv_pkts "$count"
sf_expect_counter "${dev}1" out_of_buffer 0
sf_expect_counter "${dev}2" out_of_buffer 0
if [ "$mode" = plain ]; then
	sf_expect_counter "${dev}3" out_of_buffer "$count"
else
	sf_expect_counter "${dev}3" out_of_buffer 0
fi
for d in "${dev}1" "${dev}2" "${dev}3"; do
	sf_expect_counter "$d" no_member 0
	sf_expect_counter "$d" qkey_viol 0
done
sf_log "PASS"
