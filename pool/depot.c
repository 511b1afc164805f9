// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * depot.c - the bounded MPMC ring of buffer indices (see depot.h for the algorithm, its
 * ABA argument and its progress property).
 */
#include "depot.h"

uint32_t pool_depot_cap(uint32_t nbufs)
{
	uint32_t cap = 2;

	while (cap < nbufs)
		cap <<= 1;
	return cap;
}

void pool_depot_init(struct pool_depot *d, struct pool_depot_cell *cells, uint32_t cap)
{
	for (uint32_t i = 0; i < cap; i++) {
		/* Cell i waits for the producer of position i. */
		atomic_init(&cells[i].seq, i);
		cells[i].idx = 0;
	}
	d->cells = cells;
	d->mask = cap - 1;
	atomic_init(&d->enq, 0);
	atomic_init(&d->deq, 0);
}

/*
 * Count the cells from position pos whose seq equals pos + i + bias (bias 0: free for a
 * producer, 1: filled for a consumer), up to n. *first receives the seq of the cell at
 * pos, to tell "not yet" from "already claimed" when the run is empty.
 */
static uint32_t pool_depot_run(const struct pool_depot *d, uint64_t pos, uint32_t bias, uint32_t n,
			       uint32_t *first)
{
	uint32_t k;

	for (k = 0; k < n; k++) {
		const struct pool_depot_cell *c = &d->cells[(pos + k) & d->mask];
		/*
		 * Acquire: pairs with the release store of seq that made the cell ours (by a
		 * consumer freeing it for a producer: its read of idx happens before our
		 * write; by a producer filling it for a consumer: its write of idx happens
		 * before our read).
		 */
		uint32_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);

		if (k == 0)
			*first = seq;
		if (seq != (uint32_t)(pos + k + bias))
			break;
	}
	return k;
}

uint32_t pool_depot_mp_enqueue_burst(struct pool_depot *d, const uint32_t *idx, uint32_t n)
{
	/* Relaxed: a guess; the CAS below validates it, cell seqs carry the ordering. */
	uint64_t pos = atomic_load_explicit(&d->enq, memory_order_relaxed);
	uint32_t k, first = 0;

	if (!n)
		return 0;
	for (;;) {
		k = pool_depot_run(d, pos, 0, n, &first);
		if (k) {
			/*
			 * Claim [pos, pos + k). Relaxed both ways (Vyukov): the position only
			 * hands out cells; what we write is published by the seq stores below.
			 */
			if (atomic_compare_exchange_weak_explicit(&d->enq, &pos, pos + k,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
			continue; /* pos reloaded by the failed CAS */
		}
		if ((int32_t)(first - (uint32_t)pos) < 0)
			return 0; /* the cell still holds the previous lap: full, or a consumer
				     is between its claim and its publish */
		/* Another producer filled pos already: catch up. */
		pos = atomic_load_explicit(&d->enq, memory_order_relaxed);
	}
	for (uint32_t i = 0; i < k; i++) {
		struct pool_depot_cell *c = &d->cells[(pos + i) & d->mask];

		c->idx = idx[i];
		/* Release: pairs with the consumer's acquire load of seq (pool_depot_run). */
		atomic_store_explicit(&c->seq, (uint32_t)(pos + i + 1), memory_order_release);
	}
	return k;
}

uint32_t pool_depot_mc_dequeue_burst(struct pool_depot *d, uint32_t *idx, uint32_t n)
{
	/* Relaxed: a guess, validated by the CAS. */
	uint64_t pos = atomic_load_explicit(&d->deq, memory_order_relaxed);
	uint32_t k, first = 0;

	if (!n)
		return 0;
	for (;;) {
		k = pool_depot_run(d, pos, 1, n, &first);
		if (k) {
			/* Claim [pos, pos + k); relaxed as in enqueue. */
			if (atomic_compare_exchange_weak_explicit(&d->deq, &pos, pos + k,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
			continue;
		}
		if ((int32_t)(first - (uint32_t)(pos + 1)) < 0)
			return 0; /* empty, or a producer is between claim and publish */
		/* Another consumer took pos already: catch up. */
		pos = atomic_load_explicit(&d->deq, memory_order_relaxed);
	}
	for (uint32_t i = 0; i < k; i++) {
		struct pool_depot_cell *c = &d->cells[(pos + i) & d->mask];

		idx[i] = c->idx;
		/*
		 * Release: pairs with the acquire load of seq by the producer of the next
		 * lap (pool_depot_run): our read of idx happens before its write.
		 */
		atomic_store_explicit(&c->seq, (uint32_t)(pos + i + d->mask + 1),
				      memory_order_release);
	}
	return k;
}

uint64_t pool_depot_count(const struct pool_depot *d)
{
	/* Relaxed: a snapshot; deq first so that the difference does not go negative. */
	uint64_t deq = atomic_load_explicit(&d->deq, memory_order_relaxed);
	uint64_t enq = atomic_load_explicit(&d->enq, memory_order_relaxed);

	return enq > deq ? enq - deq : 0;
}
