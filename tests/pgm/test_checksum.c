/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_checksum.c - the PGM checksum against hand-computed vectors (worked out in the
 * comments), the RFC 1071 example, and a plain 16-bit reference sum over random buffers
 * of every length and alignment, and pgm_csum_acc() against the sum's definition over
 * carry-heavy buffers. tshark cross-checks the same code in tshark_builders.sh. Built
 * twice: as is (on x86-64 the add-with-carry chains of pgm.h) and as
 * pgm_checksum_portable (-DPGM_CSUM_PORTABLE: the code other hosts run).
 */
#include <stdlib.h>
#include <string.h>

#include "pgm.h"
#include "tap.h"

/* Straightforward RFC 1071 sum, one big-endian 16-bit word at a time. */
static uint16_t ref_sum(const uint8_t *p, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static uint16_t ref_checksum(const uint8_t *p, size_t len)
{
	uint8_t *copy = malloc(len);
	uint16_t c;

	if (!copy)
		abort();
	memcpy(copy, p, len);
	copy[6] = copy[7] = 0;
	c = (uint16_t)~ref_sum(copy, len);
	free(copy);
	return c ? c : 0xffff;
}

static void test_vectors(void)
{
	/*
	 * SPMR, sport 0x1234, dport 7500 (0x1d4c), GSI 01..06:
	 * 0x1234 + 0x1d4c + 0x0c00 + 0x0102 + 0x0304 + 0x0506 = 0x448c, checksum ~ = 0xbb73.
	 */
	uint8_t spmr[16] = {0x12, 0x34, 0x1d, 0x4c, 0x0c, 0x00, 0x00, 0x00,
			    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x00, 0x00};
	/*
	 * Carries: ffff ffff 0cff [cksum] ffff ffff ffff 0001:
	 * 5 * 0xffff = 0x4fffb, + 0x0cff + 0x0001 = 0x50cfb, folded 0x0cfb + 5 = 0x0d00,
	 * checksum 0xf2ff.
	 */
	uint8_t carry[16] = {0xff, 0xff, 0xff, 0xff, 0x0c, 0xff, 0xab, 0xcd,
			     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x01};
	/* Sum 0xffff with the field zero: computed checksum 0, sent as 0xffff. */
	uint8_t zero[16] = {0xff, 0xff};
	/* RFC 1071 section 3 example: 0001 f203 f4f5 f6f7 sums to 0xddf2. */
	const uint8_t rfc1071[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	const uint8_t odd[3] = {0x01, 0x02, 0x03}; /* 0x0102 + 0x0300 */

	CHECK_EQ(pgm_checksum(spmr, sizeof(spmr)), 0xbb73);
	spmr[6] = 0xbb;
	spmr[7] = 0x72; /* off by one */
	CHECK(!pgm_checksum_verify(spmr, sizeof(spmr)));
	pgm_checksum_fill(spmr, sizeof(spmr));
	CHECK_EQ(spmr[6], 0xbb);
	CHECK_EQ(spmr[7], 0x73);
	CHECK(pgm_checksum_verify(spmr, sizeof(spmr)));

	CHECK_EQ(pgm_checksum(carry, sizeof(carry)), 0xf2ff); /* field content ignored */
	pgm_checksum_fill(carry, sizeof(carry));
	CHECK(pgm_checksum_verify(carry, sizeof(carry)));

	CHECK_EQ(pgm_checksum(zero, sizeof(zero)), 0xffff);
	pgm_checksum_fill(zero, sizeof(zero));
	CHECK_EQ(zero[6], 0xff);
	CHECK_EQ(zero[7], 0xff);
	CHECK(pgm_checksum_verify(zero, sizeof(zero)));

	CHECK_EQ(pgm_csum_sum(rfc1071, sizeof(rfc1071)), 0xddf2);
	CHECK_EQ(pgm_csum_sum(odd, sizeof(odd)), 0x0402);
	CHECK_EQ(pgm_csum_sum(odd, 0), 0);

	/* Field 0 means "no checksum": verify accepts any content. */
	spmr[6] = spmr[7] = 0;
	spmr[0] ^= 0x55;
	CHECK(pgm_checksum_verify(spmr, sizeof(spmr)));
}

static void test_random_against_reference(void)
{
	uint8_t buf[300 + 8];
	unsigned mismatches = 0, verify_fail = 0, detected = 0, runs = 0;

	srand(3208);
	for (size_t len = 16; len <= 300; len++) {
		for (size_t align = 0; align < 8; align++, runs++) {
			uint8_t *p = buf + align;

			for (size_t i = 0; i < len; i++)
				p[i] = (uint8_t)rand();
			if (pgm_checksum(p, len) != ref_checksum(p, len))
				mismatches++;
			if (pgm_csum_sum(p, len) != ref_sum(p, len))
				mismatches++;
			pgm_checksum_fill(p, len);
			if (!pgm_checksum_verify(p, len))
				verify_fail++;
			p[len / 2] ^= 0x10; /* a single bit flip is always detected */
			if (!pgm_checksum_verify(p, len))
				detected++;
		}
	}
	CHECK_EQ(mismatches, 0);
	CHECK_EQ(verify_fail, 0);
	CHECK_EQ(detected, runs);
}

/*
 * The most carries the 64-bit accumulation can see: every byte 0xff (or 0xfe), up to the
 * largest packet, every length from 1 to 64 and a few up to 65535, against the reference.
 */
static void test_carries(void)
{
	static uint8_t buf[PGM_MAX_TPDU];
	static const size_t big[] = {1000, 4096, 9000, 32768, 65534, PGM_MAX_TPDU};
	unsigned mismatches = 0;

	for (unsigned fill = 0xfe; fill <= 0xff; fill++) {
		memset(buf, (int)fill, sizeof(buf));
		for (size_t len = 1; len <= 64; len++)
			mismatches += pgm_csum_sum(buf, len) != ref_sum(buf, len);
		for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
			mismatches += pgm_csum_sum(buf, big[i]) != ref_sum(buf, big[i]);
	}
	CHECK_EQ(mismatches, 0);
}

/*
 * pgm_csum_ok (the verdict without the fold) says true exactly when pgm_csum_sum is
 * 0xffff: over filled-in packets (valid, and one bit flipped), random bytes, sums that
 * fold to 0 and to 0xffff from many carries, and the all-zero buffer.
 */
static void test_csum_ok(void)
{
	static uint8_t buf[PGM_MAX_TPDU];
	unsigned mismatches = 0, ok = 0, runs = 0;

	srand(1071);
	for (size_t len = 16; len <= 600; len++) {
		for (unsigned k = 0; k < 4; k++, runs++) {
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rand();
			if (k & 1)
				pgm_checksum_fill(buf, len);
			if (k == 3)
				buf[len - 1] ^= 0x01;
			ok += pgm_csum_ok(buf, len);
			mismatches += pgm_csum_ok(buf, len) != (pgm_csum_sum(buf, len) == 0xffff);
		}
	}
	CHECK_EQ(ok, runs / 4); /* the filled-in ones, and no other */
	for (unsigned fill = 0; fill <= 0xff; fill++) {
		memset(buf, (int)fill, sizeof(buf));
		for (size_t len = 0; len <= 70; len++)
			mismatches += pgm_csum_ok(buf, len) != (pgm_csum_sum(buf, len) == 0xffff);
		mismatches += pgm_csum_ok(buf, PGM_MAX_TPDU) !=
			      (pgm_csum_sum(buf, PGM_MAX_TPDU) == 0xffff);
	}
	/* 0xffff, and 0xffff repeated: all ones without and with end-around carries. */
	memset(buf, 0xff, sizeof(buf));
	CHECK(pgm_csum_ok(buf, 2));
	CHECK(pgm_csum_ok(buf, 65534));
	memset(buf, 0, sizeof(buf));
	CHECK(!pgm_csum_ok(buf, 64));
	CHECK_EQ(mismatches, 0);
}

/*
 * The 64-bit sum by its definition: the native words (the last one zero padded) added
 * modulo 2^64 - 1 (ones' complement arithmetic), in 128 bits.
 */
static uint64_t ref_acc(const uint8_t *p, size_t len)
{
	unsigned __int128 s = 0;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = 0;

		memcpy(&w, p + i, len - i < 8 ? len - i : 8);
		s += w;
	}
	return (uint64_t)(s % UINT64_MAX);
}

/* Byte i of a buffer of kind k: random, mostly 0xff (long carry chains), all 0xff. */
static uint8_t acc_byte(unsigned k, size_t i)
{
	switch (k) {
	case 0:
		return (uint8_t)rand();
	case 1:
		return rand() % 8 ? 0xff : (uint8_t)rand();
	case 2:
		return (i / 8) % 3 ? 0xff : (uint8_t)rand(); /* whole words of ones between */
	default:
		return 0xff;
	}
}

/*
 * pgm_csum_acc is the ones' complement sum of the native words (the same value modulo
 * 2^64 - 1, 0 only for zero bytes) for every length to 300 (every tail: blocks of 8, 4,
 * 2 and 1 words and 1-7 bytes) and alignment; pgm_csum_ok agrees with pgm_csum_sum on
 * the same buffers with the checksum filled in, and with one bit flipped.
 */
static void test_acc_definition(void)
{
	uint8_t buf[300 + 8];
	unsigned mismatches = 0, zero = 0, ok_mismatches = 0, ok = 0, runs = 0;

	srand(2026);
	for (unsigned k = 0; k < 4; k++) {
		for (size_t len = 0; len <= 300; len++) {
			for (size_t align = 0; align < 8; align++) {
				uint8_t *p = buf + align;
				uint64_t acc;

				for (size_t i = 0; i < len; i++)
					p[i] = acc_byte(k, i);
				acc = pgm_csum_acc(p, len);
				mismatches += acc % UINT64_MAX != ref_acc(p, len);
				zero += (acc == 0) != (len == 0);
				if (len < PGM_HDR_LEN)
					continue;
				runs++;
				pgm_checksum_fill(p, len);
				ok += pgm_csum_ok(p, len);
				ok_mismatches +=
					pgm_csum_ok(p, len) != (pgm_csum_sum(p, len) == 0xffff);
				p[len - 1 - len % 5] ^= 0x04;
				ok_mismatches +=
					pgm_csum_ok(p, len) != (pgm_csum_sum(p, len) == 0xffff);
			}
		}
	}
	CHECK_EQ(mismatches, 0);
	CHECK_EQ(zero, 0);
	CHECK_EQ(ok_mismatches, 0);
	CHECK_EQ(ok, runs);
}

int main(void)
{
	test_vectors();
	test_random_against_reference();
	test_carries();
	test_csum_ok();
	test_acc_definition();
	return tap_done();
}
