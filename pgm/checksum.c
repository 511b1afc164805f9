/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * checksum.c - the PGM checksum: RFC 1071 ones' complement sum over the whole packet,
 * checksum field taken as zero, no pseudo-header (RFC 3208 section 8).
 *
 * The sum is accumulated over native 64-bit words (pgm_csum_acc() in pgm.h, inline for
 * the data path's pgm_csum_ok()) and folded here; a ones' complement sum is byte-order
 * independent up to a final byte swap (RFC 1071 section 2(B)), so one swap turns the
 * native result into the big-endian one.
 */
#include <string.h>

#include "pgm.h"
#include "pgm_pvt.h"

#define CSUM_LOW16   0xffffu
#define CSUM_SHIFT16 16u

static inline uint16_t csum_fold(uint64_t sum)
{
	/* 64 -> 33 -> 17 -> 16 bits (the last add cannot carry again). */
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & CSUM_LOW16) + (sum >> CSUM_SHIFT16);
	sum = (sum & CSUM_LOW16) + (sum >> CSUM_SHIFT16);
	sum = (sum & CSUM_LOW16) + (sum >> CSUM_SHIFT16);
	return (uint16_t)sum;
}

uint16_t pgm_csum_sum(const void *buf, size_t len)
{
	uint16_t r = csum_fold(pgm_csum_acc(buf, len));

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	r = __builtin_bswap16(r);
#endif
	return r;
}

static uint16_t csum_sum_zeroed(const uint8_t *p, size_t len)
{
	uint16_t field = pgm_get16(p + PGM_OFF_CHECKSUM);
	uint32_t s = pgm_csum_sum(p, len);

	/* Removing a word from a ones' complement sum is adding its complement. */
	s += (uint16_t)~field;
	return csum_fold(s);
}

uint16_t pgm_checksum(const void *buf, size_t len)
{
	uint16_t c = (uint16_t)~csum_sum_zeroed(buf, len);

	return c ? c : PGM_CSUM_ALL_ONES;
}

bool pgm_checksum_verify(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (pgm_get16(p + PGM_OFF_CHECKSUM) == 0)
		return true;
	return pgm_csum_ok(p, len);
}

void pgm_checksum_fill(void *buf, size_t len)
{
	uint8_t *p = buf;

	pgm_put16(p + PGM_OFF_CHECKSUM, 0);
	pgm_put16(p + PGM_OFF_CHECKSUM, pgm_checksum(p, len));
}
