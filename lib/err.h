/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * err.h - the one way a function of lib/, control/ or tools/ words an error for its
 * caller: a one-line message without a trailing newline in a buffer the caller gives
 * (err, errlen bytes: truncated, always terminated; err may be NULL when errlen is 0),
 * and a return code. The caller decides where the line goes (a log, the console, stderr):
 * nothing here prints or logs.
 *
 * engine/ keeps its own (engine/setup.c): lib/ depends on engine/, not the other way.
 */
#ifndef LIB_ERR_H
#define LIB_ERR_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * errf - format a message into err (if err and errlen) and return code, for
 * "return errf(err, errlen, -EINVAL, "no device '%s'", arg);". Any thread. Also
 * known as opt_errf (options.h), the name the option handlers use.
 */
static inline __attribute__((format(printf, 4, 5))) int errf(char *err, size_t errlen, int code,
							     const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/*
 * errf_append - append a formatted text to the message err already holds (truncated
 * as errf; nothing when err is full, NULL or errlen 0). Any thread.
 */
static inline __attribute__((format(printf, 3, 4))) void errf_append(char *err, size_t errlen,
								     const char *fmt, ...)
{
	size_t used;
	va_list ap;

	if (!err || !errlen)
		return;
	used = strnlen(err, errlen);
	if (used + 1 >= errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
}

#endif /* LIB_ERR_H */
