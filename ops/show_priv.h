/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the console's tables (show.c) and the reports (report.c: final counters, stats
 * --json, the metrics file) both read: snapshots of worker-written counters and the
 * names of states (with control/state.h, what the control plane reads too). Control
 * thread only; see show.c for the snapshot rules.
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
#include "state.h"
#include "pool.h"
#include "senders.h"
#include "stream.h"

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

/* NUMA node of a CPU, -1 when unpinned or unknown. */
static inline int cpu_node(int cpu)
{
	if (cpu < 0 || numa_available() < 0)
		return -1;
	return numa_node_of_cpu(cpu);
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
