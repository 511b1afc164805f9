/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tap.h - TAP output for the pool/ unit tests. OK(cond, fmt, ...) prints "ok N - what"
 * or "not ok N - what (file:line: cond)"; EQ(a, b, ...) also prints both values on
 * failure. tap_end() prints the plan and returns the exit status (1 if anything
 * failed). Thread-safe: checks from several threads are serialized.
 */
#ifndef TESTS_POOL_TAP_H
#define TESTS_POOL_TAP_H

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static unsigned tap_n, tap_fails;
static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((format(printf, 4, 5))) static bool tap_ok(bool ok, const char *where,
							 const char *cond, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tap_lock);
	tap_n++;
	printf("%s %u - ", ok ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!ok) {
		tap_fails++;
		printf(" (%s: %s)", where, cond);
	}
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
	return ok;
}

#define TAP_STR2(x) #x
#define TAP_STR(x)  TAP_STR2(x)
#define TAP_WHERE   __FILE__ ":" TAP_STR(__LINE__)

#define OK(cond, ...) tap_ok(!!(cond), TAP_WHERE, #cond, __VA_ARGS__)

#define EQ(a, b, ...)                                                                              \
	({                                                                                         \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                   \
		bool r_ = tap_ok(a_ == b_, TAP_WHERE, #a " == " #b, __VA_ARGS__);                  \
		if (!r_)                                                                           \
			printf("#   got %" PRIu64 ", want %" PRIu64 "\n", a_, b_);                 \
		r_;                                                                                \
	})

/* A diagnostic line (not a check). */
#define DIAG(...)                                                                                  \
	do {                                                                                       \
		printf("# ");                                                                      \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
	} while (0)

static inline int tap_end(void)
{
	printf("1..%u\n", tap_n);
	if (tap_fails)
		printf("# %u of %u checks failed\n", tap_fails, tap_n);
	return tap_fails ? 1 : 0;
}

#endif /* TESTS_POOL_TAP_H */
