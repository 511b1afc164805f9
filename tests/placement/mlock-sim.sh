#!/bin/bash
# --enable mlock on the simulated fabric: without CAP_IPC_LOCK and with a 1 MiB
# RLIMIT_MEMLOCK the bridge refuses to start (exit status 1) with a message naming the
# limit and how to raise it; with the capability (root) it starts and runs.
set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/br.sh
. "$(dirname "$0")/../lib/br.sh"

sf_init "place-mlock"
sf_need setpriv
sf_need prlimit
# AddressSanitizer intercepts mlockall and makes it a no-op that succeeds.
if ldd "$IB2ROCE" | grep -q libasan; then
	sf_log "SKIP: mlockall is a no-op under AddressSanitizer"
	exit 77
fi
group=239.1.2.4

# The smallest queues, so that the smallest pool (1024 buffers) is accepted.
rc=0
timeout -k 5 30 setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock \
	prlimit --memlock=1048576 "$IB2ROCE" --debug --control "$SF_TMP/small.sock" \
	--idle backoff -d sim_ib0 -r sim_roce0 --workers 1 -e buffers=1024 -e rqdepth=64 \
	-e sqdepth=64 -e mlock \
	-m "$group" >"$SF_TMP/small.out" 2>"$SF_TMP/small.err" </dev/null || rc=$?
[ "$rc" = 1 ] || br_fail "mlock with 1 MiB RLIMIT_MEMLOCK: exit status $rc, expected 1" small
grep -qF 'RLIMIT_MEMLOCK is 1024 KiB' "$SF_TMP/small.err" ||
	br_fail "mlock: the error does not name RLIMIT_MEMLOCK" small
grep -qF 'LimitMEMLOCK=infinity' "$SF_TMP/small.err" ||
	br_fail "mlock: the error does not say how to raise the limit" small

if [ "$(id -u)" = 0 ]; then
	br_bridge bridge 1 -d sim_ib0 -r sim_roce0 --workers 1 -e buffers=1024 -e rqdepth=64 \
		-e sqdepth=64 -e mlock \
		-m "$group"
	br_alive bridge
	br_stop bridge
fi
sf_log "ok"
