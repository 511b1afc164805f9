// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pool_new - pool lifecycle: defaults, parameter checks, layout of the data region,
 * pool_data/pool_index, NUMA binding, huge pages (success when this machine has enough
 * free huge pages, ENOMEM otherwise).
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "tap.h"

static struct pool_params params(uint32_t nbufs, uint32_t buf_size, int node)
{
	struct pool_params p;

	pool_params_init(&p);
	p.nbufs = nbufs;
	p.buf_size = buf_size;
	p.numa_node = node;
	p.nworkers = 2;
	p.cache_size = 32;
	return p;
}

static void test_defaults(void)
{
	struct pool_params p;

	memset(&p, 0xff, sizeof(p));
	pool_params_init(&p);
	OK(p.nbufs == 200000 && p.buf_size == 4160 && p.numa_node == -1 && !p.huge &&
		   p.nworkers == 1 && p.cache_size == 512,
	   "pool_params_init: 200000 x 4160 bytes, no node, no huge pages, 1 worker, cache 512");
	pool_free(NULL);
	OK(1, "pool_free(NULL) is a no-op");
}

static void expect_einval(struct pool_params p, const char *what)
{
	struct pool *pool;

	errno = 0;
	pool = pool_new(&p);
	OK(!pool && errno == EINVAL, "rejected with EINVAL: %s (errno %d)", what, errno);
	pool_free(pool);
}

static void test_invalid(void)
{
	struct pool_params p = params(64, POOL_BUF_DEFAULT, -1);

	errno = 0;
	OK(!pool_new(NULL) && errno == EINVAL, "pool_new(NULL): EINVAL");
	p.nbufs = 0;
	expect_einval(p, "nbufs 0");
	p.nbufs = POOL_NBUFS_MAX + 1;
	expect_einval(p, "nbufs above POOL_NBUFS_MAX");
	p.nbufs = POOL_NBUFS_MAX;
	expect_einval(p, "region of 2^30 x 4160 bytes (pool_index range)");
	p = params(64, POOL_BUF_MIN - 1, -1);
	expect_einval(p, "buf_size 4135 cannot hold a header and a 4096 MTU");
	p = params(64, POOL_BUF_MAX + 1, -1);
	expect_einval(p, "buf_size above POOL_BUF_MAX");
	p = params(64, POOL_BUF_DEFAULT, -1);
	p.nworkers = 0;
	expect_einval(p, "0 workers");
	p.nworkers = POOL_WORKERS_MAX + 1;
	expect_einval(p, "more workers than owner ids");
	p = params(64, POOL_BUF_DEFAULT, -1);
	p.cache_size = 0;
	expect_einval(p, "cache_size 0");
	p.cache_size = POOL_CACHE_MAX + 1;
	expect_einval(p, "cache_size above POOL_CACHE_MAX");
	p = params(64, POOL_BUF_DEFAULT, -2);
	expect_einval(p, "numa_node -2");
	if (numa_available() >= 0) {
		p = params(64, POOL_BUF_DEFAULT, numa_max_node() + 1);
		expect_einval(p, "numa_node beyond the last node");
	}
}

/* Every buffer: aligned, contiguous, writable; pool_index inverts pool_data anywhere in it. */
static void check_geometry(struct pool *pool, uint32_t want_size, const char *name)
{
	uint32_t n = pool_nbufs(pool), bs = pool_buf_size(pool);
	uint32_t bad_addr = 0, bad_index = 0, bad_data = 0;
	uint8_t *base = pool_data(pool, 0);

	EQ(bs, want_size, "%s: buffer size rounded up to a multiple of 64", name);
	OK(((uintptr_t)base & 4095) == 0, "%s: data region page aligned", name);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *b = pool_data(pool, i);
		uint32_t offs[] = {0, 1, POOL_GRH_LEN, 63, 64, bs / 2, bs - 64, bs - 1};

		if (b != base + (size_t)i * bs || ((uintptr_t)b & 63))
			bad_addr++;
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
			if (pool_index(pool, b + offs[k]) != i)
				bad_index++;
		memset(b, (int)(i & 0xff), bs);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *b = pool_data(pool, i);

		if (b[0] != (i & 0xff) || b[bs - 1] != (i & 0xff))
			bad_data++;
	}
	EQ(bad_addr, 0, "%s: buffers contiguous and 64-byte aligned", name);
	EQ(bad_index, 0, "%s: pool_index(pool_data(i) + off) == i for 8 offsets of each buffer",
	   name);
	EQ(bad_data, 0, "%s: all %u buffers writable, no overlap", name, n);
}

static void test_basic(void)
{
	struct pool_params p = params(1000, POOL_BUF_MIN, -1);
	uint64_t counts[POOL_NSTATES];
	struct pool_report r;
	struct pool *pool;

	pool = pool_new(&p);
	if (!OK(pool, "pool_new 1000 x 4136 bytes, no node (errno %d)", errno))
		return;
	EQ(pool_nbufs(pool), 1000, "nbufs");
	check_geometry(pool, 4160, "4136 bytes");
	EQ(pool_depot_free(pool), 1000, "every buffer starts in the depot");
	pool_census(pool, counts);
	EQ(counts[POOL_FREE], 1000, "census: 1000 FREE");
	OK(pool_check(pool, &r) == 0 && r.counts[POOL_FREE] == 1000 && !r.problem,
	   "pool_check: consistent, 1000 FREE");
	OK(pool_cache(pool, 0) && pool_cache(pool, 1) && pool_cache(pool, 0) != pool_cache(pool, 1),
	   "two distinct worker caches");
	OK(((uintptr_t)pool_cache(pool, 1) & 63) == 0 && ((uintptr_t)pool_cache(pool, 0) & 63) == 0,
	   "caches cache-line aligned");
	errno = 0;
	OK(!pool_cache(pool, 2) && errno == EINVAL, "pool_cache(nworkers): NULL, EINVAL");
	OK((uintptr_t)pool->meta < (uintptr_t)pool_data(pool, 0) ||
		   (uintptr_t)pool->meta >= (uintptr_t)pool_data(pool, 0) + pool->data_len,
	   "metadata outside the data region");
	pool_free(pool);
}

static void test_sizes(void)
{
	static const uint32_t sizes[][2] = {
		{4160, 4160},
		{4161, 4224},
		{8192, 8192},
		{9000, 9024},
		{POOL_BUF_MAX, POOL_BUF_MAX},
	};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pool_params p = params(sizes[i][0] >= 65536 ? 16 : 257, sizes[i][0], -1);
		struct pool *pool = pool_new(&p);
		char name[32];

		snprintf(name, sizeof(name), "buf_size %u", sizes[i][0]);
		if (!OK(pool, "pool_new %s", name))
			continue;
		check_geometry(pool, sizes[i][1], name);
		pool_free(pool);
	}
}

/*
 * pool_index divides by buf_size / 64 with a multiply (Lemire): check the identity it
 * relies on across the whole 32-bit range of offsets, for the divisors pool_new allows.
 */
static void test_fastdiv(void)
{
	static const uint32_t divs[] = {65, 66, 67, 127, 128, 129, 141, 4099, 16384};
	uint32_t bad = 0, checked = 0;
	uint64_t x = 88172645463325252ULL;

	for (size_t i = 0; i < sizeof(divs) / sizeof(divs[0]); i++) {
		uint64_t magic = UINT64_MAX / divs[i] + 1;

		for (uint32_t k = 0; k < 200000; k++) {
			uint32_t u;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			if (k < 64)
				u = UINT32_MAX - k;
			else if (k < 128)
				u = (k - 64) * divs[i] - 1 + (k & 1);
			else
				u = (uint32_t)x;
			checked++;
			if ((uint32_t)(((pool_u128)magic * u) >> 64) != u / divs[i])
				bad++;
		}
	}
	EQ(bad, 0, "multiply-shift division exact for %u offsets up to 2^32-1", checked);
}

static void test_numa(void)
{
	struct pool_params p = params(512, POOL_BUF_DEFAULT, 0);
	unsigned long mask[16] = {0};
	int node = -1, mode = -1;
	struct pool *pool;
	uint8_t *last;

	if (numa_available() < 0) {
		pool = pool_new(&p);
		OK(pool, "numa_node 0 ignored without NUMA support");
		pool_free(pool);
		return;
	}
	pool = pool_new(&p);
	if (!OK(pool, "pool_new on node 0 (errno %d)", errno))
		return;
	last = pool_data(pool, 511) + POOL_BUF_DEFAULT - 1;
	OK(get_mempolicy(&mode, mask, sizeof(mask) * 8, pool_data(pool, 0), MPOL_F_ADDR) == 0 &&
		   mode == MPOL_BIND && mask[0] == 1,
	   "data region policy MPOL_BIND to node 0 (mode %d mask %#lx)", mode, mask[0]);
	OK(get_mempolicy(&node, NULL, 0, last, MPOL_F_NODE | MPOL_F_ADDR) == 0 && node == 0,
	   "last data page resident on node 0 (prefaulted)");
	node = -1;
	OK(get_mempolicy(&node, NULL, 0, pool->meta, MPOL_F_NODE | MPOL_F_ADDR) == 0 && node == 0,
	   "metadata on node 0");
	mode = -1;
	OK(get_mempolicy(&mode, mask, sizeof(mask) * 8, pool->meta, MPOL_F_ADDR) == 0 &&
		   mode == MPOL_BIND,
	   "metadata policy MPOL_BIND");
	check_geometry(pool, POOL_BUF_DEFAULT, "node 0");
	pool_free(pool);

	p.numa_node = -1;
	pool = pool_new(&p);
	mode = -1;
	OK(pool &&
		   get_mempolicy(&mode, mask, sizeof(mask) * 8, pool_data(pool, 0), MPOL_F_ADDR) ==
			   0 &&
		   mode == MPOL_DEFAULT,
	   "numa_node -1: no binding (mode %d)", mode);
	pool_free(pool);
}

static uint64_t huge_pages_free(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	uint64_t n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %" SCNu64, &n) == 1)
			break;
	fclose(f);
	return n;
}

static void test_huge(void)
{
	struct pool_params p = params(1000, POOL_BUF_DEFAULT, -1);
	uint64_t need =
		((uint64_t)1000 * POOL_BUF_DEFAULT + POOL_HUGE_PAGE_SIZE - 1) / POOL_HUGE_PAGE_SIZE;
	uint64_t avail = huge_pages_free();
	struct pool *pool;

	p.huge = true;
	errno = 0;
	pool = pool_new(&p);
	DIAG("huge pages free: %" PRIu64 ", needed: %" PRIu64, avail, need);
	if (avail >= need) {
		OK(pool && ((uintptr_t)pool_data(pool, 0) & (POOL_HUGE_PAGE_SIZE - 1)) == 0,
		   "huge pages available: pool on 2 MiB aligned huge pages");
		if (pool)
			check_geometry(pool, POOL_BUF_DEFAULT, "huge");
	} else {
		OK(!pool && errno == ENOMEM,
		   "no huge pages: pool_new fails cleanly with ENOMEM (errno %d)", errno);
	}
	pool_free(pool);
	/* The failure leaves nothing behind: a normal pool still works. */
	p.huge = false;
	pool = pool_new(&p);
	OK(pool, "pool without huge pages after the huge page attempt");
	pool_free(pool);
}

static void test_many(void)
{
	struct pool_params p = params(300, POOL_BUF_DEFAULT, -1);
	struct pool *a = pool_new(&p), *b = pool_new(&p);

	OK(a && b && pool_data(a, 0) != pool_data(b, 0), "two pools side by side");
	if (a && b) {
		memset(pool_data(a, 0), 0xaa, (size_t)300 * POOL_BUF_DEFAULT);
		memset(pool_data(b, 0), 0x55, (size_t)300 * POOL_BUF_DEFAULT);
		OK(pool_data(a, 299)[POOL_BUF_DEFAULT - 1] == 0xaa && pool_data(b, 0)[0] == 0x55,
		   "their regions do not overlap");
	}
	pool_free(a);
	pool_free(b);
}

int main(void)
{
	test_defaults();
	test_invalid();
	test_basic();
	test_sizes();
	test_fastdiv();
	test_numa();
	test_huge();
	test_many();
	return tap_done();
}
