/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fixture.h - a registry set up the way the bridge's modules will fill it: the
 * reference's options (-d -r -m -i -o -l -p -t -k -s -x -v -q, --cpus, --workers),
 * multicast groups as positional arguments, and the reference's runtime features.
 * Every handler appends "name[=arg]" to fx.log, so tests see calls and their order.
 */
#ifndef TESTS_CONTROL_FIXTURE_H
#define TESTS_CONTROL_FIXTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct fixture {
	char log[4096];	 /* "device=mlx5_0 multicast=239.1.2.3 verbose ..." */
	uint64_t port;	 /* last --port */
	unsigned groups; /* --multicast, --inbound, --outbound and positional */
	FILE *out;	 /* what the built-ins and --mgid print (a memory stream) */
	char *out_buf;
	size_t out_len;

	_Atomic int64_t bridging, drop, loglevel, buffers, huge, mcqp, pgm, pgm_nak, ppsdisplay,
		statint;
	int applied_mcqp; /* mcqp's apply callback: how often called */
};

extern struct fixture fx;

/* Clear both registries and register the fixture's options and features. Exits on error. */
void fixture_setup(void);

/* What the built-ins printed since fixture_setup() (NUL-terminated). */
const char *fixture_output(void);

/* Free the registries and the output stream. */
void fixture_teardown(void);

#endif /* TESTS_CONTROL_FIXTURE_H */
