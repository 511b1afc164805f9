/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_parse.c - the parser against hand-assembled packets: every type, every option,
 * every malformed reason, OPX handling, option rewriting, and robustness (every prefix
 * and every single-byte corruption of every case parsed from an exactly-sized heap copy,
 * so ASan catches any read past the end).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pgm.h"
#include "pktgen.h"
#include "tap.h"

/* Build the named case into w and parse it; returns the result. */
static enum pgm_result parse_named(const char *name, struct pw *w, struct pgm_packet *pkt)
{
	pgm_case_make(name, w);
	return pgm_parse(w->b, w->len, 0, pkt);
}

static void check_gsi_ports(const struct pgm_packet *pkt)
{
	CHECK(memcmp(pkt->gsi, pw_gsi, PGM_GSI_LEN) == 0);
	CHECK_EQ(pkt->sport, PW_SPORT);
	CHECK_EQ(pkt->dport, PW_DPORT);
	CHECK(pkt->flags & PGM_PKT_HAVE_HEADER);
}

static void check_nla4(const struct pgm_nla *nla, uint32_t addr)
{
	CHECK_EQ(nla->afi, PGM_AFI_IPV4);
	CHECK_EQ(nla->len, 4);
	CHECK_EQ((uint32_t)nla->addr[0] << 24 | nla->addr[1] << 16 | nla->addr[2] << 8 |
			 nla->addr[3],
		 addr);
}

static void check_nla6(const struct pgm_nla *nla)
{
	CHECK_EQ(nla->afi, PGM_AFI_IPV6);
	CHECK_EQ(nla->len, 16);
	CHECK(memcmp(nla->addr, pw_src6, 16) == 0);
}

static void test_catalogue(void)
{
	for (size_t i = 0; i < pgm_n_cases; i++) {
		struct pgm_packet pkt;
		struct pw w;
		enum pgm_result r;

		pw_init(&w);
		pgm_cases[i].make(&w);
		r = pgm_parse(w.b, w.len, 0, &pkt);
		CHECK_EQ(r, pgm_cases[i].expect);
		CHECK_EQ(pkt.result, r);
		if (r != pgm_cases[i].expect)
			printf("#   case %s: got %s\n", pgm_cases[i].name, pgm_result_name(r));
	}
}

static void test_result_names(void)
{
	for (unsigned r = 0; r < PGM_RESULT_COUNT; r++) {
		const char *n = pgm_result_name((enum pgm_result)r);

		CHECK(n && strcmp(n, "unknown") != 0);
		for (unsigned q = 0; q < r; q++)
			CHECK(strcmp(n, pgm_result_name((enum pgm_result)q)) != 0);
	}
	CHECK(strcmp(pgm_result_name(PGM_RESULT_COUNT), "unknown") == 0);
	CHECK(strcmp(pgm_type_name(PGM_TYPE_NCF), "NCF") == 0);
	CHECK(strcmp(pgm_type_name(0x03), "unknown") == 0);

	/* Every reason is produced by at least one catalogue case. */
	for (unsigned r = 0; r < PGM_RESULT_COUNT; r++) {
		bool covered = r == PGM_ERR_TOO_LONG; /* test_too_long() */

		for (size_t i = 0; i < pgm_n_cases; i++)
			covered |= pgm_cases[i].expect == (enum pgm_result)r;
		CHECK(covered);
	}
}

static void test_drop_policy(void)
{
	CHECK(!pgm_result_drop(PGM_OK, PGM_DROP_BAD_CHECKSUM | PGM_DROP_MALFORMED));
	CHECK(!pgm_result_drop(PGM_BAD_CHECKSUM, 0));
	CHECK(pgm_result_drop(PGM_BAD_CHECKSUM, PGM_DROP_BAD_CHECKSUM));
	CHECK(!pgm_result_drop(PGM_BAD_CHECKSUM, PGM_DROP_MALFORMED));
	CHECK(!pgm_result_drop(PGM_ERR_OPT_LEN_ZERO, 0));
	CHECK(pgm_result_drop(PGM_ERR_OPT_LEN_ZERO, PGM_DROP_MALFORMED));
	CHECK(!pgm_result_malformed(PGM_BAD_CHECKSUM));
	CHECK(pgm_result_malformed(PGM_ERR_TRUNCATED_HEADER));
}

static void test_spm(void)
{
	struct pgm_packet pkt;
	struct pw w;

	CHECK_EQ(parse_named("spm_v4", &w, &pkt), PGM_OK);
	check_gsi_ports(&pkt);
	CHECK_EQ(pkt.type, PGM_TYPE_SPM);
	CHECK_EQ(pkt.u.spm.sqn, 100);
	CHECK_EQ(pkt.u.spm.trail, 90);
	CHECK_EQ(pkt.u.spm.lead, 99);
	check_nla4(&pkt.u.spm.nla, PW_SRC4);
	CHECK_EQ(pkt.csum, PGM_CSUM_GOOD);
	CHECK_EQ(pkt.n_opts, 0);
	CHECK_EQ(pkt.data_offset, w.len);
	CHECK_EQ(pgm_packet_tsi_port(&pkt), PW_SPORT);

	CHECK_EQ(parse_named("spm_v6", &w, &pkt), PGM_OK);
	check_nla6(&pkt.u.spm.nla);

	CHECK_EQ(parse_named("spm_parity_prm_join_fin", &w, &pkt), PGM_OK);
	CHECK(pkt.opt_seen & PGM_OPT_BIT(PGM_OPT_PARITY_PRM));
	CHECK_EQ(pkt.opt.parity_prm.tgs, 16);
	CHECK_EQ(pkt.opt.parity_prm.flags, PGM_PARITY_PRM_OND);
	CHECK_EQ(pkt.opt.join_min, 77);
	CHECK(pkt.opt_seen & PGM_OPT_BIT(PGM_OPT_FIN));
	CHECK_EQ(pkt.n_opts, 3);
	CHECK_EQ(pkt.opts_len, 4 + 8 + 8 + 4);
	CHECK_EQ(pkt.opts[2].type, PGM_OPT_FIN);
	CHECK(pkt.opts[2].end);
	CHECK(!pkt.opts[0].end);
}

static void test_poll_polr(void)
{
	struct pgm_packet pkt;
	struct pw w;

	CHECK_EQ(parse_named("poll", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.u.poll.sqn, 300);
	CHECK_EQ(pkt.u.poll.round, 3);
	CHECK_EQ(pkt.u.poll.s_type, 1);
	check_nla4(&pkt.u.poll.nla, PW_SRC4);
	CHECK_EQ(pkt.u.poll.bo_ivl, 1000);
	CHECK(memcmp(pkt.u.poll.rand, "abcd", 4) == 0);
	CHECK_EQ(pkt.u.poll.mask, 0xff00ff00u);
	CHECK(!pgm_type_upstream(pkt.type));

	CHECK_EQ(parse_named("polr_redirect_v4", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.u.polr.sqn, 301);
	CHECK_EQ(pkt.u.polr.round, 3);
	check_nla4(&pkt.opt.redirect, 0xc0000263u);
	CHECK(pgm_type_upstream(pkt.type));
	CHECK_EQ(pgm_packet_tsi_port(&pkt), PW_DPORT);

	CHECK_EQ(parse_named("polr_redirect_v6", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.u.polr.round, 4);
	check_nla6(&pkt.opt.redirect);
}

static void test_data(void)
{
	struct pgm_packet pkt;
	struct pw w;

	CHECK_EQ(parse_named("odata", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.type, PGM_TYPE_ODATA);
	CHECK_EQ(pkt.u.data.sqn, 5);
	CHECK_EQ(pkt.u.data.trail, 1);
	CHECK_EQ(pkt.tsdu_len, 5);
	CHECK_EQ(pkt.data_offset, PGM_HDR_LEN + 8);
	CHECK(memcmp(pkt.raw + pkt.data_offset, "hello", 5) == 0);
	CHECK_EQ(pkt.opts_offset, 0);

	CHECK_EQ(parse_named("odata_empty", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.tsdu_len, 0);

	CHECK_EQ(parse_named("odata_syn", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.opt_seen, PGM_OPT_BIT(PGM_OPT_SYN));
	CHECK_EQ(pkt.opts_offset, PGM_HDR_LEN + 8);
	CHECK_EQ(pkt.opts_len, 8);
	CHECK_EQ(pkt.data_offset, PGM_HDR_LEN + 8 + 8);
	CHECK(memcmp(pkt.raw + pkt.data_offset, "first", 5) == 0);

	CHECK_EQ(parse_named("odata_fin", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.opt_seen, PGM_OPT_BIT(PGM_OPT_FIN));

	CHECK_EQ(parse_named("odata_rst", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.opt_seen, PGM_OPT_BIT(PGM_OPT_RST));
	CHECK_EQ(pkt.opt.rst_spec, 0x85);

	CHECK_EQ(parse_named("odata_fragment", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.opt.fragment.first_sqn, 1000);
	CHECK_EQ(pkt.opt.fragment.offset, 1400);
	CHECK_EQ(pkt.opt.fragment.apdu_len, 4000);

	CHECK_EQ(parse_named("odata_join_tgsize_crqst", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.opt.join_min, 3);
	CHECK_EQ(pkt.opt.curr_tgsize, 12);
	CHECK_EQ(pkt.opt.crqst_flags, 0x02);
	CHECK_EQ(pkt.opt_seen, PGM_OPT_BIT(PGM_OPT_JOIN) | PGM_OPT_BIT(PGM_OPT_CURR_TGSIZE) |
				       PGM_OPT_BIT(PGM_OPT_CRQST));

	CHECK_EQ(parse_named("odata_pgmcc_data_v4", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.opt.pgmcc_data.tstamp, 0xdeadbeefu);
	check_nla4(&pkt.opt.pgmcc_data.acker, 0xc0000202u);

	CHECK_EQ(parse_named("odata_pgmcc_data_v6", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.opt.pgmcc_data.tstamp, 42);
	check_nla6(&pkt.opt.pgmcc_data.acker);

	CHECK_EQ(parse_named("rdata_parity_grp", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.type, PGM_TYPE_RDATA);
	CHECK(pkt.hdr_opts & PGM_HDR_OPT_PARITY);
	CHECK_EQ(pkt.opt.parity_grp, 0x100);

	CHECK_EQ(parse_named("rdata_fragment", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.u.data.sqn, 1002);
	CHECK_EQ(pkt.opt.fragment.apdu_len, 4000);
}

static void test_nak_family(void)
{
	struct pgm_packet pkt;
	struct pw w;

	CHECK_EQ(parse_named("nak_list", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.type, PGM_TYPE_NAK);
	CHECK(pkt.hdr_opts & PGM_HDR_OPT_NETWORK);
	CHECK_EQ(pkt.u.nak.sqn, 20);
	check_nla4(&pkt.u.nak.src, PW_SRC4);
	check_nla4(&pkt.u.nak.grp, PW_GRP4);
	CHECK_EQ(pkt.opt.nak_list.count, 3);
	CHECK_EQ(pgm_packet_nak_list_sqn(&pkt, 0), 21);
	CHECK_EQ(pgm_packet_nak_list_sqn(&pkt, 1), 22);
	CHECK_EQ(pgm_packet_nak_list_sqn(&pkt, 2), 25);
	CHECK(pgm_type_upstream(pkt.type));
	CHECK_EQ(pgm_packet_tsi_port(&pkt), PW_DPORT);

	CHECK_EQ(parse_named("nak_v6_src", &w, &pkt), PGM_OK);
	check_nla6(&pkt.u.nak.src);
	check_nla4(&pkt.u.nak.grp, PW_GRP4);

	CHECK_EQ(parse_named("nak_nbr_unreach_path_nla", &w, &pkt), PGM_OK);
	CHECK(pkt.opt_seen & PGM_OPT_BIT(PGM_OPT_NBR_UNREACH));
	check_nla4(&pkt.opt.path_nla, 0xc0000209u);

	CHECK_EQ(parse_named("nak_path_nla_v6_cr", &w, &pkt), PGM_OK);
	check_nla6(&pkt.opt.path_nla);
	CHECK_EQ(pkt.opt.cr.lead, 40);
	CHECK_EQ(pkt.opt.cr.ne_wl, 1);
	CHECK_EQ(pkt.opt.cr.ne_wp, 2);
	CHECK_EQ(pkt.opt.cr.rx_wp, 3);
	check_nla4(&pkt.opt.cr.rcvr, 0xc0000203u);

	CHECK_EQ(parse_named("nnak", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.type, PGM_TYPE_NNAK);
	CHECK_EQ(pkt.u.nak.sqn, 33);

	CHECK_EQ(parse_named("ncf_nak_bo_ivl_rng", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.type, PGM_TYPE_NCF);
	CHECK(!pgm_type_upstream(pkt.type));
	CHECK_EQ(pkt.u.nak.sqn, 34);
	CHECK_EQ(pkt.opt.nak_bo_ivl.ivl, 50000);
	CHECK_EQ(pkt.opt.nak_bo_ivl.ivl_sqn, 34);
	CHECK_EQ(pkt.opt.nak_bo_rng.max_ivl, 200000);
	CHECK_EQ(pkt.opt.nak_bo_rng.min_ivl, 10000);

	CHECK_EQ(parse_named("spmr", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.type, PGM_TYPE_SPMR);
	CHECK_EQ(pkt.data_offset, PGM_HDR_LEN);

	CHECK_EQ(parse_named("ack_pgmcc_feedback", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.u.ack.rx_max, 500);
	CHECK_EQ(pkt.u.ack.bitmap, 0xfffffffeu);
	CHECK_EQ(pkt.opt.pgmcc_feedback.tstamp, 0x01020304u);
	CHECK_EQ(pkt.opt.pgmcc_feedback.loss_rate, 0x0123);
	check_nla4(&pkt.opt.pgmcc_feedback.acker, 0xc0000204u);
}

static void test_unknown_options(void)
{
	const struct pgm_opt_rec *rec;
	struct pgm_packet pkt;
	struct pw w;

	CHECK_EQ(parse_named("odata_label_0x22", &w, &pkt), PGM_OK);
	CHECK(pkt.flags & PGM_PKT_UNKNOWN_OPT);
	CHECK(!(pkt.flags & (PGM_PKT_OPX_INVALIDATE | PGM_PKT_OPX_DISCARD)));
	rec = pgm_packet_opt_find(&pkt, PGM_OPT_VENDOR_LABEL);
	CHECK(rec != NULL);
	if (rec) {
		CHECK_EQ(rec->len, 13);
		CHECK_EQ(rec->opx, PGM_OPX_IGNORE);
		CHECK(memcmp(pkt.raw + rec->offset + 4, "EQ.PRICES", 9) == 0);
	}
	CHECK_EQ(pkt.opt_seen, 0);

	CHECK_EQ(parse_named("odata_opx_invalidate", &w, &pkt), PGM_OK);
	CHECK(pkt.flags & PGM_PKT_OPX_INVALIDATE);
	CHECK(!(pkt.flags & PGM_PKT_OPX_DISCARD));
	CHECK_EQ(pkt.opts[0].opx, PGM_OPX_INVALIDATE);
	CHECK_EQ(pkt.opts[0].type, 0x30);

	CHECK_EQ(parse_named("odata_opx_discard", &w, &pkt), PGM_OK);
	CHECK(pkt.flags & PGM_PKT_OPX_DISCARD);
	CHECK_EQ(pkt.opts[0].opx, PGM_OPX_DISCARD);

	CHECK_EQ(parse_named("odata_unassigned_and_invalid", &w, &pkt), PGM_OK);
	CHECK(pkt.flags & PGM_PKT_UNKNOWN_OPT);
	CHECK(pkt.flags & PGM_PKT_OPT_INVALID);
	CHECK_EQ(pkt.opt_seen, 0);

	CHECK_EQ(parse_named("odata_many_opts", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.n_opts, PGM_PACKET_OPT_RECS + 4);
	CHECK_EQ(pkt.n_recs, PGM_PACKET_OPT_RECS);
	CHECK(pkt.flags & PGM_PKT_OPTS_OVERFLOW);
	CHECK_EQ(pkt.opts[5].spec, 5);
	CHECK(pgm_packet_opt_find(&pkt, PGM_OPT_VENDOR_LABEL) == NULL);

	/* Known options: OPX bits of an understood option do not matter. */
	pw_init(&w);
	pw_header(&w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	pw_u32(&w, 1);
	pw_u32(&w, 1);
	pw_opts_begin(&w);
	pw_opt(&w, PGM_OPT_SYN, true, PGM_OPX_DISCARD | PGM_OPT_F_BIT, PGM_OPT_U_BIT, NULL, 0);
	pw_opts_end(&w);
	pw_csum(&w);
	CHECK_EQ(pgm_parse(w.b, w.len, 0, &pkt), PGM_OK);
	CHECK(!(pkt.flags & PGM_PKT_OPX_DISCARD));
	CHECK_EQ(pkt.opts[0].bits, PGM_OPX_DISCARD | PGM_OPT_F_BIT);
	CHECK_EQ(pkt.opts[0].spec, PGM_OPT_U_BIT);
}

static void test_checksum_status(void)
{
	struct pgm_packet pkt;
	struct pw w;

	CHECK_EQ(parse_named("odata_no_checksum", &w, &pkt), PGM_OK);
	CHECK_EQ(pkt.csum, PGM_CSUM_ABSENT);
	CHECK_EQ(pkt.checksum, 0);

	CHECK_EQ(parse_named("odata_bad_checksum", &w, &pkt), PGM_BAD_CHECKSUM);
	CHECK_EQ(pkt.csum, PGM_CSUM_BAD);
	CHECK_EQ(pkt.u.data.sqn, 5); /* fields still decoded */
	CHECK_EQ(pgm_parse(w.b, w.len, PGM_PARSE_NO_CSUM, &pkt), PGM_OK);
	CHECK_EQ(pkt.csum, PGM_CSUM_UNCHECKED);

	/* A malformed packet still reports its checksum state. */
	CHECK_EQ(parse_named("opt_len_zero", &w, &pkt), PGM_ERR_OPT_LEN_ZERO);
	CHECK_EQ(pkt.csum, PGM_CSUM_GOOD);

	/* PGM_PARSE_CSUM_LAST: well-formed packets get the same verdicts ... */
	CHECK_EQ(parse_named("odata_bad_checksum", &w, &pkt), PGM_BAD_CHECKSUM);
	CHECK_EQ(pgm_parse(w.b, w.len, PGM_PARSE_CSUM_LAST, &pkt), PGM_BAD_CHECKSUM);
	CHECK_EQ(pkt.csum, PGM_CSUM_BAD);
	CHECK_EQ(parse_named("odata_no_checksum", &w, &pkt), PGM_OK);
	CHECK_EQ(pgm_parse(w.b, w.len, PGM_PARSE_CSUM_LAST, &pkt), PGM_OK);
	CHECK_EQ(pkt.csum, PGM_CSUM_ABSENT);
	CHECK_EQ(pgm_parse(w.b, w.len, PGM_PARSE_CSUM_LAST | PGM_PARSE_NO_CSUM, &pkt), PGM_OK);
	CHECK_EQ(pkt.csum, PGM_CSUM_UNCHECKED);
	/* ... and a malformed one is rejected without its checksum being summed. */
	CHECK_EQ(parse_named("opt_len_zero", &w, &pkt), PGM_ERR_OPT_LEN_ZERO);
	CHECK_EQ(pgm_parse(w.b, w.len, PGM_PARSE_CSUM_LAST, &pkt), PGM_ERR_OPT_LEN_ZERO);
	CHECK_EQ(pkt.csum, PGM_CSUM_UNCHECKED);
}

static void test_malformed_details(void)
{
	struct pgm_packet pkt;
	struct pw w;

	CHECK_EQ(parse_named("truncated_header", &w, &pkt), PGM_ERR_TRUNCATED_HEADER);
	CHECK(!(pkt.flags & PGM_PKT_HAVE_HEADER));
	CHECK_EQ(pgm_parse(NULL, 0, 0, &pkt), PGM_ERR_TRUNCATED_HEADER);

	CHECK_EQ(parse_named("opt_len_zero", &w, &pkt), PGM_ERR_OPT_LEN_ZERO);
	CHECK_EQ(pkt.err_offset, PGM_HDR_LEN + 8 + 4);
	CHECK(pkt.flags & PGM_PKT_HAVE_HEADER);
	CHECK_EQ(pkt.u.data.sqn, 1);

	CHECK_EQ(parse_named("bad_afi_spm", &w, &pkt), PGM_ERR_BAD_AFI);
	CHECK_EQ(pkt.u.spm.nla.afi, 3);
	CHECK_EQ(pkt.err_offset, PGM_HDR_LEN + 12);

	CHECK_EQ(parse_named("trailing_bytes", &w, &pkt), PGM_ERR_TRAILING_BYTES);
	CHECK_EQ(pkt.err_offset, PGM_HDR_LEN + 8 + 3);

	CHECK_EQ(parse_named("bad_version", &w, &pkt), PGM_ERR_BAD_TYPE);
	CHECK_EQ(pkt.err_offset, 4);
}

static void test_too_long(void)
{
	size_t len = PGM_MAX_TPDU + 1;
	uint8_t *b = calloc(1, len);
	struct pgm_packet pkt;

	CHECK(b != NULL);
	if (!b)
		return;
	b[4] = PGM_TYPE_ODATA;
	CHECK_EQ(pgm_parse(b, len, 0, &pkt), PGM_ERR_TOO_LONG);
	CHECK(pkt.flags & PGM_PKT_HAVE_HEADER);
	/* The largest legal size is accepted. */
	b[14] = (uint8_t)((PGM_MAX_TPDU - 24) >> 8);
	b[15] = (uint8_t)(PGM_MAX_TPDU - 24);
	pgm_checksum_fill(b, PGM_MAX_TPDU);
	CHECK_EQ(pgm_parse(b, PGM_MAX_TPDU, 0, &pkt), PGM_OK);
	CHECK_EQ(pkt.tsdu_len, PGM_MAX_TPDU - 24);
	free(b);
}

/* Parse from a heap buffer of exactly len bytes so any over-read trips ASan. */
static enum pgm_result parse_exact(const uint8_t *src, size_t len, struct pgm_packet *pkt)
{
	uint8_t *b = malloc(len ? len : 1);
	enum pgm_result r;

	if (!b)
		abort();
	memcpy(b, src, len);
	r = pgm_parse(b, len, 0, pkt);
	if ((unsigned)r >= PGM_RESULT_COUNT)
		abort();
	free(b);
	return r;
}

static void test_robustness(void)
{
	unsigned prefixes = 0, flips = 0, bad = 0;

	for (size_t i = 0; i < pgm_n_cases; i++) {
		struct pgm_packet pkt;
		struct pw w;

		pw_init(&w);
		pgm_cases[i].make(&w);
		for (size_t n = 0; n < w.len; n++, prefixes++)
			if (parse_exact(w.b, n, &pkt) == PGM_OK && n < PGM_HDR_LEN)
				bad++;
		for (size_t at = 0; at < w.len; at++) {
			for (unsigned v = 0; v < 256; v += 51, flips++) {
				uint8_t save = w.b[at];

				w.b[at] = (uint8_t)v;
				parse_exact(w.b, w.len, &pkt);
				w.b[at] = save;
			}
		}
	}
	CHECK_EQ(bad, 0);
	CHECK(prefixes > 1000);
	CHECK(flips > 10000);
	printf("# robustness: %u prefixes, %u byte corruptions parsed\n", prefixes, flips);
}

static void test_invalidate_rewrite(void)
{
	struct pgm_packet pkt;
	struct pw w, orig;

	/* OPX invalidate: type becomes OPT_INVALID, E bit kept, checksum still good. */
	pgm_case_make("odata_opx_invalidate", &w);
	orig = w;
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), 1);
	CHECK_EQ(pgm_parse(w.b, w.len, 0, &pkt), PGM_OK);
	CHECK_EQ(pkt.opts[0].type, PGM_OPT_INVALID);
	CHECK(!pkt.opts[0].end);
	CHECK(pkt.flags & PGM_PKT_OPT_INVALID);
	CHECK(!(pkt.flags & PGM_PKT_UNKNOWN_OPT));
	CHECK(pkt.opt_seen & PGM_OPT_BIT(PGM_OPT_SYN));
	for (size_t i = 0; i < w.len; i++) /* only the type byte and the checksum changed */
		if (i != 6 && i != 7 && i != orig.opts_at + 4)
			CHECK_EQ(w.b[i], orig.b[i]);
	CHECK_EQ(pgm_checksum(w.b, w.len), pkt.checksum);
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), 0); /* idempotent */

	/* Unknown option last (E bit) at an odd offset: checksum word straddles bytes. */
	pw_init(&w);
	pw_header(&w, PGM_TYPE_ODATA, PGM_HDR_OPT_PRESENT);
	pw_u32(&w, 1);
	pw_u32(&w, 1);
	pw_opts_begin(&w);
	pw_opt(&w, 0x22, false, 0, 0, "abc", 3); /* 7 bytes: next option at an odd offset */
	pw_opt(&w, 0x50, true, PGM_OPX_INVALIDATE, 0, NULL, 0);
	pw_opts_end(&w);
	pw_data(&w, "q", 1);
	pw_csum(&w);
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), 1);
	CHECK_EQ(pgm_parse(w.b, w.len, 0, &pkt), PGM_OK);
	CHECK_EQ(pkt.opts[1].type, PGM_OPT_INVALID);
	CHECK(pkt.opts[1].end);
	CHECK_EQ(pkt.opts[1].offset % 2, 1);
	CHECK_EQ(pkt.opts[0].type, 0x22);

	/* A bad checksum stays bad; an absent one stays absent. */
	pgm_case_make("odata_opx_invalidate", &w);
	w.b[w.len - 1] ^= 1;
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), 1);
	CHECK_EQ(pgm_parse(w.b, w.len, 0, &pkt), PGM_BAD_CHECKSUM);
	pgm_case_make("odata_opx_invalidate", &w);
	w.b[6] = w.b[7] = 0;
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), 1);
	CHECK_EQ(pgm_parse(w.b, w.len, 0, &pkt), PGM_OK);
	CHECK_EQ(pkt.csum, PGM_CSUM_ABSENT);

	/* Nothing to do, or not a packet. */
	pgm_case_make("odata_label_0x22", &w);
	orig = w;
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), 0);
	CHECK(memcmp(w.b, orig.b, w.len) == 0);
	pgm_case_make("odata_opx_discard", &w);
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), 0);
	pgm_case_make("opt_len_zero", &w);
	CHECK_EQ(pgm_packet_invalidate_opts(w.b, w.len), -EINVAL);
}

static void test_serial(void)
{
	CHECK(pgm_sqn_lt(1, 2));
	CHECK(!pgm_sqn_lt(2, 1));
	CHECK(pgm_sqn_lt(0xffffffffu, 0));
	CHECK(pgm_sqn_gt(0, 0xffffffffu));
	CHECK(pgm_sqn_lt(0xfffffff0u, 0x10u));
	CHECK(pgm_sqn_lte(5, 5));
	CHECK(pgm_sqn_gte(5, 5));
	CHECK(!pgm_sqn_lt(5, 5));
	CHECK_EQ(pgm_sqn_diff(3, 0xfffffffeu), 5);
	CHECK_EQ((int64_t)pgm_sqn_diff(0xfffffffeu, 3), -5);
	CHECK(pgm_sqn_lt(0x7fffffffu, 0x80000000u));
	CHECK(pgm_sqn_gt(0x80000001u, 0x00000002u));
}

int main(void)
{
	test_catalogue();
	test_result_names();
	test_drop_policy();
	test_spm();
	test_poll_polr();
	test_data();
	test_nak_family();
	test_unknown_options();
	test_checksum_status();
	test_malformed_details();
	test_too_long();
	test_robustness();
	test_invalidate_rewrite();
	test_serial();
	return tap_done();
}
