#!/bin/bash
# The fabric's files in /dev/shm hold every process's packets: they are private to the
# user (0600), or shared with the group SIMFABRIC_GROUP names (0660, that group); an
# unknown group is refused with a message and creates nothing. The simulated sysfs is
# world-readable like sysfs, its lock/state file private like the fabric.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init fabperms
sf_need mckey
out=$SF_TMP

# check_modes MODE GROUP: the fabric, its object files and the sysfs state file have
# MODE and GROUP (a receiver is running: CQ ring, receive ring, receive memory).
check_modes() {
	local f n=0 kinds=""

	for f in "/dev/shm/simfabric.$SIMFABRIC" "/dev/shm/simfabric.$SIMFABRIC".*.*.* \
		"/dev/shm/simfabric.$SIMFABRIC.sys/.state"; do
		[ -f "$f" ] || continue
		[ "$(stat -c %a "$f")" = "$1" ] || sf_fail "$f has mode $(stat -c %a "$f"), expected $1"
		[ "$(stat -c %G "$f")" = "$2" ] || sf_fail "$f has group $(stat -c %G "$f"), expected $2"
		n=$((n + 1))
		kinds="$kinds ${f#/dev/shm/simfabric."$SIMFABRIC".}"
	done
	# The fabric, .state, and at least a cq, an rq and a mem file.
	[ "$n" -ge 5 ] || sf_fail "only $n fabric files:$kinds"
}

# run_receiver TAG: a receiver with its objects, the modes checked while it runs.
run_receiver() {
	local r

	sf_start "$out/recv-$1.txt" 30 mckey -m 239.1.2.3 -b 198.18.0.2 -C 1
	r=$SF_PID
	sf_wait_line "$out/recv-$1.txt" 'joined' "$r" 20
	check_modes "$2" "$3"
	kill -TERM "$(sf_child "$r")" 2>/dev/null || true
	sf_wait_exit "$r"
}

umask 022
run_receiver private 600 "$(id -gn)"

# Shared with a group: the user's primary group (a group the test may give files to).
"$SIMFAB" reset
SIMFABRIC_GROUP=$(id -gn) run_receiver group 660 "$(id -gn)"
"$SIMFAB" reset
SIMFABRIC_GROUP=$(id -g) run_receiver gid 660 "$(id -gn)"

# An unknown group: refused, nothing created.
"$SIMFAB" reset
if SIMFABRIC_GROUP=no-such-group-simfab "$SIMFAB" devices >"$out/bad.txt" 2>&1; then
	sf_fail "simfab ran with an unknown SIMFABRIC_GROUP" "$out/bad.txt"
fi
grep -q "SIMFABRIC_GROUP 'no-such-group-simfab': no such group" "$out/bad.txt" ||
	sf_fail "no message for the unknown group" "$out/bad.txt"
[ ! -e "/dev/shm/simfabric.$SIMFABRIC" ] || sf_fail "the fabric was created with an unknown group"
sf_log "PASS"
