/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The sender table: who sends into each input channel (source GID or IPv4 address and
 * source QPN), with per-sender counters.
 *
 * Records live in per-worker arrays allocated at start (no allocation on the data
 * path). A worker inserts the senders of its channels lock-free (cds_lfht_add_unique);
 * each record has a single writer, the worker of its input channel. The control thread
 * ages idle senders out: it removes them from the table and, after a grace period
 * (call_rcu), marks the record free for its worker to reuse. A worker caches its last
 * sender per channel and drops the cache when the table's epoch moves.
 */
#ifndef ENGINE_SENDERS_H
#define ENGINE_SENDERS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

struct sender_key {
	uint32_t chan; /* side << 16 | channel index */
	uint32_t qpn;
	uint8_t addr[16]; /* source GID (IB) or ::ffff:IPv4 (RoCE) */
};

enum sender_state {
	SENDER_FREE,
	SENDER_LIVE,
	SENDER_RETIRING,
};

struct sender {
	struct cds_lfht_node node;
	struct sender_key key;
	/* What the data path writes per packet, in the record's first cache line with the
	 * key it compares (offsets 40-63): one line per packet, not two. */
	uint64_t pkts;
	uint64_t bytes;
	uint64_t last_ns;
	uint64_t first_ns;
	_Atomic uint32_t state;
	uint32_t worker;
	struct rcu_head rcu;
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct sender, last_ns) + sizeof(uint64_t) <= 64,
	       "the per-packet fields of a sender record share its first cache line");

struct sender_slab {
	struct sender *rec;
	uint32_t n;
	uint32_t cursor;
	/* Packets whose sender got no record because the slab was full (forwarded all the
	 * same). Single writer, the slab's worker: a relaxed load and store, no atomic
	 * read-modify-write; the control thread reads it with a relaxed load. */
	_Atomic uint64_t full;
} __attribute__((aligned(64)));

struct sender_table {
	struct cds_lfht *ht;
	struct sender_slab *slab; /* per worker */
	uint32_t nworkers;
	_Atomic uint64_t epoch; /* bumped when records are retired */
};

/* Create a table with room for `per_worker` senders per worker. NULL + errno. */
struct sender_table *sender_table_new(uint32_t nworkers, uint32_t per_worker);

/* Free the table once no worker uses it. Caller: a registered QSBR thread, online. */
void sender_table_free(struct sender_table *t);

static inline unsigned long sender_hash(const struct sender_key *k)
{
	uint64_t a, b, c, x;

	__builtin_memcpy(&a, &k->chan, 8); /* channel and QPN */
	__builtin_memcpy(&b, k->addr, 8);
	__builtin_memcpy(&c, k->addr + 8, 8);
	x = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ c * 0x165667b19e3779f9ull;
	/* Finalizer: every input bit reaches the low bits (the cache index). */
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	return (unsigned long)x;
}

/*
 * The record of sender k, inserted if new. Worker `worker` only, as a QSBR reader, for a
 * key of one of its own channels. NULL when the worker's slab is full (counted).
 */
struct sender *sender_get(struct sender_table *t, uint32_t worker, const struct sender_key *k,
			  unsigned long hash, uint64_t now_ns);

/* Retire senders idle for idle_ns (control thread, registered QSBR thread). */
size_t sender_table_age(struct sender_table *t, uint64_t now_ns, uint64_t idle_ns);

/*
 * Packets whose sender was not tracked because its worker's records were all in use,
 * summed over the workers (senders_untracked). Any thread; a snapshot.
 */
uint64_t sender_table_untracked(const struct sender_table *t);

/* Number of live senders (control thread). */
size_t sender_table_count(struct sender_table *t);

/* Call fn for every live sender (control thread, QSBR reader). */
void sender_table_each(struct sender_table *t, void (*fn)(const struct sender *, void *),
		       void *arg);

#endif /* ENGINE_SENDERS_H */
