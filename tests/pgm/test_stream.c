/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_stream.c - stream table accounting: in-order data, gaps, late arrivals, repairs,
 * duplicates, serial wraparound across 2^32, SPM windows, SYN/FIN/RST transitions,
 * re-sync, loops between fabric sides, upstream packets, malformed input, labels,
 * parity, OPX discard, aging, the per-thread stream cache and the table's own counters,
 * and the in-order ODATA shortcut (the same accounting, and when its ref may be used).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-qsbr.h>

#include "pgm.h"
#include "pktgen.h"
#include "stream.h"
#include "tap.h"

#define GROUP_A 0x0000efc00001ull
#define GROUP_B 0x0000efc00002ull

static const struct pgm_tsi tsi = {.gsi = {0x10, 0x20, 0x30, 0x40, 0x50, 0x60}, .sport = 4242};
static uint64_t clock_ns = 1000;

/* Parse a packet and account it; returns the verdict (asserts update succeeded). */
static enum pgm_verdict feed_raw(struct pgm_stream_table *t, unsigned side, uint64_t group,
				 const uint8_t *b, size_t len)
{
	enum pgm_verdict v = PGM_VERDICT_PASS;
	struct pgm_stream_key key;
	struct pgm_packet pkt;

	pgm_parse(b, len, 0, &pkt);
	pgm_stream_key_from_packet(&key, &pkt, group);
	CHECK_EQ(pgm_stream_update(t, &key, side, &pkt, clock_ns++, &v), 0);
	return v;
}

static enum pgm_verdict feed_data(struct pgm_stream_table *t, unsigned side, uint8_t type,
				  uint32_t sqn, unsigned opts)
{
	uint8_t b[128];
	ssize_t n;

	if (type == PGM_TYPE_ODATA)
		n = pgm_build_odata(b, sizeof(b), &tsi, 7500, sqn, sqn - 10, opts, "d", 1);
	else
		n = pgm_build_rdata(b, sizeof(b), &tsi, 7500, sqn, sqn - 10, opts, "d", 1);
	return feed_raw(t, side, GROUP_A, b, (size_t)n);
}

static enum pgm_verdict odata(struct pgm_stream_table *t, uint32_t sqn)
{
	return feed_data(t, 0, PGM_TYPE_ODATA, sqn, 0);
}

static enum pgm_verdict rdata(struct pgm_stream_table *t, uint32_t sqn)
{
	return feed_data(t, 0, PGM_TYPE_RDATA, sqn, 0);
}

static void spm(struct pgm_stream_table *t, unsigned side, uint32_t sqn, uint32_t trail,
		uint32_t lead)
{
	struct pgm_nla nla;
	uint8_t b[64];
	ssize_t n;

	pgm_nla_ipv4(&nla, 0xc0000201u);
	n = pgm_build_spm(b, sizeof(b), &tsi, 7500, sqn, trail, lead, &nla);
	feed_raw(t, side, GROUP_A, b, (size_t)n);
}

/* A NAK for tsi's stream as a receiver sends it: ports swapped. */
static enum pgm_verdict nak(struct pgm_stream_table *t, unsigned side, uint32_t sqn)
{
	struct pw w;

	pw_init(&w);
	pw_u16(&w, 7500);
	pw_u16(&w, tsi.sport);
	pw_u8(&w, PGM_TYPE_NAK);
	pw_u8(&w, 0);
	pw_u16(&w, 0);
	pw_bytes(&w, tsi.gsi, PGM_GSI_LEN);
	pw_u16(&w, 0);
	pw_u32(&w, sqn);
	pw_nla4(&w, 0xc0000201u);
	pw_nla4(&w, 0xefc00001u);
	pw_csum(&w);
	return feed_raw(t, side, GROUP_A, w.b, w.len);
}

static struct pgm_stream_stats snap_key(struct pgm_stream_table *t, const uint8_t *gsi,
					uint16_t sport, uint64_t group)
{
	struct pgm_stream_stats st;
	struct pgm_stream_key key = {.sport = sport, .group = group};
	const struct pgm_stream *s;

	memcpy(key.gsi, gsi, PGM_GSI_LEN);
	memset(&st, 0, sizeof(st));
	s = pgm_stream_lookup(t, &key);
	CHECK(s != NULL);
	if (s)
		pgm_stream_snapshot(s, &st);
	return st;
}

/* The stream of tsi on group. */
static struct pgm_stream_stats snap(struct pgm_stream_table *t, uint64_t group)
{
	return snap_key(t, tsi.gsi, tsi.sport, group);
}

/* The stream of the catalogue's packets (pktgen.h) on group. */
static struct pgm_stream_stats snap_pw(struct pgm_stream_table *t, uint64_t group)
{
	return snap_key(t, pw_gsi, PW_SPORT, group);
}

static struct pgm_stream_table *table(void)
{
	struct pgm_stream_table *t = pgm_stream_table_new(NULL);

	if (!t)
		abort();
	return t;
}

static void test_in_order(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;
	struct pgm_stream_table_info info;

	for (uint32_t s = 1; s <= 10; s++)
		CHECK_EQ(odata(t, s), PGM_VERDICT_PASS);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 10);
	CHECK_EQ(st.gaps, 0);
	CHECK_EQ(st.missed, 0);
	CHECK_EQ(st.dups, 0);
	CHECK_EQ(st.rx_lead, 10);
	CHECK_EQ(st.odata_last, 10);
	CHECK_EQ(st.lead, 10);
	CHECK_EQ(st.trail, 0); /* data trail of the last packet: 10 - 10 */
	CHECK(st.have_data);
	CHECK(!st.have_spm);
	CHECK_EQ(st.state, PGM_STREAM_ACTIVE);
	CHECK_EQ(st.origin, 0);
	CHECK_EQ(st.dport, 7500);
	CHECK_EQ(st.key.sport, tsi.sport);
	CHECK(st.first_ns > 0 && st.last_ns > st.first_ns);
	CHECK_EQ(st.side[1].first_ns, 0);
	pgm_stream_table_info(t, &info);
	CHECK_EQ(info.streams, 1);
	CHECK_EQ(info.inserted, 1);
	pgm_stream_table_free(t);
}

static void test_gaps_repairs_dups(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;

	odata(t, 100);
	odata(t, 101);
	CHECK_EQ(odata(t, 105), PGM_VERDICT_PASS); /* 102..104 missing */
	st = snap(t, GROUP_A);
	CHECK_EQ(st.gaps, 1);
	CHECK_EQ(st.missed, 3);
	CHECK_EQ(odata(t, 103), PGM_VERDICT_PASS); /* late, reordered */
	CHECK_EQ(rdata(t, 102), PGM_VERDICT_PASS); /* repair */
	CHECK_EQ(rdata(t, 102), PGM_VERDICT_PASS); /* second repair of the same SQN */
	CHECK_EQ(odata(t, 101), PGM_VERDICT_DUPLICATE);
	CHECK_EQ(odata(t, 105), PGM_VERDICT_DUPLICATE);
	CHECK_EQ(rdata(t, 110), PGM_VERDICT_PASS); /* repair ahead: 106..110 never came */
	st = snap(t, GROUP_A);
	CHECK_EQ(st.gaps, 2);
	CHECK_EQ(st.missed, 3 + 5);
	CHECK_EQ(st.late, 1);
	CHECK_EQ(st.repairs, 2);
	CHECK_EQ(st.rdata_dups, 1);
	CHECK_EQ(st.dups, 2);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 6);
	CHECK_EQ(st.side[0].types[PGM_COUNT_RDATA], 3);
	CHECK_EQ(st.odata_last, 105);
	CHECK_EQ(st.rx_lead, 110);
	CHECK_EQ(st.state, PGM_STREAM_ACTIVE);
	/* Aged out, the stream's gaps stay in the table's retired counters (the
	 * ib2roce_pgm_gaps_total counter never goes down). */
	{
		struct pgm_stream_table_info info;

		pgm_stream_table_info(t, &info);
		CHECK_EQ(info.gaps_retired, 0);
		CHECK_EQ(pgm_stream_table_age(t, clock_ns + 1000000, 1), 1);
		pgm_stream_table_info(t, &info);
		CHECK_EQ(info.streams, 0);
		CHECK_EQ(info.gaps_retired, 2);
		CHECK_EQ(info.missed_retired, 3 + 5);
		CHECK_EQ(info.repairs_retired, 2);
	}
	pgm_stream_table_free(t);
}

static void test_wraparound(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;
	uint32_t s;

	/* In order across 2^32. */
	for (s = 0xfffffff0u; s != 0x10u; s++)
		CHECK_EQ(odata(t, s), PGM_VERDICT_PASS);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.gaps, 0);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 0x20);
	CHECK_EQ(st.rx_lead, 0xf);
	CHECK_EQ(odata(t, 0xfffffffeu), PGM_VERDICT_DUPLICATE); /* seen before the wrap */
	CHECK_EQ(odata(t, 0x0000000fu), PGM_VERDICT_DUPLICATE);
	CHECK_EQ(snap(t, GROUP_A).lead, 0xf);
	pgm_stream_table_free(t);

	/* A gap that crosses 2^32: 0xffffffff, 0 and 1 are missing. */
	t = table();
	odata(t, 0xfffffffdu);
	odata(t, 0xfffffffeu);
	odata(t, 2);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.gaps, 1);
	CHECK_EQ(st.missed, 3);
	CHECK_EQ(rdata(t, 0xffffffffu), PGM_VERDICT_PASS);
	CHECK_EQ(odata(t, 0), PGM_VERDICT_PASS);
	CHECK_EQ(odata(t, 0), PGM_VERDICT_DUPLICATE);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.repairs, 1);
	CHECK_EQ(st.late, 1);
	CHECK_EQ(st.dups, 1);
	CHECK_EQ(st.rx_lead, 2);

	/* SPM window across the wrap moves forward, never back. */
	spm(t, 0, 1, 0xfffffff0u, 0xfffffffeu);
	spm(t, 0, 2, 0xfffffffau, 5);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.lead, 5);
	CHECK_EQ(st.trail, 0xfffffffau);
	spm(t, 0, 3, 0xfffffff0u, 3); /* SPM with an older window */
	st = snap(t, GROUP_A);
	CHECK_EQ(st.lead, 5);
	CHECK_EQ(st.trail, 0xfffffffau);
	pgm_stream_table_free(t);
}

static void test_spm(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;

	spm(t, 0, 10, 1, 0); /* empty window before any data */
	st = snap(t, GROUP_A);
	CHECK(st.have_spm);
	CHECK(st.have_window);
	CHECK(!st.have_data);
	CHECK_EQ(st.spm_sqn, 10);
	CHECK_EQ(st.state, PGM_STREAM_NEW);
	CHECK_EQ(st.side[0].types[PGM_COUNT_SPM], 1);
	spm(t, 0, 12, 1, 40);
	spm(t, 0, 11, 1, 50); /* reordered older SPM: counted, window untouched */
	st = snap(t, GROUP_A);
	CHECK_EQ(st.spm_sqn, 12);
	CHECK_EQ(st.lead, 40);
	CHECK_EQ(st.side[0].types[PGM_COUNT_SPM], 3);
	CHECK_EQ(st.origin, 0);
	pgm_stream_table_free(t);
}

static void test_syn_fin_rst(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;
	struct pw w;

	CHECK_EQ(feed_data(t, 0, PGM_TYPE_ODATA, 50, PGM_BUILD_SYN), PGM_VERDICT_PASS);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.syn, 1);
	CHECK_EQ(st.state, PGM_STREAM_ACTIVE);
	CHECK_EQ(st.resyncs, 0);
	odata(t, 51);
	/* The SYN packet again is a duplicate, not a new session. */
	CHECK_EQ(feed_data(t, 0, PGM_TYPE_ODATA, 50, PGM_BUILD_SYN), PGM_VERDICT_DUPLICATE);
	CHECK_EQ(snap(t, GROUP_A).resyncs, 0);

	feed_data(t, 0, PGM_TYPE_ODATA, 52, PGM_BUILD_FIN);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.fin, 1);
	CHECK_EQ(st.state, PGM_STREAM_FIN);
	rdata(t, 49); /* a repair after FIN keeps the state */
	CHECK_EQ(snap(t, GROUP_A).state, PGM_STREAM_FIN);

	/* SPM carrying OPT_FIN, as OpenPGM sends on close. */
	pgm_case_make("spm_parity_prm_join_fin", &w);
	feed_raw(t, 0, GROUP_B, w.b, w.len);
	CHECK_EQ(snap_pw(t, GROUP_B).state, PGM_STREAM_FIN);

	/* New session: SYN at an unrelated SQN restarts the window without a gap. */
	feed_data(t, 0, PGM_TYPE_ODATA, 9000, PGM_BUILD_SYN);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.syn, 3);
	CHECK_EQ(st.resyncs, 1);
	CHECK_EQ(st.state, PGM_STREAM_ACTIVE);
	CHECK_EQ(st.gaps, 0);
	CHECK_EQ(st.rx_lead, 9000);
	odata(t, 9001);
	CHECK_EQ(snap(t, GROUP_A).gaps, 0);

	/* RST. */
	pgm_case_make("odata_rst", &w);
	feed_raw(t, 0, GROUP_B, w.b, w.len);
	st = snap_pw(t, GROUP_B);
	CHECK_EQ(st.rst, 1);
	CHECK_EQ(st.state, PGM_STREAM_RST);
	pgm_stream_table_free(t);
}

static void test_stale_resync(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;

	odata(t, 100000);
	/* One old packet: stale, forwarded, window kept. */
	CHECK_EQ(odata(t, 5), PGM_VERDICT_PASS);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.stale, 1);
	CHECK_EQ(st.rx_lead, 100000);
	odata(t, 100001); /* breaks the run */
	/* A sender that restarted at low SQNs without SYN: re-sync after a run. */
	for (uint32_t s = 1; s <= PGM_STREAM_RESYNC_RUN; s++)
		CHECK_EQ(odata(t, s), PGM_VERDICT_PASS);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.stale, 1 + PGM_STREAM_RESYNC_RUN);
	CHECK_EQ(st.resyncs, 1);
	CHECK_EQ(st.rx_lead, PGM_STREAM_RESYNC_RUN);
	CHECK_EQ(odata(t, PGM_STREAM_RESYNC_RUN + 1), PGM_VERDICT_PASS);
	CHECK_EQ(odata(t, PGM_STREAM_RESYNC_RUN), PGM_VERDICT_DUPLICATE);
	CHECK_EQ(snap(t, GROUP_A).gaps, 0);

	/* A window edge: exactly PGM_STREAM_WINDOW behind is outside (stale). */
	odata(t, 20000);
	CHECK_EQ(odata(t, 20000 - PGM_STREAM_WINDOW + 1), PGM_VERDICT_PASS);
	CHECK_EQ(odata(t, 20000 - PGM_STREAM_WINDOW + 1), PGM_VERDICT_DUPLICATE);
	st = snap(t, GROUP_A);
	odata(t, 20000 - PGM_STREAM_WINDOW);
	CHECK_EQ(snap(t, GROUP_A).stale, st.stale + 1);
	pgm_stream_table_free(t);
}

static void test_loop_and_sides(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;

	odata(t, 1);
	odata(t, 2);
	/* The same stream arriving on side 1 (another bridge sent it back): a loop. */
	CHECK_EQ(feed_data(t, 1, PGM_TYPE_ODATA, 3, 0), PGM_VERDICT_LOOP);
	CHECK_EQ(feed_data(t, 1, PGM_TYPE_RDATA, 1, 0), PGM_VERDICT_LOOP);
	spm(t, 1, 5, 1, 2);
	/* Receivers on side 1 NAK the source on side 0: not a loop. */
	CHECK_EQ(nak(t, 1, 2), PGM_VERDICT_PASS);
	CHECK_EQ(nak(t, 0, 2), PGM_VERDICT_PASS);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.origin, 0);
	CHECK_EQ(st.side[1].loops, 3);
	CHECK_EQ(st.side[1].types[PGM_COUNT_ODATA], 0);
	CHECK_EQ(st.side[1].types[PGM_COUNT_NAK], 1);
	CHECK_EQ(st.side[0].types[PGM_COUNT_NAK], 1);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 2);
	CHECK_EQ(st.rx_lead, 2); /* the looped SQN 3 was not accounted */
	CHECK(!st.have_spm);
	CHECK(st.side[1].first_ns > 0);
	CHECK(pgm_verdict_drop(PGM_VERDICT_LOOP, PGM_DUPS_FORWARD));

	/* Upstream first: origin unknown until the first downstream packet. */
	pgm_stream_table_free(t);
	t = table();
	nak(t, 0, 7);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.origin, PGM_SIDE_NONE);
	CHECK_EQ(st.dport, 7500); /* a NAK's source port is the data destination port */
	CHECK_EQ(feed_data(t, 1, PGM_TYPE_ODATA, 7, 0), PGM_VERDICT_PASS);
	CHECK_EQ(snap(t, GROUP_A).origin, 1);
	CHECK_EQ(odata(t, 8), PGM_VERDICT_LOOP);

	/* The same TSI on another group is another stream. */
	{
		uint8_t b[64];
		ssize_t n = pgm_build_odata(b, sizeof(b), &tsi, 7500, 1, 1, 0, NULL, 0);

		CHECK_EQ(feed_raw(t, 0, GROUP_B, b, (size_t)n), PGM_VERDICT_PASS);
		CHECK_EQ(snap(t, GROUP_B).origin, 0);
	}
	pgm_stream_table_free(t);
}

static void test_malformed_and_flags(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;
	struct pgm_packet pkt;
	struct pgm_stream_key key;
	enum pgm_verdict v;
	uint8_t b[128];
	ssize_t n;

	n = pgm_build_odata(b, sizeof(b), &tsi, 7500, 1, 1, 0, "abc", 3);
	b[n - 1] ^= 1; /* bad checksum */
	CHECK_EQ(feed_raw(t, 0, GROUP_A, b, (size_t)n), PGM_VERDICT_PASS);
	b[n - 1] ^= 1;
	b[14] = 9; /* TSDU length past the packet (checksum now bad too) */
	CHECK_EQ(feed_raw(t, 0, GROUP_A, b, (size_t)n), PGM_VERDICT_PASS);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].bad_checksum, 1);
	CHECK_EQ(st.side[0].malformed, 1);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 0);
	CHECK(!st.have_data);
	CHECK_EQ(st.origin, PGM_SIDE_NONE);

	/* No header: not accountable. Bad side: rejected. */
	pgm_parse(b, 10, 0, &pkt);
	CHECK_EQ(pgm_stream_update(t, &key, 0, &pkt, 1, &v), -EINVAL);
	pgm_parse(b, (size_t)n, 0, &pkt);
	pgm_stream_key_from_packet(&key, &pkt, GROUP_A);
	CHECK_EQ(pgm_stream_update(t, &key, PGM_STREAM_SIDES, &pkt, 1, &v), -EINVAL);
	pgm_stream_table_free(t);

	/* OPX discard: counted and flagged, no SQN state. */
	t = table();
	{
		struct pw w;

		pgm_case_make("odata_opx_discard", &w);
		CHECK_EQ(feed_raw(t, 0, GROUP_A, w.b, w.len), PGM_VERDICT_OPX_DISCARD);
		memcpy(key.gsi, pw_gsi, PGM_GSI_LEN);
		key.sport = PW_SPORT;
		key.group = GROUP_A;
		pgm_stream_snapshot(pgm_stream_lookup(t, &key), &st);
		CHECK_EQ(st.side[0].opx_discard, 1);
		CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 1);
		CHECK(!st.have_data);
		CHECK(pgm_verdict_drop(PGM_VERDICT_OPX_DISCARD, PGM_DUPS_FORWARD));
	}
	pgm_stream_table_free(t);

	/* Parity packets are counted, not sequence-tracked. */
	t = table();
	{
		struct pw w;

		pgm_case_make("rdata_parity_grp", &w);
		feed_raw(t, 0, GROUP_A, w.b, w.len);
		memcpy(key.gsi, pw_gsi, PGM_GSI_LEN);
		key.sport = PW_SPORT;
		pgm_stream_snapshot(pgm_stream_lookup(t, &key), &st);
		CHECK_EQ(st.parity, 1);
		CHECK_EQ(st.side[0].types[PGM_COUNT_RDATA], 1);
		CHECK(!st.have_data);
	}
	pgm_stream_table_free(t);
}

static void test_types_counted(void)
{
	static const char *const names[] = {
		"poll", "polr_redirect_v4",   "nnak",	 "ncf_nak_bo_ivl_rng",
		"spmr", "ack_pgmcc_feedback", "nak_list"};
	static const enum pgm_stream_count idx[] = {PGM_COUNT_POLL, PGM_COUNT_POLR, PGM_COUNT_NNAK,
						    PGM_COUNT_NCF,  PGM_COUNT_SPMR, PGM_COUNT_ACK,
						    PGM_COUNT_NAK};
	struct pgm_stream_table *t = table();
	struct pgm_stream_key key = {.sport = PW_SPORT, .group = GROUP_A};
	struct pgm_stream_stats st;

	memcpy(key.gsi, pw_gsi, PGM_GSI_LEN);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct pw w;

		pgm_case_make(names[i], &w);
		/*
		 * The catalogue writes every packet with sport PW_SPORT and dport PW_DPORT,
		 * so upstream ones land on the stream keyed by PW_DPORT.
		 */
		CHECK_EQ(feed_raw(t, 0, GROUP_A, w.b, w.len), PGM_VERDICT_PASS);
	}
	pgm_stream_snapshot(pgm_stream_lookup(t, &key), &st);
	CHECK_EQ(st.side[0].types[PGM_COUNT_POLL], 1);
	CHECK_EQ(st.side[0].types[PGM_COUNT_NCF], 1);
	key.sport = PW_DPORT;
	pgm_stream_snapshot(pgm_stream_lookup(t, &key), &st);
	for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
		if (idx[i] != PGM_COUNT_POLL && idx[i] != PGM_COUNT_NCF)
			CHECK_EQ(st.side[0].types[idx[i]], 1);
	for (unsigned c = 0; c < PGM_COUNT_TYPES; c++)
		CHECK(strcmp(pgm_stream_count_name((enum pgm_stream_count)c), "unknown") != 0);
	CHECK(strcmp(pgm_stream_state_name(PGM_STREAM_FIN), "fin") == 0);
	CHECK(strcmp(pgm_stream_state_name(PGM_STREAM_STATE_COUNT), "unknown") == 0);
	pgm_stream_table_free(t);
}

static void test_label(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_key key = {.sport = PW_SPORT, .group = GROUP_A};
	struct pgm_stream_stats st;
	struct pw w;

	memcpy(key.gsi, pw_gsi, PGM_GSI_LEN);
	pgm_case_make("odata_label_0x22", &w);
	feed_raw(t, 0, GROUP_A, w.b, w.len);
	pgm_stream_snapshot(pgm_stream_lookup(t, &key), &st);
	CHECK_EQ(st.label_len, 9);
	CHECK(memcmp(st.label, "EQ.PRICES", 9) == 0);
	CHECK_EQ(st.label_changes, 0);
	feed_raw(t, 0, GROUP_A, w.b, w.len); /* same label again */
	w.b[w.len - 5] = 'X';		     /* last label byte (data "tick" follows) */
	pw_csum(&w);
	feed_raw(t, 0, GROUP_A, w.b, w.len);
	pgm_stream_snapshot(pgm_stream_lookup(t, &key), &st);
	CHECK_EQ(st.label_changes, 1);
	CHECK(memcmp(st.label, "EQ.PRICES", 9) == 0);
	pgm_stream_table_free(t);

	/* Label option disabled. */
	{
		struct pgm_stream_params p = {.label_opt = -1, .init_size = 4};

		t = pgm_stream_table_new(&p);
		CHECK(t != NULL);
		feed_raw(t, 0, GROUP_A, w.b, w.len);
		pgm_stream_snapshot(pgm_stream_lookup(t, &key), &st);
		CHECK_EQ(st.label_len, 0);
		pgm_stream_table_free(t);
	}
}

static int count_cb(const struct pgm_stream *s, void *arg)
{
	unsigned *n = arg;

	(void)s;
	return ++*n == 3 ? 42 : 0;
}

static void test_iterate_and_age(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_table_info info;
	struct pgm_tsi other = tsi;
	unsigned n = 0;
	uint8_t b[64];
	ssize_t len;

	/* Five streams; the first two go quiet at t=1000, the others at t=5000. */
	for (unsigned i = 0; i < 5; i++) {
		other.sport = (uint16_t)(100 + i);
		len = pgm_build_odata(b, sizeof(b), &other, 7500, 1, 1, 0, NULL, 0);
		clock_ns = i < 2 ? 1000 : 5000;
		feed_raw(t, 0, GROUP_A, b, (size_t)len);
	}
	CHECK_EQ(pgm_stream_table_for_each(t, count_cb, &n), 42);
	CHECK_EQ(n, 3);

	CHECK_EQ(pgm_stream_table_age(t, 5500, 1000), 2);
	CHECK_EQ(pgm_stream_table_age(t, 5500, 1000), 0);
	n = 0;
	CHECK_EQ(pgm_stream_table_for_each(t, count_cb, &n), 42);
	pgm_stream_table_info(t, &info);
	CHECK_EQ(info.streams, 3);
	CHECK_EQ(info.removed, 2);
	{
		struct pgm_stream_key key = {.sport = 100, .group = GROUP_A};

		memcpy(key.gsi, tsi.gsi, PGM_GSI_LEN);
		CHECK(pgm_stream_lookup(t, &key) == NULL);
		key.sport = 104;
		CHECK(pgm_stream_lookup(t, &key) != NULL);
	}
	/* A removed stream comes back as new. */
	other.sport = 100;
	len = pgm_build_odata(b, sizeof(b), &other, 7500, 9, 1, 0, NULL, 0);
	feed_raw(t, 0, GROUP_A, b, (size_t)len);
	pgm_stream_table_info(t, &info);
	CHECK_EQ(info.inserted, 6);

	/* Wait for the grace period: every removed record has been freed. */
	urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	pgm_stream_table_info(t, &info);
	CHECK_EQ(info.freed, info.removed);
	CHECK_EQ(pgm_stream_table_age(t, 100000, 1000), 4);
	pgm_stream_table_info(t, &info);
	CHECK_EQ(info.streams, 0);
	pgm_stream_table_free(t);
	clock_ns = 1000;
}

/*
 * The per-thread cache of the last stream (stream.c): streams alternating, a cached stream
 * aged out and freed, a cached table freed and another one allocated (likely at the same
 * address). A stale cache entry would count into the wrong record, or, under ASan, read
 * freed memory.
 */
/* Age out every stream (idle for 1 ns at a time 1 ms ahead) and wait for the records to
 * be freed (an RCU barrier, offline). Returns how many were aged out. */
static size_t age_all_and_free(struct pgm_stream_table *t)
{
	size_t n = pgm_stream_table_age(t, clock_ns + 1000000, 1);

	urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	return n;
}

static void test_stream_cache(void)
{
	struct pgm_stream_table_info info;
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st;
	struct pgm_tsi other = tsi;
	unsigned reused = 0;
	uint8_t b[64];
	ssize_t len;

	other.sport = (uint16_t)(tsi.sport + 1);
	for (uint32_t sqn = 1; sqn <= 6; sqn++) {
		odata(t, sqn);
		len = pgm_build_odata(b, sizeof(b), &other, 7500, sqn, 1, 0, NULL, 0);
		feed_raw(t, 0, GROUP_A, b, (size_t)len);
		odata(t, sqn); /* the same stream twice in a row: a duplicate */
	}
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 12);
	CHECK_EQ(st.dups, 6);
	st = snap_key(t, tsi.gsi, other.sport, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 6);
	CHECK_EQ(st.dups, 0);

	/* Age everything out and let the records be freed; the cached one comes back new. */
	CHECK_EQ(age_all_and_free(t), 2);
	pgm_stream_table_info(t, &info);
	CHECK_EQ(info.freed, 2);
	CHECK_EQ(odata(t, 7), PGM_VERDICT_PASS);
	pgm_stream_table_info(t, &info);
	CHECK_EQ(info.inserted, 3);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 1);
	CHECK_EQ(st.rx_lead, 7);

	/* A new table, maybe at the old one's address, starts empty. */
	for (unsigned i = 0; i < 4; i++) {
		struct pgm_stream_table *old = t;

		pgm_stream_table_free(t);
		t = table();
		reused += t == old;
		CHECK_EQ(odata(t, 8), PGM_VERDICT_PASS);
		pgm_stream_table_info(t, &info);
		CHECK_EQ(info.inserted, 1);
		st = snap(t, GROUP_A);
		CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 1);
	}
	printf("# stream cache: table address reused %u of 4 times\n", reused);
	pgm_stream_table_free(t);
}

/* ---- pgm_stream_odata_next: the same accounting as pgm_parse + pgm_stream_update ---- */

#define NEXT_EVENTS  30000u
#define NEXT_STREAMS 4u

struct next_result {
	enum pgm_result r;
	enum pgm_verdict v;
	struct pgm_stream_stats st;
};

static uint64_t next_rng;

static uint32_t next_rand(uint32_t n)
{
	next_rng ^= next_rng << 13;
	next_rng ^= next_rng >> 7;
	next_rng ^= next_rng << 17;
	return (uint32_t)(next_rng % n);
}

/*
 * Event k of a reproducible stream of packets (seeded by k): four streams (two TSIs on
 * two groups), mostly in-order ODATA, with gaps, duplicates, late and stale data,
 * RDATA, SPMs, OPT_SYN/OPT_FIN, parity and other option bits, bad and absent checksums,
 * a TSDU length that does not fill the packet, and loops (the other side). Returns the
 * stream index; fills b, *len, *side.
 */
static unsigned next_event(uint32_t *next_sqn, uint8_t *b, size_t cap, size_t *len, unsigned *side)
{
	static const uint8_t data[100] = {1, 2, 3};
	unsigned k = next_rand(NEXT_STREAMS), kind = next_rand(100);
	struct pgm_tsi t = tsi;
	uint32_t sqn = next_sqn[k];
	unsigned opts = 0;
	ssize_t n;

	t.sport = (uint16_t)(tsi.sport + (k & 1));
	*side = kind == 99 ? 1 : 0; /* a loop: the stream's origin is side 0 */
	if (kind < 70) {
		next_sqn[k]++; /* in order */
	} else if (kind < 74) {
		sqn += next_rand(5); /* a gap */
		next_sqn[k] = sqn + 1;
	} else if (kind < 78) {
		sqn -= 1 + next_rand(3); /* a duplicate or a late one */
	} else if (kind < 80) {
		sqn -= 2000 + next_rand(3000); /* older than the window */
	} else if (kind < 83) {
		opts = PGM_BUILD_SYN;
		next_sqn[k]++;
	} else if (kind < 84) {
		opts = PGM_BUILD_FIN;
		next_sqn[k]++;
	}
	if (kind >= 84 && kind < 88) {
		n = pgm_build_rdata(b, cap, &t, 7500, sqn - 1, sqn - 50, 0, data,
				    1 + next_rand(99));
	} else if (kind >= 88 && kind < 90) {
		struct pgm_nla nla;

		pgm_nla_ipv4(&nla, 0xc0000201u);
		n = pgm_build_spm(b, cap, &t, 7500, sqn, sqn - 40, sqn + next_rand(3), &nla);
	} else {
		n = pgm_build_odata(b, cap, &t, 7500, sqn, sqn - 30, opts, data, 1 + next_rand(99));
		next_sqn[k] += kind >= 90 && kind < 99; /* the variants below are in order too */
	}
	CHECK(n > 0);
	*len = (size_t)n;
	switch (kind) {
	case 90: /* a bad checksum */
		b[*len - 1] ^= 0x40;
		break;
	case 91: /* no checksum */
		b[PGM_OFF_CHECKSUM] = b[PGM_OFF_CHECKSUM + 1] = 0;
		break;
	case 92: /* the parity bit */
		b[PGM_OFF_OPTIONS] |= PGM_HDR_OPT_PARITY;
		pgm_checksum_fill(b, *len);
		break;
	case 93: /* another option bit, no options */
		b[PGM_OFF_OPTIONS] |= PGM_HDR_OPT_NETWORK;
		pgm_checksum_fill(b, *len);
		break;
	case 94: /* a TSDU shorter than the packet: malformed */
		if (--b[PGM_OFF_TSDU_LEN + 1] == 0xff)
			b[PGM_OFF_TSDU_LEN]--;
		pgm_checksum_fill(b, *len);
		break;
	default:
		break;
	}
	return k;
}

/* Run the events on t, through pgm_stream_odata_next first when fast; fills res[]. */
static unsigned next_run(struct pgm_stream_table *t, bool fast, struct next_result *res)
{
	struct pgm_stream_ref refs[NEXT_STREAMS];
	uint32_t next_sqn[NEXT_STREAMS];
	unsigned hits = 0;
	uint8_t b[256];

	memset(refs, 0, sizeof(refs));
	for (unsigned k = 0; k < NEXT_STREAMS; k++)
		next_sqn[k] = 0xfffff000u + k * 1000; /* across 2^32 */
	next_rng = 0x9e3779b97f4a7c15ull;
	clock_ns = 1000;
	for (unsigned i = 0; i < NEXT_EVENTS; i++) {
		struct next_result *x = &res[i];
		struct pgm_stream_key key;
		struct pgm_packet pkt;
		const struct pgm_stream *s;
		uint64_t group, now;
		unsigned side, k;
		size_t len;

		k = next_event(next_sqn, b, sizeof(b), &len, &side);
		group = k < 2 ? GROUP_A : GROUP_B;
		now = clock_ns++;
		x->v = PGM_VERDICT_PASS;
		if (fast && pgm_stream_odata_plain(b, len) &&
		    pgm_stream_odata_next(t, &refs[k], b, len, group, side, now)) {
			x->r = PGM_OK;
			hits++;
		} else {
			x->r = pgm_parse(b, len, 0, &pkt);
			pgm_stream_key_from_packet(&key, &pkt, group);
			CHECK_EQ(pgm_stream_update(t, &key, side, &pkt, now, &x->v), 0);
		}
		memset(&x->st, 0, sizeof(x->st));
		key.sport = (uint16_t)(tsi.sport + (k & 1));
		key.group = group;
		memcpy(key.gsi, tsi.gsi, PGM_GSI_LEN);
		s = pgm_stream_lookup(t, &key);
		if (s)
			pgm_stream_snapshot(s, &x->st);
	}
	return hits;
}

static void test_odata_next(void)
{
	struct pgm_stream_table *full = table(), *fast = table();
	struct next_result *a = calloc(NEXT_EVENTS, sizeof(*a));
	struct next_result *b = calloc(NEXT_EVENTS, sizeof(*b));
	unsigned hits, differ = 0;

	CHECK(a && b);
	if (!a || !b)
		return;
	CHECK_EQ(next_run(full, false, a), 0u);
	hits = next_run(fast, true, b);
	/* Most events are in-order ODATA without options: the shortcut takes them. */
	CHECK(hits > NEXT_EVENTS / 2);
	for (unsigned i = 0; i < NEXT_EVENTS; i++) {
		if (a[i].r != b[i].r || a[i].v != b[i].v ||
		    memcmp(&a[i].st, &b[i].st, sizeof(a[i].st)) != 0) {
			if (!differ++)
				printf("# event %u: result %d/%d verdict %d/%d, or the stream "
				       "differs\n",
				       i, a[i].r, b[i].r, a[i].v, b[i].v);
		}
	}
	CHECK_EQ(differ, 0u);
	/* Not what it takes: nothing changes, false. */
	{
		struct pgm_stream_ref ref;
		uint8_t pk[64];
		ssize_t n = pgm_build_odata(pk, sizeof(pk), &tsi, 7500, 5, 0, 0, "x", 1);
		struct pgm_stream_stats before = snap(fast, GROUP_A), after;

		memset(&ref, 0, sizeof(ref));
		CHECK(n > 0);
		/* Unknown stream (another group): false. */
		CHECK(!pgm_stream_odata_next(fast, &ref, pk, (size_t)n, 0x0000efc0ffffull, 0, 1));
		after = snap(fast, GROUP_A);
		CHECK(memcmp(&before, &after, sizeof(before)) == 0);
		/* A TSDU that does not fill the packet is not plain. */
		pk[PGM_OFF_TSDU_LEN + 1] = 2;
		CHECK(!pgm_stream_odata_plain(pk, (size_t)n));
		CHECK(!pgm_stream_odata_plain(pk, 10));
	}
	free(a);
	free(b);
	pgm_stream_table_free(full);
	pgm_stream_table_free(fast);
}

/* pgm_stream_odata_next on an ODATA of tsi's stream on GROUP_A (side 0 unless said). */
static bool next_odata(struct pgm_stream_table *t, struct pgm_stream_ref *ref, unsigned side,
		       uint32_t sqn)
{
	uint8_t b[64];
	ssize_t n = pgm_build_odata(b, sizeof(b), &tsi, 7500, sqn, sqn - 10, 0, "d", 1);

	CHECK(n > 0 && pgm_stream_odata_plain(b, (size_t)n));
	return pgm_stream_odata_next(t, ref, b, (size_t)n, GROUP_A, side, clock_ns++);
}

/*
 * A pgm_stream_ref is used only while it holds the stream of the packet, on the side it
 * was filled for, and while the table has removed no stream since: a removal (of any
 * stream), the stream itself aged out and freed and back as a new record, and its table
 * freed and another one allocated (maybe at the same address) all make the shortcut say
 * false once, and the packet then counts into the live record. A stale ref would count
 * into the wrong record, or, under ASan, write freed memory.
 */
static void test_odata_ref(void)
{
	struct pgm_stream_table *t = table();
	struct pgm_stream_stats st, before;
	struct pgm_stream_ref ref;
	struct pgm_tsi other = tsi;
	uint8_t b[64];
	ssize_t n;

	memset(&ref, 0, sizeof(ref));
	/* New stream: no data yet, the full path creates it. */
	CHECK(!next_odata(t, &ref, 0, 1));
	CHECK_EQ(odata(t, 1), PGM_VERDICT_PASS);
	/* Filled from the thread's cache, then from the ref. */
	CHECK(next_odata(t, &ref, 0, 2));
	CHECK(next_odata(t, &ref, 0, 3));
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 3);
	CHECK_EQ(st.rx_lead, 3);
	CHECK_EQ(st.odata_last, 3);

	/* The other side (a loop), a gap, a duplicate: false, nothing changed. */
	before = snap(t, GROUP_A);
	CHECK(!next_odata(t, &ref, 1, 4));
	CHECK(!next_odata(t, &ref, 0, 5));
	CHECK(!next_odata(t, &ref, 0, 3));
	st = snap(t, GROUP_A);
	CHECK(memcmp(&before, &st, sizeof(st)) == 0);

	/* Another stream removed: the ref and the cache miss once. */
	other.sport = (uint16_t)(tsi.sport + 1);
	n = pgm_build_odata(b, sizeof(b), &other, 7500, 1, 1, 0, NULL, 0);
	clock_ns -= 100; /* older than tsi's stream */
	feed_raw(t, 0, GROUP_A, b, (size_t)n);
	clock_ns += 100;
	CHECK_EQ(odata(t, 4), PGM_VERDICT_PASS); /* back in the cache */
	CHECK_EQ(pgm_stream_table_age(t, clock_ns, 100), 1);
	CHECK(!next_odata(t, &ref, 0, 5));
	CHECK_EQ(odata(t, 5), PGM_VERDICT_PASS);
	CHECK(next_odata(t, &ref, 0, 6));
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 6);
	CHECK_EQ(st.rx_lead, 6);

	/* The stream itself aged out and freed; the same key comes back as a new record. */
	CHECK_EQ(age_all_and_free(t), 1);
	CHECK(!next_odata(t, &ref, 0, 7));
	CHECK_EQ(odata(t, 7), PGM_VERDICT_PASS);
	CHECK(next_odata(t, &ref, 0, 8));
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 2);
	CHECK_EQ(st.rx_lead, 8);

	/* Another table, maybe at the same address: the ref misses, the packet counts there. */
	pgm_stream_table_free(t);
	t = table();
	CHECK_EQ(odata(t, 9), PGM_VERDICT_PASS);
	CHECK(next_odata(t, &ref, 0, 10));
	st = snap(t, GROUP_A);
	CHECK_EQ(st.side[0].types[PGM_COUNT_ODATA], 2);
	CHECK_EQ(st.rx_lead, 10);
	pgm_stream_table_free(t);
	clock_ns = 1000;
}

#define MODEL_ROUNDS 300u
#define MODEL_START  0xfff00000u /* across 2^32 */

/* SQNs fed to the model, by offset from MODEL_START (the rounds span about 400 000). */
static uint8_t model_fed[1u << 20];

/* Feed sqn to t and the model; returns whether the verdict was the model's. */
static bool model_feed(struct pgm_stream_table *t, uint32_t *lead, uint32_t sqn, uint64_t *dups,
		       uint64_t *late)
{
	struct pgm_stream_key key;
	struct pgm_packet pkt;
	enum pgm_verdict v;
	bool dup = false;
	uint8_t b[64];
	ssize_t n;

	if (!pgm_sqn_gt(sqn, *lead)) {
		if (*lead - sqn >= PGM_STREAM_WINDOW)
			sqn = *lead; /* out of the window by now: a duplicate of the lead */
		dup = model_fed[sqn - MODEL_START];
		*dups += dup;
		*late += !dup;
	}
	if (pgm_sqn_gt(sqn, *lead))
		*lead = sqn;
	model_fed[sqn - MODEL_START] = 1;
	/* feed_data() without a TAP line per packet. */
	n = pgm_build_odata(b, sizeof(b), &tsi, 7500, sqn, sqn - 10, 0, "d", 1);
	pgm_parse(b, (size_t)n, 0, &pkt);
	pgm_stream_key_from_packet(&key, &pkt, GROUP_A);
	return pgm_stream_update(t, &key, 0, &pkt, clock_ns++, &v) == 0 &&
	       v == (dup ? PGM_VERDICT_DUPLICATE : PGM_VERDICT_PASS);
}

/*
 * The SQN window against a model that remembers every SQN fed. Rounds of in-order data
 * (0 to 1100: the SQNs a window behind are mostly seen), a jump ahead by 2 to 1500 (the
 * skipped SQNs start anywhere in a word, cross word boundaries, wrap around the ring or
 * pass the whole window), then data behind the lead: the first and the last SQN the jump
 * skipped, the first multiple of 64 it skipped, three other skipped ones and three
 * anywhere in the window. Each is a duplicate exactly when that SQN came before (a bit
 * the jump failed to clear would call a skipped one a duplicate). Every verdict and the
 * gap, missed, late and duplicate counts match the model's.
 */
static void test_window_model(void)
{
	struct pgm_stream_table *t = table();
	uint64_t gaps = 0, missed = 0, dups = 0, late = 0;
	uint32_t lead = MODEL_START;
	struct pgm_stream_stats st;
	unsigned wrong = 0;

	memset(model_fed, 0, sizeof(model_fed));
	next_rng = 0x2545f4914f6cdd1dull;
	CHECK_EQ(odata(t, lead), PGM_VERDICT_PASS);
	model_fed[0] = 1;
	for (unsigned r = 0; r < MODEL_ROUNDS; r++) {
		uint32_t run = next_rand(1101), lo, hi, n;

		for (uint32_t i = 0; i < run; i++)
			wrong += !model_feed(t, &lead, lead + 1, &dups, &late);
		lo = lead + 1;
		hi = lead + 1 + next_rand(1499); /* skipped: lo .. hi */
		n = hi - lo + 1;
		gaps++;
		missed += n;
		wrong += !model_feed(t, &lead, hi + 1, &dups, &late);
		wrong += !model_feed(t, &lead, lo, &dups, &late);
		wrong += !model_feed(t, &lead, hi, &dups, &late);
		if ((0u - lo) % 64 < n)
			wrong += !model_feed(t, &lead, lo + (0u - lo) % 64, &dups, &late);
		for (unsigned i = 0; i < 3; i++) {
			wrong += !model_feed(t, &lead, lo + next_rand(n), &dups, &late);
			wrong += !model_feed(t, &lead, lead - next_rand(PGM_STREAM_WINDOW), &dups,
					     &late);
		}
	}
	CHECK(lead - MODEL_START < sizeof(model_fed));
	CHECK(late > 0 && dups > 0);
	CHECK_EQ(wrong, 0);
	st = snap(t, GROUP_A);
	CHECK_EQ(st.rx_lead, lead);
	CHECK_EQ(st.gaps, gaps);
	CHECK_EQ(st.missed, missed);
	CHECK_EQ(st.dups, dups);
	CHECK_EQ(st.late, late);
	CHECK_EQ(st.stale, 0);
	printf("# window model: %u rounds, %" PRIu64 " late, %" PRIu64 " duplicates\n",
	       MODEL_ROUNDS, late, dups);
	pgm_stream_table_free(t);
	clock_ns = 1000;
}

static void test_params_and_policy(void)
{
	struct pgm_stream_params bad_size = {.label_opt = 0x22, .init_size = 3};
	struct pgm_stream_params bad_label = {.label_opt = 0x80, .init_size = 8};

	errno = 0;
	CHECK(pgm_stream_table_new(&bad_size) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(pgm_stream_table_new(&bad_label) == NULL);
	pgm_stream_table_free(NULL);

	CHECK(!pgm_verdict_drop(PGM_VERDICT_PASS, PGM_DUPS_DROP));
	CHECK(!pgm_verdict_drop(PGM_VERDICT_DUPLICATE, PGM_DUPS_FORWARD));
	CHECK(pgm_verdict_drop(PGM_VERDICT_DUPLICATE, PGM_DUPS_DROP));
}

int main(void)
{
	urcu_qsbr_register_thread();
	test_in_order();
	test_gaps_repairs_dups();
	test_wraparound();
	test_spm();
	test_syn_fin_rst();
	test_stale_resync();
	test_loop_and_sides();
	test_malformed_and_flags();
	test_types_counted();
	test_label();
	test_iterate_and_age();
	test_stream_cache();
	test_params_and_policy();
	test_odata_next();
	test_odata_ref();
	test_window_model();
	urcu_qsbr_unregister_thread();
	return tap_done();
}
