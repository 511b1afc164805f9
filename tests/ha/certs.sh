#!/bin/bash
# HA peer control in TLS 1.3 with X.509 certificates (--ha-cert, --ha-key, --ha-ca,
# --ha-peer-name; control/hanet.c, docs/operations.md "Certificates instead of a key"),
# both bridges on this host (127.0.0.1), certificates made here with certtool
# (tests/ha/certgen.sh):
# reload_refused PATTERN WHAT: a's reload is refused with one line matching PATTERN;
# nothing changed: the refusals and the reloads it counts, its credentials (still
# a's --ha-ca of the other CA: its handover fails on b's certificate).
reload_refused() {
	local n0 r0

	n0=$(grep -c "reload: .*nothing changed" "$SF_TMP/a.err") || n0=0
	r0=$(grep -c "ha-cert .*: read again" "$SF_TMP/a.err") || r0=0
	con_must_exit a 1 reload >/dev/null
	{ [ "$(grep -c . "$SF_TMP/bcom.out")" = 1 ] && grep -q "$1" "$SF_TMP/bcom.out"; } ||
		br_fail "reload with $2: not one line '$1': $(cat "$SF_TMP/bcom.out")" a
	[ "$(grep -c "reload: .*nothing changed" "$SF_TMP/a.err")" -gt "$n0" ] ||
		br_fail "reload with $2: the refusal not logged" a
	con_must_exit a 1 handover >/dev/null
	grep -q "its certificate does not verify" "$SF_TMP/bcom.out" ||
		br_fail "reload with $2 changed the credentials: $(cat "$SF_TMP/bcom.out")" a
	[ "$(grep -c "ha-cert .*: read again" "$SF_TMP/a.err")" = "$r0" ] ||
		br_fail "reload with $2: the certificates were read again" a
	ha_role_is a default active
	ha_role_is b default standby
}

# 1. Start-up checks: a private key readable by others, a key that is not the
#    certificate's, a missing --ha-ca, --ha-psk with --ha-cert: exit 2, one line.
# 2. A handover a -> b in certificate mode during a stream: zero loss (a's NIC drops
#    allowed, as tls.sh), bounded duplicates; no refusals.
# 3. a's certificate replaced, by reload, with one that expired, one of another CA, one
#    with another name (bridge-x, not b's --ha-peer-name bridge-a): each handover
#    refused by b, counted (auth), logged once each with GnuTLS's verdict; roles unchanged
#    on both sides. a's --ha-ca of another CA (a refuses b's certificate): a's handover
#    fails as "its certificate does not verify"; b counts a's alert (auth).
# 4. A reload with a key file open to others, with a key of another certificate, with a
#    CA file that does not parse: each refused with one line, the credentials kept; the
#    right files back by SIGHUP (a renewal): the handover goes through.
# 5. A reload that would change a running pair's mode (a key file for certificates, or
#    certificates for a key file) is refused with one line, nothing changed.
# Asserts counts and roles, never times.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
# shellcheck source-path=SCRIPTDIR source=certgen.sh
. "$(dirname "$0")/certgen.sh"
: "${BCOM:?BCOM must name the bcom program}"
command -v certtool >/dev/null || {
	echo "certtool (gnutls-bin) not installed: skipped"
	exit 77
}

sf_init ha-certs
g1=239.1.5.7
g2=239.1.5.8
pa=$((20000 + $$ % 20000))
pb=$((pa + 1))
d=$SF_TMP/keys
mkdir -m 700 "$d"
cg_ca "$d" ca
cg_ca "$d" other
cg_host "$d" a ca bridge-a
cg_host "$d" b ca bridge-b
cg_host "$d" expired ca bridge-a "" past
cg_host "$d" foreign other bridge-a
cg_host "$d" wrongname ca bridge-x

# refused_is NAME REASON N: `ha` of bridge NAME counts N refusals for REASON.
refused_is() {
	con_must "$1" ha
	grep -Eq "^ha_peer_refused( .*)? $2=$3( |$)" "$SF_TMP/bcom.out" ||
		br_fail "bridge $1: expected $2=$3: $(grep ha_peer_refused "$SF_TMP/bcom.out")" "$1"
}
# use CERT [CA]: a's --ha-cert/--ha-key files become those of CERT (and its --ha-ca CA).
use() {
	cp "$d/$1.pem" "$d/a-cur.pem"
	cp "$d/$1.key" "$d/a-cur.key.new"
	chmod 600 "$d/a-cur.key.new"
	mv "$d/a-cur.key.new" "$d/a-cur.key"
	cp "$d/${2:-ca}.pem" "$d/a-ca.pem"
}

# 1. Start-up checks (the bridge stops at its options: exit 2, one line).
badstart() {
	local want=$1 rc=0

	shift
	"$IB2ROCE" -d sim_ib0 -r sim_roce0 -m "$g1" --control "$SF_TMP/x.sock" \
		--ha-listen "127.0.0.1:$pa" --ha-peer "127.0.0.1:$pb" "$@" \
		>"$SF_TMP/x.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || sf_fail "ib2roce $* exited $rc, not 2: $(cat "$SF_TMP/x.out")"
	grep -q -- "$want" "$SF_TMP/x.out" ||
		sf_fail "ib2roce $*: no '$want' in: $(cat "$SF_TMP/x.out")"
}
cp -p "$d/a.key" "$d/open.key"
chmod 640 "$d/open.key"
badstart "open.key: mode 0640 gives group or others access" \
	--ha-cert "$d/a.pem" --ha-key "$d/open.key" --ha-ca "$d/ca.pem"
ln -s a.key "$d/link.key"
badstart "link.key: is a symbolic link" \
	--ha-cert "$d/a.pem" --ha-key "$d/link.key" --ha-ca "$d/ca.pem"
badstart "ha-cert .*a.pem with ha-key .*b.key: " \
	--ha-cert "$d/a.pem" --ha-key "$d/b.key" --ha-ca "$d/ca.pem"
badstart "go together: --ha-ca is missing" --ha-cert "$d/a.pem" --ha-key "$d/a.key"
printf 'a:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$d/a.psk"
chmod 600 "$d/a.psk"
badstart "a pair authenticates with one of the two" --ha-psk "$d/a.psk" \
	--ha-cert "$d/a.pem" --ha-key "$d/a.key" --ha-ca "$d/ca.pem"
badstart "ha-ca .*a.key: not a PEM certificate" \
	--ha-cert "$d/a.pem" --ha-key "$d/a.key" --ha-ca "$d/a.key"

use a
br_bridge a 2 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" -m "$g1" -m "$g2" \
	--ha-listen "127.0.0.1:$pa" --ha-peer "127.0.0.1:$pb" --ha-peer-name bridge-b \
	--ha-cert "$d/a-cur.pem" --ha-key "$d/a-cur.key" --ha-ca "$d/a-ca.pem" \
	--partition p2:"$g2"
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" -m "$g1" -m "$g2" \
	--ha-listen "127.0.0.1:$pb" --ha-peer "127.0.0.1:$pa" --ha-peer-name bridge-a \
	--ha-cert "$d/b.pem" --ha-key "$d/b.key" --ha-ca "$d/ca.pem" \
	--partition p2:"$g2" --role standby --metrics-file "$SF_TMP/b.prom" -e statint=1
ha_role_is a default active
ha_role_is b default standby
con_must b ha
grep -q "^ha_listen 127.0.0.1:$pb sessions=0 peer_name=bridge-a$" "$SF_TMP/bcom.out" ||
	br_fail "bridge b: ha does not show its listener: $(cat "$SF_TMP/bcom.out")" b

# 2. A handover in certificate mode during a stream: zero loss.
ha_handover_stream "with certificates" "$g1"
lost=$HA_LOST
for r in auth unknown_peer replay garbage stall protocol busy; do
	refused_is b "$r" 0
done
con_must b handover
ha_role_is a default active
ha_role_is b default standby

# 3. Certificates b must refuse: each counted (auth), logged once with its verdict.
n=0
for bad in expired:'uses expired certificate' foreign:'sent no certificate of our --ha-ca' \
	wrongname:'does not match the expected'; do
	use "${bad%%:*}"
	con_must a reload
	con_must_exit a 1 handover >/dev/null
	grep -q "partition default: not handed over: the peer: the TLS handshake failed" "$SF_TMP/bcom.out" ||
		br_fail "handover with certificate ${bad%%:*}: $(cat "$SF_TMP/bcom.out")" a
	n=$((n + 1))
	# The handover stops at the first partition's refusal.
	refused_is b auth "$n"
	c=$(grep -c "ha-listen: peer 127.0.0.1 refused (auth): .*${bad#*:}" "$SF_TMP/b.err") || c=0
	[ "$c" = 1 ] || br_fail "bridge b logged $c refusals for ${bad%%:*} ('${bad#*:}'), not 1" b
	ha_role_is a default active
	ha_role_is a p2 active
	ha_role_is b default standby
	ha_role_is b p2 standby
done
# a's own CA file of another CA: a refuses b's certificate (the asking side's check).
use a other
con_must a reload
con_must_exit a 1 handover >/dev/null
grep -q "not handed over: the peer: the TLS handshake failed: its certificate does not verify" "$SF_TMP/bcom.out" ||
	br_fail "handover to a peer of another CA: $(cat "$SF_TMP/bcom.out")" a
# a tells b why (its alert): b counts it as auth too, logged once.
refused_is b auth 4
c=$(grep -c "ha-listen: peer 127.0.0.1 refused (auth): it refused the handshake: " "$SF_TMP/b.err") || c=0
[ "$c" = 1 ] || br_fail "bridge b logged $c refusals of its own certificate, not 1" b
ha_role_is a default active
ha_role_is b default standby

# 4. A reload with a private key open to others: refused, the credentials stay (still
#    the other CA: the handover still fails on a's side); one with a key that is not the
#    certificate's, one with a CA file that does not parse: the same; then the right
#    files (a renewal) by SIGHUP: the handover goes through.
use a
chmod 644 "$d/a-cur.key"
con_must_exit a 1 reload >/dev/null
grep -q "a-cur.key: mode 0644 gives group or others access" "$SF_TMP/bcom.out" ||
	br_fail "reload with an open key file: $(cat "$SF_TMP/bcom.out")" a
con_must_exit a 1 handover >/dev/null
grep -q "its certificate does not verify" "$SF_TMP/bcom.out" ||
	br_fail "the refused reload changed the credentials: $(cat "$SF_TMP/bcom.out")" a
# A key that is not the certificate's: each file passes its own checks, the three
# together do not: the reload is refused (one line naming both files), nothing changed.
cp "$d/b.key" "$d/a-cur.key"
chmod 600 "$d/a-cur.key"
reload_refused "ha-cert .*a-cur.pem with ha-key .*a-cur.key: .*; nothing changed$" \
	"a key not of the certificate"
# A CA file that does not parse (a PEM block of garbage after the CA): refused the same.
use a
{
	cat "$d/ca.pem"
	printf -- '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n'
} >"$d/a-ca.pem"
reload_refused "ha-ca .*a-ca.pem: not a PEM certificate: .*; nothing changed$" \
	"a CA file that does not parse"
use a
c0=$(grep -c 'ha-cert .*a-cur.pem, ha-key .*: read again' "$SF_TMP/a.err") || c0=0
kill -HUP "$(sf_child "$(br_pid a)")"
for _ in $(seq 100); do
	[ "$(grep -c 'ha-cert .*a-cur.pem, ha-key .*: read again' "$SF_TMP/a.err")" -gt "$c0" ] && break
	sleep 0.1
done
[ "$(grep -c 'ha-cert .*a-cur.pem, ha-key .*: read again' "$SF_TMP/a.err")" -gt "$c0" ] ||
	br_fail "SIGHUP did not read the certificates again" a
con_must a handover
grep -q '^handover: 2 of 2 partitions handed over$' "$SF_TMP/bcom.out" ||
	br_fail "handover after the renewal: $(cat "$SF_TMP/bcom.out")" a
ha_role_is a default standby
ha_role_is b default active
ha_role_is b p2 active
refused_is b auth 7
for r in unknown_peer replay garbage stall protocol busy; do
	refused_is b "$r" 0
done
for _ in $(seq 50); do
	grep -q '^ib2roce_ha_peer_refused_total{reason="auth"} 7$' "$SF_TMP/b.prom" && break
	sleep 0.1
done
grep -q '^ib2roce_ha_peer_refused_total{reason="auth"} 7$' "$SF_TMP/b.prom" ||
	br_fail "metrics: auth not 7: $(grep ha_peer_refused "$SF_TMP/b.prom")" b
# 5. A running pair keeps its mode: a reload that gives a key file to a pair with
#    certificates, or certificates to a pair with a key file, is refused with one line
#    and changes nothing (bridge x, configured by a file: a reload reads it again).
px=$((pa + 2))
printf 'ha-listen 127.0.0.1:%s\nha-peer 127.0.0.1:%s\nha-peer-name bridge-b\n' "$px" "$pb" >"$SF_TMP/x.base"
xconf() {
	cp "$SF_TMP/x.base" "$SF_TMP/x.conf"
	for m in "$@"; do
		case $m in
		cert) printf 'ha-cert %s\nha-key %s\nha-ca %s\n' "$d/a.pem" "$d/a.key" "$d/ca.pem" ;;
		psk) printf 'ha-psk %s\n' "$d/a.psk" ;;
		esac >>"$SF_TMP/x.conf"
	done
}
# x_refused PATTERN WHAT: x's reload refused with one line matching PATTERN; x's listener
# line (its mode) as before.
x_refused() {
	local before

	con_must x ha
	before=$(grep '^ha_listen ' "$SF_TMP/bcom.out")
	con_must_exit x 1 reload >/dev/null
	{ [ "$(grep -c . "$SF_TMP/bcom.out")" = 1 ] && grep -q "$1" "$SF_TMP/bcom.out"; } ||
		br_fail "reload of x with $2: not one line '$1': $(cat "$SF_TMP/bcom.out")" x
	con_must x ha
	[ "$(grep '^ha_listen ' "$SF_TMP/bcom.out")" = "$before" ] ||
		br_fail "reload of x with $2 changed it: $(cat "$SF_TMP/bcom.out")" x
}
xconf cert
br_bridge x 1 -d sim_ib2 -r sim_roce2 -m 239.1.5.9 -c "$SF_TMP/x.conf"
xconf cert psk
x_refused "ha-psk .*a.psk: the reload gives a key file to a pair that authenticates with certificates (--ha-cert): only a restart changes that; nothing changed$" \
	"a key file added"
xconf psk
x_refused "ha-psk .*a.psk: the reload gives a key file to a pair that authenticates with certificates" \
	"a key file instead of the certificates"
xconf cert
con_must x reload
br_stop x
xconf psk
br_bridge x 1 -d sim_ib2 -r sim_roce2 -m 239.1.5.9 -c "$SF_TMP/x.conf"
xconf cert
x_refused "ha-cert .*a.pem: the reload gives certificates to a pair that authenticates with --ha-psk: only a restart changes that; nothing changed$" \
	"certificates instead of the key file"
br_stop x

br_stop a
br_stop b
allow=$(br_nic a IB)
if grep -q 'a worker did not empty its queues' "$SF_TMP/a.err"; then
	sf_log "handover with certificates: a's worker was starved: loss $lost not checked"
else
	[ "$lost" -le "$allow" ] ||
		br_fail "handover with certificates lost $lost packets, a's NIC dropped $allow" a
fi
sf_log "PASS"
