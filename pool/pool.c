// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pool.c - pool lifecycle: parameter checks, the data region and the metadata mapping
 * (NUMA binding, huge pages, prefaulting), formatting, teardown.
 *
 * Two mappings, both bound to the pool's NUMA node:
 *   data:     nbufs * buf_size bytes of packet buffers, nothing else;
 *   metadata: struct pool | struct pool_depot | nworkers caches | depot cells |
 *             per-buffer metadata, each part cache-line aligned.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "depot.h"
#include "pool.h"
#include "pool_pvt.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

_Static_assert(sizeof(struct pool_meta) == 4, "metadata entry is one 32-bit word");
_Static_assert(sizeof(struct pool_depot_cell) == 8, "depot cell is 8 bytes");
_Static_assert(POOL_BUF_DEFAULT % POOL_BUF_ALIGN == 0 && POOL_BUF_DEFAULT >= POOL_BUF_MIN,
	       "default buffer size holds a receive header and a full MTU");
_Static_assert(POOL_WORKERS_MAX < POOL_OWNER_NONE, "worker ids fit the owner field");
_Static_assert(POOL_NSTATES <= 256, "states fit the state byte");
_Static_assert(offsetof(struct pool, data_len) == POOL_CACHE_LINE,
	       "the fields the data path reads fill exactly the first cache line");
_Static_assert(offsetof(struct pool_cache, slot) == POOL_CACHE_LINE,
	       "a cache's fields and counters fill one line, its slots start on the next");

void pool_params_init(struct pool_params *p)
{
	memset(p, 0, sizeof(*p));
	p->nbufs = POOL_NBUFS_DEFAULT;
	p->buf_size = POOL_BUF_DEFAULT;
	p->numa_node = -1;
	p->huge = false;
	p->nworkers = 1;
	p->cache_size = POOL_CACHE_DEFAULT;
}

static size_t pool_align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/*
 * The node to bind to: -1 when none was asked or libnuma reports no NUMA support;
 * -EINVAL for a node that does not exist.
 */
static int pool_numa_node(int node)
{
	if (node < 0 || numa_available() < 0)
		return -1;
	if (node > numa_max_node() || !numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)node))
		return -EINVAL;
	return node;
}

/*
 * Bind [addr, addr + len) to node (MPOL_BIND), before the first touch. Returns 0 or
 * -errno. The kernel reads maxnode - 1 bits: one spare word keeps the mask in bounds.
 */
static int pool_bind(void *addr, size_t len, int node)
{
	const size_t bits = 8 * sizeof(unsigned long);
	size_t word, words;
	unsigned long *mask;
	int ret = 0;

	if (node < 0)
		return 0;
	word = (size_t)node / bits;
	words = word + 2;
	mask = calloc(words, sizeof(*mask));
	if (!mask)
		return -ENOMEM;
	mask[word] = 1UL << ((size_t)node % bits);
	if (mbind(addr, len, MPOL_BIND, mask, (words - 1) * bits + 1, 0))
		ret = -errno;
	free(mask);
	return ret;
}

/*
 * Fault in every page now (placement follows the binding; no fault on the data path).
 * MADV_POPULATE_WRITE reports failure instead of raising SIGBUS; kernels before 5.14
 * do not know it (EINVAL): touch each page then.
 */
static int pool_populate(void *addr, size_t len, size_t page)
{
	if (!madvise(addr, len, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)
		return errno == EFAULT || errno == EHWPOISON ? -ENOMEM : -errno;
	for (size_t off = 0; off < len; off += page)
		((volatile uint8_t *)addr)[off] = 0;
	return 0;
}

/* Map len bytes, bound to node and prefaulted. NULL with errno on failure. */
static void *pool_map(size_t len, int node, bool huge)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;
	int ret;

	if (huge) {
		/* No MAP_NORESERVE: the huge pages are reserved now or mmap fails (ENOMEM). */
		flags |= MAP_HUGETLB | MAP_HUGE_2MB;
		page = POOL_HUGE_PAGE_SIZE;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	ret = pool_bind(p, len, node);
	if (!ret)
		ret = pool_populate(p, len, page);
	if (ret) {
		munmap(p, len);
		errno = -ret;
		return NULL;
	}
	return p;
}

static int pool_params_check(const struct pool_params *p)
{
	if (!p || p->nbufs == 0 || p->nbufs > POOL_NBUFS_MAX)
		return -EINVAL;
	if (p->buf_size < POOL_BUF_MIN || p->buf_size > POOL_BUF_MAX)
		return -EINVAL;
	if (p->nworkers == 0 || p->nworkers > POOL_WORKERS_MAX)
		return -EINVAL;
	if (p->cache_size == 0 || p->cache_size > POOL_CACHE_MAX)
		return -EINVAL;
	if (p->numa_node < -1)
		return -EINVAL;
	return 0;
}

struct pool *pool_new(const struct pool_params *p)
{
	struct pool_layout l;
	struct pool *pool;
	uint32_t buf_size;
	size_t data_len;
	uint8_t *meta;
	int node, err;

	err = pool_params_check(p);
	if (err) {
		errno = -err;
		return NULL;
	}
	buf_size = (uint32_t)pool_align_up(p->buf_size, POOL_BUF_ALIGN);
	/* pool_index works in 64-byte units of 32 bits: the region stays below 256 GiB. */
	if ((uint64_t)p->nbufs * buf_size / POOL_BUF_ALIGN > UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	node = pool_numa_node(p->numa_node);
	if (node == -EINVAL) {
		errno = EINVAL;
		return NULL;
	}

	pool_layout(&l, p->nbufs, p->nworkers, p->cache_size);
	meta = pool_map(l.len, node, false);
	if (!meta)
		return NULL;

	data_len = pool_align_up((size_t)p->nbufs * buf_size,
				 p->huge ? POOL_HUGE_PAGE_SIZE : (size_t)sysconf(_SC_PAGESIZE));
	pool = (struct pool *)meta;
	pool->data = pool_map(data_len, node, p->huge);
	if (!pool->data) {
		err = errno;
		munmap(meta, l.len);
		errno = err;
		return NULL;
	}
	pool->data_len = data_len;
	pool->meta_map = meta;
	pool->meta_len = l.len;
	pool->numa_node = node;
	pool->huge = p->huge;
	pool->nbufs = p->nbufs;
	pool->buf_size = buf_size;
	pool->div_magic = UINT64_MAX / (buf_size / POOL_BUF_ALIGN) + 1;
	pool->nworkers = p->nworkers;
	pool->cache_size = p->cache_size;
	pool->cache_stride = l.cache_stride;
	pool->caches = meta + l.off_caches;
	pool->meta = (struct pool_meta *)(meta + l.off_meta);
	pool->depot = (struct pool_depot *)(meta + l.off_depot);
	pool->mrs = NULL;
	pool->nmrs = pool->mrs_cap = 0;

	pool_depot_init(pool->depot, (struct pool_depot_cell *)(meta + l.off_cells), l.depot_cap);
	for (uint32_t w = 0; w < p->nworkers; w++) {
		struct pool_cache *c = pool_cache(pool, w);

		atomic_init(&c->count, 0);
		c->size = p->cache_size;
		c->cap = 2 * p->cache_size;
		c->worker = (uint16_t)w;
		c->meta = pool->meta;
		c->pool = pool;
		atomic_init(&c->refills, 0);
		atomic_init(&c->spills, 0);
		atomic_init(&c->short_gets, 0);
		atomic_init(&c->spill_waits, 0);
	}
	/* Every buffer starts in the depot, in index order. */
	for (uint32_t i = 0; i < p->nbufs; i++) {
		atomic_init(&pool->meta[i].state, POOL_FREE);
		pool->meta[i].rsvd = 0;
		atomic_init(&pool->meta[i].owner, POOL_OWNER_NONE);
	}
	for (uint32_t i = 0; i < p->nbufs;) {
		uint32_t batch[256], n = p->nbufs - i < 256 ? p->nbufs - i : 256;

		for (uint32_t j = 0; j < n; j++)
			batch[j] = i + j;
		/* Single-threaded and sized for every buffer: always takes the whole batch. */
		i += pool_depot_mp_enqueue_burst(pool->depot, batch, n);
	}
	return pool;
}

void pool_free(struct pool *pool)
{
	if (!pool)
		return;
	pool_mr_release_all(pool);
	munmap(pool->data, pool->data_len);
	/* Last: the mapping holds *pool. */
	munmap(pool->meta_map, pool->meta_len);
}

void pool_layout(struct pool_layout *l, uint32_t nbufs, uint32_t nworkers, uint32_t cache_size)
{
	size_t off = 0;

	l->depot_cap = pool_depot_cap(nbufs);
	l->cache_stride =
		pool_align_up(sizeof(struct pool_cache) + 2 * (size_t)cache_size * sizeof(uint32_t),
			      POOL_CACHE_LINE);
	off = pool_align_up(sizeof(struct pool), POOL_CACHE_LINE);
	l->off_depot = off;
	off = pool_align_up(off + sizeof(struct pool_depot), POOL_CACHE_LINE);
	l->off_caches = off;
	off += (size_t)nworkers * l->cache_stride;
	l->off_cells = off;
	off = pool_align_up(off + (size_t)l->depot_cap * sizeof(struct pool_depot_cell),
			    POOL_CACHE_LINE);
	l->off_meta = off;
	off += (size_t)nbufs * sizeof(struct pool_meta);
	l->len = pool_align_up(off, (size_t)sysconf(_SC_PAGESIZE));
}
