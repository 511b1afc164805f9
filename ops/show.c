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
#include "table.h"
#include "stream.h"
#include "tune.h"
#include "version_line.h"

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

		side_stats_sum(br, s, true, &st[s]);
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
		"RoCE",	 "ib->roce", "roce->ib", "forwarding", "qkey",
	};
	struct bridge *br = c->br;
	bool qkeys = false;
	struct tbl t;

	/* The qkey column only when a group has another Q_Key than rdma_cm's (issue 25). */
	for (uint32_t i = 0; i < br->ngroups; i++)
		for (int s = 0; s < NSIDES; s++)
			qkeys |= br->groups[i]->qkey[s] != BR_UDP_QKEY;
	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]) - !qkeys);
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
		if (!qkeys)
			continue;
		if (g->qkey[SIDE_IB] == g->qkey[SIDE_ROCE])
			tbl_add(&t, false, "0x%08x", g->qkey[SIDE_IB]);
		else
			tbl_add(&t, false, "ib:0x%08x/roce:0x%08x", g->qkey[SIDE_IB],
				g->qkey[SIDE_ROCE]);
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
		"side",	   "ch",     "qpn",	"worker",   "cq",      "groups", "rq",	   "sq",
		"backlog", "bl_max", "rx_pkts", "fwd_pkts", "tx_pkts", "drops",	 "rx_pps", "state",
		"qkey",
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
			/* The CQ it completes on: its worker's of its side (struct wside). */
			tbl_add(&t, true, "w%u.%s", ch->w ? ch->w->id : 0, side_name[s]);
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
			tbl_txt(&t, CMM_LOAD_SHARED(ch->broken) ? "BROKEN"
				    : chan_tx_stuck_ns(ch)	? "TX_STUCK"
								: "ok");
			/* The QP's Q_Key: its groups' on this side (control/groups.c). */
			tbl_add(&t, true, "0x%08x", ch->qkey);
		}
	}
	tbl_print(&t, out, "");
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
	fprintf(out, "worker caches (each spills beyond %u buffers):\n", pool->cache_size);
	tbl_print(&t, out, "  ");
}

/* ---- workers ---- */

void show_workers(struct ctl *c, FILE *out)
{
	static const char *const hdr[] = {
		"worker",    "cpu",    "core",	      "node",	    "isolated",	 "channels",
		"groups",    "weight", "cqs",	      "polls/pass", "wcs/poll",	 "loops/s",
		"heartbeat", "hb_age", "idle_sleeps", "p50",	    "p90",	 "p99",
		"p99.9",     "p99.99", "max_ever",    "samples",    "placement",
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
