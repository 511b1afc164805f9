/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_build.c - builders round-trip through the parser; capacity and argument errors
 * leave the buffer untouched.
 */
#include <errno.h>
#include <string.h>

#include "pgm.h"
#include "tap.h"

static const struct pgm_tsi tsi = {.gsi = {0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6}, .sport = 40001};

/* Field-wise: struct pgm_nla has a padding byte. */
static int nla_eq(const struct pgm_nla *a, const struct pgm_nla *b)
{
	return a->afi == b->afi && a->len == b->len && memcmp(a->addr, b->addr, a->len) == 0;
}

static void check_header(const struct pgm_packet *pkt, uint8_t type)
{
	CHECK_EQ(pkt->type, type);
	CHECK_EQ(pkt->sport, tsi.sport);
	CHECK_EQ(pkt->dport, 7500);
	CHECK(memcmp(pkt->gsi, tsi.gsi, PGM_GSI_LEN) == 0);
	CHECK_EQ(pkt->csum, PGM_CSUM_GOOD);
}

static void test_spm(void)
{
	uint8_t b[128];
	struct pgm_nla nla, v6 = {.afi = PGM_AFI_IPV6, .len = 16, .addr = {0x20, 0x01, 0x0d, 0xb8}};
	struct pgm_packet pkt;
	ssize_t n;

	pgm_nla_ipv4(&nla, 0xc0000201u);
	CHECK_EQ(nla.addr[0], 192);
	CHECK_EQ(nla.addr[3], 1);
	n = pgm_build_spm(b, sizeof(b), &tsi, 7500, 0xfffffffeu, 0xfffffff0u, 0xfffffffdu, &nla);
	CHECK_EQ(n, 36);
	CHECK_EQ(pgm_parse(b, (size_t)n, 0, &pkt), PGM_OK);
	check_header(&pkt, PGM_TYPE_SPM);
	CHECK_EQ(pkt.u.spm.sqn, 0xfffffffeu);
	CHECK_EQ(pkt.u.spm.trail, 0xfffffff0u);
	CHECK_EQ(pkt.u.spm.lead, 0xfffffffdu);
	CHECK(nla_eq(&pkt.u.spm.nla, &nla));
	CHECK_EQ(pkt.hdr_opts, 0);
	CHECK_EQ(pkt.tsdu_len, 0);

	n = pgm_build_spm(b, sizeof(b), &tsi, 7500, 1, 1, 0, &v6);
	CHECK_EQ(n, 48);
	CHECK_EQ(pgm_parse(b, (size_t)n, 0, &pkt), PGM_OK);
	CHECK(nla_eq(&pkt.u.spm.nla, &v6));
	/* pgm_nla_ipv6 makes the same NLA (AFI 2, 16 bytes as given), on the wire after
	 * AFI 2 and the reserved field. */
	{
		static const uint8_t a6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1};
		struct pgm_nla n6;

		pgm_nla_ipv6(&n6, a6);
		CHECK_EQ(n6.afi, PGM_AFI_IPV6);
		CHECK_EQ(n6.len, 16);
		CHECK(memcmp(n6.addr, a6, 16) == 0);
		n = pgm_build_spm(b, sizeof(b), &tsi, 7500, 1, 1, 0, &n6);
		CHECK_EQ(n, 48);
		CHECK_EQ(b[PGM_HDR_LEN + 12], 0);
		CHECK_EQ(b[PGM_HDR_LEN + 13], PGM_AFI_IPV6);
		CHECK(memcmp(b + PGM_HDR_LEN + 16, a6, 16) == 0);
		CHECK_EQ(pgm_parse(b, (size_t)n, 0, &pkt), PGM_OK);
		CHECK(nla_eq(&pkt.u.spm.nla, &n6));
	}

	memset(b, 0x5a, sizeof(b));
	CHECK_EQ(pgm_build_spm(b, 35, &tsi, 7500, 1, 1, 0, &nla), -ENOSPC);
	nla.afi = 3;
	CHECK_EQ(pgm_build_spm(b, sizeof(b), &tsi, 7500, 1, 1, 0, &nla), -EINVAL);
	pgm_nla_ipv4(&nla, 1);
	nla.len = 16; /* length does not match the AFI */
	CHECK_EQ(pgm_build_spm(b, sizeof(b), &tsi, 7500, 1, 1, 0, &nla), -EINVAL);
	for (size_t i = 0; i < sizeof(b); i++)
		CHECK_EQ(b[i], 0x5a);
}

static void test_data(void)
{
	static const unsigned variants[] = {0, PGM_BUILD_SYN, PGM_BUILD_FIN,
					    PGM_BUILD_SYN | PGM_BUILD_FIN};
	static uint8_t big[PGM_MAX_TPDU + 16], payload[PGM_MAX_TPDU];
	uint8_t b[256];
	struct pgm_packet pkt;
	ssize_t n;

	for (unsigned v = 0; v < 4; v++) {
		unsigned opts = variants[v];
		unsigned nopt = !!(opts & PGM_BUILD_SYN) + !!(opts & PGM_BUILD_FIN);

		n = pgm_build_odata(b, sizeof(b), &tsi, 7500, 77 + v, 70, opts, "payload", 7);
		CHECK_EQ(n, 16 + 8 + (nopt ? 4 + 4 * nopt : 0) + 7);
		CHECK_EQ(pgm_parse(b, (size_t)n, 0, &pkt), PGM_OK);
		check_header(&pkt, PGM_TYPE_ODATA);
		CHECK_EQ(pkt.u.data.sqn, 77 + v);
		CHECK_EQ(pkt.u.data.trail, 70);
		CHECK_EQ(pkt.tsdu_len, 7);
		CHECK(memcmp(b + pkt.data_offset, "payload", 7) == 0);
		CHECK_EQ(!!(pkt.opt_seen & PGM_OPT_BIT(PGM_OPT_SYN)), !!(opts & PGM_BUILD_SYN));
		CHECK_EQ(!!(pkt.opt_seen & PGM_OPT_BIT(PGM_OPT_FIN)), !!(opts & PGM_BUILD_FIN));
		CHECK_EQ(!!(pkt.hdr_opts & PGM_HDR_OPT_PRESENT), nopt != 0);
		CHECK_EQ(pkt.n_opts, nopt);

		n = pgm_build_rdata(b, sizeof(b), &tsi, 7500, 5, 1, opts, NULL, 0);
		CHECK_EQ(pgm_parse(b, (size_t)n, 0, &pkt), PGM_OK);
		check_header(&pkt, PGM_TYPE_RDATA);
		CHECK_EQ(pkt.tsdu_len, 0);
	}

	memset(b, 0x5a, sizeof(b));
	CHECK_EQ(pgm_build_odata(b, 30, &tsi, 7500, 1, 1, 0, "payload", 7), -ENOSPC);
	CHECK_EQ(pgm_build_odata(b, sizeof(b), &tsi, 7500, 1, 1, 0x4, "p", 1), -EINVAL);
	CHECK_EQ(pgm_build_odata(b, sizeof(b), &tsi, 7500, 1, 1, 0, NULL, 1), -EINVAL);
	for (size_t i = 0; i < sizeof(b); i++)
		CHECK_EQ(b[i], 0x5a);

	/* Largest packet, and one byte more. */
	n = pgm_build_odata(big, sizeof(big), &tsi, 7500, 1, 1, 0, payload, PGM_MAX_TPDU - 24);
	CHECK_EQ(n, PGM_MAX_TPDU);
	CHECK_EQ(pgm_parse(big, (size_t)n, 0, &pkt), PGM_OK);
	CHECK_EQ(pgm_build_odata(big, sizeof(big), &tsi, 7500, 1, 1, 0, payload, PGM_MAX_TPDU - 23),
		 -EINVAL);
}

static void test_ncf(void)
{
	uint8_t b[128];
	struct pgm_nla src, grp;
	struct pgm_packet pkt;
	ssize_t n;

	pgm_nla_ipv4(&src, 0xc0000201u);
	pgm_nla_ipv4(&grp, 0xefc00001u);
	n = pgm_build_ncf(b, sizeof(b), &tsi, 7500, 0x80000000u, &src, &grp);
	CHECK_EQ(n, 36); /* 16 header + 4 SQN + 2 * (4 + 4) NLA blocks */
	CHECK_EQ(pgm_parse(b, (size_t)n, 0, &pkt), PGM_OK);
	check_header(&pkt, PGM_TYPE_NCF);
	CHECK_EQ(pkt.u.nak.sqn, 0x80000000u);
	CHECK(nla_eq(&pkt.u.nak.src, &src));
	CHECK(nla_eq(&pkt.u.nak.grp, &grp));
	CHECK_EQ(pgm_packet_tsi_port(&pkt), tsi.sport);
	CHECK_EQ(pgm_build_ncf(b, 35, &tsi, 7500, 1, &src, &grp), -ENOSPC);
	grp.afi = 0;
	CHECK_EQ(pgm_build_ncf(b, sizeof(b), &tsi, 7500, 1, &src, &grp), -EINVAL);
}

int main(void)
{
	test_spm();
	test_data();
	test_ncf();
	return tap_done();
}
