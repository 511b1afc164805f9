// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The console's senders table and PGM stream lines (show.h: show_senders, show_tsi).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <numa.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "bridge.h"
#include "concmd.h"
#include "console.h"
#include "ctl.h"
#include "health.h"
#include "loop.h"
#include "placement.h"
#include "pool.h"
#include "report.h"
#include "senders.h"
#include "show.h"
#include "show_priv.h"
#include "table.h"
#include "stream.h"
#include "tune.h"
#include "version_line.h"


#define SENDERS_ROWS_DEFAULT 100
#define SENDERS_ROWS_MAX     1000000
#define PGM_LINE_MAX	     2048 /* one stream line is under 1000 characters */

struct sender_row {
	uint32_t chan; /* side << 16 | channel index */
	uint32_t qpn;
	uint8_t addr[16];
	uint64_t pkts, bytes, first_ns, last_ns;
};

struct sender_rows {
	struct sender_row *v;
	size_t n, cap;
	bool oom;
};

static void sender_collect(const struct sender *s, void *arg)
{
	struct sender_rows *rows = arg;
	struct sender_row *r;

	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? 2 * rows->cap : 256;
		struct sender_row *v = realloc(rows->v, cap * sizeof(*v));

		if (!v) {
			rows->oom = true;
			return;
		}
		rows->v = v;
		rows->cap = cap;
	}
	r = &rows->v[rows->n++];
	/* The key is written before the record is inserted; the counters are live. */
	r->chan = s->key.chan;
	r->qpn = s->key.qpn;
	memcpy(r->addr, s->key.addr, sizeof(r->addr));
	r->pkts = CMM_LOAD_SHARED(s->pkts);
	r->bytes = CMM_LOAD_SHARED(s->bytes);
	r->first_ns = CMM_LOAD_SHARED(s->first_ns);
	r->last_ns = CMM_LOAD_SHARED(s->last_ns);
}

static int sender_cmp(const void *pa, const void *pb)
{
	const struct sender_row *a = pa, *b = pb;

	if (a->pkts != b->pkts)
		return a->pkts < b->pkts ? 1 : -1;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return a->chan < b->chan ? -1 : a->chan > b->chan;
}

/* The source as people write it: dotted IPv4 for ::ffff:a.b.c.d, else the GID. */
static void sender_src(const uint8_t addr[16], char *buf, size_t len)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (!memcmp(addr, v4mapped, sizeof(v4mapped))) {
		if (!inet_ntop(AF_INET, addr + 12, buf, (socklen_t)len))
			snprintf(buf, len, "?");
	} else if (!inet_ntop(AF_INET6, addr, buf, (socklen_t)len)) {
		snprintf(buf, len, "?");
	}
}

static int parse_rows(const char *arg, size_t *rows)
{
	unsigned long v;
	char *end;

	if (!arg) {
		*rows = SENDERS_ROWS_DEFAULT;
		return 0;
	}
	/* Digits only: strtoul alone would take "-1", " 5" and "0x10". */
	if (!*arg || strspn(arg, "0123456789") != strlen(arg))
		return -EINVAL;
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || v < 1 || v > SENDERS_ROWS_MAX)
		return -EINVAL;
	*rows = v;
	return 0;
}

int show_senders(struct ctl *c, const char *arg, FILE *out)
{
	static const char *const hdr[] = {"side",    "ch",    "source",	    "qpn",
					  "packets", "bytes", "first_seen", "last_seen"};
	struct bridge *br = c->br;
	struct sender_rows rows = {0};
	size_t max, i;
	uint64_t now;
	struct tbl t;

	if (parse_rows(arg, &max)) {
		fprintf(out, "senders: '%s' is not a row count (1..%u)\n", arg, SENDERS_ROWS_MAX);
		return -EINVAL;
	}
	if (br->senders)
		sender_table_each(br->senders, sender_collect, &rows);
	if (rows.oom) {
		fprintf(out, "senders: out of memory\n");
		free(rows.v);
		return -ENOMEM;
	}
	now = mono_ns();
	if (rows.n > 1) /* qsort(NULL, 0, ...) is undefined */
		qsort(rows.v, rows.n, sizeof(*rows.v), sender_cmp);
	fprintf(out, "%zu sender%s\n", rows.n, rows.n == 1 ? "" : "s");
	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (i = 0; i < rows.n && i < max; i++) {
		const struct sender_row *r = &rows.v[i];
		unsigned s = r->chan >> 16;
		char src[INET6_ADDRSTRLEN], age[32];

		tbl_txt(&t, s < NSIDES ? side_name[s] : "?");
		tbl_u64(&t, r->chan & 0xffff);
		sender_src(r->addr, src, sizeof(src));
		tbl_txt(&t, src);
		tbl_add(&t, true, "%#x", r->qpn);
		tbl_u64(&t, r->pkts);
		tbl_u64(&t, r->bytes);
		fmt_age(sub0(now, r->first_ns) / 1000000, age, sizeof(age));
		tbl_add(&t, true, "%s ago", age);
		fmt_age(sub0(now, r->last_ns) / 1000000, age, sizeof(age));
		tbl_add(&t, true, "%s ago", age);
	}
	if (rows.n)
		tbl_print(&t, out, "");
	else
		tbl_free(&t);
	if (rows.n > max)
		fprintf(out, "... %zu more\n", rows.n - max);
	free(rows.v);
	return 0;
}

/* ---- PGM streams ---- */

struct line {
	char s[PGM_LINE_MAX];
	size_t n;
};

static __attribute__((format(printf, 2, 3))) void line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (l->n >= sizeof(l->s) - 1)
		return;
	va_start(ap, fmt);
	r = vsnprintf(l->s + l->n, sizeof(l->s) - l->n, fmt, ap);
	va_end(ap);
	if (r > 0)
		l->n += (size_t)r < sizeof(l->s) - l->n ? (size_t)r : sizeof(l->s) - l->n - 1;
}

struct tsi_arg {
	FILE *out;
	const char *filter;
};

/*
 * One line per side of a PGM stream that saw packets on that side, in the format of
 * tests/pgm/pgmtool's "streams" (prefixed with "pgm side=IB|RoCE"). The tests compare
 * these lines with OpenPGM's fixture: the format is fixed, field by field.
 */
static int tsi_stream(const struct pgm_stream *s, void *arg)
{
	struct tsi_arg *ta = arg;
	struct pgm_stream_stats st;

	pgm_stream_snapshot(s, &st);
	for (int side = 0; side < NSIDES; side++) {
		const struct pgm_stream_side_stats *sd = &st.side[side];
		struct line l = {.n = 0};

		if (!sd->first_ns)
			continue;
		line_add(&l,
			 "pgm side=%s stream gsi=%02x%02x%02x%02x%02x%02x sport=%u dport=%u "
			 "group=0x%08" PRIx64 " state=%s",
			 side_name[side], st.key.gsi[0], st.key.gsi[1], st.key.gsi[2],
			 st.key.gsi[3], st.key.gsi[4], st.key.gsi[5], st.key.sport, st.dport,
			 st.key.group, pgm_stream_state_name(st.state));
		for (unsigned k = 0; k < PGM_COUNT_TYPES; k++)
			line_add(&l, " %s=%" PRIu64,
				 pgm_stream_count_name((enum pgm_stream_count)k), sd->types[k]);
		line_add(&l,
			 " gaps=%" PRIu64 " missed=%" PRIu64 " late=%" PRIu64 " repairs=%" PRIu64
			 " dups=%" PRIu64 " rdata_dups=%" PRIu64 " syn=%" PRIu64 " fin=%" PRIu64
			 " rst=%" PRIu64 " malformed=%" PRIu64 " bad_checksum=%" PRIu64,
			 st.gaps, st.missed, st.late, st.repairs, st.dups, st.rdata_dups, st.syn,
			 st.fin, st.rst, sd->malformed, sd->bad_checksum);
		if (st.have_data)
			line_add(&l, " odata_last=%u rx_lead=%u", st.odata_last, st.rx_lead);
		if (st.have_window)
			line_add(&l, " trail=%u lead=%u", st.trail, st.lead);
		line_add(&l, " loops=%" PRIu64 " opx_discard=%" PRIu64, sd->loops, sd->opx_discard);
		if (ta->filter && !strstr(l.s, ta->filter))
			continue;
		fprintf(ta->out, "%s\n", l.s);
	}
	return 0;
}

void show_tsi(struct ctl *c, const char *filter, FILE *out)
{
	struct tsi_arg ta = {.out = out, .filter = filter};

	if (c->br->pgm)
		pgm_stream_table_for_each(c->br->pgm, tsi_stream, &ta);
}

