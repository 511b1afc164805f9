/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Per-channel counters, drop reasons and the per-worker latency histogram.
 *
 * Counters are plain uint64_t written by the one thread that owns the channel (or
 * worker); other threads read them as snapshots (aligned 64-bit loads do not tear on the
 * platforms we run on). No atomics on the hot path.
 */
#ifndef ENGINE_STATS_H
#define ENGINE_STATS_H

#include <stdint.h>
#include <string.h>

/* Why a received packet was not forwarded. Every packet ends forwarded or in one of these. */
enum drop_reason {
	DROP_RX_ERROR,	    /* receive completion with an error status */
	DROP_NO_GRH,	    /* no GRH / network header */
	DROP_BAD_HEADER,    /* RoCE: not an IPv4 header at offset 20 */
	DROP_UNICAST,	    /* destination is not a multicast address */
	DROP_OWN,	    /* our own packet came back (no hardware loopback blocking) */
	DROP_LOOP,	    /* IB: hop limit set: another bridge already forwarded it */
	DROP_PEER,	    /* RoCE: sent by a configured peer bridge */
	DROP_FOREIGN,	    /* RoCE: source outside the interface subnet */
	DROP_UNKNOWN_GROUP, /* destination group not bridged */
	DROP_MGID_FORMAT,   /* IB: group known but the MGID has another format */
	DROP_SENDONLY_SIDE, /* data on the side that is joined send-only */
	DROP_NOT_JOINED,    /* group not joined on both sides yet */
	DROP_SIDE_DOWN,	    /* a side's port is down or removed: nothing forwarded meanwhile */
	DROP_BRIDGING_OFF,  /* bridging disabled at run time */
	DROP_INJECTED,	    /* fault injection: drop every Nth packet */
	DROP_TX_FULL,	    /* send queue and backlog full */
	DROP_TX_ERROR,	    /* send completion with an error status */
	DROP_PGM,	    /* PGM inspection said drop (policy) */
	DROP_TOO_BIG,	    /* payload larger than the other side's MTU */
	DROP_NREASONS
};

extern const char *const drop_reason_name[DROP_NREASONS];

struct chan_stats {
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts; /* packets posted for sending on this channel */
	uint64_t tx_bytes;
	uint64_t fwd_pkts; /* received here and forwarded (posted on the peer channel) */
	uint64_t standby;  /* received here for a standby partition: not forwarded, not a drop */
	uint64_t drops[DROP_NREASONS];
	uint64_t rx_starved;  /* receive refill found the pool empty */
	uint64_t backlog_max; /* highest backlog seen */
	uint64_t backlog;     /* current backlog */
	uint64_t tx_completions;
	uint64_t handoff_out;	/* packets handed to another worker */
	uint64_t pgm_pkts;	/* well-formed PGM packets inspected */
	uint64_t pgm_not_pgm;	/* datagrams that are not PGM at all (other UDP traffic) */
	uint64_t pgm_malformed; /* shaped like PGM but invalid (forwarded unless strict) */
	uint64_t pgm_bad_csum;	/* PGM packets with a wrong checksum */
	uint64_t tx_stuck;	/* times the send queue was found stuck (BR_TX_STUCK_NS) */
};

/*
 * Log-linear histogram of nanoseconds: values below 64 have a bucket each; above, 16
 * buckets per power of two (relative error under 6.25%).
 */
#define HIST_LINEAR   64
#define HIST_SUB_BITS 4
#define HIST_BUCKETS  (HIST_LINEAR + (64 - 6) * (1 << HIST_SUB_BITS))

struct hist {
	uint64_t count;
	uint64_t max;
	uint64_t sum;
	uint64_t b[HIST_BUCKETS];
};

static inline uint32_t hist_bucket(uint64_t v)
{
	uint32_t e;

	if (v < HIST_LINEAR)
		return (uint32_t)v;
	e = 63 - (uint32_t)__builtin_clzll(v); /* >= 6 */
	return HIST_LINEAR + (e - 6) * (1u << HIST_SUB_BITS) +
	       (uint32_t)((v >> (e - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1));
}

/* The lowest value of a bucket (what percentiles report). */
static inline uint64_t hist_bucket_low(uint32_t b)
{
	uint32_t e, m;

	if (b < HIST_LINEAR)
		return b;
	e = (b - HIST_LINEAR) / (1u << HIST_SUB_BITS) + 6;
	m = (b - HIST_LINEAR) % (1u << HIST_SUB_BITS);
	return (1ull << e) | ((uint64_t)m << (e - HIST_SUB_BITS));
}

/* Record `n` samples of value v (owner thread only). */
static inline void hist_add(struct hist *h, uint64_t v, uint64_t n)
{
	h->b[hist_bucket(v)] += n;
	h->count += n;
	h->sum += v * n;
	if (v > h->max)
		h->max = v;
}

/* The value at quantile q (0..1) of a snapshot. */
uint64_t hist_quantile(const struct hist *h, double q);

/* Add the counters of src to dst (snapshots, control thread). */
void chan_stats_add(struct chan_stats *dst, const struct chan_stats *src);

/* Sum of all drop reasons. */
static inline uint64_t chan_stats_drops(const struct chan_stats *s)
{
	uint64_t n = 0;

	for (int i = 0; i < DROP_NREASONS; i++)
		n += s->drops[i];
	return n;
}

#endif /* ENGINE_STATS_H */
