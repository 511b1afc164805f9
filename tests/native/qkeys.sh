#!/bin/bash
# Per-group Q_Keys: the channel layout and controlled Q_Keys.
# - A QP has one Q_Key: groups of different Q_Keys are on different channel pairs. A
#   bridge with -e mcqp=4 and four groups, two with rdma_cm's Q_Key and two with
#   0x11111111 (one of them IB-native), has two pairs: `bcom channels` shows each
#   channel's Q_Key, and the log names the pairs. A `join` at run time with a third
#   Q_Key (IB 0x22222222, RoCE 0x33333333) makes a third pair with those keys; one more
#   group of an existing key goes on its pair. A reload that changes a group's Q_Key
#   moves it to channels of the new key.
# - A group middleware made with its own Q_Key (a perftest pair's SA joins, 0x11111111):
#   an SA join with another Q_Key is refused (Request Invalid, logged with the status,
#   retried: `bcom events`), rdma_cm's join gets MULTICAST_ERROR -EINVAL, the
#   middleware's Q_Key joins.
# - A controlled Q_Key (high bit set) needs CAP_NET_RAW (Linux 6.4+, ib_uverbs_modify_qp;
#   simfabric enforces it): the bridge started without it (capsh --drop) refuses such a
#   group at start (exit 2, the group and the reason named), on the console's join
#   (nothing joined) and on a reload (nothing changed). With CAP_NET_RAW (root here) the
#   group is taken and its channel holds the key.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init native-qkeys
sf_need capsh
conf=$SF_TMP/bridge.conf
cat >"$conf" <<C
device sim_ib0
roce sim_roce0
workers 1
multicast 239.1.2.3
multicast 239.1.2.4#qkey=0x11111111
multicast 239.1.2.5
multicast ff12:401b:ffff::1234=239.1.2.6#qkey=0x11111111
enable mcqp=4
C
br_bridge bridge 4 -c "$conf"

# chan_qkey SIDE INDEX: the qkey column of `bcom channels` for that channel.
chan_qkey() {
	con_ok bridge channels | awk -v s="$1" -v k="$2" '$1 == s && $2 == k { print $NF }'
}
chans=$(con_ok bridge channels)
[ "$(printf '%s\n' "$chans" | awk 'NR > 1 && $1 == "IB"' | wc -l)" = 2 ] ||
	br_fail "two Q_Keys, four groups, mcqp 4: expected two channel pairs:
$chans" bridge
keys=$(printf '%s\n' "$chans" | awk 'NR > 1 { print $1, $NF }' | sort | tr '\n' ' ')
[ "$keys" = "IB 0x01234567 IB 0x11111111 RoCE 0x01234567 RoCE 0x11111111 " ] ||
	br_fail "channel Q_Keys: $keys" bridge
# gpair ADDR: the pair of the group whose spec starts with ADDR (stats --json).
gpair() {
	con_json bridge "[.groups[] | select(.group | startswith(\"$1\")) | .pair] | first"
}
# Each group is on the pair of its Q_Key: the two groups of a key share a pair.
p0=$(gpair 239.1.2.3) p1=$(gpair 239.1.2.4)
[ "$p0" != "$p1" ] && [ "$(gpair 239.1.2.5)" = "$p0" ] && [ "$(gpair ff12:401b:ffff::1234)" = "$p1" ] ||
	br_fail "groups not on the pairs of their Q_Keys: $(con_ok bridge multicast)" bridge
[ "$(chan_qkey IB "$p0")" = 0x01234567 ] && [ "$(chan_qkey RoCE "$p1")" = 0x11111111 ] ||
	br_fail "the pairs' Q_Keys: $(con_ok bridge channels)" bridge

# A third Q_Key pair at run time: another pair, keyed per side.
out=$(con_ok bridge join '239.1.2.7#ibqkey=0x22222222,roceqkey=0x33333333')
con_expect_in "$out" "joining 239.1.2.7" "join with a third Q_Key"
con_wait_json bridge '.groups[] | select(.group | startswith("239.1.2.7#")) | .ib.state + .roce.state' joinedjoined
[ "$(chan_qkey IB 2)" = 0x22222222 ] && [ "$(chan_qkey RoCE 2)" = 0x33333333 ] ||
	br_fail "the third pair's Q_Keys: $(con_ok bridge channels)" bridge
# One more group of an existing key: on its pair (1), no new pair.
con_must bridge join '239.1.2.8#qkey=0x11111111'
[ "$(con_ok bridge channels | awk 'NR > 1 && $1 == "IB"' | wc -l)" = 3 ] ||
	br_fail "a group of an existing Q_Key made a pair: $(con_ok bridge channels)" bridge
[ "$(gpair 239.1.2.8)" = "$p1" ] || br_fail "239.1.2.8 is not on the 0x11111111 pair" bridge

# A group that middleware made with its own Q_Key (a perftest pair in duration mode
# holds its SA joins of ff12:401b:ffff::99 with 0x11111111): a join asking another Q_Key
# is refused by the SA (OpenSM ERR 1B30), logged once with the SA's status and retried;
# rdma_cm's join (no "#qkey": 0x01234567) gets MULTICAST_ERROR -EINVAL; with the
# middleware's Q_Key it joins.
if command -v ib_send_bw >/dev/null; then
	mwport=$(sf_free_tcp_port)
	mwargs=(-c UD -g -D 20 -p "$mwport" -M 255:18:64:27:255:255:0:0:0:0:0:0:0:0:0:153)
	sf_start "$SF_TMP/mw-server.txt" 60 ib_send_bw -d sim_ib1 "${mwargs[@]}"
	mwsrv=$SF_PID
	sf_wait_line "$SF_TMP/mw-server.txt" 'Waiting for client' "$mwsrv" 20
	sf_start "$SF_TMP/mw-client.txt" 60 ib_send_bw -d sim_ib2 "${mwargs[@]}" 127.0.0.1
	mwcli=$SF_PID
	# The server printed the pair's addresses: its SA join was made before.
	sf_wait_line "$SF_TMP/mw-server.txt" 'remote address' "$mwsrv" 20
	con_must bridge join 'ff12:401b:ffff::99=239.1.2.20#qkey=0x22222222'
	sf_wait_line "$SF_TMP/bridge.err" \
		'IB SA join of ff12:401b:ffff::99=239.1.2.20#qkey=0x22222222 with Q_Key 0x22222222 refused: status 0x0200, request invalid' \
		"$(sf_child "$(br_pid bridge)")" 10
	con_expect_in "$(con_ok bridge events)" 'join IB .*ff12:401b:ffff::99=239.1.2.20#qkey=0x22222222' \
		"events: the refused SA join waits to retry"
	con_must bridge leave 'ff12:401b:ffff::99=239.1.2.20#qkey=0x22222222'
	con_must bridge join 'ff12:401b:ffff::99=239.1.2.21'
	sf_wait_line "$SF_TMP/bridge.err" \
		'IB ff12:401b:ffff::99=239.1.2.21: multicast error -22 \(Invalid argument\); joining again' \
		"$(sf_child "$(br_pid bridge)")" 10
	con_must bridge leave 'ff12:401b:ffff::99=239.1.2.21'
	con_must bridge join 'ff12:401b:ffff::99=239.1.2.22#qkey=0x11111111'
	con_wait_json bridge '.groups[] | select(.group | startswith("ff12:401b:ffff::99=")) | .ib.state + .roce.state' joinedjoined
	con_must bridge leave 'ff12:401b:ffff::99=239.1.2.22#qkey=0x11111111'
	kill "$mwcli" "$mwsrv" 2>/dev/null || true
	sf_wait_exit "$mwcli"
	sf_wait_exit "$mwsrv"
fi

# A controlled Q_Key with CAP_NET_RAW (the test runs as root): taken.
if [ "$(id -u)" = 0 ]; then
	con_must bridge join '239.1.2.9#qkey=0x80000001'
	con_wait_json bridge '.groups[] | select(.group | startswith("239.1.2.9#")) | .ib.state + .roce.state' joinedjoined
	[ "$(con_ok bridge channels | awk 'NR > 1 && $NF == "0x80000001"' | wc -l)" = 2 ] ||
		br_fail "no channel pair with the controlled Q_Key: $(con_ok bridge channels)" bridge
fi
# A reload that changes a group's Q_Key: the group is left and joined again, on channels
# of its new key (a pair no group uses any more takes it). The groups joined on the
# console are not in the file: the reload leaves them.
sed -i 's/^multicast 239.1.2.5$/multicast 239.1.2.5#qkey=0x44444444/' "$conf"
out=$(con_ok bridge reload)
con_expect_in "$out" "joining 239.1.2.5#qkey=0x44444444" "reload with a new Q_Key"
con_wait_json bridge '.groups[] | select(.group | startswith("239.1.2.5#")) | .ib.state + .roce.state' joinedjoined
p5=$(gpair 239.1.2.5)
[ "$(chan_qkey IB "$p5")" = 0x44444444 ] && [ "$(chan_qkey RoCE "$p5")" = 0x44444444 ] ||
	br_fail "after the reload 239.1.2.5's pair $p5 has not its new Q_Key: $(con_ok bridge channels)" bridge
[ "$(gpair 239.1.2.3)" = "$p0" ] && [ "$(chan_qkey IB "$p0")" = 0x01234567 ] ||
	br_fail "the reload moved 239.1.2.3 or re-keyed its pair" bridge
br_stop bridge

# Without CAP_NET_RAW: refused at start, on join, on reload.
why='controlled Q_Key \(high bit set\): the kernel gives it to a QP only with CAP_NET_RAW'
rc=0
capsh --drop=cap_net_raw -- -c "exec timeout -k 5 30 '$IB2ROCE' --debug --control '$SF_TMP/nocap0.sock' \
	-d sim_ib0 -r sim_roce0 --workers 0 -m 239.1.2.3 -m '239.1.2.4#qkey=0x80000001'" \
	>"$SF_TMP/nocap0.out" 2>"$SF_TMP/nocap0.err" || rc=$?
[ "$rc" != 0 ] || br_fail "a controlled Q_Key without CAP_NET_RAW was accepted at start" nocap0
grep -Eq "239.1.2.4#qkey=0x80000001: IB Q_Key 0x80000001 is a $why" "$SF_TMP/nocap0.err" ||
	br_fail "start: no refusal naming the group and the reason" nocap0

cat >"$conf" <<C
device sim_ib0
roce sim_roce0
workers 0
multicast 239.1.2.3
C
BR_BRIDGES="$BR_BRIDGES nocap"
br_start nocap 120 capsh --drop=cap_net_raw -- -c "exec '$IB2ROCE' --debug --control '$SF_TMP/nocap.sock' \
	--idle backoff -e statint=0 -c '$conf'"
SF_PIDS="$SF_PIDS $(sf_child "$BR_PID")"
t_wait_until 30 br_joined nocap 1 "$BR_PID" || br_fail "bridge without CAP_NET_RAW did not join" nocap
out=$(con_must_exit nocap 1 join '239.1.2.10#roceqkey=0x80000002')
con_expect_in "$out" "join: 239.1.2.10#roceqkey=0x80000002: RoCE Q_Key 0x80000002 is a $why" \
	"console join of a controlled Q_Key" nocap
con_expect_in "$(con_ok nocap multicast)" "239.1.2.3" "multicast" nocap
if con_ok nocap multicast | grep -q 239.1.2.10; then
	br_fail "a refused join left the group bridged" nocap
fi
cat >>"$conf" <<C
multicast 239.1.2.11
multicast 239.1.2.12#qkey=0x80000003
C
out=$(con_must_exit nocap 1 reload)
con_expect_in "$out" "reload refused: 239.1.2.12#qkey=0x80000003: IB Q_Key 0x80000003 is a $why" \
	"reload with a controlled Q_Key" nocap
con_expect_in "$out" "nothing changed" "reload with a controlled Q_Key" nocap
if con_ok nocap multicast | grep -q '239.1.2.1[12]'; then
	br_fail "a refused reload joined a group" nocap
fi
br_stop nocap
sf_log "PASS"
