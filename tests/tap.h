/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tap.h - minimal TAP output for the unit tests of control/ and pgm/ (and the tests
 * that use their helpers: console, placement). Each check prints "ok N" or
 * "not ok N - file:line: expression" with what was found; tap_done() prints the plan and
 * returns the exit status (non-zero when anything failed). Found through the include
 * path (tests_inc in tests/meson.build): one copy for every suite.
 */
#ifndef TESTS_TAP_H
#define TESTS_TAP_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static unsigned tap_count, tap_failed;

static inline int tap_result(int ok, const char *file, int line, const char *what)
{
	tap_count++;
	if (ok) {
		printf("ok %u\n", tap_count);
	} else {
		tap_failed++;
		printf("not ok %u - %s:%d: %s\n", tap_count, file, line, what);
	}
	return ok;
}

#define CHECK(cond) tap_result(!!(cond), __FILE__, __LINE__, #cond)

/*
 * Compare two integers, print both on failure (signed and in hex: the same test serves
 * counters, offsets and protocol fields). Equal as 64-bit patterns, so signed and
 * unsigned operands of any width compare as C's conversions make them.
 */
#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                 \
		if (!tap_result(va_ == vb_, __FILE__, __LINE__, #a " == " #b))                     \
			printf("#   got %" PRId64 " (0x%" PRIx64 "), want %" PRId64 " (0x%" PRIx64 \
			       ")\n",                                                              \
			       (int64_t)va_, va_, (int64_t)vb_, vb_);                              \
	} while (0)

/* Compare two strings, print both on failure. */
#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *sa_ = (a), *sb_ = (b);                                                 \
		if (!tap_result(sa_ && sb_ && !strcmp(sa_, sb_), __FILE__, __LINE__,               \
				#a " == " #b))                                                     \
			printf("#   got  \"%s\"\n#   want \"%s\"\n", sa_ ? sa_ : "(null)",         \
			       sb_ ? sb_ : "(null)");                                              \
	} while (0)

/* haystack contains needle; print both on failure. */
#define CHECK_HAS(haystack, needle)                                                                \
	do {                                                                                       \
		const char *h_ = (haystack), *n_ = (needle);                                       \
		if (!tap_result(h_ && n_ && strstr(h_, n_), __FILE__, __LINE__,                    \
				#haystack " contains " #needle))                                   \
			printf("#   text:\n%s\n#   lacks \"%s\"\n", h_ ? h_ : "(null)", n_);       \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	if (tap_failed)
		printf("# %u of %u checks failed\n", tap_failed, tap_count);
	return tap_failed ? 1 : 0;
}

#endif /* TESTS_TAP_H */
