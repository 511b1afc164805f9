// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The rdma_cm join state machine (joins.h): joins every group on both sides through
 * rdma_cm (with retries and back-off), creates the address handles and attaches the
 * channels, publishes a group to the workers once both sides are joined (its ready
 * flags), handles the async and rdma_cm events of each side (port down and up, SM and
 * address changes, multicast errors, device removal), says when the bridge is ready, and
 * on shutdown leaves every group.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/ib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>

#include "bridge.h"
#include "ctl.h"
#include "fwd.h"
#include "joins.h"
#include "log.h"
#include "loop.h"
#include "sajoin.h"
#include "setup.h"

#define JOIN_RETRY_MIN_MS 500
#define JOIN_RETRY_MAX_MS 30000

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

void join_retry_later(struct group *g, int s, int err)
{
	uint64_t backoff = JOIN_RETRY_MIN_MS << (g->js[s].tries < 7 ? g->js[s].tries : 6);

	g->js[s].last_error = err;
	g->js[s].state = JOIN_IDLE;
	g->js[s].next_try_ms =
		mono_ms() + (backoff > JOIN_RETRY_MAX_MS ? JOIN_RETRY_MAX_MS : backoff);
}

static bool group_known(struct ctl *c, const struct group *g);

/*
 * The group an SA join went out for, by its TID (sajoin_send numbers them in turn): a
 * table of the groups of the last TIDs, at TID modulo its size (twice the groups, grown
 * with them), so that an answer finds its group at once; an entry overwritten or stale
 * (the group left, or joined anew) is caught by the check, and the walk of the groups
 * answers then. Walking for every answer made 16 000 joins with their own Q_Key cost
 * 16 000 x 8 000 group visits.
 */
struct sa_tid_slot {
	uint32_t tid;
	struct group *g; /* compared with the running groups before it is followed */
};

static void sa_tid_note(struct ctl *c, uint32_t tid, struct group *g)
{
	size_t want = 64;

	while (want < 2 * (size_t)c->br->ngroups)
		want *= 2;
	if (!c->sa_tids || c->sa_tid_mask + 1 < want) {
		struct sa_tid_slot *t = calloc(want, sizeof(*t));

		if (!t)
			return; /* the walk finds it */
		for (size_t i = 0; c->sa_tids && i <= c->sa_tid_mask; i++)
			if (c->sa_tids[i].g)
				t[c->sa_tids[i].tid & (want - 1)] = c->sa_tids[i];
		free(c->sa_tids);
		c->sa_tids = t;
		c->sa_tid_mask = want - 1;
	}
	c->sa_tids[tid & c->sa_tid_mask] = (struct sa_tid_slot){tid, g};
}

static bool sa_waits(const struct group *g, uint32_t tid)
{
	const struct group_side *js = &g->js[SIDE_IB];

	return js->sa && js->state == JOIN_PENDING && js->sa_tid == tid;
}

static struct group *sa_tid_group(struct ctl *c, uint32_t tid)
{
	if (c->sa_tids) {
		struct sa_tid_slot *t = &c->sa_tids[tid & c->sa_tid_mask];

		if (t->g && t->tid == tid && group_known(c, t->g) && sa_waits(t->g, tid))
			return t->g;
	}
	for (uint32_t i = 0; i < c->br->ngroups; i++)
		if (sa_waits(c->br->groups[i], tid))
			return c->br->groups[i];
	return NULL;
}

/* The SA's answers to IB joins with a group's own Q_Key (sajoin.c): complete or retry. */
static void sa_fd(void *arg, unsigned events)
{
	struct ctl *c = arg;
	struct side_ctx *sd = &c->br->sd[SIDE_IB];
	struct sajoin_answer a;

	(void)events;
	while (sajoin_recv(sd, &a) == 1) {
		struct group *g = sa_tid_group(c, a.tid);

		if (!g)
			continue; /* answered after the group left or joined anew */
		if (a.err) {
			join_retry_later(g, SIDE_IB, a.err);
			log_ctx(LOG_WARNING, sd->dev, g->spec, "IB SA join of %s: %s; retrying",
				g->spec, strerror(a.err));
		} else if (a.status) {
			/* Logged once per status, then retried quietly with back-off. */
			if (g->js[SIDE_IB].sa_status != a.status)
				log_ctx(LOG_ERR, sd->dev, g->spec,
					"IB SA join of %s with Q_Key 0x%08x refused: status "
					"0x%04x, "
					"%s; retrying",
					g->spec, group_qkey(g, SIDE_IB), a.status,
					sajoin_status_str(a.status));
			g->js[SIDE_IB].sa_status = a.status;
			join_retry_later(g, SIDE_IB, EINVAL);
		} else if (a.qkey != group_qkey(g, SIDE_IB)) {
			/* Not what we asked for: an SA that ignores the component mask. */
			log_ctx(LOG_ERR, sd->dev, g->spec,
				"IB %s: the SA joined the group with Q_Key 0x%08x, not 0x%08x; "
				"leaving",
				g->spec, a.qkey, group_qkey(g, SIDE_IB));
			g->js[SIDE_IB].state = JOIN_DONE; /* so that join_drop leaves */
			join_drop(c, g, SIDE_IB, true);
			join_retry_later(g, SIDE_IB, EPROTO);
		} else {
			g->js[SIDE_IB].sa_status = 0;
			join_complete(c, g, SIDE_IB, &a.aa);
		}
	}
}

/* Open the SA agent of the IB port and watch its descriptor (once). 0 or -errno. */
static int sa_watch(struct ctl *c, struct side_ctx *sd)
{
	static bool watched; /* control thread only */
	int r;

	if (watched)
		return 0;
	r = sajoin_open(sd);
	if (r)
		return r;
	if (loop_watch(sajoin_fd(), EPOLLIN, sa_fd, c))
		return -errno;
	watched = true;
	log_ctx(LOG_INFO, sd->dev, NULL, "IB %s port %u: SA agent for joins with own Q_Keys",
		sd->dev, sd->port);
	return 0;
}

/* ---- RoCEv2 over IPv6: attach, MLD, AH, without rdma_cm ---- */

/*
 * Linux refuses rdma_join_multicast of an IPv6 group on a RoCEv2 port (ENOTSUPP, 524:
 * drivers/infiniband/core/cma.c cma_iboe_join_multicast takes AF_INET only when the
 * port's GID type is RoCE v2, and its IGMP join cma_igmp_send is IPv4 only), so the
 * bridge does what rdma_cm does for an IPv4 group itself (docs/architecture.md "RoCEv2
 * over IPv6"): attaches its channel QP to the group (the MGID is the IPv6 address), joins
 * the group on the port's netdev with an IPv6 socket (IPV6_JOIN_GROUP: the kernel sends
 * the MLD report that switches with MLD snooping forward by) and builds the AH it sends
 * with. The join completes at once, without an event.
 */
#define ROCE_V6_HOP_LIMIT 64 /* IPV6_DEFAULT_HOPLIMIT: what rdma_cm gives a RoCEv2 join */
#define MLD_PER_SOCKET	  64 /* memberships per socket (each is charged to optmem_max) */

/* The sockets holding MLD memberships: control thread only. */
static struct mld_sock {
	int fd;
	uint32_t n; /* memberships; MLD_PER_SOCKET once the kernel refused one more */
} * mld_socks;
static uint32_t mld_nsocks;
static uint64_t mld_failed; /* memberships refused (the group is forwarded anyway) */
static char mld_last[160];  /* the last refusal, for `events` */

/* Join group on the interface: the socket that took it, or -errno. */
static int mld_join(uint32_t ifindex, const union ibv_gid *group)
{
	struct ipv6_mreq mr = {.ipv6mr_interface = ifindex};

	memcpy(mr.ipv6mr_multiaddr.s6_addr, group->raw, 16);
	for (uint32_t i = 0;; i++) {
		struct mld_sock *m;

		if (i == mld_nsocks) {
			struct mld_sock *v = realloc(mld_socks, (i + 1) * sizeof(*v));
			int fd;

			if (!v)
				return -ENOMEM;
			mld_socks = v;
			fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (fd < 0)
				return -errno;
			mld_socks[i] = (struct mld_sock){.fd = fd, .n = 0};
			mld_nsocks++;
		}
		m = &mld_socks[i];
		if (m->n >= MLD_PER_SOCKET)
			continue;
		if (!setsockopt(m->fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr))) {
			m->n++;
			return m->fd;
		}
		if (errno != ENOBUFS && errno != ENOMEM)
			return -errno;
		m->n = MLD_PER_SOCKET; /* this socket's option memory is full: the next one */
	}
}

static void mld_leave(int fd, uint32_t ifindex, const union ibv_gid *group)
{
	struct ipv6_mreq mr = {.ipv6mr_interface = ifindex};

	memcpy(mr.ipv6mr_multiaddr.s6_addr, group->raw, 16);
	setsockopt(fd, IPPROTO_IPV6, IPV6_LEAVE_GROUP, &mr, sizeof(mr));
	for (uint32_t i = 0; i < mld_nsocks; i++)
		if (mld_socks[i].fd == fd) {
			/* A full socket takes memberships again once one left. */
			mld_socks[i].n = mld_socks[i].n >= MLD_PER_SOCKET ? MLD_PER_SOCKET - 1
									  : mld_socks[i].n - 1;
			break;
		}
}

/* The sockets, closed at the end (ctl_leave_all). */
static void mld_close_all(void)
{
	for (uint32_t i = 0; i < mld_nsocks; i++)
		close(mld_socks[i].fd);
	free(mld_socks);
	mld_socks = NULL;
	mld_nsocks = 0;
}

/*
 * The GID index the bridge sends an IPv6 group with: the port's RoCE v2 entry of its
 * address of the group's scope (RFC 6724 rule 2, as the kernel's source address
 * selection does for rdma_resolve_addr): link-local (fe80::) for interface- and
 * link-local groups (ff01::/16, ff02::/16, scope 1 and 2), else the global one; the
 * other when the port lacks that one. -1: the port has no IPv6 RoCE v2 entry.
 */
static int roce_v6_sgid_index(const struct side_ctx *sd, const union ibv_gid *group)
{
	bool link_scope = (group->raw[1] & 0x0f) <= 2;

	if (link_scope)
		return sd->gid6ll_index >= 0 ? sd->gid6ll_index : sd->gid6_index;
	return sd->gid6_index >= 0 ? sd->gid6_index : sd->gid6ll_index;
}

/* A failed try of join_roce_v6: undo, retry after the back-off as a failed rdma_cm join. */
static void join_roce_v6_fail(struct ctl *c, struct group *g, int err, const char *what)
{
	struct group_side *js = &g->js[SIDE_ROCE];
	uint64_t backoff = JOIN_RETRY_MIN_MS << (js->tries < 7 ? js->tries : 6);

	js->state = JOIN_DONE; /* so that join_drop undoes what was done */
	join_drop(c, g, SIDE_ROCE, true);
	js->last_error = err;
	js->next_try_ms = mono_ms() + (backoff > JOIN_RETRY_MAX_MS ? JOIN_RETRY_MAX_MS : backoff);
	log_warn("%s join of %s failed: %s: %s; retrying", side_name[SIDE_ROCE], g->spec, what,
		 strerror(err));
}

/*
 * Join the IPv6 group g on RoCE (control thread): the AH (dgid the group, the port's
 * IPv6 RoCE v2 entry of the group's scope, hop limit 64, traffic class from #tos, flow
 * label 0, the port's full rate), the attach when the group receives on RoCE, the MLD
 * membership. The join is done on return (JOIN_DONE), or failed and due again.
 */
static void join_roce_v6(struct ctl *c, struct group *g)
{
	struct side_ctx *sd = &c->br->sd[SIDE_ROCE];
	struct group_side *js = &g->js[SIDE_ROCE];
	struct ibv_ah_attr aa;
	int idx, fd;

	js->tries++;
	idx = roce_v6_sgid_index(sd, &g->mgid[SIDE_ROCE]);
	if (idx < 0) {
		join_roce_v6_fail(c, g, EADDRNOTAVAIL,
				  "the RoCE port has no IPv6 address (no RoCE v2 GID of one)");
		return;
	}
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = sd->port;
	aa.grh.dgid = g->mgid[SIDE_ROCE];
	aa.grh.sgid_index = (uint8_t)idx;
	aa.grh.hop_limit = ROCE_V6_HOP_LIMIT;
	/*
	 * Flow label 0 (RFC 6437: not labelled): with 0 the RDMA stack takes the UDP source
	 * port's entropy from the QP numbers (the kernel's rdma_get_udp_sport:
	 * rdma_calc_flow_label(lqpn, rqpn)), as for an IPv4 group; one group's packets keep
	 * one path and their order.
	 */
	aa.grh.flow_label = 0;
	aa.grh.traffic_class = g->tos_set ? g->tos : 0;
	aa.static_rate = 0; /* no join answer to take a rate from: the port's own */
	js->state = JOIN_PENDING;
	js->ah = ibv_create_ah(sd->pd, &aa);
	if (!js->ah) {
		join_roce_v6_fail(c, g, errno, "ibv_create_ah");
		return;
	}
	js->mlid = 0;
	js->qkey = g->qkey[SIDE_ROCE];
	if (group_dir_rx(g->dir, SIDE_ROCE)) {
		int r = ibv_attach_mcast(g->out_chan[SIDE_ROCE]->qp, &g->mgid[SIDE_ROCE], 0);

		if (r) {
			join_roce_v6_fail(c, g, r, "ibv_attach_mcast");
			return;
		}
		js->attached = true;
		g->out_chan[SIDE_ROCE]->ngroups++;
	}
	/*
	 * The MLD membership where the group receives on RoCE: the kernel's IGMP join of an
	 * IPv4 group (cma_iboe_join_multicast, cma_igmp_send) is made for full members
	 * only, not for send-only joins; the same here.
	 */
	if (group_dir_rx(g->dir, SIDE_ROCE)) {
		fd = sd->ifindex ? mld_join(sd->ifindex, &g->mgid[SIDE_ROCE]) : -ENODEV;
		if (fd >= 0) {
			js->mld = true;
			js->mld_fd = fd;
		} else {
			char a[INET6_ADDRSTRLEN];

			inet_ntop(AF_INET6, g->mgid[SIDE_ROCE].raw, a, sizeof(a));
			snprintf(mld_last, sizeof(mld_last), "%s on ifindex %u refused: %s", a,
				 sd->ifindex,
				 sd->ifindex ? strerror(-fd) : "no netdev known for the port");
			/* Once with the reason, then counted (events, stats): the attached QP
			 * receives where the switch floods or the host is the router. */
			if (!mld_failed++)
				log_ctx(LOG_WARNING, sd->dev, g->spec,
					"%s %s: MLD membership of %s; forwarding anyway "
					"(a switch with MLD snooping will not send the group here)",
					side_name[SIDE_ROCE], g->spec, mld_last);
			else
				log_debug("%s %s: MLD membership of %s", side_name[SIDE_ROCE],
					  g->spec, mld_last);
		}
	}
	js->tries = 0;
	js->last_error = 0;
	g->qkey_out[SIDE_ROCE] = js->qkey;
	atomic_store_explicit(&g->ah_out[SIDE_ROCE], js->ah, memory_order_release);
	js->state = JOIN_DONE;
	g->joined_ms[SIDE_ROCE] = mono_ms();
	group_update_ready(c->br, g);
	log_ctx(LOG_INFO, sd->dev, g->spec, "%s joined %s (IPv6, GID index %d%s)%s",
		side_name[SIDE_ROCE], g->spec, idx, js->mld ? ", MLD" : "",
		group_dir_rx(g->dir, SIDE_ROCE) ? "" : " send-only");
	if (g->ready & ~GROUP_STANDBY)
		log_debug("forwarding %s", g->spec);
}

/* Leave what join_roce_v6 joined on the netdev (the detach and AH are join_drop's). */
static void leave_roce_v6(struct ctl *c, struct group *g)
{
	struct group_side *js = &g->js[SIDE_ROCE];

	if (!js->mld)
		return;
	mld_leave(js->mld_fd, c->br->sd[SIDE_ROCE].ifindex, &g->mgid[SIDE_ROCE]);
	js->mld = false;
}

void join_issue(struct ctl *c, struct group *g, int s)
{
	struct side_ctx *sd = &c->br->sd[s];
	struct rdma_cm_join_mc_attr_ex ja;
	struct sockaddr_storage ss;

	/* IB with a Q_Key that is not rdma_cm's: rdma_cm would ask the SA for its own
	 * (cma_join_ib_multicast), which the group refuses; join through the SA with the
	 * group's Q_Key (sajoin.c). */
	g->js[s].sa = false;
	if (s == SIDE_IB && sajoin_wanted(g)) {
		int r;

		g->js[s].tries++;
		r = sa_watch(c, sd);
		if (!r)
			r = sajoin_send(sd, g, true, &g->js[s].sa_tid);
		if (r) {
			join_retry_later(g, s, -r);
			log_warn("%s SA join of %s failed: %s; retrying", side_name[s], g->spec,
				 strerror(-r));
			return;
		}
		g->js[s].sa = true;
		g->js[s].state = JOIN_PENDING;
		sa_tid_note(c, g->js[s].sa_tid, g);
		return;
	}
	if (s == SIDE_ROCE && g->roce_v6) {
		join_roce_v6(c, g);
		return;
	}
	memset(&ja, 0, sizeof(ja));
	ja.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ja.addr = join_addr(c, g, s, &ss);
	ja.join_flags = group_dir_rx(g->dir, s) ? RDMA_MC_JOIN_FLAG_FULLMEMBER
						: RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	g->js[s].tries++;
	if (rdma_join_multicast_ex(sd->cm_id, &ja, join_ctx(g, s))) {
		int e = errno;

		join_retry_later(g, s, e);
		log_warn("%s join of %s failed: %s; retrying", side_name[s], g->spec, strerror(e));
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
void join_drop(struct ctl *c, struct group *g, int s, bool leave)
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
	if (s == SIDE_ROCE && g->roce_v6) {
		leave_roce_v6(c, g); /* no rdma_cm join to leave */
	} else if (leave && joined && js->sa) {
		uint32_t tid;
		int r = sajoin_send(sd, g, false, &tid);

		if (r)
			log_ctx(LOG_WARNING, sd->dev, g->spec, "IB SA leave of %s: %s", g->spec,
				strerror(-r));
	} else if (leave && joined && sd->cm_id)
		rdma_leave_multicast(sd->cm_id, join_addr(c, g, s, &ss));
	js->sa = false;
}

/*
 * The running groups by address (struct ctl's known set), for group_known: a join's
 * answer names its group by address (its rdma_cm context), which may be freed memory by
 * the time it arrives, so the address is looked up, never followed. Open addressing,
 * linear probing, at most half full; built from br->groups when their count is not the
 * set's (groups added at start or since), dropped by each removal (joins_known_drop).
 * A walk of the groups per answer cost 32 000 answers times 8 000 groups at 16 000.
 */
static size_t known_slot(const struct group *g, size_t mask)
{
	uint64_t h = ((uintptr_t)g >> 6) * 0x9e3779b97f4a7c15ull; /* groups are 64-aligned */

	return (size_t)(h >> 32) & mask;
}

static int known_build(struct ctl *c)
{
	const struct bridge *br = c->br;
	size_t cap = 16;

	joins_known_drop(c);
	while (cap < 2 * (size_t)br->ngroups)
		cap *= 2;
	c->known = calloc(cap, sizeof(*c->known));
	if (!c->known)
		return -ENOMEM;
	c->known_mask = cap - 1;
	for (uint32_t i = 0; i < br->ngroups; i++) {
		size_t k = known_slot(br->groups[i], c->known_mask);

		while (c->known[k])
			k = (k + 1) & c->known_mask;
		c->known[k] = br->groups[i];
	}
	c->known_n = br->ngroups;
	return 0;
}

void joins_known_drop(struct ctl *c)
{
	free(c->known);
	c->known = NULL;
}

void joins_free(struct ctl *c)
{
	joins_known_drop(c);
	free(c->sa_tids);
	c->sa_tids = NULL;
}

/* Is g still one of our groups? (events may name a group removed meanwhile) */
static bool group_known(struct ctl *c, const struct group *g)
{
	if ((!c->known || c->known_n != c->br->ngroups) && known_build(c)) {
		for (uint32_t i = 0; i < c->br->ngroups; i++) /* out of memory: walk */
			if (c->br->groups[i] == g)
				return true;
		return false;
	}
	for (size_t k = known_slot(g, c->known_mask); c->known[k]; k = (k + 1) & c->known_mask)
		if (c->known[k] == g)
			return true;
	return false;
}

static void on_join(struct ctl *c, struct rdma_cm_event *ev)
{
	struct rdma_ud_param *ud = &ev->param.ud;
	struct group *g;
	int s;

	g = join_group((void *)ud->private_data, &s);
	if (!group_known(c, g))
		return; /* left at run time while the answer was on its way */
	if (g->js[s].state != JOIN_PENDING || g->js[s].sa)
		return;
	join_complete(c, g, s, &ud->ah_attr);
}

void join_complete(struct ctl *c, struct group *g, int s, const struct ibv_ah_attr *attr)
{
	struct ibv_ah_attr aa = *attr;
	struct side_ctx *sd = &c->br->sd[s];

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
	/* The Q_Key the group uses on this side (capture's DETH, the console): rdma_cm's
	 * answer on RoCE says RDMA_UDP_QKEY whatever "#qkey" is. */
	g->js[s].qkey = group_qkey(g, s);
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
	/* Sends onto side s carry the group's Q_Key there (the DETH's, from the WR): rdma_cm's
	 * answer on RoCE is always RDMA_UDP_QKEY (no SA on Ethernet: the Q_Key is what the
	 * group's members agreed on, "#qkey"); on IB the SA's record holds it. */
	g->qkey_out[s] = group_qkey(g, s);
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

			if (!group_known(c, g) || g->js[gs].sa)
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

/* The descriptors of a side: rdma_cm events, async events. */
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

/* Join retries and the ready check (READY=1 at the latest after the join timeout). */
static void joins_timer(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	joins_tick(c);
	check_ready(c, now);
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

static void ms_ago(FILE *out, const char *name, uint64_t next, uint64_t now, const char *what)
{
	if (next == UINT64_MAX)
		fprintf(out, "%-24s %-12s %s\n", name, "waiting", what);
	else if (next <= now)
		fprintf(out, "%-24s %-12s %s\n", name, "due", what);
	else
		fprintf(out, "%-24s in %6.1f s  %s\n", name, (double)(next - now) / 1000.0, what);
}

/* READY's deadline while not ready, and the joins waiting to retry ("events"). */
void joins_print(struct ctl *c, FILE *out)
{
	uint64_t now = mono_ms();
	uint32_t pending = 0;

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
	if (mld_failed)
		fprintf(out, "%-24s %-12s %" PRIu64 " memberships refused, last: %s\n", "mld", "-",
			mld_failed, mld_last);
}

uint64_t joins_mld_refused(void)
{
	return mld_failed;
}

void ctl_leave_all(struct ctl *c)
{
	workers_gone = true;
	for (uint32_t i = 0; i < c->br->ngroups; i++)
		for (int s = 0; s < NSIDES; s++)
			join_drop(c, c->br->groups[i], s, true);
	mld_close_all();
}

int joins_init(struct ctl *c)
{
	struct loop_timer *t;

	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &c->br->sd[s];

		fcntl_nonblock(sd->cm_ch->fd);
		fcntl_nonblock(sd->ctx->async_fd);
		if (loop_watch(sd->cm_ch->fd, EPOLLIN, cm_fd, &c->side_ref[s]) ||
		    loop_watch(sd->ctx->async_fd, EPOLLIN, async_fd, &c->side_ref[s]))
			return -errno;
	}
	t = loop_every(0, joins_timer, c, "join retries");
	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "joins due again, ready check (READY=1)");
	return 0;
}
