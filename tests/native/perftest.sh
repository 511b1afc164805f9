#!/bin/bash
# perftest's UD multicast (Debian's ib_send_bw, unmodified, default send mode) across the
# bridge, with perftest's Q_Key 0x11111111 (DEF_QKEY, multicast_resources.h: fixed) and
# an IB-native MGID:
#   ib2roce -m 'ff12:401b:ffff::1234=239.1.2.3#qkey=0x11111111'
# On IB a perftest pair (server sim_ib1, client sim_ib2) runs on ff12:401b:ffff::1234:
# both join through the SA with Q_Key 0x11111111, the group the bridge joined through
# the SA with the same Q_Key (rdma_cm would ask for 0x01234567: refused, sajoin.c). On
# RoCE a pair (sim_roce1, sim_roce2) runs on ::ffff:239.1.2.3 (perftest's -M, attach
# only). Both pairs run at once: each client's datagrams reach its own server directly
# and the other fabric through the bridge. perftest's client sends to the MGID its server
# gave (send_bw.c), so one pair cannot span the fabrics on different MGIDs; the
# same-128-bits case (an IPv6 group on RoCE) is the one that lets it.
#
# Accounting, exact: each client sent COUNT (its port's xmit_pkts); the bridge's ports
# received COUNT each (rcv_pkts: its QPs have perftest's Q_Key) and the bridge forwarded
# COUNT each way (side and group counters, its ports' xmit_pkts), dropped nothing as a
# loop (perftest's GRH hop limit is 255: the reference's rule dropped all of it); no port
# counts a Q_Key violation (the issue: every perftest packet was qkey_viol), the servers'
# ports included, where the bridged copies arrive with the Q_Key the bridge sent (how
# many of them a server's QP was still attached for depends on the two pairs' timing:
# the counters are logged); every server got its COUNT.
#
# Then the same 128 bits on both sides ('ff12:401b:ffff::1234#qkey=0x11111111', the IB
# MGID and a RoCEv2 IPv6 group): one perftest pair spans the bridge, server on one fabric
# and client on the other, both ways, and every count is exact (client xmit = bridge
# forwarded = server rcv_pkts = COUNT, nothing else anywhere).
#
# Then the issue's failure, reproduced: the same group without "#qkey" on RoCE: every
# datagram the RoCE client sends is dropped by the bridge's NIC for its Q_Key (the RoCE
# port's qkey_viol = COUNT) and the bridge counts nothing.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init native-perftest
sf_need ib_send_bw
out=$SF_TMP
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
count=200
spec='ff12:401b:ffff::1234=239.1.2.3#qkey=0x11111111'
mgid_ib=255:18:64:27:255:255:0:0:0:0:0:0:0:0:18:52 # ff12:401b:ffff::1234
mgid_roce=0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:3    # ::ffff:239.1.2.3

br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$spec"
chans=$(con_ok bridge channels)
[ "$(printf '%s\n' "$chans" | awk 'NR > 1 && $NF == "0x11111111"' | wc -l)" = 2 ] ||
	br_fail "the group's channels do not have perftest's Q_Key:
$chans" bridge
grep -q 'IB SA agent for joins with own Q_Keys\|SA agent for joins with own Q_Keys' "$SF_TMP/bridge.err" ||
	br_fail "the IB join did not go through the SA" bridge

# pair NAME SERVER_DEV CLIENT_DEV MGID: start a perftest pair (server first).
pair() {
	local name=$1 port

	port=$(sf_free_tcp_port)
	sf_start "$out/$name-server.txt" 60 ib_send_bw -d "$2" -c UD -g -n "$count" -p "$port" -M "$4"
	printf -v "${name}_srv" '%s' "$SF_PID"
	sf_wait_line "$out/$name-server.txt" 'Waiting for client' "$SF_PID" 20
	sf_start "$out/$name-client.txt" 60 ib_send_bw -d "$3" -c UD -g -n "$count" -p "$port" -M "$4" 127.0.0.1
	printf -v "${name}_cli" '%s' "$SF_PID"
}
# pair_end NAME: both exit 0 with perftest's multicast result.
pair_end() {
	local who pid v

	for who in client server; do
		v="${1}_$([ "$who" = client ] && echo cli || echo srv)"
		pid=${!v}
		sf_wait_exit "$pid"
		[ "$SF_RC" = 0 ] || br_fail "$1 $who exited with $SF_RC" bridge
		grep -q 'Send BW Multicast Test' "$out/$1-$who.txt" ||
			br_fail "$1 $who: no multicast test: $(cat "$out/$1-$who.txt")" bridge
	done
	grep -Eq '^ [0-9]+ +'"$count"' ' "$out/$1-client.txt" ||
		br_fail "$1 client: no result line of $count iterations" bridge
}

# The IB pair's port (LID in the SA's multicast range) and the RoCE pair's MGID.
pair ib sim_ib1 sim_ib2 "$mgid_ib"
pair roce sim_roce1 sim_roce2 "$mgid_roce"
pair_end ib
pair_end roce
grep -Eq '^ local address: LID 0xc[0-9a-f]{3} QPN 0xffffff' "$out/ib-server.txt" ||
	br_fail "IB server: no multicast LID from the SA" bridge
grep -q '^ MGID: 255:18:64:27:255:255:00:00:00:00:00:00:00:00:18:52' "$out/ib-client.txt" ||
	br_fail "IB client: not the native MGID" bridge

# The bridge forwarded every datagram of each client, once, to the other fabric.
forwarded() {
	[ "$(sf_counter sim_ib0 xmit_pkts)" = "$count" ] && [ "$(sf_counter sim_roce0 xmit_pkts)" = "$count" ]
}
t_wait_until 10 forwarded || true
br_stop bridge
br_expect bridge IB fwd_pkts "$count"
br_expect bridge RoCE fwd_pkts "$count"
br_expect bridge IB drop_loop 0
br_expect bridge RoCE drop_loop 0
br_expect_group bridge "$spec" ib_to_roce "$count"
br_expect_group bridge "$spec" roce_to_ib "$count"
br_conservation bridge sim_ib0 sim_roce0
sf_expect_counter sim_ib2 xmit_pkts "$count"
sf_expect_counter sim_roce2 xmit_pkts "$count"
sf_expect_counter sim_ib0 xmit_pkts "$count"
sf_expect_counter sim_roce0 xmit_pkts "$count"
# The bridge's QPs took every perftest datagram of their fabric (perftest's Q_Key; the
# NIC blocks the bridge's own copies, so nothing else arrives there).
sf_expect_counter sim_ib0 rcv_pkts "$count"
sf_expect_counter sim_roce0 rcv_pkts "$count"
for d in sim_ib0 sim_ib1 sim_ib2 sim_roce0 sim_roce1 sim_roce2; do
	sf_expect_counter "$d" qkey_viol 0
done
"$SIMFAB" counters >"$out/counters-1.txt" 2>&1
sf_log "counters after the two pairs:
$(cat "$out/counters-1.txt")"

# The same 128 bits on both fabrics (IB MGID ff12:401b:ffff::1234, RoCE IPv6 group
# ff12:401b:ffff::1234): one perftest pair spans the bridge, the server on one fabric and
# the client on the other, each way; the server gets nothing but what the bridge
# forwarded. perftest's client sends to its server's MGID and LID: from RoCE with the
# link-local RoCE v2 GID (-x 1: perftest refuses an IPv4-mapped source GID with a
# non-IPv4-mapped MGID, ctx_check_gid_compatibility); from IB with --dlid, the group's
# multicast LID (a RoCE server's LID is 0, which an IB switch does not forward).
sf_new_fabric SIMFABRIC perftest3
export SIMFABRIC
"$SIMFAB" reset >/dev/null
spec6='ff12:401b:ffff::1234#qkey=0x11111111'
br_bridge bridge3 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$spec6"
mlid=$(sed -n 's/.*IB joined ff12:401b:ffff::1234#qkey=0x11111111 (mlid \(0x[0-9a-f]*\)).*/\1/p' "$SF_TMP/bridge3.err")
[ -n "$mlid" ] || br_fail "no IB multicast LID in the bridge's log" bridge3
# span NAME SERVER_DEV CLIENT_DEV SERVER_ARGS CLIENT_ARGS
span() {
	local name=$1 port

	port=$(sf_free_tcp_port)
	# shellcheck disable=SC2086 # the extra arguments are words
	sf_start "$out/$name-server.txt" 60 ib_send_bw -d "$2" -c UD -g -n "$count" -p "$port" -M "$mgid_ib" $4
	printf -v "${name}_srv" '%s' "$SF_PID"
	sf_wait_line "$out/$name-server.txt" 'Waiting for client' "$SF_PID" 20
	# shellcheck disable=SC2086
	sf_start "$out/$name-client.txt" 60 ib_send_bw -d "$3" -c UD -g -n "$count" -p "$port" $5 127.0.0.1
	printf -v "${name}_cli" '%s' "$SF_PID"
	pair_end "$name"
}
span roce2ib sim_ib1 sim_roce2 "" "-x 1"
span ib2roce sim_roce1 sim_ib2 "-x 1" "--dlid $((mlid))"
br_stop bridge3
br_expect bridge3 IB fwd_pkts "$count"
br_expect bridge3 RoCE fwd_pkts "$count"
br_expect bridge3 IB drop_loop 0
br_expect_group bridge3 "$spec6" ib_to_roce "$count"
br_expect_group bridge3 "$spec6" roce_to_ib "$count"
br_conservation bridge3 sim_ib0 sim_roce0
# Each server received exactly what its client sent, through the bridge only.
sf_expect_counter sim_roce2 xmit_pkts "$count"
sf_expect_counter sim_ib2 xmit_pkts "$count"
sf_expect_counter sim_ib1 rcv_pkts "$count"
sf_expect_counter sim_roce1 rcv_pkts "$count"
for d in sim_ib0 sim_ib1 sim_ib2 sim_roce0 sim_roce1 sim_roce2; do
	sf_expect_counter "$d" qkey_viol 0
done
"$SIMFAB" counters >"$out/counters-3.txt" 2>&1
sf_log "counters after the pairs across the bridge:
$(cat "$out/counters-3.txt")"

# Without "#qkey": the bridge's RoCE QP has rdma_cm's Q_Key; perftest's datagrams are
# dropped by its NIC (qkey_viol), the bridge itself sees nothing.
sf_new_fabric SIMFABRIC perftest4
export SIMFABRIC
"$SIMFAB" reset >/dev/null
br_bridge bridge2 1 -d sim_ib0 -r sim_roce0 --workers 1 -m 239.1.2.3
pair roce2 sim_roce1 sim_roce2 "$mgid_roce"
pair_end roce2
br_stop bridge2
sf_expect_counter sim_roce0 qkey_viol "$count"
br_expect bridge2 RoCE rx_pkts 0
br_expect bridge2 RoCE drops 0
br_expect bridge2 IB fwd_pkts 0
sf_log "PASS"
