#!/bin/bash
# Console security: the socket is 0660 and belongs to the --control-group (so does its
# directory); uid 65534 is served when the group is its gid or one of its supplementary
# groups, and cannot even connect without it. The peer check behind the file mode: with
# the socket made world-writable (a misconfigured socket unit), a client outside the
# group connects and is refused by its credentials (SO_PEERCRED), with a message and a
# log line. Needs root (setpriv); skipped otherwise.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "perms: needs root and setpriv: skipped"
	exit 77
fi
sf_init console-perms
gid=4242
chmod 0711 "$SF_TMP"
mkdir -m 0755 "$SF_TMP/ctl"
sock=$SF_TMP/ctl/bridge.sock

br_start bridge 120 "$IB2ROCE" --debug --control "$sock" --control-group "$gid" --idle backoff \
	-e statint=0 -d sim_ib0 -r sim_roce0 -m 239.1.2.3
BR_BRIDGES=bridge
SF_PIDS="$SF_PIDS $(sf_child "$BR_PID")"
sf_wait_line "$SF_TMP/bridge.err" 'console on' "$BR_PID" 20
[ "$(stat -c '%a %g' "$sock")" = "660 $gid" ] ||
	br_fail "socket: $(stat -c '%a %g' "$sock"), expected 660 $gid" bridge

# A copy of bcom the other user can run whatever the build directory's permissions.
install -m 0755 "$BCOM" "$SF_TMP/bcom"

# as UID GID GROUPS COMMAND...: bcom as another user; output in $SF_TMP/as.out, status AS_RC.
as() {
	local uid=$1 g=$2 groups=$3

	shift 3
	AS_RC=0
	timeout 20 setpriv --reuid="$uid" --regid="$g" $groups -- "$SF_TMP/bcom" --control "$sock" "$@" \
		>"$SF_TMP/as.out" 2>&1 || AS_RC=$?
}

[ "$(stat -c '%g' "$SF_TMP/ctl")" = "$gid" ] || br_fail "socket directory not in group $gid" bridge

as 65534 "$gid" --clear-groups interfaces
[ "$AS_RC" = 0 ] || br_fail "gid $gid: exit $AS_RC, expected 0: $(cat "$SF_TMP/as.out")" bridge
grep -q sim_ib0 "$SF_TMP/as.out" || br_fail "gid $gid: no interfaces" bridge
as 65534 65534 --groups="$gid" interfaces
[ "$AS_RC" = 0 ] || br_fail "supplementary $gid: exit $AS_RC, expected 0: $(cat "$SF_TMP/as.out")" bridge

as 65534 65534 --clear-groups interfaces
[ "$AS_RC" = 3 ] || br_fail "no access to the socket: exit $AS_RC, expected 3" bridge
grep -qi 'permission denied' "$SF_TMP/as.out" || br_fail "no EACCES message: $(cat "$SF_TMP/as.out")" bridge

chmod 0666 "$sock"
as 65534 65534 --clear-groups interfaces
[ "$AS_RC" = 1 ] || br_fail "uid 65534 outside the group: exit $AS_RC, expected 1: $(cat "$SF_TMP/as.out")" bridge
grep -q 'permission denied (uid 65534, gid 65534)' "$SF_TMP/as.out" ||
	br_fail "no refusal message: $(cat "$SF_TMP/as.out")" bridge
sleep 0.2
grep -q 'console: refused pid [0-9]* uid 65534 gid 65534' "$SF_TMP/bridge.err" ||
	br_fail "no log line for the refused client" bridge

# The bridge served all that and still runs.
as 0 0 --clear-groups interfaces
[ "$AS_RC" = 0 ] || br_fail "root: exit $AS_RC" bridge
br_stop bridge
sf_log "PASS"
