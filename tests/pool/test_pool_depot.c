// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pool_depot - the shared depot (depot.h) on its own and under the caches:
 * capacity rounding, FIFO order against a model over many laps, positions crossing the
 * 32-bit wrap of the cell sequence numbers, full and empty, a producer and a consumer
 * preempted between claim and publish (the one case where the ring waits), the caches
 * absorbing a blocked depot with their headroom and then waiting without losing a
 * buffer, and 4 threads hammering a ring sized exactly for its values.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "depot.h"
#include "pool.h"
#include "tap.h"

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* An empty depot whose positions start at `start` (to cross the 2^32 seq wrap). */
static void depot_init_at(struct pool_depot *d, struct pool_depot_cell *cells, uint32_t cap,
			  uint64_t start)
{
	pool_depot_init(d, cells, cap);
	for (uint64_t p = start; p < start + cap; p++)
		atomic_store(&cells[p & (cap - 1)].seq, (uint32_t)p);
	atomic_store(&d->enq, start);
	atomic_store(&d->deq, start);
}

static void test_cap(void)
{
	OK(pool_depot_cap(1) == 2 && pool_depot_cap(2) == 2 && pool_depot_cap(3) == 4 &&
		   pool_depot_cap(1000) == 1024 && pool_depot_cap(1024) == 1024 &&
		   pool_depot_cap(1025) == 2048 && pool_depot_cap(POOL_NBUFS_MAX) == POOL_NBUFS_MAX,
	   "capacity: next power of two, at least 2");
}

/* Random bursts against a FIFO model; start position chosen by the caller. */
static void fifo_model(uint64_t start, const char *name)
{
	enum { CAP = 16, ROUNDS = 200000 };
	struct pool_depot_cell cells[CAP];
	struct pool_depot d;
	uint32_t model[CAP], head = 0, len = 0, next = 0, bad = 0, buf[CAP + 4];
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ start;

	depot_init_at(&d, cells, CAP, start);
	for (int r = 0; r < ROUNDS; r++) {
		uint32_t n = (uint32_t)(rng_next(&x) % (CAP + 3)), k;

		if (rng_next(&x) & 1) {
			for (uint32_t i = 0; i < n; i++)
				buf[i] = next + i;
			k = pool_depot_mp_enqueue_burst(&d, buf, n);
			if (k != (n < CAP - len ? n : CAP - len))
				bad++;
			for (uint32_t i = 0; i < k; i++)
				model[(head + len + i) % CAP] = next + i;
			len += k;
			next += k;
		} else {
			k = pool_depot_mc_dequeue_burst(&d, buf, n);
			if (k != (n < len ? n : len))
				bad++;
			for (uint32_t i = 0; i < k; i++)
				if (buf[i] != model[(head + i) % CAP])
					bad++;
			head = (head + k) % CAP;
			len -= k;
		}
		if (pool_depot_count(&d) != len)
			bad++;
	}
	EQ(bad, 0, "%s: %d random bursts match a FIFO model (counts, order, full, empty)", name,
	   ROUNDS);
	OK(atomic_load(&d.enq) - start > (1u << 18),
	   "%s: the positions advanced %" PRIu64 " (many laps)", name, atomic_load(&d.enq) - start);
}

static void test_full_empty(void)
{
	struct pool_depot_cell cells[8];
	struct pool_depot d;
	uint32_t v[8] = {10, 11, 12, 13, 14, 15, 16, 17}, out[8];

	pool_depot_init(&d, cells, 8);
	EQ(pool_depot_mc_dequeue_burst(&d, out, 1), 0, "empty: dequeue gets 0");
	EQ(pool_depot_mp_enqueue_burst(&d, v, 8), 8, "enqueue 8 into 8 cells");
	EQ(pool_depot_mp_enqueue_burst(&d, v, 1), 0, "full: enqueue takes 0");
	EQ(pool_depot_mc_dequeue_burst(&d, out, 3), 3, "dequeue 3");
	OK(out[0] == 10 && out[1] == 11 && out[2] == 12, "oldest first");
	EQ(pool_depot_mp_enqueue_burst(&d, v, 5), 3, "enqueue 5 with 3 free: 3 taken");
	EQ(pool_depot_mc_dequeue_burst(&d, out, 8), 8, "dequeue all 8");
	OK(out[4] == 17 && out[5] == 10 && out[7] == 12, "wrapped around in order");
	EQ(pool_depot_mp_enqueue_burst(&d, v, 0), 0, "a burst of 0 is a no-op");
	EQ(pool_depot_count(&d), 0, "count 0");
}

/*
 * A producer preempted between its claim and its publish: consumers see "empty" at its
 * cell even though later cells are published, then everything once it publishes.
 */
static void test_stalled_producer(void)
{
	struct pool_depot_cell cells[8];
	struct pool_depot d;
	uint32_t v[3] = {1, 2, 3}, out[8];
	uint64_t pos;

	pool_depot_init(&d, cells, 8);
	pos = atomic_fetch_add(&d.enq, 1); /* claim position 0 and stall */
	EQ(pool_depot_mp_enqueue_burst(&d, v, 3), 3, "other producers go on past the stalled one");
	EQ(pool_depot_mc_dequeue_burst(&d, out, 8), 0,
	   "consumers stop at the unpublished cell (reported as empty)");
	cells[pos & 7].idx = 99;
	atomic_store(&cells[pos & 7].seq, (uint32_t)(pos + 1)); /* the stalled one publishes */
	EQ(pool_depot_mc_dequeue_burst(&d, out, 8), 4, "then all 4 come out");
	OK(out[0] == 99 && out[1] == 1 && out[3] == 3, "in claim order");
}

/*
 * A consumer preempted between its claim and its publish blocks the producer that
 * reaches its cell one lap later. Under the caches: puts use the cache headroom, then
 * wait (spill_waits) until the stalled consumer publishes; no buffer is lost.
 */
struct releaser {
	struct pool_depot *d;
	uint64_t pos;
	int delay_ms;
	atomic_bool done;
};

static void *release_later(void *arg)
{
	struct releaser *r = arg;
	struct timespec ts = {0, r->delay_ms * 1000000L};

	nanosleep(&ts, NULL);
	atomic_store(&r->done, true);
	/* The stalled consumer's publish: the cell is free for the next lap. */
	atomic_store_explicit(&r->d->cells[r->pos & r->d->mask].seq,
			      (uint32_t)(r->pos + r->d->mask + 1), memory_order_release);
	return NULL;
}

static void test_stalled_consumer(void)
{
	struct pool_params p;
	struct pool_cache_stats st;
	struct pool_report r;
	struct releaser rel;
	struct pool_cache *c;
	struct pool_depot *d;
	struct pool *pool;
	uint32_t held[64], stolen, got = 0;
	pthread_t t;
	int ret;

	pool_params_init(&p);
	p.nbufs = 64; /* depot capacity 64: every buffer fits exactly */
	p.nworkers = 1;
	p.cache_size = 8; /* spill at 8, headroom to 16 */
	pool = pool_new(&p);
	if (!OK(pool, "pool_new 64 buffers, cache 8"))
		return;
	c = pool_cache(pool, 0);
	d = pool->depot;

	/* Stall a consumer on position 0: it claimed the cell and read the index. */
	rel.pos = atomic_fetch_add(&d->deq, 1);
	stolen = d->cells[rel.pos & d->mask].idx;
	rel.d = d;
	rel.delay_ms = 200;
	atomic_init(&rel.done, false);

	/* Take the other 63 buffers, then return them: spills reach cell 0 one lap later. */
	while (got < 63) {
		uint32_t k = pool_get_burst(c, held + got, 63 - got);

		if (!k)
			break;
		got += k;
	}
	EQ(got, 63, "63 buffers obtainable past the stalled consumer");
	EQ(pool_get_burst(c, held + 63, 1), 0, "the 64th is held by the stalled consumer");
	pool_set_state_burst(pool, held, got, POOL_RX);

	pool_put_burst(c, held, 16);
	pool_cache_stats(c, &st);
	OK(st.count == 16 && st.spill_waits == 0,
	   "the depot refuses (blocked cell): 16 kept in the cache, its headroom (count %u)",
	   st.count);
	pthread_create(&t, NULL, release_later, &rel);
	pool_put_burst(c, held + 16, got - 16);
	OK(atomic_load(&rel.done), "the next put waited for the stalled consumer to publish");
	pthread_join(t, NULL);
	pool_cache_stats(c, &st);
	OK(st.spill_waits >= 1, "the wait is counted (spill_waits %" PRIu64 ")", st.spill_waits);

	/* The stalled consumer now owns `stolen` and returns it: everything accounted for. */
	pool_put_burst(c, &stolen, 1);
	ret = pool_check(pool, &r);
	OK(ret == 0, "pool_check after the stall%s%s", r.problem ? ": " : "",
	   r.problem ? r.problem : "");
	EQ(pool_depot_free(pool) + c->count, 64, "all 64 buffers in the depot and the cache");
	pool_free(pool);
}

/* 4 threads take and return bursts; every value is held by one thread at a time. */
#define MT_VALUES  1024 /* == capacity: the ring is full whenever all values are in it */
#define MT_THREADS 4
#define MT_ROUNDS  100000

struct mt {
	struct pool_depot d;
	struct pool_depot_cell cells[MT_VALUES];
	_Atomic uint32_t holder[MT_VALUES];
	atomic_uint errors, short_enq;
};

struct mt_arg {
	struct mt *mt;
	uint32_t id;
};

static void *mt_thread(void *arg)
{
	struct mt_arg *a = arg;
	struct mt *mt = a->mt;
	uint64_t x = 0x2545f4914f6cdd1dULL * (a->id + 1);
	uint32_t buf[32];

	for (int r = 0; r < MT_ROUNDS; r++) {
		uint32_t n = 1 + (uint32_t)(rng_next(&x) % 32), k, done = 0;

		k = pool_depot_mc_dequeue_burst(&mt->d, buf, n);
		for (uint32_t i = 0; i < k; i++) {
			uint32_t none = 0;

			if (buf[i] >= MT_VALUES ||
			    !atomic_compare_exchange_strong(&mt->holder[buf[i]], &none, a->id + 1))
				atomic_fetch_add(&mt->errors, 1);
		}
		for (uint32_t i = 0; i < k; i++) {
			uint32_t mine = a->id + 1;

			if (buf[i] < MT_VALUES &&
			    !atomic_compare_exchange_strong(&mt->holder[buf[i]], &mine, 0))
				atomic_fetch_add(&mt->errors, 1);
		}
		/* A full ring can refuse briefly (a consumer between claim and publish). */
		while (done < k) {
			uint32_t e = pool_depot_mp_enqueue_burst(&mt->d, buf + done, k - done);

			if (!e) {
				atomic_fetch_add(&mt->short_enq, 1);
				sched_yield();
			}
			done += e;
		}
	}
	return NULL;
}

static void test_mt(void)
{
	struct mt *mt = calloc(1, sizeof(*mt));
	struct mt_arg args[MT_THREADS];
	pthread_t t[MT_THREADS];
	uint32_t all[MT_VALUES + 1], n = 0, bad = 0;
	static uint8_t seen[MT_VALUES];

	if (!OK(mt, "allocate"))
		return;
	pool_depot_init(&mt->d, mt->cells, MT_VALUES);
	for (uint32_t i = 0; i < MT_VALUES; i++)
		all[i] = i;
	EQ(pool_depot_mp_enqueue_burst(&mt->d, all, MT_VALUES), MT_VALUES, "fill the ring");
	for (uint32_t i = 0; i < MT_THREADS; i++) {
		args[i].mt = mt;
		args[i].id = i;
		pthread_create(&t[i], NULL, mt_thread, &args[i]);
	}
	for (uint32_t i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	EQ(atomic_load(&mt->errors), 0,
	   "%d threads x %d rounds: no value handed to two threads at once", MT_THREADS, MT_ROUNDS);
	DIAG("enqueues refused while a consumer was between claim and publish: %u",
	     atomic_load(&mt->short_enq));
	n = pool_depot_mc_dequeue_burst(&mt->d, all, MT_VALUES + 1);
	for (uint32_t i = 0; i < n; i++) {
		if (all[i] >= MT_VALUES || seen[all[i]])
			bad++;
		else
			seen[all[i]] = 1;
	}
	EQ(n, MT_VALUES, "afterwards the ring holds all %d values", MT_VALUES);
	EQ(bad, 0, "each exactly once");
	free(mt);
}

int main(void)
{
	test_cap();
	fifo_model(0, "positions from 0");
	fifo_model((1ULL << 32) - 100, "positions across 2^32");
	fifo_model(UINT64_MAX - (1ULL << 22), "positions near 2^64");
	test_full_empty();
	test_stalled_producer();
	test_stalled_consumer();
	test_mt();
	return tap_done();
}
