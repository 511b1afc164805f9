#!/bin/bash
# simfab exec -n NS: a program run in the fabric's network namespace finds the character
# devices of a host with the simulated devices, /dev/infiniband/umad<N>, issm<N> and
# uverbs<N> (the kernel's major 231 and minors), in a mount namespace of its own: the
# host's /dev is not changed. Needs root (namespaces); skipped otherwise.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"

sf_init devnodes
sf_need ip ibstat
out=$SF_TMP
ns="sfdev-$$"
if [ "$(id -u)" != 0 ] || ! "$SIMFAB" netns "$ns" >"$out/netns.txt" 2>&1; then
	sf_log "SKIP: simfab netns needs root and network namespaces"
	cat "$out/netns.txt" >&2 2>/dev/null || true
	exit 77
fi
# The namespace goes first; sf_cleanup then exits with the test's status.
trap 'rc=$?; ip netns delete "$ns" 2>/dev/null; (exit "$rc"); sf_cleanup' EXIT
had_dir=0
[ -d /dev/infiniband ] && had_dir=1

# shellcheck disable=SC2016 # expanded by the inner shell
"$SIMFAB" exec -n "$ns" sh -c 'stat -c "%n %F %t:%T %a" /dev/infiniband/*' >"$out/nodes.txt" 2>&1 ||
	sf_fail "simfab exec failed" "$out/nodes.txt"
[ "$(wc -l <"$out/nodes.txt")" = 24 ] || sf_fail "not 24 nodes (8 devices x 3)" "$out/nodes.txt"
# stat prints major:minor in hex: 231 = e7; issm at 64 + N, uverbs at 192 + N.
for n in 0 3 7; do
	grep -qxF "/dev/infiniband/umad$n character special file e7:$n 600" "$out/nodes.txt" ||
		sf_fail "umad$n" "$out/nodes.txt"
	grep -qxF "/dev/infiniband/issm$n character special file e7:$(printf %x $((64 + n))) 600" \
		"$out/nodes.txt" || sf_fail "issm$n" "$out/nodes.txt"
	grep -qxF "/dev/infiniband/uverbs$n character special file e7:$(printf %x $((192 + n))) 666" \
		"$out/nodes.txt" || sf_fail "uverbs$n" "$out/nodes.txt"
done

# The fabric's programs run there (the simulated libraries come with the environment)
# and see the namespace's netdevs.
"$SIMFAB" exec -n "$ns" sh -c "$SF_EXEC" sf_tool ibstat -l >"$out/ibstat.txt" 2>&1 ||
	sf_fail "ibstat in the namespace failed" "$out/ibstat.txt"
grep -qx sim_ib0 "$out/ibstat.txt" || sf_fail "ibstat -l in the namespace" "$out/ibstat.txt"
"$SIMFAB" exec -n "$ns" ls /sys/class/net >"$out/net.txt" 2>&1 || sf_fail "ls /sys/class/net" "$out/net.txt"
grep -qx ib0 "$out/net.txt" || sf_fail "no ib0 in the namespace's sysfs" "$out/net.txt"
# A RoCE netdev has the port's IPv6 address, and the kernel's link-local address from
# the MAC is the port's GID 0 (fe80::ff:fe00:102 for sim_roce1, 02:00:00:00:01:02).
ip -n "$ns" -6 -br addr show dev eth1 >"$out/eth1.txt" 2>&1 || sf_fail "ip -6 addr eth1" "$out/eth1.txt"
grep -q 'fd00:0:0:1::2/64' "$out/eth1.txt" || sf_fail "eth1 lacks fd00:0:0:1::2/64" "$out/eth1.txt"
grep -q 'fe80::ff:fe00:102/64' "$out/eth1.txt" || sf_fail "eth1 lacks fe80::ff:fe00:102/64" "$out/eth1.txt"

# The host's /dev is as it was.
[ ! -e /dev/infiniband/umad0 ] || sf_fail "/dev/infiniband/umad0 exists on the host"
[ "$had_dir" = 1 ] || [ ! -e /dev/infiniband ] || sf_fail "/dev/infiniband was made on the host"
"$SIMFAB" exec -n "$ns" >"$out/usage.txt" 2>&1 && sf_fail "simfab exec without a command succeeded"
grep -q 'usage: simfab exec \[-n NS\] COMMAND' "$out/usage.txt" || sf_fail "no usage line" "$out/usage.txt"
sf_log "PASS"
