#!/bin/bash
# A port of the active bridge goes down under keepalived (tests/lib/ka.sh, the
# settings of ha/keepalived.conf.example): bridges a (priority 250) and b (240), one
# partition (default), a active. For the IB port of a, then its RoCE port, each during
# a stream (IB -> RoCE, counted once across both bridges with --any-source):
# - `simfab port DEV down`: a's health fails (sides, groups), the notify reader's
#   health poll (0.1 s) writes 1 into keepalived 1's track_file, keepalived 1 goes
#   FAULT (a standby), keepalived 2 becomes master (b active); the packets lost (the
#   gap) are printed; asserted: b active, a standby, fewer than KA_PORT_MAX_LOST lost
#   (a bound above even the one-second vrrp_script's worst case), none duplicated;
# - `simfab port DEV up`: a joins again and is healthy; keepalived 1 leaves FAULT after
#   `rise` good checks and, as the higher priority, takes the partition back (preempt):
#   a active, b standby; that failback's loss and duplicates are printed, the loss
#   bounded the same way.
# No loop (neither bridge forwarded RoCE -> IB); b's counters add up (a's do too, but
# what a posted to its RoCE port before it saw the port go down is counted by the
# fabric in port_down, not as sent: br_conservation's comparison with the port does not
# hold for a).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/ka.sh
. "$(dirname "$0")/../lib/ka.sh"

ka_init ha-keepalived-port
g1=239.1.2.3
m=10000
: "${KA_PORT_MAX_LOST:=6000}"

br_bridge a 1 -d sim_ib0 -r sim_roce0 --workers 1 --peer "$ROCE_NET.4" --role standby -m "$g1"
br_bridge b 1 -d sim_ib3 -r sim_roce3 --workers 0 --peer "$ROCE_NET.1" --role standby -m "$g1"
ka_start 1 a default:61:250
ka_start 2 b default:61:240
ka_wait_role a default active
ka_wait_role b default standby
ka_check_conf 1
ka_check_conf 2

# port_event N DEV STATE WHAT ACTIVE STANDBY: during stream N, `simfab port DEV STATE`;
# then wait until bridge ACTIVE is active and STANDBY standby; print the gap of WHAT.
port_event() {
	ka_stream "p$1" "$g1" "$m"
	sleep 1
	"$SIMFAB" port "$2" "$3" >"$SF_TMP/simfab.out" 2>&1 ||
		sf_fail "simfab port $2 $3 failed" "$SF_TMP/simfab.out"
	ka_wait_role "$5" default active
	ka_wait_role "$6" default standby
	ka_stream_end "p$1" "$m" "$4"
	[ "$KA_LOST" -lt "$KA_PORT_MAX_LOST" ] ||
		br_fail "$4: lost $KA_LOST packets (bound $KA_PORT_MAX_LOST)" "p$1" ka1 ka2
}

port_event 1 sim_ib0 down "IB port of the active bridge down, keepalived failover" b a
[ "$KA_DUP" = 0 ] || br_fail "IB port down: $KA_DUP duplicates" p1
con_bc a health
[ "$CON_RC" = 1 ] || br_fail "bridge a is healthy with its IB port down (health exit $CON_RC)" a
port_event 2 sim_ib0 up "IB port up again, failback to the preferred bridge" a b
ka_wait_healthy a
port_event 3 sim_roce0 down "RoCE port of the active bridge down, keepalived failover" b a
[ "$KA_DUP" = 0 ] || br_fail "RoCE port down: $KA_DUP duplicates" p3
port_event 4 sim_roce0 up "RoCE port up again, failback to the preferred bridge" a b
ka_wait_healthy a
ka_stop
br_stop a
br_stop b
[ "$(br_field b RoCE fwd_pkts)" = 0 ] || br_fail "bridge b forwarded RoCE -> IB: a loop" b
[ "$(br_field a RoCE fwd_pkts)" = 0 ] || br_fail "bridge a forwarded RoCE -> IB: a loop" a
br_conservation b sim_ib3 sim_roce3
sf_log "PASS"
