/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tap.h - the TAP output of every C test (unit tests of control/, pgm/, pool/, capture/,
 * tools/, placement, and the simulated fabric's call-by-call tests). Header-only: each
 * test is one program. Found through the include path (tests_inc in tests/meson.build,
 * which names tests/lib/): #include "tap.h".
 *
 * Two styles of check, one counter:
 *   CHECK(cond), CHECK_EQ(a, b), CHECK_STR(a, b), CHECK_HAS(text, needle): the expression
 *     is the description; on failure the values found are printed.
 *   OK(cond, fmt, ...), EQ(a, b, fmt, ...): a description of your own (printf format).
 * Each prints "ok N - what" or "not ok N - what (file:line: expression)". Every check
 * evaluates to its result (1 passed, 0 failed), so `if (!CHECK(fd >= 0)) return;` works.
 * Checks from several threads are serialized (one mutex).
 *
 * DIAG(fmt, ...) prints a "# " comment line; tap_skip(reason) counts a skipped check;
 * tap_bail(what) stops the test ("Bail out!", with errno's text, exit 100);
 * tap_done() prints the plan and returns the exit status: 0, or 1 when a check failed.
 */
#ifndef TESTS_TAP_H
#define TESTS_TAP_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned tap_count, tap_failed;
static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Count one check and print its line: "ok N - <fmt...>", or "not ok N - <fmt...> (where:
 * cond)". Returns ok (0 or 1). Any thread.
 */
static inline __attribute__((format(printf, 4, 5))) int
tap_check(int ok, const char *where, const char *cond, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tap_lock);
	tap_count++;
	printf("%s %u - ", ok ? "ok" : "not ok", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!ok) {
		tap_failed++;
		printf(" (%s: %s)", where, cond);
	}
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
	return ok;
}

/* What a failed integer comparison found: both values, unsigned, signed and in hex. */
static inline void tap_diag_eq(uint64_t got, uint64_t want)
{
	printf("#   got %" PRIu64 " (%" PRId64 ", 0x%" PRIx64 "), want %" PRIu64 " (%" PRId64
	       ", 0x%" PRIx64 ")\n",
	       got, (int64_t)got, got, want, (int64_t)want, want);
	fflush(stdout);
}

#define TAP_STR2(x) #x
#define TAP_STR(x)  TAP_STR2(x)
#define TAP_WHERE   __FILE__ ":" TAP_STR(__LINE__)

/* cond holds; described by its own text. */
#define CHECK(cond) tap_check(!!(cond), TAP_WHERE, #cond, "%s", #cond)

/* cond holds; described by fmt, ... (printf). */
#define OK(cond, ...) tap_check(!!(cond), TAP_WHERE, #cond, __VA_ARGS__)

/*
 * Two integers are equal as 64-bit patterns (signed and unsigned operands of any width
 * compare as C's conversions make them); both printed on failure. EQ takes a description.
 */
#define CHECK_EQ(a, b)                                                                             \
	({                                                                                         \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                 \
		int r_ = tap_check(va_ == vb_, TAP_WHERE, #a " == " #b, "%s", #a " == " #b);       \
		if (!r_)                                                                           \
			tap_diag_eq(va_, vb_);                                                     \
		r_;                                                                                \
	})

#define EQ(a, b, ...)                                                                              \
	({                                                                                         \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                 \
		int r_ = tap_check(va_ == vb_, TAP_WHERE, #a " == " #b, __VA_ARGS__);              \
		if (!r_)                                                                           \
			tap_diag_eq(va_, vb_);                                                     \
		r_;                                                                                \
	})

/* Two strings are equal; both printed on failure. */
#define CHECK_STR(a, b)                                                                            \
	({                                                                                         \
		const char *sa_ = (a), *sb_ = (b);                                                 \
		int r_ = tap_check(sa_ && sb_ && !strcmp(sa_, sb_), TAP_WHERE, #a " == " #b, "%s", \
				   #a " == " #b);                                                  \
		if (!r_)                                                                           \
			printf("#   got  \"%s\"\n#   want \"%s\"\n", sa_ ? sa_ : "(null)",         \
			       sb_ ? sb_ : "(null)");                                              \
		r_;                                                                                \
	})

/* haystack contains needle; both printed on failure. */
#define CHECK_HAS(haystack, needle)                                                                \
	({                                                                                         \
		const char *h_ = (haystack), *n_ = (needle);                                       \
		int r_ = tap_check(h_ && n_ && strstr(h_, n_), TAP_WHERE,                          \
				   #haystack " contains " #needle, "%s",                           \
				   #haystack " contains " #needle);                                \
		if (!r_)                                                                           \
			printf("#   text:\n%s\n#   lacks \"%s\"\n", h_ ? h_ : "(null)",            \
			       n_ ? n_ : "(null)");                                                \
		r_;                                                                                \
	})

/* A diagnostic line (not a check). */
#define DIAG(...)                                                                                  \
	do {                                                                                       \
		printf("# ");                                                                      \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
	} while (0)

/* Count a check that cannot run here: "ok N # SKIP reason". */
static inline void tap_skip(const char *reason)
{
	pthread_mutex_lock(&tap_lock);
	tap_count++;
	printf("ok %u # SKIP %s\n", tap_count, reason);
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
}

/* Stop the whole test: "Bail out! what: <errno's text>", exit status 100. */
static inline __attribute__((noreturn)) void tap_bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(100);
}

/* Print the plan (and how many failed); the exit status: 0, or 1 when a check failed. */
static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	if (tap_failed)
		printf("# %u of %u checks failed\n", tap_failed, tap_count);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif /* TESTS_TAP_H */
