// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "senders.h"

static int sender_match(struct cds_lfht_node *node, const void *key)
{
	const struct sender *s = caa_container_of(node, struct sender, node);

	return !memcmp(&s->key, key, sizeof(s->key));
}

struct sender_table *sender_table_new(uint32_t nworkers, uint32_t per_worker)
{
	struct sender_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nworkers = nworkers;
	t->slab = aligned_alloc(64, sizeof(*t->slab) * nworkers);
	t->ht = cds_lfht_new_flavor(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				    &urcu_qsbr_flavor, NULL);
	if (!t->slab || !t->ht)
		goto fail;
	memset(t->slab, 0, sizeof(*t->slab) * nworkers);
	for (uint32_t w = 0; w < nworkers; w++) {
		t->slab[w].rec = aligned_alloc(64, sizeof(struct sender) * per_worker);
		if (!t->slab[w].rec)
			goto fail;
		memset(t->slab[w].rec, 0, sizeof(struct sender) * per_worker);
		t->slab[w].n = per_worker;
	}
	return t;
fail:
	sender_table_free(t);
	errno = ENOMEM;
	return NULL;
}

void sender_table_free(struct sender_table *t)
{
	if (!t)
		return;
	if (t->ht) {
		struct cds_lfht_iter it;
		struct cds_lfht_node *n;

		/* cds_lfht_destroy refuses a table that still holds nodes. */
		cds_lfht_first(t->ht, &it);
		while ((n = cds_lfht_iter_get_node(&it))) {
			cds_lfht_next(t->ht, &it);
			cds_lfht_del(t->ht, n);
		}
		/* Not from a read-side critical section: an online QSBR thread is in one. */
		urcu_qsbr_thread_offline();
		if (cds_lfht_destroy(t->ht, NULL))
			abort(); /* impossible: the table is empty and no thread uses it */
		urcu_qsbr_thread_online();
	}
	for (uint32_t w = 0; t->slab && w < t->nworkers; w++)
		free(t->slab[w].rec);
	free(t->slab);
	free(t);
}

struct sender *sender_get(struct sender_table *t, uint32_t worker, const struct sender_key *k,
			  unsigned long hash, uint64_t now_ns)
{
	struct sender_slab *sl = &t->slab[worker];
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;
	struct sender *s = NULL;

	cds_lfht_lookup(t->ht, hash, sender_match, k, &it);
	n = cds_lfht_iter_get_node(&it);
	if (n)
		return caa_container_of(n, struct sender, node);
	/* A new sender: take a free record of this worker's slab. */
	for (uint32_t i = 0; i < sl->n; i++) {
		struct sender *r = &sl->rec[(sl->cursor + i) % sl->n];

		if (atomic_load_explicit(&r->state, memory_order_acquire) == SENDER_FREE) {
			s = r;
			sl->cursor = (sl->cursor + i + 1) % sl->n;
			break;
		}
	}
	if (!s) {
		atomic_store_explicit(&sl->full,
				      atomic_load_explicit(&sl->full, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		return NULL;
	}
	s->key = *k;
	s->pkts = 0;
	s->bytes = 0;
	s->first_ns = now_ns;
	s->last_ns = now_ns;
	s->worker = worker;
	cds_lfht_node_init(&s->node);
	atomic_store_explicit(&s->state, SENDER_LIVE, memory_order_relaxed);
	/* Only this worker inserts keys of its channels: the add cannot race a twin. */
	cds_lfht_add(t->ht, hash, &s->node);
	return s;
}

static void sender_free_rcu(struct rcu_head *head)
{
	struct sender *s = caa_container_of(head, struct sender, rcu);

	/* Pairs with the acquire load in sender_get: the worker may reuse it now. */
	atomic_store_explicit(&s->state, SENDER_FREE, memory_order_release);
}

size_t sender_table_age(struct sender_table *t, uint64_t now_ns, uint64_t idle_ns)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;
	size_t aged = 0;

	cds_lfht_first(t->ht, &it);
	while ((n = cds_lfht_iter_get_node(&it))) {
		struct sender *s = caa_container_of(n, struct sender, node);

		cds_lfht_next(t->ht, &it);
		/* last_ns is written by the worker: a racy read only delays aging. It may be
		 * later than now_ns (taken before the worker's clock read): not idle. */
		uint64_t last = __atomic_load_n(&s->last_ns, __ATOMIC_RELAXED);

		if (last >= now_ns || now_ns - last < idle_ns)
			continue;
		if (cds_lfht_del(t->ht, n))
			continue;
		atomic_store(&s->state, SENDER_RETIRING);
		/* Before the grace period starts: a worker that passes its next quiescent
		 * state sees the new epoch and drops its cached sender pointers. */
		atomic_fetch_add(&t->epoch, 1);
		urcu_qsbr_call_rcu(&s->rcu, sender_free_rcu);
		aged++;
	}
	return aged;
}

uint64_t sender_table_untracked(const struct sender_table *t)
{
	uint64_t n = 0;

	if (!t)
		return 0;
	for (uint32_t w = 0; w < t->nworkers; w++)
		n += atomic_load_explicit(&t->slab[w].full, memory_order_relaxed);
	return n;
}

size_t sender_table_count(struct sender_table *t)
{
	long split_before, split_after;
	unsigned long count;

	cds_lfht_count_nodes(t->ht, &split_before, &count, &split_after);
	return count;
}

void sender_table_each(struct sender_table *t, void (*fn)(const struct sender *, void *), void *arg)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	cds_lfht_first(t->ht, &it);
	while ((n = cds_lfht_iter_get_node(&it))) {
		fn(caa_container_of(n, struct sender, node), arg);
		cds_lfht_next(t->ht, &it);
	}
}
