#!/bin/bash
# A third host on the pair's network (tests/ha/th-lib.sh: hosts A and B with their
# bridges, and host C on the same switch, not in the pair) tries to take partition
# default from A by asking B (standby) to take it over: `takeover prepare`, `commit`,
# `done`, as A would (control/hanet.c). The listener accepts connections from
# --ha-peer's address only: everything from C is refused before TLS (unknown_peer),
# whatever C holds; nothing changes on A or B.
# 1. Key-file mode: C in clear text (no key), with a wrong key for identity a, and with
#    the pair's key file itself (a stolen copy): each refused, counted (unknown_peer),
#    logged once for C's address; roles unchanged on both. A's own handover to B then
#    goes through (the check lets the peer in).
# 2. Certificate mode (TH_AUTH=cert, --ha-peer-name left out: the peer's certificate must
#    carry --ha-peer's address): a handover A -> B; C with a certificate of another CA,
#    and with one of the pair's CA named for C: refused, counted; roles unchanged.
# Needs root and network namespaces (skipped otherwise). Counts and roles, never times.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
# shellcheck source-path=SCRIPTDIR source=certgen.sh
. "$(dirname "$0")/certgen.sh"
# shellcheck source-path=SCRIPTDIR source=th-lib.sh
. "$(dirname "$0")/th-lib.sh"
: "${BCOM:?BCOM must name the bcom program}"
for p in gnutls-cli certtool; do
	command -v "$p" >/dev/null || {
		echo "$p (gnutls-bin) not installed: skipped"
		exit 77
	}
done

TH_NO_KEEPALIVED=1 th_init ha-thirdhost
th_host_c
th_certs
g1=239.1.6.5
g2=239.1.6.6
probe="$(dirname "$0")/tlsprobe.py"
k=$SF_TMP/keys
cg_ca "$k" other
cg_host "$k" c other bridge-a "$TH_C"
cg_host "$k" c2 ca bridge-c "$TH_C"

refused_is() {
	con_must "$1" ha
	grep -Eq "^ha_peer_refused( .*)? $2=$3( |$)" "$SF_TMP/bcom.out" ||
		br_fail "bridge $1: expected $2=$3: $(grep ha_peer_refused "$SF_TMP/bcom.out")" "$1"
}
roles_unchanged() {
	ha_role_is a default active
	ha_role_is a p2 active
	ha_role_is b default standby
	ha_role_is b p2 standby
}
# take ARGS...: from host C, gnutls-cli with ARGS to b's listener, asking it to take
# partition default over as a would.
take() {
	(printf 'takeover prepare default 6.6.%s\ntakeover commit default 6.6.%s\n' $$ $$
		sleep 0.5
		printf 'takeover done default 6.6.%s\n' $$
		sleep 1) |
		$TH_RUN_C gnutls-cli -p "$TH_PORT" "$TH_B" "$@" >"$SF_TMP/c.out" 2>&1 || true
}
start() {
	th_bridge a 2 -d sim_ib0 -r sim_roce0 --workers 0 --peer "$ROCE_NET.4" -m "$g1" -m "$g2" \
		--partition p2:"$g2"
	th_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" -m "$g1" -m "$g2" \
		--partition p2:"$g2" --role standby
	roles_unchanged
}

# 1. Key-file mode.
start
$TH_RUN_C python3 "$probe" garbage "$TH_B" "$TH_PORT" >"$SF_TMP/p.out" ||
	br_fail "clear text from C: $(cat "$SF_TMP/p.out")" b
roles_unchanged
psk='NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-PSK:+DHE-PSK'
take --pskusername a --pskkey "$(th_hexkey)" --priority "$psk"
roles_unchanged
key=$(sed -n 's/^a://p' "$k/pair.psk")
take --pskusername a --pskkey "$key" --priority "$psk"
sf_log "C with the pair's key: $(tr '\n' ' ' <"$SF_TMP/c.out" | tail -c 300)"
roles_unchanged
refused_is b unknown_peer 3
for r in auth replay garbage stall protocol busy; do
	refused_is b "$r" 0
done
n=$(grep -c "ha-listen: peer $TH_C refused (unknown_peer): not --ha-peer's address" "$SF_TMP/b.err") || n=0
[ "$n" = 1 ] || br_fail "bridge b logged $n refusals of $TH_C, not 1" b
refused_is a unknown_peer 0
con_must a handover
grep -q '^handover: 2 of 2 partitions handed over$' "$SF_TMP/bcom.out" ||
	br_fail "a's handover to b: $(cat "$SF_TMP/bcom.out")" a
ha_role_is b default active
ha_role_is a default standby
br_stop a
br_stop b

# 2. Certificate mode.
TH_AUTH=cert start
con_must b ha
grep -q "^ha_listen $TH_B:$TH_PORT sessions=0 peer_name=$TH_A$" "$SF_TMP/bcom.out" ||
	br_fail "bridge b: ha does not show the peer's name: $(cat "$SF_TMP/bcom.out")" b
take --x509certfile "$k/c.pem" --x509keyfile "$k/c.key" --insecure
roles_unchanged
take --x509certfile "$k/c2.pem" --x509keyfile "$k/c2.key" --insecure
roles_unchanged
refused_is b unknown_peer 2
refused_is b auth 0
con_must a handover
grep -q '^handover: 2 of 2 partitions handed over$' "$SF_TMP/bcom.out" ||
	br_fail "a's handover to b with certificates: $(cat "$SF_TMP/bcom.out")" a
ha_role_is b default active
ha_role_is a default standby
grep -q "the handing-over bridge $TH_A confirmed" "$SF_TMP/b.err" ||
	br_fail "bridge b: no confirmation from $TH_A in its log" b
br_stop a
br_stop b
sf_log "PASS"
