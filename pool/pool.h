/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pool.h - the packet buffer pool.
 *
 * One contiguous data region of nbufs fixed-size buffers (optionally 2 MiB huge pages,
 * bound to the NIC's NUMA node), registered once with every device's protection domain,
 * so that a packet received on one fabric is sent from the same buffer on the other.
 * A buffer is named by its index (uint32_t, what the engine puts in wr_id); its
 * metadata (state byte, owner) lives in a separate array, never next to packet data.
 *
 * Free buffers live in per-worker caches (plain arrays owned by one thread: the fast
 * path is a copy) and in a shared depot (depot.h: a bounded lock-free MPMC ring with
 * per-cell sequence numbers, ABA-free) that caches refill from and spill to.
 *
 * Every buffer is in exactly one state at a time (enum pool_state); the pool sets
 * POOL_FREE and POOL_CACHED, the engine sets the others when it posts, backlogs or hands
 * off a buffer. The control thread counts states at any time (pool_census); tests and
 * debug builds verify the whole structure when the pool is quiescent (pool_check).
 *
 * Error convention: constructors return NULL with errno, int functions 0 / -errno, burst
 * functions counts. pool/ never logs. See docs/pool.md.
 */
#ifndef IB2ROCE_POOL_H
#define IB2ROCE_POOL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ibv_pd;
struct pool_depot;
struct pool_mr;

#define POOL_CACHE_LINE	    64
#define POOL_GRH_LEN	    40	 /* receive header in front of every UD packet */
#define POOL_MTU_MAX	    4096 /* largest IB/RoCE path MTU */
#define POOL_BUF_ALIGN	    64	 /* buffer sizes are rounded up to this */
#define POOL_BUF_MIN	    (POOL_GRH_LEN + POOL_MTU_MAX)
#define POOL_BUF_MAX	    (1u << 20)
#define POOL_BUF_DEFAULT    4160 /* POOL_BUF_MIN rounded up to POOL_BUF_ALIGN */
#define POOL_NBUFS_DEFAULT  200000
#define POOL_NBUFS_MAX	    (1u << 30)
#define POOL_CACHE_DEFAULT  512
#define POOL_CACHE_MAX	    (1u << 20)
#define POOL_WORKERS_MAX    0xfffe
#define POOL_OWNER_NONE	    0xffff /* owner of a buffer in the depot */
#define POOL_HUGE_PAGE_SIZE (2u << 20)

/* Where a buffer is. Exactly one state per buffer at any time. */
enum pool_state {
	POOL_FREE,    /* in the depot (set by the pool) */
	POOL_CACHED,  /* in a worker cache, or taken from it and not yet posted (pool) */
	POOL_RX,      /* posted as a receive (engine) */
	POOL_TX,      /* posted as a send (engine) */
	POOL_BACKLOG, /* waiting for send queue space (engine) */
	POOL_HANDOFF, /* in a cross-worker hand-off ring (engine) */
	POOL_NSTATES
};

struct pool_params {
	uint32_t nbufs;	     /* number of buffers, 1..POOL_NBUFS_MAX */
	uint32_t buf_size;   /* bytes per buffer, >= POOL_BUF_MIN, rounded up to 64 */
	int numa_node;	     /* NUMA node of the NIC; -1: no binding (also when no NUMA) */
	bool huge;	     /* back the data region with 2 MiB huge pages (MAP_HUGETLB) */
	uint32_t nworkers;   /* number of per-worker caches, 1..POOL_WORKERS_MAX */
	uint32_t cache_size; /* buffers a cache holds before spilling, 1..POOL_CACHE_MAX */
};

/* Per-buffer metadata; the array is apart from the data region. */
struct pool_meta {
	_Atomic uint8_t state; /* enum pool_state */
	uint8_t rsvd;
	_Atomic uint16_t owner; /* worker holding it, POOL_OWNER_NONE in the depot */
};

/*
 * The pool. Fields are private to pool/ (the inline functions below read them). The
 * first cache line is read by every worker and written by none after pool_new.
 */
struct pool {
	alignas(POOL_CACHE_LINE) uint8_t *data; /* nbufs * buf_size bytes */
	struct pool_meta *meta;			/* nbufs entries */
	uint32_t nbufs;
	uint32_t buf_size;
	uint64_t div_magic; /* ceil(2^64 / (buf_size / 64)): pool_index without a divide */
	struct pool_depot *depot;
	uint8_t *caches; /* nworkers caches, cache_stride bytes apart */
	size_t cache_stride;
	uint32_t nworkers;
	uint32_t cache_size;

	/* Setup and teardown only (control thread). */
	alignas(POOL_CACHE_LINE) size_t data_len; /* mapping length (page/huge page multiple) */
	void *meta_map;				  /* the metadata mapping, holding this struct */
	size_t meta_len;
	int numa_node; /* node the memory is bound to, -1 none */
	bool huge;
	struct pool_mr *mrs; /* one per registered PD */
	uint32_t nmrs, mrs_cap;
};

/*
 * A worker's cache: a stack of free buffer indices. Read and written only by the thread
 * that owns it (the stats by that thread too; others read them via pool_cache_stats).
 */
struct pool_cache {
	alignas(POOL_CACHE_LINE) _Atomic uint32_t count; /* buffers in slot[] */
	uint32_t size;					 /* spill threshold */
	uint32_t cap;	 /* slot[] entries: 2 * size, headroom when the depot is blocked */
	uint16_t worker; /* index of this cache, owner recorded in the metadata */
	struct pool_meta *meta;
	struct pool *pool;
	_Atomic uint64_t refills;     /* depot -> cache transfers */
	_Atomic uint64_t spills;      /* cache -> depot transfers */
	_Atomic uint64_t short_gets;  /* get_burst returned fewer buffers than asked */
	_Atomic uint64_t spill_waits; /* put_burst waited for a blocked depot (depot.h) */
	uint32_t slot[];
};

/* Counters of one cache, as read by another thread. */
struct pool_cache_stats {
	uint64_t refills;
	uint64_t spills;
	uint64_t short_gets;
	uint64_t spill_waits;
	uint32_t count; /* buffers in the cache */
};

/* What pool_check found. */
struct pool_report {
	uint64_t counts[POOL_NSTATES]; /* buffers per state, derived from the structure */
	const char *problem;	       /* NULL when consistent, else a static description */
	uint32_t idx;		       /* the buffer concerned, UINT32_MAX if none */
};

/*
 * pool_params_init - fill *p with the defaults: POOL_NBUFS_DEFAULT buffers of
 * POOL_BUF_DEFAULT bytes, no NUMA binding, no huge pages, 1 worker, caches of
 * POOL_CACHE_DEFAULT. Any thread. Cost: trivial.
 */
void pool_params_init(struct pool_params *p);

/*
 * pool_new - map and format a pool: the data region (huge pages if p->huge), bound to
 * p->numa_node with MPOL_BIND and prefaulted, so that no page fault happens on the data
 * path; the metadata (depot, caches, state array) in a second mapping on the same node.
 * All buffers start in the depot (POOL_FREE); caches start empty.
 * Thread: the control thread, before the workers start.
 * Returns the pool, or NULL with errno: EINVAL (a parameter out of range, an unknown
 * NUMA node), ENOMEM (no memory, no free huge pages: /proc/sys/vm/nr_hugepages), or
 * the errno of mmap/mbind/madvise. numa_node is ignored when libnuma reports no NUMA
 * support (numa_available() < 0).
 * Cost: one page fault per page of both mappings, the kernel zeroing the memory: 1.6 s
 * for 200000 x 4160 bytes on the 2-core CI VM. ibv_reg_mr would fault the pages in
 * anyway; here it happens under the NUMA binding and before the data path runs.
 */
struct pool *pool_new(const struct pool_params *p);

/*
 * pool_free - deregister every memory region (pool_register) and unmap the pool.
 * NULL is a no-op. Thread: the control thread, after the workers stopped and after every
 * QP that had buffers posted was destroyed (a NIC could still write into them).
 */
void pool_free(struct pool *pool);

/*
 * pool_register - register the whole data region with pd (ibv_reg_mr with
 * IBV_ACCESS_LOCAL_WRITE) and store its lkey in *lkey. Idempotent per PD: a second call
 * with the same pd returns the same lkey. Thread: the control thread (not concurrently
 * with pool_register/pool_unregister/pool_free on the same pool); workers are not
 * affected. Returns 0, or -errno from ibv_reg_mr (-ENOMEM when the table cannot grow);
 * *lkey is untouched on failure. Cost: one ibv_reg_mr (pins the region).
 */
int pool_register(struct pool *pool, struct ibv_pd *pd, uint32_t *lkey);

/*
 * pool_unregister - deregister the region registered with pd (before ibv_dealloc_pd,
 * e.g. on device removal). Thread: the control thread, as pool_register. Returns 0,
 * -ENOENT when pd was not registered, or -errno from ibv_dereg_mr (the registration is
 * kept then). Cost: one ibv_dereg_mr.
 */
int pool_unregister(struct pool *pool, struct ibv_pd *pd);

/*
 * pool_data - first byte of buffer idx (the 40-byte receive header, then the payload).
 * Any thread. Assumed: idx < nbufs. Cost: a multiply and an add.
 */
static inline uint8_t *pool_data(const struct pool *pool, uint32_t idx)
{
	return pool->data + (size_t)idx * pool->buf_size;
}

__extension__ typedef unsigned __int128 pool_u128;

/*
 * pool_index - index of the buffer holding address p (any byte of the buffer).
 * Any thread. Assumed: p points into the data region. Cost: a shift and a 64x64->128
 * multiply (Lemire's exact division by an invariant 32-bit divisor: the offset in
 * 64-byte units fits 32 bits, checked by pool_new).
 */
static inline uint32_t pool_index(const struct pool *pool, const void *p)
{
	uint32_t units = (uint32_t)(((uintptr_t)p - (uintptr_t)pool->data) / POOL_BUF_ALIGN);

	return (uint32_t)(((pool_u128)pool->div_magic * units) >> 64);
}

/* pool_nbufs / pool_buf_size - the pool's geometry. Any thread. Cost: one load. */
static inline uint32_t pool_nbufs(const struct pool *pool)
{
	return pool->nbufs;
}

static inline uint32_t pool_buf_size(const struct pool *pool)
{
	return pool->buf_size;
}

/*
 * pool_cache - the cache of worker `worker` (0..nworkers-1). Any thread may look it up;
 * only one thread at a time may use it (get/put), the worker that owns it. Handing a
 * cache to another thread needs a happens-before edge (e.g. pthread_join, a mutex).
 * Returns NULL with errno EINVAL when worker >= nworkers. Cost: trivial.
 */
struct pool_cache *pool_cache(struct pool *pool, uint32_t worker);

/* Slow paths of pool_get_burst/pool_put_burst (cache.c); call those instead. */
uint32_t pool_cache_get_slow(struct pool_cache *c, uint32_t *idx, uint32_t n);
void pool_cache_put_slow(struct pool_cache *c, const uint32_t *idx, uint32_t n);

/*
 * pool_take_burst - pool_get_burst (below) without the copy: points *idx at the indices
 * taken, in the cache's own slots when it holds them (valid until the next call on this
 * cache), else in tmp[] (n entries, filled from the depot). Same contract and result.
 * Cost: none per buffer when the cache holds n; else one depot burst (pool_get_burst).
 */
static inline uint32_t pool_take_burst(struct pool_cache *c, uint32_t *tmp, uint32_t n,
				       const uint32_t **idx)
{
	uint32_t count = atomic_load_explicit(&c->count, memory_order_relaxed);

	if (__builtin_expect(n <= count, 1)) {
		*idx = &c->slot[count - n];
		atomic_store_explicit(&c->count, count - n, memory_order_relaxed);
		return n;
	}
	*idx = tmp;
	return pool_cache_get_slow(c, tmp, n);
}

/*
 * pool_get_burst - take up to n free buffers into idx[]. From the cache (most recently
 * returned first); when it runs dry, refills it from the depot with what this call
 * still needs plus half a cache. The buffers are POOL_CACHED, owned by this worker,
 * until the caller sets their next state (pool_set_state).
 * Thread: the cache's owner only.
 * Returns the number taken (0..n). Fewer than n: the pool is exhausted, or momentarily
 * looks so while another thread is inside a depot operation; counted in short_gets.
 * Never final: a later call gets buffers once some are returned.
 * Cost: n index copies when the cache holds n; else one depot burst (one CAS, n + size/2
 * cells, n + size/2 metadata stores).
 */
static inline uint32_t pool_get_burst(struct pool_cache *c, uint32_t *idx, uint32_t n)
{
	const uint32_t *taken;
	uint32_t got = pool_take_burst(c, idx, n, &taken);

	if (taken != idx)
		memcpy(idx, taken, got * sizeof(*idx));
	return got;
}

/*
 * pool_put_burst - return n buffers (any state, held by this thread) to this worker's
 * cache; they become POOL_CACHED, owned by this worker. When the cache reaches its size,
 * the oldest half is spilled to the depot (POOL_FREE). If the depot is momentarily
 * blocked (depot.h) the cache uses its headroom (up to 2 * size) and, only if that is
 * full too, waits for the blocking thread (counted in spill_waits). No buffer is lost.
 * Thread: the cache's owner only. Assumed: each idx is held by the caller (not in a
 * cache or the depot, not posted).
 * Cost: n index copies and n metadata stores; on a spill one depot burst (one CAS,
 * size/2 cells) and a move of the remaining half.
 */
static inline void pool_put_burst(struct pool_cache *c, const uint32_t *idx, uint32_t n)
{
	uint32_t count = atomic_load_explicit(&c->count, memory_order_relaxed);

	if (__builtin_expect((uint64_t)count + n <= c->size, 1)) {
		/* In locals: the metadata stores would otherwise force reloads of c's fields. */
		struct pool_meta *meta = c->meta;
		uint32_t *slot = &c->slot[count];
		uint16_t worker = c->worker;

		/* Unrolled: the loop's own instructions are a third of its cost otherwise. */
#pragma GCC unroll 4
		for (uint32_t i = 0; i < n; i++) {
			struct pool_meta *m = &meta[idx[i]];

			slot[i] = idx[i];
			/* Relaxed: see pool_set_state. */
			atomic_store_explicit(&m->state, POOL_CACHED, memory_order_relaxed);
			atomic_store_explicit(&m->owner, worker, memory_order_relaxed);
		}
		atomic_store_explicit(&c->count, count + n, memory_order_relaxed);
		return;
	}
	pool_cache_put_slow(c, idx, n);
}

/*
 * pool_cache_flush - move every buffer of the cache to the depot, so that other workers
 * can use them: a worker going idle or stopping (a cache holds up to 2 * cache_size
 * buffers that no other worker can take). Thread: the cache's owner only.
 * Returns the number moved; fewer than the cache held only while the depot is
 * momentarily blocked (depot.h): the rest stays cached, call again later.
 * Cost: one depot burst (one CAS, count cells and metadata stores).
 */
uint32_t pool_cache_flush(struct pool_cache *c);

/*
 * pool_set_state - record that buffer idx is now in state s (POOL_RX when posted as a
 * receive, POOL_TX when posted as a send, POOL_BACKLOG, POOL_HANDOFF).
 * Thread: the buffer's current holder only. A relaxed store (a plain byte store): the
 * census may see it late, never torn. Buffers change holders through the depot
 * (release/acquire on its cells) or the engine's hand-off rings, which must publish with
 * release/acquire, so the next holder's stores are ordered after this one.
 * Assumed: idx < nbufs, s < POOL_NSTATES. Cost: one byte store.
 */
static inline void pool_set_state(struct pool *pool, uint32_t idx, enum pool_state s)
{
	atomic_store_explicit(&pool->meta[idx].state, (uint8_t)s, memory_order_relaxed);
}

/*
 * pool_meta_array / pool_meta_state - pool_set_state for loops: the metadata array read
 * once into a local (with -fno-strict-aliasing every store of such a loop would
 * otherwise reload pool->meta). Same contract as pool_set_state.
 */
static inline struct pool_meta *pool_meta_array(const struct pool *pool)
{
	return pool->meta;
}

static inline void pool_meta_state(struct pool_meta *meta, uint32_t idx, enum pool_state s)
{
	atomic_store_explicit(&meta[idx].state, (uint8_t)s, memory_order_relaxed);
}

/* pool_set_state_burst - pool_set_state for n buffers. Same contract. Cost: n stores. */
static inline void pool_set_state_burst(struct pool *pool, const uint32_t *idx, uint32_t n,
					enum pool_state s)
{
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&pool->meta[idx[i]].state, (uint8_t)s, memory_order_relaxed);
}

/*
 * pool_set_owner - record that worker now holds buffer idx (after a hand-off; the pool
 * sets it itself when a buffer enters a cache). Thread: the buffer's holder (the
 * receiving worker). Relaxed store, as pool_set_state. Cost: one store.
 */
static inline void pool_set_owner(struct pool *pool, uint32_t idx, uint32_t worker)
{
	atomic_store_explicit(&pool->meta[idx].owner, (uint16_t)worker, memory_order_relaxed);
}

/*
 * pool_state / pool_owner - buffer idx's state and owner as last stored. Any thread:
 * exact for the holder, a possibly stale but untorn value for others. Cost: one load.
 */
static inline enum pool_state pool_state(const struct pool *pool, uint32_t idx)
{
	/* Relaxed: pairs with nothing, a snapshot (see pool_set_state). */
	return (enum pool_state)atomic_load_explicit(&pool->meta[idx].state, memory_order_relaxed);
}

static inline uint32_t pool_owner(const struct pool *pool, uint32_t idx)
{
	return atomic_load_explicit(&pool->meta[idx].owner, memory_order_relaxed);
}

/*
 * pool_census - count the buffers in each state into counts[]. Any thread, any time
 * (the control thread, concurrently with the workers): it reads every state byte once
 * with a relaxed load, so every buffer is counted exactly once per scan and the counts
 * sum to nbufs, but a buffer moving during the scan is counted in either its old or its
 * new state: per-state totals may be off by the transitions in flight.
 * Cost: one pass over nbufs * 4 bytes of metadata (0.55 ms for 200000 buffers on the CI
 * VM).
 */
void pool_census(const struct pool *pool, uint64_t counts[POOL_NSTATES]);

/*
 * pool_check - verify the whole pool: every index in the depot and in each cache is
 * valid, appears once, and has state POOL_FREE (owner none) or POOL_CACHED (owner that
 * worker); depot cells carry the sequence numbers of their positions; every other
 * buffer is in state RX, TX, BACKLOG or HANDOFF (a POOL_FREE or POOL_CACHED buffer
 * outside the depot and the caches is a leak: taken and never posted or returned).
 * Fills r (counts derived from the structure: depot, caches, state bytes).
 * Thread: any, only when the pool is quiescent (no get/put/set_state running).
 * Returns 0 when consistent, -EUCLEAN with r->problem and r->idx set otherwise,
 * -ENOMEM when the scratch bitmap cannot be allocated.
 * Cost: O(nbufs + depot capacity), allocates nbufs / 8 bytes. Tests and debugging only.
 */
int pool_check(const struct pool *pool, struct pool_report *r);

/*
 * pool_cache_stats - snapshot of cache c's counters. Any thread (the control thread
 * reads workers' caches this way); each counter is read atomically, the set is not a
 * consistent cut. Cost: five loads.
 */
void pool_cache_stats(const struct pool_cache *c, struct pool_cache_stats *s);

/*
 * pool_depot_free - buffers in the depot (enqueued minus dequeued positions). Any
 * thread; a snapshot, exact only when quiescent. Cost: two loads.
 */
uint64_t pool_depot_free(const struct pool *pool);

#endif /* IB2ROCE_POOL_H */
