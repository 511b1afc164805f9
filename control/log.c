// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

_Atomic int64_t log_level = LOG_INFO;

void log_msg(int prio, const char *fmt, ...)
{
	static const char *const tag[] = {"emerg",   "alert",  "crit", "error",
					  "warning", "notice", "info", "debug"};
	struct timespec ts;
	char line[1024];
	va_list ap;

	if (prio > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "[%6ld.%03ld] ib2roce %s: %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000000,
		tag[prio & 7], line);
}
