#!/bin/sh
# ib2roce-notify.sh: keepalived's notify script for an ib2roce HA pair
# (docs/operations.md, "Election by keepalived"). One VRRP instance per partition,
# named ib2roce_PARTITION. Two ways to run it:
#
# 1. From keepalived's notify FIFO (the way ha/keepalived.conf.example uses): keepalived
#    starts it once and writes each state change to the FIFO, in order:
#
#      global_defs {
#          vrrp_notify_fifo /run/ib2roce/keepalived.fifo
#          vrrp_notify_fifo_script "/usr/share/ib2roce/ib2roce-notify.sh --health-file /run/ib2roce/keepalived.health --fifo /run/ib2roce/ib2roce.sock"
#      }
#      track_file ib2roce_health_file { file "/run/ib2roce/keepalived.health"; weight 0 }
#
#    keepalived appends the FIFO's name. Lines `INSTANCE "ib2roce_P" STATE PRIORITY`
#    are applied one after the other, in the order keepalived wrote them; other lines
#    and other instances are ignored. Each change costs one bcom (no shell started), and
#    two changes of one partition in quick succession (BACKUP, then MASTER) can never
#    reach the bridge in the wrong order, as two notify scripts started together can.
#    With --health-file FILE it also runs `bcom health` every HEALTH_INTERVAL (0.1 s)
#    and keeps FILE at 0 (healthy) or 1 (not), for keepalived's track_file. `bcom
#    health` exits 1 only for a FAILED condition; a DEGRADED one (NIC drops, a control-
#    thread stall, log lines dropped) prints its line and exits 0, so it never fails
#    over (docs/operations.md, "Health: FAILED and DEGRADED"). A bridge
#    that cannot forward is noticed within 0.1 s, where a vrrp_script runs at most once
#    a second in keepalived 2.2.7. No answer within 2 s (HEALTH_LIMIT: the control
#    thread stalled; the workers forward without it) keeps the last verdict until
#    HEALTH_HANG (5) polls in a row went unanswered (health_verdict below).
#    --health CONTROL is that check once, for keepalived's vrrp_script (exit 0 or 1).
#
# 2. As a notify script per state (one process per change):
#
#      notify_master "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P MASTER"
#      notify_backup "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P BACKUP"
#      notify_fault  "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P FAULT"
#      notify_stop   "/usr/share/ib2roce/ib2roce-notify.sh /run/ib2roce/ib2roce.sock P STOP"
#
# Usage: ib2roce-notify.sh [--bcom PATH] [--trace FILE] CONTROL PARTITION STATE
#        ib2roce-notify.sh [--bcom PATH] [--trace FILE] [--rt N] [--health-file FILE] --fifo CONTROL FIFO
#        ib2roce-notify.sh [--bcom PATH] --health CONTROL
# --trace FILE appends, per event, "HH:MM:SS.mmm read P STATE" (UTC) when the FIFO reader
# read it and "HH:MM:SS.mmm done P STATE STATUS" when its role command returned (the
# takeover's steps: tests/ha/twohost.sh, bench/ha-hostdeath.sh).
# MASTER makes partition PARTITION of the bridge whose console socket is CONTROL active
# (`bcom --control CONTROL role PARTITION active`); BACKUP, FAULT and STOP make it
# standby. With --fifo, a partition that it made active and that then goes BACKUP (the
# peer took it over with a higher priority: preemption, e.g. the preferred bridge back
# after a failure) goes standby only after BACKUP_DELAY (0.05 s): the peer's keepalived
# makes its bridge active at the same moment, and waiting for that (make before break)
# turns the packets that would fall between the two bridges into duplicates. FAULT and
# STOP (this bridge cannot or shall not forward) go standby at once. (Notify scripts
# started per state do not wait: a delayed BACKUP script could overtake the MASTER one
# that follows it.) Logs to syslog (logger) what it did, after doing it; a role change
# that failed also goes to stderr.
# Exit status (per state): bcom's (0 done, 1 refused, 3 bridge not reachable; 124 no
# answer within 10 s), 2 for bad usage. With --fifo it runs until keepalived ends it
# with SIGTERM (keepalived stops; it writes no STOP events then): the partitions it made
# active go standby after BACKUP_DELAY (the peer, told with a priority 0
# advertisement, takes over meanwhile), and it exits 0 (1: the FIFO cannot be read).
set -u

usage() {
	echo "usage: $0 [--bcom PATH] [--trace FILE] CONTROL PARTITION STATE" >&2
	echo "       $0 [--bcom PATH] [--trace FILE] [--rt N] [--health-file FILE] --fifo CONTROL FIFO" >&2
	echo "       $0 [--bcom PATH] --health CONTROL" >&2
	exit 2
}

bcom=bcom
BACKUP_DELAY=0.05
HEALTH_INTERVAL=0.1
HEALTH_LIMIT=2
HEALTH_HANG=5
health=""
trace=""
rt=""
while :; do
	case ${1:-} in
	--bcom)
		[ $# -ge 2 ] || usage
		bcom=$2
		shift 2
		;;
	--health-file)
		[ $# -ge 2 ] || usage
		health=$2
		shift 2
		;;
	--trace)
		[ $# -ge 2 ] || usage
		trace=$2
		shift 2
		;;
	--rt)
		[ $# -ge 2 ] || usage
		case $2 in
		[1-9] | [1-9][0-9]) rt=$2 ;;
		*)
			echo "$0: --rt '$2': a real-time priority from 1 to 99" >&2
			exit 2
			;;
		esac
		shift 2
		;;
	*) break ;;
	esac
done

# apply CONTROL PARTITION STATE: the role change; its status in rc.
apply() {
	case $3 in
	MASTER) role=active ;;
	BACKUP | FAULT | STOP) role=standby ;;
	*)
		echo "$0: unknown state '$3' (MASTER, BACKUP, FAULT, STOP)" >&2
		rc=2
		return
		;;
	esac
	rc=0
	# A bridge that does not answer must not hold up the changes after this one.
	out=$(timeout -k 1 10 "$bcom" --control "$1" role "$2" "$role" 2>&1) || rc=$?
	[ -z "$trace" ] || printf '%s done %s %s %s\n' "$(date -u +%T.%3N)" "$2" "$3" "$rc" >>"$trace"
	logger -t ib2roce-notify "partition $2: $3: role $role: exit $rc: $out" 2>/dev/null || true
	# A failure also on stderr: run by hand (or where no syslog runs) it said nothing.
	[ "$rc" = 0 ] || echo "$0: partition $2: $3: role $role: exit $rc: $out" >&2
}

# The FIFO reader's end (SIGTERM from keepalived): the partitions it made active go
# standby after BACKUP_DELAY.
# shellcheck disable=SC2317 # called by the trap
fifo_end() {
	[ -z "$watcher" ] || kill "$watcher" 2>/dev/null
	[ -z "$active" ] || sleep "$BACKUP_DELAY"
	for p in $active; do
		apply "$control" "$p" STOP
	done
	exit 0
}

# health_verdict: one `bcom health` of $control; v=0 healthy, 1 not. An answer decides:
# 0 healthy, 1 a FAILED condition; 3, no bridge there (the connection refused), is 1 at
# once. No answer within HEALTH_LIMIT is the bridge's control thread stalled (the
# process holds its socket: the connection was taken), a DEGRADED condition as the
# bridge itself counts its stalls (docs/operations.md, "Health: FAILED and DEGRADED"):
# its workers forward without that thread (they read the role per packet), so it keeps
# the last verdict; only HEALTH_HANG polls in a row without an answer (10 s and more: a
# bridge frozen whole, SIGSTOP) make it 1. A survivor whose control thread stalls as its
# peer dies is thus not stood down by its own poll (FAULT), which, its peer gone, would
# lose everything until the stall ends and the queued role changes were applied in
# turn (active, standby, active). hang counts the polls without an answer.
health_verdict() {
	hrc=0
	timeout -k 1 "$HEALTH_LIMIT" "$bcom" --control "$control" health >/dev/null 2>&1 || hrc=$?
	case $hrc in
	0)
		v=0
		hang=0
		;;
	124 | 137)
		hang=$((hang + 1))
		if [ "$hang" -ge "$HEALTH_HANG" ]; then
			v=1
		else
			v=${last:-0}
		fi
		;;
	*)
		v=1
		hang=0
		;;
	esac
}

# health_watch: every HEALTH_INTERVAL, health_verdict into the file $health (for
# keepalived's track_file): 0 healthy, 1 not; replaced (rename), never rewritten in
# place, so that keepalived never reads it half written. Runs in a subshell; ends with
# the reader ($$ there is the reader's pid), even one killed without its trap.
health_watch() {
	last=""
	hang=0
	while kill -0 $$ 2>/dev/null; do
		health_verdict
		if [ "$v" != "$last" ]; then
			printf '%s\n' "$v" >"$health.new" && mv -f "$health.new" "$health" && last=$v
		fi
		sleep "$HEALTH_INTERVAL"
	done
}

# --health CONTROL: one health_verdict, its v as the exit status (keepalived's
# vrrp_script). Without a state between runs, no answer within HEALTH_LIMIT is 0 (the
# control thread stalled, as above); the reader's poll bounds that at HEALTH_HANG.
if [ "${1:-}" = --health ]; then
	[ $# -eq 2 ] || usage
	control=$2
	HEALTH_LIMIT=1
	last=0
	hang=0
	HEALTH_HANG=1000000
	health_verdict
	exit "$v"
fi

if [ "${1:-}" = --fifo ]; then
	[ $# -eq 3 ] || usage
	control=$2
	active=""
	watcher=""
	trap fifo_end TERM INT HUP
	# --rt N: the reader, its role commands and its health poll run real-time (SCHED_RR
	# N, under keepalived's VRRP process): on a host whose CPUs busy-polling threads
	# keep busy, a MASTER event is read and its `bcom role` started without waiting for
	# the scheduler to give a time-shared process its turn.
	if [ -n "$rt" ] && ! chrt -r -p "$rt" $$ >/dev/null 2>&1; then
		logger -t ib2roce-notify "--rt $rt: chrt failed: running time-shared" 2>/dev/null || true
	fi
	if [ -n "$health" ]; then
		health_watch &
		watcher=$!
	fi
	# Read and write: the FIFO never reads as ended while keepalived reopens it.
	exec 3<>"$3" || exit 1
	while read -r kind name state _ <&3; do
		[ "$kind" = INSTANCE ] || continue
		name=${name#\"}
		name=${name%\"}
		case $name in
		ib2roce_?*) ;;
		*) continue ;;
		esac
		p=${name#ib2roce_}
		# --trace FILE: when each event was read and its role command done (ms, UTC; the
		# read's time taken in the background, so as not to delay the command).
		if [ -n "$trace" ]; then
			printf '%s read %s %s\n' "$(date -u +%T.%3N)" "$p" "$state" >>"$trace" &
		fi
		case $state in
		MASTER | FAULT | STOP) ;;
		BACKUP)
			# From MASTER: the peer preempted; let its bridge go active first.
			case " $active " in
			*" $p "*) sleep "$BACKUP_DELAY" ;;
			esac
			;;
		*) continue ;;
		esac
		# The partitions active here (names without blanks: bcom role takes one word),
		# counted before the role command: a SIGTERM that arrives while it runs (the
		# trap runs when it returns) also stands down the partition it makes active.
		active=$(for a in $active; do [ "$a" = "$p" ] || printf ' %s' "$a"; done)
		[ "$state" != MASTER ] || active="$active $p"
		apply "$control" "$p" "$state"
	done
	exit 1
fi
# --health-file goes with --fifo only (the poll needs a process that stays).
if [ $# -ne 3 ] || [ -n "$health" ]; then
	usage
fi
apply "$1" "$2" "$3"
exit "$rc"
