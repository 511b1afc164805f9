/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The data path (fwd.c) and the worker threads (worker.c).
 */
#ifndef ENGINE_FWD_H
#define ENGINE_FWD_H

#include "bridge.h"

/* Buffers freed during a pass, returned to the pool in one burst. */
struct freelist {
	uint32_t n;
	uint32_t idx[4 * BR_BURST];
};

/*
 * Is qpn one of our QPs on this side (the own-packet filter without hardware blocking)?
 * QSBR reader: the set is replaced when a pair is added at run time.
 */
static inline bool fwd_own_qpn(const struct side_ctx *sd, uint32_t qpn)
{
	const struct qpn_set *o = rcu_dereference(sd->own);

	for (uint32_t i = 0; i < o->n; i++)
		if (o->qpn[i] == qpn)
			return true;
	return false;
}

/*
 * Poll one burst of the worker's completion queue of `side` (shared by its channels
 * there) and forward what it received. Returns the number of completions handled. Owner
 * thread, QSBR reader.
 */
unsigned worker_side_poll(struct worker *w, enum side side);

/*
 * Refill every receive queue of worker w that misses at least `min` receives: its SRQ
 * of each side, or each channel's own queue without SRQs. Owner thread.
 */
void worker_refill(struct worker *w, uint32_t min);

/*
 * Post receives until the channel's receive queue (its own, or its worker's SRQ of its
 * side) is full (or the pool is empty: counted). The
 * first call on a channel also prepares its data-path state (work request templates,
 * caches): every channel is refilled once before any other function here uses it (bridge
 * setup does so before the workers start).
 */
void chan_refill(struct worker *w, struct channel *ch);

/*
 * Write a channel's work request templates and clear its caches (its first chan_refill
 * does it): for a channel made at run time, by the control thread before the channel is
 * published to its worker (bridge_pair_add), since with an SRQ no refill names it.
 */
void chan_prepare(struct channel *ch);

/* Post the sends chained on a channel. */
void chan_flush(struct worker *w, struct channel *ch, struct freelist *fl);

/*
 * Hand a packet to the worker that owns `out` (single-producer ring per worker pair).
 * False when the ring is full: the caller drops the packet (tx_full on its channel).
 */
bool fwd_handoff(struct worker *w, struct channel *out, uint32_t buf, uint32_t len, bool has_imm,
		 uint32_t imm, struct ibv_ah *ah, uint32_t qkey);

/* Send what other workers handed to this one. Returns the number of packets. */
unsigned fwd_handoff_drain(struct worker *w);

/*
 * One pass of a worker over its channels: poll, hand-offs, refills. Returns the work
 * done (0: idle). Owner thread.
 */
unsigned worker_pass(struct worker *w);

/*
 * Start the worker threads (cfg.nworkers > 0), SCHED_FIFO at cfg.rt_prio when set; each
 * pins itself to its CPU. Control thread. 0 or -errno (-EPERM: rt without CAP_SYS_NICE).
 */
int workers_start(struct bridge *br);

/* Stop and join them. */
void workers_stop(struct bridge *br);

#endif /* ENGINE_FWD_H */
