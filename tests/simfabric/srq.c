// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Shared receive queues on the simulated fabric, call by call against the man pages
 * (ibv_create_srq(3), ibv_create_srq_ex(3), ibv_modify_srq(3), ibv_query_srq(3),
 * ibv_post_srq_recv(3), ibv_create_qp(3), rdma_create_srq(3)) and what mlx5 answers
 * (simfabric/srq.c names the sources): the device limits of a ConnectX-6, the sizes
 * given back, the refusals and their errno, UD QPs that take their receives from an
 * SRQ (multicast delivery into the SRQ's buffers, one shared CQ naming each QP, an empty
 * SRQ counted in out_of_buffer), the one-shot SRQ limit event and its re-arming,
 * EBUSY while a QP uses the SRQ, and SIMFABRIC_NO_SRQ (a device without SRQs).
 *
 * Built against the real rdma-core headers and libraries, run with
 * LD_LIBRARY_PATH=<build>/simfabric on a fabric of its own (SIMFABRIC). TAP.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "tap.h"
#include "../../simfabric/sf.h"

#define BUF_LEN 2048
#define NBUF	64
#define WAIT_MS 3000

static struct sf_fabric *(*p_sf_get)(void);
static int (*p_sf_dev_by_name)(struct sf_fabric *, const char *);
static void (*p_sf_counters_read)(struct sf_fabric *, uint32_t, struct sf_counters *);

static uint64_t oob(const char *dev)
{
	struct sf_counters c;

	p_sf_counters_read(p_sf_get(), (uint32_t)p_sf_dev_by_name(p_sf_get(), dev), &c);
	return atomic_load(&c.out_of_buffer);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct sockaddr *in4(struct sockaddr_in *a, const char *ip)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a->sin_addr);
	return (struct sockaddr *)a;
}

static struct rdma_cm_event *get_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* An rdma_cm id bound to `ip` with its own event channel. */
static struct rdma_cm_id *bound_id(const char *ip, struct rdma_event_channel **ch)
{
	struct sockaddr_in a;
	struct rdma_cm_id *id;

	*ch = rdma_create_event_channel();
	if (!*ch || rdma_create_id(*ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	if (rdma_bind_addr(id, in4(&a, ip)))
		tap_bail("rdma_bind_addr");
	return id;
}

/* Join `group` on `id` (its QP attached by librdmacm); the join event's AH parameters. */
static int join(struct rdma_cm_id *id, struct rdma_event_channel *ch, const char *group,
		bool send_only, struct rdma_ud_param *ud)
{
	struct sockaddr_in g;
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					: RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = in4(&g, group),
	};
	struct rdma_cm_event *ev;
	int type;

	if (rdma_join_multicast_ex(id, &ja, NULL))
		tap_bail("rdma_join_multicast_ex");
	ev = get_event(ch, WAIT_MS);
	if (!ev)
		return -1;
	type = ev->event;
	if (ud)
		*ud = ev->param.ud;
	rdma_ack_cm_event(ev);
	return type;
}

static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int got = 0;

	while (got < n && now_ms() < end) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return -1;
		got += r;
	}
	return got;
}

/* Wait for an async event of `type` on ctx; returns its element (srq) or NULL. */
static struct ibv_srq *async_srq_event(struct ibv_context *ctx, enum ibv_event_type type, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (now_ms() < end) {
		struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
		struct ibv_async_event ae;
		struct ibv_srq *s = NULL;

		if (poll(&p, 1, 50) != 1)
			continue;
		if (ibv_get_async_event(ctx, &ae))
			return NULL;
		if (ae.event_type == type)
			s = ae.element.srq;
		ibv_ack_async_event(&ae);
		if (s)
			return s;
	}
	return NULL;
}

/* ---- a sender: a send-only join and one send per call ---- */

struct sender {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[256];
	struct ibv_ah *ah;
	struct rdma_ud_param ud;
};

static void sender_open(struct sender *s, const char *ip, const char *group)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .sq_sig_all = 1,
				      .cap = {.max_send_wr = 64, .max_send_sge = 1}};

	memset(s, 0, sizeof(*s));
	s->id = bound_id(ip, &s->ch);
	s->cq = ibv_create_cq(s->id->verbs, 128, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = s->cq;
	if (!s->cq || rdma_create_qp(s->id, NULL, &qa))
		tap_bail("sender qp");
	s->mr = ibv_reg_mr(s->id->pd, s->buf, sizeof(s->buf), 0);
	if (!s->mr || join(s->id, s->ch, group, true, &s->ud) != RDMA_CM_EVENT_MULTICAST_JOIN)
		tap_bail("sender join");
	s->ah = ibv_create_ah(s->id->pd, &s->ud.ah_attr);
	if (!s->ah)
		tap_bail("ibv_create_ah");
}

/* Send one datagram whose payload starts with `tag`; wait for its send completion. */
static void sender_send(struct sender *s, uint32_t tag)
{
	struct ibv_sge sge = {(uintptr_t)s->buf, 64, s->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;
	struct ibv_wc wc;

	memcpy(s->buf, &tag, sizeof(tag));
	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = s->ud.qp_num;
	wr.wr.ud.remote_qkey = s->ud.qkey;
	if (ibv_post_send(s->id->qp, &wr, &bad) || poll_n(s->cq, &wc, 1, WAIT_MS) != 1)
		tap_bail("sender_send");
}

static void sender_close(struct sender *s, const char *group)
{
	struct sockaddr_in g;

	ibv_destroy_ah(s->ah);
	rdma_leave_multicast(s->id, in4(&g, group));
	rdma_destroy_qp(s->id);
	ibv_dereg_mr(s->mr);
	ibv_destroy_cq(s->cq);
	rdma_destroy_id(s->id);
	rdma_destroy_event_channel(s->ch);
}

/* ---- the calls one by one ---- */

static void test_device(struct ibv_context *ctx)
{
	struct ibv_device_attr da = {0};

	if (ibv_query_device(ctx, &da))
		tap_bail("ibv_query_device");
	OK(da.max_srq == 8388608 && da.max_srq_wr == 32767 && da.max_srq_sge == 31,
	   "max_srq 8388608, max_srq_wr 32767, max_srq_sge 31 as a ConnectX-6 (%d %d %d)",
	   da.max_srq, da.max_srq_wr, da.max_srq_sge);
	OK(!(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE), "no IBV_DEVICE_SRQ_RESIZE (mlx5)");
}

static void test_create(struct ibv_pd *pd)
{
	struct ibv_srq_init_attr a = {.srq_context = pd, .attr = {.max_wr = 100, .max_sge = 1}};
	struct ibv_srq_init_attr_ex ax;
	struct ibv_srq_attr q;
	struct ibv_srq *srq;

	srq = ibv_create_srq(pd, &a);
	OK(srq && a.attr.max_wr == 127 && a.attr.max_sge == 1,
	   "ibv_create_srq max_wr 100: created, max_wr 127 given back (%u, %u)", a.attr.max_wr,
	   a.attr.max_sge);
	OK(srq && srq->context == pd->context && srq->pd == pd && srq->srq_context == pd,
	   "the SRQ's context, pd and srq_context");
	OK(srq && ibv_query_srq(srq, &q) == 0 && q.max_wr == 127 && q.max_sge == 1 &&
		   q.srq_limit == 0,
	   "ibv_query_srq: max_wr 127, max_sge 1, srq_limit 0 (not armed)");
	if (srq)
		OK(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq of an unused SRQ: 0");

	a.attr.max_wr = 16;
	a.attr.max_sge = 2;
	srq = ibv_create_srq(pd, &a);
	OK(srq && a.attr.max_sge == 3, "max_sge 2 gives back 3 (a 64-byte WQE, as mlx5: %u)",
	   a.attr.max_sge);
	if (srq)
		ibv_destroy_srq(srq);

	a.attr.max_wr = 32768;
	a.attr.max_sge = 1;
	errno = 0;
	OK(!ibv_create_srq(pd, &a) && errno == EINVAL, "max_wr above max_srq_wr: EINVAL");
	a.attr.max_wr = 16;
	a.attr.max_sge = 32;
	errno = 0;
	OK(!ibv_create_srq(pd, &a) && errno == EINVAL, "max_sge above max_srq_sge: EINVAL");
	a.attr.max_wr = 0;
	a.attr.max_sge = 1;
	errno = 0;
	OK(!ibv_create_srq(pd, &a) && errno == EINVAL, "max_wr 0: EINVAL");

	memset(&ax, 0, sizeof(ax));
	ax.attr.max_wr = 8;
	ax.attr.max_sge = 1;
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = IBV_SRQT_BASIC;
	ax.pd = pd;
	srq = ibv_create_srq_ex(pd->context, &ax);
	OK(srq && ax.attr.max_wr == 15, "ibv_create_srq_ex, basic: created, max_wr 15");
	if (srq)
		ibv_destroy_srq(srq);
	ax.srq_type = IBV_SRQT_XRC;
	errno = 0;
	OK(!ibv_create_srq_ex(pd->context, &ax) && errno == EOPNOTSUPP,
	   "ibv_create_srq_ex, XRC: EOPNOTSUPP (no XRC domains)");
	ax.srq_type = IBV_SRQT_BASIC;
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
	errno = 0;
	OK(!ibv_create_srq_ex(pd->context, &ax) && errno == EINVAL,
	   "ibv_create_srq_ex without a PD: EINVAL");
}

static void test_modify_post(struct ibv_pd *pd)
{
	struct ibv_srq_init_attr a = {.attr = {.max_wr = 7, .max_sge = 1}};
	struct ibv_srq_attr m = {0}, q;
	struct ibv_recv_wr wr[9], *bad;
	struct ibv_sge sge[2] = {{0, 64, 0}, {0, 64, 0}};
	struct ibv_srq *srq = ibv_create_srq(pd, &a);

	if (!srq)
		tap_bail("ibv_create_srq");
	m.max_wr = 32;
	OK(ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR) == EINVAL,
	   "ibv_modify_srq IBV_SRQ_MAX_WR: EINVAL (no resize, as mlx5)");
	m.srq_limit = 8;
	OK(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT) == EINVAL,
	   "srq_limit 8 on an SRQ of 8 WQEs: EINVAL");
	m.srq_limit = 3;
	OK(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR) == EINVAL &&
		   ibv_query_srq(srq, &q) == 0 && q.srq_limit == 0,
	   "a refused attribute: nothing changes (srq_limit still 0)");
	OK(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT) == 0 && ibv_query_srq(srq, &q) == 0 &&
		   q.srq_limit == 3,
	   "ibv_modify_srq IBV_SRQ_LIMIT 3: armed, ibv_query_srq says 3");

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 9; i++) {
		sge[0].lkey = 0;
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 8 ? &wr[i + 1] : NULL;
	}
	wr[1].num_sge = 2;
	bad = NULL;
	OK(ibv_post_srq_recv(srq, wr, &bad) == EINVAL && bad == &wr[1],
	   "ibv_post_srq_recv: more scatter entries than max_sge: EINVAL, bad names it");
	/* wr[0], before the refused one, was posted: 6 more fit, the 8th WQE is refused. */
	wr[1].num_sge = 1;
	bad = NULL;
	OK(ibv_post_srq_recv(srq, &wr[1], &bad) == ENOMEM && bad == &wr[7],
	   "7 WQEs fit an SRQ of max_wr 7 (the WRs before a refusal stay posted); the 8th: "
	   "ENOMEM, bad names it");
	OK(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq with WQEs posted: 0");
}

/*
 * Two UD QPs of one SRQ and one CQ, each joined to its own group (IB: sim_ib0 receives,
 * sim_ib2 sends). Every datagram lands in an SRQ buffer, its completion names its QP.
 */
static void test_qps(void)
{
	const char *grp[2] = {"239.1.28.1", "239.1.28.2"};
	struct rdma_event_channel *ch[2];
	struct rdma_cm_id *id[2];
	struct sender tx[2];
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 15, .max_sge = 1}};
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 4, .max_send_sge = 1, .max_recv_wr = 64, .max_recv_sge = 1}};
	struct ibv_qp_attr qattr;
	struct ibv_qp_init_attr qinit;
	struct ibv_recv_wr rw, *bad;
	struct ibv_sge sge;
	struct ibv_srq_attr m;
	struct ibv_wc wc[16];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t o;
	int n, ok;

	id[0] = bound_id("198.18.0.1", &ch[0]);
	id[1] = bound_id("198.18.0.1", &ch[1]);
	ctx = id[0]->verbs;
	pd = id[0]->pd;
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	srq = ibv_create_srq(pd, &sa);
	buf = aligned_alloc(4096, (size_t)NBUF * BUF_LEN);
	mr = ibv_reg_mr(pd, buf, (size_t)NBUF * BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!cq || !srq || !mr)
		tap_bail("cq/srq/mr");
	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	OK(rdma_create_qp(id[0], pd, &qa) == 0 && id[0]->qp->srq == srq &&
		   qa.cap.max_recv_wr == 0 && qa.cap.max_recv_sge == 0,
	   "a UD QP created with init_attr.srq: max_recv_wr/max_recv_sge ignored, 0 given back");
	qa.cap.max_recv_wr = 64;
	OK(rdma_create_qp(id[1], pd, &qa) == 0, "a second UD QP of the same SRQ and CQ");
	OK(ibv_query_qp(id[0]->qp, &qattr, IBV_QP_CAP, &qinit) == 0 && qinit.srq == srq &&
		   qattr.cap.max_recv_wr == 0,
	   "ibv_query_qp: init_attr.srq is the SRQ, cap.max_recv_wr 0");
	sge = (struct ibv_sge){(uintptr_t)buf, BUF_LEN, mr->lkey};
	rw = (struct ibv_recv_wr){.wr_id = 99, .sg_list = &sge, .num_sge = 1};
	OK(ibv_post_recv(id[0]->qp, &rw, &bad) == ENOMEM && bad == &rw,
	   "ibv_post_recv on a QP of an SRQ: ENOMEM (it has no receive queue)");
	OK(ibv_destroy_srq(srq) == EBUSY, "ibv_destroy_srq while QPs use it: EBUSY");

	OK(join(id[0], ch[0], grp[0], false, NULL) == RDMA_CM_EVENT_MULTICAST_JOIN &&
		   join(id[1], ch[1], grp[1], false, NULL) == RDMA_CM_EVENT_MULTICAST_JOIN,
	   "both QPs joined");
	sender_open(&tx[0], "198.18.0.3", grp[0]);
	sender_open(&tx[1], "198.18.0.3", grp[1]);

	/* An empty SRQ: the datagram is dropped and counted, as with no receive posted. */
	o = oob("sim_ib0");
	sender_send(&tx[0], 1);
	OK(poll_n(cq, wc, 1, 200) == 0 && oob("sim_ib0") == o + 1,
	   "empty SRQ: dropped, out_of_buffer +1");

	/* Six buffers; limit 4 armed: the third delivery leaves 3 < 4 and fires the event. */
	for (int i = 0; i < 6; i++) {
		sge = (struct ibv_sge){(uintptr_t)(buf + (size_t)i * BUF_LEN), BUF_LEN, mr->lkey};
		rw = (struct ibv_recv_wr){
			.wr_id = 100 + (uint64_t)i, .sg_list = &sge, .num_sge = 1};
		if (ibv_post_srq_recv(srq, &rw, &bad))
			tap_bail("ibv_post_srq_recv");
	}
	m.srq_limit = 4;
	if (ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT))
		tap_bail("ibv_modify_srq");
	sender_send(&tx[0], 0x1000);
	sender_send(&tx[1], 0x2000);
	n = poll_n(cq, wc, 2, WAIT_MS);
	ok = n == 2;
	for (int i = 0; i < n; i++) {
		uint32_t tag;
		int q = wc[i].qp_num == id[1]->qp->qp_num;

		memcpy(&tag, buf + (wc[i].wr_id - 100) * BUF_LEN + 40, sizeof(tag));
		ok &= wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV &&
		      wc[i].byte_len == 40 + 64 && wc[i].wr_id == 100 + (uint64_t)i &&
		      (wc[i].qp_num == id[0]->qp->qp_num || q) && tag == (q ? 0x2000u : 0x1000u);
	}
	OK(ok, "two datagrams, one per QP, in SRQ buffers taken in order, completions on the "
	       "shared CQ naming each QP");
	OK(!async_srq_event(ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 200),
	   "4 WQEs left, limit 4: no event yet");
	sender_send(&tx[0], 0x1001);
	OK(async_srq_event(ctx, IBV_EVENT_SRQ_LIMIT_REACHED, WAIT_MS) == srq,
	   "3 left < limit 4: IBV_EVENT_SRQ_LIMIT_REACHED, element.srq is the SRQ");
	OK(ibv_query_srq(srq, &m) == 0 && m.srq_limit == 0,
	   "after the event the limit is disarmed: ibv_query_srq says 0");
	sender_send(&tx[1], 0x2001);
	OK(!async_srq_event(ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 200),
	   "one-shot: the next delivery raises no second event");
	m.srq_limit = 3;
	OK(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT) == 0, "re-armed with limit 3 (2 left)");
	sender_send(&tx[0], 0x1002);
	OK(async_srq_event(ctx, IBV_EVENT_SRQ_LIMIT_REACHED, WAIT_MS) == srq,
	   "re-armed: the next delivery fires the event again");
	n = poll_n(cq, wc, 3, WAIT_MS);
	OK(n == 3, "the three datagrams completed (%d)", n);
	o = oob("sim_ib0");
	sender_send(&tx[1], 0x2002);
	sender_send(&tx[1], 0x2003);
	n = poll_n(cq, wc, 2, 300);
	OK(n == 1 && oob("sim_ib0") == o + 1,
	   "the last buffer taken by one datagram, the next dropped (out_of_buffer +1)");

	sender_close(&tx[0], grp[0]);
	sender_close(&tx[1], grp[1]);
	rdma_destroy_qp(id[0]);
	OK(ibv_destroy_srq(srq) == EBUSY, "one QP left: still EBUSY");
	rdma_destroy_qp(id[1]);
	OK(ibv_destroy_srq(srq) == 0, "no QP left: ibv_destroy_srq 0");
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	for (int i = 0; i < 2; i++) {
		rdma_destroy_id(id[i]);
		rdma_destroy_event_channel(ch[i]);
	}
	free(buf);
}

static void test_rdma_srq(void)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 32, .max_sge = 1}};
	/* max_recv_wr sizes the receive CQ librdmacm makes; the QP itself has no RQ. */
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 4, .max_send_sge = 1, .max_recv_wr = 16}};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = bound_id("198.19.0.1", &ch);
	struct ibv_srq *srq;

	OK(rdma_create_srq(id, NULL, &sa) == 0 && id->srq && sa.attr.max_wr == 63,
	   "rdma_create_srq: id->srq set on the id's PD, max_wr 63 given back");
	OK(id->srq && id->srq->pd == id->pd, "the SRQ is on the id's default PD");
	errno = 0;
	OK(rdma_create_srq(id, NULL, &sa) == -1 && errno == EINVAL,
	   "a second rdma_create_srq on the id: EINVAL");
	OK(rdma_create_qp(id, NULL, &qa) == 0 && id->qp->srq == id->srq,
	   "rdma_create_qp on the id uses its SRQ");
	srq = id->srq;
	rdma_destroy_srq(id);
	OK(id->srq == srq, "rdma_destroy_srq while the QP uses it: the SRQ stays");
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	OK(id->srq == NULL, "rdma_destroy_srq after the QP: id->srq NULL");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* In a child started with SIMFABRIC_NO_SRQ=1: a device without SRQs. */
static int role_no_srq(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
	struct ibv_device_attr da = {0};
	struct ibv_pd *pd;
	int bad = 0;

	if (!ctx)
		return 2;
	pd = ibv_alloc_pd(ctx);
	bad |= ibv_query_device(ctx, &da) || da.max_srq || da.max_srq_wr || da.max_srq_sge;
	errno = 0;
	bad |= ibv_create_srq(pd, &sa) != NULL || errno != EOPNOTSUPP;
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return bad;
}

static void test_no_srq(const char *self)
{
	pid_t pid = fork();
	int st = -1;

	if (pid == 0) {
		setenv("SIMFABRIC_NO_SRQ", "1", 1);
		execl(self, self, "--no-srq", (char *)NULL);
		_exit(3);
	}
	waitpid(pid, &st, 0);
	OK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "SIMFABRIC_NO_SRQ=1: max_srq, max_srq_wr, max_srq_sge 0, ibv_create_srq EOPNOTSUPP");
}

int main(int argc, char **argv)
{
	int (*reset)(const char *);
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;

	if (argc == 2 && !strcmp(argv[1], "--no-srq"))
		return role_no_srq();
	setvbuf(stdout, NULL, _IOLBF, 0);
	reset = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");
	p_sf_get = (struct sf_fabric * (*)(void)) dlsym(RTLD_DEFAULT, "sf_get");
	p_sf_dev_by_name =
		(int (*)(struct sf_fabric *, const char *))dlsym(RTLD_DEFAULT, "sf_dev_by_name");
	p_sf_counters_read = (void (*)(struct sf_fabric *, uint32_t, struct sf_counters *))dlsym(
		RTLD_DEFAULT, "sf_counters_read");
	if (!reset || !p_sf_get || !p_sf_dev_by_name || !p_sf_counters_read) {
		printf("Bail out! not running on simfabric (LD_LIBRARY_PATH?)\n");
		return 100;
	}
	/* A fresh fabric of its own: one left by another build may have another layout. */
	if (getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	list = ibv_get_device_list(NULL);
	ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd)
		tap_bail("device");
	test_device(ctx);
	test_create(pd);
	test_modify_post(pd);
	test_qps();
	test_rdma_srq();
	test_no_srq(argv[0]);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	if (getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	return tap_done();
}
