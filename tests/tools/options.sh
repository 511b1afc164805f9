#!/bin/bash
# The options of mcsender and mclisten: help and listings exit 0, bad input exits 2 with
# a clear message (and no fabric is touched), the reference's feature names work.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-options

# expect_exit STATUS PATTERN PROGRAM ARG...: the program exits with STATUS and prints a
# line matching PATTERN (stdout or stderr).
expect_exit() {
	local want=$1 pat=$2 rc=0

	shift 2
	timeout 20 "$@" >"$SF_TMP/o.out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || sf_fail "$*: exit $rc, expected $want" "$SF_TMP/o.out"
	grep -Eq -- "$pat" "$SF_TMP/o.out" || sf_fail "$*: no '$pat'" "$SF_TMP/o.out"
}

for p in "$MCSENDER" "$MCLISTEN"; do
	n=${p##*/}
	expect_exit 0 '^  -d, --device=dev\[:port\]' "$p" --help
	expect_exit 0 '^PORT$' "$p" -l
	expect_exit 2 "^$n: no multicast group given" "$p" -d sim_ib1
	expect_exit 2 "^$n: argument '10.1.2.3': group '10.1.2.3': not a multicast address" "$p" 10.1.2.3
	expect_exit 2 "^$n: -d and -r both given" "$p" -d sim_ib1 -r sim_roce1 239.1.2.3
	expect_exit 2 "^$n: option --mgid: unknown MGID format 'XX'" "$p" -l XX 239.1.2.3
	expect_exit 2 "^$n: unrecognized option '--bogus'" "$p" --bogus 239.1.2.3
	expect_exit 1 "^$n: IB device nosuch: not found" "$p" -d nosuch 239.1.2.3
done
expect_exit 0 '^  sendrate ' "$MCSENDER" -e
expect_exit 0 '^  ppsdisplay ' "$MCLISTEN" -e
expect_exit 2 '^mcsender: size 20 is below the minimum 32$' "$MCSENDER" --size 20 239.1.2.3
expect_exit 2 '^mcsender: size 40 is below the minimum 68 with --pgm$' "$MCSENDER" --pgm \
	--size 40,100 239.1.2.3
expect_exit 2 "^mcsender: option --size: size range '9-3' is empty" "$MCSENDER" --size 9-3 239.1.2.3
expect_exit 2 "^mcsender: option --skip-every: '1' is out of range 2\.\.4294967295$" "$MCSENDER" \
	--skip-every 1 239.1.2.3
expect_exit 2 "^mcsender: option --stop-every: '0' is out of range 1\.\.9223372036854775807$" \
	"$MCSENDER" --stop-every 0 239.1.2.3
expect_exit 2 "^mcsender: size 5000 exceeds the MTU 4096 of sim_ib1" "$MCSENDER" -d sim_ib1 \
	--size 5000 239.1.2.3
expect_exit 2 "^mcsender: option --clock: 'tai': expected realtime or monotonic" "$MCSENDER" \
	--clock tai 239.1.2.3
# The reference's spelling of the rate and length: -e sendrate=N -e sendlen=N.
tools_listen listen -d sim_ib2 -m 239.1.2.3 -n 20 -D 30
tools_send send -d sim_ib1 -m 239.1.2.3 -n 20 -e sendrate=2000 -e sendlen=100
tools_end listen
tools_expect listen received=20 lost=0
grep -Eq '^239\.1\.2\.3 +20 ' "$SF_TMP/listen.out" || br_fail "listener: no group line" listen
grep -q ' bytes=2000 ' "$SF_TMP/send.out" || br_fail "sender: -e sendlen=100 not applied" send
# The live display (ppsdisplay, as the reference's "enable ppsdisplay"): a line per
# interval with the rate, loss, duplicates, the NIC's drops and latency.
tools_listen live -d sim_ib2 -m 239.1.2.3 -e ppsdisplay --interval 10 -D 2
tools_send send2 -d sim_ib1 -m 239.1.2.3 -n 50 -R 1000
tools_end live
grep -Eq '^mclisten: +[0-9.]+s pps=[0-9]+ rx=[0-9]+ lost=0 dup=0 nic_rx_dropped=0 streams=[01] p50=[0-9.]+us p99=[0-9.]+us max=[0-9.]+us$' \
	"$SF_TMP/live.out" || br_fail "listener: no live display line" live
tools_expect live received=50 lost=0
sf_log "PASS"
