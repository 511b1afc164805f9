// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * census.c - accounting of buffer states: the racy-but-exact-per-buffer census for the
 * control thread, and the full structural check for quiescent pools (tests, debugging).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "depot.h"
#include "pool.h"

void pool_census(const struct pool *pool, uint64_t counts[POOL_NSTATES])
{
	memset(counts, 0, POOL_NSTATES * sizeof(counts[0]));
	for (uint32_t i = 0; i < pool->nbufs; i++) {
		/* Relaxed: pairs with nothing; each byte is read once, untorn. */
		uint8_t s = atomic_load_explicit(&pool->meta[i].state, memory_order_relaxed);

		/* Only a caller bug stores another value; pool_check reports it. */
		if (s < POOL_NSTATES)
			counts[s]++;
	}
}

/* Record the first problem found; later ones are not reported. */
static int pool_bad(struct pool_report *r, const char *problem, uint32_t idx)
{
	if (!r->problem) {
		r->problem = problem;
		r->idx = idx;
	}
	return -EUCLEAN;
}

/* Mark idx as seen in a container: 0, or -EUCLEAN if invalid or already seen. */
static int pool_seen(struct pool_report *r, uint64_t *seen, uint32_t nbufs, uint32_t idx)
{
	if (idx >= nbufs)
		return pool_bad(r, "index out of range in the depot or a cache", idx);
	if (seen[idx / 64] & (1ULL << (idx % 64)))
		return pool_bad(r, "buffer held twice (depot or caches)", idx);
	seen[idx / 64] |= 1ULL << (idx % 64);
	return 0;
}

static int pool_check_depot(const struct pool *pool, struct pool_report *r, uint64_t *seen)
{
	const struct pool_depot *d = pool->depot;
	uint64_t cap = d->mask + 1;
	/* Relaxed: the pool is quiescent (documented precondition). */
	uint64_t deq = atomic_load_explicit(&d->deq, memory_order_relaxed);
	uint64_t enq = atomic_load_explicit(&d->enq, memory_order_relaxed);
	int ret = 0;

	if (enq < deq || enq - deq > pool->nbufs)
		return pool_bad(r, "depot positions inconsistent", UINT32_MAX);
	for (uint64_t pos = deq; pos < deq + cap; pos++) {
		const struct pool_depot_cell *c = &d->cells[pos & d->mask];
		uint32_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);

		if (pos >= enq) {
			if (seq != (uint32_t)pos)
				ret = pool_bad(r, "depot cell not free for its next position",
					       UINT32_MAX);
			continue;
		}
		if (seq != (uint32_t)(pos + 1)) {
			ret = pool_bad(r, "depot cell not published", c->idx);
			continue;
		}
		if (pool_seen(r, seen, pool->nbufs, c->idx)) {
			ret = -EUCLEAN;
			continue;
		}
		if (pool_state(pool, c->idx) != POOL_FREE)
			ret = pool_bad(r, "buffer in the depot not in state FREE", c->idx);
		else if (pool_owner(pool, c->idx) != POOL_OWNER_NONE)
			ret = pool_bad(r, "buffer in the depot has an owner", c->idx);
	}
	r->counts[POOL_FREE] = enq - deq;
	return ret;
}

static int pool_check_caches(const struct pool *pool, struct pool_report *r, uint64_t *seen)
{
	int ret = 0;

	for (uint32_t w = 0; w < pool->nworkers; w++) {
		const struct pool_cache *c =
			(const struct pool_cache *)(pool->caches + (size_t)w * pool->cache_stride);
		uint32_t count = atomic_load_explicit(&c->count, memory_order_relaxed);

		if (count > c->cap) {
			ret = pool_bad(r, "cache count above its capacity", UINT32_MAX);
			continue;
		}
		for (uint32_t i = 0; i < count; i++) {
			uint32_t idx = c->slot[i];

			if (pool_seen(r, seen, pool->nbufs, idx)) {
				ret = -EUCLEAN;
				continue;
			}
			if (pool_state(pool, idx) != POOL_CACHED)
				ret = pool_bad(r, "buffer in a cache not in state CACHED", idx);
			else if (pool_owner(pool, idx) != w)
				ret = pool_bad(r, "buffer in a cache owned by another worker", idx);
		}
		r->counts[POOL_CACHED] += count;
	}
	return ret;
}

int pool_check(const struct pool *pool, struct pool_report *r)
{
	uint64_t *seen = calloc((pool->nbufs + 63) / 64, sizeof(*seen));
	uint64_t total = 0;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	r->idx = UINT32_MAX;
	if (!seen)
		return -ENOMEM;
	if (pool_check_depot(pool, r, seen))
		ret = -EUCLEAN;
	if (pool_check_caches(pool, r, seen))
		ret = -EUCLEAN;
	for (uint32_t i = 0; i < pool->nbufs; i++) {
		enum pool_state s;

		if (seen[i / 64] & (1ULL << (i % 64)))
			continue;
		s = pool_state(pool, i);
		switch (s) {
		case POOL_RX:
		case POOL_TX:
		case POOL_BACKLOG:
		case POOL_HANDOFF:
			r->counts[s]++;
			break;
		case POOL_FREE:
			ret = pool_bad(r, "buffer in state FREE outside the depot", i);
			break;
		case POOL_CACHED:
			ret = pool_bad(r, "buffer in state CACHED outside the caches (leaked)", i);
			break;
		default:
			ret = pool_bad(r, "invalid state byte", i);
			break;
		}
	}
	free(seen);
	for (int s = 0; s < POOL_NSTATES; s++)
		total += r->counts[s];
	if (!ret && total != pool->nbufs)
		ret = pool_bad(r, "states do not add up to the number of buffers", UINT32_MAX);
	return ret;
}
