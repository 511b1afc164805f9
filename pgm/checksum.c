/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * checksum.c - the PGM checksum: RFC 1071 ones' complement sum over the whole packet,
 * checksum field taken as zero, no pseudo-header (RFC 3208 section 8).
 *
 * The sum is accumulated over native 64-bit words with end-around carry and folded at
 * the end; a ones' complement sum is byte-order independent up to a final byte swap
 * (RFC 1071 section 2(B)), so one swap turns the native result into the big-endian one.
 */
#include <string.h>

#include "pgm.h"
#include "pgm_pvt.h"

#define CSUM_WORD     8u      /* bytes summed per step */
#define CSUM_UNROLL   4u      /* words per step of the main loop */
#define CSUM_ALL_ONES 0xffffu /* ones' complement "negative zero": a valid packet sums to it */
#define CSUM_LOW16    0xffffu
#define CSUM_SHIFT16  16u

static inline uint64_t csum_add(uint64_t sum, uint64_t v)
{
	sum += v;
	return sum + (sum < v); /* end-around carry */
}

static inline uint16_t csum_fold(uint64_t sum)
{
	/* 64 -> 33 -> 17 -> 16 bits (the last add cannot carry again). */
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & CSUM_LOW16) + (sum >> CSUM_SHIFT16);
	sum = (sum & CSUM_LOW16) + (sum >> CSUM_SHIFT16);
	sum = (sum & CSUM_LOW16) + (sum >> CSUM_SHIFT16);
	return (uint16_t)sum;
}

/* The ones' complement sum of len bytes in native 64-bit words, not folded. */
static inline __attribute__((always_inline)) uint64_t csum_acc(const uint8_t *p, size_t len)
{
	uint64_t sum = 0, carries = 0, a, b, c, d;

	/*
	 * Four words a step, their carries counted apart (an add and an add-with-carry per
	 * word) and added back at the end: a PGM packet (< 64 KiB) cannot carry 2^64 times.
	 */
	while (len >= CSUM_UNROLL * CSUM_WORD) {
		memcpy(&a, p, CSUM_WORD);
		memcpy(&b, p + CSUM_WORD, CSUM_WORD);
		memcpy(&c, p + 2 * CSUM_WORD, CSUM_WORD);
		memcpy(&d, p + 3 * CSUM_WORD, CSUM_WORD);
		sum += a;
		carries += sum < a;
		sum += b;
		carries += sum < b;
		sum += c;
		carries += sum < c;
		sum += d;
		carries += sum < d;
		p += CSUM_UNROLL * CSUM_WORD;
		len -= CSUM_UNROLL * CSUM_WORD;
	}
	/* End-around carry: 2^64 is 1 in ones' complement arithmetic. */
	sum = csum_add(sum, carries);
	while (len >= CSUM_WORD) {
		memcpy(&a, p, CSUM_WORD);
		sum = csum_add(sum, a);
		p += CSUM_WORD;
		len -= CSUM_WORD;
	}
	if (len) {
		a = 0;
		memcpy(&a, p, len); /* keeps each byte at its position within the word */
		sum = csum_add(sum, a);
	}
	return sum;
}

uint16_t pgm_csum_sum(const void *buf, size_t len)
{
	uint16_t r = csum_fold(csum_acc(buf, len));

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

	return c ? c : CSUM_ALL_ONES;
}

bool pgm_csum_ok(const void *buf, size_t len)
{
	uint64_t sum = csum_acc(buf, len);

	/*
	 * Every fold step keeps the value modulo 0xffff (2^16 = 1 modulo 0xffff) and maps
	 * only 0 to 0: the folded sum is all ones exactly when the 64-bit one is a non-zero
	 * multiple of 0xffff, in either byte order. One division by a constant (a multiply)
	 * instead of the fold and the swap.
	 */
	return sum != 0 && sum % CSUM_ALL_ONES == 0;
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
