// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_log - control/log.c: the stderr format, the level filter on every target,
 * log_ctx, truncation of long messages, and the stderr fallback of the journal target
 * when no journal is running (a container; skipped where a journal runs, since what
 * reaches it cannot be read back here).
 *
 * stderr (fd 2) is pointed at a temporary file for the whole test; each check empties
 * the file, logs, and reads back what was written. TAP goes to stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tap.h"

/* Longest message log.c keeps, without its terminator. */
#define LINE_KEPT 1023
/* The --debug timestamp: wall clock, ISO 8601 with milliseconds and the UTC offset. */
#define TS "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}[+-][0-9]{4}"

static int cap_fd = -1;
static char cap_buf[8192];

/* Point fd 2 at a fresh temporary file. */
static int capture_start(void)
{
	char path[] = "/tmp/test_log.XXXXXX";

	cap_fd = mkstemp(path);
	if (cap_fd < 0)
		return -errno;
	unlink(path);
	if (dup2(cap_fd, STDERR_FILENO) < 0)
		return -errno;
	return 0;
}

/* Forget what was captured so far. */
static void capture_reset(void)
{
	if (ftruncate(cap_fd, 0) < 0)
		perror("ftruncate");
	lseek(STDERR_FILENO, 0, SEEK_SET);
}

/* What was written to stderr since the last reset, as a string. */
static const char *captured(void)
{
	ssize_t n = pread(cap_fd, cap_buf, sizeof(cap_buf) - 1, 0);

	cap_buf[n > 0 ? n : 0] = '\0';
	return cap_buf;
}

/* s matches the extended regular expression re. */
static int matches(const char *s, const char *re)
{
	regex_t rx;
	int ok;

	if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))
		return 0;
	ok = !regexec(&rx, s, 0, NULL, 0);
	regfree(&rx);
	return ok;
}

static void test_stderr_format(void)
{
	log_open(LOG_TO_STDERR);
	atomic_store(&log_level, LOG_INFO);

	capture_reset();
	log_msg(LOG_INFO, "hello %d", 42);
	CHECK(matches(captured(), "^\\[" TS "\\] ib2roce info: hello 42\n$"));

	capture_reset();
	log_err("bad %s", "thing");
	log_warn("careful");
	log_notice("noted");
	CHECK(matches(captured(), "^\\[" TS "\\] ib2roce error: bad thing\n"
				  "\\[" TS "\\] ib2roce warning: careful\n"
				  "\\[" TS "\\] ib2roce notice: noted\n$"));

	/* log_ctx on stderr: the message as given, the fields only go to the journal. */
	capture_reset();
	log_ctx(LOG_NOTICE, "mlx5_0", "239.1.2.3:4711", "group %s joined", "239.1.2.3:4711");
	CHECK(matches(captured(), "^\\[" TS "\\] ib2roce notice: group "
				  "239\\.1\\.2\\.3:4711 joined\n$"));
	capture_reset();
	log_ctx(LOG_WARNING, NULL, NULL, "no context");
	CHECK(matches(captured(), "ib2roce warning: no context\n$"));
}

static void test_level_filter(void)
{
	log_open(LOG_TO_STDERR);

	atomic_store(&log_level, LOG_INFO);
	capture_reset();
	log_debug("hidden");
	log_ctx(LOG_DEBUG, "dev", "grp", "hidden too");
	CHECK_STR(captured(), "");

	atomic_store(&log_level, LOG_DEBUG);
	capture_reset();
	log_debug("shown");
	CHECK(matches(captured(), "ib2roce debug: shown\n$"));

	atomic_store(&log_level, LOG_ERR);
	capture_reset();
	log_warn("hidden");
	log_info("hidden");
	log_err("only this");
	CHECK(matches(captured(), "^\\[[^]]*\\] ib2roce error: only this\n$"));
	atomic_store(&log_level, LOG_INFO);
}

static void test_truncation(void)
{
	static char big[3000];
	const char *out, *colon;

	memset(big, 'x', sizeof(big) - 1);
	log_open(LOG_TO_STDERR);
	capture_reset();
	log_info("%s", big);
	out = captured();
	colon = strstr(out, "info: ");
	CHECK(colon != NULL);
	if (colon)
		CHECK_EQ(strlen(colon + strlen("info: ")), LINE_KEPT + 1); /* + '\n' */
}

static void test_syslog(void)
{
	/* syslog gets it (or drops it without /dev/log); nothing may leak to stderr. */
	log_open(LOG_TO_SYSLOG);
	capture_reset();
	log_info("to syslog");
	CHECK_STR(captured(), "");
	log_open(LOG_TO_STDERR);
	capture_reset();
	log_info("back on stderr");
	CHECK(matches(captured(), "ib2roce info: back on stderr\n$"));
}

static void test_journal_fallback(void)
{
	/* The socket log.c talks to; without it no journal runs here. */
	int journal = !access("/run/systemd/journal/socket", W_OK);

	log_open(LOG_TO_JOURNAL);
	if (journal) {
		/* A journal answers: messages go there, nothing to check on stderr. */
		tap_skip("a journal is running here, no fallback to test");
		tap_skip("a journal is running here, no fallback to test");
	} else {
		capture_reset();
		log_ctx(LOG_WARNING, "mlx5_0", "239.1.2.3", "port %d down", 1);
		CHECK(matches(captured(), "^\\[" TS "\\] ib2roce warning: port 1 "
					  "down\n$"));
		capture_reset();
		log_info("plain");
		CHECK(matches(captured(), "ib2roce info: plain\n$"));
	}
	/* The level filter applies before any target. */
	capture_reset();
	log_debug("filtered");
	CHECK_STR(captured(), "");
	log_open(LOG_TO_STDERR);
}

int main(void)
{
	int saved = dup(STDERR_FILENO);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (capture_start() < 0) {
		printf("Bail out! cannot capture stderr: %s\n", strerror(errno));
		return 1;
	}
	test_stderr_format();
	test_level_filter();
	test_truncation();
	test_syslog();
	test_journal_fallback();
	if (saved >= 0)
		dup2(saved, STDERR_FILENO);
	return tap_done();
}
