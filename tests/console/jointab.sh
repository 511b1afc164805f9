#!/bin/bash
# Issue 25: join's Tab completion in bcom. The console's unbridged lists the configured
# groups that are not bridged now (one "spec dir" line each): none at start, a group left
# with leave (in its spec form, "=" and "#" included), not one bridged again by another
# spelling, and after a reload the file's groups (what the reload left and joined
# again). bcom's Tab after join completes those specs, then the direction; within a spec,
# after its '#' or a ',', the option names (not one given already, no blank after).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-jointab
sock=$SF_TMP/bridge.sock
export HOME=$SF_TMP

conf=$SF_TMP/bridge.conf
cat >"$conf" <<'C'
device sim_ib0
roce sim_roce0
multicast 239.1.2.3
multicast ff12:401b:ffff::1234=239.1.2.9#ibqkey=0x11111111
inbound 239.1.2.11
C
br_bridge bridge 3 --workers 1 -c "$conf"

# At start every configured group is bridged.
con_expect_in "$(con_ok bridge unbridged)" "^every configured group is bridged$" "unbridged at start"

# Left with leave (by an address): listed in its spec form with its direction.
con_ok bridge leave 239.1.2.9 >/dev/null
con_ok bridge leave 239.1.2.11 >/dev/null
out=$(con_ok bridge unbridged)
con_expect_in "$out" "^group +dir$" "unbridged: the header"
con_expect_in "$out" "^ff12:401b:ffff::1234=239\.1\.2\.9#ibqkey=0x11111111 +both$" "unbridged: the native group"
con_expect_in "$out" "^239\.1\.2\.11 +in$" "unbridged: the in group"
[ "$(printf '%s\n' "$out" | wc -l)" = 3 ] || br_fail "unbridged: 2 groups expected: $out" bridge
# A group joined again under another spelling (its IB MGID) is bridged.
con_ok bridge join ff12:401b:ffff::1234=239.1.2.9 >/dev/null
out=$(con_ok bridge unbridged)
if printf '%s\n' "$out" | grep -q "^ff12:401b"; then
	br_fail "unbridged: the group joined again by another spelling is listed: $out" bridge
fi
con_ok bridge leave 239.1.2.9 >/dev/null
# A group joined from the console is not the configuration's.
con_ok bridge join 239.1.2.77 >/dev/null
con_ok bridge leave 239.1.2.77 >/dev/null
if con_ok bridge unbridged | grep -q "239\.1\.2\.77"; then
	br_fail "unbridged lists a group that only the console joined" bridge
fi

# Tab after join: the unbridged specs ("=", ":" and "#" in one word), the direction, the
# options after '#' and ',' (qkey= not with ibqkey=; a given option not again).
cat >"$SF_TMP/tab.steps" <<'S'
expect ib2roce> $
send join ff12:4\t
expect join ff12:401b:ffff::1234=239\.1\.2\.9#ibqkey=0x11111111 $
send \x15
send join 239.1.2.1\t
expect join 239\.1\.2\.11 $
send \x15
send join 239.1.2.11 i\t
expect join 239\.1\.2\.11 in $
send \x15
send join 239.1.2.50#ro\t
expect join 239\.1\.2\.50#roceqkey=$
send \x15
send join 239.1.2.50#w=2,q\t
expect join 239\.1\.2\.50#w=2,qkey=$
send \x15
send join 239.1.2.50#ibqkey=5,roceqkey=6,\t
expect join 239\.1\.2\.50#ibqkey=5,roceqkey=6,w=$
send \x15
send quit\r
exit 0
S
timeout -k 2 60 python3 "$(dirname "$0")/ptyrun.py" "$SF_TMP/tab.steps" -- \
	"$BCOM" --control "$SF_TMP/bridge.sock" >"$SF_TMP/tab.out" 2>&1 ||
	br_fail "Tab completion: $(tail -c 2000 "$SF_TMP/tab.out")" bridge
# Completion changed nothing (unbridged is asked, never a join).
[ "$(con_json bridge '.groups | length')" = 1 ] || br_fail "Tab completion joined groups" bridge

# A reload: the file's groups now; the reload joins the left ones again.
cat >"$conf" <<'C'
device sim_ib0
roce sim_roce0
multicast 239.1.2.3
multicast 239.1.2.12
C
con_ok bridge reload >/dev/null
con_expect_in "$(con_ok bridge unbridged)" "^every configured group is bridged$" "unbridged after a reload"
con_ok bridge leave 239.1.2.12 >/dev/null
out=$(con_ok bridge unbridged)
con_expect_in "$out" "^239\.1\.2\.12 +both$" "unbridged after a reload and a leave"
[ "$(printf '%s\n' "$out" | wc -l)" = 2 ] || br_fail "unbridged after the reload: $out" bridge

br_stop bridge
sf_log "PASS"
