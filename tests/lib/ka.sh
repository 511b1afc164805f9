# shellcheck shell=bash
# tests/lib/ka.sh (prefix ka_): the HA tests with real keepalived
# (tests/ha/keepalived*.sh); sourced by each test (bash, set -eu). Sources con.sh (con_bc,
# con_ok; the bridge helpers of br.sh).
#
# Two keepalived processes elect per partition which bridge is active, with the settings
# of ha/keepalived.conf.example (VRRPv3, advert_int 0.01, a real-time VRRP process,
# track_process on the bridge's process, track_file fed with `bcom health` every 0.1 s
# and vrrp_script `ib2roce-notify.sh --health` every second, the notify FIFO read by
# ha/ib2roce-notify.sh --fifo):
# keepalived 1 drives bridge a from the test's network namespace (169.254.77.1),
# keepalived 2 drives bridge b from namespace 2 (169.254.77.2), joined by a veth pair.
# track_process needs the kernel's process events connector, which exists only in the
# initial network namespace ("Failed to set/clear process event listen - errno 111" in
# any other): keepalived 2 has no track_process (quorum never reached: its instances
# would stay in FAULT), so the tests kill bridge a, never b, when they test a death.
# The bridges, senders and listeners stay in the test's namespace (the simulated
# fabric's sockets are bound to it); keepalived reaches the consoles through their
# pathname sockets.
#
# Environment (tests/ha/meson.build): BCOM, HA_NOTIFY (ha/ib2roce-notify.sh).
# Skips (77) without keepalived or network namespaces.

: "${BCOM:?BCOM must name the bcom program}"
: "${HA_NOTIFY:?HA_NOTIFY must name ha/ib2roce-notify.sh}"

[ -z "${T_LIB_KA:-}" ] || return 0
T_LIB_KA=1

# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "${BASH_SOURCE[0]%/*}/con.sh"

# The offered rate of the failover streams (packets/s): gaps are printed in ms from it.
KA_RATE=2000

# ka_init NAME: sf_init NAME, namespace 2 and the veth between it and the test's
# namespace.
ka_init() {
	KA=$(command -v keepalived || true)
	[ -n "$KA" ] || {
		echo "keepalived not installed: skipped"
		exit 77
	}
	sf_init "$1"
	KA_NS2=ib2roce-ka2-$$
	if ! ip netns add "$KA_NS2" 2>"$SF_TMP/netns.err"; then
		echo "no network namespaces ($(cat "$SF_TMP/netns.err")): skipped"
		exit 77
	fi
	trap 'ka_cleanup; sf_cleanup' EXIT
	ip link add "kav1-$$" type veth peer name "kav2-$$"
	ip link set "kav2-$$" netns "$KA_NS2"
	ip addr add 169.254.77.1/24 dev "kav1-$$"
	ip -n "$KA_NS2" addr add 169.254.77.2/24 dev "kav2-$$"
	ip -n "$KA_NS2" link set lo up
	ip link set "kav1-$$" up
	ip -n "$KA_NS2" link set "kav2-$$" up
}

# ka_stop_one N: TERM to keepalived N (its partitions go standby once the peer took
# over: ha/ib2roce-notify.sh --fifo), wait for it (5 s at most).
ka_stop_one() {
	local f=$SF_TMP/ka$1.pid

	kill -TERM "$(cat "$f")" 2>/dev/null || true
	timeout 5 tail --pid="$(cat "$f")" -f /dev/null 2>/dev/null || true
	rm -f "$f"
}

# ka_stop: every keepalived stopped the same way.
ka_stop() {
	local f

	for f in "$SF_TMP"/ka?.pid; do
		[ ! -e "$f" ] || kill -TERM "$(cat "$f")" 2>/dev/null || true
	done
	for f in "$SF_TMP"/ka?.pid; do
		[ ! -e "$f" ] || timeout 5 tail --pid="$(cat "$f")" -f /dev/null 2>/dev/null || true
		rm -f "$f"
	done
}

# ka_cleanup: ka_stop, the namespace and the veth gone. Returns the status it was
# called with, for sf_cleanup (the test's exit status).
ka_cleanup() {
	local rc=$?

	ka_stop
	ip link del "kav1-$$" 2>/dev/null || true
	ip netns del "$KA_NS2" 2>/dev/null || true
	return "$rc"
}

# ka_role_of NAME PARTITION: the role bridge NAME shows for PARTITION (empty: no answer).
ka_role_of() {
	con_bc "$1" ha
	[ "$CON_RC" = 0 ] || return 0
	awk -v p="$2" '$1 == p { print $2 }' "$SF_TMP/bcom.out"
}

# ka_role_is NAME PARTITION ROLE: bridge NAME shows PARTITION in ROLE (no failure).
ka_role_is() {
	[ "$(ka_role_of "$1" "$2")" = "$3" ]
}

# ka_wait_role NAME PARTITION ROLE: wait (30 s at most) until bridge NAME has PARTITION
# in ROLE.
ka_wait_role() {
	t_wait_until 30 ka_role_is "$1" "$2" "$3" ||
		br_fail "bridge $1: partition $2 did not become $3: $(cat "$SF_TMP/bcom.out")" \
			"$1" ka1 ka2
}

# ka_healthy NAME: `bcom health` of bridge NAME exits 0.
ka_healthy() {
	con_bc "$1" health
	[ "$CON_RC" = 0 ]
}

# ka_wait_healthy NAME: wait (30 s at most) until `bcom health` of bridge NAME exits 0.
ka_wait_healthy() {
	t_wait_until 30 ka_healthy "$1" ||
		br_fail "bridge $1 did not become healthy: $(cat "$SF_TMP/bcom.out")" "$1"
}

# ka_launch N NS IFC SRC PEER TRACK SOCK PART:VRID:PRIO...: write keepalived N's
# configuration (the settings of ha/keepalived.conf.example; unicast VRRP from SRC to PEER
# on interface IFC; TRACK 1: also track the bridge's process, told apart from the other
# bridge's by its command line) for the bridge whose console socket is SOCK, one VRRP
# instance per partition, and start it in network namespace NS ("": this one). Its log
# in $SF_TMP/kaN.out; with KA_TRACE set, its notify reader's --trace in $SF_TMP/kaN.trace
# (when each event was read, when its role command returned). The reader runs real-time
# (--rt 1, as ha/keepalived.conf.example says); KA_NOTIFY_RT=N another priority,
# KA_NOTIFY_RT= (empty) time-shared (bench/ha-hostdeath.sh compares them). ka_start (one host) and th_ka_start (tests/ha/th-lib.sh, two) use it.
ka_launch() {
	local n=$1 ns=$2 ifc=$3 src=$4 peer=$5 track=$6 sock=$7 p part vrid prio
	local conf=$SF_TMP/ka$n.conf ka_rt=${KA_NOTIFY_RT-1}

	shift 7
	cat >"$conf" <<EOC
global_defs {
	router_id ka$n
	script_user root
	enable_script_security
	vrrp_version 3
	vrrp_rt_priority 50
	vrrp_rlimit_rttime 500000
	vrrp_no_swap
	vrrp_garp_master_repeat 1
	vrrp_garp_master_delay 0
	vrrp_notify_fifo $SF_TMP/ka$n.fifo
	vrrp_notify_fifo_script "$HA_NOTIFY --bcom $BCOM${KA_TRACE:+ --trace $SF_TMP/ka$n.trace}${ka_rt:+ --rt $ka_rt} --health-file $SF_TMP/ka$n.health --fifo $sock"
}
EOC
	[ "$track" != 1 ] || cat >>"$conf" <<EOC
vrrp_track_process ib2roce_process {
	process "$IB2ROCE" --debug --control "$sock"
	param_match partial
	quorum 1
	weight 0
}
EOC
	cat >>"$conf" <<EOC
track_file ib2roce_health_file {
	file "$SF_TMP/ka$n.health"
	weight 0
}
vrrp_script ib2roce_health {
	script "$HA_NOTIFY --bcom $BCOM --health $sock"
	interval 1
	timeout 2
	fall 1
	rise 2
}
EOC
	for p in "$@"; do
		IFS=: read -r part vrid prio <<<"$p"
		cat >>"$conf" <<EOC
vrrp_instance ib2roce_$part {
	state BACKUP
	interface $ifc
	virtual_router_id $vrid
	priority $prio
	advert_int 0.01
	unicast_src_ip $src
	unicast_peer {
		$peer
	}
EOC
		[ "$track" != 1 ] || printf '\ttrack_process {\n\t\tib2roce_process\n\t}\n' >>"$conf"
		cat >>"$conf" <<EOC
	track_script {
		ib2roce_health
	}
	track_file {
		ib2roce_health_file
	}
	virtual_ipaddress {
		192.0.2.$vrid/32
	}
EOC
		echo "}" >>"$conf"
	done
	${ns:+ip netns exec "$ns"} "$KA" --dont-fork --log-console --log-detail --vrrp \
		-f "$conf" -p "$SF_TMP/ka$n-main.pid" -r "$SF_TMP/ka$n-vrrp.pid" \
		-c "$SF_TMP/ka$n-chk.pid" >"$SF_TMP/ka$n.out" 2>&1 &
	echo $! >"$SF_TMP/ka$n.pid"
}

# ka_start N BRIDGE PART:VRID:PRIO...: keepalived N (1: the test's namespace, 2: namespace 2)
# for bridge BRIDGE, one VRRP instance per partition (ka_launch).
ka_start() {
	local n=$1 b=$2

	shift 2
	if [ "$n" = 1 ]; then
		ka_launch 1 "" "kav1-$$" 169.254.77.1 169.254.77.2 1 "$SF_TMP/$b.sock" "$@"
	else
		ka_launch "$n" "$KA_NS2" "kav2-$$" 169.254.77.2 169.254.77.1 0 "$SF_TMP/$b.sock" "$@"
	fi
}

# ka_check_conf N: keepalived N complained about no line of its configuration (every
# setting above is one that keepalived 2.2.7 takes; an ignored one prints "Line N").
ka_check_conf() {
	! grep -q 'conf: Line [0-9]*)' "$SF_TMP/ka$1.out" ||
		sf_fail "keepalived $1 ignored configuration lines" "$SF_TMP/ka$1.out" "$SF_TMP/ka$1.conf"
}

# ka_stream NAME GROUP COUNT: listener NAME on RoCE for GROUP counting each packet once
# across the bridges (--any-source), a sender of COUNT packets at KA_RATE on IB
# (NAME_send) started in the background. With KA_STREAM_TRACE set, both write mcpkt's
# --trace ($SF_TMP/NAME.rtrace: the listener's gaps, late packets and source switches
# with their times; $SF_TMP/NAME_send.strace: the sender's start and pacing lags), for
# ka_loss_structure.
ka_stream() {
	local rt=() st=()

	if [ -n "${KA_STREAM_TRACE:-}" ]; then
		rt=(--trace "$SF_TMP/$1.rtrace")
		st=(--trace "$SF_TMP/${1}_send.strace")
	fi
	# KA_STREAM_NOCATCHUP: a sender held up does not burst above KA_RATE to catch up.
	[ -z "${KA_STREAM_NOCATCHUP:-}" ] || st+=(--no-catchup)
	br_listen "$1" "$ROCE_NET.2" -g "$2" --verify --imm --any-source --rq 16384 --timeout 120 \
		"${rt[@]}"
	br_send_start "$1_send" "$IB_NET.2" -g "$2" -n "$3" --imm --rate "$KA_RATE" "${st[@]}"
}

# ka_stream_end NAME COUNT WHAT: wait for the sender, stop the listener; sets KA_LOST
# and KA_DUP, prints the gap of WHAT (packets and ms at KA_RATE); fails on corrupt
# packets, on nothing received.
ka_stream_end() {
	local name=$1 m=$2 what=$3 rx

	br_send_end "$name"_send
	sleep 1
	kill -TERM "$(sf_child "$(br_pid "$name")")" 2>/dev/null || true
	br_listen_end "$name"
	case " ${BR_SUMMARY#mcpkt: } " in
	*" bad=0 "*" imm_bad=0 "*) ;;
	*) br_fail "listener $name: corrupt packets: $BR_SUMMARY" "$name" ;;
	esac
	rx=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* received=\([0-9]*\) .*/\1/p')
	KA_DUP=$(printf '%s\n' "$BR_SUMMARY" | sed -n 's/.* dup=\([0-9]*\) .*/\1/p')
	KA_LOST=$((m - (rx - KA_DUP)))
	sf_log "$what: sent $m at $KA_RATE/s, lost $KA_LOST ($((KA_LOST * 1000 / KA_RATE)) ms), duplicates $KA_DUP"
	[ "$rx" -gt 0 ] || br_fail "$what: nothing arrived" "$name"
}

# ka_loss_structure NAME COUNT [T_KILL OLD NEW]: where stream NAME's loss lies (its
# KA_STREAM_TRACE files; COUNT packets at KA_RATE), in KA_LOSS as "key=value" words;
# times in ms after T_KILL (seconds, $EPOCHREALTIME; without it after the sender's
# start). OLD and NEW: the RoCE addresses of the bridge that forwarded before the
# failover and of the one after. The words:
#   acct      the stream's loss by the trace: gaps + tail - late of the sender's run
#             (-1 when the trace was truncated); KA_LOST + foreign when every packet is
#             accounted for
#   foreign   packets of other runs the listener received (a bridge's queue held them
#             from an earlier stream: the summary line counts them as received)
#   takeover  packets missing where the forwarding source went from OLD to NEW (0: the
#             switch with no gap; -1: no switch), last_old/first_new when the packets
#             around it came, due_first/due_end when the sender was due to send the
#             first missing one and the one after the last (start + index / rate)
#   pre, post packets in the gaps before and after that switch ("P/GAPS"), post_max the
#             largest gap after it and when it came (P@MS), tail the packets missing
#             after the last one received, late the missing ones that came later
#   lag       the sender's episodes of sends more than 1 ms late ("N/MAX_MS"), lag_kill
#             the largest lateness of an episode that began within 100 ms of T_KILL
ka_loss_structure() {
	local name=$1 m=$2 k=${3:-} old=${4:-} new=${5:-}

	# shellcheck disable=SC2034 # read by the tests
	KA_LOSS=$(awk -v k="$k" -v rate="$KA_RATE" -v m="$m" -v old="$old" -v new="$new" '
		function ms(t) { return sprintf("%.1f", (t - k) * 1000) }
		FNR == 1 { f++ }
		f == 1 && $1 == "start" { start = $2; run = $3; if (k == "") k = start }
		f == 1 && $1 == "lag" {
			nlag++; if ($4 > lagmax) lagmax = $4
			if ($5 >= k - 0.1 && $5 <= k + 0.1 && $4 > lagk) lagk = $4
		}
		f == 2 && $1 == "trace_truncated" { trunc = 1 }
		# Records of other runs: what they brought, LAST + 1 - gaps + late.
		f == 2 && $2 != run {
			if ($1 == "gap") fg[$2] += $4
			else if ($1 == "late") fl[$2]++
			else if ($1 == "last") flast[$2] = $3
			next
		}
		f == 2 && ($1 == "gap" || $1 == "switch") {
			from = $1 == "gap" ? $7 : $5; to = $1 == "gap" ? $8 : $6
			if (old != "" && tk < 0 && from == old && to == new) {
				tk = $1 == "gap" ? $4 : 0
				lo = ms($1 == "gap" ? $5 : $4); fn = ms($1 == "gap" ? $6 : $4)
				if ($1 == "gap") {
					df = ms(start + $3 / rate); de = ms(start + ($3 + $4) / rate)
				}
				next
			}
		}
		f == 2 && $1 == "gap" {
			if (tk < 0) { pre += $4; npre++ }
			else {
				post += $4; npost++
				if ($4 > pmax) { pmax = $4; pmaxt = ms($6) }
			}
		}
		f == 2 && $1 == "late" { late++ }
		f == 2 && $1 == "last" { last = $3 }
		BEGIN { tk = -1; last = -1; lo = fn = df = de = "-" }
		END {
			for (r in flast) foreign += flast[r] + 1 - fg[r] + fl[r]
			tail = m - 1 - last
			acct = trunc ? -1 : (tk > 0 ? tk : 0) + pre + post + tail - late
			printf "acct=%d foreign=%d takeover=%d last_old=%s first_new=%s due_first=%s due_end=%s", acct, foreign, tk, lo, fn, df, de
			printf " pre=%d/%d post=%d/%d post_max=%d@%s tail=%d late=%d", pre, npre, post, npost, pmax, pmax ? pmaxt : "-", tail, late
			printf " lag=%d/%.1f lag_kill=%.1f\n", nlag, lagmax / 1000, lagk / 1000
		}' "$SF_TMP/${name}_send.strace" "$SF_TMP/$name.rtrace")
}

# ka_loss_check WHAT: fail unless KA_LOSS (ka_loss_structure) accounts for every packet
# that KA_LOST (ka_stream_end) says was lost: acct = KA_LOST + foreign.
ka_loss_check() {
	local acct foreign

	acct=$(printf '%s\n' "$KA_LOSS" | sed -n 's/^acct=\(-\?[0-9]*\) .*/\1/p')
	foreign=$(printf '%s\n' "$KA_LOSS" | sed -n 's/.* foreign=\([0-9]*\) .*/\1/p')
	[ "$acct" = -1 ] || [ "$acct" = $((KA_LOST + foreign)) ] ||
		sf_fail "$1: the listener's trace accounts for $acct lost ($foreign of other runs received), the summary for $KA_LOST"
}
