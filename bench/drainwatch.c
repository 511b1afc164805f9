// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * drainwatch - times how fast a stopped process empties what waits for it: continues it
 * (SIGCONT) and watches a simulated port's transmitted-packet counter until it has
 * grown by the count expected, or stops growing. bench/harness.py's drain scenario
 * (docs/benchmarks.md): the bridge is stopped, a sender fills its receive queue with one
 * burst (mcsender --stop-every), and the bridge's forwarding rate is the rate at which
 * its RoCE port transmits while it drains the queue, whatever a sender offers.
 *
 *   drainwatch [-c CPU] DEV PID COUNT [TIMEOUT_MS]
 *
 * DEV: the simulated device whose port counts the forwarded packets (xmit_pkts, as
 * `simfab counters` shows it; the fabric is $SIMFABRIC's). PID: the process to continue.
 * COUNT: the packets expected. TIMEOUT_MS (default 10000): how long to wait for the
 * first packet; the watch also ends 200 ms after the last change of the counter. -c: run
 * on this CPU, one that the process watched does not spin on: woken on a spinning
 * thread's CPU, the watch waits for its time slice, longer than a drain.
 *
 * The counter read is the process's own (simfabric keeps one block of counters per
 * process and port, fab->pctr: one load, a snapshot, where the port's sum would read
 * every process's block). It is read every POLL_NS (a sleep between reads: a busy read
 * would take the counter's cache line from the writer at every packet, slowing what is
 * measured). The rate is taken between two reads made during the drain, the first that
 * saw the counter grow and the last that saw it short of its final value, so that
 * neither the time the process takes to wake up nor the sleep after the last packet is
 * counted: rate = (c_last - c_first) / (t_last - t_first).
 *
 * Prints one JSON object: {"pkts": grown in all, "first": grown at the first read that
 * saw it grow, "last": at the last read short of the end, "t_first_ns", "t_last_ns" (of
 * those reads, from the SIGCONT), "mpps": the rate, "reads": reads made}. Exit status 0
 * with a rate, 1 when fewer than two reads fell inside the drain (no rate: a COUNT too
 * small for POLL_NS, or this process did not get a CPU), 2 on a usage or fabric error.
 */
#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sf.h"

#define POLL_NS	    20000ull
#define IDLE_END_NS 200000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The transmitted packets counted by process slot p on port dev (a relaxed load). */
static uint64_t xmit(struct sf_fabric *fab, int p, uint32_t dev)
{
	return atomic_load_explicit(&fab->pctr[p][dev].xmit_pkts, memory_order_relaxed);
}

/* The fabric's slot of process pid, or -1. */
static int proc_slot(struct sf_fabric *fab, int32_t pid)
{
	for (int p = 0; p < SF_MAX_PROCS; p++)
		if (fab->procs[p].pid == pid)
			return p;
	return -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: drainwatch [-c CPU] DEV PID COUNT [TIMEOUT_MS]\n");
	return 2;
}

static int num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || end == s || *end || *out > max || *s == '-' ? -1 : 0;
}

int main(int argc, char **argv)
{
	const struct timespec poll = {.tv_nsec = POLL_NS};
	uint64_t pid, want, timeout_ms = 10000, base, c, prev, c1 = 0, c2 = 0, cl = 0;
	uint64_t t0, t, t1 = 0, t2 = 0, tl = 0, reads = 0;
	struct sf_fabric *fab;
	int dev, slot;

	if (argc > 2 && !strcmp(argv[1], "-c")) {
		uint64_t cpu;
		cpu_set_t set;

		if (num(argv[2], CPU_SETSIZE - 1, &cpu))
			return usage();
		CPU_ZERO(&set);
		CPU_SET((int)cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "drainwatch: CPU %" PRIu64 ": %s\n", cpu, strerror(errno));
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc < 4 || argc > 5 || num(argv[2], INT32_MAX, &pid) || pid < 2 ||
	    num(argv[3], UINT32_MAX, &want) || !want ||
	    (argc == 5 && num(argv[4], 3600000, &timeout_ms)))
		return usage();
	fab = sf_get();
	if (!fab) {
		fprintf(stderr, "drainwatch: cannot attach the simulated fabric: %s\n",
			strerror(errno));
		return 2;
	}
	dev = sf_dev_by_name(fab, argv[1]);
	if (dev < 0) {
		fprintf(stderr, "drainwatch: no device '%s' on fabric '%s'\n", argv[1], sf_name());
		return 2;
	}
	slot = proc_slot(fab, (int32_t)pid);
	if (slot < 0) {
		fprintf(stderr,
			"drainwatch: process %" PRIu64 " has no device open on fabric '%s'\n", pid,
			sf_name());
		return 2;
	}
	base = prev = xmit(fab, slot, (uint32_t)dev);
	t0 = now_ns();
	if (kill((pid_t)pid, SIGCONT)) {
		fprintf(stderr, "drainwatch: SIGCONT to %" PRIu64 ": %s\n", pid, strerror(errno));
		return 2;
	}
	for (;;) {
		nanosleep(&poll, NULL);
		c = xmit(fab, slot, (uint32_t)dev);
		t = now_ns();
		reads++;
		if (c != prev) {
			/* The read before this one saw the drain under way: it is inside it. */
			if (t2) {
				tl = t2;
				cl = c2;
			}
			if (!t1) {
				t1 = t;
				c1 = c;
			}
			t2 = t;
			c2 = c;
			prev = c;
			if (c - base >= want)
				break;
		} else if (t1 ? t - t2 > IDLE_END_NS : t - t0 > timeout_ms * 1000000ull) {
			break;
		}
	}
	/* Without the end reached (a burst short of COUNT), the last change is the end. */
	if (tl > t1)
		printf("{\"pkts\": %" PRIu64 ", \"first\": %" PRIu64 ", \"last\": %" PRIu64
		       ", \"t_first_ns\": %" PRIu64 ", \"t_last_ns\": %" PRIu64
		       ", \"mpps\": %.4f, \"reads\": %" PRIu64 "}\n",
		       prev - base, c1 - base, cl - base, t1 - t0, tl - t0,
		       (double)(cl - c1) * 1e3 / (double)(tl - t1), reads);
	else
		printf("{\"pkts\": %" PRIu64 ", \"first\": %" PRIu64 ", \"last\": %" PRIu64
		       ", \"t_first_ns\": %" PRIu64 ", \"t_last_ns\": %" PRIu64
		       ", \"mpps\": 0, \"reads\": %" PRIu64 "}\n",
		       prev - base, c1 ? c1 - base : 0, cl ? cl - base : 0, t1 ? t1 - t0 : 0,
		       tl ? tl - t0 : 0, reads);
	return tl > t1 ? 0 : 1;
}
