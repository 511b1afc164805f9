/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * depot.h - the pool's shared depot: a bounded multi-producer multi-consumer ring of
 * buffer indices (Dmitry Vyukov's bounded MPMC queue, with burst claims). Private to
 * pool/ and its tests.
 *
 * Positions are 64-bit counters that only grow: enq is the next position to fill, deq
 * the next to take; position p lives in cell p & mask. Each cell carries a sequence
 * number (the low 32 bits of a position) saying what the cell is waiting for:
 *   seq == p        free, waiting for the producer of position p
 *   seq == p + 1    filled, waiting for the consumer of position p
 *   seq == p + cap  taken, waiting for the producer of position p + cap (next lap)
 * A thread claims a run of cells whose seq says "mine" with one CAS on enq or deq, then
 * fills or empties them and publishes each with a release store of the next seq.
 *
 * ABA: a claim is a CAS on a 64-bit position that never repeats (2^64 operations), and
 * a successful CAS proves the position did not move since it was loaded, so the seq
 * values read in between were compared against a current position (within one lap of
 * it, cap <= 2^30): the 32-bit comparisons are exact. No pointers, no reuse, no tags.
 *
 * Progress: no locks; a failed CAS means another thread claimed cells. One case waits:
 * a thread preempted between its claim and its publish leaves its cells unpublished; a
 * consumer reaching such a cell sees "empty" and a producer a full lap later sees
 * "full" (returns short) until the preempted thread runs again. The depot is sized to
 * hold every buffer, so "full" is never real; the caches absorb it (pool.h).
 */
#ifndef IB2ROCE_POOL_DEPOT_H
#define IB2ROCE_POOL_DEPOT_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

struct pool_depot_cell {
	_Atomic uint32_t seq; /* low 32 bits of the position the cell waits for */
	uint32_t idx;	      /* buffer index, valid while filled */
};

struct pool_depot {
	alignas(POOL_CACHE_LINE) _Atomic uint64_t enq; /* next position to fill */
	alignas(POOL_CACHE_LINE) _Atomic uint64_t deq; /* next position to take */
	alignas(POOL_CACHE_LINE) uint64_t mask;	       /* cap - 1; read-only after init */
	struct pool_depot_cell *cells;
};

/*
 * pool_depot_cap - ring capacity for nbufs buffers: the next power of two >= nbufs, at
 * least 2 (with one cell "filled" and "free for the next lap" would be the same seq).
 * Assumed: nbufs <= POOL_NBUFS_MAX.
 */
uint32_t pool_depot_cap(uint32_t nbufs);

/*
 * pool_depot_init - format an empty depot over cells[cap]. Single thread, before use.
 * Assumed: cap is a power of two in 2..2^30.
 */
void pool_depot_init(struct pool_depot *d, struct pool_depot_cell *cells, uint32_t cap);

/*
 * pool_depot_mp_enqueue_burst - append up to n indices. Any thread, concurrently with
 * any other depot operation. Returns how many were appended, from the front of idx[]
 * (fewer than n: the ring is full, or a thread one lap behind has not published yet).
 * Cost: one CAS on enq (more under contention), n cell loads and n release stores.
 */
uint32_t pool_depot_mp_enqueue_burst(struct pool_depot *d, const uint32_t *idx, uint32_t n);

/*
 * pool_depot_mc_dequeue_burst - take up to n indices, oldest first, into idx[]. Any
 * thread, concurrently with any other depot operation. Returns how many were taken
 * (fewer than n: the ring is empty, or a producer has not published yet).
 * Cost: one CAS on deq (more under contention), n cell loads and n release stores.
 */
uint32_t pool_depot_mc_dequeue_burst(struct pool_depot *d, uint32_t *idx, uint32_t n);

/*
 * pool_depot_count - enq - deq: indices in the ring, including runs claimed but not yet
 * published. Any thread; exact when quiescent.
 */
uint64_t pool_depot_count(const struct pool_depot *d);

#endif /* IB2ROCE_POOL_DEPOT_H */
