// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mctool.c - options, port, joins and the packet header shared by mcsender and
 * mclisten (see mctool.h).
 *
 * The port choice applies ib2roce's rule (engine/portprobe.c, shared with side_open of
 * engine/setup.c: IB: GID 0 and P_Key index 0; RoCE: the RoCEv2 GID with an IPv4-mapped
 * address) to the first active port; side_open itself lives with bridge_build and the
 * engine's RCU tables, which these programs do not need.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>

#include "err.h"
#include "groupopts.h"
#include "mctool.h"
#include "options.h"
#include "portprobe.h"

const char *mct_fabric_name(enum mct_fabric f)
{
	return f == MCT_IB ? "IB" : "RoCE";
}

clockid_t mct_clock_id(enum mct_clock c)
{
	return c == MCT_CLOCK_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

/* ---- The packet header ---- */

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

void mct_hdr_put(void *buf, const struct mct_hdr *h)
{
	uint8_t *p = buf;

	put32(p, MCT_MAGIC);
	p[4] = MCT_NOT_PGM;
	p[5] = h->clock;
	p[6] = h->flags;
	p[7] = 0;
	put32(p + 8, h->stream);
	put32(p + 12, h->total);
	put64(p + 16, h->seq);
	put64(p + 24, h->tx_ns);
}

bool mct_hdr_get(const void *buf, size_t len, struct mct_hdr *h)
{
	const uint8_t *p = buf;

	if (len < MCT_HDR_LEN || get32(p) != MCT_MAGIC || p[4] != MCT_NOT_PGM)
		return false;
	h->magic = MCT_MAGIC;
	h->clock = p[5];
	h->flags = p[6];
	h->stream = get32(p + 8);
	h->total = get32(p + 12);
	h->seq = get64(p + 16);
	h->tx_ns = get64(p + 24);
	h->reserved = 0;
	return true;
}

/* ---- Options ---- */

static int add_group(void *ctx, const char *arg, char *err, size_t len)
{
	struct mct_cfg *c = ctx;
	struct group *g, *dup;
	const char *why;
	int r;

	if (c->ngroups == c->cap) {
		uint32_t cap = c->cap ? 2 * c->cap : 8;
		struct mct_group *v = realloc(c->groups, cap * sizeof(*v));

		if (!v)
			return opt_errf(err, len, -ENOMEM, "out of memory");
		c->groups = v;
		c->cap = cap;
	}
	g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return opt_errf(err, len, -ENOMEM, "out of memory");
	memset(g, 0, sizeof(*g));
	r = group_spec_parse(g, arg, c->gd.fmt, c->gd.port, c->gd.tos, c->gd.qkey, err, len);
	if (r) {
		free(g);
		return r;
	}
	/* w= is the bridge's weight of a group: these programs have nothing it could weigh. */
	for (const char *o = strchr(arg, '#'); o; o = strchr(o + 1, ','))
		if (!strncmp(o + 1, "w=", 2)) {
			free(g);
			return opt_errf(err, len, -EINVAL,
					"group '%s': w= (the bridge's weight) is not an option of "
					"%s",
					arg, c->prog);
		}
	/* An index (engine/mgid.c), not a walk of the groups: thousands of them (bench/). */
	dup = group_index_same(&c->gidx, g, &why);
	if (dup) {
		if (!strcmp(dup->spec, arg))
			opt_errf(err, len, -EINVAL, "group '%s' given twice", arg);
		else
			opt_errf(err, len, -EINVAL, "group '%s': %s already given by '%s'", arg,
				 !strcmp(why, "RoCE group") ? "address" : why, dup->spec);
		free(g);
		return -EINVAL;
	}
	if (group_index_add(&c->gidx, g)) {
		free(g);
		return opt_errf(err, len, -ENOMEM, "out of memory");
	}
	memset(&c->groups[c->ngroups], 0, sizeof(c->groups[0]));
	c->groups[c->ngroups++].spec = g;
	return 0;
}

static int opt_device(void *ctx, const char *arg, char *err, size_t len)
{
	struct mct_cfg *c = ctx;

	return groupopts_dev_parse(arg, c->ib_dev, sizeof(c->ib_dev), &c->ib_port, err, len);
}

static int opt_roce(void *ctx, const char *arg, char *err, size_t len)
{
	struct mct_cfg *c = ctx;

	return groupopts_dev_parse(arg, c->roce_dev, sizeof(c->roce_dev), &c->roce_port, err, len);
}

/* --control PATH: as ib2roce's (a path that fits in sun_path). */
static int opt_control(void *ctx, const char *arg, char *err, size_t len)
{
	struct mct_cfg *c = ctx;

	if (!*arg)
		return opt_errf(err, len, -EINVAL, "empty control socket path");
	if (strlen(arg) >= sizeof(c->control))
		return opt_errf(err, len, -EINVAL, "control socket path too long (max %zu bytes)",
				sizeof(c->control) - 1);
	strcpy(c->control, arg);
	return 0;
}

int mct_options_register(struct mct_cfg *c)
{
	const struct opt_def defs[] = {
		{"device", 'd', "dev[:port]", false, "InfiniBand device (use the IB fabric)",
		 opt_device, c, false},
		{"roce", 'r', "dev[:port]", false, "RoCE device (use the RoCEv2 fabric)", opt_roce,
		 c, false},
		{"multicast", 'm', "addr[:port][/fmt][#opts]", false,
		 "a group (also as argument); opts: tos, qkey=, ibqkey=, roceqkey=", add_group, c,
		 true},
		{"mgid", 'l', "fmt", true,
		 "IB MGID format of the groups that follow (RDMA, IPv4, IPv6, PORT, IB); no "
		 "argument: list them",
		 groupopts_mgid_set, &c->gd, true},
		{"port", 'p', "n", false, "default UDP port of the groups that follow (4711)",
		 groupopts_port_set, &c->gd, true},
		{"tos", 't', "n", false, "traffic class of the groups that follow",
		 groupopts_tos_set, &c->gd, true},
		{"qkey", 0, "Q", false,
		 "Q_Key of the groups that follow (default 0x01234567, rdma_cm's; a group's "
		 "#qkey= wins)",
		 groupopts_qkey_set, &c->gd, true},
		{"control", 0, "path", false,
		 "console socket for bcom (help, status, stats, enable, shutdown) (default: none)",
		 opt_control, c, false},
	};
	int r;

	groupopts_defaults_init(&c->gd, MCT_DEFAULT_PORT);
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if ((r = opt_register(&defs[i])))
			return r;
	return opt_set_positional("GROUP", "addr[:port][/fmt][#opts]: a multicast group", add_group,
				  c);
}

int mct_options_check(struct mct_cfg *c, bool exiting, char *err, size_t errlen)
{
	if (c->gd.list_fmts) {
		for (int i = 0; i < MGID_NFMT; i++)
			printf("%s%s\n", mgid_fmt_name[i], i == MGID_RDMA ? " (default)" : "");
		return 1;
	}
	if (exiting)
		return 1;
	if (!c->ngroups)
		return errf(err, errlen, -EINVAL, "no multicast group given (-m addr or GROUP)");
	if (c->ib_dev[0] && c->roce_dev[0])
		return errf(err, errlen, -EINVAL,
			    "-d and -r both given: one program works on one fabric");
	return 0;
}

void mct_cfg_free(struct mct_cfg *c)
{
	for (uint32_t i = 0; i < c->ngroups; i++)
		free(c->groups[i].spec);
	free(c->groups);
	c->groups = NULL;
	c->ngroups = c->cap = 0;
	group_index_free(&c->gidx);
}

/* ---- The port ---- */

/* Does (ctx, port) serve fabric f as ib2roce would use it? Fills p. */
static bool port_try(struct mct_port *p, enum mct_fabric f, struct ibv_context *ctx, uint8_t port)
{
	struct portprobe pp;

	if (!portprobe_port_try(ctx, port, f == MCT_IB, false, &pp))
		return false;
	p->gid = pp.gid;
	p->gid_index = pp.gid_index;
	p->pkey = pp.pkey;
	p->ipv4 = pp.ipv4;
	p->gid6 = pp.gid6;
	p->gid6_index = pp.gid6_index;
	p->gid6ll = pp.gid6ll;
	p->gid6ll_index = pp.gid6ll_index;
	p->ifindex = pp.ifindex;
	p->fabric = f;
	p->port = port;
	p->mtu = pp.mtu;
	return true;
}

/* Find an active port of fabric f (on device dev when not empty, port `port` when not 0). */
static int port_find(struct mct_port *p, enum mct_fabric f, const char *dev, uint8_t port)
{
	struct ibv_device **list;
	int n, r = -ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return -errno;
	for (int i = 0; i < n && r; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx;
		struct ibv_device_attr da;

		if (dev[0] && strcmp(dev, name))
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			continue;
		if (!ibv_query_device(ctx, &da)) {
			for (uint8_t q = port ? port : 1; q <= (port ? port : da.phys_port_cnt);
			     q++) {
				if (port_try(p, f, ctx, q)) {
					p->ctx = ctx;
					p->dattr = da;
					snprintf(p->dev, sizeof(p->dev), "%s", name);
					r = 0;
					break;
				}
			}
		}
		if (r)
			ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	return r;
}

int mct_port_open(struct mct_port *p, const struct mct_cfg *c, char *err, size_t errlen)
{
	struct sockaddr_storage a;
	int r;

	memset(p, 0, sizeof(*p));
	p->mld_fd = -1;
	samcm_init(&p->sa);
	if (c->ib_dev[0])
		r = port_find(p, MCT_IB, c->ib_dev, c->ib_port);
	else if (c->roce_dev[0])
		r = port_find(p, MCT_ROCE, c->roce_dev, c->roce_port);
	else if ((r = port_find(p, MCT_IB, "", 0)))
		r = port_find(p, MCT_ROCE, "", 0);
	if (r == -ENODEV) {
		if (c->ib_dev[0] || c->roce_dev[0])
			return errf(err, errlen, r,
				    "%s device %s: not found, not active or no %s port",
				    c->ib_dev[0] ? "IB" : "RoCE",
				    c->ib_dev[0] ? c->ib_dev : c->roce_dev,
				    c->ib_dev[0] ? "InfiniBand"
						 : "Ethernet port with a RoCEv2 IPv4 GID on a");
		return errf(err, errlen, r,
			    "no active InfiniBand port and no active RoCEv2 port found");
	}
	if (r)
		return errf(err, errlen, r, "no RDMA devices: %s", strerror(-r));
	p->pd = ibv_alloc_pd(p->ctx);
	if (!p->pd)
		return errf(err, errlen, -errno, "%s: ibv_alloc_pd: %s", p->dev, strerror(errno));
	p->cm_ch = rdma_create_event_channel();
	if (!p->cm_ch || rdma_create_id(p->cm_ch, &p->cm_id, NULL, RDMA_PS_UDP))
		return errf(err, errlen, -errno, "%s: rdma_cm: %s", p->dev, strerror(errno));
	memset(&a, 0, sizeof(a));
	if (p->fabric == MCT_IB) {
		/* Bind to the port GID, as ib2roce: no IPoIB address needed. */
		struct sockaddr_ib *sib = (struct sockaddr_ib *)&a;

		sib->sib_family = AF_IB;
		sib->sib_pkey = htons(p->pkey);
		memcpy(&sib->sib_addr, p->gid.raw, 16);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&a;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = p->ipv4;
	}
	if (rdma_bind_addr(p->cm_id, (struct sockaddr *)&a))
		return errf(err, errlen, -errno, "%s: rdma_bind_addr: %s", p->dev, strerror(errno));
	return 0;
}

/* The address a group is joined with: AF_IB and its MGID on IB, AF_INET on RoCE. */
static struct sockaddr *join_addr(const struct mct_port *p, const struct group *g,
				  struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (p->fabric == MCT_IB) {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)ss;
		union ibv_gid m;

		group_mgid_ib(g, p->pkey, &m);
		sib->sib_family = AF_IB;
		sib->sib_pkey = htons(p->pkey);
		memcpy(&sib->sib_addr, m.raw, 16);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = g->addr;
	}
	return (struct sockaddr *)ss;
}

bool mct_roce_hdr_is_ipv6(const uint8_t *hdr)
{
	const uint8_t *ip = hdr + MCT_IPV4_OFF;
	uint32_t sum = 0;

	if (hdr[0] >> 4 != 6)
		return false;
	if (ip[0] != 0x45)
		return true;
	for (unsigned i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum != 0xffff;
}

/*
 * An IPv6 group on RoCE, as the bridge joins one (control/joins.c join_roce_v6): Linux
 * refuses rdma_join_multicast of an IPv6 group on RoCEv2 (ENOTSUPP, 524), so the AH is
 * built here (dgid the group; the port's IPv6 RoCE v2 entry of the group's scope: the
 * link-local one for ff01::/16 and ff02::/16, else the global one, RFC 6724; hop limit
 * 64; flow label 0; traffic class from #tos), the caller attaches its QP to the group
 * (mgid, mlid 0), and a receiver joins the group on the netdev (IPV6_JOIN_GROUP: the MLD
 * report). A refused membership (no such interface: a simulated device outside `simfab
 * netns`) is reported on stderr once and does not stop the program: the attached QP
 * receives where the switch floods the group.
 */
static int join_roce_v6(struct mct_port *p, struct mct_group *mg, bool send_only, char *err,
			size_t errlen)
{
	const union ibv_gid *grp = &mg->spec->mgid[SIDE_ROCE];
	bool link_scope = (grp->raw[1] & 0x0f) <= 2;
	int idx = link_scope ? (p->gid6ll_index >= 0 ? p->gid6ll_index : p->gid6_index)
			     : (p->gid6_index >= 0 ? p->gid6_index : p->gid6ll_index);

	if (idx < 0)
		return errf(err, errlen, -EADDRNOTAVAIL,
			    "%s: %s has no IPv6 address (no RoCE v2 GID of one)", mg->spec->spec,
			    p->dev);
	memset(&mg->aa, 0, sizeof(mg->aa));
	mg->aa.is_global = 1;
	mg->aa.port_num = p->port;
	mg->aa.grh.dgid = *grp;
	mg->aa.grh.sgid_index = (uint8_t)idx;
	mg->aa.grh.hop_limit = 64;
	mg->aa.grh.traffic_class = mg->spec->tos_set ? mg->spec->tos : 0;
	mg->qkey = mg->spec->qkey[SIDE_ROCE];
	mg->mgid = *grp;
	mg->mlid = 0;
	mg->ah = ibv_create_ah(p->pd, &mg->aa);
	if (!mg->ah)
		return errf(err, errlen, -errno, "%s: ibv_create_ah: %s", mg->spec->spec,
			    strerror(errno));
	mg->joined = true;
	if (!send_only) {
		struct ipv6_mreq mr = {.ipv6mr_interface = p->ifindex};

		memcpy(mr.ipv6mr_multiaddr.s6_addr, grp->raw, 16);
		if (p->mld_fd < 0)
			p->mld_fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (p->mld_fd < 0 ||
		    setsockopt(p->mld_fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr))) {
			static bool said;

			if (!said)
				fprintf(stderr,
					"%s: MLD membership on ifindex %u refused (%s); receiving "
					"anyway\n",
					mg->spec->spec, p->ifindex, strerror(errno));
			said = true;
		}
	}
	return 0;
}

/*
 * The IB join of group mg through the SA with the group's own Q_Key (lib/samcm.h), where
 * rdma_cm's was refused: the kernel's rdma_cm join always asks for RDMA_UDP_QKEY, and the
 * SA refuses it for a group that exists with another Q_Key (created by middleware, or by
 * the bridge's own SA join: control/sajoin.c). The MGID is the one rdma_cm's join of the
 * address makes (group_mgid_ib, the port's P_Key); the AH is made from the SA's record
 * as the kernel makes rdma_cm's. Waits for the answer, within MCT_JOIN_TIMEOUT of t0.
 */
/*
 * The SA request of mg's IB membership on port p (join or leave): the MGID rdma_cm's join
 * of the address makes (group_mgid_ib, the port's P_Key), the port's GID and P_Key, the
 * group's Q_Key and traffic class, and where the SA is (the port's SM). 0 or -errno.
 */
static int sa_req(struct mct_port *p, const struct mct_group *mg, bool send_only,
		  struct samcm_req *q)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(p->ctx, p->port, &pa))
		return -errno;
	memset(q, 0, sizeof(*q));
	group_mgid_ib(mg->spec, p->pkey, &q->mgid);
	q->port_gid = p->gid;
	q->qkey = mct_group_qkey(p, mg);
	q->pkey = p->pkey;
	q->tclass = mg->spec->tos_set ? mg->spec->tos : 0;
	q->send_only = send_only;
	q->sm_lid = pa.sm_lid;
	q->sm_sl = pa.sm_sl;
	return 0;
}

static int join_ib_sa(struct mct_port *p, struct mct_group *mg, bool send_only, uint64_t t0,
		      char *err, size_t errlen)
{
	const char *spec = mg->spec->spec;
	struct samcm_answer a;
	struct samcm_req q;
	uint32_t tid;
	int r;

	r = sa_req(p, mg, send_only, &q);
	if (r)
		return errf(err, errlen, r, "%s: ibv_query_port: %s", spec, strerror(-r));
	r = samcm_open(&p->sa, p->dev, p->port);
	if (r)
		return errf(err, errlen, r, "join %s through the SA: umad port %s:%u: %s", spec,
			    p->dev, p->port, strerror(-r));
	r = samcm_send(&p->sa, &q, true, &tid);
	if (r)
		return errf(err, errlen, r, "join %s through the SA: %s", spec, strerror(-r));
	for (;;) {
		struct pollfd pfd = {.fd = p->sa.fd, .events = POLLIN};
		long left;

		while (samcm_recv(&p->sa, &a))
			if (a.tid == tid)
				goto answered;
		left = MCT_JOIN_TIMEOUT - (long)(mono_ms() - t0);
		if (left <= 0)
			return errf(err, errlen, -ETIMEDOUT,
				    "join %s through the SA: no answer in %d ms", spec,
				    MCT_JOIN_TIMEOUT);
		poll(&pfd, 1, (int)left);
	}
answered:
	if (a.err)
		return errf(err, errlen, -a.err, "join %s through the SA: %s", spec,
			    strerror(a.err));
	if (a.status)
		return errf(err, errlen, -EPROTO,
			    "join %s through the SA with Q_Key 0x%08x refused: %s (status 0x%04x)",
			    spec, q.qkey, samcm_status_str(a.status), a.status);
	samcm_ah_attr(&a, p->port, (uint8_t)p->gid_index, &mg->aa);
	mg->join_qkey = a.qkey;
	mg->qkey = mct_group_qkey(p, mg);
	mg->mgid = mg->aa.grh.dgid;
	mg->mlid = mg->aa.dlid;
	mg->ah = ibv_create_ah(p->pd, &mg->aa);
	if (!mg->ah)
		return errf(err, errlen, -errno, "%s: ibv_create_ah: %s", spec, strerror(errno));
	mg->joined = mg->sa_joined = true;
	mg->sa_send_only = send_only;
	fprintf(stderr,
		"%s: joined through the SA with Q_Key 0x%08x (rdma_cm's join, with 0x%08x, was "
		"refused)\n",
		spec, a.qkey, BR_UDP_QKEY);
	return 0;
}

int mct_groups_join(struct mct_port *p, struct mct_group *g, uint32_t n, bool send_only, char *err,
		    size_t errlen)
{
	uint64_t t0;
	uint32_t done = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct rdma_cm_join_mc_attr_ex ja;
		struct sockaddr_storage ss;

		if (p->fabric == MCT_ROCE && g[i].spec->roce_v6) {
			int r = join_roce_v6(p, &g[i], send_only, err, errlen);

			if (r)
				return r;
			done++;
			continue;
		}

		memset(&ja, 0, sizeof(ja));
		ja.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
		ja.addr = join_addr(p, g[i].spec, &ss);
		ja.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					  : RDMA_MC_JOIN_FLAG_FULLMEMBER;
		if (rdma_join_multicast_ex(p->cm_id, &ja, &g[i]))
			return errf(err, errlen, -errno, "join %s: %s", g[i].spec->spec,
				    strerror(errno));
	}
	t0 = mono_ms();
	while (done < n) {
		struct pollfd pfd = {.fd = p->cm_ch->fd, .events = POLLIN};
		struct rdma_cm_event *ev;
		long left;

		left = MCT_JOIN_TIMEOUT - (long)(mono_ms() - t0);
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		if (rdma_get_cm_event(p->cm_ch, &ev))
			return errf(err, errlen, -errno, "rdma_get_cm_event: %s", strerror(errno));
		if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN) {
			struct mct_group *mg = (struct mct_group *)ev->param.ud.private_data;

			mg->aa = ev->param.ud.ah_attr;
			/* The datagrams' Q_Key is the group's (#qkey=, --qkey; rdma_cm's by
			 * default), not the join's: rdma_cm's record always holds its own. */
			mg->join_qkey = ev->param.ud.qkey;
			mg->qkey = mct_group_qkey(p, mg);
			mg->mgid = mg->aa.grh.dgid;
			mg->mlid = mg->aa.dlid;
			if (mg->spec->tos_set)
				mg->aa.grh.traffic_class = mg->spec->tos;
			mg->ah = ibv_create_ah(p->pd, &mg->aa);
			if (!mg->ah) {
				int e = errno;

				rdma_ack_cm_event(ev);
				return errf(err, errlen, -e, "%s: ibv_create_ah: %s",
					    mg->spec->spec, strerror(e));
			}
			if (!mg->joined)
				done++;
			mg->joined = true;
		} else if (ev->event == RDMA_CM_EVENT_MULTICAST_ERROR) {
			struct mct_group *mg = (struct mct_group *)ev->param.ud.private_data;
			int st = ev->status;

			rdma_ack_cm_event(ev);
			/* A group with its own Q_Key: the SA refuses rdma_cm's join (with
			 * RDMA_UDP_QKEY) where the group exists with that Q_Key; the same join
			 * with the group's Q_Key, through the SA, is accepted. */
			if (p->fabric == MCT_IB && mct_group_qkey(p, mg) != BR_UDP_QKEY &&
			    !mg->joined) {
				int r = join_ib_sa(p, mg, send_only, t0, err, errlen);

				if (r)
					return r;
				done++;
				continue;
			}
			return errf(err, errlen, st < 0 ? st : -EIO, "join %s failed: %s",
				    mg->spec->spec, strerror(st < 0 ? -st : EIO));
		}
		rdma_ack_cm_event(ev);
	}
	for (uint32_t i = 0; i < n; i++)
		if (!g[i].joined)
			return errf(err, errlen, -ETIMEDOUT, "join %s: no answer in %d ms",
				    g[i].spec->spec, MCT_JOIN_TIMEOUT);
	return 0;
}

void mct_port_close(struct mct_port *p, struct mct_group *g, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sockaddr_storage ss;

		if (g[i].ah)
			ibv_destroy_ah(g[i].ah);
		g[i].ah = NULL;
		if (g[i].sa_joined) {
			/* Leave through the SA: a Delete of our membership, not waited for. */
			struct samcm_req q;
			uint32_t tid;

			if (!sa_req(p, &g[i], g[i].sa_send_only, &q))
				samcm_send(&p->sa, &q, false, &tid);
		} else if (g[i].joined && p->cm_id &&
			   !(p->fabric == MCT_ROCE && g[i].spec->roce_v6)) {
			rdma_leave_multicast(p->cm_id, join_addr(p, g[i].spec, &ss));
		}
		g[i].joined = g[i].sa_joined = false;
	}
	samcm_close(&p->sa);
	if (p->mld_fd >= 0)
		close(p->mld_fd); /* leaves its MLD memberships */
	if (p->cm_id)
		rdma_destroy_id(p->cm_id);
	if (p->cm_ch)
		rdma_destroy_event_channel(p->cm_ch);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->ctx)
		ibv_close_device(p->ctx);
	memset(p, 0, sizeof(*p));
}

uint32_t mct_group_qkey(const struct mct_port *p, const struct mct_group *g)
{
	return g->spec->qkey[p->fabric == MCT_IB ? SIDE_IB : SIDE_ROCE];
}

struct ibv_qp *mct_qp_create(struct mct_port *p, struct ibv_cq *cq, uint32_t sq, uint32_t rq,
			     uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr a;
	struct ibv_qp *qp = ibv_create_qp(p->pd, &ia);
	int r;

	if (!qp)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = p->port;
	a.qkey = qkey;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (!r) {
		a.qp_state = IBV_QPS_RTR;
		r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	}
	if (!r) {
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	if (r) {
		ibv_destroy_qp(qp);
		errno = r;
		return NULL;
	}
	return qp;
}
