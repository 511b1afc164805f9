/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Logging for the control thread (only control/ logs; the data path counts). Messages go
 * to stderr with a wall-clock ISO 8601 timestamp (ms, UTC offset) in the foreground
 * (--debug: [2026-11-24T20:24:21.123+0000]), to syslog as a
 * daemon, to the journal under systemd (with PRIORITY= and structured fields). Main and
 * control thread only.
 */
#ifndef CONTROL_LOG_H
#define CONTROL_LOG_H

#include <stdatomic.h>
#include <stdint.h>
#include <syslog.h>

/* Current level (syslog priorities: LOG_ERR 3 .. LOG_DEBUG 7); the loglevel feature. */
extern _Atomic int64_t log_level;

enum log_target {
	LOG_TO_STDERR,	/* the default: "[secs.millis] ib2roce LEVEL: message" */
	LOG_TO_SYSLOG,	/* openlog("ib2roce", LOG_PID | LOG_NDELAY, LOG_DAEMON) */
	LOG_TO_JOURNAL, /* native journal: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, fields;
			 * a message the journal does not take (none running) goes to
			 * stderr instead */
};

/*
 * Send later messages to target (main or control thread). log_level filters messages
 * for every target. Messages are cut at 1023 bytes; logging never allocates.
 */
void log_open(enum log_target target);

/*
 * log_async_start - from now on messages are queued (a ring of 256) and written by a
 * thread of their own, so that a log output that blocks (a full pipe, journald behind)
 * does not block the caller: a full ring that does not move for 200 ms counts as
 * blocked, and then messages are dropped, counted, and the count is logged in their
 * place once the output moves again (the caller waits those 200 ms once). Main thread,
 * just before the control loop (after daemonizing: the thread would not survive the fork).
 * Returns 0 or -errno from pthread_create (messages are then written synchronously).
 */
int log_async_start(void);

/*
 * log_async_stop - write what is queued and stop the writer thread: waits up to 2 s for
 * it; a writer still blocked then is left behind (detached). Messages are written by
 * their caller again afterwards. Main thread, after the control loop.
 */
void log_async_stop(void);

/* log_dropped - messages dropped so far because the log output was blocked. Any thread. */
uint64_t log_dropped(void);

void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * log_text - every non-empty line of text as one message, prefix before each (text is
 * cut at its newlines; NULL logs nothing). For multi-line reports (reload, final
 * counters in the background).
 */
void log_text(int prio, const char *prefix, char *text);

/*
 * log_ctx - a message about a device and/or a group (either may be NULL): on the journal
 * they become the fields IB2ROCE_DEVICE= and IB2ROCE_GROUP=; on stderr and syslog the
 * message is written as given (it names them itself).
 */
void log_ctx(int prio, const char *device, const char *group, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* CONTROL_LOG_H */
