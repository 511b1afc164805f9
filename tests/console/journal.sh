#!/bin/bash
# Logging to the journal (--systemd without --debug): every message is a journal entry
# with MESSAGE=, PRIORITY= (syslog level), SYSLOG_IDENTIFIER=ib2roce and, for messages
# about a device or a group, IB2ROCE_DEVICE= and IB2ROCE_GROUP=; nothing goes to
# stderr; the final counters are logged too. A stand-in journal (notifylisten on
# /run/systemd/journal/socket, the datagram socket sd_journal_sendv writes to) records
# the entries. Needs root and a machine without a journal of its own; skipped otherwise.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"
: "${NOTIFYLISTEN:?NOTIFYLISTEN must name the notifylisten tool}"

jsock=/run/systemd/journal/socket
if [ "$(id -u)" != 0 ] || [ -e "$jsock" ] || [ -e /run/systemd/journal/stdout ]; then
	echo "journal: needs root and no running journal: skipped"
	exit 77
fi
sf_init console-journal
made=""
for d in /run/systemd /run/systemd/journal; do
	if [ ! -d "$d" ]; then
		mkdir -m 0755 "$d"
		made="$d $made"
	fi
done
journal_cleanup() {
	local d

	rm -f "$jsock"
	for d in $made; do
		rmdir "$d" 2>/dev/null || true
	done
	sf_cleanup
}
trap journal_cleanup EXIT
g=239.1.2.3

br_start journal 60 "$NOTIFYLISTEN" "$jsock" 50
t_wait_until 5 test -S "$jsock" || sf_fail "the stand-in journal did not bind" "$SF_TMP/journal.err"
br_start bridge 60 "$IB2ROCE" --systemd --control "$SF_TMP/bridge.sock" --idle backoff \
	-e statint=0 -d sim_ib0 -r sim_roce0 -m "$g"
BR_BRIDGES=bridge
SF_PIDS="$SF_PIDS $(sf_child "$BR_PID")"
sf_wait_line "$SF_TMP/journal.out" " IB2ROCE_GROUP=$g\$" "$BR_PID" 20
con_wait_json bridge '.groups[0].roce.state' joined

# The entry of the IB join: message, level info (6), identifier, device and group.
awk -v g="$g" '
	/ MESSAGE=IB joined / { e = 1; n = 0; next }
	e && n < 5 { n++; f[$2] = 1 }
	END {
		exit !(f["PRIORITY=6"] && f["SYSLOG_IDENTIFIER=ib2roce"] &&
		       f["IB2ROCE_DEVICE=sim_ib0"] && f["IB2ROCE_GROUP=" g])
	}' "$SF_TMP/journal.out" ||
	br_fail "no journal entry for the IB join with PRIORITY, SYSLOG_IDENTIFIER, IB2ROCE_DEVICE, IB2ROCE_GROUP" bridge journal
con_ok bridge shutdown >/dev/null
sf_wait_exit "$(br_pid bridge)"
[ "$SF_RC" = 0 ] || br_fail "exit status $SF_RC" bridge
sleep 0.2
grep -q ' MESSAGE=ib2roce: final counters$' "$SF_TMP/journal.out" ||
	br_fail "the final counters did not go to the journal" bridge journal
grep -q ' MESSAGE=IB sim_ib0 rx_pkts=' "$SF_TMP/journal.out" ||
	br_fail "no IB counter line in the journal" bridge journal
grep -q 'ib2roce' "$SF_TMP/bridge.err" && br_fail "log lines on stderr despite the journal" bridge
grep -q 'final counters' "$SF_TMP/bridge.out" && br_fail "final counters on stdout despite the journal" bridge
sf_log "PASS"
