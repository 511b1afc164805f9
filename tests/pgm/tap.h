/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tap.h - minimal TAP output for the pgm/ unit tests. Each CHECK prints "ok N" or
 * "not ok N - file:line: expression"; tap_done() prints the plan and returns the exit
 * status (non-zero when anything failed).
 */
#ifndef TESTS_PGM_TAP_H
#define TESTS_PGM_TAP_H

#include <inttypes.h>
#include <stdio.h>

static unsigned tap_count, tap_failed;

static inline void tap_result(int ok, const char *file, int line, const char *what)
{
	tap_count++;
	if (ok) {
		printf("ok %u\n", tap_count);
	} else {
		tap_failed++;
		printf("not ok %u - %s:%d: %s\n", tap_count, file, line, what);
	}
}

#define CHECK(cond) tap_result(!!(cond), __FILE__, __LINE__, #cond)

/* Compare two integers, print both on failure. */
#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                 \
		tap_result(va_ == vb_, __FILE__, __LINE__, #a " == " #b);                          \
		if (va_ != vb_)                                                                    \
			printf("#   got %" PRIu64 " (0x%" PRIx64 "), want %" PRIu64 " (0x%" PRIx64 \
			       ")\n",                                                              \
			       va_, va_, vb_, vb_);                                                \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	if (tap_failed)
		printf("# %u of %u checks failed\n", tap_failed, tap_count);
	return tap_failed ? 1 : 0;
}

#endif /* TESTS_PGM_TAP_H */
