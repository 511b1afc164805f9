#!/bin/bash
# HA peer control over TCP in TLS 1.3 with a pre-shared key (control/hanet.c,
# docs/operations.md "A pair on two hosts"), both bridges on this host (127.0.0.1):
# 1. Key files are checked like the pid file: group/other access, a symbolic link, a bad
#    line: the bridge refuses to start (exit 2) with one line naming the file.
# 2. A handover a -> b over TLS during a stream: zero loss, bounded duplicates; `ha`
#    shows the listener and no refusals.
# 3. A wrong key (a's file replaced and reloaded), an identity b does not know (a third
#    host), a peer sending clear text, one stalling mid-message, and one replaying a
#    recorded handover: each refused, counted by reason in `ha` (ha_peer_refused ...),
#    logged once per address and reason; no role changes.
# 4. A reload with a key file that fails its checks is refused and keeps the keys; the
#    right key back by reload: the next handover goes through (keys reload without a
#    restart).
# Asserts counts and roles, never times.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ha.sh
. "$(dirname "$0")/../lib/ha.sh"
: "${BCOM:?BCOM must name the bcom program}"

sf_init ha-tls
g1=239.1.5.3
g2=239.1.5.4
probe="$(dirname "$0")/tlsprobe.py"
pa=$((20000 + $$ % 20000))
pb=$((pa + 1))
pr=$((pa + 2))

hexkey() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
ka=$(hexkey)
kb=$(hexkey)
mkdir -m 700 "$SF_TMP/keys"
printf 'a:%s\nb:%s\n' "$ka" "$kb" >"$SF_TMP/keys/a.psk"
cp "$SF_TMP/keys/a.psk" "$SF_TMP/keys/b.psk"
chmod 600 "$SF_TMP/keys/a.psk" "$SF_TMP/keys/b.psk"

# refused_is NAME REASON N: `ha` of bridge NAME counts N refusals for REASON.
refused_is() {
	con_must "$1" ha
	grep -Eq "^ha_peer_refused( .*)? $2=$3( |$)" "$SF_TMP/bcom.out" ||
		br_fail "bridge $1: expected $2=$3: $(grep ha_peer_refused "$SF_TMP/bcom.out")" "$1"
}

# 1. Key file checks (the bridge stops at its options: exit 2, one line).
badstart() {
	local want=$1 rc=0

	shift
	"$IB2ROCE" -d sim_ib0 -r sim_roce0 -m "$g1" --control "$SF_TMP/x.sock" "$@" \
		>"$SF_TMP/x.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || sf_fail "ib2roce $* exited $rc, not 2: $(cat "$SF_TMP/x.out")"
	grep -q -- "$want" "$SF_TMP/x.out" ||
		sf_fail "ib2roce $*: no '$want' in: $(cat "$SF_TMP/x.out")"
}
cp -p "$SF_TMP/keys/a.psk" "$SF_TMP/keys/open.psk"
chmod 640 "$SF_TMP/keys/open.psk"
badstart "open.psk: mode 0640 gives group or others access" --ha-psk "$SF_TMP/keys/open.psk"
ln -s a.psk "$SF_TMP/keys/link.psk"
badstart "link.psk: is a symbolic link" --ha-psk "$SF_TMP/keys/link.psk"
printf 'a:123\n' >"$SF_TMP/keys/short.psk"
chmod 600 "$SF_TMP/keys/short.psk"
badstart "short.psk:1: the key of a must be 16 to 64 bytes" --ha-psk "$SF_TMP/keys/short.psk"
badstart "ha-peer 'nohost': expected HOST:PORT" --ha-peer nohost
mkdir -m 777 "$SF_TMP/open"
cp -p "$SF_TMP/keys/a.psk" "$SF_TMP/open/a.psk"
badstart "open: " --ha-psk "$SF_TMP/open/a.psk"

br_bridge a 2 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" -m "$g1" -m "$g2" \
	--ha-listen "127.0.0.1:$pa" --ha-peer "127.0.0.1:$pb" \
	--ha-psk "$SF_TMP/keys/a.psk" --ha-psk-identity a --partition p2:"$g2"
br_bridge b 2 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" -m "$g1" -m "$g2" \
	--ha-listen "127.0.0.1:$pb" --ha-peer "127.0.0.1:$pa" \
	--ha-psk "$SF_TMP/keys/b.psk" --ha-psk-identity b --partition p2:"$g2" --role standby \
	--metrics-file "$SF_TMP/b.prom" -e statint=1
ha_role_is a default active
ha_role_is b default standby
con_must b ha
grep -q "^ha_listen 127.0.0.1:$pb sessions=0 keys=2$" "$SF_TMP/bcom.out" ||
	br_fail "bridge b: ha does not show its listener: $(cat "$SF_TMP/bcom.out")" b

# 2. A handover over TLS during a stream: zero loss.
# Zero loss is checked at the end against a's NIC drops (a descheduled worker on a
# loaded machine: the only loss allowed, as in upgrade.sh) and what a's worker still held
# when its drain timed out (logged: "a worker did not empty its queues").
ha_handover_stream "over TLS" "$g1"
lost2=$HA_LOST
for r in auth unknown_peer replay garbage stall protocol busy; do
	refused_is b "$r" 0
done
# b hands back; a's handover recorded on the way (through tlsprobe's relay) for 3.
con_must b handover
ha_role_is a default active
python3 "$probe" relay "$pr" 127.0.0.1 "$pb" "$SF_TMP/rec.bin" >"$SF_TMP/relay.out" 2>&1 &
relay=$!
SF_PIDS="$SF_PIDS $relay"
for _ in $(seq 50); do grep -q listening "$SF_TMP/relay.out" && break; sleep 0.1; done
# a's peer is fixed at start: hand over through the relay with a second bridge c that
# has a's key and --ha-peer the relay (c is "a" to b: the same identity and key).
br_bridge c 2 -d sim_ib1 -r sim_roce1 --workers 0 --peer "$ROCE_NET.1" --peer "$ROCE_NET.4" \
	-m "$g1" -m "$g2" --partition p2:"$g2" --role p2=standby --ha-peer "127.0.0.1:$pr" --ha-psk "$SF_TMP/keys/a.psk" --ha-psk-identity a
con_must a role default standby
ha_role_is b default standby
con_must c handover
ha_role_is b default active
wait "$relay" || sf_fail "relay failed: $(cat "$SF_TMP/relay.out")"
sf_log "relay: $(tail -1 "$SF_TMP/relay.out")"
con_must c role default standby
con_must a role default active
con_must b role default standby
ha_role_is b default standby
br_stop c

# 3. Not peers: each refused, counted, logged once; the roles stay.
python3 "$probe" replay 127.0.0.1 "$pb" "$SF_TMP/rec.bin" >"$SF_TMP/p.out" ||
	br_fail "replay: $(cat "$SF_TMP/p.out")" b
refused_is b replay 1
python3 "$probe" garbage 127.0.0.1 "$pb" >"$SF_TMP/p.out" || br_fail "garbage: $(cat "$SF_TMP/p.out")" b
python3 "$probe" garbage 127.0.0.1 "$pb" >"$SF_TMP/p.out" || br_fail "garbage: $(cat "$SF_TMP/p.out")" b
refused_is b garbage 2
python3 "$probe" stall 127.0.0.1 "$pb" >"$SF_TMP/p.out" || br_fail "stall: $(cat "$SF_TMP/p.out")" b
refused_is b stall 1
# A wrong key for identity a, reloaded into a without a restart.
printf 'a:%s\nb:%s\n' "$(hexkey)" "$kb" >"$SF_TMP/keys/a.new"
chmod 600 "$SF_TMP/keys/a.new"
mv "$SF_TMP/keys/a.new" "$SF_TMP/keys/a.psk"
con_must a reload
con_must_exit a 1 handover >/dev/null
grep -q "partition default: not handed over: the peer: the TLS handshake failed" "$SF_TMP/bcom.out" ||
	br_fail "handover with a wrong key: $(cat "$SF_TMP/bcom.out")" a
refused_is b auth 1
# A third host: an identity b does not know.
printf 'c:%s\n' "$(hexkey)" >"$SF_TMP/keys/a.new"
chmod 600 "$SF_TMP/keys/a.new"
mv "$SF_TMP/keys/a.new" "$SF_TMP/keys/a.psk"
con_must a reload
con_must_exit a 1 handover >/dev/null
refused_is b unknown_peer 1
ha_role_is a default active
ha_role_is b default standby
n=$(grep -c "ha-listen: peer 127.0.0.1.* refused (garbage)" "$SF_TMP/b.err") || n=0
[ "$n" = 1 ] || br_fail "bridge b logged $n garbage refusals of 127.0.0.1, not 1" b
for r in auth unknown_peer replay stall; do
	n=$(grep -c "ha-listen: peer 127.0.0.1.* refused ($r)" "$SF_TMP/b.err") || n=0
	[ "$n" = 1 ] || br_fail "bridge b logged $n refusals ($r), not 1" b
done

# 3b. An authenticated peer (gnutls-cli with a's key): the role query answers; a command
#     that is not an HA verb is refused (protocol) and the connection closed; a commit
#     that is never confirmed (`takeover done`) is undone on b within the handover's time
#     (one that found the partition active already changes and undoes nothing).
tlscli() {
	gnutls-cli --pskusername a --pskkey "$ka" -p "$pb" 127.0.0.1 \
		--priority 'NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-PSK:+DHE-PSK' \
		>"$SF_TMP/cli.out" 2>"$SF_TMP/cli.err" || true
}
printf 'a:%s\nb:%s\n' "$ka" "$kb" >"$SF_TMP/keys/a.new"
(printf 'ha\n'; sleep 1) | tlscli
grep -aq '^default  *standby ' "$SF_TMP/cli.out" ||
	br_fail "role query over TLS: $(cat "$SF_TMP/cli.out" "$SF_TMP/cli.err")" b
(printf 'status\n'; sleep 1) | tlscli
grep -aq 'only the HA verbs here' "$SF_TMP/cli.out" ||
	br_fail "a console command over TLS: $(cat "$SF_TMP/cli.out" "$SF_TMP/cli.err")" b
refused_is b protocol 1
(printf 'takeover prepare default 9.9.1\ntakeover commit default 9.9.1\n'; sleep 4) | tlscli
grep -aq 'partition default: inactive -> active\|takeover: partition default: prepared' "$SF_TMP/cli.out" ||
	true
grep -q 'partition default: the handing-over bridge 127.0.0.1 (9.9.1) did not confirm in time: taking over undone' "$SF_TMP/b.err" ||
	br_fail "bridge b did not undo an unconfirmed commit: $(cat "$SF_TMP/cli.out")" b
ha_role_is b default standby
ha_role_is a default active
# A commit for a partition active already changes nothing, so nothing is undone either.
con_must b role default active
(printf 'takeover prepare default 9.9.3\ntakeover commit default 9.9.3\n'; sleep 3) | tlscli
grep -aq 'takeover: partition default: active already' "$SF_TMP/cli.out" ||
	br_fail "commit of an active partition: $(cat "$SF_TMP/cli.out")" b
! grep -q '(9.9.3).*taking over undone' "$SF_TMP/b.err" ||
	br_fail "bridge b undid a commit that changed nothing" b
ha_role_is b default active
con_must b role default standby
# The same, the asker gone before confirming: undone at once.
(printf 'takeover prepare default 9.9.2\ntakeover commit default 9.9.2\n'; sleep 0.5) | tlscli
for _ in $(seq 50); do
	grep -q '(9.9.2) closed the connection: taking over undone' "$SF_TMP/b.err" && break
	sleep 0.1
done
grep -q '(9.9.2) closed the connection: taking over undone' "$SF_TMP/b.err" ||
	br_fail "bridge b did not undo a commit whose asker left: $(cat "$SF_TMP/cli.out")" b
ha_role_is b default standby

# 4. A reload with a key file that fails its checks changes nothing; the right one back.
printf 'a:%s\nb:%s\n' "$ka" "$kb" >"$SF_TMP/keys/a.psk"
chmod 644 "$SF_TMP/keys/a.psk"
con_must_exit a 1 reload >/dev/null
grep -q "mode 0644 gives group or others access" "$SF_TMP/bcom.out" ||
	br_fail "reload with an open key file: $(cat "$SF_TMP/bcom.out")" a
con_must_exit a 1 handover >/dev/null
refused_is b unknown_peer 2
chmod 600 "$SF_TMP/keys/a.psk"
# This time by SIGHUP: the same reload.
n=$(grep -c 'ha-psk .*a.psk: 2 keys read again' "$SF_TMP/a.err") || n=0
kill -HUP "$(sf_child "$(br_pid a)")"
for _ in $(seq 100); do
	[ "$(grep -c 'ha-psk .*a.psk: 2 keys read again' "$SF_TMP/a.err")" -gt "$n" ] && break
	sleep 0.1
done
[ "$(grep -c 'ha-psk .*a.psk: 2 keys read again' "$SF_TMP/a.err")" -gt "$n" ] ||
	br_fail "SIGHUP did not read the keys again" a
con_must a handover
ha_role_is a default standby
ha_role_is b default active
refused_is b auth 1
refused_is b busy 0
# The metric says the same (the metrics file, written every second).
for _ in $(seq 50); do
	grep -q '^ib2roce_ha_peer_refused_total{reason="unknown_peer"} 2$' "$SF_TMP/b.prom" && break
	sleep 0.1
done
for r in auth:1 unknown_peer:2 replay:1 garbage:2 stall:1 protocol:1 busy:0; do
	grep -q "^ib2roce_ha_peer_refused_total{reason=\"${r%:*}\"} ${r#*:}$" "$SF_TMP/b.prom" ||
		br_fail "metrics: no ${r%:*} ${r#*:}: $(grep ha_peer_refused "$SF_TMP/b.prom")" b
done
# More than 8 connections at once: the ninth is closed at once (busy); the roles stay.
python3 "$probe" flood 127.0.0.1 "$pb" 8 >"$SF_TMP/p.out" || br_fail "flood: $(cat "$SF_TMP/p.out")" b
refused_is b busy 1
for _ in $(seq 100); do
	con_must b ha
	grep -q '^ha_listen .* sessions=0 ' "$SF_TMP/bcom.out" && break
	sleep 0.1
done
grep -q '^ha_listen .* sessions=0 ' "$SF_TMP/bcom.out" ||
	br_fail "the silent connections were not closed: $(cat "$SF_TMP/bcom.out")" b
# The 8 silent ones: closed by the bridge at 2 s (stall) or by the probe before that
# (garbage: a connection that ends without a handshake); 8 in all.
g=$(sed -n 's/^ha_peer_refused .* garbage=\([0-9]*\) stall=\([0-9]*\) .*/\1 \2/p' "$SF_TMP/bcom.out")
[ $((${g% *} + ${g#* })) = $((2 + 1 + 8)) ] ||
	br_fail "the silent connections: garbage and stall $g, not 11 in all" b
ha_role_is b default active
ha_role_is a default standby

# 5. The handover's rules over TLS. A peer that cannot forward (its RoCE port down)
#    refuses each partition, every partition is tried, nothing changes; a stopped peer
#    (SIGSTOP: TCP accepted by its kernel, no handshake) ends the handover at its
#    deadline with nothing changed on either side, also after it runs again.
con_must b handover
ha_role_is a default active
con_must a role p2 active
con_must b role p2 standby
"$SIMFAB" port sim_roce3 down >/dev/null
con_must_exit a 1 handover >/dev/null
[ "$(grep -c 'refused: cannot forward it here: RoCE sim_roce3 port 1 down' "$SF_TMP/bcom.out")" = 2 ] ||
	br_fail "handover to a peer with its port down: $(cat "$SF_TMP/bcom.out")" a
grep -q '^handover: 0 of 2 partitions handed over$' "$SF_TMP/bcom.out" ||
	br_fail "handover to a peer with its port down: $(cat "$SF_TMP/bcom.out")" a
"$SIMFAB" port sim_roce3 up >/dev/null
ha_role_is a default active
ha_role_is a p2 active
ha_role_is b default standby
ha_role_is b p2 standby
for _ in $(seq 100); do con_bc b health >/dev/null; [ "$CON_RC" = 0 ] && break; sleep 0.1; done
kill -STOP "$(sf_child "$(br_pid b)")"
con_must_exit a 1 handover >/dev/null
kill -CONT "$(sf_child "$(br_pid b)")"
[ "$(grep -c 'not handed over: the peer: no answer within the handover.s time' "$SF_TMP/bcom.out")" = 2 ] ||
	br_fail "handover to a stopped peer: $(cat "$SF_TMP/bcom.out")" a
sleep 1
ha_role_is a default active
ha_role_is a p2 active
ha_role_is b default standby
ha_role_is b p2 standby
# And after all that, a handover of both partitions goes through.
con_must a handover
grep -q '^handover: 2 of 2 partitions handed over$' "$SF_TMP/bcom.out" ||
	br_fail "handover of both partitions: $(cat "$SF_TMP/bcom.out")" a
ha_role_is b default active
ha_role_is b p2 active
br_stop a
br_stop b
allow=$(br_nic a IB)
if grep -q 'a worker did not empty its queues' "$SF_TMP/a.err"; then
	sf_log "handover over TLS: a's worker was starved (did not empty its queues): loss $lost2 not checked"
else
	[ "$lost2" -le "$allow" ] ||
		br_fail "handover over TLS lost $lost2 packets, a's NIC dropped $allow" a
fi
sf_log "PASS"
