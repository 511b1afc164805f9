/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_errclock.c - lib/err.h and lib/clock.h, the one error helper and the one clock
 * of lib/, control/ and tools/: errf's message, code, truncation and NULL buffer;
 * errf_append; opt_errf as errf; the clock readings in order (no durations asserted).
 */
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "options.h"
#include "tap.h"

static void test_errf(void)
{
	char err[16], big[64];

	memset(err, 'x', sizeof(err));
	CHECK_EQ(errf(err, sizeof(err), -EINVAL, "no device '%s'", "mlx"), -EINVAL);
	CHECK_STR(err, "no device 'mlx'");

	/* Truncated and terminated. */
	CHECK_EQ(errf(err, sizeof(err), -ENOENT, "%s: %s", "/run/ib2roce/x", strerror(ENOENT)),
		 -ENOENT);
	CHECK_EQ(strlen(err), sizeof(err) - 1);
	CHECK_STR(err, "/run/ib2roce/x:");

	/* No buffer: only the code. */
	CHECK_EQ(errf(NULL, 0, -EPERM, "x"), -EPERM);
	strcpy(err, "kept");
	CHECK_EQ(errf(err, 0, 7, "y"), 7);
	CHECK_STR(err, "kept");

	/* The option handlers' name for it. */
	CHECK_EQ(opt_errf(big, sizeof(big), -ERANGE, "'%d' is out of range 1..%d", 0, 64), -ERANGE);
	CHECK_STR(big, "'0' is out of range 1..64");
}

static void test_append(void)
{
	char err[16];

	errf(err, sizeof(err), 0, "a (");
	errf_append(err, sizeof(err), "%s, %s", "b", "c");
	errf_append(err, sizeof(err), ")");
	CHECK_STR(err, "a (b, c)");

	/* Up to the end of the buffer, then nothing more. */
	errf_append(err, sizeof(err), "0123456789");
	CHECK_STR(err, "a (b, c)0123456");
	errf_append(err, sizeof(err), "z");
	CHECK_STR(err, "a (b, c)0123456");
	errf_append(NULL, 0, "z");
}

static void test_clock(void)
{
	uint64_t ns1 = mono_ns(), ms = mono_ms(), ns2 = clock_ns(CLOCK_MONOTONIC);
	uint64_t r1 = clock_ns(CLOCK_REALTIME), r2 = clock_ns(CLOCK_REALTIME);

	CHECK(ns1 > 0);
	CHECK(ns1 <= ns2);
	CHECK(ns1 / 1000000 <= ms);
	CHECK(ms <= ns2 / 1000000);
	/* CLOCK_REALTIME through the same reader: after 2020 (in ns since 1970). */
	CHECK(r1 > 1577836800ull * 1000000000ull);
	CHECK(r1 <= r2 || r1 - r2 < 1000000000ull);
}

int main(void)
{
	test_errf();
	test_append();
	test_clock();
	return tap_done();
}
