// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Capture rings (capring.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capring.h"

static uint32_t ring_records(uint32_t n)
{
	uint32_t size = 2;

	while (size < n)
		size <<= 1;
	return size;
}

static uint32_t rec_size(uint32_t data_max)
{
	return (uint32_t)((sizeof(struct cap_rec) + data_max + 63) & ~63ul);
}

uint64_t cap_ring_footprint(uint32_t n, uint32_t data_max)
{
	return sizeof(struct cap_ring) + (uint64_t)ring_records(n) * rec_size(data_max);
}

void cap_ring_touch(struct cap_ring *r)
{
	memset(r->recs, 0, (size_t)(r->mask + 1) * r->rec_size);
}

struct cap_ring *cap_ring_new(uint32_t n, uint32_t data_max)
{
	struct cap_ring *r;
	uint32_t size = 2;

	if (n > (1u << 20) || data_max > (1u << 16)) {
		errno = EINVAL;
		return NULL;
	}
	while (size < n)
		size <<= 1;
	r = aligned_alloc(64, sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->mask = size - 1;
	r->data_max = data_max;
	r->rec_size = rec_size(data_max);
	r->recs = aligned_alloc(64, (size_t)size * r->rec_size);
	if (!r->recs) {
		free(r);
		return NULL;
	}
	return r;
}

void cap_ring_free(struct cap_ring *r)
{
	if (!r)
		return;
	free(r->recs);
	free(r);
}
