/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lhist.h - a log-linear histogram of nanosecond values, in the manner of HdrHistogram
 * with 2 significant decimal digits: values below 256 have a bucket each; above, every
 * power of two is split into 128 linear buckets, so a bucket is at most 1/128 (< 1 %) of
 * its value wide. Covers 0 .. 2^64-1 in LHIST_BUCKETS counters (58 KiB).
 *
 * One owner thread; lhist_record() costs a count-leading-zeros and an increment.
 */
#ifndef TOOLS_LHIST_H
#define TOOLS_LHIST_H

#include <stdint.h>

#define LHIST_SUB_BITS 7u		      /* 128 buckets per power of two */
#define LHIST_LINEAR   (2u << LHIST_SUB_BITS) /* values below this: one bucket each */
#define LHIST_BUCKETS  (LHIST_LINEAR + (64u - LHIST_SUB_BITS - 1u) * (1u << LHIST_SUB_BITS))

struct lhist {
	uint64_t count;
	uint64_t min, max;
	uint64_t b[LHIST_BUCKETS];
};

/* lhist_reset - empty h. */
void lhist_reset(struct lhist *h);

/* lhist_bucket - the bucket index of value v. */
static inline uint32_t lhist_bucket(uint64_t v)
{
	unsigned k, shift;

	if (v < LHIST_LINEAR)
		return (uint32_t)v;
	k = 63u - (unsigned)__builtin_clzll(v); /* >= LHIST_SUB_BITS + 1 */
	shift = k - LHIST_SUB_BITS;
	return LHIST_LINEAR + (k - LHIST_SUB_BITS - 1u) * (1u << LHIST_SUB_BITS) +
	       (uint32_t)((v >> shift) - (1u << LHIST_SUB_BITS));
}

/* lhist_record - count one value. */
static inline void lhist_record(struct lhist *h, uint64_t v)
{
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->b[lhist_bucket(v)]++;
}

/* lhist_add - add the counts of src to dst. */
void lhist_add(struct lhist *dst, const struct lhist *src);

/*
 * lhist_percentile - the value at percentile q (0..100]: the highest value of the bucket
 * holding the ceil(q/100 * count)-th smallest value, never above max. 0 when empty.
 */
uint64_t lhist_percentile(const struct lhist *h, double q);

/* lhist_bucket_high - the highest value that falls into bucket i. */
uint64_t lhist_bucket_high(uint32_t i);

#endif /* TOOLS_LHIST_H */
