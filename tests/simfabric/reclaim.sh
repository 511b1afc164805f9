#!/bin/bash
# A process killed with SIGKILL does not wedge the fabric: its QPs, joins and files are
# reclaimed by `simfab reclaim` and by the next process that attaches, and the group
# works again for new receivers on the same ports.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init reclaim
sf_need mckey
out=$SF_TMP
group=239.1.2.5
count=20

# objects_of PID: the fabric's per-object files (rings, receive memory) owned by PID.
objects_of() {
	local f

	for f in "/dev/shm/simfabric.$SIMFABRIC".*".$1".*; do
		if [ -e "$f" ]; then
			printf '%s\n' "$f"
		fi
	done
}

# listed PID FILE: does the simfab groups output FILE name PID in its PID column?
listed() {
	awk -v pid="$1" '{ for (i = 1; i <= NF; i++) if ($i == pid) found = 1 } END { exit !found }' "$2"
}

# send_and_receive TAG IP DEV: a receiver on IP and a sender on sim_ib3; all arrive.
send_and_receive() {
	local tag=$1 ip=$2 rpid spid

	sf_start "$out/$tag-recv.txt" 60 mckey -m "$group" -b "$ip" -C "$count"
	rpid=$SF_PID
	sf_wait_line "$out/$tag-recv.txt" 'joined' "$rpid" 20
	sf_start "$out/$tag-send.txt" 30 mckey -m "$group" -b 198.18.0.4 -s -C "$count"
	spid=$SF_PID
	sf_wait_exit "$spid"
	[ "$SF_RC" = 0 ] || sf_fail "$tag: sender exited with $SF_RC" "$out/$tag-send.txt"
	sf_wait_line "$out/$tag-recv.txt" '^data transfers complete$' "$rpid" 15
	sf_wait_exit "$rpid"
	[ "$SF_RC" = 0 ] || sf_fail "$tag: receiver exited with $SF_RC" "$out/$tag-recv.txt"
}

# 1. A receiver on sim_ib1 joins, has 20 receives posted, and is killed.
sf_start "$out/victim1.txt" 60 mckey -m "$group" -b 198.18.0.2 -C "$count"
t=$SF_PID
sf_wait_line "$out/victim1.txt" 'joined' "$t" 20
v1=$(sf_child "$t")
"$SIMFAB" groups >"$out/groups1.txt" 2>&1
listed "$v1" "$out/groups1.txt" || sf_fail "victim $v1 not in simfab groups" "$out/groups1.txt"
[ -n "$(objects_of "$v1")" ] || sf_fail "victim $v1 has no object files"
kill -KILL "$v1"
sf_wait_exit "$t"
[ "$SF_RC" = 137 ] || sf_fail "victim exited with $SF_RC, expected 137 (SIGKILL)" "$out/victim1.txt"

# 2. simfab reclaim releases it: not in the groups, no files left.
"$SIMFAB" reclaim >"$out/reclaim.txt" 2>&1 || sf_fail "simfab reclaim failed" "$out/reclaim.txt"
grep -qx 'reclaimed 1 dead process' "$out/reclaim.txt" ||
	sf_fail "simfab reclaim did not reclaim exactly the victim" "$out/reclaim.txt"
"$SIMFAB" groups >"$out/groups2.txt" 2>&1
if listed "$v1" "$out/groups2.txt"; then
	sf_fail "victim $v1 still in simfab groups after reclaim" "$out/groups2.txt"
fi
left=$(objects_of "$v1")
[ -z "$left" ] || sf_fail "victim $v1's files left after reclaim: $left"

# 3. The group works again on the same port. A QP of the victim still attached would
# have taken its 20 posted receives' worth of messages: sim_ib1 counts each once.
send_and_receive after-reclaim 198.18.0.2
sf_expect_counter sim_ib1 rcv_pkts "$count"
sf_expect_counter sim_ib1 out_of_buffer 0

# 4. No simfab this time: the next process that attaches reclaims the dead one.
sf_start "$out/victim2.txt" 60 mckey -m "$group" -b 198.18.0.3 -C "$count"
t=$SF_PID
sf_wait_line "$out/victim2.txt" 'joined' "$t" 20
v2=$(sf_child "$t")
kill -KILL "$v2"
sf_wait_exit "$t"
[ -n "$(objects_of "$v2")" ] || sf_fail "victim $v2's files vanished before anyone attached"
send_and_receive after-attach 198.18.0.3
left=$(objects_of "$v2")
[ -z "$left" ] || sf_fail "victim $v2's files left after a new process attached: $left"
"$SIMFAB" groups >"$out/groups3.txt" 2>&1
if listed "$v2" "$out/groups3.txt"; then
	sf_fail "victim $v2 still in simfab groups" "$out/groups3.txt"
fi
sf_expect_counter sim_ib2 rcv_pkts "$count"
sf_expect_counter sim_ib2 out_of_buffer 0
sf_log "PASS"
