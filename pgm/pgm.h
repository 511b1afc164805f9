/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pgm.h - PGM (RFC 3208) packets: constants, a strict parser, checksums, builders.
 *
 * On RDMA UD multicast a PGM packet is the UD payload itself (the bytes after the 40-byte
 * GRH area of a receive buffer). Over IP it is the IP payload (protocol 113) or the UDP
 * payload (UDP encapsulation). All wire fields are big-endian; every field this module
 * hands out is in host order.
 *
 * Nothing here allocates, locks, logs or keeps state between calls: the parser and the
 * builders may be called from any thread, concurrently, on the hot path. The per-stream
 * state lives in stream.h.
 */
#ifndef PGM_PGM_H
#define PGM_PGM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* ---- Protocol constants (RFC 3208 section numbers in brackets) ---- */

#define PGM_HDR_LEN	      16u    /* common header [8] */
#define PGM_GSI_LEN	      6u     /* global source id */
#define PGM_MAX_TPDU	      65535u /* largest PGM packet an IP datagram can carry */
#define PGM_TYPE_VERSION_MASK 0xf0u  /* high nibble of the type byte: version, must be 0 */

/* Offsets inside the common header. */
#define PGM_OFF_SPORT	 0u
#define PGM_OFF_DPORT	 2u
#define PGM_OFF_TYPE	 4u
#define PGM_OFF_OPTIONS	 5u
#define PGM_OFF_CHECKSUM 6u
#define PGM_OFF_GSI	 8u
#define PGM_OFF_TSDU_LEN 14u

/* Packet types (byte 4 of the common header). */
enum pgm_type {
	PGM_TYPE_SPM = 0x00,   /* source path message [8.1] */
	PGM_TYPE_POLL = 0x01,  /* poll request [14.7.1] */
	PGM_TYPE_POLR = 0x02,  /* poll response [14.7.2] */
	PGM_TYPE_ODATA = 0x04, /* original data [8.2] */
	PGM_TYPE_RDATA = 0x05, /* repair data [8.2] */
	PGM_TYPE_NAK = 0x08,   /* negative acknowledgement [8.3] */
	PGM_TYPE_NNAK = 0x09,  /* null NAK [8.3] */
	PGM_TYPE_NCF = 0x0a,   /* NAK confirmation [8.3] */
	PGM_TYPE_SPMR = 0x0c,  /* SPM request [13.6] */
	PGM_TYPE_ACK = 0x0d,   /* PGMCC acknowledgement */
};

/* Options byte (byte 5 of the common header). */
#define PGM_HDR_OPT_PRESENT    0x01u /* option extensions follow the type fields */
#define PGM_HDR_OPT_NETWORK    0x02u /* network-significant options present */
#define PGM_HDR_OPT_VAR_PKTLEN 0x40u /* variable-length parity packets */
#define PGM_HDR_OPT_PARITY     0x80u /* this is a parity packet (FEC) */

/* Network layer address family indicators (RFC 1700). */
#define PGM_AFI_IPV4	 1u
#define PGM_AFI_IPV6	 2u
#define PGM_NLA_IPV4_LEN 4u
#define PGM_NLA_IPV6_LEN 16u
#define PGM_NLA_MAX_LEN	 PGM_NLA_IPV6_LEN

/* An NLA block on the wire: AFI (16), reserved (16), address. */
#define PGM_NLA_HDR_LEN	     4u
#define PGM_NLA_OFF_AFI	     0u
#define PGM_NLA_OFF_RESERVED 2u

/* Fixed-size parts of the type-specific fields (after the common header). */
#define PGM_SPM_FIXED_LEN  12u /* SQN, TRAIL, LEAD; then an NLA block */
#define PGM_POLL_FIXED_LEN 8u  /* SQN, ROUND, S_TYPE; then an NLA block */
#define PGM_POLL_TAIL_LEN  12u /* BO_IVL, RAND, MASK after the NLA */
#define PGM_POLR_LEN	   8u  /* SQN, ROUND, reserved */
#define PGM_DATA_LEN	   8u  /* DATA_SQN, DATA_TRAIL */
#define PGM_DATA_OFF_SQN   0u  /* ODATA/RDATA fields after the common header: DATA_SQN */
#define PGM_DATA_OFF_TRAIL 4u  /* DATA_TRAIL */
#define PGM_NAK_FIXED_LEN  4u  /* NAK_SQN; then two NLA blocks */
#define PGM_ACK_LEN	   8u  /* RX_MAX, bitmap */

/* Option types (byte 0 of an option, low 7 bits) [9]. */
enum pgm_opt_type {
	PGM_OPT_LENGTH = 0x00,
	PGM_OPT_FRAGMENT = 0x01,
	PGM_OPT_NAK_LIST = 0x02,
	PGM_OPT_JOIN = 0x03,
	PGM_OPT_NAK_BO_IVL = 0x04,
	PGM_OPT_NAK_BO_RNG = 0x05,
	PGM_OPT_REDIRECT = 0x07,
	PGM_OPT_PARITY_PRM = 0x08,
	PGM_OPT_PARITY_GRP = 0x09,
	PGM_OPT_CURR_TGSIZE = 0x0a,
	PGM_OPT_NBR_UNREACH = 0x0b,
	PGM_OPT_PATH_NLA = 0x0c,
	PGM_OPT_SYN = 0x0d,
	PGM_OPT_FIN = 0x0e,
	PGM_OPT_RST = 0x0f,
	PGM_OPT_CR = 0x10,
	PGM_OPT_CRQST = 0x11,
	PGM_OPT_PGMCC_DATA = 0x12,
	PGM_OPT_PGMCC_FEEDBACK = 0x13,
	PGM_OPT_INVALID = 0x7f, /* an option a network element invalidated */
};

#define PGM_OPT_KNOWN_MAX  PGM_OPT_PGMCC_FEEDBACK /* highest RFC/PGMCC option type */
#define PGM_OPT_END	   0x80u		  /* byte 0: E bit, last option */
#define PGM_OPT_TYPE_MASK  0x7fu
#define PGM_OPT_HDR_LEN	   4u /* type, length, OPX byte, option-specific byte */
#define PGM_OPT_LENGTH_LEN 4u /* OPT_LENGTH: type, length (4), 16-bit total length */

/* Offsets inside an option. */
#define PGM_OPT_OFF_TYPE  0u
#define PGM_OPT_OFF_LEN	  1u
#define PGM_OPT_OFF_BITS  2u
#define PGM_OPT_OFF_SPEC  3u
#define PGM_OPT_OFF_TOTAL 2u /* OPT_LENGTH: 16-bit total length */

/*
 * Byte 2 of an option carries the F bit and the OPX bits, byte 3 the U bit (bit positions
 * as OpenPGM encodes them, the implementation the tests interoperate with).
 */
#define PGM_OPT_F_BIT	 0x08u /* byte 2: option is FEC-encoded */
#define PGM_OPT_OPX_MASK 0x03u /* byte 2: what to do when the option is not understood */
#define PGM_OPT_U_BIT	 0x80u /* byte 3: FEC-encoded option was null in some packets */

enum pgm_opx {
	PGM_OPX_IGNORE = 0,	/* skip the option, process the packet */
	PGM_OPX_INVALIDATE = 1, /* a network element sets the type to OPT_INVALID */
	PGM_OPX_DISCARD = 2,	/* drop the whole packet */
	PGM_OPX_RESERVED = 3,	/* undefined by RFC 3208: treated as ignore */
};

/* Vendor option that the reference bridge saw carrying a stream label. */
#define PGM_OPT_VENDOR_LABEL 0x22u

#define PGM_NAK_LIST_MAX 62u /* extra SQNs in one OPT_NAK_LIST [9.3.5] */

/* OPT_PARITY_PRM option-specific byte (OpenPGM encoding). */
#define PGM_PARITY_PRM_PRO 0x01u /* pro-active parity */
#define PGM_PARITY_PRM_OND 0x02u /* on-demand parity */

/* ---- Serial-number arithmetic on 32-bit SQNs (RFC 1982 style) ---- */

/* True when a precedes b in sequence space (a < b iff (int32_t)(a - b) < 0). */
static inline bool pgm_sqn_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static inline bool pgm_sqn_lte(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}

static inline bool pgm_sqn_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

static inline bool pgm_sqn_gte(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

/* Signed distance from a to b in sequence space (positive when b is ahead). */
static inline int32_t pgm_sqn_diff(uint32_t b, uint32_t a)
{
	return (int32_t)(b - a);
}

/* ---- Parse results ---- */

/*
 * Classification of one packet. PGM_OK and PGM_BAD_CHECKSUM mean every field was decoded;
 * a bad checksum is not a reason to drop by itself (see pgm_result_drop()). Every other
 * value names the first rule the packet broke. Keep pgm_result_name() in step.
 */
enum pgm_result {
	PGM_OK = 0,
	PGM_BAD_CHECKSUM,	       /* well formed, checksum present and wrong */
	PGM_ERR_TRUNCATED_HEADER,      /* shorter than the 16-byte common header */
	PGM_ERR_TOO_LONG,	       /* longer than PGM_MAX_TPDU */
	PGM_ERR_BAD_TYPE,	       /* version nibble not 0 or type not defined */
	PGM_ERR_TRUNCATED_TYPE,	       /* type-specific fields run past the end */
	PGM_ERR_BAD_AFI,	       /* an NLA with an AFI other than IPv4/IPv6 */
	PGM_ERR_OPT_TRUNCATED,	       /* OPT_PRESENT set, no room for OPT_LENGTH */
	PGM_ERR_OPT_FIRST_NOT_LENGTH,  /* first option is not OPT_LENGTH */
	PGM_ERR_OPT_LENGTH_BAD,	       /* OPT_LENGTH length != 4 or total length < 4 */
	PGM_ERR_OPT_TOTAL_PAST_PACKET, /* options total length runs past the end */
	PGM_ERR_OPT_LEN_ZERO,	       /* an option with length 0 */
	PGM_ERR_OPT_LEN_SHORT,	       /* an option shorter than its 4-byte header */
	PGM_ERR_OPT_PAST_TOTAL,	       /* an option runs past the options total length */
	PGM_ERR_OPT_MISSING_END,       /* options total used up, no option had the E bit */
	PGM_ERR_OPT_END_BEFORE_TOTAL,  /* E bit set before the options total length */
	PGM_ERR_OPT_BAD_SIZE,	       /* known option with a length its type does not allow */
	PGM_ERR_OPT_DUP_LENGTH,	       /* a second OPT_LENGTH */
	PGM_ERR_TSDU_PAST_PACKET,      /* TSDU length larger than the bytes left */
	PGM_ERR_TRAILING_BYTES,	       /* bytes left after the TSDU */
	PGM_RESULT_COUNT
};

/*
 * pgm_result_name - short snake_case name of a result, for counters and JSON keys.
 * Any thread. Returns a static string ("unknown" for out-of-range values). O(1).
 */
const char *pgm_result_name(enum pgm_result r);

/* True for results where the packet's fields could not all be decoded. */
static inline bool pgm_result_malformed(enum pgm_result r)
{
	return r != PGM_OK && r != PGM_BAD_CHECKSUM;
}

/* Forwarding policy bits for pgm_result_drop(). */
#define PGM_DROP_BAD_CHECKSUM 0x1u /* drop packets whose checksum is wrong */
#define PGM_DROP_MALFORMED    0x2u /* drop packets that are not valid PGM */

/*
 * pgm_result_drop - whether a packet with this result is dropped under policy (a mask of
 * PGM_DROP_*). With policy 0 nothing is dropped: a multicast group may carry non-PGM
 * traffic and a bad checksum is counted, not enforced. Any thread. O(1).
 */
static inline bool pgm_result_drop(enum pgm_result r, unsigned policy)
{
	if (r == PGM_BAD_CHECKSUM)
		return (policy & PGM_DROP_BAD_CHECKSUM) != 0;
	return pgm_result_malformed(r) && (policy & PGM_DROP_MALFORMED) != 0;
}

/* ---- Structural pre-check ---- */

/* Big-endian 16-bit field at p (the wire's byte order). */
static inline uint16_t pgm_get16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

/* The 16-bit field at p as the wire has it (big-endian), to compare with htons(value). */
static inline uint16_t pgm_get16_wire(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Big-endian 32-bit field at p. */
static inline uint32_t pgm_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Address length for an AFI, 0 when the AFI is not IPv4 or IPv6. */
static inline unsigned pgm_afi_len(uint16_t afi)
{
	if (afi == PGM_AFI_IPV4)
		return PGM_NLA_IPV4_LEN;
	if (afi == PGM_AFI_IPV6)
		return PGM_NLA_IPV6_LEN;
	return 0u;
}

/*
 * pgm_surely_malformed - cheap test that the len bytes at buf cannot be a PGM packet.
 *
 * Contract: returns true only when pgm_parse() on the same bytes returns a malformed
 * result (pgm_result_malformed()), whatever its flags; it never returns true for a packet
 * pgm_parse() accepts (PGM_OK or PGM_BAD_CHECKSUM). It may return false for a malformed
 * packet: false means "ask pgm_parse()", not "well formed". A data path therefore calls it
 * first and counts a true result exactly as a malformed pgm_parse() result (the drop
 * decision is pgm_result_drop() of any malformed result: policy & PGM_DROP_MALFORMED).
 *
 * Rejects: len < 16 or > PGM_MAX_TPDU; a version nibble or type pgm_parse() refuses;
 * type-specific fields that do not fit; an AFI other than IPv4/IPv6 where the type puts
 * an NLA (SPM, POLL, NAK, NNAK, NCF); without OPT_PRESENT, a TSDU length other than
 * exactly the bytes after the type-specific fields; with OPT_PRESENT, an OPT_LENGTH that
 * is not first, not 4 bytes long or whose total length does not leave exactly the TSDU
 * length, or a first option that is a second OPT_LENGTH, is shorter than its header,
 * runs past that total, or has the E bit and does not end at it. Without options its
 * answer is exact: false means pgm_parse() accepts the packet. An all-zero payload (an SPM
 * with AFI 0) and practically every random payload (all of the 2 million the test draws)
 * are rejected. Checksums are never looked at.
 *
 * Reads only inside [buf, buf + len), at most the first 16 bytes, one or two AFIs and the
 * first 8 option bytes. Any thread, no state. Cost: a few loads and compares, no loop
 * (about 6 instructions for a payload whose type byte is not PGM's, 20 for one that has
 * PGM's type and version but not its lengths, 15 for ODATA).
 */
/*
 * The layout of each defined type (pgm_surely_malformed() only; parse.c fills it):
 * where its fixed fields end or its first NLA block starts (0: type not defined), its
 * number of NLA blocks, and the fixed bytes after them.
 */
struct pgm_type_shape {
	uint8_t end;
	uint8_t nlas;
	uint8_t tail;
};
extern const struct pgm_type_shape pgm_type_shapes[16];

/*
 * For each type byte, bit k set when a packet without options may have k bytes between
 * the common header and the TSDU (the type's fields: every combination of IPv4/IPv6
 * NLAs); 0 for a type not defined and for every byte with a version nibble (0x10 and
 * up), so that one lookup also does the version test, and never 0 for a type
 * pgm_parse() defines (pgm_precheck() rejects on 0 alone, options or not). parse.c fills
 * it.
 */
extern const uint64_t pgm_type_sizes[256];

/*
 * What pgm_precheck() makes of a payload: MAYBE (ask pgm_parse()), NOT_PGM (the common
 * header does not have PGM's shape: length out of range, a version nibble or type
 * pgm_parse() refuses, or without options a TSDU length that leaves no room the type's
 * fields could fill: other UDP traffic on the group), MALFORMED (the header's shape is
 * PGM's but its addresses, lengths or first options are invalid).
 */
enum pgm_shape {
	PGM_SHAPE_MAYBE = 0,
	PGM_SHAPE_NOT_PGM,
	PGM_SHAPE_MALFORMED,
};

/*
 * pgm_precheck - pgm_surely_malformed() that also tells which of its tests refused the
 * payload (enum pgm_shape); the same contract and cost: anything but PGM_SHAPE_MAYBE
 * means pgm_parse() returns a malformed result.
 */
static inline __attribute__((always_inline)) enum pgm_shape pgm_precheck(const void *buf,
									 size_t len)
{
	const uint8_t *p = buf;
	const struct pgm_type_shape *shape;
	size_t end, total, tsdu;
	uint64_t sizes;
	unsigned alen;

	if (len - PGM_HDR_LEN > PGM_MAX_TPDU - PGM_HDR_LEN) /* len < PGM_HDR_LEN wraps */
		return PGM_SHAPE_NOT_PGM;
	/*
	 * A version nibble other than 0 or a type pgm_parse() does not define: their entries
	 * are 0. The test most payloads that are not PGM fail (15 in 16 random type bytes),
	 * so it comes first.
	 */
	sizes = pgm_type_sizes[p[PGM_OFF_TYPE]];
	if (!sizes)
		return PGM_SHAPE_NOT_PGM;
	/*
	 * Without options, what lies between the header and the TSDU must be the type's
	 * fields exactly (pgm_parse() wants tsdu_len == the bytes left after them): one
	 * bit of the type's entry.
	 */
	if (!(p[PGM_OFF_OPTIONS] & PGM_HDR_OPT_PRESENT)) {
		size_t fields = len - PGM_HDR_LEN - pgm_get16(p + PGM_OFF_TSDU_LEN);

		/* A TSDU longer than the packet wraps around to a large value: rejected. */
		if (fields >= 64 || !((sizes >> fields) & 1))
			return PGM_SHAPE_NOT_PGM;
	}
	/* The version nibble is 0 here (the table): the mask is for the compiler. */
	shape = &pgm_type_shapes[p[PGM_OFF_TYPE] & 0x0f];
	end = shape->end;
	if (!end)
		return PGM_SHAPE_NOT_PGM;
	for (unsigned k = 0; k < shape->nlas; k++) {
		/* An NLA block at end (NAK, NNAK, NCF: two): its AFI in the packet, IPv4/IPv6. */
		if (len < end + PGM_NLA_OFF_AFI + 2)
			return PGM_SHAPE_MALFORMED;
		alen = pgm_afi_len(pgm_get16(p + end + PGM_NLA_OFF_AFI));
		if (!alen)
			return PGM_SHAPE_MALFORMED;
		end += PGM_NLA_HDR_LEN + alen;
	}
	end += shape->tail;
	if (end > len)
		return PGM_SHAPE_MALFORMED;
	tsdu = pgm_get16(p + PGM_OFF_TSDU_LEN);
	if (!(p[PGM_OFF_OPTIONS] & PGM_HDR_OPT_PRESENT))
		return tsdu != len - end ? PGM_SHAPE_MALFORMED : PGM_SHAPE_MAYBE;
	/*
	 * OPT_LENGTH at end, then at least one 4-byte option (pgm_parse() wants an E bit),
	 * then exactly tsdu bytes.
	 */
	if (len - end < tsdu + PGM_OPT_LENGTH_LEN + PGM_OPT_HDR_LEN)
		return PGM_SHAPE_MALFORMED;
	total = len - end - tsdu;
	p += end; /* OPT_LENGTH */
	if ((p[PGM_OPT_OFF_TYPE] & PGM_OPT_TYPE_MASK) != PGM_OPT_LENGTH ||
	    p[PGM_OPT_OFF_LEN] != PGM_OPT_LENGTH_LEN || pgm_get16(p + PGM_OPT_OFF_TOTAL) != total)
		return PGM_SHAPE_MALFORMED;
	p += PGM_OPT_LENGTH_LEN; /* first option: not a second OPT_LENGTH, inside the total */
	total -= PGM_OPT_LENGTH_LEN;
	return (p[PGM_OPT_OFF_TYPE] & PGM_OPT_TYPE_MASK) == PGM_OPT_LENGTH ||
			       p[PGM_OPT_OFF_LEN] < PGM_OPT_HDR_LEN || p[PGM_OPT_OFF_LEN] > total ||
			       ((p[PGM_OPT_OFF_TYPE] & PGM_OPT_END) && p[PGM_OPT_OFF_LEN] != total)
		       ? PGM_SHAPE_MALFORMED
		       : PGM_SHAPE_MAYBE;
}

static inline __attribute__((always_inline)) bool pgm_surely_malformed(const void *buf, size_t len)
{
	return pgm_precheck(buf, len) != PGM_SHAPE_MAYBE;
}

/* ---- Decoded packet ---- */

/* A network layer address; len is 0 when absent, 4 for IPv4, 16 for IPv6. */
struct pgm_nla {
	uint16_t afi;
	uint8_t len;
	uint8_t addr[PGM_NLA_MAX_LEN];
};

/* Checksum state of a parsed packet. */
enum pgm_csum_status {
	PGM_CSUM_UNCHECKED = 0, /* not verified (PGM_PARSE_NO_CSUM, or too short) */
	PGM_CSUM_ABSENT,	/* checksum field is 0: sender did not compute one */
	PGM_CSUM_GOOD,
	PGM_CSUM_BAD,
};

/* One option as it appears in the packet. */
struct pgm_opt_rec {
	uint16_t offset; /* from the start of the packet */
	uint8_t type;	 /* byte 0 without the E bit */
	uint8_t len;	 /* byte 1 */
	uint8_t bits;	 /* byte 2: F bit and OPX bits */
	uint8_t spec;	 /* byte 3: U bit / option-specific */
	uint8_t opx;	 /* enum pgm_opx */
	uint8_t end;	 /* E bit */
};

/* Options recorded in pgm_packet.opts[]; later ones are counted, not recorded. */
#define PGM_PACKET_OPT_RECS 16u

/* pgm_packet.flags */
#define PGM_PKT_HAVE_HEADER    0x01u /* common header fields are valid */
#define PGM_PKT_UNKNOWN_OPT    0x02u /* at least one option type this parser does not know */
#define PGM_PKT_OPX_INVALIDATE 0x04u /* an unknown option asks to be invalidated */
#define PGM_PKT_OPX_DISCARD    0x08u /* an unknown option asks to discard the packet */
#define PGM_PKT_OPT_INVALID    0x10u /* an OPT_INVALID option is present */
#define PGM_PKT_OPTS_OVERFLOW  0x20u /* more options than PGM_PACKET_OPT_RECS */

/* Bit for option type t (t <= PGM_OPT_KNOWN_MAX) in pgm_packet.opt_seen. */
#define PGM_OPT_BIT(t) (1u << (t))

/*
 * Everything the parser decodes. Offsets are from the start of the packet. raw points into
 * the caller's buffer: accessors that read through it are valid only while that buffer is.
 *
 * Which fields pgm_parse() writes (it does not clear the whole struct; a field it does not
 * write keeps whatever the caller's memory held, so read only what is listed here):
 * - always: raw, len, result, err_offset (0 unless malformed), flags.
 * - PGM_PKT_HAVE_HEADER set: every common header field (sport .. tsdu_len), csum,
 *   opts_offset, opts_len, data_offset (each 0 until the parser reaches that part),
 *   opt_seen, n_opts, n_recs.
 *   Without the flag (fewer than 16 bytes) every field is 0 except raw and len.
 * - u: once the header is decoded, the member that type names (data for ODATA/RDATA, nak
 *   for NAK/NNAK/NCF, ...) is written in full, fields the packet did not reach and
 *   address bytes past an NLA's len being 0. No member is written for an undefined type.
 * - opts[i] for i < n_recs.
 * - opt.<x>: only when opt_seen has the bit of option x (for OPT_NAK_LIST, nak_list and
 *   pgm_packet_nak_list_sqn()); an NLA in it has address bytes past its len zeroed.
 * On a malformed result the fields of the parts decoded before the broken rule are valid
 * as above; later parts read as absent (0 counts, no opt_seen bits).
 */
struct pgm_packet {
	const uint8_t *raw;
	uint32_t len;		/* bytes given to the parser */
	enum pgm_result result; /* same value pgm_parse() returned */
	uint32_t err_offset;	/* where the first broken rule was found */
	uint32_t flags;		/* PGM_PKT_* */

	/* Common header. */
	uint16_t sport;
	uint16_t dport;
	uint8_t type;
	uint8_t hdr_opts;
	uint16_t checksum;
	uint8_t gsi[PGM_GSI_LEN];
	uint16_t tsdu_len;
	enum pgm_csum_status csum;

	/* Layout. */
	uint16_t opts_offset; /* OPT_LENGTH position, 0 when no options */
	uint16_t opts_len;    /* OPT_LENGTH total length */
	uint16_t data_offset; /* first TSDU byte */

	/* Type-specific fields; which member is valid follows type. */
	union {
		struct {
			uint32_t sqn, trail, lead;
			struct pgm_nla nla;
		} spm;
		struct {
			uint32_t sqn;
			uint16_t round, s_type;
			struct pgm_nla nla;
			uint32_t bo_ivl;
			uint8_t rand[4];
			uint32_t mask;
		} poll;
		struct {
			uint32_t sqn;
			uint16_t round;
		} polr;
		struct {
			uint32_t sqn, trail;
		} data; /* ODATA and RDATA */
		struct {
			uint32_t sqn;
			struct pgm_nla src, grp;
		} nak; /* NAK, NNAK and NCF */
		struct {
			uint32_t rx_max, bitmap;
		} ack;
	} u;

	/* Options. */
	uint32_t opt_seen; /* PGM_OPT_BIT() of every known type present */
	uint16_t n_opts;   /* options after OPT_LENGTH */
	uint8_t n_recs;	   /* entries used in opts[] */
	struct pgm_opt_rec opts[PGM_PACKET_OPT_RECS];

	/* Decoded known options (the first occurrence of each type). */
	struct {
		struct {
			uint32_t first_sqn, offset, apdu_len;
		} fragment;
		struct {
			uint16_t offset; /* first SQN of the list */
			uint8_t count;
		} nak_list;
		uint32_t join_min;
		struct {
			uint32_t ivl, ivl_sqn;
		} nak_bo_ivl;
		struct {
			uint32_t max_ivl, min_ivl;
		} nak_bo_rng;
		struct pgm_nla redirect;
		struct {
			uint8_t flags; /* PGM_PARITY_PRM_* */
			uint32_t tgs;
		} parity_prm;
		uint32_t parity_grp;
		uint32_t curr_tgsize;
		struct pgm_nla path_nla;
		uint8_t rst_spec; /* OPT_RST option-specific byte */
		struct {
			uint8_t flags;
			uint32_t lead;
			uint16_t ne_wl, ne_wp, rx_wp;
			struct pgm_nla rcvr;
		} cr;
		uint8_t crqst_flags;
		struct {
			uint32_t tstamp;
			struct pgm_nla acker;
		} pgmcc_data;
		struct {
			uint32_t tstamp;
			uint16_t loss_rate;
			struct pgm_nla acker;
		} pgmcc_feedback;
	} opt;
};

/* Flags for pgm_parse(). */
#define PGM_PARSE_NO_CSUM 0x1u /* skip checksum verification (csum = UNCHECKED) */
/*
 * Verify the checksum only once the packet parsed well: a payload that is not PGM at all
 * (a group carrying other traffic) is rejected without summing it, and its csum stays
 * UNCHECKED. For data paths that see non-PGM traffic; without the flag the checksum is
 * verified first, which tells corruption (bad checksum) apart from a malformed sender.
 */
#define PGM_PARSE_CSUM_LAST 0x2u

/*
 * pgm_parse - decode and validate one PGM packet.
 * @buf, @len: the packet (for UD: the payload after the GRH area). Never modified, never
 *             read outside [buf, buf + len).
 * @flags: PGM_PARSE_*.
 * @pkt: output; the fields listed before struct pgm_packet are written, no others.
 *
 * Validates the common header, the type-specific fields, every option (OPT_LENGTH first,
 * lengths non-zero and inside the options total, E bit on the last one, sizes of known
 * options, AFIs) and that exactly tsdu_len bytes follow the options; then verifies the
 * checksum when the field is non-zero. Options of unknown type are recorded with their
 * OPX bits (PGM_PKT_OPX_* flags); the parser itself never acts on them.
 * On a malformed packet pkt->result names the first broken rule, pkt->err_offset where;
 * the fields decoded before that point stay valid (PGM_PKT_HAVE_HEADER tells whether the
 * common header is).
 *
 * Any thread, no locks, no allocation. Cost: one pass over the header and options plus
 * one checksum pass over the packet (skipped with PGM_PARSE_NO_CSUM). An ODATA/RDATA
 * without options and with no checksum to verify takes a fast path of about 50
 * instructions; every option costs roughly 100 more. A data path that sees non-PGM traffic
 * calls pgm_surely_malformed() first.
 * Returns pkt->result.
 */
enum pgm_result pgm_parse(const void *buf, size_t len, unsigned flags, struct pgm_packet *pkt);

/* True for types that travel receiver -> source (NAK, NNAK, SPMR, POLR, ACK). */
static inline bool pgm_type_upstream(uint8_t type)
{
	return type == PGM_TYPE_NAK || type == PGM_TYPE_NNAK || type == PGM_TYPE_SPMR ||
	       type == PGM_TYPE_POLR || type == PGM_TYPE_ACK;
}

/*
 * pgm_type_name - "SPM", "ODATA", ... for a type byte; "unknown" otherwise. Any thread.
 */
const char *pgm_type_name(uint8_t type);

/*
 * pgm_packet_tsi_port - the TSI source port of a parsed packet: the header source port
 * for downstream types, the destination port for upstream ones (a NAK is addressed to the
 * source's port). Requires PGM_PKT_HAVE_HEADER. Any thread. O(1).
 */
static inline uint16_t pgm_packet_tsi_port(const struct pgm_packet *pkt)
{
	return pgm_type_upstream(pkt->type) ? pkt->dport : pkt->sport;
}

/*
 * pgm_packet_nak_list_sqn - the i-th SQN of the packet's OPT_NAK_LIST (requires
 * PGM_OPT_BIT(PGM_OPT_NAK_LIST) in pkt->opt_seen and i < pkt->opt.nak_list.count). Reads
 * through pkt->raw. Any thread. O(1).
 */
uint32_t pgm_packet_nak_list_sqn(const struct pgm_packet *pkt, unsigned i);

/*
 * pgm_packet_opt_find - the first recorded option of type (without E bit), or NULL.
 * Looks at pkt->opts[] only (the first PGM_PACKET_OPT_RECS options). Any thread.
 */
const struct pgm_opt_rec *pgm_packet_opt_find(const struct pgm_packet *pkt, uint8_t type);

/* ---- Checksum (ones' complement, RFC 3208 section 8) ---- */

/*
 * pgm_checksum - the checksum value a sender puts in the field for this packet: the
 * ones' complement of the ones' complement sum of all len bytes with the checksum field
 * (bytes 6-7) taken as zero; a computed 0 is returned as 0xffff. No pseudo-header.
 * Requires len >= PGM_HDR_LEN. Any thread. Cost: one pass over the bytes.
 */
uint16_t pgm_checksum(const void *buf, size_t len);

/*
 * pgm_checksum_verify - true when the checksum field is 0 (absent) or matches the
 * packet. Requires len >= PGM_HDR_LEN. Any thread. One pass over the bytes.
 */
bool pgm_checksum_verify(const void *buf, size_t len);

/*
 * pgm_checksum_fill - compute and store the checksum of the packet in its field.
 * Requires len >= PGM_HDR_LEN. Any thread. One pass over the bytes.
 */
void pgm_checksum_fill(void *buf, size_t len);

/*
 * pgm_csum_sum - 16-bit ones' complement sum of len bytes (big-endian words, an odd last
 * byte padded with zero), folded, in host order. Building block for the functions above
 * and for incremental updates. Any thread. One pass over the bytes.
 */
uint16_t pgm_csum_sum(const void *buf, size_t len);

/*
 * The ones' complement sum is accumulated over native 64-bit words with end-around carry
 * and folded at the end: a ones' complement sum is byte-order independent up to a final
 * byte swap (RFC 1071 section 2(B)). Inline for the data path (pgm_csum_ok()).
 */
/* Bytes summed per add. */
#define PGM_CSUM_WORD 8u
/* Ones' complement "negative zero": what a packet with a valid checksum sums to. */
#define PGM_CSUM_ALL_ONES 0xffffu

/* The native word at p (any alignment). */
static inline uint64_t pgm_csum_word(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/* sum + v with end-around carry (2^64 is 1 in ones' complement arithmetic). */
static inline uint64_t pgm_csum_add(uint64_t sum, uint64_t v)
{
	sum += v;
	return sum + (sum < v);
}

/* The last len (< 8) bytes at p as a word, each byte at its place in memory, zero padded. */
static inline __attribute__((always_inline)) uint64_t pgm_csum_partial(const uint8_t *p, size_t len)
{
	uint64_t w = 0;
	uint8_t *q = (uint8_t *)&w;
	size_t i = 0;

	/* At most three fixed-size copies instead of a byte loop. */
	if (len & 4) {
		memcpy(q, p, 4);
		i = 4;
	}
	if (len & 2) {
		memcpy(q + i, p + i, 2);
		i += 2;
	}
	if (len & 1)
		q[i] = p[i];
	return w;
}

/*
 * pgm_csum_acc(buf, len) - the ones' complement sum of len bytes in native 64-bit words,
 * not folded (pgm_csum_sum() folds it and swaps its bytes on a little-endian host). Any
 * thread. About one instruction per 8 bytes on x86-64, two elsewhere, and a few more.
 */
#if defined(__x86_64__) && !defined(PGM_CSUM_PORTABLE) && !defined(__SANITIZE_ADDRESS__)
/*
 * x86-64: one add-with-carry chain per block of words, the chain's last carry added back
 * with one more ADC. That add cannot carry again: a chain started without carry never
 * ends with the sum all ones and a carry (that needs sum, word and incoming carry all at
 * their maximum, which is the same state one step earlier), so the sum is at most
 * 2^64 - 2 when a carry comes out. About one instruction per 8 bytes. In assembly:
 * gcc 12 keeps _addcarry_u64's results in memory once inlined into the data path's
 * loop. PGM_CSUM_PORTABLE selects the portable code (tests/pgm/test_checksum.c also runs
 * it here), and so does AddressSanitizer, which does not see the assembly's loads.
 */

/* sum + the 8 words at p. */
static inline __attribute__((always_inline)) uint64_t pgm_csum_adc8(uint64_t sum, const uint8_t *p)
{
	__asm__("addq 0(%[p]), %[s]\n\t"
		"adcq 8(%[p]), %[s]\n\t"
		"adcq 16(%[p]), %[s]\n\t"
		"adcq 24(%[p]), %[s]\n\t"
		"adcq 32(%[p]), %[s]\n\t"
		"adcq 40(%[p]), %[s]\n\t"
		"adcq 48(%[p]), %[s]\n\t"
		"adcq 56(%[p]), %[s]\n\t"
		"adcq $0, %[s]"
		: [s] "+r"(sum)
		: [p] "r"(p), "m"(*(const uint8_t(*)[8 * PGM_CSUM_WORD]) p)
		: "cc");
	return sum;
}

/* sum + the 4 words at p. */
static inline __attribute__((always_inline)) uint64_t pgm_csum_adc4(uint64_t sum, const uint8_t *p)
{
	__asm__("addq 0(%[p]), %[s]\n\t"
		"adcq 8(%[p]), %[s]\n\t"
		"adcq 16(%[p]), %[s]\n\t"
		"adcq 24(%[p]), %[s]\n\t"
		"adcq $0, %[s]"
		: [s] "+r"(sum)
		: [p] "r"(p), "m"(*(const uint8_t(*)[4 * PGM_CSUM_WORD]) p)
		: "cc");
	return sum;
}

/* sum + the 2 words at p. */
static inline __attribute__((always_inline)) uint64_t pgm_csum_adc2(uint64_t sum, const uint8_t *p)
{
	__asm__("addq 0(%[p]), %[s]\n\t"
		"adcq 8(%[p]), %[s]\n\t"
		"adcq $0, %[s]"
		: [s] "+r"(sum)
		: [p] "r"(p), "m"(*(const uint8_t(*)[2 * PGM_CSUM_WORD]) p)
		: "cc");
	return sum;
}

static inline __attribute__((always_inline)) uint64_t pgm_csum_acc(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t sum = 0;

	for (size_t n = len / (8 * PGM_CSUM_WORD); n; n--, p += 8 * PGM_CSUM_WORD)
		sum = pgm_csum_adc8(sum, p);
	len %= 8 * PGM_CSUM_WORD;
	if (!len)
		return sum;
	if (len & 4 * PGM_CSUM_WORD) {
		sum = pgm_csum_adc4(sum, p);
		p += 4 * PGM_CSUM_WORD;
	}
	if (len & 2 * PGM_CSUM_WORD) {
		sum = pgm_csum_adc2(sum, p);
		p += 2 * PGM_CSUM_WORD;
	}
	if (len & PGM_CSUM_WORD) {
		sum = pgm_csum_add(sum, pgm_csum_word(p));
		p += PGM_CSUM_WORD;
	}
	if (len & (PGM_CSUM_WORD - 1))
		sum = pgm_csum_add(sum, pgm_csum_partial(p, len & (PGM_CSUM_WORD - 1)));
	return sum;
}
#else
/* Portable: four words a step, their carries counted apart and added back at the end. */
static inline __attribute__((always_inline)) uint64_t pgm_csum_acc(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t sum = 0, carries = 0, w;

	/* An add and an add-with-carry per word: a PGM packet (< 64 KiB) cannot carry 2^64 times.
	 */
	for (; len >= 4 * PGM_CSUM_WORD; p += 4 * PGM_CSUM_WORD, len -= 4 * PGM_CSUM_WORD) {
		for (unsigned i = 0; i < 4; i++) {
			w = pgm_csum_word(p + i * PGM_CSUM_WORD);
			sum += w;
			carries += sum < w;
		}
	}
	sum = pgm_csum_add(sum, carries);
	for (; len >= PGM_CSUM_WORD; p += PGM_CSUM_WORD, len -= PGM_CSUM_WORD)
		sum = pgm_csum_add(sum, pgm_csum_word(p));
	if (len)
		sum = pgm_csum_add(sum, pgm_csum_partial(p, len));
	return sum;
}
#endif

/*
 * pgm_csum_ok - whether pgm_csum_sum(buf, len) is 0xffff (what a packet with a valid,
 * present checksum sums to), without folding the sum. Any thread, inline. One pass over
 * the bytes (pgm_csum_acc()) and a multiply.
 */
static inline __attribute__((always_inline)) bool pgm_csum_ok(const void *buf, size_t len)
{
	uint64_t sum = pgm_csum_acc(buf, len);

	/*
	 * Every fold step keeps the value modulo 0xffff (2^16 = 1 modulo 0xffff) and maps
	 * only 0 to 0: the folded sum is all ones exactly when the 64-bit one is a non-zero
	 * multiple of 0xffff, in either byte order. One division by a constant (a multiply)
	 * instead of the fold and the swap.
	 */
	return sum != 0 && sum % PGM_CSUM_ALL_ONES == 0;
}

/* ---- Builders ---- */

/* Transport session identity of a packet a builder writes. */
struct pgm_tsi {
	uint8_t gsi[PGM_GSI_LEN];
	uint16_t sport; /* host order */
};

/* Options a data builder may add. */
#define PGM_BUILD_SYN 0x1u /* OPT_SYN: first packet of the stream */
#define PGM_BUILD_FIN 0x2u /* OPT_FIN: last packet of the stream */

/*
 * pgm_build_spm - write an SPM into buf (capacity cap): header from tsi/dport, SPM SQN,
 * window trail/lead, path NLA (IPv4 or IPv6), no options, checksum filled.
 * Returns the packet length, -EINVAL for a bad NLA, -ENOSPC when cap is too small
 * (buf untouched). Any thread, no allocation.
 */
ssize_t pgm_build_spm(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
		      uint32_t sqn, uint32_t trail, uint32_t lead, const struct pgm_nla *nla);

/*
 * pgm_build_odata - write an ODATA packet carrying data_len bytes of data (data may be
 * NULL when data_len is 0; it must not overlap buf), with OPT_SYN and/or OPT_FIN when
 * opts (PGM_BUILD_*) asks,
 * checksum filled. Returns the packet length, -EINVAL (unknown opts bits, data_len too
 * large), -ENOSPC (buf untouched). Any thread, no allocation.
 */
ssize_t pgm_build_odata(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
			uint32_t sqn, uint32_t trail, unsigned opts, const void *data,
			size_t data_len);

/*
 * pgm_build_rdata - as pgm_build_odata() for a repair (RDATA) of sqn.
 */
ssize_t pgm_build_rdata(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
			uint32_t sqn, uint32_t trail, unsigned opts, const void *data,
			size_t data_len);

/*
 * pgm_build_ncf - write an NCF confirming a NAK for sqn: source NLA, group NLA, no
 * options, checksum filled. NCFs flow downstream, so the header carries the source's
 * port as source port like data does. Returns the length, -EINVAL, -ENOSPC.
 * Any thread, no allocation.
 */
ssize_t pgm_build_ncf(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
		      uint32_t sqn, const struct pgm_nla *src, const struct pgm_nla *grp);

/*
 * pgm_nla_ipv4 - fill nla with an IPv4 address given in host order (0xc0000201 is
 * 192.0.2.1). Any thread.
 */
void pgm_nla_ipv4(struct pgm_nla *nla, uint32_t addr);

/*
 * pgm_nla_ipv6 - fill nla with the IPv6 address at addr (16 bytes, network order): AFI 2
 * (RFC 3208 section 8, the address families of RFC 1700). Any thread.
 */
void pgm_nla_ipv6(struct pgm_nla *nla, const uint8_t *addr);

/* ---- Rewriting (the one documented exception to forwarding bytes untouched) ---- */

/*
 * pgm_packet_invalidate_opts - for every option of unknown type whose OPX bits say
 * invalidate, set its type to OPT_INVALID (keeping the E bit) as RFC 3208 asks of a
 * network element that does not understand it, and refresh the checksum if one is
 * present. buf must hold a packet pgm_parse() accepted (PGM_OK or PGM_BAD_CHECKSUM; a
 * bad checksum is left bad). Returns the number of options invalidated, or -EINVAL when
 * the packet is not well formed. Any thread; the caller owns the buffer. Cost: one walk
 * of the options, plus one checksum pass when something changed.
 */
int pgm_packet_invalidate_opts(void *buf, size_t len);

#endif /* PGM_PGM_H */
