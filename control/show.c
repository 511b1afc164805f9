// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The console's tables (show.h); the reports (final counters, JSON, metrics file) are in
 * report.c, what both read in show_priv.h.
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
 * one-line summary and the reports show the raw monotonic counters, which is what
 * rate() in a monitoring system needs.
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
#include "stream.h"
#include "tune.h"
#include "version_line.h"

#define SENDERS_ROWS_DEFAULT 100
#define SENDERS_ROWS_MAX     1000000
#define PGM_LINE_MAX	     2048 /* one stream line is under 1000 characters */
#define TBL_SEP		     "  "
#define TBL_COLS_MAX	     23 /* the widest table (workers) has 23 columns */

static uint64_t side_pps(struct bridge *br, int s)
{
	uint64_t pps = 0;

	for (uint32_t k = 0; k < br->sd[s].nchan; k++)
		pps += br->sd[s].chan[k]->pps_rx;
	return pps;
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

/* A side's counters: the sum over its channels. */
void show_side_stats(struct bridge *br, int s, bool zapped, struct chan_stats *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t k = 0; k < br->sd[s].nchan; k++) {
		struct chan_stats cs;

		chan_view(br->sd[s].chan[k], zapped, &cs);
		chan_stats_add(t, &cs);
	}
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
	ctl_nic_read(c);
	for (int s = 0; s < NSIDES; s++)
		nic_ctr_zap(&c->nic[s]);
}

/* ---- status ---- */

bool show_status(struct ctl *c, FILE *out)
{
	static const char *const hdr[] = {
		"side",	    "device",	"state",	 "rx_pkts",	   "rx_bytes",	 "fwd_pkts",
		"tx_pkts",  "tx_bytes", "drops",	 "nic_rx_dropped", "rx_starved", "rx_pps",
		"pgm_pkts", "non_pgm",	"pgm_malformed", "pgm_bad_csum",
	};
	struct bridge *br = c->br;
	struct chan_stats st[NSIDES];
	struct counts n;
	struct tbl t;
	uint64_t nic;
	char up[64], started[64];
	time_t sw = (time_t)c->start_wall;
	bool healthy;
	struct tm tm;

	fmt_uptime(mono_ms() - c->start_ms, up, sizeof(up));
	if (localtime_r(&sw, &tm))
		strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S %z", &tm);
	else
		snprintf(started, sizeof(started), "?");
	fprintf(out, "%s\n", version_line);
	fprintf(out, "uptime %s (started %s), pid %ld\n", up, started, (long)getpid());
	fprintf(out, "ready  %s\n", c->ready ? "yes" : "no: waiting for joins");
	if (c->stalls)
		fprintf(out,
			"control thread stalled %" PRIu64 " time%s, longest %.1f s, last %.1f s\n",
			c->stalls, c->stalls == 1 ? "" : "s", (double)c->stall_max_ms / 1000.0,
			(double)c->stall_last_ms / 1000.0);
	healthy = health_print(c, out);
	fprintf(out, "counters since zap (or start)\n");

	ctl_nic_read(c);
	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];

		show_side_stats(br, s, true, &st[s]);
		tbl_txt(&t, side_name[s]);
		tbl_add(&t, false, "%s:%u", sd->dev, sd->port);
		tbl_txt(&t, side_state_str(sd->state));
		tbl_u64(&t, st[s].rx_pkts);
		tbl_u64(&t, st[s].rx_bytes);
		tbl_u64(&t, st[s].fwd_pkts);
		tbl_u64(&t, st[s].tx_pkts);
		tbl_u64(&t, st[s].tx_bytes);
		tbl_u64(&t, chan_stats_drops(&st[s]));
		if (nic_ctr_get(&c->nic[s], true, &nic))
			tbl_u64(&t, nic);
		else
			tbl_add(&t, true, "-"); /* no hw_counters: unknown, not 0 */
		tbl_u64(&t, st[s].rx_starved);
		tbl_u64(&t, side_pps(br, s));
		tbl_u64(&t, st[s].pgm_pkts);
		tbl_u64(&t, st[s].pgm_not_pgm);
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
	if (sender_table_untracked(br->senders))
		fprintf(out,
			"senders_untracked %" PRIu64 " (sender table full: packets forwarded, "
			"their senders not recorded)\n",
			sender_table_untracked(br->senders));
	return healthy;
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
			/* With SRQs: the worker's queue of the side, shared by its channels. */
			tbl_add(&t, true, "%u/%u%s", CMM_LOAD_SHARED(ch->rq->posted), ch->rq->depth,
				ch->rq->srq ? " srq" : "");
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
		"worker", "cpu",	 "core",       "node",	    "isolated", "channels",
		"groups", "weight", "cqs",	 "polls/pass", "wcs/poll",  "loops/s",	"heartbeat",
		"hb_age", "idle_sleeps", "p50",	       "p90",	    "p99",	"p99.9",
		"p99.99", "max_ever",	 "samples",    "placement",
	};
	const struct placement *pl = c->place;
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
		/* The plan's view (control thread: what it chose and why); w->cpu -1 when the
		 * worker could not pin itself. */
		const struct place_thread *pt = pl && br->cfg.nworkers && i < pl->nworkers
							? &pl->w[i]
						: pl ? &pl->control
						     : NULL;

		tbl_int_or_dash(&t, br->cfg.nworkers ? w->cpu : pt ? pt->cpu : -1);
		tbl_int_or_dash(&t, pt ? pt->core : -1);
		tbl_int_or_dash(&t, pt ? pt->node : cpu_node(w->cpu));
		tbl_add(&t, false, "%s", pt && pt->cpu >= 0 ? (pt->isolated ? "yes" : "no") : "-");
		tbl_u64(&t, w->nchan);
		{
			uint64_t polls = CMM_LOAD_SHARED(w->ws[0].polls) +
					 CMM_LOAD_SHARED(w->ws[1].polls),
				 wcs = CMM_LOAD_SHARED(w->ws[0].wcs) +
				       CMM_LOAD_SHARED(w->ws[1].wcs),
				 passes = CMM_LOAD_SHARED(w->passes);

			tbl_u64(&t, worker_groups(br, w));
			tbl_u64(&t, worker_weight(br, w));
			tbl_u64(&t, NSIDES);
			tbl_add(&t, true, "%.2f", passes ? (double)polls / (double)passes : 0.0);
			tbl_add(&t, true, "%.2f", polls ? (double)wcs / (double)polls : 0.0);
		}
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
		tbl_add(&t, false, "%s", pt ? pt->why : "-");
	}
	fprintf(out, "latency: poll to post in ns, since zap (max_ever: since start)\n");
	tbl_print(&t, out, "");
	if (pl) {
		char line[256];

		placement_thread_line(&pl->control, line, sizeof(line));
		fprintf(out, "control thread: %s\n", line);
		fprintf(out, "memory node: %s\n", pl->node_why);
		for (uint32_t k = 0; k < pl->nidle; k++)
			fprintf(out, "idle %s\n", pl->idle[k]);
		for (uint32_t k = 0; k < pl->nwarn; k++)
			fprintf(out, "warning: %s\n", pl->warn[k]);
	}
	free(h);
}

/* ---- one-line summary ---- */

void show_summary(struct ctl *c, char *buf, size_t len)
{
	struct bridge *br = c->br;
	struct chan_stats st[NSIDES];
	struct counts n;
	struct health h;
	char pre[96] = "";

	counts_get(br, &n);
	for (int s = 0; s < NSIDES; s++)
		show_side_stats(br, s, false, &st[s]);
	if (!c->ready) {
		snprintf(pre, sizeof(pre), "waiting for joins: ");
	} else if (health_check(c, mono_ms(), &h), h.failed) {
		/* UNHEALTHY: the FAILED conditions; DEGRADED: only DEGRADED ones fail. */
		size_t off =
			(size_t)snprintf(pre, sizeof(pre), "%s (", h.ok ? "DEGRADED" : "UNHEALTHY");

		for (int k = 0, first = 1; k < HEALTH_NCONDS && off < sizeof(pre); k++) {
			if (!(h.failed & (1u << k)) || health_cond_level[k] != h.level)
				continue;
			off += (size_t)snprintf(pre + off, sizeof(pre) - off, "%s%s",
						first ? "" : ", ", health_cond_name[k]);
			first = 0;
		}
		if (off < sizeof(pre))
			snprintf(pre + off, sizeof(pre) - off, "): ");
	}
	snprintf(buf, len,
		 "%sforwarding %u/%u groups | IB rx %" PRIu64 " fwd %" PRIu64 " drop %" PRIu64
		 " | RoCE rx %" PRIu64 " fwd %" PRIu64 " drop %" PRIu64 " | %u worker%s%s",
		 pre, n.forwarding, n.groups, st[0].rx_pkts, st[0].fwd_pkts,
		 chan_stats_drops(&st[0]), st[1].rx_pkts, st[1].fwd_pkts, chan_stats_drops(&st[1]),
		 br->cfg.nworkers, br->cfg.nworkers == 1 ? "" : "s",
		 br->cfg.nworkers ? "" : " (event-driven)");
}

/* ---- The console's commands and the rates timer ---- */

static int cmd_status(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("status", args, out))
		return -1;
	/* Unhealthy is a failed status: a script's `bcom status` exits 1. */
	return show_status(c, out) ? 0 : -1;
}

static int cmd_zap(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("zap", args, out))
		return -1;
	show_zap(c);
	fprintf(out, "counters shown by the console reset (stats --json and metrics are not)\n");
	return 0;
}

static int cmd_multicast(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("multicast", args, out))
		return -1;
	show_multicast(c, out);
	return 0;
}

static int cmd_channels(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("channels", args, out))
		return -1;
	show_channels(c, out);
	return 0;
}

static int cmd_interfaces(struct ctl *c, char *args, FILE *out)
{
	char *name = concmd_word(&args);

	if (concmd_no_args("interfaces", args, out))
		return -1;
	return show_interfaces(c, name, out) ? -1 : 0;
}

static int cmd_buffers(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("buffers", args, out))
		return -1;
	show_buffers(c, out);
	return 0;
}

static int cmd_senders(struct ctl *c, char *args, FILE *out)
{
	char *n = concmd_word(&args);

	if (concmd_no_args("senders", args, out))
		return -1;
	return show_senders(c, n, out) ? -1 : 0;
}

static int cmd_tsi(struct ctl *c, char *args, FILE *out)
{
	show_tsi(c, concmd_rest(args), out);
	return 0;
}

static int cmd_workers(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("workers", args, out))
		return -1;
	show_workers(c, out);
	return 0;
}

static int cmd_stats(struct ctl *c, char *args, FILE *out)
{
	char *opt = concmd_word(&args);

	if (concmd_no_args("stats", args, out))
		return -1;
	if (!opt) {
		show_counters(c, out, false);
		return 0;
	}
	if (strcmp(opt, "--json") && strcmp(opt, "json")) {
		fprintf(out, "stats: unknown option '%s' (--json)\n", opt);
		return -1;
	}
	report_json(c, out);
	return 0;
}

/* The tuning report (tune.h) for the running bridge: its workers' CPUs, this thread's
 * affinity as the control's, both devices' sysfs directories and the pool's size. */
static int cmd_tuning(struct ctl *c, char *args, FILE *out)
{
	struct bridge *br = c->br;
	struct tune_input in;
	struct tune_report rep;

	if (concmd_no_args("tuning", args, out))
		return -1;
	tune_input_init(&in);
	for (uint32_t i = 0; i < br->cfg.nworkers; i++)
		if (br->workers[i].cpu >= 0)
			CPU_SET(br->workers[i].cpu, &in.workers);
	for (int s = 0; s < NSIDES; s++)
		if (br->sd[s].ctx)
			tune_input_add_nic(&in, br->sd[s].dev, br->sd[s].ctx->device->ibdev_path,
					   NULL);
	in.pool_bytes = (uint64_t)pool_nbufs(br->pool) * pool_buf_size(br->pool);
	if (tune_report_build(&in, &rep)) {
		fprintf(out, "tuning: out of memory\n");
		return -1;
	}
	tune_report_print(&rep, out);
	tune_report_free(&rep);
	return 0;
}

static const struct console_cmd show_cmds[] = {
	{{"buffers", NULL, "the buffer pool: buffers per state", false}, cmd_buffers},
	{{"channels", NULL, "queue pairs: groups, queues, backlog, counters, pps", false},
	 cmd_channels},
	{{"cores", NULL, "same as workers", false}, cmd_workers},
	{{"endpoints", "[N]", "same as senders", false}, cmd_senders},
	{{"interfaces", "[name]", "devices, ports, limits and GID tables", false}, cmd_interfaces},
	{{"multicast", NULL, "groups, join state per side, packets each way", false},
	 cmd_multicast},
	{{"senders", "[N]", "who sends into the bridge (N rows, default 100)", false}, cmd_senders},
	{{"stats", "[--json]", "all counters: final-counters format, or one JSON object", false},
	 cmd_stats},
	{{"status", NULL,
	  "health, per-side counters, drops by reason, join summary (fails if unhealthy)", false},
	 cmd_status},
	{{"tsi", "[filter]", "PGM streams (lines containing filter)", false}, cmd_tsi},
	{{"tuning", NULL, "host tuning report: isolation, IRQs, SMT, C-states (as --tune-check)",
	  false},
	 cmd_tuning},
	{{"workers", NULL, "worker threads: CPU, node, loop rate, heartbeat, latency", false},
	 cmd_workers},
	{{"zap", NULL, "reset the counters the console shows", false}, cmd_zap},
	{{NULL, NULL, NULL, false}, NULL},
};

static void rates_timer(void *arg, uint64_t now)
{
	show_tick(arg, now);
}

int show_init(struct ctl *c)
{
	struct loop_timer *t = loop_every(1000, rates_timer, c, "rates");

	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "pps and loop rates (every 1 s)");
	return console_cmd_register(show_cmds);
}
