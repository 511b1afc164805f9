/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_surely_malformed.c - pgm_surely_malformed() against pgm_parse(): it may only reject
 * what the parser rejects (never a PGM_OK or PGM_BAD_CHECKSUM packet), and without options
 * it must agree with the parser exactly.
 *
 * Checked on the catalogue (every case, every prefix, every value of every byte), the
 * checked-in OpenPGM fixtures and fuzzer seeds (directories given as arguments), random
 * well-formed packets of every type with random options and millions of mutations of
 * them, all-zero payloads and random buffers. Fixed seed; the random part stops after
 * RANDOM_ITERS rounds or RANDOM_BUDGET_NS, whichever comes first (slow sanitizer or
 * valgrind runs), and reports how many it did and the rejection rate of random buffers.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pgm.h"
#include "pktgen.h"
#include "tap.h"

#define RANDOM_ITERS	 400000ul      /* random well-formed packets (each mutated below) */
#define MUTATIONS	 8u	       /* mutations of each random packet */
#define RANDOM_BUFFERS	 2000000ul     /* random byte buffers */
#define RANDOM_BUDGET_NS 1500000000ull /* per random phase */
#define RANDOM_MAX_LEN	 300u
#define ZERO_MAX_LEN	 200u
#define FILE_MAX	 PGM_MAX_TPDU
#define SEED		 0x9e3779b97f4a7c15ull
#define NSEC_PER_SEC	 1000000000ull

/* Unknown option types the generator uses (0x22 is the vendor label). */
#define GEN_OPT_UNKNOWN_BASE 0x20u
#define GEN_OPT_UNKNOWN_SPAN 0x5fu

static uint64_t rng_state = SEED;

static uint64_t rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Uniform-enough in [0, n); 0 when n is 0. */
static unsigned rng_below(unsigned n)
{
	return n ? (unsigned)(rng() % n) : 0u;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Outcome counters of one group of checks. */
struct tally {
	unsigned long packets;	/* buffers checked */
	unsigned long accepted; /* pgm_parse() accepted */
	unsigned long rejected; /* pgm_surely_malformed() said malformed */
	unsigned long unsound;	/* rejected although accepted: must stay 0 */
	unsigned long inexact;	/* no options, and the two disagree: must stay 0 */
};

static void report_unsound(const uint8_t *b, size_t len, enum pgm_result r)
{
	printf("#   len %zu, parse %s, bytes:", len, pgm_result_name(r));
	for (size_t i = 0; i < len && i < 64; i++)
		printf(" %02x", b[i]);
	printf("\n");
}

/*
 * Check one buffer, parsed from an exactly-sized heap copy when exact is set (so ASan
 * sees any read past the end by either function).
 */
static void check_one(struct tally *t, const uint8_t *src, size_t len, bool exact)
{
	const uint8_t *b = src;
	uint8_t *copy = NULL;
	struct pgm_packet pkt;
	enum pgm_result r;
	bool sure, bad;

	if (exact) {
		copy = malloc(len ? len : 1);
		if (!copy)
			abort();
		memcpy(copy, src, len);
		b = copy;
	}
	/* Flags do not change malformedness: alternate them to cover every path. */
	r = pgm_parse(b, len, (t->packets & 1) ? PGM_PARSE_NO_CSUM : 0, &pkt);
	sure = pgm_surely_malformed(b, len);
	bad = pgm_result_malformed(r);
	t->packets++;
	t->accepted += !bad;
	t->rejected += sure;
	if (sure && !bad) {
		if (t->unsound++ < 5)
			report_unsound(b, len, r);
	}
	if (len >= PGM_HDR_LEN && !(b[PGM_OFF_OPTIONS] & PGM_HDR_OPT_PRESENT) && sure != bad) {
		if (t->inexact++ < 5)
			report_unsound(b, len, r);
	}
	free(copy);
}

static void check_tally(const char *what, const struct tally *t)
{
	CHECK_EQ(t->unsound, 0);
	CHECK_EQ(t->inexact, 0);
	printf("# %s: %lu buffers, %lu accepted by pgm_parse, %lu rejected by "
	       "pgm_surely_malformed\n",
	       what, t->packets, t->accepted, t->rejected);
}

/* Every catalogue case, each of its prefixes, each value of each of its bytes. */
static void test_catalogue(void)
{
	struct tally t = {0};
	unsigned ok_cases = 0, ok_rejected = 0;

	for (size_t i = 0; i < pgm_n_cases; i++) {
		struct pgm_packet pkt;
		struct pw w;

		pw_init(&w);
		pgm_cases[i].make(&w);
		if (!pgm_result_malformed(pgm_parse(w.b, w.len, 0, &pkt))) {
			ok_cases++;
			ok_rejected += pgm_surely_malformed(w.b, w.len);
		}
		for (size_t n = 0; n <= w.len; n++)
			check_one(&t, w.b, n, true);
		for (size_t at = 0; at < w.len; at++) {
			uint8_t save = w.b[at];

			for (unsigned v = 0; v < 256; v++) {
				w.b[at] = (uint8_t)v;
				check_one(&t, w.b, w.len, false);
			}
			w.b[at] = save;
		}
	}
	CHECK(ok_cases > 30);
	CHECK_EQ(ok_rejected, 0);
	check_tally("catalogue, prefixes, byte values", &t);
}

static bool read_file(const char *path, uint8_t *buf, size_t *len)
{
	FILE *f = fopen(path, "rb");

	if (!f)
		return false;
	*len = fread(buf, 1, FILE_MAX, f);
	fclose(f);
	return true;
}

/* Every *.bin file of dir: accepted ones are not rejected; the implication holds. */
static void test_dir(const char *dir)
{
	static uint8_t buf[FILE_MAX];
	struct tally t = {0};
	struct dirent *e;
	char path[4096];
	DIR *d = opendir(dir);

	CHECK(d != NULL);
	if (!d) {
		printf("#   cannot open %s\n", dir);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name), len = 0;

		if (n < 4 || strcmp(e->d_name + n - 4, ".bin") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		CHECK(read_file(path, buf, &len));
		check_one(&t, buf, len, true);
	}
	closedir(d);
	CHECK(t.packets > 0);
	CHECK(t.accepted > 0);
	check_tally(dir, &t);
}

/* Every type pgm_parse() defines. */
static const uint8_t pgm_types[] = {PGM_TYPE_SPM,   PGM_TYPE_POLL, PGM_TYPE_POLR, PGM_TYPE_ODATA,
				    PGM_TYPE_RDATA, PGM_TYPE_NAK,  PGM_TYPE_NNAK, PGM_TYPE_NCF,
				    PGM_TYPE_SPMR,  PGM_TYPE_ACK};

static void gen_nla(struct pw *w)
{
	uint8_t a6[PGM_NLA_IPV6_LEN];

	if (rng_below(2)) {
		pw_nla4(w, (uint32_t)rng());
		return;
	}
	for (unsigned i = 0; i < sizeof(a6); i++)
		a6[i] = (uint8_t)rng();
	pw_nla6(w, a6);
}

/* One option the parser accepts anywhere in the list. */
static void gen_opt(struct pw *w, bool end)
{
	uint8_t v[16];

	for (unsigned i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)rng();
	switch (rng_below(6)) {
	case 0:
		pw_opt(w, PGM_OPT_SYN, end, 0, 0, NULL, 0);
		break;
	case 1:
		pw_opt(w, PGM_OPT_FIN, end, 0, 0, NULL, 0);
		break;
	case 2:
		pw_opt(w, PGM_OPT_FRAGMENT, end, 0, 0, v, 12);
		break;
	case 3:
		pw_opt(w, PGM_OPT_JOIN, end, 0, 0, v, 4);
		break;
	case 4:
		pw_opt(w, PGM_OPT_INVALID, end, 0, 0, v, rng_below(sizeof(v) + 1));
		break;
	default: /* unknown type, any OPX bits, any size */
		pw_opt(w, (uint8_t)(GEN_OPT_UNKNOWN_BASE + rng_below(GEN_OPT_UNKNOWN_SPAN)), end,
		       (uint8_t)rng_below(4), (uint8_t)rng(), v, rng_below(sizeof(v) + 1));
		break;
	}
}

/* A random well-formed packet of any type, with or without options. */
static void gen_packet(struct pw *w)
{
	uint8_t type = pgm_types[rng_below(sizeof(pgm_types))];
	bool opts = rng_below(2);
	uint8_t data[64];
	unsigned n;

	pw_init(w);
	pw_header(w, type,
		  (uint8_t)((opts ? PGM_HDR_OPT_PRESENT : 0) |
			    (rng_below(4) ? 0 : PGM_HDR_OPT_NETWORK | PGM_HDR_OPT_PARITY)));
	switch (type) {
	case PGM_TYPE_SPM:
		pw_u32(w, (uint32_t)rng());
		pw_u32(w, (uint32_t)rng());
		pw_u32(w, (uint32_t)rng());
		gen_nla(w);
		break;
	case PGM_TYPE_POLL:
		pw_u32(w, (uint32_t)rng());
		pw_u32(w, (uint32_t)rng());
		gen_nla(w);
		pw_u32(w, (uint32_t)rng());
		pw_u32(w, (uint32_t)rng());
		pw_u32(w, (uint32_t)rng());
		break;
	case PGM_TYPE_NAK:
	case PGM_TYPE_NNAK:
	case PGM_TYPE_NCF:
		pw_u32(w, (uint32_t)rng());
		gen_nla(w);
		gen_nla(w);
		break;
	case PGM_TYPE_SPMR:
		break;
	default: /* POLR, ODATA, RDATA, ACK: two words */
		pw_u32(w, (uint32_t)rng());
		pw_u32(w, (uint32_t)rng());
		break;
	}
	if (opts) {
		unsigned k = 1 + rng_below(4);

		pw_opts_begin(w);
		for (unsigned i = 0; i < k; i++)
			gen_opt(w, i + 1 == k);
		pw_opts_end(w);
	}
	n = rng_below(sizeof(data) + 1);
	for (unsigned i = 0; i < n; i++)
		data[i] = (uint8_t)rng();
	pw_data(w, data, n);
	if (rng_below(4))
		pw_csum(w);
	if (rng_below(8) == 0)
		w->b[PGM_OFF_CHECKSUM + 1] ^= 1; /* a bad checksum (still well formed) */
}

/* Offsets the structural rules look at: most mutations hit one of them. */
static size_t hot_offset(const struct pw *w)
{
	static const size_t nak_src = PGM_HDR_LEN + PGM_NAK_FIXED_LEN;
	static const size_t hot[] = {
		PGM_OFF_TYPE,
		PGM_OFF_OPTIONS,
		PGM_OFF_TSDU_LEN,
		PGM_OFF_TSDU_LEN + 1,
		nak_src,
		nak_src + 1,
		PGM_HDR_LEN + PGM_POLL_FIXED_LEN, /* POLL AFI; NAK group AFI after IPv4 */
		PGM_HDR_LEN + PGM_POLL_FIXED_LEN + 1,
		PGM_HDR_LEN + PGM_SPM_FIXED_LEN,
		PGM_HDR_LEN + PGM_SPM_FIXED_LEN + 1,
		nak_src + PGM_NLA_HDR_LEN + PGM_NLA_IPV6_LEN, /* NAK group AFI after IPv6 */
		nak_src + PGM_NLA_HDR_LEN + PGM_NLA_IPV6_LEN + 1,
	};

	if (w->opts_at && rng_below(2))
		return w->opts_at + rng_below(8); /* OPT_LENGTH and the first option */
	if (rng_below(2))
		return hot[rng_below(sizeof(hot) / sizeof(hot[0]))];
	return rng_below((unsigned)w->len);
}

static void mutate(struct pw *w)
{
	unsigned k = 1 + rng_below(3);

	for (unsigned i = 0; i < k; i++) {
		size_t at = hot_offset(w);

		switch (rng_below(6)) {
		case 0: /* shorter */
			w->len -= rng_below((unsigned)w->len + 1);
			break;
		case 1: /* longer, random tail */
			for (unsigned n = 1 + rng_below(16); n && w->len < PW_CAP; n--)
				w->b[w->len++] = (uint8_t)rng();
			break;
		case 2: /* a small change of a value: lengths and AFIs off by a few */
			if (at < w->len)
				w->b[at] = (uint8_t)(w->b[at] + rng_below(7) - 3);
			break;
		case 3:
			if (at < w->len)
				w->b[at] ^= (uint8_t)(1u << rng_below(8));
			break;
		default:
			if (at < w->len)
				w->b[at] = (uint8_t)rng();
			break;
		}
	}
}

static void test_random_packets(void)
{
	struct tally valid = {0}, mutated = {0};
	uint64_t start = now_ns();
	unsigned long i;

	for (i = 0; i < RANDOM_ITERS && now_ns() - start < RANDOM_BUDGET_NS; i++) {
		struct pw w, m;

		gen_packet(&w);
		check_one(&valid, w.b, w.len, false);
		for (unsigned j = 0; j < MUTATIONS; j++) {
			m = w;
			mutate(&m);
			check_one(&mutated, m.b, m.len, false);
		}
	}
	/* The generator writes well-formed packets only (it is part of what is tested). */
	CHECK_EQ(valid.accepted, valid.packets);
	CHECK(valid.packets > 1000);
	check_tally("random well-formed packets", &valid);
	check_tally("their mutations", &mutated);
}

static void report_rate(const char *what, const struct tally *t)
{
	printf("# %s: pgm_surely_malformed rejected %.6f%% (%lu of %lu), pgm_parse accepted "
	       "%lu\n",
	       what, 100.0 * (double)t->rejected / (double)t->packets, t->rejected, t->packets,
	       t->accepted);
}

/*
 * Random bytes of random length; then the same with a defined type byte (1 in 16 random
 * payloads has one), the ones that get past the first test.
 */
static void test_random_buffers(void)
{
	static uint8_t b[RANDOM_MAX_LEN];
	struct tally t = {0}, typed = {0};
	uint64_t start = now_ns();

	for (unsigned long i = 0; i < RANDOM_BUFFERS && now_ns() - start < RANDOM_BUDGET_NS; i++) {
		size_t len = rng_below(RANDOM_MAX_LEN + 1);

		for (size_t j = 0; j < len; j += 8) {
			uint64_t r = rng();

			memcpy(b + j, &r, len - j < 8 ? len - j : 8);
		}
		check_one(&t, b, len, false);
		if (len > PGM_OFF_TYPE) {
			b[PGM_OFF_TYPE] = pgm_types[rng_below(sizeof(pgm_types))];
			check_one(&typed, b, len, false);
		}
	}
	CHECK(t.packets > 1000);
	check_tally("random buffers", &t);
	check_tally("random buffers with a defined type", &typed);
	report_rate("random buffers", &t);
	report_rate("random buffers with a defined type", &typed);
	/* Almost none is PGM: they should cost a handful of instructions. */
	CHECK(t.rejected * 1000 >= t.packets * 999);
	CHECK(typed.rejected * 100 >= typed.packets * 99);
}

static void test_zero(void)
{
	static const uint8_t zero[ZERO_MAX_LEN + 1];
	unsigned rejected = 0, malformed = 0;

	for (size_t len = 0; len <= ZERO_MAX_LEN; len++) {
		struct pgm_packet pkt;

		rejected += pgm_surely_malformed(zero, len);
		malformed += pgm_result_malformed(pgm_parse(zero, len, 0, &pkt));
	}
	CHECK_EQ(rejected, ZERO_MAX_LEN + 1);
	CHECK_EQ(malformed, ZERO_MAX_LEN + 1);
	CHECK(pgm_surely_malformed(NULL, 0));
}

/* Packets of the builders (what the bridge's own sender emits) are never rejected. */
static void test_builders(void)
{
	static const struct pgm_tsi tsi = {.gsi = {1, 2, 3, 4, 5, 6}, .sport = 1000};
	struct pgm_nla src, grp;
	uint8_t b[256];
	ssize_t n;

	pgm_nla_ipv4(&src, 0xc0000201u);
	pgm_nla_ipv4(&grp, 0xefc00001u);
	n = pgm_build_spm(b, sizeof(b), &tsi, 7500, 1, 2, 3, &src);
	CHECK(n > 0 && !pgm_surely_malformed(b, (size_t)n));
	for (unsigned o = 0; o < 4; o++) {
		n = pgm_build_odata(b, sizeof(b), &tsi, 7500, 9, 1, o, "payload", 7);
		CHECK(n > 0 && !pgm_surely_malformed(b, (size_t)n));
		n = pgm_build_rdata(b, sizeof(b), &tsi, 7500, 9, 1, o, NULL, 0);
		CHECK(n > 0 && !pgm_surely_malformed(b, (size_t)n));
	}
	n = pgm_build_ncf(b, sizeof(b), &tsi, 7500, 9, &src, &grp);
	CHECK(n > 0 && !pgm_surely_malformed(b, (size_t)n));
}

/*
 * pgm_precheck's classes: what is not PGM-shaped at all (other UDP traffic, zeros, a
 * version nibble, a short datagram) is NOT_PGM; a PGM header whose NLA or options are
 * wrong is MALFORMED; a valid packet is MAYBE.
 */
static void test_classes(void)
{
	static const struct pgm_tsi tsi = {.gsi = {1, 2, 3, 4, 5, 6}, .sport = 1000};
	static const uint8_t zero[100];
	struct pgm_nla src;
	uint8_t b[256];
	ssize_t n;

	CHECK_EQ(pgm_precheck(zero, 8), PGM_SHAPE_NOT_PGM);
	CHECK_EQ(pgm_precheck(zero, sizeof(zero)), PGM_SHAPE_NOT_PGM);
	CHECK_EQ(pgm_precheck("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 31), PGM_SHAPE_NOT_PGM);
	pgm_nla_ipv4(&src, 0xc0000201u);
	n = pgm_build_spm(b, sizeof(b), &tsi, 7500, 1, 2, 3, &src);
	CHECK(n > 0);
	CHECK_EQ(pgm_precheck(b, (size_t)n), PGM_SHAPE_MAYBE);
	/* The SPM's path NLA with address family 0: PGM's shape, not valid. */
	b[PGM_HDR_LEN + PGM_SPM_FIXED_LEN + PGM_NLA_OFF_AFI] = 0;
	b[PGM_HDR_LEN + PGM_SPM_FIXED_LEN + PGM_NLA_OFF_AFI + 1] = 0;
	CHECK_EQ(pgm_precheck(b, (size_t)n), PGM_SHAPE_MALFORMED);
	CHECK(pgm_surely_malformed(b, (size_t)n));
	n = pgm_build_odata(b, sizeof(b), &tsi, 7500, 9, 1, 0, "payload", 7);
	CHECK(n > 0);
	CHECK_EQ(pgm_precheck(b, (size_t)n), PGM_SHAPE_MAYBE);
	b[PGM_OFF_TYPE] |= 0x10; /* version 1 */
	CHECK_EQ(pgm_precheck(b, (size_t)n), PGM_SHAPE_NOT_PGM);
	/*
	 * Every type byte, without options and with (OPT_SYN): the size table is 0 exactly
	 * for the bytes pgm_parse() does not define (pgm_precheck rejects on that alone), and
	 * such a byte is NOT_PGM and malformed for pgm_parse() either way.
	 */
	for (unsigned o = 0; o < 2; o++) {
		n = pgm_build_odata(b, sizeof(b), &tsi, 7500, 9, 1, o ? PGM_BUILD_SYN : 0,
				    "payload", 7);
		CHECK(n > 0);
		CHECK_EQ((b[PGM_OFF_OPTIONS] & PGM_HDR_OPT_PRESENT) != 0, o);
		for (unsigned t = 0; t < 256; t++) {
			bool defined = t < 16 && pgm_type_shapes[t].end != 0;
			struct pgm_packet pkt;

			b[PGM_OFF_TYPE] = (uint8_t)t;
			CHECK_EQ(pgm_type_sizes[t] != 0, defined);
			if (!defined) {
				CHECK_EQ(pgm_precheck(b, (size_t)n), PGM_SHAPE_NOT_PGM);
				CHECK(pgm_result_malformed(pgm_parse(b, (size_t)n, 0, &pkt)));
			}
		}
	}
}

int main(int argc, char **argv)
{
	test_zero();
	test_builders();
	test_classes();
	test_catalogue();
	for (int i = 1; i < argc; i++)
		test_dir(argv[i]);
	test_random_packets();
	test_random_buffers();
	return tap_done();
}
