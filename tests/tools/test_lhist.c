// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_lhist - the latency histogram of mclisten (tools/lhist.h): buckets cover every
 * value once and in order, a bucket is under 1 % of its values wide (2 significant
 * digits), percentiles pick the right bucket and never leave [min, max]; against a sorted
 * array over the whole range (small values, every power of two, values near 2^63 and
 * 2^64), merges of sparse histograms, reset; the memory a histogram holds (a chunk per
 * power of two it saw); an allocation that fails on the record and merge paths (calloc
 * wrapped: -Wl,--wrap=calloc in meson.build). TAP.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "tap.h"
#include "lhist.h"

/* ---- calloc, failing on demand (the linker sends lhist.c's calls here) ---- */

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static int calloc_fail; /* calls to fail */

void *__wrap_calloc(size_t n, size_t size)
{
	if (calloc_fail) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* ---- Helpers ---- */

#define CHUNK_BYTES (LHIST_CHUNK * sizeof(uint64_t))
#define NVALS	    100000u

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) /* xorshift64* */
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

/* A value in [2^k, 2^(k+1)) (k = 0..63). */
static uint64_t rnd_pow2(unsigned k)
{
	uint64_t lo = 1ull << k;

	return lo + (rnd() & (lo - 1u));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const double qs[] = {0.0001, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};

/*
 * The number of percentiles of h that differ from those of the n values v (sorted here):
 * the reference is the ceil(q/100 * n)-th smallest value r; lhist gives the top of r's
 * bucket kept within [min, max], so at least r and at most r + r/128 (exact below 256).
 * Also count, min and max.
 */
static int ref_diff(const struct lhist *h, uint64_t *v, size_t n)
{
	int bad = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	if (h->count != n || h->lost || h->min != v[0] || h->max != v[n - 1])
		return 1;
	for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		uint64_t want = (uint64_t)ceil(qs[k] / 100.0 * (double)n), r, p, top;

		if (want < 1)
			want = 1;
		if (want > n)
			want = n;
		r = v[want - 1];
		p = lhist_percentile(h, qs[k]);
		top = lhist_bucket_high(lhist_bucket(r));
		if (top > h->max)
			top = h->max;
		if (p != top || p < r || p - r > (r < LHIST_LINEAR ? 0 : r >> LHIST_SUB_BITS)) {
			printf("#   q=%g: %" PRIu64 " for %" PRIu64 "\n", qs[k], p, r);
			bad++;
		}
	}
	return bad;
}

/* Record the n values v into h (emptied first). */
static void fill(struct lhist *h, const uint64_t *v, size_t n)
{
	lhist_reset(h);
	for (size_t i = 0; i < n; i++)
		lhist_record(h, v[i]);
}

/* ---- Tests ---- */

/* The bucket layout, unchanged by the chunks: contiguous, ordered, narrow. */
static void test_buckets(void)
{
	uint32_t i;
	int bad = 0;

	/* Bucket boundaries: high(i) + 1 starts bucket i + 1; no gap, no overlap. */
	for (i = 0; i + 1 < LHIST_BUCKETS && !bad; i++)
		if (lhist_bucket(lhist_bucket_high(i)) != i ||
		    lhist_bucket(lhist_bucket_high(i) + 1) != i + 1)
			bad = 1;
	CHECK(!bad);
	CHECK_EQ(lhist_bucket(0), 0);
	CHECK_EQ(lhist_bucket(UINT64_MAX), LHIST_BUCKETS - 1);
	CHECK_EQ(lhist_bucket_high(LHIST_BUCKETS - 1), UINT64_MAX);
	CHECK_EQ(LHIST_CHUNKS * LHIST_CHUNK, LHIST_BUCKETS);
	/* A chunk per power of two from 2^8 on: its first and last value. */
	bad = 0;
	for (unsigned k = LHIST_SUB_BITS + 1; k < 64 && !bad; k++) {
		uint64_t lo = 1ull << k, hi = lo + (lo - 1u);

		if (lhist_bucket(lo) / LHIST_CHUNK != k - LHIST_SUB_BITS + 1 ||
		    lhist_bucket(lo) % LHIST_CHUNK != 0 ||
		    lhist_bucket(hi) / LHIST_CHUNK != k - LHIST_SUB_BITS + 1 ||
		    lhist_bucket(hi) % LHIST_CHUNK != LHIST_CHUNK - 1)
			bad = 1;
	}
	CHECK(!bad);
	/* Width under 1 % above the linear range. */
	bad = 0;
	for (i = LHIST_LINEAR + 1; i < LHIST_BUCKETS && !bad; i++) {
		uint64_t lo = lhist_bucket_high(i - 1) + 1, hi = lhist_bucket_high(i);

		if ((double)(hi - lo + 1) / (double)lo > 0.01)
			bad = 1;
	}
	CHECK(!bad);
}

/* The cases of before the chunks (a zero-filled histogram is valid). */
static void test_basic(void)
{
	static struct lhist h, h2;
	uint32_t i;

	/* Small values are exact. */
	for (i = 1; i <= 100; i++)
		lhist_record(&h, i);
	CHECK_EQ(h.count, 100);
	CHECK_EQ(h.min, 1);
	CHECK_EQ(h.max, 100);
	CHECK_EQ(lhist_percentile(&h, 50), 50);
	CHECK_EQ(lhist_percentile(&h, 90), 90);
	CHECK_EQ(lhist_percentile(&h, 99), 99);
	CHECK_EQ(lhist_percentile(&h, 99.99), 100);
	CHECK_EQ(lhist_percentile(&h, 100), 100);
	/* Large values: within 1 %, never above max. */
	lhist_reset(&h);
	for (i = 0; i < 1000; i++)
		lhist_record(&h, 1000000 + (uint64_t)i * 1000); /* 1 ms .. 1.999 ms */
	{
		uint64_t p50 = lhist_percentile(&h, 50), p999 = lhist_percentile(&h, 99.9);

		CHECK(p50 >= 1499000 && p50 <= 1499000 * 101 / 100);
		CHECK(p999 >= 1998000 && p999 <= 1999000);
		CHECK_EQ(lhist_percentile(&h, 100), 1999000);
	}
	/* One outlier in 10 000 shows in max only: p99.99 is the 9 999th value. */
	lhist_reset(&h);
	for (i = 0; i < 9999; i++)
		lhist_record(&h, 5000);
	lhist_record(&h, 7000000);
	CHECK(lhist_percentile(&h, 99.9) >= 5000 && lhist_percentile(&h, 99.9) <= 5000 * 101 / 100);
	CHECK(lhist_percentile(&h, 99.99) <= 5000 * 101 / 100);
	CHECK_EQ(lhist_percentile(&h, 100), 7000000);
	/* Merging. */
	lhist_record(&h2, 3);
	CHECK_EQ(lhist_add(&h2, &h), 0);
	CHECK_EQ(h2.count, 10001);
	CHECK_EQ(h2.min, 3);
	CHECK_EQ(h2.max, 7000000);
	lhist_reset(&h);
	CHECK_EQ(lhist_percentile(&h, 50), 0);
	for (uint32_t c = 0; c < LHIST_CHUNKS; c++) {
		free(h.chunk[c]);
		free(h2.chunk[c]);
	}
}

/* Percentiles against a sorted array, over the whole range; the memory each takes. */
static void test_reference(uint64_t *v)
{
	struct lhist *h = lhist_new();
	size_t n;
	int bad;

	CHECK(h != NULL);
	CHECK_EQ(h->count, 0);
	CHECK_EQ(lhist_bytes(h), sizeof(*h)); /* a new histogram: its header only */
	CHECK(sizeof(*h) < 512);
	CHECK_EQ(lhist_percentile(h, 50), 0);

	/* Every small value, several times, and 0. */
	for (n = 0; n < 4 * LHIST_LINEAR; n++)
		v[n] = n % LHIST_LINEAR;
	fill(h, v, n);
	CHECK_EQ(ref_diff(h, v, n), 0);
	CHECK_EQ(lhist_bytes(h), sizeof(*h) + 2 * CHUNK_BYTES);

	/* Each power of two alone: one chunk (2^0..2^6 share chunk 0), right percentiles. */
	for (unsigned k = 0; k < 64; k++) {
		struct lhist *p = lhist_new();

		for (n = 0; n < 1000; n++)
			v[n] = rnd_pow2(k);
		fill(p, v, n);
		bad = ref_diff(p, v, n);
		if (!OK(!bad && lhist_bytes(p) == sizeof(*p) + CHUNK_BYTES,
			"power of two k alone: percentiles, one chunk"))
			printf("#   k=%u: %d percentiles off, %zu bytes\n", k, bad, lhist_bytes(p));
		lhist_free(p);
	}

	/* Log-uniform over the whole range, with the extremes. */
	for (n = 0; n < NVALS - 6; n++)
		v[n] = rnd() >> (rnd() % 64);
	v[n++] = 0;
	v[n++] = 1;
	v[n++] = (1ull << 63) - 1u;
	v[n++] = 1ull << 63;
	v[n++] = UINT64_MAX - 1u;
	v[n++] = UINT64_MAX;
	fill(h, v, n);
	CHECK_EQ(ref_diff(h, v, n), 0);
	CHECK_EQ(lhist_bytes(h), sizeof(*h) + LHIST_CHUNKS * CHUNK_BYTES);

	/* Near 2^63: two powers of two, two chunks. */
	{
		struct lhist *p = lhist_new();

		for (n = 0; n < 20000; n++)
			v[n] = (1ull << 63) - 10000u + n;
		fill(p, v, n);
		CHECK_EQ(ref_diff(p, v, n), 0);
		CHECK_EQ(lhist_bytes(p), sizeof(*p) + 2 * CHUNK_BYTES);
		CHECK_EQ(lhist_percentile(p, 100), (1ull << 63) + 9999u);
		/* Only the top values: the top chunk, max exact. */
		lhist_free(p);
		p = lhist_new();
		for (n = 0; n < 1000; n++)
			v[n] = UINT64_MAX - n * 1000003u;
		fill(p, v, n);
		CHECK_EQ(ref_diff(p, v, n), 0);
		CHECK_EQ(lhist_bytes(p), sizeof(*p) + CHUNK_BYTES);
		CHECK_EQ(lhist_percentile(p, 100), UINT64_MAX);
		lhist_free(p);
	}

	/* A latency-like stream: 10 us .. 2 ms spans 8 powers of two, 8 KiB (was 58 KiB). */
	lhist_free(h); /* reset keeps the chunks */
	h = lhist_new();
	for (n = 0; n < NVALS; n++)
		v[n] = 10000u + rnd() % 1990000u;
	fill(h, v, n);
	CHECK_EQ(ref_diff(h, v, n), 0);
	CHECK_EQ(lhist_bytes(h), sizeof(*h) + 8 * CHUNK_BYTES); /* 2^13 .. 2^20 */
	lhist_free(h);
	lhist_free(NULL);
}

/* Merges of sparse histograms equal the histogram of all their values. */
static void test_merge(uint64_t *v)
{
	struct lhist *a = lhist_new(), *b = lhist_new(), *all = lhist_new();
	size_t na = 3000, nb = 5000, n;

	for (n = 0; n < na; n++)
		v[n] = rnd_pow2(10);
	for (; n < na + nb - 2; n++)
		v[n] = rnd_pow2(40);
	v[n++] = 7;
	v[n++] = 1ull << 62;
	for (n = 0; n < na; n++)
		lhist_record(a, v[n]);
	for (; n < na + nb; n++)
		lhist_record(b, v[n]);
	CHECK_EQ(lhist_bytes(a), sizeof(*a) + CHUNK_BYTES);
	CHECK_EQ(lhist_bytes(b), sizeof(*b) + 3 * CHUNK_BYTES);
	/* Into an empty histogram, then the other: all chunks of both, percentiles of all. */
	CHECK_EQ(lhist_add(all, a), 0);
	CHECK_EQ(lhist_add(all, b), 0);
	CHECK_EQ(lhist_bytes(all), sizeof(*all) + 4 * CHUNK_BYTES);
	CHECK_EQ(ref_diff(all, v, n), 0);
	/* The sources are unchanged; an empty source changes nothing. */
	CHECK_EQ(a->count, na);
	CHECK_EQ(b->count, nb);
	CHECK_EQ(lhist_bytes(a), sizeof(*a) + CHUNK_BYTES);
	lhist_reset(a);
	CHECK_EQ(lhist_add(all, a), 0);
	CHECK_EQ(all->count, na + nb);
	/* Into a histogram that has values: b += all (b's values twice, a's once). */
	CHECK_EQ(lhist_add(b, all), 0);
	CHECK_EQ(b->count, na + 2 * nb);
	CHECK_EQ(b->min, 7);
	CHECK_EQ(b->max, 1ull << 62);
	CHECK_EQ(lhist_percentile(b, 100), 1ull << 62);
	CHECK_EQ(lhist_percentile(b, 0.0001), 7);
	lhist_free(a);
	lhist_free(b);
	lhist_free(all);
}

/* Reset keeps the chunks, zeroed; the histogram after it is as new. */
static void test_reset(void)
{
	struct lhist *h = lhist_new();
	size_t bytes;

	for (unsigned k = 20; k < 30; k++)
		lhist_record(h, rnd_pow2(k));
	bytes = lhist_bytes(h);
	CHECK_EQ(bytes, sizeof(*h) + 10 * CHUNK_BYTES);
	lhist_reset(h);
	CHECK_EQ(h->count, 0);
	CHECK_EQ(h->min, 0);
	CHECK_EQ(h->max, 0);
	CHECK_EQ(h->lost, 0);
	CHECK_EQ(lhist_percentile(h, 50), 0);
	CHECK_EQ(lhist_bytes(h), bytes);
	/* No count left in a kept chunk; the first value sets min again. */
	lhist_record(h, 3000000);
	lhist_record(h, 2000000);
	CHECK_EQ(h->min, 2000000);
	CHECK_EQ(h->max, 3000000);
	CHECK_EQ(lhist_percentile(h, 50), lhist_bucket_high(lhist_bucket(2000000)));
	CHECK_EQ(lhist_percentile(h, 100), 3000000);
	lhist_free(h);
}

/* A chunk that cannot be allocated: the value counts (count, min, max) but in lost. */
static void test_nomem(void)
{
	struct lhist *h = lhist_new(), *d = lhist_new();

	lhist_record(h, 1000);
	lhist_record(h, 1001);
	calloc_fail = 1;
	lhist_record(h, 5000000); /* a new chunk: lost */
	lhist_record(h, 1002);	  /* an existing one: counted */
	lhist_record(h, 5000001);
	calloc_fail = 0;
	CHECK_EQ(h->count, 5);
	CHECK_EQ(h->lost, 2);
	CHECK_EQ(h->min, 1000);
	CHECK_EQ(h->max, 5000001);
	CHECK_EQ(lhist_percentile(h, 100), lhist_bucket_high(lhist_bucket(1002))); /* 1003 */
	CHECK_EQ(lhist_percentile(h, 50), lhist_bucket_high(lhist_bucket(1001)));
	CHECK_EQ(lhist_bytes(h), sizeof(*h) + CHUNK_BYTES);
	/* The next value that needs the chunk gets it. */
	lhist_record(h, 5000002);
	CHECK_EQ(h->lost, 2);
	CHECK_EQ(lhist_bytes(h), sizeof(*h) + 2 * CHUNK_BYTES);
	CHECK_EQ(lhist_percentile(h, 100), 5000002);
	/* All values lost: no percentile. */
	calloc_fail = 1;
	lhist_record(d, 42);
	CHECK_EQ(d->count, 1);
	CHECK_EQ(d->lost, 1);
	CHECK_EQ(lhist_percentile(d, 50), 0);
	/* A merge that cannot allocate d's chunks: their values in d's lost, -ENOMEM. */
	CHECK_EQ(lhist_add(d, h), -ENOMEM);
	calloc_fail = 0;
	CHECK_EQ(d->count, 7);
	CHECK_EQ(d->lost, 1 + 2 + 4);
	CHECK_EQ(d->min, 42);
	CHECK_EQ(d->max, 5000002);
	CHECK_EQ(lhist_percentile(d, 50), 0);
	CHECK_EQ(lhist_add(d, h), 0);
	CHECK_EQ(d->count, 13);
	CHECK_EQ(d->lost, 7 + 2);
	CHECK_EQ(lhist_percentile(d, 100), 5000002);
	/* No histogram at all. */
	calloc_fail = 1;
	CHECK(lhist_new() == NULL);
	calloc_fail = 0;
	lhist_free(h);
	lhist_free(d);
}

int main(void)
{
	uint64_t *v = malloc(NVALS * sizeof(*v));

	if (!v)
		return 1;
	test_buckets();
	test_basic();
	test_reference(v);
	test_merge(v);
	test_reset();
	test_nomem();
	free(v);
	return tap_done();
}
