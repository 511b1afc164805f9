// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Memory regions.
 *
 * A NIC writes received packets straight into registered memory. The simulation does
 * the same from the sending process: a region registered with IBV_ACCESS_LOCAL_WRITE
 * (required for receive buffers) has its pages re-backed by a shared file. The pages
 * keep their address and contents (the current contents are copied into the file, then
 * the file is mapped over the range with MAP_FIXED); other processes of the fabric map
 * the file and write receives into it. Regions without local write are not re-backed:
 * they can only be sent from.
 *
 * Pages are re-backed once per process ("extents"): a second region inside an extent
 * reuses it; a region overlapping extents partly gets one new extent covering the union.
 * Known limits, documented in docs/simfabric.md: writes by other threads to the same
 * pages while ibv_reg_mr copies them can be lost; after fork() parent and child share
 * the re-backed pages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sf.h"
#include "sf_priv.h"

struct sf_extent {
	uintptr_t start, end;
	uint32_t serial;
	uint32_t refs; /* registered regions using it */
	bool live;
};

static struct sf_extent *g_ext;
static size_t g_next, g_ext_cap;
static pthread_mutex_t g_ext_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per MR slot: this process's mapping of the owner's backing file. */
struct sf_mr_map {
	_Atomic uint64_t key; /* gen << 32 | backing, 0: none */
	uint8_t *base;
	uint64_t blen;
};
static struct sf_mr_map g_mr_maps[SF_MAX_MRS];
static pthread_mutex_t g_mr_map_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t sf_page(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* Is every page of [s, e) mapped? (a real ibv_reg_mr pins them: EFAULT otherwise) */
static bool sf_range_mapped(uintptr_t s, uintptr_t e)
{
	size_t np = (e - s) / sf_page();
	unsigned char *vec = malloc(np ? np : 1);
	bool ok;

	if (!vec)
		return false;
	ok = mincore((void *)s, e - s, vec) == 0;
	free(vec);
	return ok;
}

/*
 * Copy whole pages that may hold memory the application never allocated (allocator
 * headers, sanitizer redzones): word by word, outside the address sanitizer, and not
 * turned into a memcpy call (which the sanitizer would intercept).
 */
__attribute__((no_sanitize_address, optimize("no-tree-loop-distribute-patterns"))) static void
sf_copy_pages(uint64_t *dst, const uint64_t *src, size_t len)
{
	for (size_t i = 0; i < len / sizeof(uint64_t); i++)
		dst[i] = ((const volatile uint64_t *)src)[i];
}

/*
 * Re-back [s, e) (page aligned) with a shared file; returns the extent. Called with
 * g_ext_lock held.
 */
static struct sf_extent *sf_extent_get(struct sf_fabric *fab, uintptr_t s, uintptr_t e)
{
	uintptr_t ns = s, ne = e;
	struct sf_extent *x;
	uint32_t serial;
	void *tmp, *p;
	int fd;

	for (size_t i = 0; i < g_next; i++) {
		x = &g_ext[i];
		if (x->live && x->start <= s && e <= x->end) {
			x->refs++;
			return x;
		}
	}
	for (size_t i = 0; i < g_next; i++) {
		x = &g_ext[i];
		if (x->live && x->start < ne && ns < x->end) {
			ns = x->start < ns ? x->start : ns;
			ne = x->end > ne ? x->end : ne;
		}
	}
	if (!sf_range_mapped(ns, ne)) {
		errno = EFAULT;
		return NULL;
	}
	if (g_next == g_ext_cap) {
		size_t cap = g_ext_cap ? 2 * g_ext_cap : 16;
		struct sf_extent *n = realloc(g_ext, cap * sizeof(*n));

		if (!n) {
			errno = ENOMEM;
			return NULL;
		}
		g_ext = n;
		g_ext_cap = cap;
	}
	serial = sf_serial_next();
	tmp = sf_obj_create("mem", serial, ne - ns, &fd);
	if (!tmp)
		return NULL;
	sf_copy_pages(tmp, (const uint64_t *)ns, ne - ns);
	/* Populated: a registered region's pages are pinned (fabric.c, sf_obj_create). */
	p = mmap((void *)ns, ne - ns, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
		 fd, 0);
	munmap(tmp, ne - ns);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;

	/* Extents merged into the new one: move their regions over. */
	uint32_t refs = 1;

	for (size_t i = 0; i < g_next; i++) {
		char path[256];

		x = &g_ext[i];
		if (!x->live || !(x->start >= ns && x->end <= ne))
			continue;
		x->live = false;
		refs += x->refs;
		sf_lock(fab);
		for (uint32_t m = 0; m < SF_MAX_MRS; m++) {
			struct sf_mr *r = &fab->mrs[m];

			if (r->own.pid == getpid() && r->backing == x->serial) {
				r->backing = serial;
				r->base = ns;
				r->blen = ne - ns;
			}
		}
		sf_unlock(fab);
		sf_obj_path(path, sizeof(path), "mem", getpid(), x->serial);
		unlink(path);
	}
	x = &g_ext[g_next++];
	x->start = ns;
	x->end = ne;
	x->serial = serial;
	x->refs = refs;
	x->live = true;
	return x;
}

/*
 * A region using extent `serial` was deregistered. The last one retires the extent: its
 * pages stay mapped to the (unlinked) file, which is harmless to the application, and a
 * later registration of the same addresses (the memory may have been freed and reused)
 * re-backs them afresh.
 */
static void sf_extent_put(uint32_t serial)
{
	pthread_mutex_lock(&g_ext_lock);
	for (size_t i = 0; i < g_next; i++) {
		struct sf_extent *x = &g_ext[i];
		char path[256];

		if (!x->live || x->serial != serial || --x->refs)
			continue;
		x->live = false;
		sf_obj_path(path, sizeof(path), "mem", getpid(), serial);
		unlink(path);
		/* Compact: retired extents are never looked at again. */
		g_ext[i] = g_ext[--g_next];
		break;
	}
	pthread_mutex_unlock(&g_ext_lock);
}

static struct ibv_mr *sf_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct sf_context *c = sf_ctx_of(pd->context);
	struct sf_fabric *fab = c->fab;
	struct sf_extent *x = NULL;
	struct sf_mr_priv *m;
	struct sf_mr *r;
	uint32_t i;

	if (!addr && length) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	if ((access & IBV_ACCESS_LOCAL_WRITE) && length) {
		uintptr_t s = (uintptr_t)addr & ~(sf_page() - 1);
		uintptr_t e = ((uintptr_t)addr + length + sf_page() - 1) & ~(sf_page() - 1);

		pthread_mutex_lock(&g_ext_lock);
		x = sf_extent_get(fab, s, e);
		if (!x) {
			int err = errno;

			pthread_mutex_unlock(&g_ext_lock);
			free(m);
			errno = err;
			return NULL;
		}
	}
	sf_lock(fab);
	for (i = 0; i < SF_MAX_MRS; i++)
		if (!fab->mrs[i].own.pid)
			break;
	if (i == SF_MAX_MRS) {
		sf_unlock(fab);
		if (x)
			pthread_mutex_unlock(&g_ext_lock);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	r = &fab->mrs[i];
	sf_owner_claim(&r->own);
	r->dev = c->dev;
	r->access = access;
	r->addr = (uintptr_t)addr;
	r->length = length;
	r->lkey = (i << 8) | (uint32_t)(r->own.gen & 0xff);
	r->backing = x ? x->serial : 0;
	r->base = x ? x->start : 0;
	r->blen = x ? x->end - x->start : 0;
	sf_unlock(fab);
	if (x)
		pthread_mutex_unlock(&g_ext_lock);

	m->index = i;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.handle = i;
	m->mr.lkey = r->lkey;
	m->mr.rkey = r->lkey;
	(void)iova;
	return &m->mr;
}

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
SF_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return sf_reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

SF_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					 uint64_t iova, int access)
{
	return sf_reg_mr(pd, addr, length, iova, (unsigned int)access);
}

SF_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	return sf_reg_mr(pd, addr, length, iova, access);
}

SF_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct sf_mr_priv *m = (struct sf_mr_priv *)mr;
	struct sf_context *c = sf_ctx_of(mr->context);
	struct sf_fabric *fab = c->fab;

	uint32_t backing;

	sf_lock(fab);
	backing = fab->mrs[m->index].backing;
	sf_owner_release(&fab->mrs[m->index].own);
	sf_unlock(fab);
	if (backing)
		sf_extent_put(backing);
	free(m);
	return 0;
}

struct sf_mr *sf_mr_check(struct sf_fabric *fab, uint32_t lkey, uint64_t addr, uint64_t len,
			  int32_t pid)
{
	uint32_t i = lkey >> 8;
	struct sf_mr *r;

	if (i >= SF_MAX_MRS)
		return NULL;
	r = &fab->mrs[i];
	if (r->own.pid != pid || r->lkey != lkey)
		return NULL;
	if (addr < r->addr || addr + len > r->addr + r->length || addr + len < addr)
		return NULL;
	return r;
}

uint8_t *sf_mr_peer_ptr(struct sf_fabric *fab, uint32_t mri, uint64_t addr, uint64_t len)
{
	struct sf_mr *r = &fab->mrs[mri];
	struct sf_mr_map *mm = &g_mr_maps[mri];
	uint64_t key = (r->own.gen << 32) | r->backing;
	uint8_t *base;

	if (r->own.pid == sf_self_pid())
		return (uint8_t *)(uintptr_t)addr; /* our own memory: loopback */
	if (!r->backing || addr < r->base || addr + len > r->base + r->blen)
		return NULL;
	if (atomic_load_explicit(&mm->key, memory_order_acquire) != key) {
		pthread_mutex_lock(&g_mr_map_lock);
		if (atomic_load(&mm->key) != key) {
			/* The previous mapping stays: a concurrent sender may still use it. */
			base = sf_obj_map("mem", r->own.pid, r->backing, r->blen);
			if (!base) {
				pthread_mutex_unlock(&g_mr_map_lock);
				return NULL;
			}
			mm->base = base;
			mm->blen = r->blen;
			atomic_store_explicit(&mm->key, key, memory_order_release);
		}
		pthread_mutex_unlock(&g_mr_map_lock);
	}
	if (addr + len > r->base + mm->blen)
		return NULL;
	return mm->base + (addr - r->base);
}
