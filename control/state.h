/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The bridge's state as the control thread reads it (HA's checks, health, the views):
 * snapshots of worker-written counters, a side's sum, worker heartbeats, group and join
 * states and their names. Control thread only: the counters are read as snapshots
 * (relaxed loads) while the workers forward.
 */
#ifndef CONTROL_STATE_H
#define CONTROL_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bridge.h"
#include "ctl.h"

static const char *const side_state_name[] = {
	[SIDE_UP] = "up",
	[SIDE_DOWN] = "down",
	[SIDE_REMOVED] = "removed",
};

/* a - b for counters that only grow; 0 if a snapshot race ever made b the larger. */
static inline uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static inline const char *side_state_str(enum side_state s)
{
	return (unsigned)s < sizeof(side_state_name) / sizeof(side_state_name[0])
		       ? side_state_name[s]
		       : "unknown";
}

/* A copy of a channel's counters, taken while its worker writes them. */
static inline void chan_snap(const struct channel *ch, struct chan_stats *s)
{
	memcpy(s, &ch->st, sizeof(*s));
}

/*
 * d = now - zap, counter by counter. Every field of struct chan_stats is a uint64_t
 * counter except the two backlog gauges, which keep their current values: so a counter
 * added to the struct later is zapped without a change here.
 */
static inline void stats_since(struct chan_stats *d, const struct chan_stats *now,
			       const struct chan_stats *zap)
{
	uint64_t a[sizeof(*d) / sizeof(uint64_t)], b[sizeof(*d) / sizeof(uint64_t)];

	_Static_assert(sizeof(struct chan_stats) % sizeof(uint64_t) == 0,
		       "struct chan_stats holds uint64_t counters only");
	memcpy(a, now, sizeof(a));
	memcpy(b, zap, sizeof(b));
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		a[i] = sub0(a[i], b[i]);
	memcpy(d, a, sizeof(*d));
	d->backlog = now->backlog;
	d->backlog_max = now->backlog_max;
}

/* A channel's counters for the tables (since zap) or the reports (raw). */
static inline void chan_view(const struct channel *ch, bool zapped, struct chan_stats *s)
{
	struct chan_stats now;

	chan_snap(ch, &now);
	if (zapped)
		stats_since(s, &now, &ch->zap);
	else
		*s = now;
}

/* ---- snapshots ---- */




static inline uint32_t side_broken(struct bridge *br, int s)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < br->sd[s].nchan; k++)
		n += CMM_LOAD_SHARED(br->sd[s].chan[k]->broken);
	return n;
}

/*
 * Since when the channel's send queue is stuck (engine/fwd.c, chan_tx_full): the
 * CLOCK_MONOTONIC ns of the worker's first look that found it full with no send
 * completion since; 0 while it is not stuck. Relaxed: a value, the worker publishes
 * nothing with it.
 */
static inline uint64_t chan_tx_stuck_ns(const struct channel *ch)
{
	/* C11's atomic_load takes no pointer to const (C17 does): the load writes nothing. */
	return atomic_load_explicit((_Atomic uint64_t *)&ch->tx_stuck_ns, memory_order_relaxed);
}

/* Channels of side s whose send queue is stuck now. */
static inline uint32_t side_tx_stuck(struct bridge *br, int s)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < br->sd[s].nchan; k++)
		n += chan_tx_stuck_ns(br->sd[s].chan[k]) != 0;
	return n;
}

static inline uint64_t worker_heartbeat(const struct worker *w)
{
	/* Relaxed: a progress indicator, it publishes nothing (worker.c stores it relaxed). */
	return atomic_load_explicit(&w->heartbeat, memory_order_relaxed);
}

/*
 * Milliseconds since the worker's heartbeat last moved: 0 when it moved since the last
 * show_tick (which records when it changes; read-only here, the watchdog owns that).
 */
static inline uint64_t worker_hb_age_ms(const struct ctl *c, const struct worker *w,
					uint64_t now_ms)
{
	if (worker_heartbeat(w) != w->hb_prev)
		return 0;
	return sub0(now_ms, w->hb_changed_ms ? w->hb_changed_ms : c->start_ms);
}

static inline bool group_joined(const struct group *g, int s)
{
	return g->js[s].state == JOIN_DONE;
}

enum fwd_state {
	FWD_NO,
	FWD_PARTIAL,
	FWD_YES,
};

static const char *const fwd_state_name[] = {
	[FWD_NO] = "no",
	[FWD_PARTIAL] = "partial",
	[FWD_YES] = "yes",
};

/* Forwarding in every direction the group has (yes), in some (partial), in none. */
static inline enum fwd_state group_fwd_state(const struct group *g)
{
	/* Relaxed: only the bits are shown, nothing is read through them. */
	uint32_t have = atomic_load_explicit(&g->ready, memory_order_relaxed), want = 0;

	for (int s = 0; s < NSIDES; s++)
		if (group_dir_rx(g->dir, s))
			want |= 1u << s;
	have &= want;
	return have == want ? FWD_YES : have ? FWD_PARTIAL : FWD_NO;
}

static inline const char *group_forwarding(const struct group *g)
{
	return fwd_state_name[group_fwd_state(g)];
}

/* Join state for reports: joined, joining, idle (leaving is on its way to idle). */
static inline const char *join_state_name(const struct group_side *js)
{
	return js->state == JOIN_DONE ? "joined" : js->state == JOIN_PENDING ? "joining" : "idle";
}

/* A side's counters: the sum over its channels, since the last zap or raw. */
static inline void side_stats_sum(struct bridge *br, int s, bool zapped, struct chan_stats *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t k = 0; k < br->sd[s].nchan; k++) {
		struct chan_stats cs;

		chan_view(br->sd[s].chan[k], zapped, &cs);
		chan_stats_add(t, &cs);
	}
}

/*
 * How long a worker's heartbeat may stand still before it counts as stalled: half the
 * systemd watchdog interval (at least 1 s) under a watchdog, HEALTH_STALL_MS otherwise.
 */
#define HEALTH_STALL_MS 5000
static inline uint64_t health_stall_ms(const struct ctl *c)
{
	uint64_t half = c->wd_usec / 2000;

	if (!c->wd_usec)
		return HEALTH_STALL_MS;
	return half > 1000 ? half : 1000;
}

#endif /* CONTROL_STATE_H */
