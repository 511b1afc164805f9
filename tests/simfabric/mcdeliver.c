// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Multicast delivery through one address handle while the group changes under it, and
 * rdma_cm leaves among many joins of one id.
 *
 * An AH keeps its group's delivery (the attached QPs, the membership masks) between
 * sends and rebuilds it when the fabric's membership changes (simfabric/wire.c): every
 * send below reuses one AH, and each must reach exactly the QPs attached at that moment:
 * none, one, two, three (more than the AH keeps: the group table is read), two removed,
 * the group freed and made again under the same MGID.
 *
 * rdma_leave_multicast finds the join by address in a table of the id (not by walking
 * its list): 16 000 joins on one id, left in the order they were made, each leave
 * succeeds once and a second leave of the same address is EADDRNOTAVAIL; of two joins of
 * one address the newest leaves first (its events are gone, the older one's remain).
 *
 * Built against the real rdma-core; run with LD_LIBRARY_PATH=<build>/simfabric and
 * SIMFABRIC naming a fabric of its own (reset at the start and the end). TAP.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"
#include "tap_verbs.h"

#define NRX	 3
#define QKEY	 0x11111111u
#define BUF_LEN	 256
#define NJOINS	 16000
#define SEND_LEN 32

struct ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* A UD QP in RTS with one receive buffer posted per receive slot. */
static void ep_open(struct ep *e, struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 16,
					      .max_recv_wr = 16,
					      .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

	e->ctx = ctx;
	e->pd = pd;
	e->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = e->cq ? ibv_create_qp(pd, &qa) : NULL;
	e->buf = calloc(16, BUF_LEN);
	e->mr = e->buf ? ibv_reg_mr(pd, e->buf, 16 * BUF_LEN, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!e->qp || !e->mr ||
	    ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		tap_bail("QP");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE))
		tap_bail("RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		tap_bail("RTS");
	for (int i = 0; i < 16; i++) {
		struct ibv_sge s = {.addr = (uintptr_t)(e->buf + i * BUF_LEN),
				    .length = BUF_LEN,
				    .lkey = e->mr->lkey};
		struct ibv_recv_wr w = {.wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1}, *bad;

		if (ibv_post_recv(e->qp, &w, &bad))
			tap_bail("post_recv");
	}
}

static void ep_close(struct ep *e)
{
	ibv_destroy_qp(e->qp);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	free(e->buf);
}

/* Receives completed on e since the last call (each reposted). */
static int ep_drain(struct ep *e)
{
	struct ibv_wc wc[16];
	int n, got = 0;

	while ((n = ibv_poll_cq(e->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct ibv_sge s = {.addr = (uintptr_t)(e->buf + wc[i].wr_id * BUF_LEN),
					    .length = BUF_LEN,
					    .lkey = e->mr->lkey};
			struct ibv_recv_wr w = {.wr_id = wc[i].wr_id, .sg_list = &s, .num_sge = 1};
			struct ibv_recv_wr *bad;

			if (wc[i].opcode != IBV_WC_RECV)
				continue;
			if (wc[i].status == IBV_WC_SUCCESS)
				got++;
			ibv_post_recv(e->qp, &w, &bad);
		}
	}
	return got;
}

/* One datagram through `ah` (signaled, its completion reaped). */
static void send_one(struct ep *tx, struct ibv_ah *ah)
{
	struct ibv_sge s = {.addr = (uintptr_t)tx->buf, .length = SEND_LEN, .lkey = tx->mr->lkey};
	struct ibv_send_wr w = {.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
				.sg_list = &s,
				.num_sge = 1},
			   *bad;
	struct ibv_wc wc;

	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = 0xffffff;
	w.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(tx->qp, &w, &bad))
		tap_bail("post_send");
	while (ibv_poll_cq(tx->cq, 1, &wc) == 0)
		;
}

/* Send one datagram and check which of the receivers got it (bit i: rx[i]). */
static void expect(struct ep *tx, struct ibv_ah *ah, struct ep *rx, unsigned want, const char *what)
{
	unsigned got = 0;
	int extra = 0;

	send_one(tx, ah);
	for (int i = 0; i < NRX; i++) {
		int n = ep_drain(&rx[i]);

		if (n)
			got |= 1u << i;
		extra += n > 1;
	}
	OK(got == want && !extra, "%s: reached %#x (want %#x)", what, got, want);
}

static void ah_follows_group(void)
{
	struct ibv_context *tctx = tap_open_dev("sim_roce1"), *rctx = tap_open_dev("sim_roce2");
	struct ibv_pd *tpd = ibv_alloc_pd(tctx), *rpd = ibv_alloc_pd(rctx);
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct ep tx = {0}, rx[NRX] = {0};
	union ibv_gid g;
	struct ibv_ah *ah;

	if (!tpd || !rpd)
		tap_bail("PD");
	ep_open(&tx, tctx, tpd);
	for (int i = 0; i < NRX; i++)
		ep_open(&rx[i], rctx, rpd);
	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = 239;
	g.raw[13] = 1;
	g.raw[14] = 2;
	g.raw[15] = 3;
	aa.grh.dgid = g;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(tpd, &aa);
	if (!ah)
		tap_bail("AH");

	expect(&tx, ah, rx, 0, "no group yet");
	OK(ibv_attach_mcast(rx[0].qp, &g, 0) == 0, "attach rx0");
	expect(&tx, ah, rx, 1, "the same AH after the group was made");
	OK(ibv_attach_mcast(rx[1].qp, &g, 0) == 0, "attach rx1");
	expect(&tx, ah, rx, 3, "after a second QP attached");
	expect(&tx, ah, rx, 3, "again, nothing changed");
	OK(ibv_attach_mcast(rx[2].qp, &g, 0) == 0, "attach rx2");
	expect(&tx, ah, rx, 7, "three QPs (more than the AH keeps)");
	OK(ibv_detach_mcast(rx[0].qp, &g, 0) == 0 && ibv_detach_mcast(rx[1].qp, &g, 0) == 0,
	   "detach rx0 and rx1");
	expect(&tx, ah, rx, 4, "after two detached");
	OK(ibv_detach_mcast(rx[2].qp, &g, 0) == 0, "detach rx2: the group is freed");
	expect(&tx, ah, rx, 0, "the group freed");
	OK(ibv_attach_mcast(rx[1].qp, &g, 0) == 0, "attach rx1: the group is made again");
	expect(&tx, ah, rx, 2, "the group made again under the same MGID");
	ibv_destroy_qp(rx[1].qp);
	rx[1].qp = NULL;
	expect(&tx, ah, rx, 0, "its only QP destroyed");
	{
		struct ep again = {0};

		ep_open(&again, rctx, rpd);
		OK(ibv_attach_mcast(again.qp, &g, 0) == 0 && ibv_attach_mcast(rx[0].qp, &g, 0) == 0,
		   "a new QP (maybe in the destroyed one's place) and rx0 attach");
		send_one(&tx, ah);
		OK(ep_drain(&again) == 1 && ep_drain(&rx[0]) == 1 && ep_drain(&rx[2]) == 0,
		   "both get one datagram, rx2 none");
		ep_close(&again);
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(rx[0].qp);
	ibv_destroy_qp(rx[2].qp);
	for (int i = 0; i < NRX; i++) {
		ibv_dereg_mr(rx[i].mr);
		ibv_destroy_cq(rx[i].cq);
		free(rx[i].buf);
	}
	ep_close(&tx);
	ibv_dealloc_pd(tpd);
	ibv_dealloc_pd(rpd);
	ibv_close_device(tctx);
	ibv_close_device(rctx);
}

static struct sockaddr_in group_addr(uint32_t k)
{
	struct sockaddr_in m = {.sin_family = AF_INET};

	m.sin_addr.s_addr = htonl(0xe9000000u + k); /* 233.x.y.z */
	return m;
}

static void many_leaves(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, m;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int joined = 0, left = 0, again = 0, ctx_ok = 1;

	inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&a))
		tap_bail("rdma_cm id");
	for (uint32_t k = 0; k < NJOINS; k++) {
		m = group_addr(k);
		if (rdma_join_multicast(id, (struct sockaddr *)&m, NULL))
			break;
		if (rdma_get_cm_event(ch, &ev))
			break;
		joined += ev->event == RDMA_CM_EVENT_MULTICAST_JOIN;
		rdma_ack_cm_event(ev);
	}
	OK(joined == NJOINS, "%d joins on one id", joined);
	for (uint32_t k = 0; k < NJOINS; k++) {
		m = group_addr(k);
		left += rdma_leave_multicast(id, (struct sockaddr *)&m) == 0;
	}
	OK(left == NJOINS, "%d leaves in join order succeed", left);
	for (uint32_t k = 0; k < NJOINS; k += 997) {
		m = group_addr(k);
		again += rdma_leave_multicast(id, (struct sockaddr *)&m) == -1 &&
			 errno == EADDRNOTAVAIL;
	}
	OK(again == (NJOINS + 996) / 997, "leaving again: EADDRNOTAVAIL (%d)", again);

	/* Two joins of one address (contexts 1 and 2), events left unread: a leave takes
	 * the newest (its event goes), the older one's event stays readable. */
	m = group_addr(NJOINS + 1);
	OK(rdma_join_multicast(id, (struct sockaddr *)&m, (void *)1) == 0 &&
		   rdma_join_multicast(id, (struct sockaddr *)&m, (void *)2) == 0,
	   "two joins of one address");
	OK(rdma_leave_multicast(id, (struct sockaddr *)&m) == 0, "leave it once");
	if (!rdma_get_cm_event(ch, &ev)) {
		ctx_ok = ev->event == RDMA_CM_EVENT_MULTICAST_JOIN &&
			 ev->param.ud.private_data == (void *)1;
		rdma_ack_cm_event(ev);
	} else {
		ctx_ok = 0;
	}
	OK(ctx_ok, "the older join's event remains (context 1): the newest one left");
	OK(rdma_leave_multicast(id, (struct sockaddr *)&m) == 0, "leave it twice");
	OK(rdma_leave_multicast(id, (struct sockaddr *)&m) == -1 && errno == EADDRNOTAVAIL,
	   "a third leave: EADDRNOTAVAIL");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

int main(void)
{
	int (*reset)(const char *);

	reset = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	ah_follows_group();
	many_leaves();
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	return tap_done();
}
