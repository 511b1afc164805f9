/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pktgen.c - see pktgen.h. Packets are written byte by byte from the RFC 3208 layouts,
 * independently of pgm/build.c, so that the parser is not checked against itself.
 */
#include <stdlib.h>
#include <string.h>

#include "pktgen.h"

const uint8_t pw_gsi[PGM_GSI_LEN] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06};
const uint8_t pw_src6[PGM_NLA_IPV6_LEN] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
					   0,	 0,    0,    0,	   0, 0, 0, 1};

void pw_init(struct pw *w)
{
	memset(w, 0, sizeof(*w));
}

static void pw_room(const struct pw *w, size_t n)
{
	if (w->len + n > PW_CAP)
		abort(); /* a test case larger than the writer: fix the case */
}

void pw_u8(struct pw *w, uint8_t v)
{
	pw_room(w, 1);
	w->b[w->len++] = v;
}

void pw_u16(struct pw *w, uint16_t v)
{
	pw_u8(w, (uint8_t)(v >> 8));
	pw_u8(w, (uint8_t)v);
}

void pw_u32(struct pw *w, uint32_t v)
{
	pw_u16(w, (uint16_t)(v >> 16));
	pw_u16(w, (uint16_t)v);
}

void pw_bytes(struct pw *w, const void *p, size_t n)
{
	pw_room(w, n);
	memcpy(w->b + w->len, p, n);
	w->len += n;
}

void pw_header(struct pw *w, uint8_t type, uint8_t hdr_opts)
{
	pw_u16(w, PW_SPORT);
	pw_u16(w, PW_DPORT);
	pw_u8(w, type);
	pw_u8(w, hdr_opts);
	pw_u16(w, 0);
	pw_bytes(w, pw_gsi, PGM_GSI_LEN);
	pw_u16(w, 0);
}

void pw_nla4(struct pw *w, uint32_t addr)
{
	pw_u16(w, PGM_AFI_IPV4);
	pw_u16(w, 0);
	pw_u32(w, addr);
}

void pw_nla6(struct pw *w, const uint8_t addr[PGM_NLA_IPV6_LEN])
{
	pw_u16(w, PGM_AFI_IPV6);
	pw_u16(w, 0);
	pw_bytes(w, addr, PGM_NLA_IPV6_LEN);
}

void pw_opts_begin(struct pw *w)
{
	w->opts_at = w->len;
	pw_u8(w, PGM_OPT_LENGTH);
	pw_u8(w, 4);
	pw_u16(w, 0);
}

void pw_opt(struct pw *w, uint8_t type, bool end, uint8_t bits, uint8_t spec, const void *val,
	    size_t vlen)
{
	pw_u8(w, type | (end ? PGM_OPT_END : 0));
	pw_u8(w, (uint8_t)(4 + vlen));
	pw_u8(w, bits);
	pw_u8(w, spec);
	if (vlen)
		pw_bytes(w, val, vlen);
}

void pw_opts_end(struct pw *w)
{
	size_t total = w->len - w->opts_at;

	w->b[w->opts_at + 2] = (uint8_t)(total >> 8);
	w->b[w->opts_at + 3] = (uint8_t)total;
}

void pw_set_tsdu(struct pw *w, uint16_t n)
{
	w->b[14] = (uint8_t)(n >> 8);
	w->b[15] = (uint8_t)n;
}

void pw_data(struct pw *w, const void *p, size_t n)
{
	pw_bytes(w, p, n);
	pw_set_tsdu(w, (uint16_t)n);
}

void pw_csum(struct pw *w)
{
	pgm_checksum_fill(w->b, w->len);
}

/* ---- Option values ---- */

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void opt_u32(struct pw *w, uint8_t type, bool end, uint32_t v)
{
	uint8_t b[4];

	be32(b, v);
	pw_opt(w, type, end, 0, 0, b, sizeof(b));
}

static void opt_u32x2(struct pw *w, uint8_t type, bool end, uint32_t a, uint32_t b)
{
	uint8_t v[8];

	be32(v, a);
	be32(v + 4, b);
	pw_opt(w, type, end, 0, 0, v, sizeof(v));
}

static void opt_fragment(struct pw *w, bool end)
{
	uint8_t v[12];

	be32(v, 1000);
	be32(v + 4, 1400);
	be32(v + 8, 4000);
	pw_opt(w, PGM_OPT_FRAGMENT, end, 0, 0, v, sizeof(v));
}

/* AFI, reserved/extra 16 bits, IPv4 address. */
static void opt_afi4(struct pw *w, uint8_t type, bool end, const uint8_t *pre, size_t pre_len,
		     uint16_t afi, uint16_t second, uint32_t addr)
{
	uint8_t v[64];
	size_t n = pre_len;

	if (pre_len)
		memcpy(v, pre, pre_len);
	v[n++] = (uint8_t)(afi >> 8);
	v[n++] = (uint8_t)afi;
	v[n++] = (uint8_t)(second >> 8);
	v[n++] = (uint8_t)second;
	be32(v + n, addr);
	n += 4;
	pw_opt(w, type, end, 0, 0, v, n);
}

/* ---- Builders of whole packets ---- */

static void spm_fields(struct pw *w)
{
	pw_u32(w, 100);
	pw_u32(w, 90);
	pw_u32(w, 99);
}

static void mk_spm_v4(struct pw *w)
{
	pw_header(w, PGM_TYPE_SPM, 0);
	spm_fields(w);
	pw_nla4(w, PW_SRC4);
	pw_csum(w);
}

static void mk_spm_v6(struct pw *w)
{
	pw_header(w, PGM_TYPE_SPM, 0);
	spm_fields(w);
	pw_nla6(w, pw_src6);
	pw_csum(w);
}

static void mk_spm_parity_prm_fin(struct pw *w)
{
	uint8_t v[4];

	pw_header(w, PGM_TYPE_SPM, PGM_HDR_OPT_PRESENT);
	spm_fields(w);
	pw_nla4(w, PW_SRC4);
	pw_opts_begin(w);
	be32(v, 16);
	pw_opt(w, PGM_OPT_PARITY_PRM, false, 0, PGM_PARITY_PRM_OND, v, sizeof(v));
	opt_u32(w, PGM_OPT_JOIN, false, 77);
	pw_opt(w, PGM_OPT_FIN, true, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void poll_body(struct pw *w)
{
	pw_u32(w, 300);
	pw_u16(w, 3);
	pw_u16(w, 1);
	pw_nla4(w, PW_SRC4);
	pw_u32(w, 1000);
	pw_bytes(w, "abcd", 4);
	pw_u32(w, 0xff00ff00u);
}

static void mk_poll(struct pw *w)
{
	pw_header(w, PGM_TYPE_POLL, 0);
	poll_body(w);
	pw_csum(w);
}

static void mk_polr_redirect_v4(struct pw *w)
{
	pw_header(w, PGM_TYPE_POLR, PGM_HDR_OPT_PRESENT);
	pw_u32(w, 301);
	pw_u16(w, 3);
	pw_u16(w, 0);
	pw_opts_begin(w);
	opt_afi4(w, PGM_OPT_REDIRECT, true, NULL, 0, PGM_AFI_IPV4, 0, 0xc0000263u);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_polr_redirect_v6(struct pw *w)
{
	uint8_t v[20] = {0, PGM_AFI_IPV6, 0, 0};

	memcpy(v + 4, pw_src6, sizeof(pw_src6));
	pw_header(w, PGM_TYPE_POLR, PGM_HDR_OPT_PRESENT);
	pw_u32(w, 302);
	pw_u16(w, 4);
	pw_u16(w, 0);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_REDIRECT, true, 0, 0, v, sizeof(v));
	pw_opts_end(w);
	pw_csum(w);
}

static void data_fields(struct pw *w, uint32_t sqn)
{
	pw_u32(w, sqn);
	pw_u32(w, 1);
}

static void mk_odata(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, 0);
	data_fields(w, 5);
	pw_data(w, "hello", 5);
	pw_csum(w);
}

static void mk_odata_empty(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, 0);
	data_fields(w, 6);
	pw_csum(w);
}

static void mk_odata_syn(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 7);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_SYN, true, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_data(w, "first", 5);
	pw_csum(w);
}

static void mk_odata_fin(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 8);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_FIN, true, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_data(w, "last", 4);
	pw_csum(w);
}

static void mk_odata_rst(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 9);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_RST, true, 0, 0x85, NULL, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_odata_fragment(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1001);
	pw_opts_begin(w);
	opt_fragment(w, true);
	pw_opts_end(w);
	pw_data(w, "fragment", 8);
	pw_csum(w);
}

static void mk_odata_join_tgsize_crqst(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 10);
	pw_opts_begin(w);
	opt_u32(w, PGM_OPT_JOIN, false, 3);
	opt_u32(w, PGM_OPT_CURR_TGSIZE, false, 12);
	pw_opt(w, PGM_OPT_CRQST, true, 0, 0x02, NULL, 0);
	pw_opts_end(w);
	pw_data(w, "x", 1);
	pw_csum(w);
}

static void mk_odata_pgmcc_data_v4(struct pw *w)
{
	uint8_t ts[4];

	be32(ts, 0xdeadbeefu);
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 11);
	pw_opts_begin(w);
	opt_afi4(w, PGM_OPT_PGMCC_DATA, true, ts, sizeof(ts), PGM_AFI_IPV4, 0, 0xc0000202u);
	pw_opts_end(w);
	pw_data(w, "cc", 2);
	pw_csum(w);
}

static void mk_odata_pgmcc_data_v6(struct pw *w)
{
	uint8_t v[24] = {0, 0, 0, 42, 0, PGM_AFI_IPV6, 0, 0};

	memcpy(v + 8, pw_src6, sizeof(pw_src6));
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 12);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_PGMCC_DATA, true, 0, 0, v, sizeof(v));
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_odata_label(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 13);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_VENDOR_LABEL, true, 0, 0, "EQ.PRICES", 9);
	pw_opts_end(w);
	pw_data(w, "tick", 4);
	pw_csum(w);
}

static void mk_odata_opx_invalidate(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 14);
	pw_opts_begin(w);
	pw_opt(w, 0x30, false, PGM_OPX_INVALIDATE, 0, "zz", 2);
	pw_opt(w, PGM_OPT_SYN, true, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_data(w, "inv", 3);
	pw_csum(w);
}

static void mk_odata_opx_discard(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 15);
	pw_opts_begin(w);
	pw_opt(w, 0x31, true, PGM_OPX_DISCARD, 0, "dd", 2);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_odata_unassigned_invalid(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 16);
	pw_opts_begin(w);
	pw_opt(w, 0x06, false, PGM_OPX_IGNORE, 0, NULL, 0);
	pw_opt(w, PGM_OPT_INVALID, true, 0, 0, "old", 3);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_odata_many_opts(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 17);
	pw_opts_begin(w);
	for (unsigned i = 0; i < PGM_PACKET_OPT_RECS + 3; i++)
		pw_opt(w, 0x40, false, 0, (uint8_t)i, NULL, 0);
	pw_opt(w, PGM_OPT_VENDOR_LABEL, true, 0, 0, "late", 4);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_odata_no_csum(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, 0);
	data_fields(w, 18);
	pw_data(w, "nocsum", 6);
}

static void mk_odata_bad_csum(struct pw *w)
{
	mk_odata(w);
	w->b[w->len - 1] ^= 0x40; /* corrupt one data byte after the checksum */
}

static void mk_rdata_parity_grp(struct pw *w)
{
	pw_header(w, PGM_TYPE_RDATA, PGM_HDR_OPT_PRESENT | PGM_HDR_OPT_PARITY);
	data_fields(w, 0x100);
	pw_opts_begin(w);
	opt_u32(w, PGM_OPT_PARITY_GRP, true, 0x100);
	pw_opts_end(w);
	pw_data(w, "parity", 6);
	pw_csum(w);
}

static void mk_rdata_fragment(struct pw *w)
{
	pw_header(w, PGM_TYPE_RDATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1002);
	pw_opts_begin(w);
	opt_fragment(w, true);
	pw_opts_end(w);
	pw_data(w, "again", 5);
	pw_csum(w);
}

static void nak_fields_v4(struct pw *w, uint32_t sqn)
{
	pw_u32(w, sqn);
	pw_nla4(w, PW_SRC4);
	pw_nla4(w, PW_GRP4);
}

static void mk_nak_list(struct pw *w)
{
	uint8_t v[12];

	be32(v, 21);
	be32(v + 4, 22);
	be32(v + 8, 25);
	pw_header(w, PGM_TYPE_NAK, PGM_HDR_OPT_PRESENT | PGM_HDR_OPT_NETWORK);
	nak_fields_v4(w, 20);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_NAK_LIST, true, 0, 0, v, sizeof(v));
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_nak_v6(struct pw *w)
{
	pw_header(w, PGM_TYPE_NAK, 0);
	pw_u32(w, 30);
	pw_nla6(w, pw_src6);
	pw_nla4(w, PW_GRP4);
	pw_csum(w);
}

static void mk_nak_path_nbr(struct pw *w)
{
	uint8_t a[4];

	be32(a, 0xc0000209u);
	pw_header(w, PGM_TYPE_NAK, PGM_HDR_OPT_PRESENT);
	nak_fields_v4(w, 31);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_NBR_UNREACH, false, 0, 0, NULL, 0);
	pw_opt(w, PGM_OPT_PATH_NLA, true, 0, 0, a, sizeof(a));
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_nak_path_v6_cr(struct pw *w)
{
	uint8_t cr[16] = {0, 0, 0, 40, 0, 1, 0, 2, 0, 3, 0, 0};

	pw_header(w, PGM_TYPE_NAK, PGM_HDR_OPT_PRESENT);
	nak_fields_v4(w, 32);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_PATH_NLA, false, 0, 0, pw_src6, sizeof(pw_src6));
	/* OPT_CR: LEAD, NE_WL, NE_WP, RX_WP, reserved, then AFI, reserved, address. */
	opt_afi4(w, PGM_OPT_CR, true, cr, 12, PGM_AFI_IPV4, 0, 0xc0000203u);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_nnak(struct pw *w)
{
	pw_header(w, PGM_TYPE_NNAK, 0);
	nak_fields_v4(w, 33);
	pw_csum(w);
}

static void mk_ncf_bo(struct pw *w)
{
	pw_header(w, PGM_TYPE_NCF, PGM_HDR_OPT_PRESENT);
	nak_fields_v4(w, 34);
	pw_opts_begin(w);
	opt_u32x2(w, PGM_OPT_NAK_BO_IVL, false, 50000, 34);
	opt_u32x2(w, PGM_OPT_NAK_BO_RNG, true, 200000, 10000);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_spmr(struct pw *w)
{
	pw_header(w, PGM_TYPE_SPMR, 0);
	pw_csum(w);
}

static void mk_ack_feedback(struct pw *w)
{
	uint8_t ts[4];

	be32(ts, 0x01020304u);
	pw_header(w, PGM_TYPE_ACK, PGM_HDR_OPT_PRESENT);
	pw_u32(w, 500);
	pw_u32(w, 0xfffffffeu);
	pw_opts_begin(w);
	opt_afi4(w, PGM_OPT_PGMCC_FEEDBACK, true, ts, sizeof(ts), PGM_AFI_IPV4, 0x0123,
		 0xc0000204u);
	pw_opts_end(w);
	pw_csum(w);
}

/* ---- Malformed ---- */

static void mk_truncated_header(struct pw *w)
{
	mk_odata(w);
	w->len = PGM_HDR_LEN - 1;
}

static void mk_bad_type(struct pw *w)
{
	pw_header(w, 0x03, 0);
	pw_csum(w);
}

static void mk_bad_version(struct pw *w)
{
	pw_header(w, 0x14, 0);
	data_fields(w, 1);
	pw_csum(w);
}

static void mk_trunc_spm(struct pw *w)
{
	pw_header(w, PGM_TYPE_SPM, 0);
	spm_fields(w);
	pw_u16(w, PGM_AFI_IPV4);
	pw_u16(w, 0);
	pw_u16(w, 0xc000); /* half an address */
	pw_csum(w);
}

static void mk_trunc_poll_tail(struct pw *w)
{
	pw_header(w, PGM_TYPE_POLL, 0);
	poll_body(w);
	w->len -= 4;
	pw_csum(w);
}

static void mk_trunc_data(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, 0);
	pw_u32(w, 1);
	pw_csum(w);
}

static void mk_trunc_nak_grp(struct pw *w)
{
	pw_header(w, PGM_TYPE_NAK, 0);
	pw_u32(w, 1);
	pw_nla4(w, PW_SRC4);
	pw_u16(w, PGM_AFI_IPV4);
	pw_csum(w);
}

static void mk_trunc_ack(struct pw *w)
{
	pw_header(w, PGM_TYPE_ACK, 0);
	pw_u32(w, 1);
	pw_csum(w);
}

static void mk_trunc_polr(struct pw *w)
{
	pw_header(w, PGM_TYPE_POLR, 0);
	pw_u16(w, 1);
	pw_csum(w);
}

static void mk_bad_afi_spm(struct pw *w)
{
	pw_header(w, PGM_TYPE_SPM, 0);
	spm_fields(w);
	pw_u16(w, 3);
	pw_u16(w, 0);
	pw_u32(w, PW_SRC4);
	pw_csum(w);
}

static void mk_bad_afi_ncf_grp(struct pw *w)
{
	pw_header(w, PGM_TYPE_NCF, 0);
	pw_u32(w, 1);
	pw_nla4(w, PW_SRC4);
	pw_u16(w, 0);
	pw_u16(w, 0);
	pw_u32(w, PW_GRP4);
	pw_csum(w);
}

static void mk_bad_afi_redirect(struct pw *w)
{
	pw_header(w, PGM_TYPE_POLR, PGM_HDR_OPT_PRESENT);
	pw_u32(w, 1);
	pw_u16(w, 1);
	pw_u16(w, 0);
	pw_opts_begin(w);
	opt_afi4(w, PGM_OPT_REDIRECT, true, NULL, 0, 7, 0, PW_SRC4);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_truncated(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_u16(w, 0); /* two bytes where OPT_LENGTH needs four */
	pw_csum(w);
}

static void mk_opt_first_not_length(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	w->opts_at = w->len;
	pw_opt(w, PGM_OPT_SYN, true, 0, 0, NULL, 0);
	pw_csum(w);
}

static void mk_opt_length_len5(struct pw *w)
{
	mk_odata_syn(w);
	w->b[PGM_HDR_LEN + 8 + 1] = 5;
	pw_csum(w);
}

static void mk_opt_length_total3(struct pw *w)
{
	mk_odata_syn(w);
	w->b[PGM_HDR_LEN + 8 + 2] = 0;
	w->b[PGM_HDR_LEN + 8 + 3] = 3;
	pw_csum(w);
}

static void mk_opt_total_past_packet(struct pw *w)
{
	mk_odata_syn(w);
	w->b[PGM_HDR_LEN + 8 + 2] = 0;
	w->b[PGM_HDR_LEN + 8 + 3] = 100;
	pw_csum(w);
}

static void mk_opt_len_zero(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	pw_opt(w, 0x22, true, 0, 0, "abcd", 4);
	pw_opts_end(w);
	w->b[w->opts_at + 4 + 1] = 0; /* the reference bridge looped forever on this */
	pw_csum(w);
}

static void mk_opt_len_short(struct pw *w)
{
	mk_opt_len_zero(w);
	w->b[w->opts_at + 4 + 1] = 2;
	pw_csum(w);
}

static void mk_opt_past_total(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	opt_u32(w, PGM_OPT_JOIN, true, 1);
	pw_opts_end(w);
	w->b[w->opts_at + 3] -= 4; /* total now ends inside OPT_JOIN */
	pw_set_tsdu(w, 4);	   /* and the rest is "data" */
	pw_csum(w);
}

static void mk_opt_past_total_partial_hdr(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_SYN, false, 0, 0, NULL, 0);
	pw_u16(w, 0x8e04); /* half an option header inside the total */
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_missing_end(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_SYN, false, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_only_length(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_end_before_total(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_SYN, true, 0, 0, NULL, 0);
	pw_opt(w, PGM_OPT_FIN, false, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_bad_size_fragment(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	opt_u32x2(w, PGM_OPT_FRAGMENT, true, 1, 2);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_bad_size_naklist(struct pw *w)
{
	pw_header(w, PGM_TYPE_NAK, PGM_HDR_OPT_PRESENT);
	nak_fields_v4(w, 1);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_NAK_LIST, true, 0, 0, "\0\0\0\2\0\0", 6);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_bad_size_naklist_empty(struct pw *w)
{
	pw_header(w, PGM_TYPE_NAK, PGM_HDR_OPT_PRESENT);
	nak_fields_v4(w, 1);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_NAK_LIST, true, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_bad_size_syn(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	opt_u32(w, PGM_OPT_SYN, true, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_bad_size_path(struct pw *w)
{
	pw_header(w, PGM_TYPE_NAK, PGM_HDR_OPT_PRESENT);
	nak_fields_v4(w, 1);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_PATH_NLA, true, 0, 0, "123456", 6);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_bad_size_pgmcc(struct pw *w)
{
	uint8_t ts[4] = {0};

	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	opt_afi4(w, PGM_OPT_PGMCC_DATA, false, ts, sizeof(ts), PGM_AFI_IPV6, 0, PW_SRC4);
	pw_opt(w, PGM_OPT_SYN, true, 0, 0, NULL, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_opt_dup_length(struct pw *w)
{
	pw_header(w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	data_fields(w, 1);
	pw_opts_begin(w);
	pw_opt(w, PGM_OPT_LENGTH, true, 0, 8, NULL, 0);
	pw_opts_end(w);
	pw_csum(w);
}

static void mk_tsdu_past_packet(struct pw *w)
{
	mk_odata(w);
	pw_set_tsdu(w, 10);
	pw_csum(w);
}

static void mk_trailing_bytes(struct pw *w)
{
	mk_odata(w);
	pw_set_tsdu(w, 3);
	pw_csum(w);
}

static void mk_spm_trailing(struct pw *w)
{
	pw_header(w, PGM_TYPE_SPM, 0);
	spm_fields(w);
	pw_nla4(w, PW_SRC4);
	pw_u8(w, 0);
	pw_csum(w);
}

const struct pgm_case pgm_cases[] = {
	{"spm_v4", PGM_OK, mk_spm_v4},
	{"spm_v6", PGM_OK, mk_spm_v6},
	{"spm_parity_prm_join_fin", PGM_OK, mk_spm_parity_prm_fin},
	{"poll", PGM_OK, mk_poll},
	{"polr_redirect_v4", PGM_OK, mk_polr_redirect_v4},
	{"polr_redirect_v6", PGM_OK, mk_polr_redirect_v6},
	{"odata", PGM_OK, mk_odata},
	{"odata_empty", PGM_OK, mk_odata_empty},
	{"odata_syn", PGM_OK, mk_odata_syn},
	{"odata_fin", PGM_OK, mk_odata_fin},
	{"odata_rst", PGM_OK, mk_odata_rst},
	{"odata_fragment", PGM_OK, mk_odata_fragment},
	{"odata_join_tgsize_crqst", PGM_OK, mk_odata_join_tgsize_crqst},
	{"odata_pgmcc_data_v4", PGM_OK, mk_odata_pgmcc_data_v4},
	{"odata_pgmcc_data_v6", PGM_OK, mk_odata_pgmcc_data_v6},
	{"odata_label_0x22", PGM_OK, mk_odata_label},
	{"odata_opx_invalidate", PGM_OK, mk_odata_opx_invalidate},
	{"odata_opx_discard", PGM_OK, mk_odata_opx_discard},
	{"odata_unassigned_and_invalid", PGM_OK, mk_odata_unassigned_invalid},
	{"odata_many_opts", PGM_OK, mk_odata_many_opts},
	{"odata_no_checksum", PGM_OK, mk_odata_no_csum},
	{"odata_bad_checksum", PGM_BAD_CHECKSUM, mk_odata_bad_csum},
	{"rdata_parity_grp", PGM_OK, mk_rdata_parity_grp},
	{"rdata_fragment", PGM_OK, mk_rdata_fragment},
	{"nak_list", PGM_OK, mk_nak_list},
	{"nak_v6_src", PGM_OK, mk_nak_v6},
	{"nak_nbr_unreach_path_nla", PGM_OK, mk_nak_path_nbr},
	{"nak_path_nla_v6_cr", PGM_OK, mk_nak_path_v6_cr},
	{"nnak", PGM_OK, mk_nnak},
	{"ncf_nak_bo_ivl_rng", PGM_OK, mk_ncf_bo},
	{"spmr", PGM_OK, mk_spmr},
	{"ack_pgmcc_feedback", PGM_OK, mk_ack_feedback},

	{"truncated_header", PGM_ERR_TRUNCATED_HEADER, mk_truncated_header},
	{"bad_type_0x03", PGM_ERR_BAD_TYPE, mk_bad_type},
	{"bad_version", PGM_ERR_BAD_TYPE, mk_bad_version},
	{"trunc_spm_nla", PGM_ERR_TRUNCATED_TYPE, mk_trunc_spm},
	{"trunc_poll_tail", PGM_ERR_TRUNCATED_TYPE, mk_trunc_poll_tail},
	{"trunc_polr", PGM_ERR_TRUNCATED_TYPE, mk_trunc_polr},
	{"trunc_odata", PGM_ERR_TRUNCATED_TYPE, mk_trunc_data},
	{"trunc_nak_grp", PGM_ERR_TRUNCATED_TYPE, mk_trunc_nak_grp},
	{"trunc_ack", PGM_ERR_TRUNCATED_TYPE, mk_trunc_ack},
	{"bad_afi_spm", PGM_ERR_BAD_AFI, mk_bad_afi_spm},
	{"bad_afi_ncf_grp", PGM_ERR_BAD_AFI, mk_bad_afi_ncf_grp},
	{"bad_afi_opt_redirect", PGM_ERR_BAD_AFI, mk_bad_afi_redirect},
	{"opt_truncated", PGM_ERR_OPT_TRUNCATED, mk_opt_truncated},
	{"opt_first_not_length", PGM_ERR_OPT_FIRST_NOT_LENGTH, mk_opt_first_not_length},
	{"opt_length_len5", PGM_ERR_OPT_LENGTH_BAD, mk_opt_length_len5},
	{"opt_length_total3", PGM_ERR_OPT_LENGTH_BAD, mk_opt_length_total3},
	{"opt_total_past_packet", PGM_ERR_OPT_TOTAL_PAST_PACKET, mk_opt_total_past_packet},
	{"opt_len_zero", PGM_ERR_OPT_LEN_ZERO, mk_opt_len_zero},
	{"opt_len_short", PGM_ERR_OPT_LEN_SHORT, mk_opt_len_short},
	{"opt_past_total", PGM_ERR_OPT_PAST_TOTAL, mk_opt_past_total},
	{"opt_past_total_partial_header", PGM_ERR_OPT_PAST_TOTAL, mk_opt_past_total_partial_hdr},
	{"opt_missing_end", PGM_ERR_OPT_MISSING_END, mk_opt_missing_end},
	{"opt_only_opt_length", PGM_ERR_OPT_MISSING_END, mk_opt_only_length},
	{"opt_end_before_total", PGM_ERR_OPT_END_BEFORE_TOTAL, mk_opt_end_before_total},
	{"opt_bad_size_fragment", PGM_ERR_OPT_BAD_SIZE, mk_opt_bad_size_fragment},
	{"opt_bad_size_nak_list", PGM_ERR_OPT_BAD_SIZE, mk_opt_bad_size_naklist},
	{"opt_bad_size_nak_list_empty", PGM_ERR_OPT_BAD_SIZE, mk_opt_bad_size_naklist_empty},
	{"opt_bad_size_syn", PGM_ERR_OPT_BAD_SIZE, mk_opt_bad_size_syn},
	{"opt_bad_size_path_nla", PGM_ERR_OPT_BAD_SIZE, mk_opt_bad_size_path},
	{"opt_bad_size_pgmcc_afi", PGM_ERR_OPT_BAD_SIZE, mk_opt_bad_size_pgmcc},
	{"opt_dup_length", PGM_ERR_OPT_DUP_LENGTH, mk_opt_dup_length},
	{"tsdu_past_packet", PGM_ERR_TSDU_PAST_PACKET, mk_tsdu_past_packet},
	{"trailing_bytes", PGM_ERR_TRAILING_BYTES, mk_trailing_bytes},
	{"spm_trailing_byte", PGM_ERR_TRAILING_BYTES, mk_spm_trailing},
};

const size_t pgm_n_cases = sizeof(pgm_cases) / sizeof(pgm_cases[0]);

void pgm_case_make(const char *name, struct pw *w)
{
	for (size_t i = 0; i < pgm_n_cases; i++) {
		if (strcmp(pgm_cases[i].name, name) == 0) {
			pw_init(w);
			pgm_cases[i].make(w);
			return;
		}
	}
	abort(); /* a test names a case that does not exist */
}
