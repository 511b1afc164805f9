#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run_fuzz.sh SOURCE_ROOT WORK_DIR
#
# Build fuzz_pgm_parse with clang (-fsanitize=fuzzer,address,undefined, UB fatal) and
# run it for PGM_FUZZ_SECONDS (default 60) from the checked-in seed corpus
# (tests/pgm/corpus, read-only) plus a scratch corpus in WORK_DIR. Fails on any crash,
# sanitizer report, leak or timeout; a reproducer is left in WORK_DIR/artifacts.
# Exits 77 when clang or its fuzzer runtime is missing.
set -eu

src=$1
work=$2
seconds=${PGM_FUZZ_SECONDS:-60}
cc=${PGM_FUZZ_CC:-clang}

command -v "$cc" >/dev/null 2>&1 || { echo "run_fuzz: $cc not installed, skipping"; exit 77; }
command -v pkg-config >/dev/null 2>&1 || { echo "run_fuzz: no pkg-config, skipping"; exit 77; }

mkdir -p "$work/corpus" "$work/artifacts"
bin=$work/fuzz_pgm_parse
# shellcheck disable=SC2046
if ! "$cc" -g -O1 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$src/pgm" $(pkg-config --cflags liburcu-qsbr liburcu-cds) \
	"$src"/pgm/build.c "$src"/pgm/checksum.c "$src"/pgm/parse.c "$src"/pgm/rewrite.c \
	"$src"/pgm/stream.c "$src/tests/pgm/fuzz_pgm_parse.c" \
	$(pkg-config --libs liburcu-qsbr liburcu-cds) -lpthread -o "$bin" 2>"$work/build.log"; then
	if grep -q -e 'fuzzer' -e 'clang_rt' "$work/build.log"; then
		echo "run_fuzz: $cc cannot link libFuzzer (libclang-rt-*-dev missing?), skipping"
		cat "$work/build.log"
		exit 77
	fi
	cat "$work/build.log"
	exit 1
fi

echo "run_fuzz: fuzzing pgm_parse for ${seconds}s"
start=$(date +%s)
status=0
"$bin" "$work/corpus" "$src/tests/pgm/corpus" \
	-max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
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
