// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* lhist.c - the log-linear histogram (see lhist.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lhist.h"

_Static_assert(LHIST_BUCKETS % LHIST_CHUNK == 0, "a chunk per power of two");
_Static_assert(LHIST_CHUNKS == 58, "2 linear chunks and 56 powers of two");

struct lhist *lhist_new(void)
{
	return calloc(1, sizeof(struct lhist)); /* errno ENOMEM from calloc */
}

void lhist_free(struct lhist *h)
{
	if (!h)
		return;
	for (uint32_t c = 0; c < LHIST_CHUNKS; c++)
		free(h->chunk[c]);
	free(h);
}

void lhist_reset(struct lhist *h)
{
	h->count = h->min = h->max = h->lost = 0;
	for (uint32_t c = 0; c < LHIST_CHUNKS; c++)
		if (h->chunk[c])
			memset(h->chunk[c], 0, LHIST_CHUNK * sizeof(uint64_t));
}

/* The chunk of bucket i, allocated if need be; NULL when out of memory. */
static uint64_t *chunk_get(struct lhist *h, uint32_t i)
{
	uint64_t **c = &h->chunk[i / LHIST_CHUNK];

	if (!*c)
		*c = calloc(LHIST_CHUNK, sizeof(uint64_t));
	return *c;
}

__attribute__((noinline, cold)) void lhist_record_slow(struct lhist *h, uint32_t i)
{
	uint64_t *c = chunk_get(h, i);

	if (c)
		c[i % LHIST_CHUNK]++;
	else
		h->lost++;
}

int lhist_add(struct lhist *dst, const struct lhist *src)
{
	int r = 0;

	if (!src->count)
		return 0;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->lost += src->lost;
	for (uint32_t c = 0; c < LHIST_CHUNKS; c++) {
		const uint64_t *s = src->chunk[c];
		uint64_t *d;

		if (!s)
			continue;
		d = chunk_get(dst, c * LHIST_CHUNK);
		for (uint32_t j = 0; j < LHIST_CHUNK; j++) {
			if (d)
				d[j] += s[j];
			else
				dst->lost += s[j];
		}
		if (!d)
			r = -ENOMEM;
	}
	return r;
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
	uint64_t n = h->count - h->lost, want, seen = 0;

	if (!n)
		return 0;
	want = (uint64_t)ceil(q / 100.0 * (double)n);
	if (want < 1)
		want = 1;
	if (want > n)
		want = n;
	for (uint32_t c = 0; c < LHIST_CHUNKS; c++) {
		const uint64_t *b = h->chunk[c];

		if (!b)
			continue;
		for (uint32_t j = 0; j < LHIST_CHUNK; j++) {
			seen += b[j];
			if (seen >= want) {
				uint64_t v = lhist_bucket_high(c * LHIST_CHUNK + j);

				return v > h->max ? h->max : v < h->min ? h->min : v;
			}
		}
	}
	return h->max;
}

size_t lhist_bytes(const struct lhist *h)
{
	size_t n = sizeof(*h);

	for (uint32_t c = 0; c < LHIST_CHUNKS; c++)
		if (h->chunk[c])
			n += LHIST_CHUNK * sizeof(uint64_t);
	return n;
}
