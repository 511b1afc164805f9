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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/ib.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>

#include "bridge.h"
#include "console.h"
#include "ctl.h"
#include "fwd.h"
#include "log.h"
#include "loop.h"
#include "options.h"
#include "pool.h"
#include "senders.h"
#include "setup.h"
#include "stream.h"

#define JOIN_RETRY_MIN_MS 500
#define JOIN_RETRY_MAX_MS 30000

const char *const group_dir_name[3] = {"both", "in", "out"};

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

static void group_update_ready(struct bridge *br, struct group *g)
{
	uint32_t ready = 0;

	for (int s = 0; s < NSIDES; s++)
		if (group_dir_rx(g->dir, s) && g->js[s].state == JOIN_DONE &&
		    g->js[!s].state == JOIN_DONE)
			ready |= 1u << s;
	if (g->standby)
		ready |= GROUP_STANDBY;
	/* Pairs with the acquire load in rx_classify: the AHs are visible first. */
	atomic_store_explicit(&g->ready, ready, memory_order_release);
	bridge_flows_stale(br);
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
	int periods; /* grace periods still to wait */
};

static void ah_free_rcu(struct rcu_head *h)
{
	struct ah_free *f = caa_container_of(h, struct ah_free, rcu);

	if (--f->periods > 0) {
		urcu_qsbr_call_rcu(&f->rcu, ah_free_rcu);
		return;
	}
	ibv_destroy_ah(f->ah);
	free(f);
}

/*
 * Destroy an AH once no worker can still send with it. One grace period covers the
 * group table readers and the backlogs (a worker with a backlog skips its quiescent
 * state). A packet in a cross-worker hand-off ring also carries the AH, across the
 * producer's quiescent states: the consumer drains its rings once per pass, before its
 * own quiescent state, so an entry pushed before the first grace period ended is posted
 * (or dropped) before the third one ends. Three periods, then.
 */
static bool workers_gone; /* ctl_leave_all: no worker runs any more */

static void ah_retire(struct ibv_ah *ah)
{
	struct ah_free *f;

	if (!ah)
		return;
	if (workers_gone) {
		ibv_destroy_ah(ah);
		return;
	}
	f = malloc(sizeof(*f));
	if (!f) {
		/* Cannot defer: leak the AH rather than free it under a worker. */
		log_err("out of memory retiring an address handle");
		return;
	}
	f->ah = ah;
	f->periods = 3;
	urcu_qsbr_call_rcu(&f->rcu, ah_free_rcu);
}

/* Undo a side's join state (after an error, or to leave). */
static void join_drop(struct ctl *c, struct group *g, int s, bool leave)
{
	struct group_side *js = &g->js[s];
	struct side_ctx *sd = &c->br->sd[s];
	struct sockaddr_storage ss;
	bool joined = js->state != JOIN_IDLE;

	/* Forwarding stops first (ready bits), then the AH goes (see rx_classify). */
	js->state = JOIN_IDLE;
	group_update_ready(c->br, g);
	atomic_store(&g->ah_out[s], NULL);
	bridge_flows_stale(c->br);
	if (js->attached) {
		ibv_detach_mcast(g->out_chan[s]->qp, &g->mgid[s], (uint16_t)js->mlid);
		js->attached = false;
		g->out_chan[s]->ngroups--;
	}
	ah_retire(js->ah);
	js->ah = NULL;
	if (leave && joined && sd->cm_id)
		rdma_leave_multicast(sd->cm_id, join_addr(c, g, s, &ss));
}

/* Is g still one of our groups? (events may name a group removed meanwhile) */
static bool group_known(struct ctl *c, const struct group *g)
{
	for (uint32_t i = 0; i < c->br->ngroups; i++)
		if (c->br->groups[i] == g)
			return true;
	return false;
}

static void on_join(struct ctl *c, struct rdma_cm_event *ev)
{
	struct rdma_ud_param *ud = &ev->param.ud;
	struct ibv_ah_attr aa = ud->ah_attr;
	struct side_ctx *sd;
	struct group *g;
	int s;

	g = join_group((void *)ud->private_data, &s);
	if (!group_known(c, g))
		return; /* left at run time while the answer was on its way */
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
		int r = ibv_attach_mcast(g->out_chan[s]->qp, &aa.grh.dgid, aa.dlid);

		if (r) {
			log_err("%s %s: ibv_attach_mcast: %s", side_name[s], g->spec, strerror(r));
			g->js[s].state = JOIN_DONE; /* so that join_drop leaves */
			join_drop(c, g, s, true);
			g->js[s].next_try_ms = mono_ms() + JOIN_RETRY_MAX_MS;
			return;
		}
		g->js[s].attached = true;
		g->out_chan[s]->ngroups++;
	}
	g->qkey_out[s] = ud->qkey;
	atomic_store_explicit(&g->ah_out[s], g->js[s].ah, memory_order_release);
	g->js[s].state = JOIN_DONE;
	g->joined_ms[s] = mono_ms();
	group_update_ready(c->br, g);
	log_ctx(LOG_INFO, sd->dev, g->spec, "%s joined %s (mlid %#x)%s", side_name[s], g->spec,
		aa.dlid, group_dir_rx(g->dir, s) ? "" : " send-only");
	if (g->ready & ~GROUP_STANDBY)
		log_debug("forwarding %s", g->spec);
}

static void side_stop(struct ctl *c, int s, const char *why);
static void joins_tick(struct ctl *c);
static void check_ready(struct ctl *c, uint64_t now);

static void on_cm_event(struct ctl *c, int s)
{
	struct rdma_cm_event *evp, e, *ev = &e;

	while (c->br->sd[s].cm_ch && !rdma_get_cm_event(c->br->sd[s].cm_ch, &evp)) {
		/*
		 * Ack first, work on a copy: rdma_leave_multicast (join_drop) waits until every
		 * event of its join was acked, so leaving from inside an unacked event would
		 * wait forever. Nothing used below points into the event (private_data is our
		 * own context value).
		 */
		e = *evp;
		rdma_ack_cm_event(evp);
		switch (ev->event) {
		case RDMA_CM_EVENT_MULTICAST_JOIN:
			on_join(c, ev);
			/* The last join makes the bridge ready now, not at the next tick. */
			check_ready(c, mono_ms());
			break;
		case RDMA_CM_EVENT_MULTICAST_ERROR: {
			int gs;
			struct group *g = join_group((void *)ev->param.ud.private_data, &gs);

			if (!group_known(c, g))
				break;
			log_ctx(LOG_WARNING, c->br->sd[gs].dev, g->spec,
				"%s %s: multicast error %d (%s); joining again", side_name[gs],
				g->spec, ev->status, strerror(-ev->status));
			g->js[gs].last_error = -ev->status;
			if (g->js[gs].state == JOIN_PENDING || g->js[gs].state == JOIN_DONE)
				g->js[gs].state = JOIN_DONE;
			join_drop(c, g, gs, true);
			g->js[gs].next_try_ms = mono_ms() + JOIN_RETRY_MIN_MS;
			break;
		}
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			/* The id must go before the removal can complete: stop here. */
			side_stop(c, s, "device removed");
			return;
		default:
			log_debug("%s rdma_cm event %s", side_name[s], rdma_event_str(ev->event));
			break;
		}
	}
}

/*
 * Drop every join of side s (detach, retire the AH, leave), so that forwarding of the
 * groups stops in both directions; they are joined again at next_try (UINT64_MAX: not
 * until the port comes back).
 */
static uint32_t side_drop_joins(struct ctl *c, int s, uint64_t next_try)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < c->br->ngroups; i++) {
		struct group *g = c->br->groups[i];

		if (g->js[s].state != JOIN_IDLE)
			n++;
		join_drop(c, g, s, true);
		g->js[s].tries = 0;
		g->js[s].next_try_ms = next_try;
	}
	return n;
}

/*
 * Device removed or fatal: that side stops for good. Its groups are left and its
 * rdma_cm id destroyed (the kernel waits for it before the device can go); the other
 * side keeps its joins, and nothing is forwarded until a restart. The channels' QPs stay
 * until shutdown: a worker owns them.
 */
static void side_stop(struct ctl *c, int s, const char *why)
{
	struct side_ctx *sd = &c->br->sd[s];

	if (sd->state == SIDE_REMOVED)
		return;
	side_drop_joins(c, s, UINT64_MAX);
	sd->state = SIDE_REMOVED;
	c->status = 1; /* the eventual exit says the bridge did not run as configured */
	if (sd->cm_id) {
		loop_unwatch(sd->cm_ch->fd);
		rdma_destroy_id(sd->cm_id);
		rdma_destroy_event_channel(sd->cm_ch);
		sd->cm_id = NULL;
		sd->cm_ch = NULL;
	}
	log_ctx(LOG_ERR, sd->dev, NULL,
		"%s %s: %s: this side is stopped, nothing is forwarded; restart the bridge "
		"once the device is back",
		side_name[s], sd->dev, why);
	if (c->sd)
		sd_notifyf(0, "STATUS=%s %s %s: not forwarding", side_name[s], sd->dev, why);
}

/* The port is usable again, or the fabric forgot our memberships: join everything anew. */
static void side_rejoin(struct ctl *c, int s, const char *why)
{
	struct side_ctx *sd = &c->br->sd[s];
	uint32_t n;

	if (sd->state == SIDE_REMOVED)
		return;
	sd->state = SIDE_UP;
	ibv_query_port(sd->ctx, sd->port, &sd->pattr);
	n = side_drop_joins(c, s, mono_ms());
	sd->rejoins += c->br->ngroups;
	log_ctx(LOG_NOTICE, sd->dev, NULL, "%s %s: %s: joining %u group%s again (%u were joined)",
		side_name[s], sd->dev, why, c->br->ngroups, c->br->ngroups == 1 ? "" : "s", n);
	joins_tick(c);
}

static void on_async(struct ctl *c, int s)
{
	struct side_ctx *sd = &c->br->sd[s];
	struct ibv_async_event ae;
	const char *what;

	if (ibv_get_async_event(sd->ctx, &ae))
		return;
	what = ibv_event_type_str(ae.event_type);
	switch (ae.event_type) {
	case IBV_EVENT_PORT_ERR:
		if (ae.element.port_num != sd->port)
			break;
		sd->port_events++;
		if (sd->state == SIDE_UP) {
			uint32_t n = side_drop_joins(c, s, UINT64_MAX);

			sd->state = SIDE_DOWN;
			log_ctx(LOG_WARNING, sd->dev, NULL,
				"%s %s port %u down: %u group%s left, forwarding stopped until it "
				"is back",
				side_name[s], sd->dev, sd->port, n, n == 1 ? "" : "s");
		}
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
		if (ae.element.port_num != sd->port)
			break;
		sd->port_events++;
		side_rejoin(c, s, what);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		ibv_ack_async_event(&ae);
		side_stop(c, s, what);
		return;
	default:
		log_ctx(LOG_ERR, sd->dev, NULL, "%s %s: %s", side_name[s], sd->dev, what);
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
			if (c->br->sd[s].state == SIDE_UP && g->js[s].state == JOIN_IDLE &&
			    now >= g->js[s].next_try_ms)
				join_issue(c, g, s);
	}
}

/*
 * With --workers 0: drain both sides when the completion channel of one fired (one per
 * side: the CQ that side's channels share, struct wside).
 */
static void on_comp(struct ctl *c, enum side side)
{
	struct worker *w = &c->br->workers[0];
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(w->ws[side].cc, &cq, &ctx))
		return;
	ibv_ack_cq_events(cq, 1);
	ibv_req_notify_cq(cq, 0);
	/*
	 * Drain both sides together, as a worker's pass does: what one channel receives is
	 * sent on its peer, and only the peer's send completions free its send queue.
	 * Draining the side that fired alone filled the other's send queue and backlog
	 * under load (tx_full) before its own completion event was served.
	 */
	while (worker_side_poll(w, SIDE_IB) + worker_side_poll(w, SIDE_ROCE))
		;
	worker_refill(w, 1);
	if (w->br->nworkers > 1)
		fwd_handoff_drain(w);
	w->passes++;
	atomic_store_explicit(&w->heartbeat, w->passes, memory_order_relaxed);
}

/*
 * Whether worker w emptied its completion queue of side s after the call began: a poll
 * that returned fewer completions than it asked for (ws->empty) was counted after the
 * first load, so it found the queue empty after the call began. Waits for two passes (a
 * sleeping worker wakes within idle_max_us); false at the deadline (CLOCK_MONOTONIC ms)
 * too.
 */
static bool side_drained(const struct worker *w, int s, uint64_t deadline)
{
	uint64_t p0 = CMM_LOAD_SHARED(w->passes), e0 = CMM_LOAD_SHARED(w->ws[s].empty);
	struct timespec ts = {0, 20000};

	while (CMM_LOAD_SHARED(w->passes) < p0 + 2) {
		if (mono_ms() >= deadline)
			return false;
		nanosleep(&ts, NULL);
	}
	return CMM_LOAD_SHARED(w->ws[s].empty) != e0;
}

bool ctl_data_drain(struct ctl *c)
{
	struct bridge *br = c->br;
	uint64_t deadline = mono_ms() + CTL_DRAIN_MS;

	if (!br->cfg.nworkers) {
		/* We are the data path: poll both sides until nothing is left, as on_comp. */
		struct worker *w = &br->workers[0];

		while (worker_side_poll(w, SIDE_IB) + worker_side_poll(w, SIDE_ROCE))
			;
		worker_refill(w, 1);
		return true;
	}
	for (uint32_t i = 0; i < br->nworkers; i++) {
		struct worker *w = &br->workers[i];

		for (int s = 0; s < NSIDES; s++)
			while (!side_drained(w, s, deadline))
				if (mono_ms() >= deadline)
					return false;
	}
	return true;
}

/* The descriptors of a side: rdma_cm events, async events, completions (--workers 0). */
static void cm_fd(void *arg, unsigned events)
{
	struct ctl_side *r = arg;

	(void)events;
	on_cm_event(r->c, r->side);
}

static void async_fd(void *arg, unsigned events)
{
	struct ctl_side *r = arg;

	(void)events;
	on_async(r->c, r->side);
}

static void comp_fd(void *arg, unsigned events)
{
	struct ctl_side *r = arg;

	(void)events;
	on_comp(r->c, (enum side)r->side);
}

/* Join retries and the ready check (READY=1 at the latest after the join timeout). */
static void joins_timer(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	joins_tick(c);
	check_ready(c, now);
}

static void reload_hook(void *arg);
static int heartbeat_pass(void *arg, uint64_t now);
static loop_timer_fn qp_errors_tick, refill_tick, aging_tick;

static const struct console_cmd ctl_cmds[];

/* The control thread's own timers (loop.h), in the order they run at a tick. */
static int ctl_register(struct ctl *c)
{
	struct loop_timer *t;

	t = loop_every(0, joins_timer, c, "joins");
	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "join retries, ready check");
	t = loop_every(0, qp_errors_tick, c, "qp errors");
	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "queue pairs in the error state (said once)");
	if (!c->br->cfg.nworkers) {
		t = loop_every(0, refill_tick, c, "refill");
		if (!t)
			return -ENOMEM;
		loop_timer_what(t, "receive queues the pool could not fill (--workers 0)");
	}
	t = loop_every(1000, aging_tick, c, "aging");
	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "idle senders and PGM streams");
	if (loop_on_reload(reload_hook, c))
		return -ENOMEM;
	return console_cmd_register(ctl_cmds);
}

int ctl_init(struct ctl *c, struct bridge *br, char *err, size_t errlen)
{
	int r;

	c->br = br;
	r = loop_init(err, errlen);
	if (r)
		return r;
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];
		struct sockaddr_storage a;

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
		c->side_ref[s] = (struct ctl_side){c, s};
		fcntl_nonblock(sd->cm_ch->fd);
		fcntl_nonblock(sd->ctx->async_fd);
		loop_watch(sd->cm_ch->fd, EPOLLIN, cm_fd, &c->side_ref[s]);
		loop_watch(sd->ctx->async_fd, EPOLLIN, async_fd, &c->side_ref[s]);
	}
	if (!br->cfg.nworkers) {
		/* One completion channel per side: the CQ of the side's channels. */
		for (int s = 0; s < NSIDES; s++) {
			struct wside *ws = &br->workers[0].ws[s];

			fcntl_nonblock(ws->cc->fd);
			ibv_req_notify_cq(ws->cq, 0);
			loop_watch(ws->cc->fd, EPOLLIN, comp_fd, &c->side_ref[s]);
		}
	}
	/* The NIC's drop counters count from here: the baseline. */
	for (int s = 0; s < NSIDES; s++)
		nic_ctr_init(&c->nic[s], br->sd[s].ctx ? br->sd[s].ctx->device->ibdev_path : NULL,
			     br->sd[s].port);
	c->start_ms = mono_ms();
	c->start_wall = (int64_t)time(NULL);
	c->last_stats_ms = c->last_rate_ms = c->last_age_ms = c->start_ms;
	for (uint32_t i = 0; i < br->nworkers; i++)
		br->workers[i].hb_changed_ms = c->start_ms;
	if (!c->join_timeout_ms)
		c->join_timeout_ms = 30000;
	if (c->sd) {
		uint64_t usec = 0;

		if (sd_watchdog_enabled(0, &usec) > 0)
			c->wd_usec = usec;
		c->last_wd_ms = c->start_ms;
	}
	r = ctl_register(c);
	if (r)
		return opt_errf(err, errlen, r, "control thread: out of memory");
	return 0;
}

void ctl_start_joins(struct ctl *c)
{
	for (int s = 0; s < NSIDES; s++)
		if (c->br->sd[s].state != SIDE_UP)
			log_ctx(LOG_WARNING, c->br->sd[s].dev, NULL,
				"%s %s port %u is down: its joins wait for it to come up",
				side_name[s], c->br->sd[s].dev, c->br->sd[s].port);
	for (uint32_t i = 0; i < c->br->ngroups; i++) {
		for (int s = 0; s < NSIDES; s++) {
			if (c->br->sd[s].state == SIDE_UP)
				join_issue(c, c->br->groups[i], s);
			else
				c->br->groups[i]->js[s].next_try_ms = UINT64_MAX;
		}
	}
}

const char *const ctl_reload_outcome_name[CTL_RELOAD_NOUTCOMES] = {
	[CTL_RELOAD_OK] = "ok",
	[CTL_RELOAD_REFUSED] = "refused",
	[CTL_RELOAD_FAILED] = "failed",
};

int ctl_reload(struct ctl *c, FILE *out)
{
	int r;

	if (!c->reload)
		return -ENOSYS;
	r = c->reload(c, out);
	c->reloads[!r ? CTL_RELOAD_OK : r == -ECANCELED ? CTL_RELOAD_REFUSED : CTL_RELOAD_FAILED]++;
	return r;
}

static void do_reload(struct ctl *c, const char *why)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!c->reload)
		return;
	f = open_memstream(&buf, &len);
	if (!f)
		return;
	log_notice("%s: reloading the configuration", why);
	r = ctl_reload(c, f);
	fclose(f);
	log_text(r ? LOG_ERR : LOG_NOTICE, "reload: ", buf);
	free(buf);
}

static void reload_hook(void *arg)
{
	do_reload(arg, "SIGHUP");
}

static bool group_joined_both(const struct group *g)
{
	return g->js[SIDE_IB].state == JOIN_DONE && g->js[SIDE_ROCE].state == JOIN_DONE;
}

/*
 * The groups not joined on both sides: their number, the first few named in NAMES, and
 * the index of the first (ngroups when none).
 */
static uint32_t groups_missing(const struct ctl *c, char *names, size_t len, uint32_t *first)
{
	uint32_t missing = 0;
	size_t off = 0;

	*first = c->br->ngroups;
	names[0] = '\0';
	for (uint32_t i = 0; i < c->br->ngroups; i++) {
		struct group *g = c->br->groups[i];

		if (group_joined_both(g))
			continue;
		if (!missing)
			*first = i;
		if (missing++ < 8 && off < len)
			off += (size_t)snprintf(names + off, len - off, "%s%s", off ? ", " : "",
						g->spec);
	}
	return missing;
}

/*
 * READY=1 once every group is joined on both sides, or when the join timeout passed;
 * in the second case "all N groups joined on both sides" is logged when the last one
 * joins later. Called on every join event: it resumes its scan at the first group not
 * seen joined (join_scan), so that N joins cost O(N) and not O(N^2); a full scan
 * confirms the end (a group before the cursor may have left again, or been removed).
 */
static void check_ready(struct ctl *c, uint64_t now)
{
	uint32_t n = c->br->ngroups, missing, first;
	char names[256];
	bool late;

	if (c->all_joined)
		return;
	if (c->join_scan > n)
		c->join_scan = n;
	while (c->join_scan < n && group_joined_both(c->br->groups[c->join_scan]))
		c->join_scan++;
	if (c->join_scan < n && (c->ready || now - c->start_ms < c->join_timeout_ms))
		return;
	missing = groups_missing(c, names, sizeof(names), &first);
	c->join_scan = first;
	if (missing && now - c->start_ms < c->join_timeout_ms)
		return;
	if (missing) {
		if (c->ready)
			return;
		c->ready = true;
		log_warn("%u group%s not joined after %" PRIu64 " s: %s%s; ready anyway", missing,
			 missing == 1 ? "" : "s", c->join_timeout_ms / 1000, names,
			 missing > 8 ? ", ..." : "");
		if (c->on_ready)
			c->on_ready(c, missing, names, false);
		return;
	}
	late = c->ready;
	c->all_joined = true;
	c->ready = true; /* before show_summary, which says "waiting for joins" until then */
	log_notice("all %u group%s joined on both sides%s: forwarding", n, n == 1 ? "" : "s",
		   late ? " (after the join timeout)" : "");
	if (c->on_ready)
		c->on_ready(c, 0, "", late);
}

/* A QP in the error state (flushed completions) no longer receives: say so once. */
static void qp_errors_tick(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	(void)now;
	for (int s = 0; s < NSIDES; s++) {
		for (uint32_t k = 0; k < c->br->sd[s].nchan; k++) {
			struct channel *ch = c->br->sd[s].chan[k];

			if (__atomic_load_n(&ch->broken, __ATOMIC_RELAXED) &&
			    !ch->broken_reported) {
				ch->broken_reported = true;
				log_ctx(LOG_ERR, c->br->sd[s].dev, NULL,
					"%s %s channel %u (QP %#x): queue pair in the error state, "
					"no longer forwarding; restart the bridge",
					side_name[s], c->br->sd[s].dev, k, ch->qpn);
			}
		}
	}
}

/* Event-driven (--workers 0): a channel whose refill found the pool empty gets no more
 * completions until it has receives again: retry on every tick. */
static void refill_tick(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	(void)now;
	worker_refill(&c->br->workers[0], 1);
}

/* Idle senders and PGM streams age out; the sender table's first overflow is said. */
static void aging_tick(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	c->last_age_ms = now;
	sender_table_age(c->br->senders, now * 1000000ull,
			 (uint64_t)atomic_load(&c->sender_idle_s) * 1000000000ull);
	pgm_stream_table_age(c->br->pgm, now * 1000000ull,
			     (uint64_t)atomic_load(&c->pgm_idle_s) * 1000000000ull);
	/* Workers only count; the first time the count moves from 0, we say it. */
	if (!c->untracked_logged && sender_table_untracked(c->br->senders)) {
		log_warn("sender table full (%u records per worker): new senders are "
			 "forwarded but not tracked (senders_untracked; enable senders=N "
			 "at start-up for more)",
			 c->br->cfg.max_senders);
		c->untracked_logged = true;
	}
}

static void ms_ago(FILE *out, const char *name, uint64_t next, uint64_t now, const char *what)
{
	if (next == UINT64_MAX)
		fprintf(out, "%-24s %-12s %s\n", name, "waiting", what);
	else if (next <= now)
		fprintf(out, "%-24s %-12s %s\n", name, "due", what);
	else
		fprintf(out, "%-24s in %6.1f s  %s\n", name, (double)(next - now) / 1000.0, what);
}

/* The registered timers (loop.h), then READY's deadline and the joins waiting to retry. */
static int cmd_events(struct ctl *c, char *args, FILE *out)
{
	uint64_t now = mono_ms();
	uint32_t pending = 0;

	if (concmd_no_args("events", args, out))
		return -1;
	loop_timers_print(out);
	if (!c->ready)
		ms_ago(out, "ready", c->start_ms + c->join_timeout_ms, now,
		       "READY=1 at the latest (join timeout)");
	for (uint32_t i = 0; i < c->br->ngroups; i++) {
		struct group *g = c->br->groups[i];

		for (int s = 0; s < NSIDES; s++) {
			char name[64], what[160];

			if (g->js[s].state != JOIN_IDLE)
				continue;
			pending++;
			snprintf(name, sizeof(name), "join %s", side_name[s]);
			snprintf(what, sizeof(what), "%s (try %u%s%s)", g->spec, g->js[s].tries + 1,
				 g->js[s].last_error ? ", last: " : "",
				 g->js[s].last_error ? strerror(g->js[s].last_error) : "");
			ms_ago(out, name,
			       c->br->sd[s].state == SIDE_UP ? g->js[s].next_try_ms : UINT64_MAX,
			       now, what);
		}
	}
	if (!pending)
		fprintf(out, "%-24s %-12s %s\n", "joins", "-", "none pending");
	return 0;
}

static int cmd_join(struct ctl *c, char *args, FILE *out)
{
	char err[OPT_ERR_LEN];
	char *spec = concmd_word(&args), *d = concmd_word(&args);
	enum group_dir dir = DIR_BOTH;

	if (!spec) {
		fprintf(out,
			"join: usage: join addr[:port][/fmt][#tos[,w=N]|#w=N] [both|in|out]\n");
		return -1;
	}
	if (d) {
		int k;

		for (k = 0; k < 3 && strcmp(d, group_dir_name[k]); k++)
			;
		if (k == 3) {
			fprintf(out, "join: direction '%s': expected both, in or out\n", d);
			return -1;
		}
		dir = (enum group_dir)k;
	}
	if (concmd_no_args("join", args, out))
		return -1;
	if (ctl_group_add(c, spec, dir, err, sizeof(err))) {
		fprintf(out, "join: %s\n", err);
		return -1;
	}
	log_ctx(LOG_NOTICE, NULL, spec, "console: join %s %s", spec, group_dir_name[dir]);
	fprintf(out, "joining %s (%s)\n", spec, group_dir_name[dir]);
	return 0;
}

static int cmd_leave(struct ctl *c, char *args, FILE *out)
{
	char err[OPT_ERR_LEN];
	char *name = concmd_word(&args);

	if (!name) {
		fprintf(out, "leave: usage: leave <group>\n");
		return -1;
	}
	if (concmd_no_args("leave", args, out))
		return -1;
	if (ctl_group_remove(c, name, err, sizeof(err))) {
		fprintf(out, "leave: %s\n", err);
		return -1;
	}
	log_ctx(LOG_NOTICE, NULL, name, "console: leave %s", name);
	fprintf(out, "left %s\n", name);
	return 0;
}

static const struct console_cmd ctl_cmds[] = {
	{{"events", NULL, "the control thread's timers", false}, cmd_events},
	{{"join", "group [both|in|out]", "bridge one more group now", false}, cmd_join},
	{{"leave", "group", "stop bridging a group now", false}, cmd_leave},
	{{NULL, NULL, NULL, false}, NULL},
};

/* ---- Groups at run time ---- */

/* Groups that receive on channel k of side s (its multicast attachments). */
static uint32_t chan_load(struct bridge *br, int s, uint32_t k)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < br->ngroups; i++)
		if (group_dir_rx(br->groups[i]->dir, s) &&
		    br->groups[i]->out_chan[s] == br->sd[s].chan[k])
			n++;
	return n;
}

/*
 * Channels for a new group: among the pairs with room on each side that receives, one of
 * the worker with the least weight (the sum of its groups' "#w=N"), the least loaded of
 * that worker's; failing that (a group received on both sides, no pair with room on
 * both), a channel with room on each side, in different pairs: their workers hand
 * packets over.
 */
static int place_group(struct bridge *br, struct group *g, char *err, size_t errlen)
{
	uint32_t cap = br->cfg.mcqp, best = UINT32_MAX, best_load = UINT32_MAX;
	uint32_t k1 = UINT32_MAX, k2 = UINT32_MAX, nw = br->nworkers;
	uint64_t *wload = calloc(nw, sizeof(*wload));

	if (!wload)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < br->ngroups; i++) /* pair k is worker k % nw's */
		wload[br->groups[i]->pair % nw] += br->groups[i]->weight;
	for (uint32_t k = 0; k < br->npairs; k++) {
		uint32_t l0 = group_dir_rx(g->dir, SIDE_IB) ? chan_load(br, SIDE_IB, k) : 0;
		uint32_t l1 = group_dir_rx(g->dir, SIDE_ROCE) ? chan_load(br, SIDE_ROCE, k) : 0;

		if (l0 < cap && k1 == UINT32_MAX)
			k1 = k;
		if (l1 < cap && k2 == UINT32_MAX)
			k2 = k;
		if (l0 < cap && l1 < cap &&
		    (best == UINT32_MAX || wload[k % nw] < wload[best % nw] ||
		     (wload[k % nw] == wload[best % nw] && l0 + l1 < best_load))) {
			best = k;
			best_load = l0 + l1;
		}
	}
	free(wload);
	if (best != UINT32_MAX) {
		k1 = k2 = best;
	} else if (k1 == UINT32_MAX || k2 == UINT32_MAX) {
		return opt_errf(err, errlen, -ENOSPC,
				"no channel has room for another group (mcqp %u, %u channel "
				"pair%s): restart with more",
				cap, br->npairs, br->npairs == 1 ? "" : "s");
	}
	g->pair = k1;
	g->out_chan[SIDE_IB] = br->sd[SIDE_IB].chan[k1];
	g->out_chan[SIDE_ROCE] = br->sd[SIDE_ROCE].chan[k2];
	return 0;
}

static void group_discard_rcu(struct rcu_head *h)
{
	free(caa_container_of(h, struct group, rcu));
}

int ctl_group_insert(struct ctl *c, struct group *g, char *err, size_t errlen)
{
	struct bridge *br = c->br;
	int r;

	for (int s = 0; s < NSIDES; s++) {
		if (br->sd[s].state == SIDE_REMOVED) {
			r = opt_errf(err, errlen, -ENODEV, "%s device %s is stopped", side_name[s],
				     br->sd[s].dev);
			goto fail;
		}
	}
	{
		struct group *dup = group_array_find(br->groups, br->ngroups, g->addr);

		if (dup) {
			r = opt_errf(err, errlen, -EEXIST, "%s is already bridged as '%s'", g->spec,
				     dup->spec);
			goto fail;
		}
	}
	r = place_group(br, g, err, errlen);
	if (r)
		goto fail;
	group_mgid_ib(g, br->sd[SIDE_IB].pkey, &g->mgid[SIDE_IB]);
	group_mgid_roce(g, &g->mgid[SIDE_ROCE]);
	loop_group_event(g, true); /* before it is published: HA's role */
	if (group_publish(br, g)) {
		/* It may have been in a table for a moment: free it after a grace period. */
		r = opt_errf(err, errlen, -EEXIST, "%s: its MGID is used by another group",
			     g->spec);
		goto fail_published;
	}
	if (group_array_push(&br->groups, &br->ngroups, &br->groups_cap, g)) {
		group_unpublish(br, g);
		r = opt_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail_published;
	}
	log_ctx(LOG_NOTICE, NULL, g->spec, "bridging %s (%s) on channels IB %u, RoCE %u%s", g->spec,
		group_dir_name[g->dir], g->out_chan[SIDE_IB]->index, g->out_chan[SIDE_ROCE]->index,
		g->out_chan[SIDE_IB]->w != g->out_chan[SIDE_ROCE]->w ? " (workers hand over)" : "");
	for (int s = 0; s < NSIDES; s++) {
		if (br->sd[s].state == SIDE_UP)
			join_issue(c, g, s);
		else
			g->js[s].next_try_ms = UINT64_MAX; /* joined when the port comes up */
	}
	return 0;
fail_published:
	urcu_qsbr_call_rcu(&g->rcu, group_discard_rcu);
	return r;
fail:
	free(g);
	return r;
}

int ctl_group_add(struct ctl *c, const char *spec, enum group_dir dir, char *err, size_t errlen)
{
	struct group *g;
	int r;

	g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	memset(g, 0, sizeof(*g));
	r = group_spec_parse(g, spec, (enum mgid_fmt)c->def_fmt, c->def_port, c->def_tos, err,
			     errlen);
	if (r) {
		free(g);
		return r;
	}
	g->dir = dir;
	return ctl_group_insert(c, g, err, errlen);
}

/* After the grace period no worker writes the group's counters: fold them in. */
static void group_free_rcu(struct rcu_head *h)
{
	struct group *g = caa_container_of(h, struct group, rcu);
	struct bridge *br = g->out_chan[SIDE_IB]->br;

	for (int s = 0; s < NSIDES; s++) {
		atomic_fetch_add(&br->left_fwd_pkts[s], g->fwd_pkts[s]);
		atomic_fetch_add(&br->left_fwd_bytes[s], g->fwd_bytes[s]);
	}
	atomic_fetch_add(&br->left_groups, 1);
	free(g);
}

int ctl_group_remove(struct ctl *c, const char *name, char *err, size_t errlen)
{
	struct bridge *br = c->br;
	struct in_addr a;
	uint32_t i;

	for (i = 0; i < br->ngroups; i++)
		if (!strcmp(br->groups[i]->spec, name))
			break;
	if (i == br->ngroups && inet_pton(AF_INET, name, &a) == 1)
		for (i = 0; i < br->ngroups; i++)
			if (br->groups[i]->addr == a.s_addr)
				break;
	if (i == br->ngroups)
		return opt_errf(err, errlen, -ENOENT, "'%s' is not bridged", name);
	{
		struct group *g = br->groups[i];

		/* Stop forwarding first, then leave, then let the workers drop the pointer. */
		atomic_store(&g->ready, 0);
		bridge_flows_stale(br);
		for (int s = 0; s < NSIDES; s++)
			join_drop(c, g, s, true);
		group_unpublish(br, g);
		memmove(&br->groups[i], &br->groups[i + 1], (br->ngroups - i - 1) * sizeof(g));
		br->ngroups--;
		loop_group_event(g, false);
		g->retired = true;
		log_ctx(LOG_NOTICE, NULL, g->spec,
			"stopped bridging %s (%" PRIu64 " IB->RoCE, %" PRIu64 " RoCE->IB packets)",
			g->spec, g->fwd_pkts[SIDE_IB], g->fwd_pkts[SIDE_ROCE]);
		urcu_qsbr_call_rcu(&g->rcu, group_free_rcu);
	}
	return 0;
}

/*
 * The control loop's heartbeat, once per iteration. A gap of more than CTL_STALL_MS since
 * the previous one means that nothing the loop serves (timers and statistics, console,
 * joins, async events, the watchdog ping, which is withheld so) ran meanwhile. A stalled
 * thread cannot say so while stalled: the stall is logged and counted here, once over.
 * Then the ctlstall fault injection: the loop stops for that long, once.
 */
static int heartbeat_pass(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	uint64_t gap = now - c->loop_ms;
	int64_t inject = atomic_exchange(&c->ctlstall, 0);

	if (c->loop_ms && gap > CTL_STALL_MS) {
		c->stalls++;
		c->stall_last_ms = gap;
		c->stall_ms = now;
		if (gap > c->stall_max_ms)
			c->stall_max_ms = gap;
		log_warn("control thread was stalled for %.1f s: no timers, console, joins or "
			 "watchdog pings meanwhile (%" PRIu64 " stall%s so far)",
			 (double)gap / 1000.0, c->stalls, c->stalls == 1 ? "" : "s");
	}
	c->loop_ms = now;
	if (inject > 0) {
		struct timespec ts = {inject / 1000, (inject % 1000) * 1000000L};

		log_notice("ctlstall: stopping the control thread for %" PRId64 " ms", inject);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return -1;
}

int ctl_run(struct ctl *c)
{
	int r;

	/* The heartbeat is the last pass: it may stop the thread (ctlstall) after the
	 * modules' passes replied and cleaned up. */
	if (loop_on_pass(heartbeat_pass, c))
		return -ENOMEM;
	r = loop_run();

	return r ? r : c->status;
}

void ctl_leave_all(struct ctl *c)
{
	workers_gone = true;
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
	loop_fini();
}
