#!/bin/bash
# Bad console input gets a one-line message that names the item, exit status 1, and
# changes nothing: `help` of a command that does not exist (it printed nothing and
# succeeded), and capture start's count and snaplen values (the message was a bare
# "'abc' is not a number", naming neither the command nor the item); bcom pointed at a
# file that is not a socket.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-badinput
g=239.1.2.3
br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -m "$g"
before=$(con_ok bridge multicast)

# bad COMMAND... MESSAGE_REGEX: bcom exits 1 and its whole output is one line matching
# the extended regex.
bad() {
	local want=${*: -1} out

	out=$(con_must_exit bridge 1 "${@:1:$#-1}")
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] ||
		br_fail "bcom ${*:1:$#-1}: more than one line: $out" bridge
	con_expect_in "$out" "$want" "bcom ${*:1:$#-1}"
}

bad help nosuch "^help: no command 'nosuch' \(help lists them\)$"
bad help "join x" "^help: no command 'join x' \(help lists them\)$"
bad capture start x.pcap count abc "^capture start: count 'abc' is not a number$"
bad capture start x.pcap count 0 "^capture start: count '0' is out of range 1\.\."
bad capture start x.pcap snaplen 10 "^capture start: snaplen '10' is out of range 64\.\.65535$"
bad capture start x.pcap snaplen abc "^capture start: snaplen 'abc' is not a number$"

# What works still works: help of a command (by its prefix), the whole list.
out=$(con_ok bridge help cap)
con_expect_in "$out" "^capture start FILE" "help cap"
out=$(con_ok bridge help)
con_expect_in "$out" "^Commands may be abbreviated" "help"

# bcom to a path that is not a socket (a config file given as --control): exit 3 and
# "not a socket" (it said "Connection refused", as for a bridge that is not running).
rc=0
"$BCOM" --control "$SF_TMP/bridge.err" status >"$SF_TMP/ns.out" 2>&1 || rc=$?
[ "$rc" = 3 ] || br_fail "bcom --control FILE: exit $rc, expected 3" bridge
grep -qx "bcom: no bridge at $SF_TMP/bridge.err: not a socket (--control names the bridge's socket)" \
	"$SF_TMP/ns.out" || br_fail "bcom --control FILE: $(cat "$SF_TMP/ns.out")" bridge

# Nothing changed: no capture, the same groups.
out=$(con_ok bridge capture status)
con_expect_in "$out" "^capture: none" "capture status after the refused starts"
[ "$(con_ok bridge multicast)" = "$before" ] || br_fail "multicast changed" bridge
br_stop bridge
sf_log "PASS"
