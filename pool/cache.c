// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cache.c - the slow paths of the per-worker caches: refill from the depot when a cache
 * runs dry, spill to the depot when it is full. The fast paths are inline in pool.h.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "depot.h"
#include "pool.h"

/* Spins on a blocked depot between two sched_yield() calls. */
#define POOL_SPIN_YIELD 1024

static inline void pool_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Owner-only counter: a relaxed load and store, no atomic read-modify-write. */
static inline void pool_stat_inc(_Atomic uint64_t *ctr)
{
	atomic_store_explicit(ctr, atomic_load_explicit(ctr, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static inline void pool_meta_set(struct pool_meta *m, enum pool_state s, uint16_t owner)
{
	/* Relaxed: the holder's own record, read by the census as a snapshot. */
	atomic_store_explicit(&m->state, (uint8_t)s, memory_order_relaxed);
	atomic_store_explicit(&m->owner, owner, memory_order_relaxed);
}

/* Push n indices onto the cache; the caller made room (count + n <= cap). */
static void pool_cache_push(struct pool_cache *c, const uint32_t *idx, uint32_t n)
{
	uint32_t count = atomic_load_explicit(&c->count, memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++) {
		c->slot[count + i] = idx[i];
		pool_meta_set(&c->meta[idx[i]], POOL_CACHED, c->worker);
	}
	atomic_store_explicit(&c->count, count + n, memory_order_relaxed);
}

uint32_t pool_cache_get_slow(struct pool_cache *c, uint32_t *idx, uint32_t n)
{
	struct pool_depot *d = c->pool->depot;
	uint32_t got = 0;

	for (;;) {
		uint32_t count = atomic_load_explicit(&c->count, memory_order_relaxed);
		uint32_t take = count < n - got ? count : n - got;
		uint64_t want;
		uint32_t k;

		count -= take;
		memcpy(idx + got, &c->slot[count], take * sizeof(*idx));
		atomic_store_explicit(&c->count, count, memory_order_relaxed);
		got += take;
		if (got == n)
			return got;

		/* Empty: refill with what this call still needs plus half a cache. */
		want = (uint64_t)(n - got) + c->size / 2;
		if (want > c->cap)
			want = c->cap;
		k = pool_depot_mc_dequeue_burst(d, c->slot, (uint32_t)want);
		if (!k) {
			pool_stat_inc(&c->short_gets);
			return got;
		}
		for (uint32_t i = 0; i < k; i++)
			pool_meta_set(&c->meta[c->slot[i]], POOL_CACHED, c->worker);
		atomic_store_explicit(&c->count, k, memory_order_relaxed);
		pool_stat_inc(&c->refills);
	}
}

/*
 * Spill the oldest buffers (bottom of the stack) to the depot until `keep` are left; the
 * most recently returned ones stay. Returns how many went to the depot.
 */
static uint32_t pool_cache_spill(struct pool_cache *c, uint32_t keep)
{
	uint32_t count = atomic_load_explicit(&c->count, memory_order_relaxed);
	uint32_t want, k;

	if (count <= keep)
		return 0;
	want = count - keep;
	/*
	 * Mark them free before they are published: once in the depot they belong to
	 * whoever takes them. Those the depot refuses are marked cached again below.
	 */
	for (uint32_t i = 0; i < want; i++)
		pool_meta_set(&c->meta[c->slot[i]], POOL_FREE, POOL_OWNER_NONE);
	k = pool_depot_mp_enqueue_burst(c->pool->depot, c->slot, want);
	for (uint32_t i = k; i < want; i++)
		pool_meta_set(&c->meta[c->slot[i]], POOL_CACHED, c->worker);
	if (!k)
		return 0;
	memmove(c->slot, &c->slot[k], (count - k) * sizeof(c->slot[0]));
	atomic_store_explicit(&c->count, count - k, memory_order_relaxed);
	pool_stat_inc(&c->spills);
	return k;
}

void pool_cache_put_slow(struct pool_cache *c, const uint32_t *idx, uint32_t n)
{
	uint32_t spins = 0;

	while (n) {
		uint32_t count, room;

		if (atomic_load_explicit(&c->count, memory_order_relaxed) >= c->size)
			pool_cache_spill(c, c->size / 2);
		count = atomic_load_explicit(&c->count, memory_order_relaxed);
		/* Below size: normal room. Still full: the depot is blocked, use headroom. */
		room = count < c->size ? c->size - count : c->cap - count;
		if (!room) {
			/*
			 * Headroom full too: wait for the thread that blocks the depot (it is
			 * between two stores; it needs a CPU, hence the yields).
			 */
			if (!spins)
				pool_stat_inc(&c->spill_waits);
			if (++spins % POOL_SPIN_YIELD == 0)
				sched_yield();
			else
				pool_cpu_relax();
			continue;
		}
		spins = 0;
		if (room > n)
			room = n;
		pool_cache_push(c, idx, room);
		idx += room;
		n -= room;
	}
}

uint32_t pool_cache_flush(struct pool_cache *c)
{
	return pool_cache_spill(c, 0);
}

void pool_cache_stats(const struct pool_cache *c, struct pool_cache_stats *s)
{
	/* Relaxed: single-writer counters, each read untorn; no cut across them. */
	s->refills = atomic_load_explicit(&c->refills, memory_order_relaxed);
	s->spills = atomic_load_explicit(&c->spills, memory_order_relaxed);
	s->short_gets = atomic_load_explicit(&c->short_gets, memory_order_relaxed);
	s->spill_waits = atomic_load_explicit(&c->spill_waits, memory_order_relaxed);
	s->count = atomic_load_explicit(&c->count, memory_order_relaxed);
}

struct pool_cache *pool_cache(struct pool *pool, uint32_t worker)
{
	if (worker >= pool->nworkers) {
		errno = EINVAL;
		return NULL;
	}
	return (struct pool_cache *)(pool->caches + (size_t)worker * pool->cache_stride);
}

uint64_t pool_depot_free(const struct pool *pool)
{
	return pool_depot_count(pool->depot);
}
