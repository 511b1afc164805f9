// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The control thread's event loop (loop.h): epoll over the descriptors the modules
 * registered, a 250 ms timerfd tick that runs their named timers, a signalfd for SIGINT,
 * SIGTERM and SIGHUP, and the hooks (after each batch, stop, exit, reload, groups).
 *
 * The control thread is a registered QSBR thread: online while it works, offline while
 * it waits in epoll (so grace periods, and with them call_rcu callbacks, complete).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <urcu/urcu-qsbr.h>

#include "ctl.h"
#include "log.h"
#include "loop.h"
#include "options.h"

/* What a watched descriptor is served by (indexed by the fd). */
struct loop_fd {
	loop_fd_fn *fn;
	void *arg;
};

struct loop_timer {
	char name[32];
	char what[96];
	uint64_t ms;		/* period, 0: every tick */
	loop_period_fn *period; /* the period follows a setting, NULL: ms */
	uint64_t last;		/* last run (CLOCK_MONOTONIC ms) */
	loop_timer_fn *fn;
	void *arg;
	struct loop_timer *next;
};

/* A hook of any kind: the function, its argument. */
struct loop_hook {
	void (*fn)(void); /* cast back to its type by the caller of the hook */
	void *arg;
};

struct loop_hooks {
	struct loop_hook *v;
	uint32_t n;
};

static struct {
	int ep, sigfd, tfd;
	bool stop, running;
	uint64_t t0; /* loop_init: the timers registered before the loop runs start here */
	struct loop_fd *fds;
	uint32_t nfds;
	struct loop_timer *timers, **timers_tail;
	struct loop_hooks pass, stops, exits, reloads, groups;
} L = {.ep = -1, .sigfd = -1, .tfd = -1};

static int hook_add(struct loop_hooks *h, void (*fn)(void), void *arg)
{
	struct loop_hook *v = realloc(h->v, (h->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	v[h->n++] = (struct loop_hook){fn, arg};
	h->v = v;
	return 0;
}

int loop_on_pass(loop_pass_fn *fn, void *arg)
{
	return hook_add(&L.pass, (void (*)(void))fn, arg);
}

int loop_on_stop(loop_stop_fn *fn, void *arg)
{
	return hook_add(&L.stops, (void (*)(void))fn, arg);
}

int loop_on_exit(loop_hook_fn *fn, void *arg)
{
	return hook_add(&L.exits, (void (*)(void))fn, arg);
}

int loop_on_reload(loop_hook_fn *fn, void *arg)
{
	return hook_add(&L.reloads, (void (*)(void))fn, arg);
}

int loop_on_group(loop_group_fn *fn, void *arg)
{
	return hook_add(&L.groups, (void (*)(void))fn, arg);
}

void loop_group_event(struct group *g, bool added)
{
	for (uint32_t i = 0; i < L.groups.n; i++)
		((loop_group_fn *)L.groups.v[i].fn)(L.groups.v[i].arg, g, added);
}

/* ---- File descriptors ---- */

int loop_watch(int fd, unsigned events, loop_fd_fn *fn, void *arg)
{
	struct epoll_event e = {.events = events, .data.fd = fd};

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	if ((uint32_t)fd >= L.nfds) {
		uint32_t n = (uint32_t)fd + 64;
		struct loop_fd *v = realloc(L.fds, n * sizeof(*v));

		if (!v) {
			errno = ENOMEM;
			return -1;
		}
		memset(v + L.nfds, 0, (n - L.nfds) * sizeof(*v));
		L.fds = v;
		L.nfds = n;
	}
	if (epoll_ctl(L.ep, EPOLL_CTL_ADD, fd, &e))
		return -1;
	L.fds[fd] = (struct loop_fd){fn, arg};
	return 0;
}

int loop_rewatch(int fd, unsigned events)
{
	struct epoll_event e = {.events = events, .data.fd = fd};

	return epoll_ctl(L.ep, EPOLL_CTL_MOD, fd, &e);
}

void loop_unwatch(int fd)
{
	epoll_ctl(L.ep, EPOLL_CTL_DEL, fd, NULL);
	if (fd >= 0 && (uint32_t)fd < L.nfds)
		L.fds[fd] = (struct loop_fd){NULL, NULL};
}

/* ---- Timers ---- */

struct loop_timer *loop_every(uint64_t ms, loop_timer_fn *fn, void *arg, const char *name)
{
	struct loop_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->ms = ms;
	t->fn = fn;
	t->arg = arg;
	t->last = L.running || !L.t0 ? mono_ms() : L.t0;
	if (!L.timers_tail)
		L.timers_tail = &L.timers;
	*L.timers_tail = t;
	L.timers_tail = &t->next;
	return t;
}

void loop_timer_what(struct loop_timer *t, const char *what)
{
	snprintf(t->what, sizeof(t->what), "%s", what);
}

void loop_timer_follow(struct loop_timer *t, loop_period_fn *period)
{
	t->period = period;
}

void loop_timer_soon(struct loop_timer *t)
{
	t->last = 0;
}

static uint64_t timer_period(const struct loop_timer *t)
{
	return t->period ? t->period(t->arg) : t->ms;
}

static void on_tick(void *arg, unsigned events)
{
	uint64_t exp, now = mono_ms();

	(void)arg;
	(void)events;
	while (read(L.tfd, &exp, sizeof(exp)) == sizeof(exp))
		;
	for (struct loop_timer *t = L.timers; t; t = t->next) {
		uint64_t p = timer_period(t);

		if (t->period && !p)
			continue;
		if (p && now - t->last < p)
			continue;
		t->last = now;
		t->fn(t->arg, now);
	}
}

void loop_timers_print(FILE *out)
{
	uint64_t now = mono_ms();

	fprintf(out, "%-24s %-12s %s\n", "timer", "next", "what");
	for (const struct loop_timer *t = L.timers; t; t = t->next) {
		uint64_t p = timer_period(t), next = t->last + p;

		if (t->period && !p)
			continue;
		if (!p)
			fprintf(out, "%-24s every %4d ms %s\n", t->name, LOOP_TICK_MS, t->what);
		else if (next <= now)
			fprintf(out, "%-24s %-12s %s\n", t->name, "due", t->what);
		else
			fprintf(out, "%-24s in %6.1f s  %s\n", t->name,
				(double)(next - now) / 1000.0, t->what);
	}
}

/* ---- Signals and the stop ---- */

/*
 * When the shutdown began (CLOCK_MONOTONIC ms). A second SIGINT/SIGTERM within
 * SIGNAL_DUP_MS of the first is the same request delivered twice (timeout(1) signals its
 * child and then its process group; kill -- -PGID reaches us once per process): it is
 * ignored. Later ones force the exit.
 */
#define SIGNAL_DUP_MS 200
static volatile sig_atomic_t stop_ms_lo; /* low bits suffice for a 200 ms window */

static bool signal_is_dup(void)
{
	return (uint32_t)mono_ms() - (uint32_t)stop_ms_lo < SIGNAL_DUP_MS;
}

/* A second SIGINT/SIGTERM while shutting down (workers joining, leaves): exit now. */
static void force_exit(int sig)
{
	static const char msg[] = "ib2roce: second signal during shutdown: exiting now\n";

	(void)sig;
	if (signal_is_dup()) /* clock_gettime is async-signal-safe */
		return;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/*
 * From here on the signal descriptor is no longer read: a second SIGINT or SIGTERM
 * must still reach us, as a forced exit.
 */
static void arm_force_exit(void)
{
	struct sigaction sa = {.sa_handler = force_exit};
	sigset_t ss;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &ss, NULL);
}

static bool stop_ask(int sig, enum loop_stop_q q)
{
	bool held = false;

	for (uint32_t i = 0; i < L.stops.n; i++)
		if (((loop_stop_fn *)L.stops.v[i].fn)(L.stops.v[i].arg, sig, q) &&
		    q != LOOP_STOP_AGAIN) {
			held = true;
			if (q == LOOP_STOP_ASK)
				break; /* one module holds it */
		}
	return held;
}

bool loop_stopping(void)
{
	return L.stop || stop_ask(0, LOOP_STOP_HELD);
}

void loop_stop(void)
{
	L.stop = true;
}

bool loop_stopped(void)
{
	return L.stop;
}

static void on_signal(void *arg, unsigned events)
{
	struct signalfd_siginfo si;

	(void)arg;
	(void)events;
	while (read(L.sigfd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGHUP) {
			for (uint32_t i = 0; i < L.reloads.n; i++)
				((loop_hook_fn *)L.reloads.v[i].fn)(L.reloads.v[i].arg);
			continue;
		}
		if (loop_stopping()) {
			if (signal_is_dup())
				continue;
			if (!L.stop) {
				/* A module holds the stop: it lets go, the stop goes on. */
				stop_ask(sig, LOOP_STOP_AGAIN);
				continue;
			}
			log_warn("second %s: exiting now", strsignal(sig));
			_exit(1);
		}
		log_notice("%s: shutting down", strsignal(sig));
		stop_ms_lo = (sig_atomic_t)(uint32_t)mono_ms();
		if (stop_ask(sig, LOOP_STOP_ASK))
			continue;
		L.stop = true;
	}
}

/* ---- The loop ---- */

int loop_init(char *err, size_t errlen)
{
	struct itimerspec its = {{0, LOOP_TICK_MS * 1000000L}, {0, LOOP_TICK_MS * 1000000L}};
	sigset_t ss;

	L.ep = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	L.sigfd = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);
	L.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (L.ep < 0 || L.sigfd < 0 || L.tfd < 0)
		return opt_errf(err, errlen, -errno, "epoll/signalfd/timerfd: %s", strerror(errno));
	timerfd_settime(L.tfd, 0, &its, NULL);
	L.t0 = mono_ms();
	if (loop_watch(L.sigfd, EPOLLIN, on_signal, NULL) ||
	    loop_watch(L.tfd, EPOLLIN, on_tick, NULL))
		return opt_errf(err, errlen, -errno, "epoll: %s", strerror(errno));
	return 0;
}

int loop_run(void)
{
	struct epoll_event ev[16];
	int wait_ms = LOOP_TICK_MS;

	L.running = true;
	while (!L.stop) {
		int n;
		uint64_t now;

		urcu_qsbr_quiescent_state();
		urcu_qsbr_thread_offline();
		n = epoll_wait(L.ep, ev, 16, wait_ms);
		urcu_qsbr_thread_online();
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;

			if ((uint32_t)fd < L.nfds && L.fds[fd].fn)
				L.fds[fd].fn(L.fds[fd].arg, ev[i].events);
		}
		/* After the batch: a pass may close what had events in it. */
		now = mono_ms();
		wait_ms = LOOP_TICK_MS;
		for (uint32_t i = 0; i < L.pass.n; i++) {
			int w = ((loop_pass_fn *)L.pass.v[i].fn)(L.pass.v[i].arg, now);

			if (w >= 0 && w < wait_ms)
				wait_ms = w;
		}
	}
	for (uint32_t i = 0; i < L.exits.n; i++)
		((loop_hook_fn *)L.exits.v[i].fn)(L.exits.v[i].arg);
	L.running = false;
	arm_force_exit();
	return 0;
}

void loop_fini(void)
{
	struct loop_hooks *hs[] = {&L.pass, &L.stops, &L.exits, &L.reloads, &L.groups};

	while (L.timers) {
		struct loop_timer *t = L.timers;

		L.timers = t->next;
		free(t);
	}
	L.timers_tail = NULL;
	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
		free(hs[i]->v);
		*hs[i] = (struct loop_hooks){NULL, 0};
	}
	free(L.fds);
	L.fds = NULL;
	L.nfds = 0;
	if (L.ep >= 0)
		close(L.ep);
	if (L.sigfd >= 0)
		close(L.sigfd);
	if (L.tfd >= 0)
		close(L.tfd);
	L.ep = L.sigfd = L.tfd = -1;
	L.t0 = 0;
}
