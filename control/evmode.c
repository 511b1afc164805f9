// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The data path with --workers 0 (evmode.h): the control thread is the only worker,
 * driven by the completion channels (one per side) in its loop instead of a spinning
 * thread; and ctl_data_drain, which empties the receive queues before a role change.
 */
#include <errno.h>
#include <time.h>
#include <sys/epoll.h>

#include "bridge.h"
#include "ctl.h"
#include "evmode.h"
#include "fwd.h"
#include "loop.h"

/*
 * With --workers 0: drain both sides when the completion channel of one fired (one per
 * side: the CQ that side's channels share, struct wside).
 */
static void on_comp(struct ctl *c, enum side side)
{
	struct worker *w = &c->br->workers[0];
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(w->ws[side].cc, &cq, &ctx))
		return;
	ibv_ack_cq_events(cq, 1);
	ibv_req_notify_cq(cq, 0);
	/*
	 * Drain both sides together, as a worker's pass does: what one channel receives is
	 * sent on its peer, and only the peer's send completions free its send queue.
	 * Draining the side that fired alone filled the other's send queue and backlog
	 * under load (tx_full) before its own completion event was served.
	 */
	while (worker_side_poll(w, SIDE_IB) + worker_side_poll(w, SIDE_ROCE))
		;
	worker_refill(w, 1);
	if (w->br->nworkers > 1)
		fwd_handoff_drain(w);
	w->passes++;
	atomic_store_explicit(&w->heartbeat, w->passes, memory_order_relaxed);
}

/*
 * Whether worker w emptied its completion queue of side s after the call began: a poll
 * that returned fewer completions than it asked for (ws->empty) was counted after the
 * first load, so it found the queue empty after the call began. Waits for two passes (a
 * sleeping worker wakes within idle_max_us); false at the deadline (CLOCK_MONOTONIC ms)
 * too.
 */
static bool side_drained(const struct worker *w, int s, uint64_t deadline)
{
	uint64_t p0 = CMM_LOAD_SHARED(w->passes), e0 = CMM_LOAD_SHARED(w->ws[s].empty);
	struct timespec ts = {0, 20000};

	while (CMM_LOAD_SHARED(w->passes) < p0 + 2) {
		if (mono_ms() >= deadline)
			return false;
		nanosleep(&ts, NULL);
	}
	return CMM_LOAD_SHARED(w->ws[s].empty) != e0;
}

bool ctl_data_drain(struct ctl *c)
{
	struct bridge *br = c->br;
	uint64_t deadline = mono_ms() + CTL_DRAIN_MS;

	if (!br->cfg.nworkers) {
		/* We are the data path: poll both sides until nothing is left, as on_comp. */
		struct worker *w = &br->workers[0];

		while (worker_side_poll(w, SIDE_IB) + worker_side_poll(w, SIDE_ROCE))
			;
		worker_refill(w, 1);
		return true;
	}
	for (uint32_t i = 0; i < br->nworkers; i++) {
		struct worker *w = &br->workers[i];

		for (int s = 0; s < NSIDES; s++)
			while (!side_drained(w, s, deadline))
				if (mono_ms() >= deadline)
					return false;
	}
	return true;
}

static void comp_fd(void *arg, unsigned events)
{
	struct ctl_side *r = arg;

	(void)events;
	on_comp(r->c, (enum side)r->side);
}

/* A channel whose refill found the pool empty gets no more
 * completions until it has receives again: retry on every tick. */
static void refill_tick(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	(void)now;
	worker_refill(&c->br->workers[0], 1);
}

int evmode_init(struct ctl *c)
{
	struct loop_timer *t;

	/* One completion channel per side: the CQ of the side's channels. */
	for (int s = 0; s < NSIDES; s++) {
		struct wside *ws = &c->br->workers[0].ws[s];

		fcntl_nonblock(ws->cc->fd);
		ibv_req_notify_cq(ws->cq, 0);
		if (loop_watch(ws->cc->fd, EPOLLIN, comp_fd, &c->side_ref[s]))
			return -errno;
	}
	t = loop_every(0, refill_tick, c, "refill");
	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "receive queues the pool could not fill (--workers 0)");
	return 0;
}
