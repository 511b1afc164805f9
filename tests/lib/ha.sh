# shellcheck shell=bash
# tests/lib/ha.sh (prefix ha_): the HA tests that drive bridges through their consoles
# (tests/ha: pair.sh, three.sh, upgrade.sh, ...); sourced by each test (bash, set -eu).
# Sources con.sh (con_bc, con_ok, con_must, con_json, ...), which sources br.sh.

[ -z "${T_LIB_HA:-}" ] || return 0
T_LIB_HA=1

# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "${BASH_SOURCE[0]%/*}/con.sh"

# ha_role_is NAME PARTITION ROLE: `ha` of bridge NAME shows PARTITION in ROLE.
ha_role_is() {
	con_must "$1" ha
	awk -v p="$2" -v r="$3" '$1 == p && $2 == r { ok = 1 } END { exit !ok }' "$SF_TMP/bcom.out" ||
		br_fail "bridge $1: partition $2 is not $3: $(cat "$SF_TMP/bcom.out")" "$1"
}

# ha_handover_stream WHAT GROUP: bridge a (active) hands partition default over to b
# (`handover`) while 4000 packets stream on GROUP from IB to RoCE at 2000 pps; the
# handover over the network (tls.sh, certs.sh: both bridges on 127.0.0.1), logged and
# checked as "handover WHAT". Sets HA_LOST (what the listener missed: checked by the
# caller against a's NIC drops), HA_DUP and HA_WINDOW (ms the command took); fails on
# more duplicates than the window can explain or when b logged no `takeover done`.
ha_handover_stream() {
	local what=$1 g=$2 m=4000 t0 rx bound

	br_listen s2 "$ROCE_NET.2" -g "$g" --verify --imm --any-source --rq 16384 --timeout 60
	br_send_start s2_send "$IB_NET.2" -g "$g" -n "$m" --imm --rate 2000
	sleep 1
	t0=$(date +%s%N)
	con_must a handover
	HA_WINDOW=$((($(date +%s%N) - t0) / 1000000))
	grep -q '^partition default: active -> standby$' "$SF_TMP/bcom.out" ||
		br_fail "handover $what: $(cat "$SF_TMP/bcom.out")" a
	ha_role_is a default standby
	ha_role_is b default active
	br_send_end s2_send
	sleep 1
	kill -TERM "$(sf_child "$(br_pid s2)")" 2>/dev/null || true
	br_listen_end s2
	rx=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* received=\([0-9]*\) .*/\1/p')
	HA_DUP=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* dup=\([0-9]*\) .*/\1/p')
	HA_LOST=$((m - (rx - HA_DUP)))
	bound=$((2000 * (HA_WINDOW + 500) / 1000 + 2 * 32))
	sf_log "handover a -> b $what: took $HA_WINDOW ms, sent $m, lost $HA_LOST, duplicates $HA_DUP (bound $bound)"
	[ "$HA_DUP" -le "$bound" ] || br_fail "handover $what: $HA_DUP duplicates, more than $bound" a
	grep -q "the handing-over bridge 127.0.0.1 confirmed" "$SF_TMP/b.err" ||
		br_fail "bridge b did not log the confirmation (takeover done)" b
}
