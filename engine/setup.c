// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Building the engine (control thread, before the workers start): open the InfiniBand
 * and RoCE ports, allocate and register the buffer pool, create the channel pairs and
 * the workers that own them, and tear it all down again.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <numa.h>
#include <sys/mman.h>

#include "bridge.h"
#include "fwd.h"
#include "pool.h"
#include "portprobe.h"
#include "senders.h"
#include "setup.h"
#include "stream.h"

#define BR_BUF_SIZE  4160 /* 40-byte header + 4096 MTU, rounded to 64 */
#define HANDOFF_RING 4096
/*
 * Buffers a worker's cache holds before spilling to the depot: BR_POOL_CACHE, and with
 * shared receive queues on both sides up to BR_POOL_CACHE_MAX out of what the receive
 * queues at full depth leave (bridge_fit_rq). A worker's sends hold their buffers until
 * a signaled completion (one in sigevery per channel), so with tens of channels
 * (thousands of groups) thousands are out at once and come back in lumps: with 512, at
 * 4 096 and 16 000 groups the refill went to the depot and the returns spilled to it
 * every few bursts (34 instructions a packet in the pool's slow paths); 2048 forwards 15%
 * (4 096 groups) and 22% (16 000) more (docs/benchmarks.md, the drain scenario).
 */
#define BR_POOL_CACHE	  (2 * BR_BURST * 8)
#define BR_POOL_CACHE_MAX (2 * BR_BURST * 32)
#define BR_RQ_FIT_MIN	  256 /* receive queues shrink to fit the pool down to this */

static int seterr(char *err, size_t len, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int seterr(char *err, size_t len, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return r;
}

/* Netmask of the interface holding `addr` (network order); 0 if no interface has it. */
static uint32_t ipv4_netmask(uint32_t addr)
{
	struct ifaddrs *ifa, *i;
	uint32_t mask = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask)
			continue;
		if (((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == addr) {
			mask = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
			break;
		}
	}
	freeifaddrs(ifa);
	return mask;
}

/*
 * The IPv6 prefix of the interface holding addr (16 bytes) as two words each: net (the
 * address masked) and mask; mask all 0 when no interface has it (no foreign check). Sets
 * *ifindex to that interface's when it is still 0 (the GID table did not say).
 */
static void ipv6_prefix(const uint8_t *addr, uint64_t net[2], uint64_t mask[2], uint32_t *ifindex)
{
	struct ifaddrs *ifa, *i;
	uint8_t m[16] = {0}, a[16];

	net[0] = net[1] = mask[0] = mask[1] = 0;
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET6 || !i->ifa_netmask)
			continue;
		if (!memcmp(((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr.s6_addr, addr, 16)) {
			memcpy(m, ((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr.s6_addr, 16);
			if (!*ifindex)
				*ifindex = if_nametoindex(i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
	for (int k = 0; k < 16; k++)
		a[k] = addr[k] & m[k];
	memcpy(net, a, 16);
	memcpy(mask, m, 16);
}

/*
 * Does this port qualify for the side? Fills sd on success. down_ok: a port that is not
 * active qualifies too (a named device: the bridge waits for PORT_ACTIVE, sd->state
 * SIDE_DOWN).
 */
static bool side_try_port(struct side_ctx *sd, struct ibv_context *ctx, uint8_t port, bool down_ok)
{
	struct portprobe pp;

	if (!portprobe_port_try(ctx, port, sd->side == SIDE_IB, down_ok, &pp))
		return false;
	sd->gid = pp.gid;
	sd->gid_index = pp.gid_index;
	sd->pkey = pp.pkey;
	sd->ipv4 = pp.ipv4;
	sd->gid6 = pp.gid6;
	sd->gid6_index = pp.gid6_index;
	sd->gid6ll = pp.gid6ll;
	sd->gid6ll_index = pp.gid6ll_index;
	sd->ifindex = pp.ifindex;
	if (sd->side == SIDE_ROCE) {
		sd->netmask = ipv4_netmask(sd->ipv4);
		if (sd->gid6_index >= 0)
			ipv6_prefix(sd->gid6.raw, sd->net6, sd->mask6, &sd->ifindex);
	}
	sd->pattr = pp.pattr;
	sd->port = port;
	sd->mtu = pp.mtu;
	sd->state = pp.pattr.state == IBV_PORT_ACTIVE ? SIDE_UP : SIDE_DOWN;
	return true;
}

int side_open(struct side_ctx *sd, enum side side, const char *dev, uint8_t port, char *err,
	      size_t errlen)
{
	struct ibv_device **list;
	int n, r = -ENODEV;

	memset(sd, 0, sizeof(*sd));
	sd->side = side;
	list = ibv_get_device_list(&n);
	if (!list)
		return seterr(err, errlen, -errno, "no RDMA devices: %s", strerror(errno));
	for (int i = 0; i < n && r; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx;
		struct ibv_device_attr da;

		if (dev[0] && strcmp(dev, name))
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			continue;
		if (ibv_query_device(ctx, &da)) {
			ibv_close_device(ctx);
			continue;
		}
		/* Active ports first; a named device may also have its port down for now. */
		for (int pass = 0; pass < (dev[0] ? 2 : 1) && r; pass++) {
			for (uint8_t p = port ? port : 1; p <= (port ? port : da.phys_port_cnt);
			     p++) {
				if (side_try_port(sd, ctx, p, pass == 1)) {
					sd->ctx = ctx;
					sd->dattr = da;
					snprintf(sd->dev, sizeof(sd->dev), "%s", name);
					r = 0;
					break;
				}
			}
		}
		if (r)
			ibv_close_device(ctx);
	}
	if (r && dev[0]) {
		/* Name the devices there are: the usual cause is a typo or the other side's. */
		char have[256] = "";
		size_t off = 0;
		bool exists = false;

		for (int i = 0; i < n && off < sizeof(have); i++) {
			const char *name = ibv_get_device_name(list[i]);

			exists |= !strcmp(name, dev);
			off += (size_t)snprintf(have + off, sizeof(have) - off, "%s%s",
						i ? ", " : "", name);
		}
		ibv_free_device_list(list);
		if (!exists)
			return seterr(err, errlen, -ENODEV, "%s device %s: not found (devices: %s)",
				      side_name[side], dev, n ? have : "none");
		return seterr(err, errlen, -ENODEV,
			      "%s device %s%s%.0u: not %s or no port%s (devices: %s)",
			      side_name[side], dev, port ? ":" : "", port,
			      side == SIDE_IB ? "InfiniBand" : "Ethernet",
			      side == SIDE_ROCE ? " with a RoCEv2 IPv4 GID" : "", have);
	}
	ibv_free_device_list(list);
	if (r) {
		return seterr(err, errlen, -ENODEV, "no active %s port found%s", side_name[side],
			      side == SIDE_ROCE ? " with a RoCEv2 IPv4 GID" : "");
	}
	sd->pd = ibv_alloc_pd(sd->ctx);
	if (!sd->pd)
		return seterr(err, errlen, -errno, "%s: ibv_alloc_pd: %s", sd->dev,
			      strerror(errno));
	sd->groups = cds_lfht_new_flavor(256, 256, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
					 &urcu_qsbr_flavor, NULL);
	if (!sd->groups)
		return seterr(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

/* NUMA node of an RDMA device (its sysfs directory, ibdev_path), -1 if unknown. */
int side_numa_node(const struct side_ctx *sd)
{
	char path[sizeof(sd->ctx->device->ibdev_path) + 32], buf[16];
	FILE *f;
	int node = -1;

	if (!sd->ctx || !sd->ctx->device->ibdev_path[0])
		return -1;
	snprintf(path, sizeof(path), "%s/device/numa_node", sd->ctx->device->ibdev_path);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			node = atoi(buf);
		fclose(f);
	}
	return node;
}

/*
 * Zeroed memory of a worker bound to its NUMA node (-1: the default policy): mmap'd, so
 * the pages come from that node when first touched, whichever thread touches them.
 * libnuma's numa_alloc_onnode is the same with its own bind policy; this keeps one
 * allocator whether or not the kernel has NUMA. Page-granular: for rings and caches.
 */
static void *node_alloc(size_t size, int node)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (node >= 0 && numa_available() >= 0 && node <= numa_max_node())
		numa_tonode_memory(p, size, node);
	return p;
}

static void node_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/* The node of worker i's memory (placement plan), -1 when not placed. */
static int worker_node(const struct bridge_cfg *c, uint32_t i)
{
	return c->placed && c->nworkers ? c->wnode[i] : c->placed ? c->node : -1;
}

/* The mask of the smallest power-of-two ring holding n entries. */
static uint32_t pow2_mask(uint32_t n)
{
	uint32_t r = 1;

	while (r < n)
		r <<= 1;
	return r - 1;
}

/* The buffers a channel holds for its peer's refill (fwd.c, chan_tx_done): what one
 * signaled completion retires, and one burst. */
static uint32_t chan_hold(const struct bridge_cfg *c)
{
	return c->sig_every + BR_BURST;
}

#define CH_SCACHE_MAX (1u << 20) /* 8 MiB of pointers per channel */
#define CH_QCACHE_MAX (1u << 18) /* 4 MiB per channel */

/*
 * Size a channel's sender caches for `senders` records (the sender table's capacity per
 * worker, the `senders` feature): the 2-way cache twice that, so that two senders rarely
 * share a set, and the QPN cache that (a device's QPNs are consecutive: direct-mapped,
 * they do not collide), each at least its default (CH_SCACHE, CH_QCACHE) and at most
 * CH_SCACHE_MAX, CH_QCACHE_MAX entries. With the default 16 384 senders: the defaults.
 */
static void chan_cache_sizes(struct channel *ch, uint32_t senders)
{
	uint32_t n = pow2_mask(senders < CH_SCACHE_MAX ? senders : CH_SCACHE_MAX) + 1;
	uint32_t sc = 2 * n, qc = n;

	sc = sc < CH_SCACHE ? CH_SCACHE : sc > CH_SCACHE_MAX ? CH_SCACHE_MAX : sc;
	qc = qc < CH_QCACHE ? CH_QCACHE : qc > CH_QCACHE_MAX ? CH_QCACHE_MAX : qc;
	ch->scache_n = sc;
	ch->scache_shift = 64 - (uint32_t)__builtin_ctz(sc / 2);
	ch->qcache_mask = qc - 1;
}

/* Move a UD QP to RTS with Q_Key qkey (a channel starts with rdma_cm's BR_UDP_QKEY). */
static int qp_to_rts(struct ibv_qp *qp, uint8_t port, uint32_t qkey)
{
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qkey = qkey;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (r)
		return -r;
	a.qp_state = IBV_QPS_RTR;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (r)
		return -r;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return -r;
}

/* Pairs of worker i (pair k belongs to worker k % nw). */
static uint32_t worker_pairs(const struct bridge *br, uint32_t nw, uint32_t i)
{
	return br->npairs / nw + (i < br->npairs % nw);
}

/*
 * Whether a channel of worker i on side s holds its completed sends' buffers for its
 * peer's refill (chan_tx_done): always when the peer side has a receive queue per QP;
 * with an SRQ on the peer side only when the worker has one pair, so that what is held
 * does not grow with the QPs (the single-flow case keeps the shortcut; with more pairs
 * the buffers go back through the worker's cache, from which the SRQ refills).
 */
static bool chan_holds(const struct bridge *br, uint32_t nw, uint32_t i, enum side s)
{
	return !br->sd[!s].srq || worker_pairs(br, nw, i) == 1;
}

static int channel_create(struct bridge *br, struct side_ctx *sd, uint32_t index, int node,
			  struct wside *ws, bool hold, struct channel **out, char *err,
			  size_t errlen)
{
	struct ibv_qp_init_attr_ex qa;
	struct channel *ch;
	int r;

	/* On the node of the worker that owns it: its rings, caches and counters. */
	ch = node_alloc(sizeof(*ch), node);
	if (!ch)
		return seterr(err, errlen, -ENOMEM, "out of memory");
	ch->side = sd->side;
	ch->index = index;
	ch->br = br;
	ch->sd = sd;
	ch->lkey = sd->lkey;
	ch->own_rq.depth = br->cfg.rq_depth;
	ch->rq = ws->rq.srq ? &ws->rq : &ch->own_rq;
	ch->tt = &ws->tt;
	ch->sq_depth = br->cfg.sq_depth;
	ch->sig_every = br->cfg.sig_every;
	ch->tx_hold = hold ? chan_hold(&br->cfg) : 0;
	/* Posted sends and held buffers: at most sq_depth + tx_hold entries. */
	ch->tx_mask = pow2_mask(ch->sq_depth + ch->tx_hold);
	ch->tx_buf = node_alloc(((size_t)ch->tx_mask + 1) * sizeof(uint32_t), node);
	ch->bl_mask = pow2_mask(br->cfg.backlog ? br->cfg.backlog : 1);
	ch->bl = node_alloc(((size_t)ch->bl_mask + 1) * sizeof(*ch->bl), node);
	chan_cache_sizes(ch, br->cfg.max_senders);
	ch->scache = node_alloc((size_t)ch->scache_n * sizeof(*ch->scache), node);
	ch->qcache = node_alloc(((size_t)ch->qcache_mask + 1) * sizeof(*ch->qcache), node);
	ch->flows = node_alloc(CH_FLOWS * sizeof(*ch->flows), node);
	*out = ch;
	if (!ch->tx_buf || !ch->bl || !ch->scache || !ch->qcache || !ch->flows)
		return seterr(err, errlen, -ENOMEM, "out of memory");
	/* The worker's completion queue of this side, and its SRQ when there is one. */
	ch->cq = ws->cq;
	ch->cc = ws->cc;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = ch->cq;
	qa.recv_cq = ch->cq;
	qa.srq = ws->rq.srq;
	qa.cap.max_send_wr = ch->sq_depth;
	qa.cap.max_recv_wr = ws->rq.srq ? 0 : ch->own_rq.depth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = sd->pd;
	qa.qp_context = ch;
	if (sd->block_lb) {
		qa.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		qa.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	}
	ch->qp = ibv_create_qp_ex(sd->ctx, &qa);
	if (!ch->qp && (qa.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS)) {
		/* rxe and others refuse create flags: filter our own packets instead. */
		sd->block_lb = false;
		qa.comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_CREATE_FLAGS;
		qa.create_flags = 0;
		ch->qp = ibv_create_qp_ex(sd->ctx, &qa);
	}
	if (!ch->qp)
		return seterr(err, errlen, -errno, "%s: ibv_create_qp: %s", sd->dev,
			      strerror(errno));
	r = qp_to_rts(ch->qp, sd->port, BR_UDP_QKEY);
	if (r)
		return seterr(err, errlen, r, "%s: QP to RTS: %s", sd->dev, strerror(-r));
	ch->qkey = BR_UDP_QKEY;
	ch->qpn = ch->qp->qp_num;
	ch->own_rq.qp = ch->qp;
	return 0;
}

static void channel_destroy(struct channel *ch)
{
	if (!ch)
		return;
	if (ch->qp)
		ibv_destroy_qp(ch->qp);
	node_free(ch->tx_buf, ((size_t)ch->tx_mask + 1) * sizeof(uint32_t));
	node_free(ch->bl, ((size_t)ch->bl_mask + 1) * sizeof(*ch->bl));
	node_free(ch->scache, (size_t)ch->scache_n * sizeof(*ch->scache));
	node_free(ch->qcache, ((size_t)ch->qcache_mask + 1) * sizeof(*ch->qcache));
	node_free(ch->flows, CH_FLOWS * sizeof(*ch->flows));
	node_free(ch, sizeof(*ch));
}

/*
 * The CPU of worker i: the placement plan's (host/placement.c: NIC-local physical
 * cores, isolated ones first, or --cpus), -1 (not pinned) without a plan.
 */
static int worker_cpu(const struct bridge_cfg *c, uint32_t i)
{
	return c->placed ? c->wcpu[i] : -1;
}

/*
 * Fit the receive queues to the pool (docs/pool.md, "The receive budget"). A posted
 * receive holds its buffer until a packet arrives: an idle queue keeps all of it, so the
 * pool must hold every receive queue at once (per side: one SRQ per worker, or one queue
 * per channel where the device has no SRQ) and the buffers channels hold for their
 * peer's refill (chan_holds: with SRQs at most one pair per worker holds), plus, per
 * worker, what the busy path has in hand: a full cache (cache_size: it spills beyond
 * that, and keeps more only while the depot is momentarily blocked), one full send queue
 * and two bursts. The depth is lowered from cfg.rq_depth (down to BR_RQ_FIT_MIN, or the
 * configured depth if smaller) when the queues do not fit. -ENOBUFS with the minimum in
 * err when even that does not fit; br->pool_min is that minimum either way. *cache: the
 * size of a worker's buffer cache, cache_size or more (below).
 */
static int bridge_fit_rq(struct bridge *br, uint32_t nw, uint32_t cache_size, uint32_t *cache,
			 char *err, size_t errlen)
{
	struct bridge_cfg *c = &br->cfg;
	uint64_t nq = 0, nhold = 0;
	uint64_t per_worker = (uint64_t)cache_size + c->sq_depth + 2ull * BR_BURST;
	uint64_t reserve, floor_rq, fit;

	for (int s = 0; s < NSIDES; s++) {
		nq += br->sd[s].srq ? nw : br->npairs;
		for (uint32_t i = 0; i < nw; i++)
			if (chan_holds(br, nw, i, (enum side)s))
				nhold += worker_pairs(br, nw, i);
	}
	reserve = nw * per_worker + nhold * chan_hold(c);
	floor_rq = c->rq_depth < BR_RQ_FIT_MIN ? c->rq_depth : BR_RQ_FIT_MIN;
	br->rq_asked = c->rq_depth;
	br->pool_min = (uint32_t)(nq * floor_rq + reserve);
	fit = c->nbufs > reserve ? (c->nbufs - reserve) / nq : 0;
	if (fit < floor_rq)
		return seterr(err, errlen, -ENOBUFS,
			      "buffers=%u is too small: this configuration needs at least %" PRIu64
			      " (%" PRIu64 " receive queue%s x RQ depth %" PRIu64 " + %" PRIu64
			      " channel%s x %u held + %u worker%s x "
			      "(cache %u + SQ depth %u + %u in flight))",
			      c->nbufs, nq * floor_rq + reserve, nq, nq == 1 ? "" : "s", floor_rq,
			      nhold, nhold == 1 ? "" : "s", chan_hold(c), nw, nw == 1 ? "" : "s",
			      cache_size, c->sq_depth, 2 * BR_BURST);
	if (fit < c->rq_depth) {
		/* A whole number of receive bursts, never below the floor. */
		fit -= fit % BR_BURST;
		c->rq_depth = (uint32_t)(fit > floor_rq ? fit : floor_rq);
	}
	/* The smallest pool is counted with BR_POOL_CACHE. A larger cache takes only what
	 * the queues at their depth leave, and only with SRQs on both sides: there a pair
	 * made at run time takes no buffers, where without SRQs it needs two queues' worth
	 * of what is left (bridge_pair_add). */
	*cache = cache_size;
	if (br->sd[SIDE_IB].srq && br->sd[SIDE_ROCE].srq) {
		uint64_t used = nq * c->rq_depth + reserve;
		uint64_t more = c->nbufs > used ? (c->nbufs - used) / nw : 0;

		if (more > BR_POOL_CACHE_MAX - cache_size)
			more = BR_POOL_CACHE_MAX - cache_size;
		*cache = cache_size + (uint32_t)(more - more % (2 * BR_BURST));
	}
	br->pool_need = nq * c->rq_depth + reserve + (uint64_t)nw * (*cache - cache_size);
	return 0;
}

static void wside_view_free(struct wside_view *v)
{
	if (!v)
		return;
	free(v->map);
	free(v->slot);
	free(v);
}

static void wside_view_free_rcu(struct rcu_head *h)
{
	wside_view_free(caa_container_of(h, struct wside_view, rcu));
}

/*
 * The view of a worker's side holding channels chan[0..n) and, when `more` is not NULL,
 * `more` after them (struct wside_view): its QPN -> channel map is the smallest table,
 * from twice the channels up to 2^16 entries, with a multiplier that puts every QPN in
 * an entry of its own. NULL with errno: ENOMEM, or EEXIST when no multiplier does (QPNs
 * are distinct: not seen in practice).
 */
static struct wside_view *wside_view_new(struct channel *const *chan, uint32_t n,
					 struct channel *more)
{
	static const uint32_t muls[] = {0x9e3779b1u, 0x85ebca6bu, 0xc2b2ae35u, 0x27d4eb2fu,
					0x165667b1u, 0x1b873593u, 0xcc9e2d51u, 0x61c88647u};
	uint32_t nchan = n + (more != NULL), bits = 1;
	struct wside_view *v = calloc(1, sizeof(*v) + (nchan ? nchan : 1) * sizeof(v->chan[0]));

	if (!v)
		return NULL;
	if (n)
		memcpy(v->chan, chan, n * sizeof(*chan));
	if (more)
		v->chan[n] = more;
	v->nchan = nchan;
	while ((1u << bits) < 2 * nchan)
		bits++;
	for (; bits <= 16; bits++) {
		for (size_t m = 0; m < sizeof(muls) / sizeof(muls[0]); m++) {
			struct channel **map = calloc((size_t)1 << bits, sizeof(*map));
			uint32_t k;

			if (!map) {
				free(v);
				errno = ENOMEM;
				return NULL;
			}
			for (k = 0; k < nchan; k++) {
				uint32_t at = (uint32_t)(v->chan[k]->qpn * muls[m]) >> (32 - bits);

				if (map[at])
					break;
				map[at] = v->chan[k];
			}
			if (k == nchan) {
				v->slot = malloc(((size_t)1 << bits) * sizeof(*v->slot));
				if (!v->slot) {
					free(map);
					free(v);
					errno = ENOMEM;
					return NULL;
				}
				memset(v->slot, 0xff, ((size_t)1 << bits) * sizeof(*v->slot));
				v->map = map;
				v->map_mul = muls[m];
				v->map_shift = 32 - bits;
				return v;
			}
			free(map);
		}
	}
	free(v);
	errno = EEXIST;
	return NULL;
}

/* A side's own QPN set (struct qpn_set): chan[0..n)'s QPNs. NULL on ENOMEM. */
static struct qpn_set *qpn_set_new(struct channel *const *chan, uint32_t n)
{
	struct qpn_set *o = calloc(1, sizeof(*o) + (n ? n : 1) * sizeof(o->qpn[0]));

	if (!o)
		return NULL;
	o->n = n;
	for (uint32_t k = 0; k < n; k++)
		o->qpn[k] = chan[k]->qpn;
	return o;
}

static void qpn_set_free_rcu(struct rcu_head *h)
{
	free(caa_container_of(h, struct qpn_set, rcu));
}

/*
 * The channel pairs a worker's CQ is sized for (struct wside): its pairs at start, or,
 * when more, as many as the groups the IB multicast LID space holds can need
 * (BR_MLIDS / mcqp; IBA 1.4 vol. 1, 4.1.1: a group has one multicast LID), at most
 * BR_CQ_PAIRS_MAX, and no more than the device's max_cqe takes. Every pair costs a full send queue
 * of completions (a QP in the error state completes every posted send, signaled or not) and,
 * without an SRQ, its receive queue.
 */
#define BR_MLIDS	16384 /* > the 16 383 IB multicast LIDs 0xc000-0xfffe: groups at most */
#define BR_CQ_PAIRS_MAX 128
static uint32_t wside_cq_pairs(const struct bridge *br, const struct side_ctx *sd, uint32_t npairs,
			       uint32_t rq_depth)
{
	const struct bridge_cfg *c = &br->cfg;
	uint64_t per_pair = c->sq_depth + (sd->srq ? 0 : c->rq_depth);
	uint64_t base = sd->srq ? rq_depth : 0;
	uint32_t want = (BR_MLIDS + c->mcqp - 1) / c->mcqp;

	if (want > BR_CQ_PAIRS_MAX)
		want = BR_CQ_PAIRS_MAX;
	if (sd->dattr.max_cqe > 0 && base + want * per_pair > (uint64_t)sd->dattr.max_cqe)
		want = (uint32_t)(((uint64_t)sd->dattr.max_cqe - base) / per_pair);
	return want > npairs ? want : npairs;
}

/*
 * A worker's completion queue and shared receive queue on side sd (struct wside): the
 * CQ holds every send its channels there can have posted and every receive its queues
 * can hold, for ws->cq_pairs pairs (wside_cq_pairs: room for pairs added at run time).
 * The SRQ when the device has them (sd->srq), of the fitted depth (at most the device's
 * max_srq_wr).
 */
static int wside_create(struct bridge *br, struct side_ctx *sd, struct wside *ws, uint32_t npairs,
			char *err, size_t errlen)
{
	const struct bridge_cfg *c = &br->cfg;
	uint64_t cqe;

	if (!c->nworkers) {
		ws->cc = ibv_create_comp_channel(sd->ctx);
		if (!ws->cc)
			return seterr(err, errlen, -errno, "%s: ibv_create_comp_channel: %s",
				      sd->dev, strerror(errno));
	}
	ws->rq.depth = c->rq_depth;
	if (sd->srq) {
		struct ibv_srq_init_attr sa = {.attr = {.max_sge = 1}};

		if (ws->rq.depth > (uint32_t)sd->dattr.max_srq_wr)
			ws->rq.depth = (uint32_t)sd->dattr.max_srq_wr;
		sa.attr.max_wr = ws->rq.depth;
		ws->rq.srq = ibv_create_srq(sd->pd, &sa);
		if (!ws->rq.srq)
			return seterr(err, errlen, -errno, "%s: ibv_create_srq(%u): %s", sd->dev,
				      ws->rq.depth, strerror(errno));
	}
	ws->cq_pairs = wside_cq_pairs(br, sd, npairs, ws->rq.depth);
	cqe = (uint64_t)ws->cq_pairs * c->sq_depth +
	      (sd->srq ? ws->rq.depth : (uint64_t)ws->cq_pairs * c->rq_depth);
	if (sd->dattr.max_cqe > 0 && cqe > (uint64_t)sd->dattr.max_cqe)
		cqe = (uint64_t)sd->dattr.max_cqe;
	ws->cq = ibv_create_cq(sd->ctx, (int)cqe, ws, ws->cc, 0);
	if (!ws->cq)
		return seterr(err, errlen, -errno, "%s: ibv_create_cq(%" PRIu64 "): %s", sd->dev,
			      cqe, strerror(errno));
	return 0;
}

static void wside_destroy(struct wside *ws)
{
	if (ws->rq.srq)
		ibv_destroy_srq(ws->rq.srq);
	if (ws->cq)
		ibv_destroy_cq(ws->cq);
	if (ws->cc)
		ibv_destroy_comp_channel(ws->cc);
	wside_view_free(ws->view);
	memset(ws, 0, sizeof(*ws));
}

/*
 * The pairs the configured groups need: ceil(n / mcqp) for the n groups of each (IB, RoCE)
 * Q_Key combination (br->groups when it holds them, else ngroups of rdma_cm's).
 */
static uint32_t bridge_qkey_pairs(const struct bridge *br, uint32_t ngroups, uint32_t mcqp)
{
	uint32_t pairs = 0;

	if (!br->groups || br->ngroups != ngroups)
		return (ngroups + mcqp - 1) / mcqp;
	for (uint32_t i = 0; i < ngroups; i++) {
		const struct group *g = br->groups[i];
		uint32_t n = 0;
		bool first = true;

		for (uint32_t j = 0; j < ngroups && first; j++) {
			const struct group *h = br->groups[j];

			if (group_qkey(h, SIDE_IB) != group_qkey(g, SIDE_IB) ||
			    group_qkey(h, SIDE_ROCE) != group_qkey(g, SIDE_ROCE))
				continue;
			if (j < i)
				first = false; /* counted with its first group */
			n++;
		}
		if (first)
			pairs += (n + mcqp - 1) / mcqp;
	}
	return pairs;
}

int bridge_build(struct bridge *br, uint32_t ngroups, char *err, size_t errlen)
{
	struct bridge_cfg *c = &br->cfg;
	uint32_t mcqp = c->mcqp, nw = c->nworkers ? c->nworkers : 1;
	struct pool_params pp;
	int r;

	for (int s = 0; s < NSIDES; s++) {
		uint32_t dev_max = (uint32_t)br->sd[s].dattr.max_mcast_qp_attach;

		/* True only while the NIC blocks our own multicast (see channel_create). */
		br->sd[s].block_lb = atomic_load(&br->loopback_prev) != 0;
		if (!mcqp || (dev_max && mcqp > dev_max))
			mcqp = dev_max ? dev_max : 1;
		/* One SRQ per worker and side where the device has them (else one receive
		 * queue per QP, logged by the control thread). */
		br->sd[s].srq = br->sd[s].dattr.max_srq > 0;
	}
	/* A whole number of pairs per worker: the groups, dealt round-robin over the pairs
	 * (pair k belongs to worker k % nw), are spread evenly over the workers. A QP has
	 * one Q_Key: each combination of the groups' Q_Keys needs pairs of its own. */
	br->npairs = bridge_qkey_pairs(br, ngroups, mcqp);
	br->npairs = (br->npairs + nw - 1) / nw * nw;
	if (br->npairs < nw)
		br->npairs = nw;
	c->mcqp = mcqp;
	memset(&pp, 0, sizeof(pp));
	r = bridge_fit_rq(br, nw, BR_POOL_CACHE, &pp.cache_size, err, errlen);
	if (r)
		return r;

	pp.nbufs = c->nbufs;
	pp.buf_size = BR_BUF_SIZE;
	/* The workers' node (the plan's: the NIC of the side receiving most groups). */
	pp.numa_node = c->placed ? c->node : side_numa_node(&br->sd[SIDE_IB]);
	pp.huge = c->huge;
	pp.nworkers = nw;
	br->pool = pool_new(&pp);
	if (!br->pool)
		return seterr(err, errlen, -errno, "buffer pool of %u buffers%s: %s", c->nbufs,
			      c->huge ? " in huge pages" : "", strerror(errno));
	for (int s = 0; s < NSIDES; s++) {
		r = pool_register(br->pool, br->sd[s].pd, &br->sd[s].lkey);
		if (r)
			return seterr(err, errlen, r, "%s: registering the buffer pool: %s",
				      br->sd[s].dev, strerror(-r));
	}

	br->nworkers = nw;
	/* Zeroed, page-aligned workers, each bound to its node before it is first touched:
	 * the heartbeat, latency histogram and capture ring pointer live on the node of the
	 * CPU that writes them (the channels' rings and counters are node_alloc'd too). */
	br->workers = node_alloc(sizeof(struct worker) * nw, -1);
	if (!br->workers)
		return seterr(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < nw; i++) {
		int node = worker_node(c, i);

		if (node >= 0 && numa_available() >= 0 && node <= numa_max_node())
			numa_tonode_memory(&br->workers[i], sizeof(struct worker), node);
	}
	for (uint32_t i = 0; i < nw; i++) {
		struct worker *w = &br->workers[i];

		w->id = i;
		w->br = br;
		w->cpu = c->nworkers ? worker_cpu(c, i) : -1;
		w->pc = pool_cache(br->pool, i);
		w->in = calloc(nw, sizeof(*w->in));
		if (!w->in)
			return seterr(err, errlen, -ENOMEM, "out of memory");
		for (int s = 0; s < NSIDES; s++) {
			r = wside_create(br, &br->sd[s], &w->ws[s], worker_pairs(br, nw, i), err,
					 errlen);
			if (r)
				return r;
		}
		for (uint32_t f = 0; f < nw && nw > 1; f++) {
			struct handoff_ring *hr;

			if (f == i)
				continue;
			/* The consumer's ring: on its node. */
			hr = node_alloc(sizeof(*hr), worker_node(c, i));
			if (!hr)
				return seterr(err, errlen, -ENOMEM, "out of memory");
			hr->mask = HANDOFF_RING - 1;
			hr->ent = node_alloc(HANDOFF_RING * sizeof(*hr->ent), worker_node(c, i));
			if (!hr->ent)
				return seterr(err, errlen, -ENOMEM, "out of memory");
			w->in[f] = hr;
		}
	}
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];

		sd->chan = calloc(br->npairs, sizeof(*sd->chan));
		if (!sd->chan)
			return seterr(err, errlen, -ENOMEM, "out of memory");
		for (uint32_t k = 0; k < br->npairs; k++) {
			r = channel_create(
				br, sd, k, worker_node(c, k % nw), &br->workers[k % nw].ws[s],
				chan_holds(br, nw, k % nw, s), &sd->chan[k], err, errlen);
			if (r)
				return r;
			sd->nchan = k + 1;
		}
		sd->own = qpn_set_new(sd->chan, sd->nchan);
		if (!sd->own)
			return seterr(err, errlen, -ENOMEM, "out of memory");
	}
	for (uint32_t k = 0; k < br->npairs; k++) {
		struct worker *w = &br->workers[k % nw];
		struct channel *ib = br->sd[SIDE_IB].chan[k], *ro = br->sd[SIDE_ROCE].chan[k];

		ib->peer = ro;
		ro->peer = ib;
		ib->w = ro->w = w;
		w->nchan += 2;
		w->npairs++;
	}
	for (uint32_t i = 0; i < nw; i++) {
		for (int s = 0; s < NSIDES; s++) {
			struct channel **chan = calloc(br->npairs, sizeof(*chan));
			uint32_t n = 0;

			if (!chan)
				return seterr(err, errlen, -ENOMEM, "out of memory");
			for (uint32_t k = i; k < br->npairs; k += nw)
				chan[n++] = br->sd[s].chan[k];
			br->workers[i].ws[s].view = wside_view_new(chan, n, NULL);
			free(chan);
			if (!br->workers[i].ws[s].view)
				return seterr(err, errlen, -errno,
					      "%s: no QPN map for worker %u's %u QPs: %s",
					      br->sd[s].dev, i, n, strerror(errno));
		}
	}
	br->senders = sender_table_new(nw, c->max_senders);
	if (!br->senders)
		return seterr(err, errlen, -ENOMEM, "sender table: out of memory");
	br->pgm = pgm_stream_table_new(NULL);
	if (!br->pgm)
		return seterr(err, errlen, -ENOMEM, "PGM stream table: out of memory");
	br->groups_by_addr =
		cds_lfht_new_flavor(256, 256, 0, CDS_LFHT_AUTO_RESIZE, &urcu_qsbr_flavor, NULL);
	if (!br->groups_by_addr)
		return seterr(err, errlen, -ENOMEM, "out of memory");
	/* Receive queues are filled before the workers start (no owner yet). */
	for (uint32_t k = 0; k < br->npairs; k++)
		for (int s = 0; s < NSIDES; s++)
			chan_refill(&br->workers[k % nw], br->sd[s].chan[k]);
	return 0;
}

int channel_set_qkey(struct channel *ch, uint32_t qkey)
{
	struct ibv_qp_attr a;
	int r;

	if (ch->qkey == qkey)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qkey = qkey;
	/* RTS -> RTS with the Q_Key (IBA 11.2.4.2: an optional attribute of UD in RTS). */
	r = ibv_modify_qp(ch->qp, &a, IBV_QP_QKEY);
	if (r)
		return -r;
	ch->qkey = qkey;
	return 0;
}

int side_qkey_probe(struct side_ctx *sd, uint32_t qkey)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int r;

	cq = ibv_create_cq(sd->ctx, 1, NULL, NULL, 0);
	if (!cq)
		return -errno;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(sd->pd, &qa);
	if (!qp) {
		r = -errno;
		ibv_destroy_cq(cq);
		return r;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = sd->port;
	a.qkey = qkey;
	r = -ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	return r;
}

int bridge_pair_add(struct bridge *br, uint32_t wid, char *err, size_t errlen)
{
	const struct bridge_cfg *c = &br->cfg;
	struct worker *w = &br->workers[wid];
	struct channel *ch[NSIDES] = {NULL, NULL};
	struct wside_view *v[NSIDES] = {NULL, NULL};
	struct qpn_set *own[NSIDES] = {NULL, NULL};
	uint64_t need = br->pool_need;
	uint32_t k = br->npairs;
	int r = -ENOMEM;

	for (int s = 0; s < NSIDES; s++) {
		if (w->npairs + 1 > w->ws[s].cq_pairs)
			return seterr(err, errlen, -ENOSPC,
				      "worker %u's completion queues are sized for %u channel "
				      "pairs at start: restart with more workers or a higher mcqp",
				      wid, w->ws[s].cq_pairs);
		/* What the new pair's channel on side s takes from the pool (bridge_fit_rq):
		 * its own receive queue without an SRQ; the held buffers where the peer side
		 * has no SRQ (with one, a worker of several pairs holds none). */
		if (!br->sd[s].srq)
			need += c->rq_depth;
		if (!br->sd[!s].srq)
			need += chan_hold(c);
	}
	if (need > c->nbufs)
		return seterr(err, errlen, -ENOBUFS,
			      "buffers=%u holds no other channel pair: its receive queues need "
			      "%" PRIu64 " with the others",
			      c->nbufs, need);
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];
		struct channel **chan = realloc(sd->chan, (k + 1) * sizeof(*chan));

		if (!chan)
			goto fail_msg;
		sd->chan = chan;
		r = channel_create(br, sd, k, worker_node(c, wid), &w->ws[s], !br->sd[!s].srq,
				   &ch[s], err, errlen);
		if (r)
			goto fail;
	}
	ch[SIDE_IB]->peer = ch[SIDE_ROCE];
	ch[SIDE_ROCE]->peer = ch[SIDE_IB];
	ch[SIDE_IB]->w = ch[SIDE_ROCE]->w = w;
	for (int s = 0; s < NSIDES; s++) {
		struct wside_view *old = w->ws[s].view;

		chan_prepare(ch[s]);

		br->sd[s].chan[k] = ch[s];
		own[s] = qpn_set_new(br->sd[s].chan, k + 1);
		v[s] = wside_view_new(old->chan, old->nchan, ch[s]);
		if (!own[s] || !v[s]) {
			r = -errno;
			goto fail_msg;
		}
	}
	/*
	 * Publish (control thread; release, pairs with the rcu_dereference of the workers):
	 * before any path to the new QPs exists, since no group names them yet and nothing
	 * is posted on them. A worker's next CQ poll, hand-off drain and refill see them.
	 */
	for (int s = 0; s < NSIDES; s++) {
		struct qpn_set *o = br->sd[s].own;
		struct wside_view *old = w->ws[s].view;

		rcu_assign_pointer(br->sd[s].own, own[s]);
		rcu_assign_pointer(w->ws[s].view, v[s]);
		urcu_qsbr_call_rcu(&o->rcu, qpn_set_free_rcu);
		urcu_qsbr_call_rcu(&old->rcu, wside_view_free_rcu);
		br->sd[s].nchan = k + 1;
	}
	br->npairs = k + 1;
	br->pool_need = need;
	w->npairs++;
	w->nchan += 2;
	/* With --workers 0 we are the pair's worker: fill its own receive queues now (a
	 * worker thread does on its next pass, worker_refill). */
	if (!c->nworkers)
		for (int s = 0; s < NSIDES; s++)
			if (!ch[s]->rq->srq)
				chan_refill(w, ch[s]);
	return (int)k;
fail_msg:
	seterr(err, errlen, r, "a new channel pair: %s", strerror(-r));
fail:
	for (int s = 0; s < NSIDES; s++) {
		free(own[s]);
		wside_view_free(v[s]);
		channel_destroy(ch[s]);
	}
	return r;
}

void bridge_destroy(struct bridge *br)
{
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];

		for (uint32_t k = 0; sd->chan && k < sd->nchan; k++)
			channel_destroy(sd->chan[k]);
		free(sd->chan);
		free(sd->own);
		sd->own = NULL;
		sd->chan = NULL;
	}
	for (uint32_t i = 0; br->workers && i < br->nworkers; i++) {
		struct worker *w = &br->workers[i];

		for (uint32_t f = 0; w->in && f < br->nworkers; f++) {
			if (w->in[f])
				node_free(w->in[f]->ent, HANDOFF_RING * sizeof(*w->in[f]->ent));
			node_free(w->in[f], sizeof(*w->in[f]));
		}
		free(w->in);
		for (int s = 0; s < NSIDES; s++)
			wside_destroy(&w->ws[s]);
	}
	node_free(br->workers, sizeof(struct worker) * br->nworkers);
	br->workers = NULL;
	pool_free(br->pool);
	br->pool = NULL;
	sender_table_free(br->senders);
	br->senders = NULL;
	pgm_stream_table_free(br->pgm);
	br->pgm = NULL;
	/* cds_lfht_destroy: not from a read-side critical section (an online QSBR thread). */
	urcu_qsbr_thread_offline();
	if (br->groups_by_addr)
		cds_lfht_destroy(br->groups_by_addr, NULL);
	br->groups_by_addr = NULL;
	for (int s = 0; s < NSIDES; s++) {
		if (br->sd[s].groups)
			cds_lfht_destroy(br->sd[s].groups, NULL);
		br->sd[s].groups = NULL;
	}
	urcu_qsbr_thread_online();
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];

		if (sd->pd)
			ibv_dealloc_pd(sd->pd);
		sd->pd = NULL;
		if (sd->ctx)
			ibv_close_device(sd->ctx);
		sd->ctx = NULL;
	}
}
