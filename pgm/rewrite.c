/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rewrite.c - OPX "invalidate" handling: the only place pgm/ changes packet bytes.
 *
 * RFC 3208 section 9 asks a network element that does not understand an option whose
 * OPX bits say "invalidate" to change the option's type to OPT_INVALID and forward the
 * packet. The checksum is updated incrementally (RFC 1624 eqn. 3), so a packet that
 * arrived with a wrong checksum still carries a wrong one.
 */
#include <errno.h>

#include "pgm.h"
#include "pgm_pvt.h"

#define CSUM_LOW16   0xffffu
#define CSUM_SHIFT16 16u
#define CSUM_NONZERO 0xffffu /* a computed 0 travels as all ones */

/* New checksum after the 16-bit word old became new: HC' = ~(~HC + ~m + m'). */
static uint16_t csum_replace(uint16_t hc, uint16_t old, uint16_t new)
{
	uint32_t s = (uint32_t)(uint16_t)~hc + (uint16_t)~old + new;

	while (s >> CSUM_SHIFT16)
		s = (s & CSUM_LOW16) + (s >> CSUM_SHIFT16);
	s = (uint16_t)~s;
	return s ? (uint16_t)s : CSUM_NONZERO;
}

int pgm_packet_invalidate_opts(void *buf, size_t len)
{
	struct pgm_packet pkt;
	uint8_t *p = buf;
	size_t off, end;
	int n = 0;

	if (pgm_result_malformed(pgm_parse(buf, len, PGM_PARSE_NO_CSUM, &pkt)))
		return -EINVAL;
	if (!(pkt.flags & PGM_PKT_OPX_INVALIDATE))
		return 0;

	/* The parser accepted the options: every length below is in bounds and >= 4. */
	end = (size_t)pkt.opts_offset + pkt.opts_len;
	for (off = (size_t)pkt.opts_offset + PGM_OPT_LENGTH_LEN; off < end;
	     off += p[off + PGM_OPT_OFF_LEN]) {
		uint8_t type = p[off + PGM_OPT_OFF_TYPE] & PGM_OPT_TYPE_MASK;
		uint8_t opx = p[off + PGM_OPT_OFF_BITS] & PGM_OPT_OPX_MASK;
		size_t word = off & ~(size_t)1; /* checksum words start at even offsets */
		uint16_t before;

		if (pgm_opt_known(type) || type == PGM_OPT_INVALID || opx != PGM_OPX_INVALIDATE)
			continue;
		before = pgm_get16(p + word);
		p[off + PGM_OPT_OFF_TYPE] =
			(uint8_t)(PGM_OPT_INVALID | (p[off + PGM_OPT_OFF_TYPE] & PGM_OPT_END));
		if (pkt.checksum)
			pgm_put16(p + PGM_OFF_CHECKSUM,
				  csum_replace(pgm_get16(p + PGM_OFF_CHECKSUM), before,
					       pgm_get16(p + word)));
		n++;
	}
	return n;
}
