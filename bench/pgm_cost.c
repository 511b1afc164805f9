/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pgm_cost: CPU cost per packet of the PGM inspection the bridge runs on every forwarded
 * packet (engine/fwd.c, rx_pgm), measured outside the engine.
 *
 *   zero64   a 64-byte all-zero payload (not PGM) through the engine's call sequence:
 *            pgm_surely_malformed() first, pgm_parse(PGM_PARSE_NO_CSUM) only when it
 *            cannot tell; counted as malformed either way.
 *   parse64  pgm_parse(PGM_PARSE_NO_CSUM) on a 64-byte ODATA without options.
 *   frag64   the same with OPT_LENGTH + OPT_FRAGMENT (OpenPGM's fragmented APDUs).
 *   stream   pgm_parse + pgm_stream_key_from_packet + pgm_stream_update on one in-order
 *            ODATA stream (64 bytes, checksum field 0 so no checksum pass is counted).
 *
 * Each scenario is one noinline function running the loop, so its inclusive instruction
 * count divided by the iteration count is the cost per packet (loop overhead, a few
 * instructions, included). Count instructions with callgrind:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/pgm_cost.cg build/bench/pgm_cost 100000
 *   callgrind_annotate --inclusive=yes /tmp/pgm_cost.cg | grep cost_
 *
 * and divide each cost_* line by the iteration count (the argument, default 10000000).
 * Without valgrind the program prints nanoseconds per packet (wall clock, indicative
 * only). Not a test: nothing is asserted about speed (see docs/benchmarks.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/urcu-qsbr.h>

#include "pgm.h"
#include "stream.h"

#define COST_DEFAULT_ITERS 10000000ul
#define COST_PKT_LEN	   64u
#define COST_DATA_HDR_LEN  24u /* common header + DATA_SQN + DATA_TRAIL */
#define COST_FRAG_OPTS_LEN 20u /* OPT_LENGTH (4) + OPT_FRAGMENT (16) */
#define COST_OFF_SQN	   16u
#define COST_GROUP	   0xefc00001ull
#define COST_SIDE	   0u
#define NSEC_PER_SEC	   1000000000ull

/*
 * PGM_COST_NO_PREFILTER: measure zero64 as the engine did before pgm_surely_malformed()
 * existed (pgm_parse on every payload).
 */
#ifdef PGM_COST_NO_PREFILTER
#define cost_prefilter(buf, len) ((void)(buf), (void)(len), false)
#else
#define cost_prefilter(buf, len) pgm_surely_malformed(buf, len)
#endif

static const struct pgm_tsi cost_tsi = {.gsi = {0x02, 0x00, 0x5e, 0x10, 0x20, 0x30},
					.sport = 40000};

/* Keep the compiler from dropping the work of a loop. */
static volatile uint64_t cost_sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A 64-byte ODATA without options, checksum field 0 (absent). */
static void make_odata(uint8_t *b)
{
	static const uint8_t fill[COST_PKT_LEN];
	ssize_t n = pgm_build_odata(b, COST_PKT_LEN, &cost_tsi, 7500, 1, 1, 0, fill,
				    COST_PKT_LEN - COST_DATA_HDR_LEN);

	if (n != COST_PKT_LEN) {
		fprintf(stderr, "pgm_cost: cannot build the ODATA packet\n");
		exit(1);
	}
	b[6] = b[7] = 0;
}

/* A 64-byte ODATA with OPT_LENGTH + OPT_FRAGMENT (last), checksum field 0. */
static void make_odata_frag(uint8_t *b)
{
	uint16_t tsdu = COST_PKT_LEN - COST_DATA_HDR_LEN - COST_FRAG_OPTS_LEN;
	uint8_t *o = b + COST_DATA_HDR_LEN;

	make_odata(b);
	b[5] = PGM_HDR_OPT_PRESENT;
	b[14] = (uint8_t)(tsdu >> 8);
	b[15] = (uint8_t)tsdu;
	o[0] = PGM_OPT_LENGTH;
	o[1] = PGM_OPT_LENGTH_LEN;
	o[2] = 0;
	o[3] = COST_FRAG_OPTS_LEN;
	o += PGM_OPT_LENGTH_LEN;
	o[0] = PGM_OPT_FRAGMENT | PGM_OPT_END;
	o[1] = 16;
	o[2] = o[3] = 0;
	put32(o + 4, 1);    /* first SQN */
	put32(o + 8, 0);    /* offset */
	put32(o + 12, 100); /* APDU length */
}

/* rx_pgm's decision for one payload, without the counters of a channel. */
static __attribute__((noinline)) void cost_zero64(const uint8_t *b, unsigned long n)
{
	uint64_t malformed = 0;

	for (unsigned long i = 0; i < n; i++) {
		struct pgm_packet pkt;

		__asm__ volatile("" : : "r"(b) : "memory"); /* the buffer changes per packet */
		if (cost_prefilter(b, COST_PKT_LEN)) {
			malformed++;
			continue;
		}
		if (pgm_result_malformed(pgm_parse(b, COST_PKT_LEN, PGM_PARSE_NO_CSUM, &pkt)))
			malformed++;
	}
	cost_sink += malformed;
}

static __attribute__((noinline)) void cost_parse64(const uint8_t *b, unsigned long n)
{
	uint64_t sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		struct pgm_packet pkt;

		__asm__ volatile("" : : "r"(b) : "memory");
		pgm_parse(b, COST_PKT_LEN, PGM_PARSE_NO_CSUM, &pkt);
		sum += pkt.u.data.sqn + pkt.data_offset;
	}
	cost_sink += sum;
}

static __attribute__((noinline)) void cost_frag64(const uint8_t *b, unsigned long n)
{
	uint64_t sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		struct pgm_packet pkt;

		__asm__ volatile("" : : "r"(b) : "memory");
		pgm_parse(b, COST_PKT_LEN, PGM_PARSE_NO_CSUM, &pkt);
		sum += pkt.opt.fragment.apdu_len + pkt.data_offset;
	}
	cost_sink += sum;
}

/* The well-formed half of rx_pgm on an in-order stream (SQN rewritten per packet). */
static __attribute__((noinline)) void cost_stream(struct pgm_stream_table *t, uint8_t *b,
						  unsigned long n)
{
	uint64_t pass = 0;

	for (unsigned long i = 0; i < n; i++) {
		struct pgm_stream_key key;
		struct pgm_packet pkt;
		enum pgm_verdict v;

		put32(b + COST_OFF_SQN, (uint32_t)i + 2);
		if (pgm_result_malformed(pgm_parse(b, COST_PKT_LEN, PGM_PARSE_NO_CSUM, &pkt)))
			continue;
		pgm_stream_key_from_packet(&key, &pkt, COST_GROUP);
		if (pgm_stream_update(t, &key, COST_SIDE, &pkt, i + 1, &v) == 0 &&
		    v == PGM_VERDICT_PASS)
			pass++;
	}
	cost_sink += pass;
}

static void report(const char *name, uint64_t t0, uint64_t t1, unsigned long n)
{
	printf("%-8s %10lu packets %8.2f ns/packet\n", name, n, (double)(t1 - t0) / (double)n);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : COST_DEFAULT_ITERS;
	uint8_t zero[COST_PKT_LEN] = {0};
	uint8_t odata[COST_PKT_LEN], frag[COST_PKT_LEN];
	struct pgm_stream_table *t;
	uint64_t t0, t1;

	if (n == 0) {
		fprintf(stderr, "usage: pgm_cost [iterations]\n");
		return 2;
	}
	make_odata(odata);
	make_odata_frag(frag);

	t0 = now_ns();
	cost_zero64(zero, n);
	t1 = now_ns();
	report("zero64", t0, t1, n);

	t0 = now_ns();
	cost_parse64(odata, n);
	t1 = now_ns();
	report("parse64", t0, t1, n);

	t0 = now_ns();
	cost_frag64(frag, n);
	t1 = now_ns();
	report("frag64", t0, t1, n);

	urcu_qsbr_register_thread();
	t = pgm_stream_table_new(NULL);
	if (!t) {
		perror("pgm_stream_table_new");
		return 1;
	}
	t0 = now_ns();
	cost_stream(t, odata, n);
	t1 = now_ns();
	report("stream", t0, t1, n);
	pgm_stream_table_free(t);
	urcu_qsbr_unregister_thread();
	printf("iterations per scenario: %lu (cost_* inclusive Ir / %lu = per packet)\n", n, n);
	return 0;
}
