/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * clock.h - the one clock of the control plane and the tools: CLOCK_MONOTONIC, which
 * no settimeofday or NTP step moves, for every timer, time-out, age and rate. Any thread;
 * a clock_gettime() each (vDSO, no system call).
 *
 * engine/ keeps its own reading (engine/fwd.c): lib/ depends on engine/, not the other
 * way.
 */
#ifndef LIB_CLOCK_H
#define LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

/* clock_ns - clock id (CLOCK_MONOTONIC, CLOCK_REALTIME, ...) in ns. */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* mono_ns - CLOCK_MONOTONIC in ns. */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* mono_ms - CLOCK_MONOTONIC in ms. */
static inline uint64_t mono_ms(void)
{
	return mono_ns() / 1000000;
}

#endif /* LIB_CLOCK_H */
