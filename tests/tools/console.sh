#!/bin/bash
# The console of mcsender and mclisten (--control), driven by the real bcom while they
# run on the simulated fabric: status says what each does, stats --json parses and is
# the --json summary so far, enable/disable ppsdisplay start and stop the live line in
# the program's output, bad commands fail with status 1 and change nothing, a second
# program on the same socket is refused, and shutdown ends each program with its summary
# and exit status 0. The counts stay exact: what the sender sent until its shutdown, the
# listener received, once, without loss.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/tools.sh
. "$(dirname "$0")/../lib/tools.sh"

sf_init tools-console
sf_need jq

# console_wait NAME: wait until the program's console answers.
console_wait() {
	t_wait_until 30 help_answers "$1" || br_fail "console of $1: no answer within 30 s" "$1"
}

# help_answers NAME: `help` on the program's console exits 0.
help_answers() {
	con_bc "$1" help
	[ "$CON_RC" = 0 ]
}

# pps_lines NAME PROG: the live lines so far in the program's output.
pps_lines() {
	grep -c "^$2: .* pps=" "$SF_TMP/$1.out" || true
}

# pps_lines_at_least NAME PROG N: N live lines or more so far.
pps_lines_at_least() {
	[ "$(pps_lines "$1" "$2")" -ge "$3" ]
}

# pps_check NAME PROG: enable ppsdisplay makes live lines appear; after disable, none.
pps_check() {
	local name=$1 prog=$2 a b

	[ "$(pps_lines "$name" "$prog")" = 0 ] || br_fail "$prog: live lines before enable" "$name"
	out=$(con_ok "$name" enable ppsdisplay)
	con_expect_in "$out" '^enabled ppsdisplay$' "$prog: enable ppsdisplay" "$name"
	t_wait_until 10 pps_lines_at_least "$name" "$prog" 2 ||
		br_fail "$prog: no live lines 10 s after enable ppsdisplay" "$name"
	out=$(con_ok "$name" disable ppsdisplay)
	con_expect_in "$out" '^disabled ppsdisplay$' "$prog: disable ppsdisplay" "$name"
	a=$(pps_lines "$name" "$prog")
	sleep 2.5
	b=$(pps_lines "$name" "$prog")
	[ "$a" = "$b" ] || br_fail "$prog: $((b - a)) live lines after disable ppsdisplay" "$name"
}

# A bad --control is a bad option: exit 2 with a message, nothing started.
for prog in "$MCSENDER" "$MCLISTEN"; do
	for bad in "" "/tmp/$(printf 'x%.0s' $(seq 1 120)).sock"; do
		rc=0
		timeout -k 5 30 "$prog" -d sim_ib1 -m 239.1.2.3 --control "$bad" >"$SF_TMP/bad.out" \
			2>"$SF_TMP/bad.err" || rc=$?
		[ "$rc" = 2 ] || br_fail "$prog --control '$bad': exit $rc, expected 2" bad
		grep -Eq 'empty control socket path|control socket path too long \(max 107 bytes\)' \
			"$SF_TMP/bad.err" || br_fail "$prog --control '$bad': no message" bad
	done
done

tools_listen listen -d sim_ib2 -m 239.1.2.3 239.1.2.4 -I 100 -D 80 --control "$SF_TMP/listen.sock"
br_start send 80 "$MCSENDER" -d sim_ib1 -m 239.1.2.3 239.1.2.4 --rate 400 --stream-id 500 \
	-D 70 --control "$SF_TMP/send.sock"
console_wait send
console_wait listen

# status: what each one does.
out=$(con_ok send status)
con_expect_in "$out" '^mcsender: sending plain payloads on sim_ib1:1 \(IB\) for ' "mcsender status" send
con_expect_in "$out" '^groups: 239\.1\.2\.3 239\.1\.2\.4$' "mcsender status" send
con_expect_in "$out" '^rate: 400 pps in bursts of 1, ' "mcsender status" send
con_expect_in "$out" '^sent: [0-9]+ packets, [0-9]+ bytes, 0 errors, ' "mcsender status" send
con_expect_in "$out" '^streams: 2 \(1 per group\), stream ids 500-501, 1 QP$' "mcsender status" send
out=$(con_ok listen status)
con_expect_in "$out" '^mclisten: listening on sim_ib2:1 \(IB\) for ' "mclisten status" listen
con_expect_in "$out" '^groups: 239\.1\.2\.3 239\.1\.2\.4$' "mclisten status" listen
con_expect_in "$out" '^received: [0-9]+ data packets, ' "mclisten status" listen
con_expect_in "$out" '^loss: unique=[0-9]+ lost=0 gaps=0 dup=0 ' "mclisten status" listen

# stats --json: the --json summary so far, and it parses.
con_ok send stats --json >"$SF_TMP/send.json"
jq -e '.sent > 0 and .errors == 0 and .groups == 2 and .streams == 2 and .stream_id == 500 and
	.fabric == "IB" and .device == "sim_ib1"' "$SF_TMP/send.json" >/dev/null ||
	br_fail "mcsender stats --json: $(cat "$SF_TMP/send.json")" send
con_ok listen stats --json >"$SF_TMP/listen.json"
jq -e '.totals.received > 0 and .totals.lost == 0 and (.groups | length) == 2 and
	.device == "sim_ib2"' "$SF_TMP/listen.json" >/dev/null ||
	br_fail "mclisten stats --json: $(cat "$SF_TMP/listen.json")" listen
out=$(con_ok send stats)
con_expect_in "$out" '^mcsender: sent=[0-9]+ .* errors=0 ' "mcsender stats" send

# ppsdisplay: on and off while running.
pps_check send mcsender
pps_check listen mclisten

# Bad commands: status 1, a clear message, nothing else happens.
out=$(con_must_exit send 1 frobnicate)
con_expect_in "$out" "unknown command 'frobnicate' \(help lists them\)" "mcsender bad command" send
out=$(con_must_exit send 1 shut)
con_expect_in "$out" "unknown command 'shut': did you mean shutdown\?" "mcsender shut" send
out=$(con_must_exit send 1 enable sendrate=5)
con_expect_in "$out" "feature 'sendrate' cannot change while running" "mcsender sendrate" send
con_expect_in "$(con_ok send status)" '^rate: 400 pps in bursts of 1, ' "mcsender rate after sendrate" send
out=$(con_must_exit listen 1 stats --bogus)
con_expect_in "$out" "stats: unknown option '--bogus' \(--json\)" "mclisten bad option" listen
out=$(con_must_exit listen 1 enable nosuchfeature)
con_expect_in "$out" "nosuchfeature" "mclisten unknown feature" listen
out=$(con_must_exit listen 1 status extra)
con_expect_in "$out" "status: unexpected argument 'extra'" "mclisten status extra" listen
out=$(con_ok listen status)
con_expect_in "$out" 'lost=0 gaps=0 dup=0 ' "mclisten status after bad commands" listen
kill -0 "$(br_pid send)" 2>/dev/null || br_fail "mcsender stopped after bad commands" send

# A second program on the same socket is refused; the first one goes on.
rc=0
timeout -k 5 30 "$MCLISTEN" -d sim_ib3 -m 239.1.2.5 -D 5 --control "$SF_TMP/listen.sock" \
	>"$SF_TMP/second.out" 2>"$SF_TMP/second.err" || rc=$?
[ "$rc" = 1 ] || br_fail "second mclisten on the socket: exit $rc, expected 1" second
grep -q "another program is listening on $SF_TMP/listen.sock" "$SF_TMP/second.err" ||
	br_fail "second mclisten: no refusal" second
con_ok listen status >/dev/null

# shutdown: the summary, exit 0, as at the end of --duration.
out=$(con_ok send shutdown)
con_expect_in "$out" '^stopping mcsender$' "mcsender shutdown" send
sf_wait_exit "$(br_pid send)"
[ "$SF_RC" = 0 ] || br_fail "mcsender: exit $SF_RC after shutdown" send
sent=$(sed -n 's/^mcsender: sent=\([0-9]*\) .* errors=0 .*/\1/p' "$SF_TMP/send.out")
[ -n "$sent" ] || br_fail "mcsender: no summary after shutdown" send
[ "$sent" -gt 0 ] || br_fail "mcsender: sent nothing" send
[ ! -e "$SF_TMP/send.sock" ] || br_fail "mcsender left its socket behind" send

out=$(con_ok listen shutdown)
con_expect_in "$out" '^stopping mclisten$' "mclisten shutdown" listen
tools_end listen
tools_expect listen received="$sent" unique="$sent" lost=0 gaps=0 dup=0 reordered=0 streams=2
[ ! -e "$SF_TMP/listen.sock" ] || br_fail "mclisten left its socket behind" listen
sf_log "PASS"
