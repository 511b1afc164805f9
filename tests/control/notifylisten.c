// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * notifylisten - stand in for systemd's notification socket in tests.
 *
 *   notifylisten PATH SECONDS
 *
 * Binds an AF_UNIX datagram socket at PATH (a stale socket or file there is removed
 * first) and prints every datagram that arrives, one line per newline-separated field,
 * each prefixed with the CLOCK_REALTIME milliseconds of its arrival (the clock of the
 * bridge's --debug log lines):
 *
 *   12345 READY=1
 *   12345 STATUS=bridging 3 groups
 *   22346 WATCHDOG=1
 *
 * Output is flushed after each datagram, so a test can follow it while the program
 * runs. PATH exists as soon as the socket is bound: a test starts notifylisten, waits
 * for PATH, then starts the program under test with NOTIFY_SOCKET=PATH. After SECONDS
 * (or on SIGTERM/SIGINT) it removes PATH and exits 0; 2 for bad arguments, 1 when the
 * socket cannot be set up.
 *
 * It is not a test by itself; tests/control/meson.build exposes it as `notifylisten`.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Largest datagram read whole; systemd itself accepts at most about this much. */
#define NOTIFY_DGRAM_MAX 65536

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Print each non-empty field of one datagram with the arrival time. */
static void print_fields(int64_t ms, char *buf, size_t len)
{
	char *p = buf, *end = buf + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *stop_at = nl ? nl : end;

		if (stop_at > p)
			printf("%lld %.*s\n", (long long)ms, (int)(stop_at - p), p);
		p = stop_at + 1;
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static char buf[NOTIFY_DGRAM_MAX];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct sigaction act = {.sa_handler = on_stop};
	int64_t deadline;
	char *end;
	long secs;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: notifylisten PATH SECONDS\n");
		return 2;
	}
	secs = strtol(argv[2], &end, 10);
	if (end == argv[2] || *end || secs < 0) {
		fprintf(stderr, "notifylisten: bad SECONDS '%s'\n", argv[2]);
		return 2;
	}
	if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "notifylisten: path too long: %s\n", argv[1]);
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);

	/* No SA_RESTART: the signal must interrupt poll() so we stop at once. */
	sigemptyset(&act.sa_mask);
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("notifylisten: socket");
		return 1;
	}
	if (unlink(sa.sun_path) < 0 && errno != ENOENT) {
		fprintf(stderr, "notifylisten: %s: %s\n", sa.sun_path, strerror(errno));
		return 1;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "notifylisten: bind %s: %s\n", sa.sun_path, strerror(errno));
		return 1;
	}

	deadline = now_ms() + (int64_t)secs * 1000;
	while (!stop) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0)
			break;
		if (poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left) <= 0)
			continue; /* timeout or signal: the loop condition decides */
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			print_fields(now_ms(), buf, (size_t)n);
	}
	unlink(sa.sun_path);
	close(fd);
	return 0;
}
