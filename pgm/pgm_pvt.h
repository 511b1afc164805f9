/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pgm_pvt.h - helpers shared by the pgm/ sources; not part of the public API.
 */
#ifndef PGM_PGM_PVT_H
#define PGM_PGM_PVT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pgm.h"

/*
 * The wire layout pgm_surely_malformed() needs (common header and option header offsets,
 * the NLA block, the fixed sizes of the type-specific fields) is in pgm.h.
 */

/* Field offsets inside the type-specific part (from its first byte). */
#define PGM_SPM_OFF_SQN	    0u
#define PGM_SPM_OFF_TRAIL   4u
#define PGM_SPM_OFF_LEAD    8u
#define PGM_POLL_OFF_SQN    0u
#define PGM_POLL_OFF_ROUND  4u
#define PGM_POLL_OFF_STYPE  6u
#define PGM_POLL_OFF_BO_IVL 0u /* in the tail after the NLA */
#define PGM_POLL_OFF_RAND   4u
#define PGM_POLL_OFF_MASK   8u
#define PGM_POLL_RAND_LEN   4u
#define PGM_POLR_OFF_SQN    0u
#define PGM_POLR_OFF_ROUND  4u
#define PGM_NAK_OFF_SQN	    0u
#define PGM_ACK_OFF_RX_MAX  0u
#define PGM_ACK_OFF_BITMAP  4u

/* Field offsets inside options (from the option's type byte). */
#define PGM_OPT_OFF_VALUE	    4u /* first value word of most options */
#define PGM_OPT_FRAG_OFF_FIRST_SQN  4u
#define PGM_OPT_FRAG_OFF_OFFSET	    8u
#define PGM_OPT_FRAG_OFF_APDU_LEN   12u
#define PGM_OPT_BO_IVL_OFF_IVL	    4u
#define PGM_OPT_BO_IVL_OFF_SQN	    8u
#define PGM_OPT_BO_RNG_OFF_MAX	    4u
#define PGM_OPT_BO_RNG_OFF_MIN	    8u
#define PGM_OPT_REDIRECT_OFF_AFI    4u
#define PGM_OPT_CR_OFF_LEAD	    4u
#define PGM_OPT_CR_OFF_NE_WL	    8u
#define PGM_OPT_CR_OFF_NE_WP	    10u
#define PGM_OPT_CR_OFF_RX_WP	    12u
#define PGM_OPT_CR_OFF_AFI	    16u
#define PGM_OPT_PGMCC_OFF_TSTAMP    4u
#define PGM_OPT_PGMCC_OFF_AFI	    8u
#define PGM_OPT_PGMCC_OFF_LOSS_RATE 10u

/* Option sizes (whole option, header included). */
#define PGM_OPT_FRAGMENT_LEN	16u
#define PGM_OPT_JOIN_LEN	8u
#define PGM_OPT_NAK_BO_IVL_LEN	12u
#define PGM_OPT_NAK_BO_RNG_LEN	12u
#define PGM_OPT_REDIRECT_FIXED	8u /* header, AFI, reserved; then the NLA */
#define PGM_OPT_PARITY_PRM_LEN	8u
#define PGM_OPT_PARITY_GRP_LEN	8u
#define PGM_OPT_CURR_TGSIZE_LEN 8u
#define PGM_OPT_FLAG_ONLY_LEN	4u  /* NBR_UNREACH, SYN, FIN, RST, CRQST */
#define PGM_OPT_PATH_NLA_FIXED	4u  /* header; then a bare NLA (family from the length) */
#define PGM_OPT_CR_FIXED	20u /* header, LEAD, NE_WL, NE_WP, RX_WP, reserved, AFI, res */
#define PGM_OPT_PGMCC_FIXED	12u /* header, TSTAMP, AFI, reserved/loss rate */
#define PGM_NAK_LIST_ENTRY	4u

/* Big-endian field access (pgm_get16(), pgm_get32() and pgm_afi_len() are in pgm.h). */
static inline void pgm_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void pgm_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Option type 0x06 is unassigned in RFC 3208. */
#define PGM_OPT_UNASSIGNED 0x06u

/* True for the option types RFC 3208 and PGMCC define (OPT_INVALID excluded). */
static inline bool pgm_opt_known(uint8_t type)
{
	return type <= PGM_OPT_KNOWN_MAX && type != PGM_OPT_UNASSIGNED;
}

#endif /* PGM_PGM_PVT_H */
