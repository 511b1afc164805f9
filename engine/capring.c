// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Capture rings (capring.h). One anonymous mapping per ring, the header on its first
 * page and the records after it: its own pages, given back to the system at the free
 * (munmap), and no malloc arena of the thread that makes it (a thread's arena stays
 * reserved, and locked under mlockall, after the thread is gone).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* The header's share of the mapping: a whole page, so that the records are aligned. */
static size_t head_size(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t p = pg > 0 ? (size_t)pg : 4096;

	return (sizeof(struct cap_ring) + p - 1) / p * p;
}

uint64_t cap_ring_footprint(uint32_t n, uint32_t data_max)
{
	return head_size() + (uint64_t)ring_records(n) * rec_size(data_max);
}

void cap_ring_touch(struct cap_ring *r)
{
	memset(r->recs, 0, (size_t)(r->mask + 1) * r->rec_size);
}

struct cap_ring *cap_ring_new(uint32_t n, uint32_t data_max)
{
	struct cap_ring *r;
	uint32_t size = ring_records(n);
	size_t len;
	void *p;

	if (n > (1u << 20) || data_max > (1u << 16)) {
		errno = EINVAL;
		return NULL;
	}
	len = (size_t)cap_ring_footprint(n, data_max);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	r = p; /* zero-filled */
	r->mask = size - 1;
	r->data_max = data_max;
	r->rec_size = rec_size(data_max);
	r->recs = (uint8_t *)p + head_size();
	return r;
}

void cap_ring_free(struct cap_ring *r)
{
	if (!r)
		return;
	munmap(r, (size_t)cap_ring_footprint(r->mask + 1, r->data_max));
}
