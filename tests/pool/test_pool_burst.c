// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pool_burst - single-threaded get/put: burst sizes 1..64, exhaustion and recovery,
 * the exact refill/spill arithmetic between caches and the depot, buffers moving from
 * one worker's cache to another's, bursts larger than a cache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "tap.h"

#define NBUFS 1000
#define CSIZE 64

static struct pool *new_pool(uint32_t nbufs, uint32_t nworkers, uint32_t cache_size)
{
	struct pool_params p;

	pool_params_init(&p);
	p.nbufs = nbufs;
	p.nworkers = nworkers;
	p.cache_size = cache_size;
	return pool_new(&p);
}

static void check_pool(struct pool *pool, const char *when)
{
	struct pool_report r;
	int ret = pool_check(pool, &r);

	OK(ret == 0, "pool_check after %s%s%s", when, r.problem ? ": " : "",
	   r.problem ? r.problem : "");
}

/* idx[0..n): valid, distinct, CACHED, owned by worker; seen[] marks them. */
static bool valid_burst(struct pool *pool, const uint32_t *idx, uint32_t n, uint32_t worker,
			uint8_t *seen)
{
	bool ok = true;

	for (uint32_t i = 0; i < n; i++) {
		if (idx[i] >= pool_nbufs(pool) || seen[idx[i]] ||
		    pool_state(pool, idx[i]) != POOL_CACHED || pool_owner(pool, idx[i]) != worker)
			ok = false;
		else
			seen[idx[i]] = 1;
	}
	return ok;
}

static void test_burst_sizes(void)
{
	struct pool *pool = new_pool(NBUFS, 2, CSIZE);
	struct pool_cache *c0, *c1;
	uint32_t idx[64], bad = 0, wrong_count = 0;
	uint8_t seen[NBUFS];

	if (!OK(pool, "pool_new"))
		return;
	c0 = pool_cache(pool, 0);
	c1 = pool_cache(pool, 1);
	for (uint32_t n = 1; n <= 64; n++) {
		struct pool_cache *c = n & 1 ? c0 : c1;
		uint32_t got;

		memset(seen, 0, sizeof(seen));
		got = pool_get_burst(c, idx, n);
		if (got != n)
			wrong_count++;
		if (!valid_burst(pool, idx, got, n & 1 ? 0 : 1, seen))
			bad++;
		pool_set_state_burst(pool, idx, got, POOL_RX);
		pool_put_burst(c, idx, got);
	}
	EQ(wrong_count, 0, "bursts of 1..64 get exactly n buffers");
	EQ(bad, 0, "every burst: valid, distinct indices, CACHED, owned by the getting worker");
	EQ(pool_get_burst(c0, idx, 0), 0, "a burst of 0 gets nothing");
	pool_put_burst(c0, idx, 0);
	check_pool(pool, "bursts of 1..64");

	/* LIFO: what was just returned comes back first. */
	pool_get_burst(c0, idx, 8);
	{
		uint32_t again[8], same = 0;

		pool_put_burst(c0, idx, 8);
		pool_get_burst(c0, again, 8);
		for (int i = 0; i < 8; i++)
			same += again[i] == idx[i];
		EQ(same, 8, "the cache returns the most recently put buffers first, same order");
		pool_put_burst(c0, again, 8);
	}
	pool_free(pool);
}

static void test_exhaustion(void)
{
	struct pool *pool = new_pool(NBUFS, 2, CSIZE);
	struct pool_cache_stats st;
	static uint32_t held[NBUFS];
	static uint8_t seen[NBUFS];
	struct pool_cache *c;
	uint32_t total = 0, got, idx[32];

	if (!OK(pool, "pool_new"))
		return;
	c = pool_cache(pool, 0);
	while ((got = pool_get_burst(c, held + total, 32)) > 0)
		total += got;
	EQ(total, NBUFS, "bursts of 32 drain exactly all %u buffers", NBUFS);
	OK(valid_burst(pool, held, total, 0, seen), "all distinct");
	EQ(pool_get_burst(c, idx, 32), 0, "exhausted: get returns 0");
	EQ(pool_get_burst(pool_cache(pool, 1), idx, 1), 0, "exhausted for the other worker too");
	pool_cache_stats(c, &st);
	OK(st.short_gets >= 2, "short gets counted (%" PRIu64 ")", st.short_gets);
	EQ(pool_depot_free(pool), 0, "depot empty");

	pool_set_state_burst(pool, held, total, POOL_RX);
	check_pool(pool, "exhaustion (all posted as RX)");

	pool_put_burst(c, held, 10);
	got = pool_get_burst(c, idx, 32);
	EQ(got, 10, "after 10 puts a burst of 32 gets the 10");
	pool_set_state_burst(pool, idx, got, POOL_RX);
	pool_put_burst(pool_cache(pool, 1), idx, got);
	EQ(pool_get_burst(c, idx, 32), 0, "returned to worker 1's cache: not visible to worker 0");
	EQ(pool_cache_flush(pool_cache(pool, 1)), 10,
	   "worker 1 flushes its cache: 10 to the depot");
	EQ(pool_cache(pool, 1)->count, 0, "its cache is empty");
	got = pool_get_burst(c, idx, 32);
	EQ(got, 10, "buffers returned through worker 1 reach worker 0 through the depot");
	pool_put_burst(c, idx, got);
	pool_put_burst(c, held + 10, total - 10);
	EQ(pool_depot_free(pool) + pool_cache(pool, 0)->count + pool_cache(pool, 1)->count, NBUFS,
	   "all buffers back in the depot and caches");
	check_pool(pool, "recovery");
	total = 0;
	while ((got = pool_get_burst(c, held + total, 32)) > 0)
		total += got;
	EQ(total, NBUFS, "after recovery the whole pool is available again");
	pool_put_burst(c, held, total);
	check_pool(pool, "second drain");
	pool_free(pool);
}

/* The documented arithmetic: refill = need + size/2; spill the oldest down to size/2. */
static void test_refill_spill(void)
{
	struct pool *pool = new_pool(NBUFS, 2, CSIZE);
	struct pool_cache_stats st;
	struct pool_cache *c;
	uint32_t a[64], b[64];

	if (!OK(pool, "pool_new"))
		return;
	c = pool_cache(pool, 0);
	EQ(pool_get_burst(c, a, 64), 64, "get 64 from an empty cache");
	pool_cache_stats(c, &st);
	EQ(st.refills, 1, "one refill");
	EQ(st.count, 32, "refilled 64 + 32: 32 left in the cache");
	EQ(pool_depot_free(pool), NBUFS - 96, "96 taken from the depot");

	pool_put_burst(c, a, 64);
	pool_cache_stats(c, &st);
	EQ(st.spills, 1, "putting 64 into a cache of 32 (size 64) spills once");
	EQ(st.count, 64, "fill to 64, spill 32 oldest, then the last 32: 64 cached");
	EQ(pool_depot_free(pool), NBUFS - 64, "32 spilled to the depot");

	EQ(pool_get_burst(c, b, 64), 64, "get 64 again: served from the cache alone");
	pool_cache_stats(c, &st);
	OK(st.refills == 1 && st.count == 0, "no refill, cache now empty");
	{
		uint32_t same = 0;

		/* The 32 cached before the put were the oldest: spilled; the 64 put stayed. */
		for (int i = 0; i < 64; i++)
			same += b[i] == a[i];
		EQ(same, 64, "spill sent the oldest buffers, the 64 just put stayed, in order");
	}
	pool_put_burst(c, b, 64);
	check_pool(pool, "refill/spill");
	pool_free(pool);
}

/* Buffers taken by worker 0 and returned by worker 1: cache 1 spills, owners follow. */
static void test_cross_worker(void)
{
	struct pool *pool = new_pool(NBUFS, 2, CSIZE);
	static uint32_t held[600];
	uint64_t counts[POOL_NSTATES];
	struct pool_cache_stats s0, s1;
	struct pool_cache *c0, *c1;
	uint32_t got = 0, wrong_owner = 0;

	if (!OK(pool, "pool_new"))
		return;
	c0 = pool_cache(pool, 0);
	c1 = pool_cache(pool, 1);
	while (got < 600)
		got += pool_get_burst(c0, held + got, 600 - got < 17 ? 600 - got : 17);
	pool_set_state_burst(pool, held, got, POOL_HANDOFF);
	for (uint32_t i = 0; i < got; i += 20)
		pool_put_burst(c1, held + i, 20);
	pool_cache_stats(c0, &s0);
	pool_cache_stats(c1, &s1);
	OK(s1.spills > 0 && s1.count <= CSIZE,
	   "worker 1's cache spilled (%" PRIu64 " spills, %u left)", s1.spills, s1.count);
	for (uint32_t i = 0; i < s1.count; i++)
		wrong_owner += pool_owner(pool, c1->slot[i]) != 1;
	EQ(wrong_owner, 0, "buffers in worker 1's cache owned by worker 1");
	pool_census(pool, counts);
	EQ(counts[POOL_CACHED], s0.count + s1.count, "census CACHED = buffers in both caches");
	EQ(counts[POOL_FREE], pool_depot_free(pool), "census FREE = depot");
	EQ(counts[POOL_HANDOFF], 0, "no HANDOFF left");
	check_pool(pool, "cross-worker returns");
	pool_free(pool);
}

/* Bursts larger than a whole cache (2 x size) in both directions. */
static void test_large_bursts(void)
{
	struct pool *pool = new_pool(NBUFS, 1, 16);
	static uint32_t held[NBUFS];
	static uint8_t seen[NBUFS];
	struct pool_cache *c;
	uint32_t got;

	if (!OK(pool, "pool_new"))
		return;
	c = pool_cache(pool, 0);
	got = pool_get_burst(c, held, 700);
	EQ(got, 700, "one burst of 700 with a cache of 16");
	OK(valid_burst(pool, held, got, 0, seen), "700 distinct valid buffers");
	pool_set_state_burst(pool, held, got, POOL_TX);
	check_pool(pool, "a burst of 700 (TX)");
	pool_put_burst(c, held, 700);
	OK(c->count <= 16, "one put of 700 leaves at most a cache full (%u)", c->count);
	got = pool_get_burst(c, held, NBUFS + 5);
	EQ(got, NBUFS, "a burst larger than the pool gets the whole pool");
	pool_put_burst(c, held, got);
	check_pool(pool, "whole-pool bursts");
	pool_free(pool);
}

/* Cache of 1: every put spills, every get refills; nothing is lost. */
static void test_tiny_cache(void)
{
	struct pool *pool = new_pool(3, 2, 1);
	uint32_t idx[4], got;

	if (!OK(pool, "pool_new 3 buffers, cache 1"))
		return;
	got = pool_get_burst(pool_cache(pool, 0), idx, 4);
	EQ(got, 3, "3 of 4");
	pool_put_burst(pool_cache(pool, 1), idx, got);
	OK(pool_depot_free(pool) == 2 && pool_cache(pool, 1)->count == 1,
	   "put 3 into a cache of 1: 2 spilled, 1 kept");
	EQ(pool_get_burst(pool_cache(pool, 0), idx, 4), 2, "the other worker gets the 2 spilled");
	pool_put_burst(pool_cache(pool, 0), idx, 2);
	pool_cache_flush(pool_cache(pool, 0));
	pool_cache_flush(pool_cache(pool, 1));
	got = pool_get_burst(pool_cache(pool, 0), idx, 4);
	EQ(got, 3, "after both flush, 3 again");
	pool_put_burst(pool_cache(pool, 0), idx, got);
	check_pool(pool, "cache of 1");
	pool_free(pool);

	pool = new_pool(1, 1, 1);
	OK(pool && pool_get_burst(pool_cache(pool, 0), idx, 1) == 1 && idx[0] == 0,
	   "a pool of one buffer");
	if (pool) {
		pool_put_burst(pool_cache(pool, 0), idx, 1);
		EQ(pool_get_burst(pool_cache(pool, 0), idx, 2), 1, "and it comes back");
		pool_put_burst(pool_cache(pool, 0), idx, 1);
		check_pool(pool, "one buffer");
	}
	pool_free(pool);
}

int main(void)
{
	test_burst_sizes();
	test_exhaustion();
	test_refill_spill();
	test_cross_worker();
	test_large_bursts();
	test_tiny_cache();
	return tap_done();
}
