#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# interop.sh PGMTOOL COMPARE_SCRIPT FIXTURES_DIR [OPENPGM_SEND OPENPGM_RECV]
#
# PGM from an independent implementation (OpenPGM 5.3, Debian libpgm-dev), read by pgm/
# and by tshark, field by field.
#
# Three private network namespaces: sender (192.0.2.1) -- bridge -- receiver (192.0.2.2),
# TEST-NET addresses, UDP encapsulation on port 3056. An nftables rule on the bridge
# drops three ODATA packets (numgen counts ODATA only: the 6th, 7th and the 22nd, a
# fragment) so that the OpenPGM receiver NAKs and the sender answers with NCF and
# RDATA. dumpcap records what reaches the receiver. Checks:
#   - the receiver got every message (the repairs worked);
#   - tshark and pgm/ agree on every field of every PGM packet (compare_tshark.sh);
#   - the capture holds SPM, ODATA with OPT_FRAGMENT, NAK, NCF, RDATA and SPM with
#     OPT_FIN;
#   - replayed through the stream table, the stream shows the two gaps, the three
#     missed SQNs and their three repairs, and ends in state fin.
# With PGM_UPDATE_FIXTURES=1 the capture and one packet of each kind are saved to
# FIXTURES_DIR (see its README.md). Needs root (namespaces): exits 77 otherwise, or when
# OpenPGM, ip, nft, dumpcap or tshark is missing. Run time about 10 s.
set -u
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

tool=$1
compare=$2
fixtures=$3
send=${4:-}
recv=${5:-}

skip() {
	echo "interop: skipped: $*"
	exit 77
}

[ -n "$send" ] && [ -n "$recv" ] || skip "built without OpenPGM (libpgm-dev)"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
for cmd in ip nft dumpcap tshark timeout; do
	command -v "$cmd" >/dev/null 2>&1 || skip "$cmd not installed"
done

tag=$$
ns_s=pgmS$tag
ns_r=pgmR$tag
ns_b=pgmB$tag
tmp=$(mktemp -d)
dump_pid=
recv_pid=

cleanup() {
	[ -n "$recv_pid" ] && kill "$recv_pid" 2>/dev/null
	[ -n "$dump_pid" ] && kill "$dump_pid" 2>/dev/null
	wait 2>/dev/null
	# Deleting a namespace deletes its veth ends, bridge and nftables tables.
	for ns in "$ns_s" "$ns_r" "$ns_b"; do
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "interop: FAIL: $*"
	exit 1
}

GROUP=239.192.0.1
SRC=192.0.2.1
DST=192.0.2.2
PORT=3056
MESSAGES=20 # small ones; the sender adds one of 4000 bytes (3 fragments)

# ---- network ----
ip netns add "$ns_s" 2>/dev/null || skip "ip netns add failed (no namespace support?)"
ip netns add "$ns_r" && ip netns add "$ns_b" || fail "ip netns add"
ip link add "s$tag" type veth peer name "bs$tag" &&
	ip link add "r$tag" type veth peer name "br$tag" &&
	ip link set "s$tag" netns "$ns_s" && ip link set "bs$tag" netns "$ns_b" &&
	ip link set "r$tag" netns "$ns_r" && ip link set "br$tag" netns "$ns_b" ||
	fail "veth setup"
ip -n "$ns_b" link add br0 type bridge mcast_snooping 0 &&
	ip -n "$ns_b" link set "bs$tag" master br0 &&
	ip -n "$ns_b" link set "br$tag" master br0 || fail "bridge setup"
for l in lo br0 "bs$tag" "br$tag"; do
	ip -n "$ns_b" link set "$l" up || fail "link up $l"
done
ip -n "$ns_s" addr add "$SRC/24" dev "s$tag" && ip -n "$ns_r" addr add "$DST/24" dev "r$tag" ||
	fail "addresses"
for pair in "$ns_s s$tag" "$ns_r r$tag"; do
	set -- $pair
	ip -n "$1" link set lo up && ip -n "$1" link set "$2" up &&
		ip -n "$1" route add 224.0.0.0/4 dev "$2" || fail "routes in $1"
done

# Drop the 6th, 7th and 22nd ODATA crossing the bridge (the sender never learns of it).
ip netns exec "$ns_b" nft -f - <<EOF || fail "nft"
table bridge pgm_loss {
	chain drop_odata {
		type filter hook forward priority 0; policy accept;
		udp dport $PORT @th,96,8 0x04 numgen inc mod 1000 { 5, 6, 21 } counter drop
	}
}
EOF

# ---- traffic ----
ip netns exec "$ns_r" dumpcap -q -P -i "r$tag" -f udp -w "$tmp/cap.pcap" \
	>"$tmp/dumpcap.log" 2>&1 &
dump_pid=$!
t_wait_until 5 test -s "$tmp/cap.pcap" || fail "dumpcap did not start: $(cat "$tmp/dumpcap.log")"

ip netns exec "$ns_r" timeout 30 "$recv" "$DST;$GROUP" $((MESSAGES + 1)) 15000 \
	>"$tmp/recv.log" 2>&1 &
recv_pid=$!
sleep 0.3
ip netns exec "$ns_s" timeout 30 "$send" "$SRC;$GROUP" $MESSAGES 1500 >"$tmp/send.log" 2>&1 ||
	fail "sender: $(cat "$tmp/send.log")"
wait "$recv_pid"
recv_rc=$?
recv_pid=
sleep 0.3
kill -INT "$dump_pid" 2>/dev/null
wait "$dump_pid" 2>/dev/null
dump_pid=
cat "$tmp/send.log" "$tmp/recv.log"
[ $recv_rc -eq 0 ] || fail "OpenPGM receiver did not get every message"
dropped=$(ip netns exec "$ns_b" nft list table bridge pgm_loss |
	sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
[ "$dropped" = 3 ] || fail "expected 3 ODATA dropped on the bridge, nft says '$dropped'"

# ---- what the capture holds, in tshark's eyes ----
count() {
	tshark -n -r "$tmp/cap.pcap" -d udp.port==$PORT,pgm -Y "$1" 2>/dev/null | wc -l
}
for f in "pgm.hdr.type == 0x00" "pgm.hdr.type == 0x04" "pgm.hdr.type == 0x08" \
	"pgm.hdr.type == 0x0a" "pgm.hdr.type == 0x05" \
	"pgm.hdr.type == 0x04 && pgm.opts.fragment.first_sqn" \
	"pgm.hdr.type == 0x00 && pgm.opts.tlen"; do
	n=$(count "$f")
	echo "interop: $n packets match '$f'"
	[ "$n" -gt 0 ] || fail "no packet matches '$f'"
done

# ---- field by field ----
sh "$compare" "$tool" "$tmp/cap.pcap" "$tmp/tshark.tsv" || fail "pgm/ and tshark disagree"

# ---- stream accounting ----
"$tool" streams "$tmp/cap.pcap" >"$tmp/streams.txt" || fail "pgmtool streams"
cat "$tmp/streams.txt"
line=$(grep "group=0xefc00001 " "$tmp/streams.txt" | grep " odata=" | grep -v " odata=0 ")
[ -n "$line" ] || fail "no data stream in the replay"
for kv in "state=fin" "odata=$MESSAGES" "gaps=2" "missed=3" "repairs=3" "dups=0" \
	"malformed=0" "bad_checksum=0" "odata_last=$((MESSAGES + 2))"; do
	case " $line " in
	*" $kv "*) ;;
	*) fail "stream replay: expected $kv" ;;
	esac
done
for k in rdata nak ncf spm fin; do
	v=$(echo "$line" | sed -n "s/.* $k=\([0-9]*\).*/\1/p")
	[ -n "$v" ] && [ "$v" -gt 0 ] || fail "stream replay: expected $k > 0"
done

# ---- fixtures ----
if [ "${PGM_UPDATE_FIXTURES:-0}" = 1 ]; then
	sh "$(dirname "$0")/update_fixtures.sh" "$tool" "$tmp/cap.pcap" "$tmp/tshark.tsv" \
		"$fixtures" || fail "fixture update"
fi
echo "interop: OK"
