// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* lhist.c - the log-linear histogram (see lhist.h). */
#include <math.h>
#include <string.h>

#include "lhist.h"

void lhist_reset(struct lhist *h)
{
	memset(h, 0, sizeof(*h));
}

void lhist_add(struct lhist *dst, const struct lhist *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	for (uint32_t i = 0; i < LHIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
}

uint64_t lhist_bucket_high(uint32_t i)
{
	uint32_t j, k, sub;

	if (i < LHIST_LINEAR)
		return i;
	j = i - LHIST_LINEAR;
	k = j / (1u << LHIST_SUB_BITS) + LHIST_SUB_BITS + 1u; /* the value's top bit */
	sub = j % (1u << LHIST_SUB_BITS) + (1u << LHIST_SUB_BITS);
	return (((uint64_t)sub + 1u) << (k - LHIST_SUB_BITS)) - 1u;
}

uint64_t lhist_percentile(const struct lhist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return 0;
	want = (uint64_t)ceil(q / 100.0 * (double)h->count);
	if (want < 1)
		want = 1;
	if (want > h->count)
		want = h->count;
	for (uint32_t i = 0; i < LHIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			uint64_t v = lhist_bucket_high(i);

			return v > h->max ? h->max : v < h->min ? h->min : v;
		}
	}
	return h->max;
}
