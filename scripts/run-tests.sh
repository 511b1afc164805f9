#!/bin/bash
# The README's test command: install the Debian packages, configure, build and run every
# test suite. Idempotent: an existing build directory is reconfigured, not recreated.
#
# Usage: scripts/run-tests.sh [BUILDDIR [MESON_SETUP_OPTION...]]
#   BUILDDIR  build directory, relative to the source tree (default: build)
#   options   passed to `meson setup`, e.g. for the sanitizer run:
#             scripts/run-tests.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false
# Environment: TEST_PROCESSES  tests run in parallel (default 2: the CI machine has two
#              CPUs, and the tests that busy-poll are serialised by Meson anyway).
# Exit status: that of `meson test` (0: every test passed or was skipped), or the
# status of the step that failed before it.
set -euo pipefail

cd "$(dirname "$0")/.."
builddir=${1:-build}
if [ $# -gt 0 ]; then
	shift
fi

./scripts/install-deps.sh
# Sanitizer builds: a UBSan report fails the test (by default UBSan prints and goes on).
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
if [ -f "$builddir/meson-private/coredata.dat" ]; then
	meson setup --reconfigure "$builddir" "$@"
else
	meson setup "$builddir" "$@"
fi
ninja -C "$builddir"
meson test -C "$builddir" --print-errorlogs --num-processes "${TEST_PROCESSES:-2}"
