// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Logging for the main and control threads (control/log.h).
 *
 * A message is formatted once into a fixed buffer on the stack (LOG_LINE_MAX, longer
 * messages are cut) and handed to the current target; nothing here allocates, so the
 * control thread can log while memory is short. The journal fields are written into the
 * same kind of buffers and sent with sd_journal_sendv() so that the optional ones
 * (IB2ROCE_DEVICE=, IB2ROCE_GROUP=) can simply be left out of the vector.
 *
 * No locking: only the main thread (before start-up) and the control thread (after)
 * log, one at a time, so the target needs no synchronization. log_level is atomic
 * because the loglevel feature stores it with feat_set() and workers never read it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* CODE_FILE= etc. would always name log_journal() below: leave them out. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"

/* Longest message, its terminator included; longer ones are truncated. */
#define LOG_LINE_MAX 1024
/* Longest device or group field, "IB2ROCE_DEVICE=" included. */
#define LOG_FIELD_MAX 256
/* Lets journalctl -t ib2roce find us whatever the process is called. */
#define LOG_IDENT_FIELD "SYSLOG_IDENTIFIER=ib2roce"
/* journald's native socket (systemd.io/JOURNAL_NATIVE_PROTOCOL). */
#define LOG_JOURNAL_SOCKET "/run/systemd/journal/socket"

_Atomic int64_t log_level = LOG_INFO;

static enum log_target log_target = LOG_TO_STDERR;

void log_open(enum log_target target)
{
	/*
	 * LOG_NDELAY connects to /dev/log now, while the file system is still the one we
	 * started in: a later sandbox or chroot would hide the socket.
	 */
	if (target == LOG_TO_SYSLOG && log_target != LOG_TO_SYSLOG)
		openlog("ib2roce", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	else if (target != LOG_TO_SYSLOG && log_target == LOG_TO_SYSLOG)
		closelog();
	log_target = target;
}

static void log_stderr(int prio, const char *msg)
{
	static const char *const tag[] = {"emerg",   "alert",  "crit", "error",
					  "warning", "notice", "info", "debug"};
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "[%6ld.%03ld] ib2roce %s: %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000000,
		tag[prio & 7], msg);
}

/* Format one journal field "NAME=value" into buf; a value too long is cut. */
static struct iovec __attribute__((format(printf, 3, 4)))
log_field(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	/* vsnprintf returns the length it wanted, not what fit. */
	if ((size_t)n >= len)
		n = (int)len - 1;
	return (struct iovec){.iov_base = buf, .iov_len = (size_t)n};
}

/*
 * One journal entry. Returns 0, or -errno when it could not be sent: -ENOENT when no
 * journal is running (a container). sd_journal_sendv() itself reports success when the
 * socket is missing ("fail silently if the journal is not available"), which would lose
 * the message, hence the look at the socket first; it costs one access() per message
 * on the control thread, and notices a journal that appears later.
 */
static int log_journal(int prio, const char *device, const char *group, const char *msg)
{
	char pbuf[16], dbuf[LOG_FIELD_MAX], gbuf[LOG_FIELD_MAX];
	char mbuf[sizeof("MESSAGE=") + LOG_LINE_MAX];
	struct iovec iov[5];
	int n = 0;

	if (access(LOG_JOURNAL_SOCKET, W_OK) < 0)
		return -errno;

	iov[n++] = log_field(mbuf, sizeof(mbuf), "MESSAGE=%s", msg);
	iov[n++] = log_field(pbuf, sizeof(pbuf), "PRIORITY=%d", prio);
	iov[n++] = (struct iovec){.iov_base = (void *)LOG_IDENT_FIELD,
				  .iov_len = sizeof(LOG_IDENT_FIELD) - 1};
	if (device)
		iov[n++] = log_field(dbuf, sizeof(dbuf), "IB2ROCE_DEVICE=%s", device);
	if (group)
		iov[n++] = log_field(gbuf, sizeof(gbuf), "IB2ROCE_GROUP=%s", group);
	return sd_journal_sendv(iov, n);
}

static void log_vemit(int prio, const char *device, const char *group, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX];

	prio &= 7;
	if (prio > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	switch (log_target) {
	case LOG_TO_SYSLOG:
		syslog(prio, "%s", msg);
		return;
	case LOG_TO_JOURNAL:
		/* Without a journal the message must not be lost: stderr is the fallback. */
		if (!log_journal(prio, device, group, msg))
			return;
		break;
	case LOG_TO_STDERR:
		break;
	}
	log_stderr(prio, msg);
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(prio, NULL, NULL, fmt, ap);
	va_end(ap);
}

void log_ctx(int prio, const char *device, const char *group, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(prio, device, group, fmt, ap);
	va_end(ap);
}

void log_text(int prio, const char *prefix, char *text)
{
	for (char *line = text, *nl; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = 0;
		if (*line)
			log_msg(prio, "%s%s", prefix, line);
	}
}
