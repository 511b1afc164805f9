#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run_fuzz.sh SOURCE_ROOT WORK_DIR TARGET
#
# Build the libFuzzer target TARGET with clang (-fsanitize=fuzzer,address,undefined, UB
# fatal) and run it from its checked-in seed corpus (read-only) plus a scratch corpus in
# WORK_DIR/TARGET:
#   config   the configuration file parser (tests/fuzz/fuzz_config.c,
#            corpus tests/fuzz/corpus-config), FUZZ_SECONDS (default 30)
#   console  the console's command path (tests/fuzz/fuzz_console.c,
#            corpus tests/fuzz/corpus-console), FUZZ_SECONDS (default 30)
#   pgm      the PGM parser (tests/pgm/fuzz_pgm_parse.c, corpus tests/pgm/corpus),
#            PGM_FUZZ_SECONDS (default 60)
# Fails on any crash, broken invariant, sanitizer report, leak or timeout; a reproducer
# is left in WORK_DIR/TARGET/artifacts (run WORK_DIR/TARGET/fuzz_TARGET FILE to replay
# it). Exits 77 when clang or its fuzzer runtime is missing. FUZZ_CC (PGM_FUZZ_CC for
# pgm) names another compiler.
set -eu

src=$1
target=$3
work=$2/$target
seconds=${FUZZ_SECONDS:-30}
cc=${FUZZ_CC:-clang}
fuzzer=$src/tests/fuzz/fuzz_$target.c
corpus=$src/tests/fuzz/corpus-$target

case $target in
config)
	sources="lib/options.c lib/optfile.c lib/optnum.c lib/features.c lib/builtin.c lib/suggest.c
		tests/control/fixture.c"
	maxlen=16384
	;;
console)
	sources="lib/options.c lib/optfile.c lib/optnum.c lib/features.c lib/builtin.c lib/suggest.c
		lib/paths.c lib/sysgroup.c lib/featcmd.c engine/mgid.c tests/control/fixture.c"
	maxlen=16384
	;;
pgm)
	sources="pgm/build.c pgm/checksum.c pgm/parse.c pgm/rewrite.c pgm/stream.c"
	maxlen=8192
	seconds=${PGM_FUZZ_SECONDS:-60}
	cc=${PGM_FUZZ_CC:-clang}
	fuzzer=$src/tests/pgm/fuzz_pgm_parse.c
	corpus=$src/tests/pgm/corpus
	;;
*)
	echo "run_fuzz: unknown target '$target' (config, console, pgm)"
	exit 2
	;;
esac

command -v "$cc" >/dev/null 2>&1 || { echo "run_fuzz: $cc not installed, skipping"; exit 77; }
command -v pkg-config >/dev/null 2>&1 || { echo "run_fuzz: no pkg-config, skipping"; exit 77; }

rm -rf "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"
bin=$work/fuzz_$target
paths=""
for s in $sources; do
	paths="$paths $src/$s"
done
# shellcheck disable=SC2046,SC2086 # word lists without blanks
if ! "$cc" -g -O1 -std=gnu11 -D_GNU_SOURCE -D_LGPL_SOURCE -Wall -Wextra -Werror \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$src/control" -I"$src/lib" -I"$src/engine" -I"$src/pool" -I"$src/pgm" -I"$src/tests/control" \
	$(pkg-config --cflags liburcu-qsbr liburcu-cds libibverbs) \
	$paths "$fuzzer" \
	$(pkg-config --libs liburcu-qsbr liburcu-cds) -lpthread -o "$bin" 2>"$work/build.log"; then
	if grep -q -e 'fuzzer' -e 'clang_rt' "$work/build.log"; then
		echo "run_fuzz: $cc cannot link libFuzzer (libclang-rt-*-dev missing?), skipping"
		cat "$work/build.log"
		exit 77
	fi
	cat "$work/build.log"
	exit 1
fi

echo "run_fuzz: fuzzing $target for ${seconds}s"
start=$(date +%s)
status=0
"$bin" "$work/corpus" "$corpus" \
	-max_total_time="$seconds" -max_len=$maxlen -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" >"$work/fuzz.log" 2>&1 || status=$?
end=$(date +%s)
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
tail -n 15 "$work/fuzz.log"
echo "run_fuzz: ${runs:-?} executions in $((end - start))s, exit status $status"
if [ "$status" -ne 0 ] || ls "$work/artifacts" | grep -q .; then
	echo "run_fuzz: FINDING, see $work/artifacts and $work/fuzz.log"
	exit 1
fi
