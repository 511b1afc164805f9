#!/bin/bash
# qperf from Debian's qperf package, unmodified: ud_bw and ud_lat in event mode (-cp 0:
# the processes wait in ibv_get_cq_event, and a timed run ends with SIGALRM, whose
# handler qperf installs without SA_RESTART: the wait must return -1/EINTR, as rdma-core
# does, or the run never ends). Server on sim_ib1, client on sim_ib2, qperf's own
# synchronization over TCP on 127.0.0.1.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init qperf
sf_need qperf
out=$SF_TMP

port=$(sf_free_tcp_port)

sf_start "$out/server.txt" 120 qperf -lp "$port"
srv=$SF_PID
sf_wait_listen "$srv" "$port" "$out/server.txt"

# Each test runs 1 s; qperf's own timeout (5 s by default) fails a run whose ends do not
# stop in time.
rc=0
sf_tool 90 qperf 127.0.0.1 -lp "$port" -li sim_ib2:1 -ri sim_ib1:1 -cp 0 -t 1 -vu \
	ud_bw ud_lat >"$out/client.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || sf_fail "qperf client exited with $rc" "$out/client.txt" "$out/server.txt"
f=$out/client.txt
grep -q '^ud_bw:$' "$f" || sf_fail "no ud_bw result" "$f"
grep -q '^ud_lat:$' "$f" || sf_fail "no ud_lat result" "$f"
grep -Eq '^ +recv_bw += +[0-9.]+ [KMG]B/sec$' "$f" || sf_fail "ud_bw: no receive bandwidth" "$f"
grep -Eq '^ +latency += +[0-9.]+ (ns|us|ms)$' "$f" || sf_fail "ud_lat: no latency" "$f"
if grep -Eq 'failed|timed out|error' "$f" "$out/server.txt"; then
	sf_fail "qperf reported an error" "$f" "$out/server.txt"
fi
for d in sim_ib1 sim_ib2; do
	[ "$(sf_counter "$d" xmit_pkts)" -gt 0 ] || sf_fail "$d sent nothing"
	[ "$(sf_counter "$d" rcv_pkts)" -gt 0 ] || sf_fail "$d received nothing"
done
sf_log "PASS"
