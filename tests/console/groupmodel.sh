#!/bin/bash
# The group model of issue 25 as the operator meets it: the forms of a group spec (an
# IPv4 group, an IPv6 group, IB=RoCE with a native MGID), per-side Q_Keys and --qkey,
# and what the control plane does with them: refusals at start (exit status 2, one line
# naming the spec and why, nothing started), duplicates across syntaxes (at start, in a
# config file, by the console's join, and by a reload, which then changes nothing), the
# console's multicast table (whole specs, the qkey column), stats --json, the Prometheus
# file (valid with IPv6 labels: promtool), join and leave in every form (leave by another
# spelling, by an address, refused when an address names two groups), HA partitions of
# IPv6 groups, a reload that changes a Q_Key (the group is left and joined again), and
# Tab completion of a leave with an "=" spec. Forwarding of IPv6 RoCE groups is not
# tested here (the RoCE side's IPv6 join is another part of issue 25): only the groups
# whose RoCE side is IPv4 are waited for.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-groupmodel
sock=$SF_TMP/bridge.sock
export HOME=$SF_TMP

# refused NAME MESSAGE ARG...: ib2roce ARG... exits 2 before starting anything, with
# one line on stderr that holds MESSAGE (fixed text).
refused() {
	local name=$1 want=$2 rc=0

	shift 2
	rm -f "$sock"
	timeout 20 "$IB2ROCE" --control "$sock" -d sim_ib0 -r sim_roce0 "$@" \
		>"$SF_TMP/$name.out" 2>"$SF_TMP/$name.err" || rc=$?
	[ "$rc" = 2 ] || sf_fail "$name: exit status $rc, expected 2" "$SF_TMP/$name.err"
	grep -qF -- "$want" "$SF_TMP/$name.err" || sf_fail "$name: expected '$want'" "$SF_TMP/$name.err"
	[ "$(wc -l <"$SF_TMP/$name.err")" = 1 ] || sf_fail "$name: more than one line" "$SF_TMP/$name.err"
	[ ! -e "$sock" ] || sf_fail "$name: a console socket was created"
}

refused mgid "group 'fe80::1': IB MGID must start with ff" -m fe80::1
refused mgid2 "group '2001:db8::1=239.1.2.3': IB side: IB MGID must start with ff" \
	-m 2001:db8::1=239.1.2.3
refused badmgid "group 'ff12::zz': 'ff12::zz' is not an MGID in IPv6 notation" -m ff12::zz
refused v6uni "group 'ff12::1=fe80::1': RoCE side: not an IPv6 multicast address (ff00::/8)" \
	-m ff12::1=fe80::1
refused v6scope "group 'ff01:0:2:c985::': IPv6 scope 1 (interface-local) never leaves the host on RoCE (RFC 4291)" \
	-m ff01:0:2:c985::
refused v6fmt "group 'ff12::1/IPv4': /fmt applies to IPv4 groups only" -m ff12::1/IPv4
refused rport "group 'ff12::1=239.1.2.3:5000': RoCE side: the RoCE side is an address only" \
	-m ff12::1=239.1.2.3:5000
refused unknownopt "group 'ff12::1#qos=1': unknown option 'qos=1'" -m 'ff12::1#qos=1'
refused qkeyrange "group '239.1.2.3#qkey=0x100000000': qkey must be a 32-bit Q_Key" \
	-m '239.1.2.3#qkey=0x100000000'
refused qkeytwice "group '239.1.2.3#qkey=1,qkey=1': qkey given twice" -m '239.1.2.3#qkey=1,qkey=1'
refused qkeyboth "group '239.1.2.3#qkey=1,ibqkey=2': qkey= sets both sides" \
	-m '239.1.2.3#qkey=1,ibqkey=2'
refused optqkey "'0x1ffffffff' is not a 32-bit Q_Key (decimal or 0x hex)" --qkey 0x1ffffffff -m ff12::1
# Duplicates across syntaxes, each message naming both.
refused dupv4 "group 'ff12:401b:ffff::1234=239.1.2.3': its RoCE group is already bridged by '239.1.2.3'" \
	-m 239.1.2.3 -m ff12:401b:ffff::1234=239.1.2.3
refused dupv6 "group 'FF12:0::1#qkey=5': its IB MGID is already bridged by 'ff12::1'" \
	-m ff12::1 -m 'FF12:0::1#qkey=5'
refused dupnative "group 'ff12::1=ff15::7': its IB MGID is already bridged by 'ff12::1=239.1.2.3'" \
	-m ff12::1=239.1.2.3 -i ff12::1=ff15::7
refused duprdma "group 'ff12:4001:ffff::f01:203=ff15::9': its IB MGID is already bridged by '239.1.2.3'" \
	-m 239.1.2.3 -m ff12:4001:ffff::f01:203=ff15::9
# In a config file (the value is not repeated there: file:line and the reason).
cat >"$SF_TMP/dup.conf" <<'C'
roce sim_roce0
multicast ff12::40=239.1.2.40
multicast 239.1.2.40#qkey=0x11111111
C
rc=0
timeout 20 "$IB2ROCE" --control "$sock" -c "$SF_TMP/dup.conf" >"$SF_TMP/dupconf.out" \
	2>"$SF_TMP/dupconf.err" || rc=$?
[ "$rc" = 2 ] || sf_fail "dup.conf: exit status $rc, expected 2" "$SF_TMP/dupconf.err"
grep -Fq "dup.conf:3: multicast: group '...': its RoCE group is already bridged by 'ff12::40=239.1.2.40'" \
	"$SF_TMP/dupconf.err" || sf_fail "dup.conf: message" "$SF_TMP/dupconf.err"

# A running bridge, from a config file (reloaded below), with an --qkey default.
conf=$SF_TMP/bridge.conf
cat >"$conf" <<'C'
device sim_ib0
roce sim_roce0
multicast 239.1.2.3
multicast ff12:401b:ffff::1234=239.1.2.9#ibqkey=0x11111111
qkey 0x22222222
multicast ff12::5
C
br_bridge bridge 2 --workers 1 -c "$conf" --metrics-file "$SF_TMP/ib2roce.prom" \
	-e statint=1 --partition p6:ff12::5,239.1.2.9
pid=$(sf_child "$(br_pid bridge)")

# multicast: the whole specs, and the Q_Keys (not rdma_cm's somewhere: the qkey column).
out=$(con_ok bridge multicast)
con_expect_in "$out" "^group +dir .* forwarding +qkey$" "multicast: a qkey column"
con_expect_in "$out" "^239\.1\.2\.3 +both .* 0x01234567$" "multicast: the IPv4 group"
con_expect_in "$out" "^ff12:401b:ffff::1234=239\.1\.2\.9#ibqkey=0x11111111 +both .* ib:0x11111111/roce:0x01234567$" \
	"multicast: the native group"
con_expect_in "$out" "^ff12::5 +both .* 0x22222222$" "multicast: the IPv6 group with --qkey's"

# stats --json: the sides of each group.
j='.groups[] | select(.group == "ff12::5")'
[ "$(con_json bridge "$j | [.addr, .family, .ib_native, .ib.mgid, .roce.mgid, .ib.qkey, .roce.qkey] | map(tostring) | join(\" \")")" = \
	"ff12::5 ipv6 true ff12::5 ff12::5 572662306 572662306" ] ||
	br_fail "stats --json: the IPv6 group: $(con_json bridge "$j")" bridge
j='.groups[] | select(.group == "ff12:401b:ffff::1234=239.1.2.9#ibqkey=0x11111111")'
[ "$(con_json bridge "$j | [.addr, .family, .ib_native, .ib.mgid, .roce.mgid, .ib.qkey, .roce.qkey] | map(tostring) | join(\" \")")" = \
	"239.1.2.9 ipv4 true ff12:401b:ffff::1234 ::ffff:239.1.2.9 286331153 19088743" ] ||
	br_fail "stats --json: the native group: $(con_json bridge "$j")" bridge
j='.groups[] | select(.group == "239.1.2.3")'
[ "$(con_json bridge "$j | [.addr, .family, .ib_native, .ib.mgid, .roce.mgid] | map(tostring) | join(\" \")")" = \
	"239.1.2.3 ipv4 false ff12:4001:ffff::f01:203 ::ffff:239.1.2.3" ] ||
	br_fail "stats --json: the IPv4 group: $(con_json bridge "$j")" bridge

# HA: the partition holds the IPv6 group and the native one (matched by their RoCE
# group), not the IPv4 group.
[ "$(con_json bridge '.ha.partitions[] | select(.name == "p6") | .groups')" = 2 ] ||
	br_fail "partition p6: $(con_json bridge '.ha.partitions')" bridge

# Prometheus: IPv6 specs as label values, a valid file.
prom=$SF_TMP/ib2roce.prom
t_wait_until 10 grep -sq 'ib2roce_group_joined{group="ff12::5",side="IB"}' "$prom" ||
	br_fail "metrics file: no ib2roce_group_joined of ff12::5: $(grep group_joined "$prom" 2>&1)" bridge
grep -qF 'ib2roce_group_forwarded_packets_total{group="ff12:401b:ffff::1234=239.1.2.9#ibqkey=0x11111111",direction="ib_to_roce"}' \
	"$prom" || br_fail "metrics file: the native group's label" bridge
promtool check metrics <"$prom" >"$SF_TMP/promtool.out" 2>&1 ||
	br_fail "promtool check metrics: $(cat "$SF_TMP/promtool.out")" bridge

# join: every form; duplicates across syntaxes refused, naming both.
con_expect_in "$(con_ok bridge join ff12::6)" "^joining ff12::6 \(both\)$" "join ff12::6"
# Not in partition p6: another IPv6 group (all of them had the IPv4 address 0).
[ "$(con_json bridge '.ha.partitions[] | select(.name == "p6") | .groups')" = 2 ] ||
	br_fail "partition p6 after join ff12::6: $(con_json bridge '.ha.partitions')" bridge
con_expect_in "$(con_ok bridge ha)" "^p6 +active +2 " "ha: p6 holds 2 groups"
con_expect_in "$(con_ok bridge join 'ff12::8=239.1.2.20#roceqkey=0x33' in)" \
	"^joining ff12::8=239.1.2.20#roceqkey=0x33 \(in\)$" "join ff12::8=239.1.2.20"
con_wait_json bridge '.groups[] | select(.group == "ff12::8=239.1.2.20#roceqkey=0x33") | .ib.state + .roce.state' joinedjoined
out=$(con_must_exit bridge 1 join FF12:0::6)
con_expect_in "$out" "^join: FF12:0::6 is already bridged as 'ff12::6' \(the same IB MGID\)$" "join FF12:0::6"
out=$(con_must_exit bridge 1 join ff12::77=239.1.2.3)
con_expect_in "$out" "^join: ff12::77=239.1.2.3 is already bridged as '239.1.2.3' \(the same RoCE group\)$" \
	"join of 239.1.2.3's RoCE group"
out=$(con_must_exit bridge 1 join ff12:401b:ffff::1234)
con_expect_in "$out" "already bridged as 'ff12:401b:ffff::1234=239.1.2.9#ibqkey=0x11111111' \(the same IB MGID\)$" \
	"join of the native MGID as an IPv6 group"
out=$(con_must_exit bridge 1 join fe80::1)
con_expect_in "$out" "^join: group 'fe80::1': IB MGID must start with ff$" "join fe80::1"
out=$(con_must_exit bridge 1 join 'ff12::9#ibqkey=0x1,qkey=2')
con_expect_in "$out" "qkey= sets both sides: not with ibqkey= or roceqkey=$" "join with two Q_Key options"
[ "$(con_json bridge '.groups | length')" = 5 ] || br_fail "a refused join changed the groups" bridge

# leave: by another spelling, by an address; an address of two groups is refused.
con_expect_in "$(con_ok bridge leave FF12:0:0::6)" "^left FF12:0:0::6$" "leave FF12:0:0::6"
con_expect_in "$(con_ok bridge leave 239.1.2.20)" "^left 239.1.2.20$" "leave by the RoCE address"
con_ok bridge join ff12::30=ff12::31 >/dev/null
con_ok bridge join ff12::31=239.1.2.31 >/dev/null
out=$(con_must_exit bridge 1 leave ff12::31)
con_expect_in "$out" "^leave: 'ff12::31' names two groups, 'ff12::30=ff12::31' and 'ff12::31=239\.1\.2\.31': give the whole spec$" \
	"leave of an address of two groups"
con_ok bridge leave ff12::31=239.1.2.31 >/dev/null
con_ok bridge leave ff12::31 >/dev/null # one group has it now: ff12::30=ff12::31
[ "$(con_json bridge '[.groups[].group] | join(",")')" = \
	"239.1.2.3,ff12:401b:ffff::1234=239.1.2.9#ibqkey=0x11111111,ff12::5" ] ||
	br_fail "groups after the leaves: $(con_json bridge '[.groups[].group]')" bridge

# Tab completes a leave from the groups, "=" and all (readline would cut at the "=").
cat >"$SF_TMP/tab.steps" <<'S'
expect ib2roce> $
send leave ff12:401b:ffff::1234=239\t
expect ff12:401b:ffff::1234=239\.1\.2\.9#ibqkey=0x11111111 $
send \x15
send leave ff12::\t
expect leave ff12::5 $
send \x15
send quit\r
exit 0
S
timeout -k 2 60 python3 "$(dirname "$0")/ptyrun.py" "$SF_TMP/tab.steps" -- \
	"$BCOM" --control "$sock" >"$SF_TMP/tab.out" 2>&1 ||
	br_fail "Tab completion: $(tail -c 2000 "$SF_TMP/tab.out")" bridge

# A reload that would add a duplicate is refused: nothing changes.
before=$(con_json bridge '[.groups[].group] | join(",")')
cat >>"$conf" <<'C'
multicast 239.1.2.50
multicast ff12::50=239.1.2.3
C
out=$(con_must_exit bridge 1 reload)
con_expect_in "$out" "multicast: group '\.\.\.': its RoCE group is already bridged by '\.\.\.'" \
	"reload: the duplicate named"
[ "$(con_json bridge '[.groups[].group] | join(",")')" = "$before" ] ||
	br_fail "a refused reload changed the groups" bridge
# A reload that changes a Q_Key: that group is left and joined again, the others stay.
cat >"$conf" <<'C'
device sim_ib0
roce sim_roce0
multicast 239.1.2.3
multicast ff12:401b:ffff::1234=239.1.2.9#ibqkey=0x11111112
qkey 0x22222222
multicast ff12::5
C
out=$(con_ok bridge reload)
con_expect_in "$out" "^leaving ff12:401b:ffff::1234=239\.1\.2\.9#ibqkey=0x11111111$" "reload leaves the changed group"
con_expect_in "$out" "^joining ff12:401b:ffff::1234=239\.1\.2\.9#ibqkey=0x11111112 \(both\)$" "reload joins it again"
con_expect_in "$out" "^1 group added, 1 removed$" "reload: only that group"
[ "$(con_json bridge '.groups[] | select(.group | startswith("ff12:401b")) | .ib.qkey')" = 286331154 ] ||
	br_fail "the new IB Q_Key is not in stats --json" bridge
# The same file again: nothing to do (an IPv6 group is the same group).
con_expect_in "$(con_ok bridge reload)" "^0 groups added, 0 removed$" "reload of the same file"

br_stop bridge
sf_log "PASS"
