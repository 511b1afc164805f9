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
 * Only the main thread (before start-up) and the control thread (after) log, one at a
 * time. log_level is atomic because the loglevel feature stores it with feat_set() and
 * workers never read it.
 *
 * While the control loop runs (log_async_start .. log_async_stop), messages do not go to
 * the target from the control thread: a write to stderr blocks when the pipe behind it
 * is full (a reader that stopped reading), syslog() and the journal socket block when
 * journald falls behind, and a blocked control thread serves no timers, console, joins
 * or watchdog pings (issue 15: the control thread stalled 14.5 s and 109 s while the
 * workers forwarded). The control thread queues each message (formatted, with its
 * time) into a bounded ring under a mutex that is only ever held for a copy; the
 * "ib2roce-log" thread writes them out and is the one that blocks. A full ring makes
 * the control thread wait for room, at most LOG_FULL_WAIT_MS once per blocked period:
 * then messages are dropped and counted until the writer moves again, and the writer
 * reports the count in sequence, before the next message that got through
 * ("N log messages dropped: the log output was blocked").
 *
 * A message that stderr refuses (its reader went away: SIGPIPE is ignored in every mode,
 * main.c, so the write fails with EPIPE) is counted in the same log_dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Messages the ring holds while the log output is blocked (about 330 KiB). */
#define LOG_QUEUE 256
/* Fields kept with a queued message (device names, group specs are shorter). */
#define LOG_NAME_MAX 96
/* How long log_async_stop waits for the writer to empty the ring. */
#define LOG_STOP_WAIT_MS 2000
/* How long a message waits for room in a full ring before the output counts as blocked. */
#define LOG_FULL_WAIT_MS 200

_Atomic int64_t log_level = LOG_INFO;

static enum log_target log_target = LOG_TO_STDERR;

/* A queued message: what log_vemit would have written, and when. */
struct log_ent {
	int prio;
	struct timespec ts; /* CLOCK_REALTIME when it was logged (the stderr timestamp) */
	uint64_t dropped;   /* messages dropped just before this one */
	char device[LOG_NAME_MAX], group[LOG_NAME_MAX]; /* "" when none */
	char msg[LOG_LINE_MAX];
};

/*
 * The ring between the control thread (producer) and the writer (consumer). lock
 * protects head, tail, pending, stop and the entries; nobody holds it across a write.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* a message was queued, or stop (the writer waits) */
	pthread_cond_t space; /* a message was taken (a producer facing a full ring waits) */
	pthread_t thread;
	bool running, stop;
	bool blocked;	       /* a full ring did not move for LOG_FULL_WAIT_MS */
	uint64_t blocked_head; /* head when that was found */
	uint64_t head, tail;   /* consumed / produced; tail - head <= LOG_QUEUE */
	uint64_t pending;      /* dropped since the last queued message */
	uint64_t dropped;      /* total (log_dropped) */
	struct log_ent ent[LOG_QUEUE];
} lq = {.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.space = PTHREAD_COND_INITIALIZER};

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

/* Returns 0, or -1 when stderr did not take the line (a closed pipe: EPIPE). */
static int log_stderr(int prio, const struct timespec *ts, const char *msg)
{
	static const char *const tag[] = {"emerg",   "alert",  "crit", "error",
					  "warning", "notice", "info", "debug"};
	struct tm tm;
	char when[32] = "?", zone[8] = "";

	/* Wall clock, ISO 8601 with ms and the UTC offset: what other logs are matched by. */
	if (localtime_r(&ts->tv_sec, &tm)) {
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		strftime(zone, sizeof(zone), "%z", &tm);
	}
	if (fprintf(stderr, "[%s.%03ld%s] ib2roce %s: %s\n", when, ts->tv_nsec / 1000000, zone,
		    tag[prio & 7], msg) < 0) {
		clearerr(stderr); /* a reader that comes back (a FIFO reopened) gets the next */
		return -1;
	}
	return 0;
}

/*
 * A message the output did not take (stderr's reader gone: with SIGPIPE ignored the
 * write fails with EPIPE instead of killing us): counted with the dropped ones. There
 * is nobody to tell, so no "dropped" line follows.
 */
static void log_lost(void)
{
	pthread_mutex_lock(&lq.lock);
	lq.dropped++;
	pthread_mutex_unlock(&lq.lock);
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

/* Write one message to the target (the thread that may block). */
static void log_write(int prio, const struct timespec *ts, const char *device, const char *group,
		      const char *msg)
{
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
	if (log_stderr(prio, ts, msg))
		log_lost();
}

static void log_write_dropped(uint64_t n)
{
	char msg[128];
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(msg, sizeof(msg), "%" PRIu64 " log message%s dropped: the log output was blocked",
		 n, n == 1 ? "" : "s");
	log_write(LOG_WARNING, &ts, NULL, NULL, msg);
}

/* The writer thread: empties the ring into the target until stopped and empty. */
static void *log_writer(void *arg)
{
	struct log_ent *e = malloc(sizeof(*e));

	(void)arg;
	pthread_mutex_lock(&lq.lock);
	for (;;) {
		uint64_t dropped;

		while (lq.head == lq.tail && !lq.stop)
			pthread_cond_wait(&lq.cond, &lq.lock);
		if (lq.head == lq.tail)
			break;
		if (e)
			*e = lq.ent[lq.head % LOG_QUEUE];
		lq.head++;
		pthread_cond_signal(&lq.space);
		pthread_mutex_unlock(&lq.lock);
		/* Without memory for the copy (never on Linux for 1.3 KiB), only the count. */
		dropped = e ? e->dropped : 1;
		if (dropped)
			log_write_dropped(dropped);
		if (e)
			log_write(e->prio, &e->ts, e->device[0] ? e->device : NULL,
				  e->group[0] ? e->group : NULL, e->msg);
		pthread_mutex_lock(&lq.lock);
	}
	/* Drops after the last queued message. */
	if (lq.pending) {
		uint64_t n = lq.pending;

		lq.pending = 0;
		pthread_mutex_unlock(&lq.lock);
		log_write_dropped(n);
	} else {
		pthread_mutex_unlock(&lq.lock);
	}
	free(e);
	return NULL;
}

int log_async_start(void)
{
	int r;

	if (lq.running)
		return 0;
	lq.stop = false;
	r = pthread_create(&lq.thread, NULL, log_writer, NULL);
	if (r)
		return -r;
	pthread_setname_np(lq.thread, "ib2roce-log");
	lq.running = true;
	return 0;
}

void log_async_stop(void)
{
	struct timespec dl;

	if (!lq.running)
		return;
	pthread_mutex_lock(&lq.lock);
	lq.stop = true;
	pthread_cond_signal(&lq.cond);
	pthread_mutex_unlock(&lq.lock);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += LOG_STOP_WAIT_MS / 1000;
	if (pthread_timedjoin_np(lq.thread, NULL, &dl)) {
		/* Still blocked on the output: leave it, messages from now on are written
		 * (and block) on the calling thread as before the control loop ran. */
		pthread_detach(lq.thread);
	}
	lq.running = false;
}

uint64_t log_dropped(void)
{
	uint64_t n;

	pthread_mutex_lock(&lq.lock);
	n = lq.dropped;
	pthread_mutex_unlock(&lq.lock);
	return n;
}

/*
 * Wait, lock held, for room in a full ring: a writer that is only slower than a burst of
 * messages (600 joins at start-up) frees a slot soon, and nothing is lost. A ring that
 * does not move for LOG_FULL_WAIT_MS means the output is blocked: false, and no more
 * waiting until the writer has moved on (one wait per blocked period, not per message).
 */
static bool log_wait_room_locked(void)
{
	struct timespec dl;

	if (lq.blocked) {
		if (lq.head == lq.blocked_head)
			return false;
		lq.blocked = false;
	}
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += LOG_FULL_WAIT_MS * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	while (lq.tail - lq.head >= LOG_QUEUE) {
		if (pthread_cond_timedwait(&lq.space, &lq.lock, &dl) == ETIMEDOUT &&
		    lq.tail - lq.head >= LOG_QUEUE) {
			lq.blocked = true;
			lq.blocked_head = lq.head;
			return false;
		}
	}
	return true;
}

/* Queue a message for the writer (the output blocked: count it). */
static void log_enqueue(int prio, const struct timespec *ts, const char *device, const char *group,
			const char *msg)
{
	struct log_ent *e;

	pthread_mutex_lock(&lq.lock);
	if (lq.tail - lq.head >= LOG_QUEUE && !log_wait_room_locked()) {
		lq.pending++;
		lq.dropped++;
		pthread_mutex_unlock(&lq.lock);
		return;
	}
	e = &lq.ent[lq.tail % LOG_QUEUE];
	e->prio = prio;
	e->ts = *ts;
	e->dropped = lq.pending;
	lq.pending = 0;
	snprintf(e->device, sizeof(e->device), "%s", device ? device : "");
	snprintf(e->group, sizeof(e->group), "%s", group ? group : "");
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	lq.tail++;
	pthread_cond_signal(&lq.cond);
	pthread_mutex_unlock(&lq.lock);
}

static void log_vemit(int prio, const char *device, const char *group, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX];
	struct timespec ts;

	prio &= 7;
	if (prio > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	clock_gettime(CLOCK_REALTIME, &ts); /* the --debug timestamp: wall clock */
	if (lq.running && !pthread_equal(pthread_self(), lq.thread)) {
		log_enqueue(prio, &ts, device, group, msg);
		return;
	}
	log_write(prio, &ts, device, group, msg);
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
