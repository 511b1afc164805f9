// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pool_state - accounting: census and pool_check across the state transitions the
 * engine makes (receive, send, backlog, hand-off), and pool_check catching each kind of
 * corruption: a leaked buffer, a double put, a FREE buffer outside the depot, an owner
 * mismatch, an invalid state byte, a damaged depot cell.
 */
#include <errno.h>
#include <string.h>

#include "depot.h"
#include "pool.h"
#include "tap.h"

#define NBUFS 256

static struct pool *new_pool(void)
{
	struct pool_params p;

	pool_params_init(&p);
	p.nbufs = NBUFS;
	p.nworkers = 2;
	p.cache_size = 16;
	return pool_new(&p);
}

static bool census_is(struct pool *pool, const uint64_t want[POOL_NSTATES], const char *when)
{
	uint64_t got[POOL_NSTATES];
	bool same = true;

	pool_census(pool, got);
	for (int s = 0; s < POOL_NSTATES; s++)
		same &= got[s] == want[s];
	OK(same,
	   "census %s: FREE %" PRIu64 " CACHED %" PRIu64 " RX %" PRIu64 " TX %" PRIu64
	   " BACKLOG %" PRIu64 " HANDOFF %" PRIu64,
	   when, got[0], got[1], got[2], got[3], got[4], got[5]);
	return same;
}

static void test_transitions(void)
{
	struct pool *pool = new_pool();
	uint64_t want[POOL_NSTATES];
	struct pool_cache *c0, *c1;
	struct pool_report r;
	uint32_t idx[100];

	if (!OK(pool, "pool_new"))
		return;
	c0 = pool_cache(pool, 0);
	c1 = pool_cache(pool, 1);
	EQ(pool_get_burst(c0, idx, 100), 100, "get 100");
	memset(want, 0, sizeof(want));
	want[POOL_FREE] = pool_depot_free(pool);
	want[POOL_CACHED] = NBUFS - want[POOL_FREE];
	census_is(pool, want, "after get (taken buffers are CACHED)");

	pool_set_state_burst(pool, idx, 30, POOL_RX);
	pool_set_state_burst(pool, idx + 30, 30, POOL_TX);
	pool_set_state_burst(pool, idx + 60, 20, POOL_BACKLOG);
	pool_set_state_burst(pool, idx + 80, 20, POOL_HANDOFF);
	want[POOL_CACHED] -= 100;
	want[POOL_RX] = 30;
	want[POOL_TX] = 30;
	want[POOL_BACKLOG] = 20;
	want[POOL_HANDOFF] = 20;
	census_is(pool, want, "after posting");
	OK(pool_check(pool, &r) == 0 && !memcmp(r.counts, want, sizeof(want)),
	   "pool_check agrees with the census");

	/* Received buffers are forwarded: RX -> TX; backlog drains: BACKLOG -> TX. */
	for (int i = 0; i < 30; i++)
		pool_set_state(pool, idx[i], POOL_TX);
	pool_set_state_burst(pool, idx + 60, 20, POOL_TX);
	want[POOL_RX] = 0;
	want[POOL_BACKLOG] = 0;
	want[POOL_TX] = 80;
	census_is(pool, want, "after RX -> TX and BACKLOG -> TX");
	EQ(pool_state(pool, idx[0]), POOL_TX, "pool_state reads the last store");

	/* Hand-off: worker 1 takes the 20 and sends them. */
	for (int i = 80; i < 100; i++) {
		pool_set_owner(pool, idx[i], 1);
		pool_set_state(pool, idx[i], POOL_TX);
	}
	EQ(pool_owner(pool, idx[99]), 1, "hand-off: the receiving worker owns the buffer");
	want[POOL_HANDOFF] = 0;
	want[POOL_TX] = 100;
	census_is(pool, want, "after the hand-off");
	OK(pool_check(pool, &r) == 0 && r.counts[POOL_TX] == 100, "pool_check: 100 TX");

	/* Send completions: each worker returns what it sent. */
	pool_put_burst(c0, idx, 80);
	pool_put_burst(c1, idx + 80, 20);
	memset(want, 0, sizeof(want));
	want[POOL_FREE] = pool_depot_free(pool);
	want[POOL_CACHED] = c0->count + c1->count;
	OK(want[POOL_FREE] + want[POOL_CACHED] == NBUFS, "everything back in depot and caches");
	census_is(pool, want, "after the completions");
	OK(pool_check(pool, &r) == 0 && !memcmp(r.counts, want, sizeof(want)),
	   "pool_check: depot + caches = %u", NBUFS);
	pool_free(pool);
}

/* Expect pool_check to fail on buffer idx with a problem containing `what`. */
static void expect_problem(struct pool *pool, uint32_t idx, const char *what, const char *test)
{
	struct pool_report r;
	int ret = pool_check(pool, &r);

	OK(ret == -EUCLEAN && r.problem && strstr(r.problem, what) && r.idx == idx,
	   "pool_check detects %s (ret %d, \"%s\", idx %u)", test, ret, r.problem ? r.problem : "",
	   r.idx);
}

static void test_detection(void)
{
	struct pool *pool = new_pool();
	struct pool_cache *c0;
	struct pool_depot *d;
	struct pool_report r;
	uint32_t idx[4], cell_idx;
	uint64_t counts[POOL_NSTATES], total = 0;

	if (!OK(pool, "pool_new"))
		return;
	c0 = pool_cache(pool, 0);
	d = pool->depot;
	pool_get_burst(c0, idx, 4);

	/* Taken and never posted nor returned: a leak. */
	pool_set_state_burst(pool, idx, 3, POOL_RX);
	expect_problem(pool, idx[3], "CACHED outside", "a leaked buffer (taken, never posted)");
	pool_set_state(pool, idx[3], POOL_RX);
	OK(pool_check(pool, &r) == 0, "consistent once it is posted");

	/* FREE outside the depot. */
	pool_set_state(pool, idx[0], POOL_FREE);
	expect_problem(pool, idx[0], "FREE outside", "a FREE buffer outside the depot");
	pool_set_state(pool, idx[0], POOL_RX);

	/* Invalid state byte: the census skips it, the check names it. */
	pool_set_state(pool, idx[1], (enum pool_state)77);
	pool_census(pool, counts);
	for (int s = 0; s < POOL_NSTATES; s++)
		total += counts[s];
	EQ(total, NBUFS - 1, "census skips an invalid state byte");
	expect_problem(pool, idx[1], "invalid state", "an invalid state byte");
	pool_set_state(pool, idx[1], POOL_RX);

	/* Owner mismatch in a cache. */
	pool_put_burst(c0, idx, 1);
	pool_set_owner(pool, idx[0], 1);
	expect_problem(pool, idx[0], "owned by another worker", "a cached buffer owned elsewhere");
	pool_set_owner(pool, idx[0], 0);
	OK(pool_check(pool, &r) == 0, "consistent again");

	/* A buffer in the depot with an owner, then in the wrong state. */
	cell_idx = d->cells[atomic_load(&d->deq) & d->mask].idx;
	pool_set_owner(pool, cell_idx, 0);
	expect_problem(pool, cell_idx, "has an owner", "an owned buffer in the depot");
	pool_set_owner(pool, cell_idx, POOL_OWNER_NONE);
	pool_set_state(pool, cell_idx, POOL_TX);
	expect_problem(pool, cell_idx, "not in state FREE", "a TX buffer in the depot");
	pool_set_state(pool, cell_idx, POOL_FREE);

	/* A depot cell whose sequence number is off. */
	{
		struct pool_depot_cell *cell = &d->cells[atomic_load(&d->deq) & d->mask];
		uint32_t seq = atomic_load(&cell->seq);

		atomic_store(&cell->seq, seq + 5);
		expect_problem(pool, cell->idx, "not published", "a damaged depot cell");
		atomic_store(&cell->seq, seq);
	}
	OK(pool_check(pool, &r) == 0, "consistent again");

	/* Double put: the same buffer returned twice. */
	pool_put_burst(c0, idx + 1, 1);
	pool_put_burst(c0, idx + 1, 1);
	expect_problem(pool, idx[1], "held twice", "a double put");
	pool_free(pool);
}

int main(void)
{
	test_transitions();
	test_detection();
	return tap_done();
}
