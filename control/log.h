/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Logging for the control thread (only control/ logs; the data path counts). Messages go
 * to stderr with a monotonic timestamp in the foreground.
 */
#ifndef CONTROL_LOG_H
#define CONTROL_LOG_H

#include <stdatomic.h>
#include <stdint.h>
#include <syslog.h>

/* Current level (syslog priorities: LOG_ERR 3 .. LOG_DEBUG 7); the loglevel feature. */
extern _Atomic int64_t log_level;

void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* CONTROL_LOG_H */
