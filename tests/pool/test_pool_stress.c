// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pool_stress - 4 worker threads on a small pool move buffers the way the engine
 * does: take bursts from their cache, post them (RX), hand some to the next worker
 * through a single-producer/single-consumer ring (HANDOFF -> TX at the receiver), and
 * return them to their own cache, so buffers circulate between caches through the
 * depot, with frequent exhaustion. A fifth thread runs the census throughout.
 *
 * Checked: a buffer is never held by two threads (an exclusive holder word per buffer,
 * and a stamp written into the buffer's data and verified when it is released), every
 * census scan counts exactly nbufs buffers, and pool_check passes at the end.
 * POOL_STRESS_ROUNDS sets the rounds per worker (default 1000000).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "tap.h"

#define NBUFS	   512
#define NWORKERS   4
#define CACHE_SIZE 16
#define HELD_MAX   64
#define RING_SIZE  256	       /* power of two */
#define HANDOFF	   0x80000000u /* holder word: in the ring towards worker (low bits) */

/* The engine's hand-off ring, in miniature: SPSC with release/acquire. */
struct ring {
	alignas(64) _Atomic uint32_t head; /* written by the consumer */
	alignas(64) _Atomic uint32_t tail; /* written by the producer */
	uint32_t slot[RING_SIZE];
};

struct held {
	uint32_t idx;
	uint64_t stamp;
};

struct worker {
	uint32_t id;
	struct pool_cache *cache;
	struct ring *in, *out;
	struct held held[HELD_MAX];
	uint32_t nheld;
	uint64_t rng, seq;
	uint64_t gets, puts, handed, received;
};

static struct pool *g_pool;
static _Atomic uint32_t g_holder[NBUFS];
static atomic_uint g_errors, g_census_bad;
static atomic_bool g_stop_census;
static pthread_barrier_t g_barrier;
static long g_rounds = 1000000;

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void error(void)
{
	atomic_fetch_add(&g_errors, 1);
}

/* Become the holder of idx (from `from`), stamp the data. */
static void hold(struct worker *w, uint32_t idx, uint32_t from, enum pool_state s)
{
	uint32_t expect = from;
	struct held *h;

	if (idx >= NBUFS || !atomic_compare_exchange_strong(&g_holder[idx], &expect, w->id + 1)) {
		error();
		return;
	}
	h = &w->held[w->nheld++];
	h->idx = idx;
	h->stamp = (uint64_t)(w->id + 1) << 48 | ++w->seq;
	memcpy(pool_data(g_pool, idx), &h->stamp, sizeof(h->stamp));
	memcpy(pool_data(g_pool, idx) + pool_buf_size(g_pool) - 8, &h->stamp, sizeof(h->stamp));
	pool_set_owner(g_pool, idx, w->id);
	pool_set_state(g_pool, idx, s);
}

/* Give up held[i] (swap-remove): verify the stamp, hand the holder word to `to`. */
static uint32_t release(struct worker *w, uint32_t i, uint32_t to)
{
	struct held h = w->held[i];
	uint32_t mine = w->id + 1;
	uint64_t a, b;

	w->held[i] = w->held[--w->nheld];
	memcpy(&a, pool_data(g_pool, h.idx), sizeof(a));
	memcpy(&b, pool_data(g_pool, h.idx) + pool_buf_size(g_pool) - 8, sizeof(b));
	if (a != h.stamp || b != h.stamp)
		error();
	if (!atomic_compare_exchange_strong(&g_holder[h.idx], &mine, to))
		error();
	return h.idx;
}

static void do_get(struct worker *w)
{
	uint32_t n = 1 + (uint32_t)(rng_next(&w->rng) % 32), idx[32], got;

	if (n > HELD_MAX - w->nheld)
		n = HELD_MAX - w->nheld;
	got = pool_get_burst(w->cache, idx, n);
	for (uint32_t i = 0; i < got; i++) {
		if (pool_state(g_pool, idx[i]) != POOL_CACHED ||
		    pool_owner(g_pool, idx[i]) != w->id)
			error();
		hold(w, idx[i], 0, POOL_RX);
	}
	w->gets += got;
}

static void do_put(struct worker *w, uint32_t n)
{
	uint32_t idx[HELD_MAX], k = 0;

	while (k < n && w->nheld)
		idx[k++] = release(w, (uint32_t)(rng_next(&w->rng) % w->nheld), 0);
	pool_put_burst(w->cache, idx, k);
	w->puts += k;
}

static void do_handoff(struct worker *w)
{
	uint32_t tail = atomic_load_explicit(&w->out->tail, memory_order_relaxed);
	/* Acquire: pairs with the consumer's release of head (its reads of the slots). */
	uint32_t head = atomic_load_explicit(&w->out->head, memory_order_acquire);
	uint32_t n = 1 + (uint32_t)(rng_next(&w->rng) % 16), to = (w->id + 1) % NWORKERS;

	while (n-- && w->nheld && tail - head < RING_SIZE) {
		uint32_t i = (uint32_t)(rng_next(&w->rng) % w->nheld);

		pool_set_state(g_pool, w->held[i].idx, POOL_HANDOFF);
		w->out->slot[tail++ % RING_SIZE] = release(w, i, HANDOFF | to);
		w->handed++;
	}
	/* Release: pairs with the consumer's acquire of tail; publishes slots and states. */
	atomic_store_explicit(&w->out->tail, tail, memory_order_release);
}

static void drain(struct worker *w)
{
	uint32_t head = atomic_load_explicit(&w->in->head, memory_order_relaxed);
	/* Acquire: pairs with the producer's release of tail. */
	uint32_t tail = atomic_load_explicit(&w->in->tail, memory_order_acquire);

	while (head != tail) {
		uint32_t idx = w->in->slot[head++ % RING_SIZE];

		if (pool_state(g_pool, idx) != POOL_HANDOFF)
			error();
		if (w->nheld == HELD_MAX)
			do_put(w, HELD_MAX / 2);
		hold(w, idx, HANDOFF | w->id, POOL_TX);
		w->received++;
	}
	/* Release: pairs with the producer's acquire of head. */
	atomic_store_explicit(&w->in->head, head, memory_order_release);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (long r = 0; r < g_rounds; r++) {
		switch (rng_next(&w->rng) % 4) {
		case 0:
		case 1:
			do_get(w);
			break;
		case 2:
			do_put(w, 1 + (uint32_t)(rng_next(&w->rng) % 32));
			break;
		default:
			do_handoff(w);
			break;
		}
		drain(w);
	}
	/* Nobody hands off any more once all are here; then drain and return everything. */
	pthread_barrier_wait(&g_barrier);
	drain(w);
	while (w->nheld)
		do_put(w, w->nheld);
	return NULL;
}

static void *census_main(void *arg)
{
	uint64_t *scans = arg;

	while (!atomic_load(&g_stop_census)) {
		uint64_t counts[POOL_NSTATES], total = 0;

		pool_census(g_pool, counts);
		for (int s = 0; s < POOL_NSTATES; s++)
			total += counts[s];
		if (total != NBUFS)
			atomic_fetch_add(&g_census_bad, 1);
		++*scans;
	}
	return NULL;
}

int main(void)
{
	static struct worker w[NWORKERS];
	static struct ring rings[NWORKERS];
	pthread_t t[NWORKERS], ct;
	struct pool_params p;
	struct pool_report r;
	uint64_t scans = 0, counts[POOL_NSTATES], handed = 0, received = 0;
	const char *env = getenv("POOL_STRESS_ROUNDS");
	int ret;

	if (env && atol(env) > 0)
		g_rounds = atol(env);
	pool_params_init(&p);
	p.nbufs = NBUFS;
	p.nworkers = NWORKERS;
	p.cache_size = CACHE_SIZE;
	g_pool = pool_new(&p);
	if (!OK(g_pool, "pool_new %d buffers, %d workers, cache %d", NBUFS, NWORKERS, CACHE_SIZE))
		return tap_done();
	pthread_barrier_init(&g_barrier, NULL, NWORKERS);
	pthread_create(&ct, NULL, census_main, &scans);
	for (uint32_t i = 0; i < NWORKERS; i++) {
		w[i].id = i;
		w[i].cache = pool_cache(g_pool, i);
		w[i].in = &rings[i];
		w[i].out = &rings[(i + 1) % NWORKERS];
		w[i].rng = 0x9e3779b97f4a7c15ULL * (i + 1);
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (uint32_t i = 0; i < NWORKERS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&g_stop_census, true);
	pthread_join(ct, NULL);

	EQ(atomic_load(&g_errors), 0,
	   "%ld rounds x %d workers: no buffer held twice, stamps intact, states as expected",
	   g_rounds, NWORKERS);
	for (uint32_t i = 0; i < NWORKERS; i++) {
		struct pool_cache_stats st;

		pool_cache_stats(w[i].cache, &st);
		DIAG("worker %u: got %" PRIu64 " put %" PRIu64 " handed %" PRIu64
		     " received %" PRIu64 " | refills %" PRIu64 " spills %" PRIu64
		     " short gets %" PRIu64 " spill waits %" PRIu64,
		     i, w[i].gets, w[i].puts, w[i].handed, w[i].received, st.refills, st.spills,
		     st.short_gets, st.spill_waits);
		handed += w[i].handed;
		received += w[i].received;
	}
	EQ(received, handed, "every handed-off buffer was received");
	OK(handed > 0, "hand-offs happened (%" PRIu64 ")", handed);
	OK(scans > 0 && atomic_load(&g_census_bad) == 0,
	   "%" PRIu64 " concurrent census scans, each counted exactly %d buffers", scans, NBUFS);
	ret = pool_check(g_pool, &r);
	OK(ret == 0, "pool_check after the stress%s%s", r.problem ? ": " : "",
	   r.problem ? r.problem : "");
	pool_census(g_pool, counts);
	EQ(counts[POOL_FREE] + counts[POOL_CACHED], NBUFS, "all buffers back: FREE + CACHED");
	EQ(counts[POOL_FREE], pool_depot_free(g_pool), "FREE = depot");
	pool_free(g_pool);
	pthread_barrier_destroy(&g_barrier);
	return tap_done();
}
