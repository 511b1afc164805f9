/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the console's tables (show.c) and the reports (report.c: final counters, stats
 * --json, the metrics file) both read: snapshots of worker-written counters and the
 * names of states. Control thread only; see show.c for the snapshot rules.
 */
#ifndef CONTROL_SHOW_PRIV_H
#define CONTROL_SHOW_PRIV_H

#include <numa.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "bridge.h"
#include "ctl.h"
#include "pool.h"
#include "senders.h"
#include "stream.h"

static const char *const side_state_name[] = {
	[SIDE_UP] = "up",
	[SIDE_DOWN] = "down",
	[SIDE_REMOVED] = "removed",
};

static const char *const pool_state_name[POOL_NSTATES] = {
	[POOL_FREE] = "free", [POOL_CACHED] = "cached",	  [POOL_RX] = "rx",
	[POOL_TX] = "tx",     [POOL_BACKLOG] = "backlog", [POOL_HANDOFF] = "handoff",
};

/* The latency quantiles every report shows (the workers table: p50 .. p99.99, in order). */
static const struct {
	double q;
	const char *json, *prom;
} lat_q[] = {
	{0.5, "p50", "0.5"},	   {0.9, "p90", "0.9"},		 {0.99, "p99", "0.99"},
	{0.999, "p99_9", "0.999"}, {0.9999, "p99_99", "0.9999"},
};

#define NLAT_Q (sizeof(lat_q) / sizeof(lat_q[0]))

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

/* NUMA node of a CPU, -1 when unpinned or unknown. */
static inline int cpu_node(int cpu)
{
	if (cpu < 0 || numa_available() < 0)
		return -1;
	return numa_node_of_cpu(cpu);
}

/* ---- snapshots ---- */

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

static inline uint32_t side_broken(struct bridge *br, int s)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < br->sd[s].nchan; k++)
		n += CMM_LOAD_SHARED(br->sd[s].chan[k]->broken);
	return n;
}

/* Send WRs posted and not yet retired. Tail first: head only grows, so head >= tail. */
static inline uint64_t chan_sq_outstanding(const struct channel *ch)
{
	uint64_t tail = CMM_LOAD_SHARED(ch->tx_tail);
	uint64_t head = CMM_LOAD_SHARED(ch->tx_head);

	return sub0(head, tail);
}

/* A worker's latency histogram: a copy (zapped: minus the zap copy, bucket by bucket). */
static inline void lat_view(const struct worker *w, bool zapped, struct hist *h)
{
	memcpy(h, &w->lat, sizeof(*h));
	if (!zapped)
		return;
	/* The count is re-derived from the buckets, so the quantiles see a consistent set. */
	h->count = 0;
	for (uint32_t b = 0; b < HIST_BUCKETS; b++) {
		h->b[b] = sub0(h->b[b], w->lat_zap.b[b]);
		h->count += h->b[b];
	}
	h->sum = sub0(h->sum, w->lat_zap.sum);
	/* max stays the all-time maximum: the histogram does not know when it was seen. */
}

/* Groups with a channel of worker w on either side (a group across workers counts for
 * both). Control thread. */
static inline uint64_t worker_groups(const struct bridge *br, const struct worker *w)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < br->ngroups; i++) {
		const struct group *g = br->groups[i];

		if ((g->out_chan[0] && g->out_chan[0]->w == w) ||
		    (g->out_chan[1] && g->out_chan[1]->w == w))
			n++;
	}
	return n;
}

/* The weights ("#w=N") of the groups on worker w's pairs (the placement's measure;
 * pairs added at run time go to any worker). */
static inline uint64_t worker_weight(const struct bridge *br, const struct worker *w)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < br->ngroups; i++)
		if (br->sd[SIDE_IB].chan[br->groups[i]->pair]->w == w)
			n += br->groups[i]->weight;
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

static inline void gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static inline void ipv4_str(uint32_t addr_be, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET, &addr_be, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

struct counts {
	uint32_t groups, joined, forwarding;
	size_t senders;
	uint64_t streams;
};

static inline void counts_get(struct bridge *br, struct counts *n)
{
	memset(n, 0, sizeof(*n));
	n->groups = br->ngroups;
	for (uint32_t i = 0; i < br->ngroups; i++) {
		const struct group *g = br->groups[i];

		if (group_joined(g, SIDE_IB) && group_joined(g, SIDE_ROCE))
			n->joined++;
		if (group_fwd_state(g) == FWD_YES)
			n->forwarding++;
	}
	n->senders = br->senders ? sender_table_count(br->senders) : 0;
	if (br->pgm) {
		struct pgm_stream_table_info info;

		pgm_stream_table_info(br->pgm, &info);
		n->streams = info.streams;
	}
}

#endif /* CONTROL_SHOW_PRIV_H */
