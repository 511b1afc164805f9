/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tap.h: the TAP output of the simfabric C tests (conform.c, abi_calls.c, capacity.c),
 * header-only: each test is one program. check() prints "ok N - ..." or "not ok N - ...";
 * die() bails out (exit 100) with errno's text; tap_done() prints the plan and returns
 * the exit status (the number of failed checks, at most 100).
 */
#ifndef TESTS_SIMFABRIC_TAP_H
#define TESTS_SIMFABRIC_TAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_checks, n_failed;

static __attribute__((format(printf, 2, 3))) void check(int ok, const char *fmt, ...)
{
	va_list ap;

	n_checks++;
	if (!ok)
		n_failed++;
	printf("%s %d - ", ok ? "ok" : "not ok", n_checks);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static __attribute__((noreturn, unused)) void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(100);
}

static __attribute__((unused)) int tap_done(void)
{
	printf("1..%d\n", n_checks);
	return n_failed > 100 ? 100 : n_failed;
}

#endif /* TESTS_SIMFABRIC_TAP_H */
