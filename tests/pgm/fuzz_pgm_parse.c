/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_pgm_parse.c - libFuzzer target for pgm/: every input is parsed (with and without
 * checksum verification), the parser's invariants are checked (pgm_surely_malformed()
 * never rejects what the parser accepts, and agrees with it exactly without options),
 * accepted packets go through the OPX rewrite and are re-parsed, and every packet with a
 * header is accounted in a stream table (SQN window, loops, aging). Any broken invariant
 * traps.
 * Built and run by run_fuzz.sh (suite 'fuzz').
 */
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-qsbr.h>

#include "pgm.h"
#include "stream.h"

#define REQUIRE(c)                                                                                 \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define AGE_EVERY 4096u /* inputs between agings of the stream table */
#define GROUPS	  4u

static struct pgm_stream_table *table;
static uint64_t clock_ns;

static void check_accepted(const uint8_t *data, size_t size, const struct pgm_packet *pkt)
{
	size_t opts_end;

	REQUIRE(pkt->flags & PGM_PKT_HAVE_HEADER);
	REQUIRE((size_t)pkt->data_offset + pkt->tsdu_len == size);
	REQUIRE(!!pkt->opts_offset == !!(pkt->hdr_opts & PGM_HDR_OPT_PRESENT));
	opts_end = pkt->opts_offset ? (size_t)pkt->opts_offset + pkt->opts_len : 0;
	if (pkt->opts_offset)
		REQUIRE(opts_end == pkt->data_offset);
	REQUIRE(pkt->n_recs <= PGM_PACKET_OPT_RECS && pkt->n_recs <= pkt->n_opts);
	for (unsigned i = 0; i < pkt->n_recs; i++) {
		const struct pgm_opt_rec *o = &pkt->opts[i];

		REQUIRE(o->len >= PGM_OPT_HDR_LEN);
		REQUIRE(o->offset > pkt->opts_offset && (size_t)o->offset + o->len <= opts_end);
		REQUIRE(o->end == (i + 1 == pkt->n_opts));
	}
	if (pkt->opt_seen & PGM_OPT_BIT(PGM_OPT_NAK_LIST))
		for (unsigned i = 0; i < pkt->opt.nak_list.count; i++)
			(void)pgm_packet_nak_list_sqn(pkt, i); /* reads inside the packet (ASan) */
	REQUIRE((pkt->result == PGM_BAD_CHECKSUM) ==
		(pkt->checksum != 0 && !pgm_checksum_verify(data, size)));
	REQUIRE(pkt->checksum == 0 || pkt->csum != PGM_CSUM_GOOD ||
		pgm_checksum(data, size) == pkt->checksum);
}

static void check_rewrite(const uint8_t *data, size_t size, const struct pgm_packet *pkt)
{
	uint8_t *copy = malloc(size);
	struct pgm_packet again;
	int n;

	REQUIRE(copy != NULL);
	memcpy(copy, data, size);
	n = pgm_packet_invalidate_opts(copy, size);
	REQUIRE(n >= 0);
	REQUIRE((n > 0) == !!(pkt->flags & PGM_PKT_OPX_INVALIDATE));
	REQUIRE(pgm_parse(copy, size, 0, &again) == pkt->result);
	REQUIRE(!(again.flags & PGM_PKT_OPX_INVALIDATE));
	REQUIRE(again.n_opts == pkt->n_opts && again.opt_seen == pkt->opt_seen);
	free(copy);
}

static void account(const uint8_t *data, size_t size, const struct pgm_packet *pkt)
{
	struct pgm_stream_key key;
	enum pgm_verdict v;

	if (!table) {
		urcu_qsbr_register_thread();
		table = pgm_stream_table_new(NULL);
		REQUIRE(table != NULL);
	}
	if (!(pkt->flags & PGM_PKT_HAVE_HEADER))
		return;
	pgm_stream_key_from_packet(&key, pkt, size % GROUPS);
	REQUIRE(pgm_stream_update(table, &key, data[0] & 1, pkt, ++clock_ns, &v) == 0);
	REQUIRE(v == PGM_VERDICT_PASS || v == PGM_VERDICT_DUPLICATE || v == PGM_VERDICT_LOOP ||
		v == PGM_VERDICT_OPX_DISCARD);
	if (clock_ns % AGE_EVERY == 0) {
		pgm_stream_table_age(table, clock_ns, AGE_EVERY / 2);
		urcu_qsbr_quiescent_state();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pgm_packet pkt, nocsum;
	enum pgm_result r = pgm_parse(data, size, 0, &pkt);

	REQUIRE((unsigned)r < PGM_RESULT_COUNT && pkt.result == r);
	/* The pre-check only ever rejects what the parser rejects. */
	REQUIRE(!pgm_surely_malformed(data, size) || pgm_result_malformed(r));
	/* Without options it is exact. */
	if (size >= PGM_HDR_LEN && !(data[PGM_OFF_OPTIONS] & PGM_HDR_OPT_PRESENT))
		REQUIRE(pgm_surely_malformed(data, size) == pgm_result_malformed(r));
	REQUIRE(strcmp(pgm_result_name(r), "unknown") != 0);
	REQUIRE(pkt.err_offset <= size || r == PGM_ERR_TOO_LONG);

	/* Without checksum verification only the checksum verdict may change. */
	pgm_parse(data, size, PGM_PARSE_NO_CSUM, &nocsum);
	REQUIRE(nocsum.result == (r == PGM_BAD_CHECKSUM ? PGM_OK : r));
	REQUIRE(nocsum.csum == PGM_CSUM_UNCHECKED);

	if (!pgm_result_malformed(r)) {
		check_accepted(data, size, &pkt);
		check_rewrite(data, size, &pkt);
	}
	account(data, size, &pkt);
	return 0;
}
