#!/bin/bash
# perftest's UD multicast bandwidth test on RoCE, unmodified. On Ethernet perftest joins
# nothing (no SA: send_bw.c set_mcast_group calls join_multicast_group on IB only); both
# sides attach their QP to the MGID with ibv_attach_mcast, the server sends the MGID as
# its address and the client sends to it through an address handle with that GID.
#
# Before the run perftest compares the GID types of the two addresses it exchanged
# (perftest_communication.c ctx_check_gid_compatibility: IPv4-mapped or not). With the
# defaults it picks the RoCE v2 IPv4 GID (index 3) while its MGID (MCG_GID,
# ff01:0:2:c985::) is not IPv4-mapped: it refuses with "Found Incompatibility issue
# with GID types" on a real mlx5 host as well. Two ways that run, both checked here:
# a non-IPv4-mapped source GID (-x 1, the RoCE v2 link-local GID) with the default
# MGID, and an IPv4-mapped MGID (-M ::ffff:239.1.2.3, perftest's byte notation).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init perftest-mcast-roce
sf_need ib_send_bw
out=$SF_TMP
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
count=100

# run NAME ARGS...: one server/client pair; both must exit 0. Prints nothing.
run() {
	local name=$1 port srv cli who pid
	shift
	port=$(sf_free_tcp_port)
	sf_start "$out/$name-server.txt" 60 ib_send_bw -d sim_roce1 -c UD -g -n "$count" -p "$port" "$@"
	srv=$SF_PID
	sf_wait_line "$out/$name-server.txt" 'Waiting for client' "$srv" 20
	sf_start "$out/$name-client.txt" 60 ib_send_bw -d sim_roce2 -c UD -g -n "$count" -p "$port" "$@" 127.0.0.1
	cli=$SF_PID
	for who in client server; do
		if [ "$who" = client ]; then pid=$cli; else pid=$srv; fi
		sf_wait_exit "$pid"
		[ "$SF_RC" = 0 ] || sf_fail "$name: $who exited with $SF_RC" \
			"$out/$name-client.txt" "$out/$name-server.txt"
		grep -q 'Send BW Multicast Test' "$out/$name-$who.txt" ||
			sf_fail "$name: $who: no multicast test" "$out/$name-$who.txt"
	done
	grep -Eq '^ [0-9]+ +'"$count"' ' "$out/$name-client.txt" ||
		sf_fail "$name: client: no result line" "$out/$name-client.txt"
}

run linklocal -x 1
grep -q '^ MGID: 255:01:00:00:00:02:201:133:00:00:00:00:00:00:00:00' "$out/linklocal-client.txt" ||
	sf_fail "linklocal: not perftest's default MGID" "$out/linklocal-client.txt"
run v4mapped -M 0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:3
grep -q '^ MGID: 00:00:00:00:00:00:00:00:00:00:255:255:239:01:02:03' "$out/v4mapped-client.txt" ||
	sf_fail "v4mapped: not the MGID asked for" "$out/v4mapped-client.txt"

# Every datagram of both runs reached the server's port through its attach.
sf_expect_counter sim_roce2 xmit_pkts $((2 * count))
sf_expect_counter sim_roce1 rcv_pkts $((2 * count))
sf_expect_counter sim_roce1 no_member 0
sf_expect_counter sim_roce1 out_of_buffer 0
"$SIMFAB" groups >"$out/groups.txt" 2>&1
grep -q '^no multicast groups' "$out/groups.txt" || sf_fail "groups left after the detach" "$out/groups.txt"
sf_log "PASS"
