/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lhist.h - a log-linear histogram of nanosecond values, in the manner of HdrHistogram
 * with 2 significant decimal digits: values below 256 have a bucket each; above, every
 * power of two is split into 128 linear buckets, so a bucket is at most 1/128 (< 1 %) of
 * its value wide. Covers 0 .. 2^64-1 in LHIST_BUCKETS (7424) buckets.
 *
 * Memory: the buckets come in LHIST_CHUNKS chunks of LHIST_CHUNK counters (1 KiB each):
 * chunk 0 holds the values 0..127, chunk 1 128..255, chunk k - 6 the power of two
 * [2^k, 2^(k+1)) for k = 8..63. A chunk is allocated when a value first falls into it,
 * so an empty histogram is its header (struct lhist, under 0.5 KiB, no page of its own)
 * and one whose values span n powers of two adds n KiB; the most, every chunk, is 58 KiB.
 * mclisten keeps one per stream: with thousands of streams, creating a stream costs a
 * small calloc rather than 58 KiB of fresh pages (page faults and a memset that delayed
 * the first packets of new streams by hundreds of ms with 4096 streams).
 *
 * Out of memory: when the chunk a value needs cannot be allocated, the value still counts
 * in count, min and max (exact, they need no memory) but in no bucket: it is counted in
 * lost, and the percentiles are those of the other count - lost values. Nothing crashes
 * and nothing is dropped silently; the allocation is tried again by the next value that
 * needs the chunk. A listener keeps receiving (its packet accounting needs no histogram)
 * and reports lost beside the percentiles (mclisten: latency_ns.unrecorded in --json).
 *
 * A zero-filled struct lhist is a valid empty histogram (static or calloc'ed).
 * One owner thread; no function is thread-safe.
 */
#ifndef TOOLS_LHIST_H
#define TOOLS_LHIST_H

#include <stddef.h>
#include <stdint.h>

#define LHIST_SUB_BITS 7u		      /* 128 buckets per power of two */
#define LHIST_LINEAR   (2u << LHIST_SUB_BITS) /* values below this: one bucket each */
#define LHIST_BUCKETS  (LHIST_LINEAR + (64u - LHIST_SUB_BITS - 1u) * (1u << LHIST_SUB_BITS))
#define LHIST_CHUNK    (1u << LHIST_SUB_BITS)	     /* counters per chunk */
#define LHIST_CHUNKS   (LHIST_BUCKETS / LHIST_CHUNK) /* 58: two linear, 56 powers of two */

struct lhist {
	uint64_t count;		       /* values recorded, lost included */
	uint64_t min, max;	       /* of all count values; min 0 while empty */
	uint64_t lost;		       /* values in no bucket: their chunk's allocation failed */
	uint64_t *chunk[LHIST_CHUNKS]; /* bucket i: chunk[i / LHIST_CHUNK][i % LHIST_CHUNK] */
};

/*
 * lhist_new - a new empty histogram (its header only), NULL with errno ENOMEM.
 * lhist_free - free h and its chunks; NULL is a no-op.
 */
struct lhist *lhist_new(void);
void lhist_free(struct lhist *h);

/*
 * lhist_reset - empty h. It keeps its chunks, zeroed (a cost in proportion to the chunks
 * it has): an interval histogram reset every interval allocates nothing on the next
 * interval's record path. lhist_free releases them.
 */
void lhist_reset(struct lhist *h);

/* lhist_bucket - the bucket index of value v: LHIST_SUB_BITS significant bits of it. */
static inline uint32_t lhist_bucket(uint64_t v)
{
	/* s = 0 for v < 256 (bucket v), else top bit - LHIST_SUB_BITS: bucket s * 128 + the
	 * next 7 bits below the top one, 128 added back by the top bit itself. */
	unsigned s = 63u - (unsigned)__builtin_clzll(v | (LHIST_LINEAR - 1u)) - LHIST_SUB_BITS;

	return (uint32_t)((s << LHIST_SUB_BITS) + (v >> s));
}

/* lhist_record_slow - lhist_record's path for a chunk not yet allocated (internal). */
void lhist_record_slow(struct lhist *h, uint32_t i);

/*
 * lhist_record - count one value: a clz, a chunk pointer load and test, an increment.
 * The first value of a chunk allocates it (1 KiB, calloc; lost on failure, see above).
 */
static inline void lhist_record(struct lhist *h, uint64_t v)
{
	uint32_t i = lhist_bucket(v);
	uint64_t *c = h->chunk[i / LHIST_CHUNK];

	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	if (__builtin_expect(c != NULL, 1))
		c[i % LHIST_CHUNK]++;
	else
		lhist_record_slow(h, i);
}

/*
 * lhist_add - add the counts of src to dst (allocating dst's chunks that src has and dst
 * lacks). 0, or -ENOMEM when a chunk could not be allocated: its values are counted in
 * dst->lost, dst stays consistent (count, min, max include all of src).
 */
int lhist_add(struct lhist *dst, const struct lhist *src);

/*
 * lhist_percentile - the value at percentile q (0..100] of the count - lost values in
 * buckets: the highest value of the bucket holding the ceil(q/100 * (count - lost))-th
 * smallest of them, kept within [min, max]. 0 when no value is in a bucket.
 */
uint64_t lhist_percentile(const struct lhist *h, double q);

/* lhist_bucket_high - the highest value that falls into bucket i. */
uint64_t lhist_bucket_high(uint32_t i);

/* lhist_bytes - the memory h holds: its header and its chunks (not malloc's overhead). */
size_t lhist_bytes(const struct lhist *h);

#endif /* TOOLS_LHIST_H */
