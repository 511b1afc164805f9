// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Capacity as advertised: a device says max_mcast_grp 16383, the groups a subnet of the
 * simulated fabric holds (the IB multicast LID space 0xc000-0xfffe, as many on RoCE);
 * an IB and a RoCE segment each hold that many groups at once, the next one is refused
 * (ENOMEM, as ibv_attach_mcast reports a full table), a freed group's place (and on IB
 * its multicast LID) is used again. rdma_cm joins get
 * distinct MLIDs in the range. The fabric holds max_qp (131072) QPs, no more.
 *
 * Built against the real rdma-core; run with LD_LIBRARY_PATH=<build>/simfabric and
 * SIMFABRIC naming a fabric of its own (reset at the end). TAP.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"
#include "tap_verbs.h"

struct port {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int ib;
};

static void port_close(struct port *p)
{
	if (p->qp)
		ibv_destroy_qp(p->qp);
	ibv_destroy_cq(p->cq);
	ibv_dealloc_pd(p->pd);
	ibv_close_device(p->ctx);
}

static void port_open(struct port *p, const char *name)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_port_attr pa;

	p->ctx = tap_open_dev(name);
	p->pd = ibv_alloc_pd(p->ctx);
	p->cq = ibv_create_cq(p->ctx, 8, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = p->cq;
	p->qp = p->pd && p->cq ? ibv_create_qp(p->pd, &qa) : NULL;
	if (!p->qp || ibv_query_port(p->ctx, 1, &pa))
		tap_bail("QP");
	p->ib = pa.link_layer == IBV_LINK_LAYER_INFINIBAND;
}

/* The k-th group's MGID: ff15::<k> on IB, ::ffff:239.x.y.z on RoCE. */
static union ibv_gid group_gid(const struct port *p, uint32_t k)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	if (p->ib) {
		g.raw[0] = 0xff;
		g.raw[1] = 0x15;
	} else {
		g.raw[10] = g.raw[11] = 0xff;
		g.raw[12] = 239;
	}
	g.raw[13] = (uint8_t)(k >> 16);
	g.raw[14] = (uint8_t)(k >> 8);
	g.raw[15] = (uint8_t)k;
	return g;
}

static void fill(struct port *p, const char *name, uint32_t max)
{
	uint32_t k, ok = 0;
	union ibv_gid g;
	int r = 0;

	for (k = 0; k < max; k++) {
		g = group_gid(p, k);
		r = ibv_attach_mcast(p->qp, &g, 0);
		if (r)
			break;
		ok++;
	}
	OK(ok == max, "%s: %u of %u groups attached (first error %s)", name, ok, max,
	   r ? strerror(r) : "none");
	g = group_gid(p, max);
	r = ibv_attach_mcast(p->qp, &g, 0);
	OK(r == ENOMEM, "%s: group %u refused with ENOMEM (%s)", name, max + 1,
	   r ? strerror(r) : "accepted");
	g = group_gid(p, 7);
	OK(ibv_detach_mcast(p->qp, &g, 0) == 0, "%s: detach a group", name);
	g = group_gid(p, max);
	OK(ibv_attach_mcast(p->qp, &g, 0) == 0, "%s: its place is taken by a new group", name);
	g = group_gid(p, 7);
	OK(ibv_attach_mcast(p->qp, &g, 0) == ENOMEM, "%s: and the table is full again", name);
}

/* rdma_cm joins on the IB segment: distinct MLIDs in 0xc000..0xfffe. */
static void joins(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct rdma_cm_id *id;
	uint16_t seen[64];
	int n = 0, distinct = 1, range = 1;

	inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP) || rdma_bind_addr(id, (struct sockaddr *)&a))
		tap_bail("rdma_cm id");
	for (int i = 0; i < 64; i++) {
		struct sockaddr_in m = {.sin_family = AF_INET};

		m.sin_addr.s_addr = htonl(0xe8000000u + (uint32_t)i); /* 232.0.0.i */
		if (rdma_join_multicast(id, (struct sockaddr *)&m, NULL))
			break;
		if (id->event->event != RDMA_CM_EVENT_MULTICAST_JOIN)
			break;
		seen[n] = id->event->param.ud.ah_attr.dlid;
		range &= seen[n] >= 0xc000 && seen[n] <= 0xfffe;
		for (int j = 0; j < n; j++)
			distinct &= seen[j] != seen[n];
		n++;
	}
	OK(n == 64, "64 rdma_cm joins on IB (%d)", n);
	OK(distinct && range, "their MLIDs are distinct and in 0xc000..0xfffe");
	rdma_destroy_id(id);
}

/*
 * QPs: the fabric holds max_qp of them (131072: 100 000 senders for bench/), the next is
 * refused with ENOMEM, a destroyed one's place is used again. Send-only QPs (max_recv_wr
 * 0, no receive queue: ibv_post_recv fails with ENOMEM) so that one process holds them
 * all. `held` QPs exist already (the ports' own).
 */
static void qps(struct port *p, int max_qp, int held)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.send_cq = p->cq,
		.recv_cq = p->cq,
		.cap = {.max_send_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp **q = calloc((size_t)max_qp, sizeof(*q));
	struct ibv_recv_wr wr = {0}, *bad;
	struct ibv_qp *extra;
	int n = 0, first_err = 0;

	if (!q)
		tap_bail("calloc");
	while (n < max_qp && (q[n] = ibv_create_qp(p->pd, &qa)))
		n++;
	first_err = errno;
	OK(n == max_qp - held, "%d QPs beside the ports' %d: max_qp %d in all", n, held, max_qp);
	OK(n < max_qp && !q[n] && first_err == ENOMEM, "the next QP is refused: ENOMEM");
	OK(n > 0 && ibv_post_recv(q[0], &wr, &bad) == ENOMEM,
	   "a QP without receive queue refuses a receive: ENOMEM");
	OK(n > 0 && ibv_destroy_qp(q[n / 2]) == 0, "destroy one");
	extra = ibv_create_qp(p->pd, &qa);
	OK(extra != NULL, "its place is used again");
	if (extra)
		ibv_destroy_qp(extra);
	for (int i = 0; i < n; i++)
		if (i != n / 2)
			ibv_destroy_qp(q[i]);
	free(q);
}

int main(void)
{
	struct port ib = {0}, roce = {0};
	struct ibv_device_attr da;
	int (*reset)(const char *);

	/* A fresh fabric of its own: one left by another build may have another layout. */
	reset = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	port_open(&ib, "sim_ib1");
	port_open(&roce, "sim_roce1");
	if (ibv_query_device(ib.ctx, &da))
		tap_bail("ibv_query_device");
	OK(da.max_mcast_grp == 16383, "max_mcast_grp %d: the groups a subnet holds",
	   da.max_mcast_grp);
	OK(da.max_qp == 131072, "max_qp %d", da.max_qp);
	qps(&ib, da.max_qp, 2);
	joins();
	/* The joins above hold 64 IB groups until their id is destroyed: gone now. */
	fill(&ib, "IB", 16383);
	fill(&roce, "RoCE", 16383);
	/* Destroying a QP detaches it from every group, freeing them: the table refills. */
	OK(ibv_destroy_qp(ib.qp) == 0, "IB: destroy the QP of 16383 groups");
	ib.qp = NULL;
	{
		struct port again = {0};

		port_open(&again, "sim_ib2");
		fill(&again, "IB after destroy", 16383);
		port_close(&again);
	}
	port_close(&ib);
	port_close(&roce);
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	return tap_done();
}
