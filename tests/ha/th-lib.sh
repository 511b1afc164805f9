# shellcheck shell=bash
# Two "hosts" on one machine for the HA tests (tests/ha/twohost.sh, twohost-upgrade.sh,
# thirdhost.sh); sourced after ../lib/con.sh and ka-lib.sh (and certgen.sh for th_certs).
#
# Host A and host B are network namespaces, each with one interface (th-a-PID, th-b-PID,
# addresses of TEST-NET-2, 198.51.100.1 and .2/24) cabled to a switch: a Linux bridge
# in a third namespace (the other ends of the veth pairs are its ports). A host's cable
# pulled at the host (th_kill_host) leaves the other host's link up, as a real switch
# does (a veth pair between the two hosts would take both ends down: keepalived then puts
# both in FAULT). A partition between the hosts (th_partition) takes B's port off the
# switch: both hosts keep their carrier and stop hearing each other. Each host runs its
# own bridge (a on sim_ib0/sim_roce0, b on sim_ib3/sim_roce3: different devices of the
# one simulated fabric) and, for twohost.sh, its own keepalived (VRRP unicast, the
# settings of ha/keepalived.conf.example without track_process, which needs the initial
# network namespace). The bridges talk through the switch in TLS (--ha-listen,
# --ha-peer, --ha-psk). The fabric's event sockets stay in the test's namespace
# (SIMFABRIC_NETNS, docs/simfabric.md), where the senders and listeners run: a host's
# death kills what runs in its namespace; the fabric, as a real one would, stays.
#
# Skips (77) without network namespaces or root, and without keepalived unless
# TH_NO_KEEPALIVED is set (twohost upgrade: no keepalived).

TH_A=198.51.100.1
TH_B=198.51.100.2
TH_C=198.51.100.3
TH_PORT=7471

# th_init NAME: sf_init NAME, the namespaces, the switch and the cables, the keys, the wrappers that
# start a program in a host (TH_RUN_A, TH_RUN_B).
th_init() {
	KA=$(command -v keepalived || true)
	[ -n "$KA" ] || [ -n "${TH_NO_KEEPALIVED:-}" ] || {
		echo "keepalived not installed: skipped"
		exit 77
	}
	sf_init "$1"
	TH_NSA=ib2roce-tha-$$
	TH_NSB=ib2roce-thb-$$
	if ! ip netns add "$TH_NSA" 2>"$SF_TMP/netns.err"; then
		echo "no network namespaces ($(cat "$SF_TMP/netns.err")): skipped"
		exit 77
	fi
	ip netns add "$TH_NSB"
	TH_NSW=ib2roce-thw-$$
	ip netns add "$TH_NSW"
	# sf_cleanup's `simfab reset` leaves the fabric file of a fabric shared across
	# network namespaces behind: removed after it (sf_cleanup exits: in a subshell).
	trap th_exit EXIT
	ip -n "$TH_NSW" link add sw type bridge
	ip -n "$TH_NSW" link set sw up
	for h in a b; do
		ns=$TH_NSA
		[ "$h" = a ] || ns=$TH_NSB
		ip link add "th-$h-$$" netns "$ns" type veth peer name "port-$h" netns "$TH_NSW"
		ip -n "$TH_NSW" link set "port-$h" master sw
		ip -n "$TH_NSW" link set "port-$h" up
		ip -n "$ns" link set lo up
		ip -n "$ns" link set "th-$h-$$" up
	done
	ip -n "$TH_NSA" addr add "$TH_A/24" dev "th-a-$$"
	ip -n "$TH_NSB" addr add "$TH_B/24" dev "th-b-$$"
	mkdir -m 700 "$SF_TMP/keys"
	printf 'a:%s\nb:%s\n' "$(th_hexkey)" "$(th_hexkey)" >"$SF_TMP/keys/pair.psk"
	chmod 600 "$SF_TMP/keys/pair.psk"
	for h in a b; do
		ns=$TH_NSA
		[ "$h" = a ] || ns=$TH_NSB
		cat >"$SF_TMP/run-$h" <<EOW
#!/bin/sh
exec ip netns exec $ns env SIMFABRIC_NETNS=/proc/$$/ns/net "\$@"
EOW
		chmod +x "$SF_TMP/run-$h"
		cat >"$SF_TMP/ib2roce-$h" <<EOW
#!/bin/sh
exec "$SF_TMP/run-$h" "$IB2ROCE" "\$@"
EOW
		chmod +x "$SF_TMP/ib2roce-$h"
	done
}

th_hexkey() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# th_bridge NAME NGROUPS ARG...: bridge NAME (a or b) in its host with the TLS peer
# options; the rest as br_bridge. With TH_AUTH=cert, certificates instead of the key
# file: $SF_TMP/keys/NAME.pem and NAME.key, the CA ca.pem (th_certs), the peer's name
# checked against --ha-peer's address (its certificate's IP subjectAltName).
th_bridge() {
	local name=$1 n=$2 me peer k=$SF_TMP/keys

	shift 2
	if [ "$name" = a ]; then me=$TH_A peer=$TH_B; else me=$TH_B peer=$TH_A; fi
	if [ "${TH_AUTH:-psk}" = cert ]; then
		set -- --ha-cert "$k/$name.pem" --ha-key "$k/$name.key" --ha-ca "$k/ca.pem" "$@"
	else
		set -- --ha-psk "$k/pair.psk" --ha-psk-identity "$name" "$@"
	fi
	IB2ROCE=$SF_TMP/ib2roce-$name br_bridge "$name" "$n" --ha-listen "$me:$TH_PORT" \
		--ha-peer "$peer:$TH_PORT" "$@"
}

# th_certs: certificates for TH_AUTH=cert (tests/ha/certgen.sh): the CA ca, a.pem and
# b.pem (named bridge-a/bridge-b and their host's address).
th_certs() {
	cg_ca "$SF_TMP/keys" ca
	cg_host "$SF_TMP/keys" a ca bridge-a "$TH_A"
	cg_host "$SF_TMP/keys" b ca bridge-b "$TH_B"
}

# th_host_c: a third host C on the switch (namespace TH_NSC, address TH_C, interface
# th-c-PID): not in the pair; TH_RUN_C runs a program there.
th_host_c() {
	TH_NSC=ib2roce-thc-$$
	ip netns add "$TH_NSC"
	ip link add "th-c-$$" netns "$TH_NSC" type veth peer name "port-c" netns "$TH_NSW"
	ip -n "$TH_NSW" link set "port-c" master sw
	ip -n "$TH_NSW" link set "port-c" up
	ip -n "$TH_NSC" link set lo up
	ip -n "$TH_NSC" link set "th-c-$$" up
	ip -n "$TH_NSC" addr add "$TH_C/24" dev "th-c-$$"
	# shellcheck disable=SC2034 # used by the tests that source this file
	TH_RUN_C="ip netns exec $TH_NSC"
}

# th_partition on|off: host B's switch port off the switch (both hosts keep their link
# and stop hearing each other), or back on it.
th_partition() {
	if [ "$1" = on ]; then
		ip -n "$TH_NSW" link set "port-b" nomaster
	else
		ip -n "$TH_NSW" link set "port-b" master sw
	fi
}

# th_kill_host NAME: every process of host NAME's namespace killed at once (SIGKILL),
# then its link down (the host is gone from the network; the switch stays). Sets
# TH_KILLED (HH:MM:SS.mmm UTC, just after the kill) and TH_KILLED_S (seconds since the
# epoch, microseconds: bash's clock read just before the kill, no process started).
th_kill_host() {
	local ns=$TH_NSA ifc=th-a-$$ pids

	[ "$1" = a ] || { ns=$TH_NSB ifc=th-b-$$; }
	pids=$(ip netns pids "$ns" | tr '\n' ' ')
	# shellcheck disable=SC2034 # used by the tests that source this file
	TH_KILLED_S=$EPOCHREALTIME
	# shellcheck disable=SC2086 # a list of pids
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	# When they died (UTC, ms): the takeover's steps count from here (tests/ha/twohost.sh).
	# shellcheck disable=SC2034 # used by the tests that source this file
	TH_KILLED=$(date -u +%T.%3N)
	ip -n "$ns" link set "$ifc" down
}

# th_exit: the exit trap: th_cleanup, sf_cleanup (which exits: in a subshell), th_rmfab;
# exits with the test's status.
th_exit() {
	local rc=$? # first: a bare `local rc` would make $? 0 and every failure a pass

	set +e
	# TH_KEEP_LOGS=DIR: the bridges' and keepalived's logs copied there (bench/ha-hostdeath.sh).
	[ -z "${TH_KEEP_LOGS:-}" ] || cp "$SF_TMP"/*.err "$SF_TMP"/ka?.out "$SF_TMP"/ka?.trace "$SF_TMP"/*.[rs]trace "$TH_KEEP_LOGS"/ 2>/dev/null
	th_cleanup
	(exit "$rc") # sf_cleanup exits with the status it finds
	(sf_cleanup)
	rc=$?
	th_rmfab
	exit "$rc"
}

# th_rmfab: the test's fabric files gone.
th_rmfab() {
	local f

	for f in $SF_FABRICS; do
		rm -rf "/dev/shm/simfabric.$f" "/dev/shm/simfabric.$f".*
	done
}

# th_cleanup: keepalived stopped, namespaces gone. Returns the status it was called with.
th_cleanup() {
	local rc=$? ns pids

	! declare -F ka_stop >/dev/null || ka_stop
	for ns in "$TH_NSA" "$TH_NSB" "$TH_NSW" ${TH_NSC:+"$TH_NSC"}; do
		pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
		# shellcheck disable=SC2086 # a list of pids
		[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	return "$rc"
}

# th_ka_start N BRIDGE PART:VRID:PRIO...: keepalived N (1 in host A for bridge a, 2 in
# host B for bridge b), one VRRP instance per partition, unicast to the other host
# (ka_launch of ../lib/ka.sh).
th_ka_start() {
	local n=$1 b=$2

	shift 2
	if [ "$n" = 1 ]; then
		ka_launch 1 "$TH_NSA" "th-a-$$" "$TH_A" "$TH_B" 0 "$SF_TMP/$b.sock" "$@"
	else
		ka_launch "$n" "$TH_NSB" "th-b-$$" "$TH_B" "$TH_A" 0 "$SF_TMP/$b.sock" "$@"
	fi
}
