// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The control thread: joins every group on both sides through rdma_cm (with retries and
 * back-off), creates the address handles and attaches the channels, publishes a group
 * to the workers once both sides are joined, handles async and rdma_cm events, signals
 * and timers, runs the data path itself with --workers 0 (event-driven through the
 * completion channels), and on shutdown leaves every group and prints final counters.
 *
 * The control thread is a registered QSBR thread: online while it works, offline while
 * it waits in epoll (so grace periods, and with them call_rcu callbacks, complete).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/ib.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include "bridge.h"
#include "ctl.h"
#include "fwd.h"
#include "log.h"
#include "pool.h"
#include "senders.h"
#include "setup.h"
#include "stream.h"

#define JOIN_RETRY_MIN_MS 500
#define JOIN_RETRY_MAX_MS 30000
#define TICK_MS		  250

enum ev_kind {
	EV_SIGNAL,
	EV_TIMER,
	EV_CM,
	EV_ASYNC,
	EV_COMP,
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *join_ctx(struct group *g, int side)
{
	return (void *)((uintptr_t)g | (uintptr_t)side);
}

static struct group *join_group(void *ctx, int *side)
{
	*side = (int)((uintptr_t)ctx & 1);
	return (struct group *)((uintptr_t)ctx & ~(uintptr_t)1);
}

/* The address a side joins: AF_IB with the group's IB MGID, AF_INET on RoCE. */
static struct sockaddr *join_addr(struct ctl *c, struct group *g, int s,
				  struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (s == SIDE_IB) {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)ss;

		sib->sib_family = AF_IB;
		sib->sib_pkey = htons(c->br->sd[SIDE_IB].pkey);
		memcpy(&sib->sib_addr, g->mgid[SIDE_IB].raw, 16);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = g->addr;
	}
	return (struct sockaddr *)ss;
}

static void group_update_ready(struct group *g)
{
	uint32_t ready = 0;

	for (int s = 0; s < NSIDES; s++)
		if (group_dir_rx(g->dir, s) && g->js[s].state == JOIN_DONE &&
		    g->js[!s].state == JOIN_DONE)
			ready |= 1u << s;
	/* Pairs with the acquire load in rx_classify: the AHs are visible first. */
	atomic_store_explicit(&g->ready, ready, memory_order_release);
}

static void join_issue(struct ctl *c, struct group *g, int s)
{
	struct side_ctx *sd = &c->br->sd[s];
	struct rdma_cm_join_mc_attr_ex ja;
	struct sockaddr_storage ss;

	memset(&ja, 0, sizeof(ja));
	ja.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ja.addr = join_addr(c, g, s, &ss);
	ja.join_flags = group_dir_rx(g->dir, s) ? RDMA_MC_JOIN_FLAG_FULLMEMBER
						: RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	g->js[s].tries++;
	if (rdma_join_multicast_ex(sd->cm_id, &ja, join_ctx(g, s))) {
		uint64_t backoff = JOIN_RETRY_MIN_MS << (g->js[s].tries < 7 ? g->js[s].tries : 6);

		g->js[s].last_error = errno;
		g->js[s].state = JOIN_IDLE;
		g->js[s].next_try_ms =
			mono_ms() + (backoff > JOIN_RETRY_MAX_MS ? JOIN_RETRY_MAX_MS : backoff);
		log_warn("%s join of %s failed: %s; retrying", side_name[s], g->spec,
			 strerror(errno));
		return;
	}
	g->js[s].state = JOIN_PENDING;
}

struct ah_free {
	struct rcu_head rcu;
	struct ibv_ah *ah;
};

static void ah_free_rcu(struct rcu_head *h)
{
	struct ah_free *f = caa_container_of(h, struct ah_free, rcu);

	ibv_destroy_ah(f->ah);
	free(f);
}

/* Destroy an AH after every worker passed a quiescent state (it may still send with it). */
static void ah_retire(struct ibv_ah *ah)
{
	struct ah_free *f;

	if (!ah)
		return;
	f = malloc(sizeof(*f));
	if (!f) {
		/* Cannot defer: leak the AH rather than free it under a worker. */
		log_err("out of memory retiring an address handle");
		return;
	}
	f->ah = ah;
	urcu_qsbr_call_rcu(&f->rcu, ah_free_rcu);
}

/* Undo a side's join state (after an error, or to leave). */
static void join_drop(struct ctl *c, struct group *g, int s, bool leave)
{
	struct group_side *js = &g->js[s];
	struct side_ctx *sd = &c->br->sd[s];
	struct sockaddr_storage ss;

	if (js->attached) {
		ibv_detach_mcast(sd->chan[g->pair]->qp, &g->mgid[s], (uint16_t)js->mlid);
		js->attached = false;
		sd->chan[g->pair]->ngroups--;
	}
	atomic_store(&g->ah_out[s], NULL);
	group_update_ready(g);
	ah_retire(js->ah);
	js->ah = NULL;
	if (leave && js->state != JOIN_IDLE)
		rdma_leave_multicast(sd->cm_id, join_addr(c, g, s, &ss));
	js->state = JOIN_IDLE;
}

static void on_join(struct ctl *c, struct rdma_cm_event *ev)
{
	struct rdma_ud_param *ud = &ev->param.ud;
	struct ibv_ah_attr aa = ud->ah_attr;
	struct side_ctx *sd;
	struct group *g;
	int s;

	g = join_group((void *)ud->private_data, &s);
	sd = &c->br->sd[s];
	if (g->js[s].state != JOIN_PENDING)
		return;
	if (s == SIDE_IB)
		aa.grh.hop_limit = BR_IB_MARKER_HOP_LIMIT;
	if (g->tos_set)
		aa.grh.traffic_class = g->tos;
	if (!atomic_load(&c->hwrate))
		aa.static_rate = 0;
	g->js[s].ah = ibv_create_ah(sd->pd, &aa);
	if (!g->js[s].ah) {
		log_err("%s %s: ibv_create_ah: %s", side_name[s], g->spec, strerror(errno));
		g->js[s].last_error = errno;
		join_drop(c, g, s, true);
		g->js[s].next_try_ms = mono_ms() + JOIN_RETRY_MAX_MS;
		return;
	}
	g->js[s].mlid = aa.dlid;
	g->js[s].qkey = ud->qkey;
	g->js[s].tries = 0;
	/* The MGID the fabric uses (AF_IB: ours; AF_INET on RoCE: ::ffff:a.b.c.d). */
	if (memcmp(aa.grh.dgid.raw, g->mgid[s].raw, 16)) {
		char a[64], b[64];

		inet_ntop(AF_INET6, aa.grh.dgid.raw, a, sizeof(a));
		inet_ntop(AF_INET6, g->mgid[s].raw, b, sizeof(b));
		log_warn("%s %s: joined MGID %s, expected %s", side_name[s], g->spec, a, b);
	}
	if (group_dir_rx(g->dir, s)) {
		int r = ibv_attach_mcast(sd->chan[g->pair]->qp, &aa.grh.dgid, aa.dlid);

		if (r) {
			log_err("%s %s: ibv_attach_mcast: %s", side_name[s], g->spec, strerror(r));
			g->js[s].state = JOIN_DONE; /* so that join_drop leaves */
			join_drop(c, g, s, true);
			g->js[s].next_try_ms = mono_ms() + JOIN_RETRY_MAX_MS;
			return;
		}
		g->js[s].attached = true;
		sd->chan[g->pair]->ngroups++;
	}
	g->qkey_out[s] = ud->qkey;
	atomic_store_explicit(&g->ah_out[s], g->js[s].ah, memory_order_release);
	g->js[s].state = JOIN_DONE;
	group_update_ready(g);
	log_info("%s joined %s (mlid %#x)%s", side_name[s], g->spec, aa.dlid,
		 group_dir_rx(g->dir, s) ? "" : " send-only");
	if (g->ready)
		log_debug("forwarding %s", g->spec);
}

static void on_cm_event(struct ctl *c, int s)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(c->br->sd[s].cm_ch, &ev)) {
		switch (ev->event) {
		case RDMA_CM_EVENT_MULTICAST_JOIN:
			on_join(c, ev);
			break;
		case RDMA_CM_EVENT_MULTICAST_ERROR: {
			int gs;
			struct group *g = join_group((void *)ev->param.ud.private_data, &gs);

			log_warn("%s %s: multicast error %d (%s); joining again", side_name[gs],
				 g->spec, ev->status, strerror(-ev->status));
			g->js[gs].last_error = -ev->status;
			if (g->js[gs].state == JOIN_PENDING || g->js[gs].state == JOIN_DONE)
				g->js[gs].state = JOIN_DONE;
			join_drop(c, g, gs, true);
			g->js[gs].next_try_ms = mono_ms() + JOIN_RETRY_MIN_MS;
			break;
		}
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			log_err("%s device %s removed: stopping", side_name[s], c->br->sd[s].dev);
			c->stop = true;
			break;
		default:
			log_debug("%s rdma_cm event %s", side_name[s], rdma_event_str(ev->event));
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

static void on_async(struct ctl *c, int s)
{
	struct ibv_async_event ae;

	if (ibv_get_async_event(c->br->sd[s].ctx, &ae))
		return;
	switch (ae.event_type) {
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
		log_warn("%s %s port %d: %s", side_name[s], c->br->sd[s].dev, ae.element.port_num,
			 ibv_event_type_str(ae.event_type));
		break;
	case IBV_EVENT_DEVICE_FATAL:
		log_err("%s %s: %s: stopping", side_name[s], c->br->sd[s].dev,
			ibv_event_type_str(ae.event_type));
		c->stop = true;
		break;
	default:
		log_err("%s %s: %s", side_name[s], c->br->sd[s].dev,
			ibv_event_type_str(ae.event_type));
		break;
	}
	ibv_ack_async_event(&ae);
}

/* Retry joins whose back-off expired. */
static void joins_tick(struct ctl *c)
{
	uint64_t now = mono_ms();

	for (uint32_t i = 0; i < c->br->ngroups; i++) {
		struct group *g = c->br->groups[i];

		for (int s = 0; s < NSIDES; s++)
			if (g->js[s].state == JOIN_IDLE && now >= g->js[s].next_try_ms)
				join_issue(c, g, s);
	}
}

/* Sum of a side's channel counters (snapshots of the workers' counters). */
static void side_stats(struct bridge *br, int s, struct chan_stats *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t k = 0; k < br->sd[s].nchan; k++)
		chan_stats_add(t, &br->sd[s].chan[k]->st);
}

static void print_stats_line(struct ctl *c)
{
	struct chan_stats st[NSIDES];
	uint64_t now = mono_ms();
	double dt = (double)(now - c->last_stats_ms) / 1000.0;

	for (int s = 0; s < NSIDES; s++)
		side_stats(c->br, s, &st[s]);
	if (dt > 0)
		log_notice("IB rx %" PRIu64 " (%.0f pps) fwd %" PRIu64 " drop %" PRIu64
			   " | RoCE rx %" PRIu64 " (%.0f pps) fwd %" PRIu64 " drop %" PRIu64,
			   st[0].rx_pkts, (double)(st[0].rx_pkts - c->last_rx[0]) / dt,
			   st[0].fwd_pkts, chan_stats_drops(&st[0]), st[1].rx_pkts,
			   (double)(st[1].rx_pkts - c->last_rx[1]) / dt, st[1].fwd_pkts,
			   chan_stats_drops(&st[1]));
	c->last_rx[0] = st[0].rx_pkts;
	c->last_rx[1] = st[1].rx_pkts;
	c->last_stats_ms = now;
}

/*
 * One line per side of a PGM stream that saw packets on that side, in the format of
 * tests/pgm/pgmtool's "streams" (prefixed with "pgm side=IB|RoCE").
 */
static int print_pgm_stream(const struct pgm_stream *s, void *arg)
{
	FILE *out = arg;
	struct pgm_stream_stats st;

	pgm_stream_snapshot(s, &st);
	for (int side = 0; side < NSIDES; side++) {
		const struct pgm_stream_side_stats *sd = &st.side[side];

		if (!sd->first_ns)
			continue;
		fprintf(out,
			"pgm side=%s stream gsi=%02x%02x%02x%02x%02x%02x sport=%u dport=%u "
			"group=0x%08" PRIx64 " state=%s",
			side_name[side], st.key.gsi[0], st.key.gsi[1], st.key.gsi[2], st.key.gsi[3],
			st.key.gsi[4], st.key.gsi[5], st.key.sport, st.dport, st.key.group,
			pgm_stream_state_name(st.state));
		for (unsigned k = 0; k < PGM_COUNT_TYPES; k++)
			fprintf(out, " %s=%" PRIu64,
				pgm_stream_count_name((enum pgm_stream_count)k), sd->types[k]);
		fprintf(out,
			" gaps=%" PRIu64 " missed=%" PRIu64 " late=%" PRIu64 " repairs=%" PRIu64
			" dups=%" PRIu64 " rdata_dups=%" PRIu64 " syn=%" PRIu64 " fin=%" PRIu64
			" rst=%" PRIu64 " malformed=%" PRIu64 " bad_checksum=%" PRIu64,
			st.gaps, st.missed, st.late, st.repairs, st.dups, st.rdata_dups, st.syn,
			st.fin, st.rst, sd->malformed, sd->bad_checksum);
		if (st.have_data)
			fprintf(out, " odata_last=%u rx_lead=%u", st.odata_last, st.rx_lead);
		if (st.have_window)
			fprintf(out, " trail=%u lead=%u", st.trail, st.lead);
		fprintf(out, " loops=%" PRIu64 " opx_discard=%" PRIu64 "\n", sd->loops,
			sd->opx_discard);
	}
	return 0;
}

void ctl_print_final(struct ctl *c, FILE *out)
{
	struct bridge *br = c->br;
	struct hist lat;

	fprintf(out, "ib2roce: final counters\n");
	for (int s = 0; s < NSIDES; s++) {
		struct chan_stats st;

		side_stats(br, s, &st);
		fprintf(out,
			"%s %s rx_pkts=%" PRIu64 " rx_bytes=%" PRIu64 " fwd_pkts=%" PRIu64
			" tx_pkts=%" PRIu64 " tx_bytes=%" PRIu64 " drops=%" PRIu64
			" rx_starved=%" PRIu64 " backlog_max=%" PRIu64 " pgm_pkts=%" PRIu64
			" pgm_malformed=%" PRIu64 " pgm_bad_csum=%" PRIu64,
			side_name[s], br->sd[s].dev, st.rx_pkts, st.rx_bytes, st.fwd_pkts,
			st.tx_pkts, st.tx_bytes, chan_stats_drops(&st), st.rx_starved,
			st.backlog_max, st.pgm_pkts, st.pgm_malformed, st.pgm_bad_csum);
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
	pgm_stream_table_for_each(br->pgm, print_pgm_stream, out);
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

static int epoll_add(int ep, int fd, struct ev_tag *tag)
{
	struct epoll_event e = {.events = EPOLLIN, .data.ptr = tag};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

/* With --workers 0: drain a channel whose completion channel fired. */
static void on_comp(struct ctl *c, struct channel *ch)
{
	struct worker *w = &c->br->workers[0];
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(ch->cc, &cq, &ctx))
		return;
	ibv_ack_cq_events(cq, 1);
	ibv_req_notify_cq(cq, 0);
	while (chan_poll(w, ch))
		;
	chan_refill(w, ch);
	if (w->br->nworkers > 1)
		fwd_handoff_drain(w);
	w->passes++;
	atomic_store_explicit(&w->heartbeat, w->passes, memory_order_relaxed);
}

int ctl_init(struct ctl *c, struct bridge *br, char *err, size_t errlen)
{
	sigset_t ss;

	c->br = br;
	c->ep = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	c->sigfd = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);
	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->ep < 0 || c->sigfd < 0 || c->timerfd < 0) {
		snprintf(err, errlen, "epoll/signalfd/timerfd: %s", strerror(errno));
		return -errno;
	}
	{
		struct itimerspec its = {{0, TICK_MS * 1000000L}, {0, TICK_MS * 1000000L}};

		timerfd_settime(c->timerfd, 0, &its, NULL);
	}
	c->tag_sig = (struct ev_tag){.kind = EV_SIGNAL};
	c->tag_timer = (struct ev_tag){.kind = EV_TIMER};
	epoll_add(c->ep, c->sigfd, &c->tag_sig);
	epoll_add(c->ep, c->timerfd, &c->tag_timer);

	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];
		struct sockaddr_storage a;
		int r;

		sd->cm_ch = rdma_create_event_channel();
		if (!sd->cm_ch || rdma_create_id(sd->cm_ch, &sd->cm_id, NULL, RDMA_PS_UDP)) {
			snprintf(err, errlen, "%s: rdma_cm: %s", sd->dev, strerror(errno));
			return -errno;
		}
		memset(&a, 0, sizeof(a));
		if (s == SIDE_IB) {
			/* Bind to the port GID: no IPoIB address needed. */
			struct sockaddr_ib *sib = (struct sockaddr_ib *)&a;

			sib->sib_family = AF_IB;
			sib->sib_pkey = htons(sd->pkey);
			memcpy(&sib->sib_addr, sd->gid.raw, 16);
		} else {
			struct sockaddr_in *sin = (struct sockaddr_in *)&a;

			sin->sin_family = AF_INET;
			sin->sin_addr.s_addr = sd->ipv4;
		}
		r = rdma_bind_addr(sd->cm_id, (struct sockaddr *)&a);
		if (r) {
			snprintf(err, errlen, "%s: rdma_bind_addr: %s", sd->dev, strerror(errno));
			return -errno;
		}
		c->tag_cm[s] = (struct ev_tag){.kind = EV_CM, .side = s};
		c->tag_async[s] = (struct ev_tag){.kind = EV_ASYNC, .side = s};
		fcntl_nonblock(sd->cm_ch->fd);
		fcntl_nonblock(sd->ctx->async_fd);
		epoll_add(c->ep, sd->cm_ch->fd, &c->tag_cm[s]);
		epoll_add(c->ep, sd->ctx->async_fd, &c->tag_async[s]);
	}
	if (!br->cfg.nworkers) {
		uint32_t n = 0;

		c->tag_comp = calloc(2 * br->npairs, sizeof(*c->tag_comp));
		if (!c->tag_comp)
			return -ENOMEM;
		for (int s = 0; s < NSIDES; s++) {
			for (uint32_t k = 0; k < br->npairs; k++) {
				struct channel *ch = br->sd[s].chan[k];

				c->tag_comp[n] = (struct ev_tag){.kind = EV_COMP, .ch = ch};
				fcntl_nonblock(ch->cc->fd);
				ibv_req_notify_cq(ch->cq, 0);
				epoll_add(c->ep, ch->cc->fd, &c->tag_comp[n++]);
			}
		}
	}
	c->last_stats_ms = mono_ms();
	return 0;
}

void ctl_start_joins(struct ctl *c)
{
	for (uint32_t i = 0; i < c->br->ngroups; i++)
		for (int s = 0; s < NSIDES; s++)
			join_issue(c, c->br->groups[i], s);
}

static void on_signal(struct ctl *c)
{
	struct signalfd_siginfo si;

	while (read(c->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (c->stop) {
			log_warn("second %s: exiting now", strsignal((int)si.ssi_signo));
			_exit(1);
		}
		log_notice("%s: shutting down", strsignal((int)si.ssi_signo));
		c->stop = true;
	}
}

static void on_timer(struct ctl *c)
{
	uint64_t exp;
	uint64_t now = mono_ms();
	int64_t statint = atomic_load(&c->statint);

	while (read(c->timerfd, &exp, sizeof(exp)) == sizeof(exp))
		;
	joins_tick(c);
	/* A QP in the error state (flushed completions) no longer receives: say so once. */
	for (int s = 0; s < NSIDES; s++) {
		for (uint32_t k = 0; k < c->br->sd[s].nchan; k++) {
			struct channel *ch = c->br->sd[s].chan[k];

			if (__atomic_load_n(&ch->broken, __ATOMIC_RELAXED) && !ch->broken_reported) {
				ch->broken_reported = true;
				log_err("%s %s channel %u (QP %#x): queue pair in the error state, "
					"no longer forwarding; restart the bridge",
					side_name[s], c->br->sd[s].dev, k, ch->qpn);
			}
		}
	}
	if (!c->br->cfg.nworkers) {
		/* Event-driven: a channel whose refill found the pool empty gets no more
		 * completions until it has receives again: retry on every tick. */
		struct worker *w = &c->br->workers[0];

		for (uint32_t k = 0; k < w->nchan; k++)
			if (w->chan[k]->rq_posted < w->chan[k]->rq_depth)
				chan_refill(w, w->chan[k]);
	}
	if (statint > 0 && now - c->last_stats_ms >= (uint64_t)statint * 1000)
		print_stats_line(c);
	if (now - c->last_age_ms >= 1000) {
		sender_table_age(c->br->senders, now * 1000000ull,
				 (uint64_t)atomic_load(&c->sender_idle_s) * 1000000000ull);
		pgm_stream_table_age(c->br->pgm, now * 1000000ull,
				     (uint64_t)atomic_load(&c->pgm_idle_s) * 1000000000ull);
		c->last_age_ms = now;
	}
}

int ctl_run(struct ctl *c)
{
	struct epoll_event ev[16];

	while (!c->stop) {
		int n;

		urcu_qsbr_quiescent_state();
		urcu_qsbr_thread_offline();
		n = epoll_wait(c->ep, ev, 16, TICK_MS);
		urcu_qsbr_thread_online();
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			struct ev_tag *t = ev[i].data.ptr;

			switch (t->kind) {
			case EV_SIGNAL:
				on_signal(c);
				break;
			case EV_TIMER:
				on_timer(c);
				break;
			case EV_CM:
				on_cm_event(c, t->side);
				break;
			case EV_ASYNC:
				on_async(c, t->side);
				break;
			case EV_COMP:
				on_comp(c, t->ch);
				break;
			}
		}
	}
	return 0;
}

void ctl_leave_all(struct ctl *c)
{
	for (uint32_t i = 0; i < c->br->ngroups; i++)
		for (int s = 0; s < NSIDES; s++)
			join_drop(c, c->br->groups[i], s, true);
}

void ctl_fini(struct ctl *c)
{
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &c->br->sd[s];

		if (sd->cm_id)
			rdma_destroy_id(sd->cm_id);
		if (sd->cm_ch)
			rdma_destroy_event_channel(sd->cm_ch);
		sd->cm_id = NULL;
		sd->cm_ch = NULL;
	}
	free(c->tag_comp);
	if (c->ep >= 0)
		close(c->ep);
	if (c->sigfd >= 0)
		close(c->sigfd);
	if (c->timerfd >= 0)
		close(c->timerfd);
}
