// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Worker threads: pinned to a CPU, busy-polling the channels they own, as QSBR readers
 * of the group and sender tables. Idle policy: spin, or spin then back off (yield, then
 * sleep up to idle_max_us while offline from RCU) so tests on small machines do not
 * starve the other processes.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "fwd.h"
#include "pool.h"

#define IDLE_SPIN_PASSES  2048
#define IDLE_YIELD_PASSES 4096
#define HEARTBEAT_EVERY	  64

void worker_refill(struct worker *w, uint32_t min)
{
	for (int s = 0; s < NSIDES; s++) {
		struct wside *ws = &w->ws[s];
		const struct wside_view *v = rcu_dereference(ws->view);

		if (ws->rq.srq) {
			/* One queue for the side: any of its channels posts to it. */
			if (v->nchan && ws->rq.depth - ws->rq.posted >= min)
				chan_refill(w, v->chan[0]);
			continue;
		}
		/* A channel added at run time starts empty: filled here on the worker's
		 * first pass with its view (bridge_pair_add). */
		for (uint32_t i = 0; i < v->nchan; i++) {
			struct channel *ch = v->chan[i];

			if (ch->rq->depth - ch->rq->posted >= min)
				chan_refill(w, ch);
		}
	}
}

unsigned worker_pass(struct worker *w)
{
	/* Two CQ polls per pass whatever the number of channels (struct wside). */
	unsigned work = worker_side_poll(w, SIDE_IB) + worker_side_poll(w, SIDE_ROCE);

	/* Bursts refill what they consumed; this retries after the pool ran dry. */
	worker_refill(w, BR_REFILL_MIN);
	if (w->br->nworkers > 1)
		work += fwd_handoff_drain(w);
	w->passes++;
	if (!(w->passes % HEARTBEAT_EVERY))
		atomic_store_explicit(&w->heartbeat, w->passes, memory_order_relaxed);
	return work;
}

/*
 * Whether a channel of the worker holds packets in its backlog (their AH pointers: no
 * grace period may end under them). A count the data path keeps (struct worker), not a
 * walk of the channels: at 4 096 groups (36 channels) the walk read a cache line of
 * every channel on every pass, a quarter of the worker's time in a perf profile of
 * groups4096 (bench/harness.py).
 */
static bool worker_backlogged(const struct worker *w)
{
	return w->backlogged != 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bridge *br = w->br;
	uint64_t idle = 0, sleep_us = 1;

	if (w->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		/* Failure leaves the thread unpinned; the control thread reports w->cpu. */
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			w->cpu = -1;
	}
	urcu_qsbr_register_thread();
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		unsigned work;

		if (atomic_load_explicit(&br->stall, memory_order_relaxed) == (int64_t)w->id + 1) {
			/* Fault injection (the stall feature): a worker that stopped making
			 * progress, heartbeat frozen, so the watchdog path can be tested. It
			 * stays online, as a stuck worker would: grace periods wait for it. */
			struct timespec ts = {0, 10 * 1000000L};

			nanosleep(&ts, NULL);
			continue;
		}
		work = worker_pass(w);

		/* Backlog entries hold AH pointers: no grace period may end under them. */
		if (!worker_backlogged(w))
			urcu_qsbr_quiescent_state();
		if (work) {
			idle = 0;
			sleep_us = 1;
			continue;
		}
		if (br->cfg.idle == IDLE_SPIN || ++idle < IDLE_SPIN_PASSES)
			continue;
		if (idle < IDLE_YIELD_PASSES) {
			sched_yield();
			continue;
		}
		{
			struct timespec ts = {0, (long)sleep_us * 1000};

			atomic_store_explicit(&w->heartbeat, w->passes, memory_order_relaxed);
			/* Buffers idle in our cache are invisible to the other workers. */
			if (idle == IDLE_YIELD_PASSES)
				pool_cache_flush(w->pc);
			urcu_qsbr_thread_offline();
			nanosleep(&ts, NULL);
			urcu_qsbr_thread_online();
			w->idle_sleeps++;
			if (sleep_us < br->cfg.idle_max_us)
				sleep_us *= 2;
		}
	}
	urcu_qsbr_unregister_thread();
	return NULL;
}

int workers_start(struct bridge *br)
{
	pthread_attr_t attr;
	int r = pthread_attr_init(&attr);

	if (r)
		return -r;
	if (br->cfg.rt_prio) {
		/* SCHED_FIFO from the first instruction (--enable rt=PRIO; placement checked
		 * that RT throttling is off). Without CAP_SYS_NICE pthread_create says EPERM. */
		struct sched_param sp = {.sched_priority = br->cfg.rt_prio};

		r = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		if (!r)
			r = pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		if (!r)
			r = pthread_attr_setschedparam(&attr, &sp);
		if (r) {
			pthread_attr_destroy(&attr);
			return -r;
		}
	}
	for (uint32_t i = 0; i < br->nworkers; i++) {
		struct worker *w = &br->workers[i];

		r = pthread_create(&w->thread, &attr, worker_main, w);
		if (r) {
			pthread_attr_destroy(&attr);
			while (i--) {
				atomic_store(&br->workers[i].stop, true);
				pthread_join(br->workers[i].thread, NULL);
			}
			return -r;
		}
		{
			char name[16];

			snprintf(name, sizeof(name), "ib2roce-w%u", i % 1000);
			pthread_setname_np(w->thread, name);
		}
	}
	pthread_attr_destroy(&attr);
	return 0;
}

void workers_stop(struct bridge *br)
{
	for (uint32_t i = 0; i < br->nworkers; i++)
		atomic_store(&br->workers[i].stop, true);
	for (uint32_t i = 0; i < br->nworkers; i++)
		pthread_join(br->workers[i].thread, NULL);
}
