#!/bin/sh
# ib2roce-notify.sh: keepalived's notify script for an ib2roce HA pair
# (docs/operations.md, "Election by keepalived"). One VRRP instance per partition:
#
#   notify_master "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P MASTER"
#   notify_backup "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P BACKUP"
#   notify_fault  "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P FAULT"
#   notify_stop   "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P STOP"
#
# Usage: ib2roce-notify.sh [--bcom PATH] CONTROL PARTITION STATE
# MASTER makes partition PARTITION of the bridge whose console socket is CONTROL active
# (`bcom --control CONTROL role PARTITION active`); BACKUP, FAULT and STOP make it
# standby. Logs to syslog (logger) what it did. Exit status: bcom's (0 done, 1 refused,
# 3 bridge not reachable), 2 for bad usage.
set -u

bcom=bcom
if [ "${1:-}" = --bcom ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [--bcom PATH] CONTROL PARTITION STATE" >&2; exit 2; }
	bcom=$2
	shift 2
fi
if [ $# -ne 3 ]; then
	echo "usage: $0 [--bcom PATH] CONTROL PARTITION STATE" >&2
	exit 2
fi
control=$1 partition=$2 state=$3
case $state in
MASTER) role=active ;;
BACKUP | FAULT | STOP) role=standby ;;
*)
	echo "$0: unknown state '$state' (MASTER, BACKUP, FAULT, STOP)" >&2
	exit 2
	;;
esac
rc=0
out=$("$bcom" --control "$control" role "$partition" "$role" 2>&1) || rc=$?
logger -t ib2roce-notify "partition $partition: $state: role $role: exit $rc: $out" 2>/dev/null || true
exit "$rc"
