// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The console's tables and the machine-readable reports (show.h).
 *
 * Everything here runs on the control thread, a registered QSBR reader that is online,
 * while the workers keep forwarding. Worker-written counters are plain uint64_t with a
 * single writer: we copy them (a struct copy, or CMM_LOAD_SHARED for a lone field) and
 * compute from the copy, so a value never changes under a computation and an aligned
 * 64-bit load never tears. Several counters read together are not one instant: a table
 * row may be a few packets "ahead" in one column; nothing here assumes otherwise.
 *
 * The only fields written here are the control-thread-only ones of bridge.h (zap
 * snapshots, rates, heartbeat bookkeeping).
 *
 * Tables show counters since the last zap (current - zap, counter by counter); the
 * one-line summary, the JSON report and the metrics file show the raw monotonic
 * counters, which is what rate() in a monitoring system needs.
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
#include "ctl.h"
#include "pool.h"
#include "senders.h"
#include "show.h"
#include "stream.h"

#define SENDERS_ROWS_DEFAULT 100
#define SENDERS_ROWS_MAX     1000000
#define PGM_LINE_MAX	     2048 /* one stream line is under 1000 characters */
#define TBL_SEP		     "  "
#define TBL_COLS_MAX	     16 /* the widest table (workers) has 15 columns */

static const char *const side_state_name[] = {
	[SIDE_UP] = "up",
	[SIDE_DOWN] = "down",
	[SIDE_REMOVED] = "removed",
};

static const char *const pool_state_name[POOL_NSTATES] = {
	[POOL_FREE] = "free", [POOL_CACHED] = "cached",	  [POOL_RX] = "rx",
	[POOL_TX] = "tx",     [POOL_BACKLOG] = "backlog", [POOL_HANDOFF] = "handoff",
};

/* The latency quantiles every report shows (the workers table: p50 .. p99.99, in order). */
static const struct {
	double q;
	const char *json, *prom;
} lat_q[] = {
	{0.5, "p50", "0.5"},	   {0.9, "p90", "0.9"},		 {0.99, "p99", "0.99"},
	{0.999, "p99_9", "0.999"}, {0.9999, "p99_99", "0.9999"},
};

#define NLAT_Q (sizeof(lat_q) / sizeof(lat_q[0]))

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ms(void)
{
	return mono_ns() / 1000000;
}

/* a - b for counters that only grow; 0 if a snapshot race ever made b the larger. */
static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static const char *side_state_str(enum side_state s)
{
	return (unsigned)s < sizeof(side_state_name) / sizeof(side_state_name[0])
		       ? side_state_name[s]
		       : "unknown";
}

/* NUMA node of a CPU, -1 when unpinned or unknown. */
static int cpu_node(int cpu)
{
	if (cpu < 0 || numa_available() < 0)
		return -1;
	return numa_node_of_cpu(cpu);
}

/* ---- snapshots ---- */

/* A copy of a channel's counters, taken while its worker writes them. */
static void chan_snap(const struct channel *ch, struct chan_stats *s)
{
	memcpy(s, &ch->st, sizeof(*s));
}

/*
 * d = now - zap, counter by counter. Every field of struct chan_stats is a uint64_t
 * counter except the two backlog gauges, which keep their current values: so a counter
 * added to the struct later is zapped without a change here.
 */
static void stats_since(struct chan_stats *d, const struct chan_stats *now,
			const struct chan_stats *zap)
{
	uint64_t a[sizeof(*d) / sizeof(uint64_t)], b[sizeof(*d) / sizeof(uint64_t)];

	_Static_assert(sizeof(struct chan_stats) % sizeof(uint64_t) == 0,
		       "struct chan_stats holds uint64_t counters only");
	memcpy(a, now, sizeof(a));
	memcpy(b, zap, sizeof(b));
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		a[i] = sub0(a[i], b[i]);
	memcpy(d, a, sizeof(*d));
	d->backlog = now->backlog;
	d->backlog_max = now->backlog_max;
}

/* A channel's counters for the tables (since zap) or the reports (raw). */
static void chan_view(const struct channel *ch, bool zapped, struct chan_stats *s)
{
	struct chan_stats now;

	chan_snap(ch, &now);
	if (zapped)
		stats_since(s, &now, &ch->zap);
	else
		*s = now;
}

/* A side's counters: the sum over its channels. */
static void side_view(struct bridge *br, int s, bool zapped, struct chan_stats *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t k = 0; k < br->sd[s].nchan; k++) {
		struct chan_stats cs;

		chan_view(br->sd[s].chan[k], zapped, &cs);
		chan_stats_add(t, &cs);
	}
}

static uint64_t side_pps(struct bridge *br, int s)
{
	uint64_t pps = 0;

	for (uint32_t k = 0; k < br->sd[s].nchan; k++)
		pps += br->sd[s].chan[k]->pps_rx;
	return pps;
}

static uint32_t side_broken(struct bridge *br, int s)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < br->sd[s].nchan; k++)
		n += CMM_LOAD_SHARED(br->sd[s].chan[k]->broken);
	return n;
}

/* Send WRs posted and not yet retired. Tail first: head only grows, so head >= tail. */
static uint64_t chan_sq_outstanding(const struct channel *ch)
{
	uint64_t tail = CMM_LOAD_SHARED(ch->tx_tail);
	uint64_t head = CMM_LOAD_SHARED(ch->tx_head);

	return sub0(head, tail);
}

/* A worker's latency histogram: a copy (zapped: minus the zap copy, bucket by bucket). */
static void lat_view(const struct worker *w, bool zapped, struct hist *h)
{
	memcpy(h, &w->lat, sizeof(*h));
	if (!zapped)
		return;
	/* The count is re-derived from the buckets, so the quantiles see a consistent set. */
	h->count = 0;
	for (uint32_t b = 0; b < HIST_BUCKETS; b++) {
		h->b[b] = sub0(h->b[b], w->lat_zap.b[b]);
		h->count += h->b[b];
	}
	h->sum = sub0(h->sum, w->lat_zap.sum);
	/* max stays the all-time maximum: the histogram does not know when it was seen. */
}

static uint64_t worker_heartbeat(const struct worker *w)
{
	/* Relaxed: a progress indicator, it publishes nothing (worker.c stores it relaxed). */
	return atomic_load_explicit(&w->heartbeat, memory_order_relaxed);
}

/*
 * Milliseconds since the worker's heartbeat last moved: 0 when it moved since the last
 * show_tick (which records when it changes; read-only here, the watchdog owns that).
 */
static uint64_t worker_hb_age_ms(const struct ctl *c, const struct worker *w, uint64_t now_ms)
{
	if (worker_heartbeat(w) != w->hb_prev)
		return 0;
	return sub0(now_ms, w->hb_changed_ms ? w->hb_changed_ms : c->start_ms);
}

static bool group_joined(const struct group *g, int s)
{
	return g->js[s].state == JOIN_DONE;
}

enum fwd_state {
	FWD_NO,
	FWD_PARTIAL,
	FWD_YES,
};

static const char *const fwd_state_name[] = {
	[FWD_NO] = "no",
	[FWD_PARTIAL] = "partial",
	[FWD_YES] = "yes",
};

/* Forwarding in every direction the group has (yes), in some (partial), in none. */
static enum fwd_state group_fwd_state(const struct group *g)
{
	/* Relaxed: only the bits are shown, nothing is read through them. */
	uint32_t have = atomic_load_explicit(&g->ready, memory_order_relaxed), want = 0;

	for (int s = 0; s < NSIDES; s++)
		if (group_dir_rx(g->dir, s))
			want |= 1u << s;
	have &= want;
	return have == want ? FWD_YES : have ? FWD_PARTIAL : FWD_NO;
}

static const char *group_forwarding(const struct group *g)
{
	return fwd_state_name[group_fwd_state(g)];
}

static const char *dir_name(enum group_dir d)
{
	return d == DIR_BOTH ? "both" : d == DIR_IN ? "in" : "out";
}

/* Join state for reports: joined, joining, idle (leaving is on its way to idle). */
static const char *join_state_name(const struct group_side *js)
{
	return js->state == JOIN_DONE ? "joined" : js->state == JOIN_PENDING ? "joining" : "idle";
}

/* Join state for people: with send-only, and the retry count and last error. */
static void join_text(const struct group *g, int s, char *buf, size_t len)
{
	const struct group_side *js = &g->js[s];
	const char *so = group_dir_rx(g->dir, s) ? "" : " send-only";

	switch (js->state) {
	case JOIN_DONE:
		snprintf(buf, len, "joined%s", so);
		break;
	case JOIN_PENDING:
		if (js->tries > 1)
			snprintf(buf, len, "joining%s (try %u)", so, js->tries);
		else
			snprintf(buf, len, "joining%s", so);
		break;
	case JOIN_LEAVING:
		snprintf(buf, len, "leaving");
		break;
	default:
		/* tries is reset on success; last_error is kept, so both are needed. */
		if (js->tries && js->last_error)
			snprintf(buf, len, "retry (%u tr%s, %s)", js->tries,
				 js->tries == 1 ? "y" : "ies", strerror(js->last_error));
		else
			snprintf(buf, len, "idle%s", so);
		break;
	}
}

static void gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void ipv4_str(uint32_t addr_be, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET, &addr_be, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void fmt_uptime(uint64_t ms, char *buf, size_t len)
{
	uint64_t s = ms / 1000;

	if (s >= 86400)
		snprintf(buf, len, "%" PRIu64 "d %02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 86400,
			 s / 3600 % 24, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 3600, s / 60 % 60,
			 s % 60);
}

/* Seconds with one decimal: ages of heartbeats and senders. */
static void fmt_age(uint64_t ms, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "s", ms / 1000, ms % 1000 / 100);
}

static void fmt_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	if (u)
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	else
		snprintf(buf, len, "%" PRIu64 " B", n);
}

/* ---- tables: cells collected, then printed with widths computed from the content ---- */

struct tbl_cell {
	char *s;    /* NULL after an allocation failure: printed as "?" */
	bool right; /* numbers right-aligned, text left-aligned */
};

struct tbl {
	unsigned ncols;
	const char *const *hdr; /* ncols column names; NULL: no header row */
	struct tbl_cell *cell;	/* row-major */
	size_t n, cap;
};

static void tbl_init(struct tbl *t, const char *const *hdr, unsigned ncols)
{
	assert(ncols >= 1 && ncols <= TBL_COLS_MAX);
	memset(t, 0, sizeof(*t));
	t->hdr = hdr;
	t->ncols = ncols;
}

static void tbl_free(struct tbl *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->cell[i].s);
	free(t->cell);
	t->cell = NULL;
	t->n = t->cap = 0;
}

static __attribute__((format(printf, 3, 4))) void tbl_add(struct tbl *t, bool right,
							  const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16 * t->ncols;
		struct tbl_cell *c = realloc(t->cell, cap * sizeof(*c));

		if (!c)
			return; /* the row comes out short; tbl_print pads it */
		t->cell = c;
		t->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	/* One cell, one line: a control character would break the columns. */
	for (char *p = s; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	t->cell[t->n].s = s;
	t->cell[t->n].right = right;
	t->n++;
}

static void tbl_txt(struct tbl *t, const char *s)
{
	tbl_add(t, false, "%s", s);
}

static void tbl_u64(struct tbl *t, uint64_t v)
{
	tbl_add(t, true, "%" PRIu64, v);
}

/* A numeric column that may be unknown (-1): "-". */
static void tbl_int_or_dash(struct tbl *t, long v)
{
	if (v < 0)
		tbl_add(t, true, "-");
	else
		tbl_add(t, true, "%ld", v);
}

static void tbl_pad(FILE *out, size_t n)
{
	while (n--)
		fputc(' ', out);
}

static const char *cell_str(const struct tbl_cell *c)
{
	return c->s ? c->s : "?";
}

/*
 * Print the table: header row first (right-aligned over columns of numbers), columns
 * TBL_SEP apart, each line prefixed with indent, no trailing blanks. Frees the cells.
 */
static void tbl_print(struct tbl *t, FILE *out, const char *indent)
{
	size_t nrows = (t->n + t->ncols - 1) / t->ncols, w[TBL_COLS_MAX];
	bool right[TBL_COLS_MAX];

	for (unsigned c = 0; c < t->ncols; c++) {
		w[c] = t->hdr ? strlen(t->hdr[c]) : 0;
		right[c] = nrows > 0;
	}
	for (size_t i = 0; i < t->n; i++) {
		size_t l = strlen(cell_str(&t->cell[i]));
		unsigned c = i % t->ncols;

		if (l > w[c])
			w[c] = l;
		if (!t->cell[i].right)
			right[c] = false;
	}
	for (size_t r = (t->hdr ? 0 : 1); r <= nrows; r++) {
		fputs(indent, out);
		for (unsigned c = 0; c < t->ncols; c++) {
			size_t i = (r - 1) * t->ncols + c;
			const char *s;
			bool rt;

			if (!r) {
				s = t->hdr[c];
				rt = right[c];
			} else if (i < t->n) {
				s = cell_str(&t->cell[i]);
				rt = t->cell[i].right;
			} else {
				s = "";
				rt = false;
			}
			if (c)
				fputs(TBL_SEP, out);
			if (rt)
				tbl_pad(out, w[c] - strlen(s));
			fputs(s, out);
			if (!rt && c + 1 < t->ncols)
				tbl_pad(out, w[c] - strlen(s));
		}
		fputc('\n', out);
	}
	tbl_free(t);
}

/* ---- once a second, zap ---- */

void show_tick(struct ctl *c, uint64_t now_ms)
{
	struct bridge *br = c->br;
	uint64_t dt = now_ms - c->last_rate_ms;
	/* The first call only takes the references: there is no interval yet. */
	bool first = !c->last_rate_ms || now_ms <= c->last_rate_ms;

	for (int s = 0; s < NSIDES; s++) {
		for (uint32_t k = 0; k < br->sd[s].nchan; k++) {
			struct channel *ch = br->sd[s].chan[k];
			uint64_t rx = CMM_LOAD_SHARED(ch->st.rx_pkts);
			uint64_t fwd = CMM_LOAD_SHARED(ch->st.fwd_pkts);

			if (!first) {
				ch->pps_rx = sub0(rx, ch->rate_rx_prev) * 1000 / dt;
				ch->pps_fwd = sub0(fwd, ch->rate_fwd_prev) * 1000 / dt;
			}
			ch->rate_rx_prev = rx;
			ch->rate_fwd_prev = fwd;
		}
	}
	for (uint32_t i = 0; i < br->nworkers; i++) {
		struct worker *w = &br->workers[i];
		uint64_t hb = worker_heartbeat(w);

		/* The watchdog reads hb_changed_ms: it must start at the first tick, not 0. */
		if (hb != w->hb_prev || !w->hb_changed_ms) {
			w->hb_prev = hb;
			w->hb_changed_ms = now_ms;
		}
		/* The heartbeat lags passes by < 64: fine for a rate over a second. */
		if (!first)
			w->loop_rate = sub0(hb, w->rate_passes_prev) * 1000 / dt;
		w->rate_passes_prev = hb;
	}
	c->last_rate_ms = now_ms;
}

void show_zap(struct ctl *c)
{
	struct bridge *br = c->br;

	for (int s = 0; s < NSIDES; s++)
		for (uint32_t k = 0; k < br->sd[s].nchan; k++)
			chan_snap(br->sd[s].chan[k], &br->sd[s].chan[k]->zap);
	for (uint32_t i = 0; i < br->ngroups; i++) {
		struct group *g = br->groups[i];

		for (int s = 0; s < NSIDES; s++)
			g->fwd_zap[s] = CMM_LOAD_SHARED(g->fwd_pkts[s]);
	}
	for (uint32_t i = 0; i < br->nworkers; i++)
		memcpy(&br->workers[i].lat_zap, &br->workers[i].lat, sizeof(struct hist));
}

/* ---- status ---- */

struct counts {
	uint32_t groups, joined, forwarding;
	size_t senders;
	uint64_t streams;
};

static void counts_get(struct bridge *br, struct counts *n)
{
	memset(n, 0, sizeof(*n));
	n->groups = br->ngroups;
	for (uint32_t i = 0; i < br->ngroups; i++) {
		const struct group *g = br->groups[i];

		if (group_joined(g, SIDE_IB) && group_joined(g, SIDE_ROCE))
			n->joined++;
		if (group_fwd_state(g) == FWD_YES)
			n->forwarding++;
	}
	n->senders = br->senders ? sender_table_count(br->senders) : 0;
	if (br->pgm) {
		struct pgm_stream_table_info info;

		pgm_stream_table_info(br->pgm, &info);
		n->streams = info.streams;
	}
}

void show_status(struct ctl *c, FILE *out)
{
	static const char *const hdr[] = {
		"side",	    "device",	"state",	 "rx_pkts",	 "rx_bytes",
		"fwd_pkts", "tx_pkts",	"tx_bytes",	 "drops",	 "rx_starved",
		"rx_pps",   "pgm_pkts", "pgm_malformed", "pgm_bad_csum",
	};
	struct bridge *br = c->br;
	struct chan_stats st[NSIDES];
	struct counts n;
	struct tbl t;
	char up[64], started[64];
	time_t sw = (time_t)c->start_wall;
	struct tm tm;

	fmt_uptime(mono_ms() - c->start_ms, up, sizeof(up));
	if (localtime_r(&sw, &tm))
		strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S %z", &tm);
	else
		snprintf(started, sizeof(started), "?");
	fprintf(out, "uptime %s (started %s), pid %ld\n", up, started, (long)getpid());
	fprintf(out, "ready  %s\n", c->ready ? "yes" : "no: waiting for joins");
	fprintf(out, "counters since zap (or start)\n");

	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];

		side_view(br, s, true, &st[s]);
		tbl_txt(&t, side_name[s]);
		tbl_add(&t, false, "%s:%u", sd->dev, sd->port);
		tbl_txt(&t, side_state_str(sd->state));
		tbl_u64(&t, st[s].rx_pkts);
		tbl_u64(&t, st[s].rx_bytes);
		tbl_u64(&t, st[s].fwd_pkts);
		tbl_u64(&t, st[s].tx_pkts);
		tbl_u64(&t, st[s].tx_bytes);
		tbl_u64(&t, chan_stats_drops(&st[s]));
		tbl_u64(&t, st[s].rx_starved);
		tbl_u64(&t, side_pps(br, s));
		tbl_u64(&t, st[s].pgm_pkts);
		tbl_u64(&t, st[s].pgm_malformed);
		tbl_u64(&t, st[s].pgm_bad_csum);
	}
	tbl_print(&t, out, "");

	for (int s = 0; s < NSIDES; s++) {
		bool any = false;

		for (int r = 0; r < DROP_NREASONS; r++) {
			if (!st[s].drops[r])
				continue;
			fprintf(out, "%s %s=%" PRIu64,
				any ? ""
				: s ? "drops RoCE:"
				    : "drops IB:",
				drop_reason_name[r], st[s].drops[r]);
			any = true;
		}
		if (any)
			fputc('\n', out);
	}

	counts_get(br, &n);
	if (atomic_load(&br->left_groups))
		fprintf(out,
			"groups left at run time: %u (forwarded before: %" PRIu64
			" IB->RoCE, %" PRIu64 " RoCE->IB, since start)\n",
			atomic_load(&br->left_groups), atomic_load(&br->left_fwd_pkts[SIDE_IB]),
			atomic_load(&br->left_fwd_pkts[SIDE_ROCE]));
	fprintf(out,
		"groups %u (%u joined on both sides, %u forwarding) | senders %zu | "
		"pgm streams %" PRIu64 " | workers %u%s\n",
		n.groups, n.joined, n.forwarding, n.senders, n.streams, br->cfg.nworkers,
		br->cfg.nworkers ? "" : " (event-driven on the control thread)");
}

/* ---- multicast ---- */

void show_multicast(struct ctl *c, FILE *out)
{
	static const char *const hdr[] = {
		"group", "dir",	     "pair",	 "IB",	       "IB_mlid",
		"RoCE",	 "ib->roce", "roce->ib", "forwarding",
	};
	struct bridge *br = c->br;
	struct tbl t;

	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (uint32_t i = 0; i < br->ngroups; i++) {
		const struct group *g = br->groups[i];
		char js[160];

		tbl_txt(&t, g->spec);
		tbl_txt(&t, g->dir == DIR_BOTH ? "both"
			    : g->dir == DIR_IN ? "in (IB->RoCE)"
					       : "out (RoCE->IB)");
		tbl_u64(&t, g->pair);
		join_text(g, SIDE_IB, js, sizeof(js));
		tbl_txt(&t, js);
		if (group_joined(g, SIDE_IB))
			tbl_add(&t, true, "%#x", g->js[SIDE_IB].mlid);
		else
			tbl_add(&t, true, "-");
		join_text(g, SIDE_ROCE, js, sizeof(js));
		tbl_txt(&t, js);
		tbl_u64(&t, sub0(CMM_LOAD_SHARED(g->fwd_pkts[SIDE_IB]), g->fwd_zap[SIDE_IB]));
		tbl_u64(&t, sub0(CMM_LOAD_SHARED(g->fwd_pkts[SIDE_ROCE]), g->fwd_zap[SIDE_ROCE]));
		tbl_txt(&t, group_forwarding(g));
	}
	if (!br->ngroups) {
		fprintf(out, "no multicast groups\n");
		tbl_free(&t);
		return;
	}
	tbl_print(&t, out, "");
}

/* ---- channels ---- */

void show_channels(struct ctl *c, FILE *out)
{
	static const char *const hdr[] = {
		"side",	  "ch",	     "qpn",	 "worker",  "groups", "rq",	"sq",	 "backlog",
		"bl_max", "rx_pkts", "fwd_pkts", "tx_pkts", "drops",  "rx_pps", "state",
	};
	struct bridge *br = c->br;
	struct tbl t;

	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (int s = 0; s < NSIDES; s++) {
		for (uint32_t k = 0; k < br->sd[s].nchan; k++) {
			const struct channel *ch = br->sd[s].chan[k];
			struct chan_stats st;

			chan_view(ch, true, &st);
			tbl_txt(&t, side_name[s]);
			tbl_u64(&t, ch->index);
			tbl_add(&t, true, "%#x", ch->qpn);
			tbl_u64(&t, ch->w ? ch->w->id : 0);
			tbl_u64(&t, ch->ngroups);
			tbl_add(&t, true, "%u/%u", CMM_LOAD_SHARED(ch->rq_posted), ch->rq_depth);
			tbl_add(&t, true, "%" PRIu64 "/%u", chan_sq_outstanding(ch), ch->sq_depth);
			tbl_u64(&t, st.backlog);
			tbl_u64(&t, st.backlog_max);
			tbl_u64(&t, st.rx_pkts);
			tbl_u64(&t, st.fwd_pkts);
			tbl_u64(&t, st.tx_pkts);
			tbl_u64(&t, chan_stats_drops(&st));
			tbl_u64(&t, ch->pps_rx);
			tbl_txt(&t, CMM_LOAD_SHARED(ch->broken) ? "BROKEN" : "ok");
		}
	}
	tbl_print(&t, out, "");
}

/* ---- interfaces ---- */

static const char *port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN:
		return "down";
	case IBV_PORT_INIT:
		return "init";
	case IBV_PORT_ARMED:
		return "armed";
	case IBV_PORT_ACTIVE:
		return "active";
	case IBV_PORT_ACTIVE_DEFER:
		return "active_defer";
	default:
		return "nop";
	}
}

static unsigned mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static const char *gid_type_str(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	default:
		return "?";
	}
}

static bool gid_zero(const union ibv_gid *g)
{
	static const union ibv_gid zero;

	return !memcmp(g->raw, zero.raw, sizeof(zero.raw));
}

/* The port's GID table: every non-zero entry, with its type and network device. */
static void show_gid_table(const struct side_ctx *sd, int tbl_len, FILE *out)
{
	static const char *const hdr[] = {"index", "gid", "type", "netdev"};
	struct tbl t;
	uint32_t shown = 0;

	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;
		char gs[INET6_ADDRSTRLEN], ifn[IF_NAMESIZE];
		int r = ibv_query_gid_ex(sd->ctx, sd->port, (uint32_t)i, &e, 0);

		if (r == ENODATA)
			continue; /* an empty entry */
		if (r) {
			/* Kernels or providers without the extended query: no type, no netdev. */
			memset(&e, 0, sizeof(e));
			if (ibv_query_gid(sd->ctx, sd->port, i, &e.gid))
				continue;
			e.gid_type = UINT32_MAX;
		}
		if (gid_zero(&e.gid))
			continue;
		gid_str(&e.gid, gs, sizeof(gs));
		tbl_add(&t, true, "%d%s", i, i == sd->gid_index ? "*" : "");
		tbl_txt(&t, gs);
		tbl_txt(&t, gid_type_str(e.gid_type));
		if (!e.ndev_ifindex)
			tbl_txt(&t, "-");
		else if (if_indextoname(e.ndev_ifindex, ifn))
			tbl_txt(&t, ifn);
		else
			tbl_add(&t, false, "ifindex %u", e.ndev_ifindex);
		shown++;
	}
	fprintf(out, "  GID table (%u of %d entries in use, * = ours):\n", shown, tbl_len);
	tbl_print(&t, out, "    ");
}

static void show_interface(const struct side_ctx *sd, FILE *out)
{
	struct ibv_port_attr pa = sd->pattr;
	const struct ibv_device_attr *da = &sd->dattr;
	bool live = false, ib = sd->side == SIDE_IB;
	char gs[INET6_ADDRSTRLEN], a[INET_ADDRSTRLEN], m[INET_ADDRSTRLEN];
	struct tbl t;

	/* A removed device answers nothing useful: show what was known at start. */
	if (sd->ctx && sd->state != SIDE_REMOVED)
		live = !ibv_query_port(sd->ctx, sd->port, &pa);
	fprintf(out, "%s %s port %u (%s)\n", side_name[sd->side], sd->dev, sd->port,
		side_state_str(sd->state));
	tbl_init(&t, NULL, 2);
	tbl_txt(&t, "link layer");
	tbl_txt(&t, pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
		    : pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet"
							       : "unspecified");
	tbl_txt(&t, "port state");
	tbl_add(&t, false, "%s%s", port_state_str(pa.state), live ? "" : " (at start)");
	tbl_txt(&t, "active MTU");
	tbl_add(&t, false, "%u", mtu_bytes(pa.active_mtu));
	if (ib) {
		tbl_txt(&t, "LID");
		tbl_add(&t, false, "%#x", pa.lid);
		tbl_txt(&t, "SM LID");
		tbl_add(&t, false, "%#x", pa.sm_lid);
		tbl_txt(&t, "P_Key");
		tbl_add(&t, false, "%#06x", sd->pkey);
	}
	gid_str(&sd->gid, gs, sizeof(gs));
	tbl_txt(&t, "GID");
	tbl_add(&t, false, "%s (index %d)", gs, sd->gid_index);
	if (!ib) {
		ipv4_str(sd->ipv4, a, sizeof(a));
		tbl_txt(&t, "IPv4");
		if (sd->netmask) {
			ipv4_str(sd->netmask, m, sizeof(m));
			tbl_add(&t, false, "%s netmask %s", a, m);
		} else {
			tbl_add(&t, false, "%s (no interface holds it: source subnet not checked)",
				a);
		}
	}
	tbl_txt(&t, "firmware");
	tbl_txt(&t, da->fw_ver[0] ? da->fw_ver : "-");
	tbl_txt(&t, "max_qp");
	tbl_add(&t, false, "%d", da->max_qp);
	tbl_txt(&t, "max_mcast_grp");
	tbl_add(&t, false, "%d", da->max_mcast_grp);
	tbl_txt(&t, "max_mcast_qp_attach");
	tbl_add(&t, false, "%d", da->max_mcast_qp_attach);
	tbl_txt(&t, "max_total_mcast_qp_attach");
	tbl_add(&t, false, "%d", da->max_total_mcast_qp_attach);
	tbl_txt(&t, "loopback blocking");
	tbl_txt(&t, sd->block_lb ? "hardware (QP flag)" : "filter (own packets dropped by source)");
	tbl_txt(&t, "port events");
	tbl_add(&t, false, "%" PRIu64 " (%" PRIu64 " re-joins)", sd->port_events, sd->rejoins);
	tbl_print(&t, out, "  ");
	if (live)
		show_gid_table(sd, pa.gid_tbl_len, out);
}

int show_interfaces(struct ctl *c, const char *name, FILE *out)
{
	struct bridge *br = c->br;
	bool found = false;

	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];

		if (name && strcmp(name, sd->dev) && strcasecmp(name, side_name[s]))
			continue;
		if (found)
			fputc('\n', out);
		show_interface(sd, out);
		found = true;
	}
	if (!found) {
		fprintf(out, "no interface '%s' (have: %s, %s)\n", name, br->sd[SIDE_IB].dev,
			br->sd[SIDE_ROCE].dev);
		return -ENOENT;
	}
	return 0;
}

/* ---- buffers ---- */

void show_buffers(struct ctl *c, FILE *out)
{
	static const char *const hdr[] = {"state", "buffers", "share"};
	static const char *const chdr[] = {"worker", "cached",	   "refills",
					   "spills", "short_gets", "spill_waits"};
	struct pool *pool = c->br->pool;
	uint64_t counts[POOL_NSTATES], total;
	char mem[32];
	struct tbl t;

	if (!pool) {
		fprintf(out, "no buffer pool\n");
		return;
	}
	total = pool_nbufs(pool);
	fmt_bytes(total * pool_buf_size(pool), mem, sizeof(mem));
	fprintf(out, "%" PRIu64 " buffers of %u bytes: %s%s", total, pool_buf_size(pool), mem,
		pool->huge ? " in huge pages" : "");
	if (pool->numa_node >= 0)
		fprintf(out, " on NUMA node %d\n", pool->numa_node);
	else
		fprintf(out, ", no NUMA binding\n");

	pool_census(pool, counts);
	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (int s = 0; s < POOL_NSTATES; s++) {
		tbl_txt(&t, pool_state_name[s]);
		tbl_u64(&t, counts[s]);
		tbl_add(&t, true, "%.1f%%",
			total ? 100.0 * (double)counts[s] / (double)total : 0.0);
	}
	tbl_print(&t, out, "");

	tbl_init(&t, chdr, sizeof(chdr) / sizeof(chdr[0]));
	for (uint32_t i = 0; i < pool->nworkers; i++) {
		struct pool_cache_stats cs;

		pool_cache_stats(pool_cache(pool, i), &cs);
		tbl_u64(&t, i);
		tbl_u64(&t, cs.count);
		tbl_u64(&t, cs.refills);
		tbl_u64(&t, cs.spills);
		tbl_u64(&t, cs.short_gets);
		tbl_u64(&t, cs.spill_waits);
	}
	fprintf(out, "worker caches:\n");
	tbl_print(&t, out, "  ");
}

/* ---- senders ---- */

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

/* ---- workers ---- */

void show_workers(struct ctl *c, FILE *out)
{
	static const char *const hdr[] = {
		"worker",    "cpu",    "node",	      "channels", "loops/s",
		"heartbeat", "hb_age", "idle_sleeps", "p50",	  "p90",
		"p99",	     "p99.9",  "p99.99",      "max_ever", "samples",
	};
	struct bridge *br = c->br;
	uint64_t now = mono_ms();
	struct hist *h = malloc(sizeof(*h));
	struct tbl t;

	/* 8 KiB: kept off the control thread's stack. */
	if (!h) {
		fprintf(out, "workers: out of memory\n");
		return;
	}
	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (uint32_t i = 0; i < br->nworkers; i++) {
		const struct worker *w = &br->workers[i];
		char age[32];

		if (br->cfg.nworkers)
			tbl_u64(&t, w->id);
		else
			tbl_add(&t, false, "%u (control thread)", w->id);
		tbl_int_or_dash(&t, w->cpu);
		tbl_int_or_dash(&t, cpu_node(w->cpu));
		tbl_u64(&t, w->nchan);
		tbl_u64(&t, w->loop_rate);
		tbl_u64(&t, worker_heartbeat(w));
		fmt_age(worker_hb_age_ms(c, w, now), age, sizeof(age));
		tbl_add(&t, true, "%s ago", age);
		tbl_u64(&t, CMM_LOAD_SHARED(w->idle_sleeps));
		lat_view(w, true, h);
		for (size_t q = 0; q < NLAT_Q; q++)
			tbl_u64(&t, hist_quantile(h, lat_q[q].q));
		tbl_u64(&t, h->max);
		tbl_u64(&t, h->count);
	}
	fprintf(out, "latency: poll to post in ns, since zap (max_ever: since start)\n");
	tbl_print(&t, out, "");
	free(h);
}

/* ---- one-line summary ---- */

void show_summary(struct ctl *c, char *buf, size_t len)
{
	struct bridge *br = c->br;
	struct chan_stats st[NSIDES];
	struct counts n;

	counts_get(br, &n);
	for (int s = 0; s < NSIDES; s++)
		side_view(br, s, false, &st[s]);
	snprintf(buf, len,
		 "%sforwarding %u/%u groups | IB rx %" PRIu64 " fwd %" PRIu64 " drop %" PRIu64
		 " | RoCE rx %" PRIu64 " fwd %" PRIu64 " drop %" PRIu64 " | %u worker%s%s",
		 c->ready ? "" : "waiting for joins: ", n.forwarding, n.groups, st[0].rx_pkts,
		 st[0].fwd_pkts, chan_stats_drops(&st[0]), st[1].rx_pkts, st[1].fwd_pkts,
		 chan_stats_drops(&st[1]), br->cfg.nworkers, br->cfg.nworkers == 1 ? "" : "s",
		 br->cfg.nworkers ? "" : " (event-driven)");
}

/* ---- JSON ---- */

/* A streaming JSON writer: commas come from whether the current level has a value. */
struct jw {
	FILE *f;
	bool comma;
};

static void jw_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void jw_key(struct jw *j, const char *key)
{
	if (j->comma)
		fputc(',', j->f);
	j->comma = true;
	if (key) {
		jw_str(j->f, key);
		fputc(':', j->f);
	}
}

/* key NULL inside arrays. */
static void jw_open(struct jw *j, const char *key, char bracket)
{
	jw_key(j, key);
	fputc(bracket, j->f);
	j->comma = false;
}

static void jw_close(struct jw *j, char bracket)
{
	fputc(bracket, j->f);
	j->comma = true;
}

static void jw_u64(struct jw *j, const char *key, uint64_t v)
{
	jw_key(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

static void jw_i64(struct jw *j, const char *key, int64_t v)
{
	jw_key(j, key);
	fprintf(j->f, "%" PRId64, v);
}

static void jw_bool(struct jw *j, const char *key, bool v)
{
	jw_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

static void jw_string(struct jw *j, const char *key, const char *v)
{
	jw_key(j, key);
	jw_str(j->f, v);
}

static void json_sides(struct jw *j, struct bridge *br)
{
	jw_open(j, "sides", '[');
	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];
		struct chan_stats st;

		side_view(br, s, false, &st);
		jw_open(j, NULL, '{');
		jw_string(j, "side", side_name[s]);
		jw_string(j, "device", sd->dev);
		jw_u64(j, "port", sd->port);
		jw_string(j, "state", side_state_str(sd->state));
		jw_u64(j, "port_events", sd->port_events);
		jw_u64(j, "rejoins", sd->rejoins);
		jw_u64(j, "rx_pkts", st.rx_pkts);
		jw_u64(j, "rx_bytes", st.rx_bytes);
		jw_u64(j, "fwd_pkts", st.fwd_pkts);
		jw_u64(j, "tx_pkts", st.tx_pkts);
		jw_u64(j, "tx_bytes", st.tx_bytes);
		jw_u64(j, "drops", chan_stats_drops(&st));
		jw_u64(j, "rx_starved", st.rx_starved);
		jw_u64(j, "backlog", st.backlog);
		jw_u64(j, "backlog_max", st.backlog_max);
		jw_u64(j, "handoff_out", st.handoff_out);
		jw_u64(j, "pgm_pkts", st.pgm_pkts);
		jw_u64(j, "pgm_malformed", st.pgm_malformed);
		jw_u64(j, "pgm_bad_csum", st.pgm_bad_csum);
		jw_open(j, "drop_reasons", '{');
		for (int r = 0; r < DROP_NREASONS; r++)
			jw_u64(j, drop_reason_name[r], st.drops[r]);
		jw_close(j, '}');
		jw_close(j, '}');
	}
	jw_close(j, ']');
}

static void json_join(struct jw *j, const char *key, const struct group *g, int s)
{
	char mgid[INET6_ADDRSTRLEN];

	gid_str(&g->mgid[s], mgid, sizeof(mgid));
	jw_open(j, key, '{');
	jw_string(j, "state", join_state_name(&g->js[s]));
	jw_bool(j, "send_only", !group_dir_rx(g->dir, s));
	jw_u64(j, "tries", g->js[s].tries);
	jw_u64(j, "mlid", group_joined(g, s) ? g->js[s].mlid : 0);
	jw_string(j, "mgid", mgid);
	jw_close(j, '}');
}

static void json_groups(struct jw *j, struct bridge *br)
{
	jw_open(j, "groups", '[');
	for (uint32_t i = 0; i < br->ngroups; i++) {
		const struct group *g = br->groups[i];
		char a[INET_ADDRSTRLEN];

		ipv4_str(g->addr, a, sizeof(a));
		jw_open(j, NULL, '{');
		jw_string(j, "group", g->spec);
		jw_string(j, "addr", a);
		jw_u64(j, "port", g->port);
		jw_string(j, "dir", dir_name(g->dir));
		jw_u64(j, "pair", g->pair);
		json_join(j, "ib", g, SIDE_IB);
		json_join(j, "roce", g, SIDE_ROCE);
		jw_u64(j, "ib_to_roce_pkts", CMM_LOAD_SHARED(g->fwd_pkts[SIDE_IB]));
		jw_u64(j, "ib_to_roce_bytes", CMM_LOAD_SHARED(g->fwd_bytes[SIDE_IB]));
		jw_u64(j, "roce_to_ib_pkts", CMM_LOAD_SHARED(g->fwd_pkts[SIDE_ROCE]));
		jw_u64(j, "roce_to_ib_bytes", CMM_LOAD_SHARED(g->fwd_bytes[SIDE_ROCE]));
		jw_string(j, "forwarding", group_forwarding(g));
		jw_close(j, '}');
	}
	jw_close(j, ']');
}

static void json_channels(struct jw *j, struct bridge *br)
{
	jw_open(j, "channels", '[');
	for (int s = 0; s < NSIDES; s++) {
		for (uint32_t k = 0; k < br->sd[s].nchan; k++) {
			const struct channel *ch = br->sd[s].chan[k];
			struct chan_stats st;

			chan_view(ch, false, &st);
			jw_open(j, NULL, '{');
			jw_string(j, "side", side_name[s]);
			jw_u64(j, "index", ch->index);
			jw_u64(j, "qpn", ch->qpn);
			jw_u64(j, "worker", ch->w ? ch->w->id : 0);
			jw_u64(j, "groups", ch->ngroups);
			jw_u64(j, "rq_posted", CMM_LOAD_SHARED(ch->rq_posted));
			jw_u64(j, "rq_depth", ch->rq_depth);
			jw_u64(j, "sq_outstanding", chan_sq_outstanding(ch));
			jw_u64(j, "sq_depth", ch->sq_depth);
			jw_u64(j, "backlog", st.backlog);
			jw_u64(j, "rx_pkts", st.rx_pkts);
			jw_u64(j, "fwd_pkts", st.fwd_pkts);
			jw_u64(j, "tx_pkts", st.tx_pkts);
			jw_u64(j, "drops", chan_stats_drops(&st));
			jw_bool(j, "broken", CMM_LOAD_SHARED(ch->broken));
			jw_close(j, '}');
		}
	}
	jw_close(j, ']');
}

static void json_workers(struct jw *j, struct bridge *br, struct hist *h)
{
	jw_open(j, "workers", '[');
	for (uint32_t i = 0; i < br->nworkers; i++) {
		const struct worker *w = &br->workers[i];

		jw_open(j, NULL, '{');
		jw_u64(j, "id", w->id);
		jw_i64(j, "cpu", w->cpu);
		jw_i64(j, "node", cpu_node(w->cpu));
		jw_u64(j, "channels", w->nchan);
		jw_u64(j, "passes", CMM_LOAD_SHARED(w->passes));
		jw_u64(j, "heartbeat", worker_heartbeat(w));
		jw_u64(j, "loop_rate", w->loop_rate);
		jw_u64(j, "idle_sleeps", CMM_LOAD_SHARED(w->idle_sleeps));
		jw_open(j, "latency_ns", '{');
		if (h) {
			lat_view(w, false, h);
			for (size_t q = 0; q < NLAT_Q; q++)
				jw_u64(j, lat_q[q].json, hist_quantile(h, lat_q[q].q));
			jw_u64(j, "max", h->max);
			jw_u64(j, "samples", h->count);
		}
		jw_close(j, '}');
		jw_close(j, '}');
	}
	jw_close(j, ']');
}

void report_json(struct ctl *c, FILE *out)
{
	struct bridge *br = c->br;
	struct jw j = {.f = out, .comma = false};
	struct hist *h = malloc(sizeof(*h)); /* 8 KiB, off the stack; NULL: latency omitted */
	struct counts n;

	counts_get(br, &n);
	jw_open(&j, NULL, '{');
	jw_u64(&j, "version", 1);
	jw_string(&j, "program", "ib2roce");
	jw_i64(&j, "pid", getpid());
	jw_u64(&j, "uptime_s", (mono_ms() - c->start_ms) / 1000);
	jw_i64(&j, "start_time", c->start_wall);
	jw_bool(&j, "ready", c->ready);
	json_sides(&j, br);
	json_groups(&j, br);
	json_channels(&j, br);
	json_workers(&j, br, h);
	jw_open(&j, "pool", '{');
	if (br->pool) {
		uint64_t counts[POOL_NSTATES];

		pool_census(br->pool, counts);
		jw_u64(&j, "buffers", pool_nbufs(br->pool));
		jw_u64(&j, "buf_size", pool_buf_size(br->pool));
		jw_i64(&j, "node", br->pool->numa_node);
		jw_bool(&j, "huge", br->pool->huge);
		for (int s = 0; s < POOL_NSTATES; s++)
			jw_u64(&j, pool_state_name[s], counts[s]);
	}
	jw_close(&j, '}');
	jw_open(&j, "groups_left", '{');
	jw_u64(&j, "count", atomic_load(&br->left_groups));
	jw_u64(&j, "ib_to_roce_pkts", atomic_load(&br->left_fwd_pkts[SIDE_IB]));
	jw_u64(&j, "ib_to_roce_bytes", atomic_load(&br->left_fwd_bytes[SIDE_IB]));
	jw_u64(&j, "roce_to_ib_pkts", atomic_load(&br->left_fwd_pkts[SIDE_ROCE]));
	jw_u64(&j, "roce_to_ib_bytes", atomic_load(&br->left_fwd_bytes[SIDE_ROCE]));
	jw_close(&j, '}');
	jw_u64(&j, "senders", n.senders);
	jw_u64(&j, "pgm_streams", n.streams);
	jw_close(&j, '}');
	fputc('\n', out);
	free(h);
}

/* ---- Prometheus text format 0.0.4 ---- */

static void prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped, as the format requires. */
static void prom_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* name{side="IB",device="mlx5_0" (the caller closes the braces). */
static void prom_side(FILE *f, const char *name, const struct side_ctx *sd)
{
	fprintf(f, "%s{side=\"%s\",device=\"", name, side_name[sd->side]);
	prom_value(f, sd->dev);
	fputc('"', f);
}

/* What the per-side metrics read, one snapshot per side. */
struct side_vals {
	uint64_t rx_pkts, rx_bytes, fwd_pkts, tx_pkts, tx_bytes, rx_starved, backlog, port_up,
		port_events, rejoins, broken;
};

static const struct {
	const char *name, *type, *help;
	size_t off;
} side_metric[] = {
	{"ib2roce_rx_packets_total", "counter", "Packets received on the side.",
	 offsetof(struct side_vals, rx_pkts)},
	{"ib2roce_rx_bytes_total", "counter",
	 "Payload bytes received on the side (without the 40-byte receive header).",
	 offsetof(struct side_vals, rx_bytes)},
	{"ib2roce_forwarded_packets_total", "counter",
	 "Packets received on the side and forwarded to the other side.",
	 offsetof(struct side_vals, fwd_pkts)},
	{"ib2roce_tx_packets_total", "counter", "Packets posted for sending on the side.",
	 offsetof(struct side_vals, tx_pkts)},
	{"ib2roce_tx_bytes_total", "counter", "Payload bytes posted for sending on the side.",
	 offsetof(struct side_vals, tx_bytes)},
	{"ib2roce_rx_starved_total", "counter", "Receive refills that found the buffer pool empty.",
	 offsetof(struct side_vals, rx_starved)},
	{"ib2roce_backlog", "gauge", "Packets waiting for send queue space on the side.",
	 offsetof(struct side_vals, backlog)},
	{"ib2roce_port_up", "gauge", "1 while the side's port is up, 0 when down or removed.",
	 offsetof(struct side_vals, port_up)},
	{"ib2roce_port_events_total", "counter", "Asynchronous port events seen on the side.",
	 offsetof(struct side_vals, port_events)},
	{"ib2roce_rejoins_total", "counter", "Groups joined again after port events.",
	 offsetof(struct side_vals, rejoins)},
	{"ib2roce_broken_channels", "gauge",
	 "Channels whose queue pair went to the error state (they no longer forward).",
	 offsetof(struct side_vals, broken)},
};

static void prom_sides(FILE *f, struct bridge *br)
{
	struct chan_stats st[NSIDES];
	struct side_vals v[NSIDES];

	for (int s = 0; s < NSIDES; s++) {
		side_view(br, s, false, &st[s]);
		v[s] = (struct side_vals){
			.rx_pkts = st[s].rx_pkts,
			.rx_bytes = st[s].rx_bytes,
			.fwd_pkts = st[s].fwd_pkts,
			.tx_pkts = st[s].tx_pkts,
			.tx_bytes = st[s].tx_bytes,
			.rx_starved = st[s].rx_starved,
			.backlog = st[s].backlog,
			.port_up = br->sd[s].state == SIDE_UP,
			.port_events = br->sd[s].port_events,
			.rejoins = br->sd[s].rejoins,
			.broken = side_broken(br, s),
		};
	}
	for (size_t m = 0; m < sizeof(side_metric) / sizeof(side_metric[0]); m++) {
		prom_head(f, side_metric[m].name, side_metric[m].type, side_metric[m].help);
		for (int s = 0; s < NSIDES; s++) {
			uint64_t x;

			memcpy(&x, (const char *)&v[s] + side_metric[m].off, sizeof(x));
			prom_side(f, side_metric[m].name, &br->sd[s]);
			fprintf(f, "} %" PRIu64 "\n", x);
		}
	}
	prom_head(f, "ib2roce_drops_total", "counter",
		  "Packets received and not forwarded, or not sent, by reason.");
	for (int s = 0; s < NSIDES; s++) {
		for (int r = 0; r < DROP_NREASONS; r++) {
			prom_side(f, "ib2roce_drops_total", &br->sd[s]);
			fprintf(f, ",reason=\"%s\"} %" PRIu64 "\n", drop_reason_name[r],
				st[s].drops[r]);
		}
	}
}

static void prom_groups(FILE *f, struct bridge *br)
{
	static const char *const dir[NSIDES] = {"ib_to_roce", "roce_to_ib"};
	static const struct {
		const char *name, *help, *left, *left_help;
		bool bytes;
	} gm[] = {
		{"ib2roce_group_forwarded_packets_total", "Packets forwarded for the group.",
		 "ib2roce_left_groups_forwarded_packets_total",
		 "Packets forwarded by groups before they left at run time.", false},
		{"ib2roce_group_forwarded_bytes_total", "Payload bytes forwarded for the group.",
		 "ib2roce_left_groups_forwarded_bytes_total",
		 "Payload bytes forwarded by groups before they left at run time.", true},
	};

	prom_head(f, "ib2roce_groups_left_total", "counter",
		  "Groups no longer bridged (left at run time).");
	fprintf(f, "ib2roce_groups_left_total %u\n", atomic_load(&br->left_groups));
	for (size_t m = 0; m < sizeof(gm) / sizeof(gm[0]); m++) {
		prom_head(f, gm[m].left, "counter", gm[m].left_help);
		for (int s = 0; s < NSIDES; s++)
			fprintf(f, "%s{direction=\"%s\"} %" PRIu64 "\n", gm[m].left, dir[s],
				gm[m].bytes ? atomic_load(&br->left_fwd_bytes[s])
					    : atomic_load(&br->left_fwd_pkts[s]));
	}
	if (!br->ngroups)
		return; /* a family without samples is legal but noise */
	for (size_t m = 0; m < sizeof(gm) / sizeof(gm[0]); m++) {
		prom_head(f, gm[m].name, "counter", gm[m].help);
		for (uint32_t i = 0; i < br->ngroups; i++) {
			const struct group *g = br->groups[i];

			for (int s = 0; s < NSIDES; s++) {
				fprintf(f, "%s{group=\"", gm[m].name);
				prom_value(f, g->spec);
				fprintf(f, "\",direction=\"%s\"} %" PRIu64 "\n", dir[s],
					gm[m].bytes ? CMM_LOAD_SHARED(g->fwd_bytes[s])
						    : CMM_LOAD_SHARED(g->fwd_pkts[s]));
			}
		}
	}
	prom_head(f, "ib2roce_group_joined", "gauge", "1 when the group is joined on the side.");
	for (uint32_t i = 0; i < br->ngroups; i++) {
		const struct group *g = br->groups[i];

		for (int s = 0; s < NSIDES; s++) {
			fputs("ib2roce_group_joined{group=\"", f);
			prom_value(f, g->spec);
			fprintf(f, "\",side=\"%s\"} %d\n", side_name[s], group_joined(g, s));
		}
	}
}

/* {worker="0",cpu="3" (the caller closes the braces); cpu "none" when unpinned. */
static void prom_worker(FILE *f, const char *name, const struct worker *w)
{
	if (w->cpu >= 0)
		fprintf(f, "%s{worker=\"%u\",cpu=\"%d\"", name, w->id, w->cpu);
	else
		fprintf(f, "%s{worker=\"%u\",cpu=\"none\"", name, w->id);
}

static void prom_workers(FILE *f, struct ctl *c, uint64_t now_ms)
{
	struct bridge *br = c->br;
	struct hist *h = malloc(sizeof(*h) * br->nworkers);

	prom_head(f, "ib2roce_worker_passes_total", "counter",
		  "Polling passes of the worker over its channels.");
	for (uint32_t i = 0; i < br->nworkers; i++) {
		prom_worker(f, "ib2roce_worker_passes_total", &br->workers[i]);
		fprintf(f, "} %" PRIu64 "\n", CMM_LOAD_SHARED(br->workers[i].passes));
	}
	prom_head(f, "ib2roce_worker_heartbeat_age_seconds", "gauge",
		  "Seconds since the worker's heartbeat last advanced.");
	for (uint32_t i = 0; i < br->nworkers; i++) {
		const struct worker *w = &br->workers[i];

		prom_worker(f, "ib2roce_worker_heartbeat_age_seconds", w);
		fprintf(f, "} %.3f\n", (double)worker_hb_age_ms(c, w, now_ms) / 1000.0);
	}
	if (!h)
		return; /* 8 KiB per worker; without it, no latency this time */
	for (uint32_t i = 0; i < br->nworkers; i++)
		lat_view(&br->workers[i], false, &h[i]);
	prom_head(f, "ib2roce_worker_latency_nanoseconds", "gauge",
		  "Poll-to-post latency quantiles since start, in nanoseconds.");
	for (uint32_t i = 0; i < br->nworkers; i++)
		for (size_t q = 0; q < NLAT_Q; q++)
			fprintf(f,
				"ib2roce_worker_latency_nanoseconds{worker=\"%u\",quantile=\"%s\"} "
				"%" PRIu64 "\n",
				br->workers[i].id, lat_q[q].prom, hist_quantile(&h[i], lat_q[q].q));
	prom_head(f, "ib2roce_worker_latency_max_nanoseconds", "gauge",
		  "Highest poll-to-post latency since start, in nanoseconds.");
	for (uint32_t i = 0; i < br->nworkers; i++)
		fprintf(f, "ib2roce_worker_latency_max_nanoseconds{worker=\"%u\"} %" PRIu64 "\n",
			br->workers[i].id, h[i].max);
	prom_head(f, "ib2roce_worker_latency_samples_total", "counter",
		  "Packets whose poll-to-post latency was recorded.");
	for (uint32_t i = 0; i < br->nworkers; i++)
		fprintf(f, "ib2roce_worker_latency_samples_total{worker=\"%u\"} %" PRIu64 "\n",
			br->workers[i].id, h[i].count);
	free(h);
}

static void prom_write(FILE *f, struct ctl *c)
{
	struct bridge *br = c->br;
	uint64_t now = mono_ms();
	struct counts n;

	counts_get(br, &n);
	prom_head(f, "ib2roce_up", "gauge", "1 while the bridge runs.");
	fprintf(f, "ib2roce_up 1\n");
	prom_head(f, "ib2roce_ready", "gauge",
		  "1 once every group is joined on both sides (or the join timeout passed).");
	fprintf(f, "ib2roce_ready %d\n", c->ready);
	prom_head(f, "ib2roce_uptime_seconds", "gauge", "Seconds since the bridge started.");
	fprintf(f, "ib2roce_uptime_seconds %" PRIu64 "\n", sub0(now, c->start_ms) / 1000);
	prom_head(f, "ib2roce_start_time_seconds", "gauge",
		  "Start time of the bridge since the Unix epoch, in seconds.");
	fprintf(f, "ib2roce_start_time_seconds %" PRId64 "\n", (int64_t)c->start_wall);
	prom_sides(f, br);
	prom_groups(f, br);
	prom_workers(f, c, now);
	if (br->pool) {
		uint64_t counts[POOL_NSTATES];

		pool_census(br->pool, counts);
		prom_head(f, "ib2roce_pool_buffers", "gauge", "Packet buffers by state.");
		for (int s = 0; s < POOL_NSTATES; s++)
			fprintf(f, "ib2roce_pool_buffers{state=\"%s\"} %" PRIu64 "\n",
				pool_state_name[s], counts[s]);
	}
	prom_head(f, "ib2roce_senders", "gauge", "Senders seen and not aged out.");
	fprintf(f, "ib2roce_senders %zu\n", n.senders);
	prom_head(f, "ib2roce_pgm_streams", "gauge", "PGM streams tracked.");
	fprintf(f, "ib2roce_pgm_streams %" PRIu64 "\n", n.streams);
}

int metrics_write(struct ctl *c, const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int dirlen = slash ? (int)(slash - path + 1) : 0;
	char tmp[PATH_MAX];
	FILE *f;
	int fd, r;

	/*
	 * Same directory as the target, so that rename() is atomic: node_exporter reads
	 * the old file or the new one, never half of one. A leading dot keeps the temp file
	 * out of the collector's *.prom glob.
	 */
	if (!*base || snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp.%ld", dirlen, path, base,
			       (long)getpid()) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "metrics file %s: %s", path,
			 strerror(*base ? ENAMETOOLONG : EISDIR));
		return *base ? -ENAMETOOLONG : -EISDIR;
	}
	/*
	 * O_EXCL | O_NOFOLLOW: we may run as root in a directory others can write to; never
	 * write through a link someone placed there. A temp file left by a crash of a
	 * process with our pid is removed once.
	 */
	for (int tries = 0;; tries++) {
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries || (unlink(tmp) && errno != ENOENT)) {
			r = -errno;
			goto fail;
		}
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		goto fail_unlink;
	}
	prom_write(f, c);
	errno = 0;
	if (fflush(f) || ferror(f)) {
		r = errno ? -errno : -EIO;
		goto fail_close;
	}
	/* fsync before rename: after a crash the file is the old one or a whole new one. */
	if (fsync(fileno(f))) {
		r = -errno;
		goto fail_close;
	}
	r = fclose(f);
	if (r) {
		r = -errno;
		goto fail_unlink;
	}
	if (rename(tmp, path)) {
		r = -errno;
		goto fail_unlink;
	}
	return 0;

fail_close:
	fclose(f);
fail_unlink:
	unlink(tmp);
fail:
	snprintf(err, errlen, "metrics file %s: %s", path, strerror(-r));
	return r;
}
