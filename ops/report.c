// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The reports (show.h): the final counters (also the console's "stats"), stats --json
 * and the Prometheus metrics file. All show raw, monotonic counters (the tables of
 * show.c show them since the last zap). Control thread; the snapshot rules of show.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ha.h"
#include "hanet.h"
#include "health.h"
#include "joins.h"
#include "log.h"
#include "loop.h"
#include "placement.h"
#include "report.h"
#include "capture.h"
#include "console.h"
#include "show.h"
#include "show_priv.h"
#include "version_line.h"

/* GET /metrics' refused connections (report_on_refused: metrics_http.c, above us). */
static report_count_fn *refused_count;

void report_on_refused(report_count_fn *fn)
{
	refused_count = fn;
}

/* ---- the final counters (also the console's stats) ---- */

void show_final(struct ctl *c, FILE *out)
{
	show_counters(c, out, true);
}

void show_counters(struct ctl *c, FILE *out, bool final)
{
	struct bridge *br = c->br;
	struct hist lat;

	if (final)
		fprintf(out, "ib2roce: final counters\n");
	else
		fprintf(out, "ib2roce: counters after %" PRIu64 " s (running)\n",
			(mono_ms() - c->start_ms) / 1000);
	ctl_nic_read(c);
	for (int s = 0; s < NSIDES; s++) {
		struct chan_stats st;
		uint64_t nic;

		side_stats_sum(br, s, false, &st);
		fprintf(out,
			"%s %s rx_pkts=%" PRIu64 " rx_bytes=%" PRIu64 " fwd_pkts=%" PRIu64
			" tx_pkts=%" PRIu64 " tx_bytes=%" PRIu64 " drops=%" PRIu64
			" rx_starved=%" PRIu64 " backlog_max=%" PRIu64 " pgm_pkts=%" PRIu64
			" pgm_not_pgm=%" PRIu64 " pgm_malformed=%" PRIu64 " pgm_bad_csum=%" PRIu64
			" standby=%" PRIu64 " tx_stuck=%" PRIu64,
			side_name[s], br->sd[s].dev, st.rx_pkts, st.rx_bytes, st.fwd_pkts,
			st.tx_pkts, st.tx_bytes, chan_stats_drops(&st), st.rx_starved,
			st.backlog_max, st.pgm_pkts, st.pgm_not_pgm, st.pgm_malformed,
			st.pgm_bad_csum, st.standby, st.tx_stuck);
		if (nic_ctr_get(&c->nic[s], false, &nic))
			fprintf(out, " nic_rx_dropped=%" PRIu64, nic);
		else
			fprintf(out, " nic_rx_dropped=-");
		for (int r = 0; r < DROP_NREASONS; r++)
			if (st.drops[r])
				fprintf(out, " drop_%s=%" PRIu64, drop_reason_name[r], st.drops[r]);
		fprintf(out, "\n");
	}
	memset(&lat, 0, sizeof(lat));
	for (uint32_t i = 0; i < br->nworkers; i++) {
		const struct hist *h = &br->workers[i].lat;

		lat.count += h->count;
		lat.sum += h->sum;
		if (h->max > lat.max)
			lat.max = h->max;
		for (uint32_t b = 0; b < HIST_BUCKETS; b++)
			lat.b[b] += h->b[b];
	}
	fprintf(out,
		"latency_ns p50=%" PRIu64 " p90=%" PRIu64 " p99=%" PRIu64 " p99.9=%" PRIu64
		" p99.99=%" PRIu64 " max=%" PRIu64 " samples=%" PRIu64 "\n",
		hist_quantile(&lat, 0.5), hist_quantile(&lat, 0.9), hist_quantile(&lat, 0.99),
		hist_quantile(&lat, 0.999), hist_quantile(&lat, 0.9999), lat.max, lat.count);
	fprintf(out, "senders=%zu\n", sender_table_count(br->senders));
	if (sender_table_untracked(br->senders))
		fprintf(out, "senders_untracked=%" PRIu64 "\n",
			sender_table_untracked(br->senders));
	show_tsi(c, NULL, out);
	if (atomic_load(&br->left_groups))
		fprintf(out, "groups_left count=%u ib_to_roce=%" PRIu64 " roce_to_ib=%" PRIu64 "\n",
			atomic_load(&br->left_groups), atomic_load(&br->left_fwd_pkts[SIDE_IB]),
			atomic_load(&br->left_fwd_pkts[SIDE_ROCE]));
	for (uint32_t i = 0; i < br->ngroups; i++) {
		struct group *g = br->groups[i];

		fprintf(out,
			"group %s ib_to_roce=%" PRIu64 " roce_to_ib=%" PRIu64 " ib=%s roce=%s\n",
			g->spec, g->fwd_pkts[SIDE_IB], g->fwd_pkts[SIDE_ROCE],
			g->js[SIDE_IB].state == JOIN_DONE ? "joined" : "not-joined",
			g->js[SIDE_ROCE].state == JOIN_DONE ? "joined" : "not-joined");
	}
	fflush(out);
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

static void jw_null(struct jw *j, const char *key)
{
	jw_key(j, key);
	fputs("null", j->f);
}

static void jw_string(struct jw *j, const char *key, const char *v)
{
	jw_key(j, key);
	jw_str(j->f, v);
}

static void json_sides(struct jw *j, struct ctl *c)
{
	struct bridge *br = c->br;

	ctl_nic_read(c);
	jw_open(j, "sides", '[');
	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];
		struct chan_stats st;
		uint64_t nic;

		side_stats_sum(br, s, false, &st);
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
		jw_u64(j, "standby", st.standby);
		jw_u64(j, "tx_pkts", st.tx_pkts);
		jw_u64(j, "tx_bytes", st.tx_bytes);
		jw_u64(j, "drops", chan_stats_drops(&st));
		/* null: the port has no hw_counters/out_of_buffer (unknown, not 0). */
		if (nic_ctr_get(&c->nic[s], false, &nic))
			jw_u64(j, "nic_rx_dropped", nic);
		else
			jw_null(j, "nic_rx_dropped");
		jw_u64(j, "rx_starved", st.rx_starved);
		jw_u64(j, "backlog", st.backlog);
		jw_u64(j, "backlog_max", st.backlog_max);
		jw_u64(j, "handoff_out", st.handoff_out);
		jw_u64(j, "pgm_pkts", st.pgm_pkts);
		jw_u64(j, "pgm_not_pgm", st.pgm_not_pgm);
		jw_u64(j, "pgm_malformed", st.pgm_malformed);
		jw_u64(j, "pgm_bad_csum", st.pgm_bad_csum);
		jw_u64(j, "tx_stuck", st.tx_stuck);
		jw_u64(j, "tx_stuck_channels", side_tx_stuck(br, s));
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
	jw_u64(j, "qkey", g->qkey[s]);
	jw_close(j, '}');
}

/* The HA partitions and roles (control/ha.c). */
static void json_ha(struct jw *j, struct ctl *c)
{
	uint64_t now = mono_ms();

	jw_open(j, "ha", '{');
	if (ha_peer(c->ha))
		jw_string(j, "peer_control", ha_peer(c->ha));
	else
		jw_null(j, "peer_control");
	jw_open(j, "partitions", '[');
	for (uint32_t i = 0; i < ha_nparts(c->ha); i++) {
		const struct ha_part *p = ha_part_get(c->ha, i);

		jw_open(j, NULL, '{');
		jw_string(j, "name", p->name);
		jw_string(j, "role", p->standby ? "standby" : "active");
		/* Counted now: groups joined or left at run time since the last count. */
		jw_u64(j, "groups", ha_part_ngroups(c->ha, c, i));
		jw_i64(j, "since", p->since_wall);
		jw_u64(j, "since_s", (now - p->since_ms) / 1000);
		jw_u64(j, "transitions", p->transitions);
		jw_string(j, "reason", p->reason);
		jw_close(j, '}');
	}
	jw_close(j, ']');
	jw_close(j, '}');
}
static void json_groups(struct jw *j, struct bridge *br)
{
	jw_open(j, "groups", '[');
	for (uint32_t i = 0; i < br->ngroups; i++) {
		const struct group *g = br->groups[i];
		char a[INET6_ADDRSTRLEN];

		/* The RoCE group: IPv4, or the IPv6 address (issue 25). */
		if (g->roce_v6)
			inet_ntop(AF_INET6, g->mgid[SIDE_ROCE].raw, a, sizeof(a));
		else
			ipv4_str(g->addr, a, sizeof(a));
		jw_open(j, NULL, '{');
		jw_string(j, "group", g->spec);
		jw_string(j, "addr", a);
		jw_string(j, "family", g->roce_v6 ? "ipv6" : "ipv4");
		jw_bool(j, "ib_native", g->ib_native);
		jw_u64(j, "port", g->port);
		jw_string(j, "dir", group_dir_name[g->dir]);
		jw_u64(j, "pair", g->pair);
		jw_u64(j, "weight", g->weight);
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
			uint64_t stuck_ns;

			chan_view(ch, false, &st);
			jw_open(j, NULL, '{');
			jw_string(j, "side", side_name[s]);
			jw_u64(j, "index", ch->index);
			jw_u64(j, "qpn", ch->qpn);
			jw_u64(j, "worker", ch->w ? ch->w->id : 0);
			jw_u64(j, "groups", ch->ngroups);
			jw_u64(j, "rq_posted", CMM_LOAD_SHARED(ch->rq->posted));
			jw_u64(j, "rq_depth", ch->rq->depth);
			jw_bool(j, "srq", ch->rq->srq != NULL);
			jw_u64(j, "sq_outstanding", chan_sq_outstanding(ch));
			jw_u64(j, "sq_depth", ch->sq_depth);
			jw_u64(j, "backlog", st.backlog);
			jw_u64(j, "rx_pkts", st.rx_pkts);
			jw_u64(j, "fwd_pkts", st.fwd_pkts);
			jw_u64(j, "tx_pkts", st.tx_pkts);
			jw_u64(j, "drops", chan_stats_drops(&st));
			jw_bool(j, "broken", CMM_LOAD_SHARED(ch->broken));
			jw_u64(j, "tx_stuck", st.tx_stuck);
			/* ms since its queue was found full without completions; null: moves.
			 * Read once: the worker may clear it between two reads. */
			stuck_ns = chan_tx_stuck_ns(ch);
			if (stuck_ns)
				jw_u64(j, "tx_stuck_ms", sub0(mono_ms(), stuck_ns / 1000000));
			else
				jw_null(j, "tx_stuck_ms");
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
		jw_u64(j, "groups", worker_groups(br, w));
		jw_u64(j, "weight", worker_weight(br, w));
		jw_u64(j, "cqs", NSIDES);
		jw_u64(j, "cq_polls",
		       CMM_LOAD_SHARED(w->ws[0].polls) + CMM_LOAD_SHARED(w->ws[1].polls));
		jw_u64(j, "cq_completions",
		       CMM_LOAD_SHARED(w->ws[0].wcs) + CMM_LOAD_SHARED(w->ws[1].wcs));
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

static void json_thread(struct jw *j, const char *key, const struct place_thread *t)
{
	jw_open(j, key, '{');
	jw_i64(j, "cpu", t->cpu);
	jw_i64(j, "core", t->core);
	jw_i64(j, "node", t->node);
	jw_bool(j, "isolated", t->isolated);
	jw_string(j, "why", t->why);
	jw_close(j, '}');
}

/* Where the threads run and why (host/placement.h); {} when not placed. */
static void json_placement(struct jw *j, const struct placement *pl)
{
	jw_open(j, "placement", '{');
	if (pl) {
		jw_string(j, "topology", pl->topo);
		jw_string(j, "allowed_cpus", pl->allowed);
		jw_string(j, "isolated_cpus", pl->isolated);
		jw_string(j, "ib_nic", pl->nic[SIDE_IB]);
		jw_string(j, "roce_nic", pl->nic[SIDE_ROCE]);
		jw_i64(j, "node", pl->node);
		jw_string(j, "node_why", pl->node_why);
		jw_i64(j, "rt_priority", pl->rt_prio);
		json_thread(j, "control", &pl->control);
		jw_open(j, "workers", '[');
		for (uint32_t i = 0; i < pl->nworkers; i++)
			json_thread(j, NULL, &pl->w[i]);
		jw_close(j, ']');
		jw_open(j, "idle", '[');
		for (uint32_t i = 0; i < pl->nidle; i++)
			jw_string(j, NULL, pl->idle[i]);
		jw_close(j, ']');
		jw_open(j, "warnings", '[');
		for (uint32_t i = 0; i < pl->nwarn; i++)
			jw_string(j, NULL, pl->warn[i]);
		jw_close(j, ']');
	}
	jw_close(j, '}');
}

struct pgm_gap_sum {
	uint64_t gaps, missed, repairs;
};

static int gap_add(const struct pgm_stream *st, void *arg)
{
	struct pgm_gap_sum *gs = arg;
	struct pgm_stream_stats ss;

	pgm_stream_snapshot(st, &ss);
	gs->gaps += ss.gaps;
	gs->missed += ss.missed;
	gs->repairs += ss.repairs;
	return 0;
}

/* The live PGM streams' gap counts into *gs, and the counters c->pgm_gaps_reported and
 * c->pgm_missed_reported updated: the aged-out streams' counts plus the live ones'; a
 * stream read while it is removed could count twice, then once: never report lower.
 * The metrics and stats --json report the same counters. Control thread. */
static void pgm_totals(struct ctl *c, struct pgm_gap_sum *gs)
{
	struct bridge *br = c->br;
	struct pgm_stream_table_info ti = {0};
	uint64_t g, m;

	*gs = (struct pgm_gap_sum){0};
	if (br->pgm) {
		pgm_stream_table_for_each(br->pgm, gap_add, gs);
		pgm_stream_table_info(br->pgm, &ti);
	}
	g = ti.gaps_retired + gs->gaps;
	m = ti.missed_retired + gs->missed;
	if (g > c->pgm_gaps_reported)
		c->pgm_gaps_reported = g;
	if (m > c->pgm_missed_reported)
		c->pgm_missed_reported = m;
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
	jw_u64(&j, "ctl_stalls", c->stalls);
	jw_u64(&j, "ctl_stall_max_ms", c->stall_max_ms);
	jw_u64(&j, "ctl_stall_last_ms", c->stall_last_ms);
	jw_u64(&j, "log_dropped", log_dropped());
	jw_u64(&j, "mld_refused", joins_mld_refused());
	jw_u64(&j, "console_tty_dropped", console_tty_dropped(c->con));
	jw_open(&j, "reloads", '{');
	for (int k = 0; k < CTL_RELOAD_NOUTCOMES; k++)
		jw_u64(&j, ctl_reload_outcome_name[k], c->reloads[k]);
	jw_close(&j, '}');
	{
		struct pgm_gap_sum gs;

		pgm_totals(c, &gs);
		jw_u64(&j, "pgm_gaps_total", c->pgm_gaps_reported);
		jw_u64(&j, "pgm_missed_sqns_total", c->pgm_missed_reported);
	}
	{
		struct health hl;

		jw_bool(&j, "healthy", health_check(c, mono_ms(), &hl));
		jw_bool(&j, "degraded", hl.degraded);
		jw_string(&j, "health_level", health_level_name[hl.level]);
		jw_open(&j, "health", '{');
		for (int k = 0; k < HEALTH_NCONDS; k++)
			jw_string(&j, health_cond_name[k], hl.why[k]);
		jw_close(&j, '}');
	}
	jw_string(&j, "build", version_line);
	json_sides(&j, c);
	json_ha(&j, c);
	json_groups(&j, br);
	json_channels(&j, br);
	json_workers(&j, br, h);
	json_placement(&j, c->place);
	{
		struct capture_counts cc;

		capture_counts_get(c->cap, &cc);
		jw_open(&j, "capture", '{');
		jw_bool(&j, "active", cc.active);
		jw_bool(&j, "starting", cc.starting);
		jw_string(&j, "stop_reason", cc.stop_reason);
		jw_u64(&j, "written", cc.written);
		jw_u64(&j, "dropped", cc.dropped);
		jw_u64(&j, "bytes", cc.bytes);
		jw_close(&j, '}');
	}
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
	jw_u64(&j, "senders_untracked", sender_table_untracked(br->senders));
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
	uint64_t rx_pkts, rx_bytes, fwd_pkts, standby, tx_pkts, tx_bytes, rx_starved, backlog,
		port_up, port_events, rejoins, broken, tx_stuck, tx_stuck_chans;
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
	{"ib2roce_standby_packets_total", "counter",
	 "Packets received on the side for a partition standby here (not forwarded, not drops).",
	 offsetof(struct side_vals, standby)},
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
	{"ib2roce_tx_stuck_total", "counter",
	 "Times a channel's send queue was found full with no send completion for 1 s.",
	 offsetof(struct side_vals, tx_stuck)},
	{"ib2roce_tx_stuck_channels", "gauge",
	 "Channels whose send queue is stuck now (full, no send completion for 1 s or more).",
	 offsetof(struct side_vals, tx_stuck_chans)},
};

static void prom_sides(FILE *f, struct bridge *br)
{
	struct chan_stats st[NSIDES];
	struct side_vals v[NSIDES];

	for (int s = 0; s < NSIDES; s++) {
		side_stats_sum(br, s, false, &st[s]);
		v[s] = (struct side_vals){
			.rx_pkts = st[s].rx_pkts,
			.rx_bytes = st[s].rx_bytes,
			.fwd_pkts = st[s].fwd_pkts,
			.standby = st[s].standby,
			.tx_pkts = st[s].tx_pkts,
			.tx_bytes = st[s].tx_bytes,
			.rx_starved = st[s].rx_starved,
			.backlog = st[s].backlog,
			.port_up = br->sd[s].state == SIDE_UP,
			.port_events = br->sd[s].port_events,
			.rejoins = br->sd[s].rejoins,
			.broken = side_broken(br, s),
			.tx_stuck = st[s].tx_stuck,
			.tx_stuck_chans = side_tx_stuck(br, s),
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

/* The NIC's receive drops; a side whose port has no such counter has no sample. */
static void prom_nic(FILE *f, struct ctl *c)
{
	uint64_t v;

	ctl_nic_read(c);
	prom_head(f, "ib2roce_nic_rx_dropped_total", "counter",
		  "Packets the side's NIC dropped for lack of a posted receive (hw_counters/"
		  "out_of_buffer) since the bridge started.");
	for (int s = 0; s < NSIDES; s++) {
		if (!nic_ctr_get(&c->nic[s], false, &v))
			continue;
		prom_side(f, "ib2roce_nic_rx_dropped_total", &c->br->sd[s]);
		fprintf(f, "} %" PRIu64 "\n", v);
	}
}

static void prom_groups(FILE *f, struct ctl *c)
{
	struct bridge *br = c->br;
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
	/* The totals, whatever metrics_groups says: 16 000 groups make 96 000 series of
	 * their own, more than many a Prometheus wants from one target. */
	prom_head(f, "ib2roce_groups", "gauge", "Groups bridged.");
	fprintf(f, "ib2roce_groups %u\n", br->ngroups);
	prom_head(f, "ib2roce_groups_joined", "gauge", "Groups joined on the side.");
	for (int s = 0; s < NSIDES; s++) {
		uint32_t n = 0;

		for (uint32_t i = 0; i < br->ngroups; i++)
			n += group_joined(br->groups[i], s) ? 1 : 0;
		fprintf(f, "ib2roce_groups_joined{side=\"%s\"} %u\n", side_name[s], n);
	}
	if (!br->ngroups || !atomic_load(&c->metrics_groups))
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

/*
 * The histogram's upper bounds in nanoseconds (le, printed in seconds). A sample is
 * counted under le when its bucket of the engine's histogram (6.25% wide, stats.h)
 * ends at or below le, so a bound undercounts by at most one bucket's width.
 */
static const uint64_t lat_le_ns[] = {
	250,   500,    1000,   2000,   5000,	10000,	  20000,
	50000, 100000, 200000, 500000, 1000000, 10000000, 100000000,
};

static void prom_latency(FILE *f, uint32_t worker, const struct hist *h)
{
	uint64_t cum = 0;
	uint32_t b = 0;

	for (size_t i = 0; i < sizeof(lat_le_ns) / sizeof(lat_le_ns[0]); i++) {
		/* Bucket b holds values below hist_bucket_low(b + 1). */
		while (b + 1 < HIST_BUCKETS && hist_bucket_low(b + 1) - 1 <= lat_le_ns[i])
			cum += h->b[b++];
		fprintf(f,
			"ib2roce_worker_latency_seconds_bucket{worker=\"%u\",le=\"%g\"} %" PRIu64
			"\n",
			worker, (double)lat_le_ns[i] / 1e9, cum);
	}
	fprintf(f, "ib2roce_worker_latency_seconds_bucket{worker=\"%u\",le=\"+Inf\"} %" PRIu64 "\n",
		worker, h->count);
	fprintf(f, "ib2roce_worker_latency_seconds_sum{worker=\"%u\"} %.9f\n", worker,
		(double)h->sum / 1e9);
	fprintf(f, "ib2roce_worker_latency_seconds_count{worker=\"%u\"} %" PRIu64 "\n", worker,
		h->count);
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
	prom_head(f, "ib2roce_worker_latency_seconds", "histogram",
		  "Poll-to-post latency of forwarded packets since start, in seconds.");
	for (uint32_t i = 0; i < br->nworkers; i++)
		prom_latency(f, br->workers[i].id, &h[i]);
	prom_head(f, "ib2roce_worker_latency_max_seconds", "gauge",
		  "Highest poll-to-post latency since start, in seconds.");
	for (uint32_t i = 0; i < br->nworkers; i++)
		fprintf(f, "ib2roce_worker_latency_max_seconds{worker=\"%u\"} %.9f\n",
			br->workers[i].id, (double)h[i].max / 1e9);
	free(h);
}

/* PGM inspection per side, and the gaps of the streams tracked now. */
static void prom_pgm(FILE *f, struct ctl *c)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} pm[] = {
		{"ib2roce_pgm_packets_total", "Well-formed PGM packets inspected on the side.",
		 offsetof(struct chan_stats, pgm_pkts)},
		{"ib2roce_pgm_not_pgm_total",
		 "Datagrams inspected on the side that are not PGM (other UDP traffic).",
		 offsetof(struct chan_stats, pgm_not_pgm)},
		{"ib2roce_pgm_malformed_total",
		 "Datagrams shaped like PGM whose header or options are invalid.",
		 offsetof(struct chan_stats, pgm_malformed)},
		{"ib2roce_pgm_bad_checksum_total", "PGM packets with a wrong checksum.",
		 offsetof(struct chan_stats, pgm_bad_csum)},
	};
	struct bridge *br = c->br;
	struct pgm_gap_sum gs = {0};
	struct chan_stats st[NSIDES];

	for (int s = 0; s < NSIDES; s++)
		side_stats_sum(br, s, false, &st[s]);
	for (size_t m = 0; m < sizeof(pm) / sizeof(pm[0]); m++) {
		prom_head(f, pm[m].name, "counter", pm[m].help);
		for (int s = 0; s < NSIDES; s++) {
			uint64_t x;

			memcpy(&x, (const char *)&st[s] + pm[m].off, sizeof(x));
			prom_side(f, pm[m].name, &br->sd[s]);
			fprintf(f, "} %" PRIu64 "\n", x);
		}
	}
	pgm_totals(c, &gs);
	{
		prom_head(f, "ib2roce_pgm_gaps_total", "counter",
			  "PGM data sequence gaps since the start, every stream (also aged-out "
			  "ones).");
		fprintf(f, "ib2roce_pgm_gaps_total %" PRIu64 "\n", c->pgm_gaps_reported);
		prom_head(f, "ib2roce_pgm_missed_sqns_total", "counter",
			  "PGM sequence numbers skipped by those gaps since the start.");
		fprintf(f, "ib2roce_pgm_missed_sqns_total %" PRIu64 "\n", c->pgm_missed_reported);
	}
	prom_head(f, "ib2roce_pgm_stream_gaps", "gauge",
		  "Sequence gaps of the PGM streams tracked now (streams age out: not a counter).");
	fprintf(f, "ib2roce_pgm_stream_gaps %" PRIu64 "\n", gs.gaps);
	prom_head(f, "ib2roce_pgm_stream_missed_sqns", "gauge",
		  "Sequence numbers skipped by those gaps.");
	fprintf(f, "ib2roce_pgm_stream_missed_sqns %" PRIu64 "\n", gs.missed);
	prom_head(f, "ib2roce_pgm_stream_repairs", "gauge",
		  "RDATA that filled a gap, over the PGM streams tracked now.");
	fprintf(f, "ib2roce_pgm_stream_repairs %" PRIu64 "\n", gs.repairs);
}

/*
 * The HA role of each partition (control/ha.c): alert on changes of these. A partition
 * without groups (the implicit "default" of a pair whose groups are all in named
 * partitions) forwards nothing and has no role: no ib2roce_role sample, so that the sum
 * over a pair counts only partitions that carry traffic (docs/operations.md).
 */
static void prom_ha(FILE *f, struct ctl *c)
{
	prom_head(f, "ib2roce_peer_configured", "gauge",
		  "1 when the bridge has a peer (--ha-peer-control or --peer): drops for the "
		  "reasons loop and peer_bridge are then expected.");
	fprintf(f, "ib2roce_peer_configured %d\n",
		ha_peer(c->ha) || c->br->cfg.npeers || c->br->cfg.npeers6);
	prom_head(f, "ib2roce_role", "gauge",
		  "HA role of the partition on this bridge: 1 active, 0 standby "
		  "(partitions with groups only).");
	for (uint32_t i = 0; i < ha_nparts(c->ha); i++) {
		if (!ha_part_ngroups(c->ha, c, i))
			continue;
		fprintf(f, "ib2roce_role{partition=\"");
		prom_value(f, ha_part_get(c->ha, i)->name);
		fprintf(f, "\"} %d\n", !ha_part_get(c->ha, i)->standby);
	}
	hanet_prom(ha_net(c->ha), f);
	prom_head(f, "ib2roce_role_transitions_total", "counter",
		  "HA role changes of the partition since the start.");
	for (uint32_t i = 0; i < ha_nparts(c->ha); i++) {
		fprintf(f, "ib2roce_role_transitions_total{partition=\"");
		prom_value(f, ha_part_get(c->ha, i)->name);
		fprintf(f, "\"} %" PRIu64 "\n", ha_part_get(c->ha, i)->transitions);
	}
}

/* The control plane's own counters: what the runbooks (docs/operations.md) alert on. */
static void prom_control(FILE *f, struct ctl *c)
{
	struct capture_counts cc;

	prom_head(f, "ib2roce_ctl_stalls_total", "counter",
		  "Stalls of the control thread: more than 1 s between two iterations of its "
		  "loop.");
	fprintf(f, "ib2roce_ctl_stalls_total %" PRIu64 "\n", c->stalls);
	prom_head(f, "ib2roce_ctl_stall_max_seconds", "gauge",
		  "The longest control-thread stall since the start, seconds (0: none).");
	fprintf(f, "ib2roce_ctl_stall_max_seconds %.3f\n", (double)c->stall_max_ms / 1000.0);
	prom_head(f, "ib2roce_log_dropped_total", "counter",
		  "Log messages dropped because the log output was blocked or gone.");
	fprintf(f, "ib2roce_log_dropped_total %" PRIu64 "\n", log_dropped());
	prom_head(f, "ib2roce_mld_refused_total", "counter",
		  "MLD memberships of IPv6 RoCE groups the kernel refused (IPV6_JOIN_GROUP); the "
		  "groups are forwarded anyway.");
	fprintf(f, "ib2roce_mld_refused_total %" PRIu64 "\n", joins_mld_refused());
	prom_head(f, "ib2roce_console_tty_dropped_total", "counter",
		  "Replies of the terminal console dropped: standard output did not take them.");
	fprintf(f, "ib2roce_console_tty_dropped_total %" PRIu64 "\n", console_tty_dropped(c->con));
	capture_counts_get(c->cap, &cc);
	prom_head(f, "ib2roce_capture_dropped_total", "counter",
		  "Packets not recorded by packet captures (a worker's capture ring was full); "
		  "the packets themselves were forwarded or dropped as usual.");
	fprintf(f, "ib2roce_capture_dropped_total %" PRIu64 "\n", cc.dropped_total);
	prom_head(f, "ib2roce_metrics_refused_total", "counter",
		  "Connections to --metrics-port refused: the client is not in the allow-list.");
	fprintf(f, "ib2roce_metrics_refused_total %" PRIu64 "\n",
		refused_count ? refused_count(c) : 0);
	prom_head(f, "ib2roce_reloads_total", "counter",
		  "Configuration reloads by outcome: ok, refused (nothing changed), failed "
		  "(some changes not applied).");
	for (int k = 0; k < CTL_RELOAD_NOUTCOMES; k++)
		fprintf(f, "ib2roce_reloads_total{outcome=\"%s\"} %" PRIu64 "\n",
			ctl_reload_outcome_name[k], c->reloads[k]);
}

static void prom_write(FILE *f, struct ctl *c)
{
	struct bridge *br = c->br;
	uint64_t now = mono_ms();
	struct counts n;
	struct health h;

	counts_get(br, &n);
	health_check(c, now, &h);
	prom_head(f, "ib2roce_up", "gauge",
		  "1 while the bridge runs, 0 in the last file written at a clean exit.");
	fprintf(f, "ib2roce_up %d\n", !c->metrics_final);
	prom_head(f, "ib2roce_build_info", "gauge", "Always 1; the labels name the build.");
	fprintf(f, "ib2roce_build_info{version=\"%s\",describe=\"", version_string);
	prom_value(f, version_describe);
	fputs("\"} 1\n", f);
	prom_head(f, "ib2roce_ready", "gauge",
		  "1 once the startup joins ended (all joined or the join timeout passed); never "
		  "goes back to 0: see ib2roce_healthy.");
	fprintf(f, "ib2roce_ready %d\n", c->ready);
	prom_head(f, "ib2roce_healthy", "gauge",
		  "1 while no FAILED health condition fails (docs/metrics.md), 0 otherwise: "
		  "what fails over.");
	fprintf(f, "ib2roce_healthy %d\n", h.ok && !c->metrics_final);
	prom_head(f, "ib2roce_degraded", "gauge",
		  "1 while a DEGRADED health condition fails (page a person, no failover).");
	fprintf(f, "ib2roce_degraded %d\n", h.degraded);
	prom_head(f, "ib2roce_health_condition", "gauge",
		  "1 while the health condition fails, 0 while it holds; level: what failing "
		  "means (failed: fail over, degraded: page).");
	for (int k = 0; k < HEALTH_NCONDS; k++)
		fprintf(f, "ib2roce_health_condition{condition=\"%s\",level=\"%s\"} %d\n",
			health_cond_name[k], health_level_name[health_cond_level[k]],
			!!(h.failed & (1u << k)));
	prom_head(f, "ib2roce_health_condition_ok", "gauge",
		  "1 while the health condition holds, 0 when it fails.");
	for (int k = 0; k < HEALTH_NCONDS; k++)
		fprintf(f, "ib2roce_health_condition_ok{condition=\"%s\"} %d\n",
			health_cond_name[k], !(h.failed & (1u << k)));
	prom_control(f, c);
	prom_head(f, "ib2roce_uptime_seconds", "gauge", "Seconds since the bridge started.");
	fprintf(f, "ib2roce_uptime_seconds %" PRIu64 "\n", sub0(now, c->start_ms) / 1000);
	prom_head(f, "ib2roce_start_time_seconds", "gauge",
		  "Start time of the bridge since the Unix epoch, in seconds.");
	fprintf(f, "ib2roce_start_time_seconds %" PRId64 "\n", (int64_t)c->start_wall);
	prom_sides(f, br);
	prom_ha(f, c);
	prom_nic(f, c);
	prom_groups(f, c);
	prom_pgm(f, c);
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
	prom_head(f, "ib2roce_senders_untracked_total", "counter",
		  "Packets forwarded whose sender got no record (sender table full).");
	fprintf(f, "ib2roce_senders_untracked_total %" PRIu64 "\n",
		sender_table_untracked(br->senders));
	prom_head(f, "ib2roce_pgm_streams", "gauge", "PGM streams tracked.");
	fprintf(f, "ib2roce_pgm_streams %" PRIu64 "\n", n.streams);
}

void report_prometheus(struct ctl *c, FILE *out)
{
	prom_write(out, c);
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
	/*
	 * No fsync: rename() alone makes readers see the old file or the whole new one.
	 * fsync would only matter after a machine crash, when stale metrics are worthless
	 * anyway, and it can block the control thread (joins, console, watchdog) for as
	 * long as the disk is busy.
	 */
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

/* The metrics file: every statint seconds (10 without statistics), --metrics-file. */
static uint64_t metrics_period(void *arg)
{
	struct ctl *c = arg;
	int64_t statint = atomic_load(&c->statint);

	return c->metrics_path ? (uint64_t)(statint > 0 ? statint : 10) * 1000 : 0;
}

static void metrics_timer(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	char err[256];

	if (metrics_write(c, c->metrics_path, err, sizeof(err)))
		log_warn("%s", err);
	c->last_metrics_ms = now;
}

int report_init(struct ctl *c)
{
	struct loop_timer *t = loop_every(10000, metrics_timer, c, "metrics");

	if (!t)
		return -ENOMEM;
	loop_timer_follow(t, metrics_period);
	loop_timer_what(t, c->metrics_path ? c->metrics_path : "the metrics file");
	loop_timer_soon(t);
	return 0;
}
