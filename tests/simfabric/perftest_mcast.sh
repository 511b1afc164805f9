#!/bin/bash
# perftest's UD multicast bandwidth test on IB, unmodified: server and client join the
# group through the simulated SA (libibumad: MCMemberRecord Set on QP1 of the SM's LID,
# Delete at the end), attach with the MLID it answered and exchange 200 datagrams.
# Default options: perftest's extended-QP send path (ibv_wr_*) as in perftest.sh.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init perftest-mcast
sf_need ib_send_bw
out=$SF_TMP
# ib_send_bw leaks its own buffers and never destroys some of its verbs objects: in the
# sanitizer build only the leak check is off for it (memory errors still fail the test).
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
count=200
# perftest's out-of-band TCP port: one per test run.
port=$((20000 + $$ % 20000))
args=(-c UD -g -n "$count" -p "$port")

sf_start "$out/server.txt" 60 ib_send_bw -d sim_ib1 "${args[@]}"
srv=$SF_PID
sf_wait_line "$out/server.txt" 'Waiting for client' "$srv" 20
sf_start "$out/client.txt" 60 ib_send_bw -d sim_ib2 "${args[@]}" 127.0.0.1
cli=$SF_PID
for who in client server; do
	if [ "$who" = client ]; then pid=$cli; else pid=$srv; fi
	sf_wait_exit "$pid"
	[ "$SF_RC" = 0 ] || sf_fail "$who exited with $SF_RC" "$out/client.txt" "$out/server.txt"
	grep -q 'Send BW Multicast Test' "$out/$who.txt" || sf_fail "$who: no multicast test" "$out/$who.txt"
done
# The server's multicast address is the SA's answer: an MLID of the multicast range.
grep -Eq '^ local address: LID 0xc[0-9a-f]{3} QPN 0xffffff' "$out/server.txt" ||
	sf_fail "server: no multicast LID from the SA" "$out/server.txt"
grep -Eq '^ [0-9]+ +'"$count"' ' "$out/client.txt" || sf_fail "client: no result line" "$out/client.txt"

# Every datagram reached the server's port, a member of the group through its SA join
# (without it the copies would count as no_member); the SA leave removed the group.
sf_expect_counter sim_ib2 xmit_pkts "$count"
sf_expect_counter sim_ib1 rcv_pkts "$count"
sf_expect_counter sim_ib1 no_member 0
sf_expect_counter sim_ib1 out_of_buffer 0
"$SIMFAB" groups >"$out/groups.txt" 2>&1
grep -q '^no multicast groups' "$out/groups.txt" || sf_fail "groups left after the SA leave" "$out/groups.txt"
sf_log "PASS"
