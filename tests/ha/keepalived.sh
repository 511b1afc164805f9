#!/bin/bash
# An HA pair elected by real keepalived (ha/ib2roce-notify.sh, docs/operations.md):
# bridges a and b start standby; two keepalived instances, in two network namespaces
# joined by a veth pair (169.254.77.1 and .2), run one VRRP instance for partition
# default each (a's priority higher) with a vrrp_script health check (`bcom health` on
# the bridge's console) and the notify script. The bridges, senders and listeners stay
# in the test's namespace (the simulated fabric's sockets are bound to it); keepalived
# reaches the consoles through their pathname sockets.
# - keepalived makes a active (b stays standby): each packet arrives once;
# - kill -9 of a during a stream: a's health check fails, b's keepalived becomes master
#   and its notify script makes b active; the packets lost meanwhile (the gap) are
#   printed, and packets after the failover arrive, none twice.
# Skipped (77) without keepalived or network namespaces.
set -eu
# shellcheck source-path=SCRIPTDIR source=../bridge/lib.sh
. "$(dirname "$0")/../bridge/lib.sh"
: "${BCOM:?BCOM must name the bcom program}"
: "${HA_NOTIFY:?HA_NOTIFY must name ha/ib2roce-notify.sh}"

KA=$(command -v keepalived || true)
[ -n "$KA" ] || { echo "keepalived not installed: skipped"; exit 77; }
sf_init ha-keepalived
ns1=ib2roce-ka1-$$
ns2=ib2roce-ka2-$$
if ! ip netns add "$ns1" 2>"$SF_TMP/netns.err"; then
	echo "no network namespaces ($(cat "$SF_TMP/netns.err")): skipped"
	exit 77
fi
ip netns add "$ns2"
ka_cleanup() {
	local f

	for f in "$SF_TMP"/ka*.pid; do
		[ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true
	done
	ip netns del "$ns1" 2>/dev/null || true
	ip netns del "$ns2" 2>/dev/null || true
}
trap 'ka_cleanup; sf_cleanup' EXIT
ip link add kav1-$$ type veth peer name kav2-$$
ip link set kav1-$$ netns "$ns1"
ip link set kav2-$$ netns "$ns2"
ip -n "$ns1" addr add 169.254.77.1/24 dev kav1-$$
ip -n "$ns2" addr add 169.254.77.2/24 dev kav2-$$
for n in "$ns1" "$ns2"; do
	ip -n "$n" link set lo up
done
ip -n "$ns1" link set kav1-$$ up
ip -n "$ns2" link set kav2-$$ up

g1=239.1.2.3
m=20000

# bc NAME COMMAND...: bcom to bridge NAME; output in $SF_TMP/bcom.out; status in BC_RC.
bc() {
	local name=$1

	shift
	BC_RC=0
	timeout -k 2 20 "$BCOM" --control "$SF_TMP/$name.sock" "$@" >"$SF_TMP/bcom.out" \
		2>"$SF_TMP/bcom.err" || BC_RC=$?
}

# wait_role NAME ROLE: wait (30 s at most) until bridge NAME's partition default is ROLE.
wait_role() {
	local i

	for i in $(seq 300); do
		bc "$1" ha
		if [ "$BC_RC" = 0 ] && awk -v r="$2" '$1 == "default" && $2 == r { ok = 1 } END { exit !ok }' \
			"$SF_TMP/bcom.out"; then
			return 0
		fi
		sleep 0.1
	done
	br_fail "bridge $1 did not become $2: $(cat "$SF_TMP/bcom.out" "$SF_TMP"/ka*.log 2>/dev/null)" "$1"
}

# ka_start N NS IFACE SRC PEER PRIO BRIDGE: keepalived instance N in namespace NS.
ka_start() {
	local n=$1 ns=$2 ifc=$3 src=$4 peer=$5 prio=$6 sock=$SF_TMP/$7.sock st

	cat >"$SF_TMP/ka$n.conf" <<EOC
global_defs {
	router_id ka$n
	script_user root
	enable_script_security
}
vrrp_script ib2roce_health {
	script "$BCOM --control $sock health"
	interval 1
	timeout 2
	fall 1
	rise 1
}
vrrp_instance ib2roce_default {
	state BACKUP
	interface $ifc
	virtual_router_id 61
	priority $prio
	advert_int 1
	unicast_src_ip $src
	unicast_peer {
		$peer
	}
	track_script {
		ib2roce_health
	}
EOC
	for st in MASTER BACKUP FAULT STOP; do
		printf '\tnotify_%s "%s --bcom %s %s default %s"\n' "$(echo "$st" | tr A-Z a-z)" \
			"$HA_NOTIFY" "$BCOM" "$sock" "$st" >>"$SF_TMP/ka$n.conf"
	done
	echo "}" >>"$SF_TMP/ka$n.conf"
	ip netns exec "$ns" "$KA" --dont-fork --log-console --log-detail --vrrp \
		-f "$SF_TMP/ka$n.conf" -p "$SF_TMP/ka$n-main.pid" -r "$SF_TMP/ka$n-vrrp.pid" \
		-c "$SF_TMP/ka$n-chk.pid" >"$SF_TMP/ka$n.log" 2>&1 &
	echo $! >"$SF_TMP/ka$n.pid"
}

br_bridge a 1 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" --role standby -m "$g1"
br_bridge b 1 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" --role standby -m "$g1"
ka_start 1 "$ns1" kav1-$$ 169.254.77.1 169.254.77.2 150 a
ka_start 2 "$ns2" kav2-$$ 169.254.77.2 169.254.77.1 100 b
wait_role a active
wait_role b standby

br_listen p1 "$ROCE_NET.2" -g "$g1" --verify --imm --any-source --rq 16384 --timeout 120
br_send_start p1_send "$IB_NET.2" -g "$g1" -n "$m" --imm --rate 2000
sleep 1
kill -KILL "$(sf_child "$(br_pid a)")"
wait_role b active
br_send_end p1_send
sleep 1
kill -TERM "$(sf_child "$(br_pid p1)")" 2>/dev/null || true
br_listen_end p1
rx=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* received=\([0-9]*\) .*/\1/p')
dup=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* dup=\([0-9]*\) .*/\1/p')
case " ${BR_SUMMARY#mcpkt: } " in
*" bad=0 "*" imm_bad=0 "*) ;;
*) br_fail "listener p1: corrupt packets: $BR_SUMMARY" p1 ;;
esac
lost=$((m - (rx - dup)))
sf_log "kill -9 of the active bridge, keepalived failover: sent $m at 2000/s, lost $lost (the gap), duplicates $dup"
[ "$dup" = 0 ] || br_fail "keepalived failover: $dup duplicates" p1
[ "$lost" -lt "$m" ] || br_fail "nothing arrived" p1
grep -q 'partition default: standby -> active (console role command)' "$SF_TMP/b.err" ||
	br_fail "bridge b was not made active by the notify script" b
br_stop b
br_conservation b sim_ib3 sim_roce3
sf_log "PASS"
