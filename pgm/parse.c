/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * parse.c - strict RFC 3208 parser.
 *
 * Every read is preceded by a check against the bytes left; every loop advances by at
 * least one option header (4 bytes), so a packet of n bytes costs O(n) and no input can
 * make the parser loop or read out of bounds.
 */
#include <stddef.h>
#include <string.h>

#include "pgm.h"
#include "pgm_pvt.h"

/* An 8-bit option length holds at most PGM_NAK_LIST_MAX list entries. */
_Static_assert((UINT8_MAX - PGM_OPT_HDR_LEN) / PGM_NAK_LIST_ENTRY == PGM_NAK_LIST_MAX,
	       "OPT_NAK_LIST capacity");

static const char *const pgm_result_names[PGM_RESULT_COUNT] = {
	[PGM_OK] = "ok",
	[PGM_BAD_CHECKSUM] = "bad_checksum",
	[PGM_ERR_TRUNCATED_HEADER] = "truncated_header",
	[PGM_ERR_TOO_LONG] = "too_long",
	[PGM_ERR_BAD_TYPE] = "bad_type",
	[PGM_ERR_TRUNCATED_TYPE] = "truncated_type_fields",
	[PGM_ERR_BAD_AFI] = "bad_afi",
	[PGM_ERR_OPT_TRUNCATED] = "opt_length_truncated",
	[PGM_ERR_OPT_FIRST_NOT_LENGTH] = "opt_first_not_length",
	[PGM_ERR_OPT_LENGTH_BAD] = "opt_length_bad",
	[PGM_ERR_OPT_TOTAL_PAST_PACKET] = "opt_total_past_packet",
	[PGM_ERR_OPT_LEN_ZERO] = "opt_len_zero",
	[PGM_ERR_OPT_LEN_SHORT] = "opt_len_short",
	[PGM_ERR_OPT_PAST_TOTAL] = "opt_past_total",
	[PGM_ERR_OPT_MISSING_END] = "opt_missing_end",
	[PGM_ERR_OPT_END_BEFORE_TOTAL] = "opt_end_before_total",
	[PGM_ERR_OPT_BAD_SIZE] = "opt_bad_size",
	[PGM_ERR_OPT_DUP_LENGTH] = "opt_dup_length",
	[PGM_ERR_TSDU_PAST_PACKET] = "tsdu_past_packet",
	[PGM_ERR_TRAILING_BYTES] = "trailing_bytes",
};

const char *pgm_result_name(enum pgm_result r)
{
	if ((unsigned)r >= PGM_RESULT_COUNT)
		return "unknown";
	return pgm_result_names[r];
}

const char *pgm_type_name(uint8_t type)
{
	switch (type) {
	case PGM_TYPE_SPM:
		return "SPM";
	case PGM_TYPE_POLL:
		return "POLL";
	case PGM_TYPE_POLR:
		return "POLR";
	case PGM_TYPE_ODATA:
		return "ODATA";
	case PGM_TYPE_RDATA:
		return "RDATA";
	case PGM_TYPE_NAK:
		return "NAK";
	case PGM_TYPE_NNAK:
		return "NNAK";
	case PGM_TYPE_NCF:
		return "NCF";
	case PGM_TYPE_SPMR:
		return "SPMR";
	case PGM_TYPE_ACK:
		return "ACK";
	default:
		return "unknown";
	}
}

const struct pgm_type_shape pgm_type_shapes[16] = {
	[PGM_TYPE_SPM] = {PGM_HDR_LEN + PGM_SPM_FIXED_LEN, 1, 0},
	[PGM_TYPE_POLL] = {PGM_HDR_LEN + PGM_POLL_FIXED_LEN, 1, PGM_POLL_TAIL_LEN},
	[PGM_TYPE_POLR] = {PGM_HDR_LEN + PGM_POLR_LEN, 0, 0},
	[PGM_TYPE_ODATA] = {PGM_HDR_LEN + PGM_DATA_LEN, 0, 0},
	[PGM_TYPE_RDATA] = {PGM_HDR_LEN + PGM_DATA_LEN, 0, 0},
	[PGM_TYPE_NAK] = {PGM_HDR_LEN + PGM_NAK_FIXED_LEN, 2, 0},
	[PGM_TYPE_NNAK] = {PGM_HDR_LEN + PGM_NAK_FIXED_LEN, 2, 0},
	[PGM_TYPE_NCF] = {PGM_HDR_LEN + PGM_NAK_FIXED_LEN, 2, 0},
	[PGM_TYPE_SPMR] = {PGM_HDR_LEN, 0, 0},
	[PGM_TYPE_ACK] = {PGM_HDR_LEN + PGM_ACK_LEN, 0, 0},
};

#define NLA4 (PGM_NLA_HDR_LEN + PGM_NLA_IPV4_LEN)
#define NLA6 (PGM_NLA_HDR_LEN + PGM_NLA_IPV6_LEN)
#define BIT(k) (UINT64_C(1) << (k))
_Static_assert(PGM_POLL_FIXED_LEN + NLA6 + PGM_POLL_TAIL_LEN < 64 &&
		       PGM_NAK_FIXED_LEN + 2 * NLA6 < 64 && PGM_SPM_FIXED_LEN + NLA6 < 64,
	       "pgm_type_sizes: the type fields fit a 64-bit mask");

const uint64_t pgm_type_sizes[256] = {
	[PGM_TYPE_SPM] = BIT(PGM_SPM_FIXED_LEN + NLA4) | BIT(PGM_SPM_FIXED_LEN + NLA6),
	[PGM_TYPE_POLL] = BIT(PGM_POLL_FIXED_LEN + NLA4 + PGM_POLL_TAIL_LEN) |
			  BIT(PGM_POLL_FIXED_LEN + NLA6 + PGM_POLL_TAIL_LEN),
	[PGM_TYPE_POLR] = BIT(PGM_POLR_LEN),
	[PGM_TYPE_ODATA] = BIT(PGM_DATA_LEN),
	[PGM_TYPE_RDATA] = BIT(PGM_DATA_LEN),
	[PGM_TYPE_NAK] = BIT(PGM_NAK_FIXED_LEN + 2 * NLA4) | BIT(PGM_NAK_FIXED_LEN + NLA4 + NLA6) |
			 BIT(PGM_NAK_FIXED_LEN + 2 * NLA6),
	[PGM_TYPE_NNAK] = BIT(PGM_NAK_FIXED_LEN + 2 * NLA4) |
			  BIT(PGM_NAK_FIXED_LEN + NLA4 + NLA6) | BIT(PGM_NAK_FIXED_LEN + 2 * NLA6),
	[PGM_TYPE_NCF] = BIT(PGM_NAK_FIXED_LEN + 2 * NLA4) | BIT(PGM_NAK_FIXED_LEN + NLA4 + NLA6) |
			 BIT(PGM_NAK_FIXED_LEN + 2 * NLA6),
	[PGM_TYPE_SPMR] = BIT(0),
	[PGM_TYPE_ACK] = BIT(PGM_ACK_LEN),
};

#undef NLA4
#undef NLA6
#undef BIT

/* A bounded read position over the packet. */
struct cursor {
	const uint8_t *p;
	size_t len;
	size_t off;
};

static inline size_t cur_left(const struct cursor *c)
{
	return c->len - c->off;
}

/* Decode an NLA block (AFI, reserved, address) at the cursor. */
static enum pgm_result cur_nla(struct cursor *c, struct pgm_nla *nla)
{
	unsigned alen;

	if (cur_left(c) < PGM_NLA_HDR_LEN)
		return PGM_ERR_TRUNCATED_TYPE;
	nla->afi = pgm_get16(c->p + c->off + PGM_NLA_OFF_AFI);
	alen = pgm_afi_len(nla->afi);
	if (!alen)
		return PGM_ERR_BAD_AFI;
	c->off += PGM_NLA_HDR_LEN;
	if (cur_left(c) < alen)
		return PGM_ERR_TRUNCATED_TYPE;
	memcpy(nla->addr, c->p + c->off, alen);
	nla->len = (uint8_t)alen;
	c->off += alen;
	return PGM_OK;
}

/*
 * Decode the type-specific fields into the member of pkt->u that pkt->type names. That
 * member is fully written whatever the outcome (fields the packet did not reach are 0),
 * so readers may rely on it once PGM_PKT_HAVE_HEADER is set and the type is defined.
 */
static enum pgm_result parse_type_fields(struct cursor *c, struct pgm_packet *pkt)
{
	const uint8_t *f = c->p + c->off; /* first byte of the type-specific fields */
	enum pgm_result r;

	switch (pkt->type) {
	case PGM_TYPE_ODATA:
	case PGM_TYPE_RDATA:
		/* The common case first: two words, nothing to clear. */
		if (cur_left(c) < PGM_DATA_LEN) {
			pkt->u.data.sqn = pkt->u.data.trail = 0;
			return PGM_ERR_TRUNCATED_TYPE;
		}
		pkt->u.data.sqn = pgm_get32(f + PGM_DATA_OFF_SQN);
		pkt->u.data.trail = pgm_get32(f + PGM_DATA_OFF_TRAIL);
		c->off += PGM_DATA_LEN;
		return PGM_OK;
	case PGM_TYPE_SPM:
		memset(&pkt->u.spm, 0, sizeof(pkt->u.spm));
		if (cur_left(c) < PGM_SPM_FIXED_LEN)
			return PGM_ERR_TRUNCATED_TYPE;
		pkt->u.spm.sqn = pgm_get32(f + PGM_SPM_OFF_SQN);
		pkt->u.spm.trail = pgm_get32(f + PGM_SPM_OFF_TRAIL);
		pkt->u.spm.lead = pgm_get32(f + PGM_SPM_OFF_LEAD);
		c->off += PGM_SPM_FIXED_LEN;
		return cur_nla(c, &pkt->u.spm.nla);
	case PGM_TYPE_POLL:
		memset(&pkt->u.poll, 0, sizeof(pkt->u.poll));
		if (cur_left(c) < PGM_POLL_FIXED_LEN)
			return PGM_ERR_TRUNCATED_TYPE;
		pkt->u.poll.sqn = pgm_get32(f + PGM_POLL_OFF_SQN);
		pkt->u.poll.round = pgm_get16(f + PGM_POLL_OFF_ROUND);
		pkt->u.poll.s_type = pgm_get16(f + PGM_POLL_OFF_STYPE);
		c->off += PGM_POLL_FIXED_LEN;
		r = cur_nla(c, &pkt->u.poll.nla);
		if (r != PGM_OK)
			return r;
		if (cur_left(c) < PGM_POLL_TAIL_LEN)
			return PGM_ERR_TRUNCATED_TYPE;
		f = c->p + c->off;
		pkt->u.poll.bo_ivl = pgm_get32(f + PGM_POLL_OFF_BO_IVL);
		memcpy(pkt->u.poll.rand, f + PGM_POLL_OFF_RAND, PGM_POLL_RAND_LEN);
		pkt->u.poll.mask = pgm_get32(f + PGM_POLL_OFF_MASK);
		c->off += PGM_POLL_TAIL_LEN;
		return PGM_OK;
	case PGM_TYPE_POLR:
		memset(&pkt->u.polr, 0, sizeof(pkt->u.polr));
		if (cur_left(c) < PGM_POLR_LEN)
			return PGM_ERR_TRUNCATED_TYPE;
		pkt->u.polr.sqn = pgm_get32(f + PGM_POLR_OFF_SQN);
		pkt->u.polr.round = pgm_get16(f + PGM_POLR_OFF_ROUND);
		c->off += PGM_POLR_LEN;
		return PGM_OK;
	case PGM_TYPE_NAK:
	case PGM_TYPE_NNAK:
	case PGM_TYPE_NCF:
		memset(&pkt->u.nak, 0, sizeof(pkt->u.nak));
		if (cur_left(c) < PGM_NAK_FIXED_LEN)
			return PGM_ERR_TRUNCATED_TYPE;
		pkt->u.nak.sqn = pgm_get32(f + PGM_NAK_OFF_SQN);
		c->off += PGM_NAK_FIXED_LEN;
		r = cur_nla(c, &pkt->u.nak.src);
		if (r != PGM_OK)
			return r;
		return cur_nla(c, &pkt->u.nak.grp);
	case PGM_TYPE_SPMR:
		return PGM_OK;
	case PGM_TYPE_ACK:
		memset(&pkt->u.ack, 0, sizeof(pkt->u.ack));
		if (cur_left(c) < PGM_ACK_LEN)
			return PGM_ERR_TRUNCATED_TYPE;
		pkt->u.ack.rx_max = pgm_get32(f + PGM_ACK_OFF_RX_MAX);
		pkt->u.ack.bitmap = pgm_get32(f + PGM_ACK_OFF_BITMAP);
		c->off += PGM_ACK_LEN;
		return PGM_OK;
	default:
		return PGM_ERR_BAD_TYPE;
	}
}

/*
 * Decode an NLA inside an option: AFI at o[afi_at], address at o[addr_at]; the option
 * must end exactly after the address.
 */
static enum pgm_result opt_nla(const uint8_t *o, unsigned olen, unsigned afi_at, unsigned addr_at,
			       struct pgm_nla *nla)
{
	unsigned alen;

	memset(nla, 0, sizeof(*nla)); /* an IPv4 address leaves addr[4..] zero */
	if (olen < addr_at)
		return PGM_ERR_OPT_BAD_SIZE;
	nla->afi = pgm_get16(o + afi_at);
	alen = pgm_afi_len(nla->afi);
	if (!alen)
		return PGM_ERR_BAD_AFI;
	if (olen != addr_at + alen)
		return PGM_ERR_OPT_BAD_SIZE;
	memcpy(nla->addr, o + addr_at, alen);
	nla->len = (uint8_t)alen;
	return PGM_OK;
}

/* An option type outside RFC 3208/PGMCC: record what its OPX bits ask for. */
static void note_unknown_opt(struct pgm_packet *pkt, uint8_t opx)
{
	pkt->flags |= PGM_PKT_UNKNOWN_OPT;
	if (opx == PGM_OPX_INVALIDATE)
		pkt->flags |= PGM_PKT_OPX_INVALIDATE;
	else if (opx == PGM_OPX_DISCARD)
		pkt->flags |= PGM_PKT_OPX_DISCARD;
}

/*
 * Check and decode one option; o points at its type byte, PGM_OPT_HDR_LEN <= olen and the
 * whole option lies inside the packet. The first occurrence of a known type is decoded
 * into pkt->opt; later ones are checked and recorded only.
 */
static enum pgm_result parse_opt(struct pgm_packet *pkt, const uint8_t *o, uint8_t type,
				 unsigned olen, uint8_t opx)
{
	bool first = type <= PGM_OPT_KNOWN_MAX && !(pkt->opt_seen & PGM_OPT_BIT(type));
	struct pgm_nla nla; /* filled by opt_nla() before any use */
	enum pgm_result r = PGM_OK;

	switch (type) {
	case PGM_OPT_LENGTH:
		return PGM_ERR_OPT_DUP_LENGTH;
	case PGM_OPT_FRAGMENT:
		if (olen != PGM_OPT_FRAGMENT_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first) {
			pkt->opt.fragment.first_sqn = pgm_get32(o + PGM_OPT_FRAG_OFF_FIRST_SQN);
			pkt->opt.fragment.offset = pgm_get32(o + PGM_OPT_FRAG_OFF_OFFSET);
			pkt->opt.fragment.apdu_len = pgm_get32(o + PGM_OPT_FRAG_OFF_APDU_LEN);
		}
		break;
	case PGM_OPT_NAK_LIST: {
		unsigned bytes = olen - PGM_OPT_HDR_LEN;
		unsigned n = bytes / PGM_NAK_LIST_ENTRY;

		if (bytes % PGM_NAK_LIST_ENTRY || n == 0)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first) {
			pkt->opt.nak_list.offset = (uint16_t)(o + PGM_OPT_HDR_LEN - pkt->raw);
			pkt->opt.nak_list.count = (uint8_t)n;
		}
		break;
	}
	case PGM_OPT_JOIN:
		if (olen != PGM_OPT_JOIN_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first)
			pkt->opt.join_min = pgm_get32(o + PGM_OPT_OFF_VALUE);
		break;
	case PGM_OPT_NAK_BO_IVL:
		if (olen != PGM_OPT_NAK_BO_IVL_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first) {
			pkt->opt.nak_bo_ivl.ivl = pgm_get32(o + PGM_OPT_BO_IVL_OFF_IVL);
			pkt->opt.nak_bo_ivl.ivl_sqn = pgm_get32(o + PGM_OPT_BO_IVL_OFF_SQN);
		}
		break;
	case PGM_OPT_NAK_BO_RNG:
		if (olen != PGM_OPT_NAK_BO_RNG_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first) {
			pkt->opt.nak_bo_rng.max_ivl = pgm_get32(o + PGM_OPT_BO_RNG_OFF_MAX);
			pkt->opt.nak_bo_rng.min_ivl = pgm_get32(o + PGM_OPT_BO_RNG_OFF_MIN);
		}
		break;
	case PGM_OPT_REDIRECT:
		r = opt_nla(o, olen, PGM_OPT_REDIRECT_OFF_AFI, PGM_OPT_REDIRECT_FIXED, &nla);
		if (r == PGM_OK && first)
			pkt->opt.redirect = nla;
		break;
	case PGM_OPT_PARITY_PRM:
		if (olen != PGM_OPT_PARITY_PRM_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first) {
			pkt->opt.parity_prm.flags = o[PGM_OPT_OFF_SPEC];
			pkt->opt.parity_prm.tgs = pgm_get32(o + PGM_OPT_OFF_VALUE);
		}
		break;
	case PGM_OPT_PARITY_GRP:
		if (olen != PGM_OPT_PARITY_GRP_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first)
			pkt->opt.parity_grp = pgm_get32(o + PGM_OPT_OFF_VALUE);
		break;
	case PGM_OPT_CURR_TGSIZE:
		if (olen != PGM_OPT_CURR_TGSIZE_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first)
			pkt->opt.curr_tgsize = pgm_get32(o + PGM_OPT_OFF_VALUE);
		break;
	case PGM_OPT_PATH_NLA: {
		/* A bare address: its family follows from the option length. */
		unsigned alen = olen - PGM_OPT_PATH_NLA_FIXED;

		if (alen != PGM_NLA_IPV4_LEN && alen != PGM_NLA_IPV6_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first) {
			memset(&pkt->opt.path_nla, 0, sizeof(pkt->opt.path_nla));
			pkt->opt.path_nla.afi =
				alen == PGM_NLA_IPV4_LEN ? PGM_AFI_IPV4 : PGM_AFI_IPV6;
			pkt->opt.path_nla.len = (uint8_t)alen;
			memcpy(pkt->opt.path_nla.addr, o + PGM_OPT_PATH_NLA_FIXED, alen);
		}
		break;
	}
	case PGM_OPT_NBR_UNREACH:
	case PGM_OPT_SYN:
	case PGM_OPT_FIN:
		if (olen != PGM_OPT_FLAG_ONLY_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		break;
	case PGM_OPT_RST:
		if (olen != PGM_OPT_FLAG_ONLY_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first)
			pkt->opt.rst_spec = o[PGM_OPT_OFF_SPEC];
		break;
	case PGM_OPT_CR:
		r = opt_nla(o, olen, PGM_OPT_CR_OFF_AFI, PGM_OPT_CR_FIXED, &nla);
		if (r == PGM_OK && first) {
			pkt->opt.cr.flags = o[PGM_OPT_OFF_SPEC];
			pkt->opt.cr.lead = pgm_get32(o + PGM_OPT_CR_OFF_LEAD);
			pkt->opt.cr.ne_wl = pgm_get16(o + PGM_OPT_CR_OFF_NE_WL);
			pkt->opt.cr.ne_wp = pgm_get16(o + PGM_OPT_CR_OFF_NE_WP);
			pkt->opt.cr.rx_wp = pgm_get16(o + PGM_OPT_CR_OFF_RX_WP);
			pkt->opt.cr.rcvr = nla;
		}
		break;
	case PGM_OPT_CRQST:
		if (olen != PGM_OPT_FLAG_ONLY_LEN)
			return PGM_ERR_OPT_BAD_SIZE;
		if (first)
			pkt->opt.crqst_flags = o[PGM_OPT_OFF_SPEC];
		break;
	case PGM_OPT_PGMCC_DATA:
		r = opt_nla(o, olen, PGM_OPT_PGMCC_OFF_AFI, PGM_OPT_PGMCC_FIXED, &nla);
		if (r == PGM_OK && first) {
			pkt->opt.pgmcc_data.tstamp = pgm_get32(o + PGM_OPT_PGMCC_OFF_TSTAMP);
			pkt->opt.pgmcc_data.acker = nla;
		}
		break;
	case PGM_OPT_PGMCC_FEEDBACK:
		r = opt_nla(o, olen, PGM_OPT_PGMCC_OFF_AFI, PGM_OPT_PGMCC_FIXED, &nla);
		if (r == PGM_OK && first) {
			pkt->opt.pgmcc_feedback.tstamp = pgm_get32(o + PGM_OPT_PGMCC_OFF_TSTAMP);
			pkt->opt.pgmcc_feedback.loss_rate =
				pgm_get16(o + PGM_OPT_PGMCC_OFF_LOSS_RATE);
			pkt->opt.pgmcc_feedback.acker = nla;
		}
		break;
	case PGM_OPT_INVALID:
		pkt->flags |= PGM_PKT_OPT_INVALID;
		return PGM_OK;
	default:
		note_unknown_opt(pkt, opx);
		return PGM_OK;
	}
	if (r == PGM_OK)
		pkt->opt_seen |= PGM_OPT_BIT(type);
	return r;
}

/* Walk the options; c->off is at OPT_LENGTH. */
static enum pgm_result parse_options(struct cursor *c, struct pgm_packet *pkt)
{
	const uint8_t *p = c->p;
	size_t off, end;
	uint16_t total;

	pkt->opts_offset = (uint16_t)c->off;
	if (cur_left(c) < PGM_OPT_LENGTH_LEN)
		return PGM_ERR_OPT_TRUNCATED;
	if ((p[c->off + PGM_OPT_OFF_TYPE] & PGM_OPT_TYPE_MASK) != PGM_OPT_LENGTH)
		return PGM_ERR_OPT_FIRST_NOT_LENGTH;
	total = pgm_get16(p + c->off + PGM_OPT_OFF_TOTAL);
	if (p[c->off + PGM_OPT_OFF_LEN] != PGM_OPT_LENGTH_LEN || total < PGM_OPT_LENGTH_LEN)
		return PGM_ERR_OPT_LENGTH_BAD;
	if (total > cur_left(c))
		return PGM_ERR_OPT_TOTAL_PAST_PACKET;
	pkt->opts_len = total;

	end = c->off + total;
	off = c->off + PGM_OPT_LENGTH_LEN;
	while (off < end) {
		const uint8_t *o = p + off;
		struct pgm_opt_rec rec;
		enum pgm_result r;

		c->off = off; /* err_offset points at the option at fault */
		if (end - off < PGM_OPT_HDR_LEN)
			return PGM_ERR_OPT_PAST_TOTAL;
		rec.offset = (uint16_t)off;
		rec.type = o[PGM_OPT_OFF_TYPE] & PGM_OPT_TYPE_MASK;
		rec.len = o[PGM_OPT_OFF_LEN];
		rec.bits = o[PGM_OPT_OFF_BITS];
		rec.spec = o[PGM_OPT_OFF_SPEC];
		rec.opx = rec.bits & PGM_OPT_OPX_MASK;
		rec.end = (o[PGM_OPT_OFF_TYPE] & PGM_OPT_END) != 0;
		if (rec.len == 0)
			return PGM_ERR_OPT_LEN_ZERO;
		if (rec.len < PGM_OPT_HDR_LEN)
			return PGM_ERR_OPT_LEN_SHORT;
		if (rec.len > end - off)
			return PGM_ERR_OPT_PAST_TOTAL;

		r = parse_opt(pkt, o, rec.type, rec.len, rec.opx);
		if (r != PGM_OK)
			return r;
		if (pkt->n_recs < PGM_PACKET_OPT_RECS)
			pkt->opts[pkt->n_recs++] = rec;
		else
			pkt->flags |= PGM_PKT_OPTS_OVERFLOW;
		pkt->n_opts++;

		off += rec.len;
		if (rec.end) {
			c->off = off;
			return off == end ? PGM_OK : PGM_ERR_OPT_END_BEFORE_TOTAL;
		}
	}
	c->off = end;
	return PGM_ERR_OPT_MISSING_END;
}

static enum pgm_result parse_fail(struct pgm_packet *pkt, enum pgm_result r, size_t at)
{
	pkt->result = r;
	pkt->err_offset = (uint32_t)at;
	return r;
}

/* Set the checksum verdict of a packet of len bytes whose header is decoded. */
static inline void parse_csum(struct pgm_packet *pkt, const uint8_t *p, size_t len)
{
	if (pkt->checksum == 0)
		pkt->csum = PGM_CSUM_ABSENT;
	else
		pkt->csum = pgm_checksum_verify(p, len) ? PGM_CSUM_GOOD : PGM_CSUM_BAD;
}

/*
 * The 16 header bytes land in pgm_packet.sport .. tsdu_len, which mirror the wire layout
 * (five big-endian 16-bit fields, two bytes and the 6-byte GSI at the same relative
 * offsets): two 8-byte copies plus a byte swap of the 16-bit lanes that hold numbers
 * decode the header in a dozen instructions.
 */
#define HDR_MIRROR_LEN 8u
_Static_assert(offsetof(struct pgm_packet, dport) - offsetof(struct pgm_packet, sport) ==
			       PGM_OFF_DPORT &&
		       offsetof(struct pgm_packet, type) - offsetof(struct pgm_packet, sport) ==
			       PGM_OFF_TYPE &&
		       offsetof(struct pgm_packet, hdr_opts) - offsetof(struct pgm_packet, sport) ==
			       PGM_OFF_OPTIONS &&
		       offsetof(struct pgm_packet, checksum) - offsetof(struct pgm_packet, sport) ==
			       PGM_OFF_CHECKSUM &&
		       offsetof(struct pgm_packet, gsi) - offsetof(struct pgm_packet, sport) ==
			       PGM_OFF_GSI &&
		       offsetof(struct pgm_packet, tsdu_len) - offsetof(struct pgm_packet, sport) ==
			       PGM_OFF_TSDU_LEN,
	       "pgm_packet header fields mirror the wire header");

/* 16-bit lanes of an 8-byte header word: sport, dport, checksum; then tsdu_len. */
#define HDR_LANES_W0 0xffff0000ffffffffull /* lanes 0, 1, 3 (lane 2: type, options) */
#define HDR_LANES_W1 0xffff000000000000ull /* lane 3 (lanes 0-2: GSI bytes) */
#define BYTE_LO_MASK 0x00ff00ff00ff00ffull

/* Byte-swap the 16-bit lanes of w selected by lanes (host little-endian only). */
static inline uint64_t swap16_lanes(uint64_t w, uint64_t lanes)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t swapped = (w >> 8 & BYTE_LO_MASK) | (w & BYTE_LO_MASK) << 8;

	return (swapped & lanes) | (w & ~lanes);
#else
	(void)lanes;
	return w;
#endif
}

/*
 * Decode the common header (len >= PGM_HDR_LEN) and reset the fields every parse leaves
 * valid; the type-specific member and the option part are written by whoever decodes them.
 */
static inline void parse_header(struct pgm_packet *pkt, const uint8_t *p)
{
	uint8_t *h = (uint8_t *)pkt + offsetof(struct pgm_packet, sport);
	uint64_t w0, w1;

	memcpy(&w0, p, HDR_MIRROR_LEN);
	memcpy(&w1, p + HDR_MIRROR_LEN, HDR_MIRROR_LEN);
	w0 = swap16_lanes(w0, HDR_LANES_W0);
	w1 = swap16_lanes(w1, HDR_LANES_W1);
	memcpy(h, &w0, HDR_MIRROR_LEN);
	memcpy(h + HDR_MIRROR_LEN, &w1, HDR_MIRROR_LEN);
	pkt->err_offset = 0;
	pkt->flags = PGM_PKT_HAVE_HEADER;
	pkt->csum = PGM_CSUM_UNCHECKED;
	pkt->opts_offset = 0;
	pkt->opts_len = 0;
	pkt->data_offset = 0;
	pkt->opt_seen = 0;
	pkt->n_opts = 0;
	pkt->n_recs = 0;
}

/* The TSDU must fill the packet from off (where the options end); then the verdict. */
static inline enum pgm_result parse_finish(struct pgm_packet *pkt, const uint8_t *p, size_t len,
					   unsigned flags, size_t off)
{
	size_t left = len - off;

	pkt->data_offset = (uint16_t)off;
	if (pkt->tsdu_len > left)
		return parse_fail(pkt, PGM_ERR_TSDU_PAST_PACKET, off);
	if (pkt->tsdu_len < left)
		return parse_fail(pkt, PGM_ERR_TRAILING_BYTES, off + pkt->tsdu_len);
	if ((flags & PGM_PARSE_CSUM_LAST) && !(flags & PGM_PARSE_NO_CSUM))
		parse_csum(pkt, p, len);
	pkt->result = pkt->csum == PGM_CSUM_BAD ? PGM_BAD_CHECKSUM : PGM_OK;
	return pkt->result;
}

/* Options from c->off (OPT_PRESENT is set), then parse_finish(). */
static __attribute__((noinline)) enum pgm_result
parse_options_finish(struct cursor *c, struct pgm_packet *pkt, unsigned flags)
{
	enum pgm_result r = parse_options(c, pkt);

	if (r != PGM_OK)
		return parse_fail(pkt, r, c->off);
	return parse_finish(pkt, c->p, c->len, flags, c->off);
}

/* Every packet the fast path in pgm_parse() does not take. */
static __attribute__((noinline)) enum pgm_result parse_full(const uint8_t *p, size_t len,
							    unsigned flags, struct pgm_packet *pkt)
{
	struct cursor c = {.p = p, .len = len, .off = PGM_HDR_LEN};
	enum pgm_result r;

	pkt->raw = p;
	pkt->len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	if (len < PGM_HDR_LEN) {
		/* Rare: keep the old all-zero picture of a packet without a header. */
		memset((uint8_t *)pkt + offsetof(struct pgm_packet, result), 0,
		       sizeof(*pkt) - offsetof(struct pgm_packet, result));
		return parse_fail(pkt, PGM_ERR_TRUNCATED_HEADER, 0);
	}
	parse_header(pkt, p);

	if (len > PGM_MAX_TPDU) {
		memset(&pkt->u, 0, sizeof(pkt->u)); /* rare: type fields not decoded */
		return parse_fail(pkt, PGM_ERR_TOO_LONG, PGM_MAX_TPDU);
	}

	/* Checksum first: it tells corruption apart from a sender's malformed packet. */
	if (!(flags & (PGM_PARSE_NO_CSUM | PGM_PARSE_CSUM_LAST)))
		parse_csum(pkt, p, len);

	if (pkt->type & PGM_TYPE_VERSION_MASK)
		return parse_fail(pkt, PGM_ERR_BAD_TYPE, PGM_OFF_TYPE);
	r = parse_type_fields(&c, pkt);
	if (r != PGM_OK)
		return parse_fail(pkt, r, r == PGM_ERR_BAD_TYPE ? PGM_OFF_TYPE : c.off);
	if (pkt->hdr_opts & PGM_HDR_OPT_PRESENT)
		return parse_options_finish(&c, pkt, flags);
	return parse_finish(pkt, p, len, flags, c.off);
}

/*
 * The rest of an ODATA/RDATA whose header and fixed fields pgm_parse() decoded: the
 * checksum, the options, the TSDU rules, in parse_full()'s order.
 */
static __attribute__((noinline)) enum pgm_result
parse_data_rest(const uint8_t *p, size_t len, unsigned flags, struct pgm_packet *pkt)
{
	struct cursor c = {.p = p, .len = len, .off = PGM_HDR_LEN + PGM_DATA_LEN};

	if (!(flags & (PGM_PARSE_NO_CSUM | PGM_PARSE_CSUM_LAST)))
		parse_csum(pkt, p, len);
	if (pkt->hdr_opts & PGM_HDR_OPT_PRESENT)
		return parse_options_finish(&c, pkt, flags);
	return parse_finish(pkt, p, len, flags, c.off);
}

/*
 * Only the fields pgm.h lists as valid are written (no memset of the whole struct: its
 * option part is most of its size and a packet without options never needs it).
 *
 * Fast path: ODATA or RDATA whose fixed fields are present, the bulk of any PGM stream.
 * Without options and without a checksum to verify it finishes here, in a few dozen
 * instructions and no stack frame; otherwise parse_data_rest() goes on. Both apply the
 * same rules in the same order as parse_full() (size, version and type, fixed fields,
 * options, TSDU length, checksum), so every path gives the same result and fields.
 */
enum pgm_result pgm_parse(const void *buf, size_t len, unsigned flags, struct pgm_packet *pkt)
{
	static const size_t data_end = PGM_HDR_LEN + PGM_DATA_LEN;
	const uint8_t *p = buf;
	const uint8_t *f = p + PGM_HDR_LEN;

	if (!(len >= data_end && len <= PGM_MAX_TPDU &&
	      (p[PGM_OFF_TYPE] == PGM_TYPE_ODATA || p[PGM_OFF_TYPE] == PGM_TYPE_RDATA)))
		return parse_full(p, len, flags, pkt);

	pkt->raw = p;
	pkt->len = (uint32_t)len;
	parse_header(pkt, p);
	pkt->u.data.sqn = pgm_get32(f + PGM_DATA_OFF_SQN);
	pkt->u.data.trail = pgm_get32(f + PGM_DATA_OFF_TRAIL);
	if ((pkt->hdr_opts & PGM_HDR_OPT_PRESENT) ||
	    (pkt->checksum && !(flags & PGM_PARSE_NO_CSUM)) || pkt->tsdu_len != len - data_end)
		return parse_data_rest(p, len, flags, pkt);

	/* Well formed; a checksum field of 0 means absent unless checking is off. */
	pkt->data_offset = (uint16_t)data_end;
	if (!(flags & PGM_PARSE_NO_CSUM))
		pkt->csum = PGM_CSUM_ABSENT;
	pkt->result = PGM_OK;
	return PGM_OK;
}

uint32_t pgm_packet_nak_list_sqn(const struct pgm_packet *pkt, unsigned i)
{
	return pgm_get32(pkt->raw + pkt->opt.nak_list.offset + (size_t)i * PGM_NAK_LIST_ENTRY);
}

const struct pgm_opt_rec *pgm_packet_opt_find(const struct pgm_packet *pkt, uint8_t type)
{
	for (unsigned i = 0; i < pkt->n_recs; i++)
		if (pkt->opts[i].type == type)
			return &pkt->opts[i];
	return NULL;
}
