// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * SIDR (service ID resolution) on UD rdma_cm ids, call by call, as Linux's rdma_cm and
 * rdma-core 44's librdmacm present it (drivers/infiniband/core/cma.c: rdma_listen,
 * cma_resolve_ib_udp, cma_ib_req_handler, cma_send_sidr_rep, rdma_accept, rdma_reject,
 * cma_sidr_rep_handler; librdmacm/cma.c: ucma_process_conn_req, rdma_accept): the
 * CONNECT_REQUEST with a new id and the requester's private data, ESTABLISHED with the
 * listener's QPN, Q_Key and an AH attribute that reaches it, UNREACHABLE with the SIDR
 * status (1: nothing listens, 2: rejected or destroyed unanswered) or -ETIMEDOUT (port
 * down), and the calls' errors. IB and RoCE, one process with two event channels.
 *
 * `sf_sidr timeout` (run with SIMFABRIC_SIDR_TIMEOUT_MS set short): a listener that is
 * alive but never answers. The kernel's IB CM gives up on the SIDR REQ after its 16
 * tries (cma.c CMA_CM_RESPONSE_TIMEOUT, CMA_MAX_CM_RETRIES) and rdma_cm reports
 * UNREACHABLE -ETIMEDOUT (cma_sidr_rep_handler, IB_CM_SIDR_REQ_ERROR); a synchronous
 * rdma_connect fails with ETIMEDOUT; an answer given after that is dropped.
 *
 * Run with LD_LIBRARY_PATH=<build>/simfabric; TAP output, exit status = failed checks.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"

#define WAIT_MS	 3000
#define PORT	 7400
#define MSG_LEN	 64
#define BUF_LEN	 (40 + MSG_LEN)
#define UDP_QKEY 0x01234567u /* RDMA_UDP_QKEY */
#define REQ_PRIV (216 - 36)  /* SIDR REQ private data less the rdma_cm header */
#define REP_PRIV 136

struct side {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[BUF_LEN];
};

static struct rdma_cm_event *get_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1)
		return NULL;
	return rdma_get_cm_event(ch, &ev) ? NULL : ev;
}

/* The next event must be `type`; returns it (to be acked) or NULL after a failed check. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
				    const char *what)
{
	struct rdma_cm_event *ev = get_event(ch, WAIT_MS);

	OK(ev && ev->event == type, "%s: %s (got %s, status %d)", what, rdma_event_str(type),
	   ev ? rdma_event_str(ev->event) : "nothing", ev ? ev->status : 0);
	if (ev && ev->event != type) {
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

/*
 * Nothing more may be queued on the channel. Non-blocking: an answer the CM drops (one
 * that came after the timeout) makes the simulated channel readable without an event.
 */
static void expect_none(struct rdma_event_channel *ch, const char *what)
{
	int fl = fcntl(ch->fd, F_GETFL);
	struct rdma_cm_event *ev;

	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	ev = get_event(ch, 200);
	fcntl(ch->fd, F_SETFL, fl);

	OK(!ev, "%s: no further event (got %s)", what, ev ? rdma_event_str(ev->event) : "none");
	if (ev)
		rdma_ack_cm_event(ev);
}

static void sin_of(struct sockaddr_in *s, const char *ip, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->sin_addr);
}

/* A UD QP on the id (rdma_create_qp moves it to RTS) with one receive posted. */
static void side_qp(struct side *s)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_sge sge;
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	s->pd = ibv_alloc_pd(s->id->verbs);
	s->cq = s->pd ? ibv_create_cq(s->id->verbs, 8, NULL, NULL, 0) : NULL;
	if (!s->cq)
		tap_bail("pd/cq");
	qa.send_cq = qa.recv_cq = s->cq;
	if (rdma_create_qp(s->id, s->pd, &qa))
		tap_bail("rdma_create_qp");
	s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		tap_bail("ibv_reg_mr");
	sge = (struct ibv_sge){.addr = (uintptr_t)s->buf, .length = BUF_LEN, .lkey = s->mr->lkey};
	if (ibv_post_recv(s->id->qp, &wr, &bad))
		tap_bail("ibv_post_recv");
}

static void side_free(struct side *s)
{
	if (s->id && s->id->qp)
		rdma_destroy_qp(s->id);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->id)
		rdma_destroy_id(s->id);
	memset(s, 0, sizeof(*s));
}

/* A client id on channel ch: bound to src, address and route to dst:port resolved. */
static struct rdma_cm_id *client(struct rdma_event_channel *ch, const char *src, const char *dst,
				 uint16_t port, const char *what)
{
	struct sockaddr_in s, d;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	sin_of(&s, src, 0);
	sin_of(&d, dst, port);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	if (rdma_resolve_addr(id, (struct sockaddr *)&s, (struct sockaddr *)&d, 1000))
		tap_bail("rdma_resolve_addr");
	ev = get_event(ch, WAIT_MS);
	if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		tap_bail("ADDR_RESOLVED");
	rdma_ack_cm_event(ev);
	{
		struct rdma_conn_param cp = {0};

		OK(rdma_connect(id, &cp) == -1 && errno == EINVAL,
		   "%s: rdma_connect before the route is resolved: EINVAL", what);
	}
	if (rdma_resolve_route(id, 1000))
		tap_bail("rdma_resolve_route");
	ev = get_event(ch, WAIT_MS);
	if (!ev || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		tap_bail("ROUTE_RESOLVED");
	rdma_ack_cm_event(ev);
	return id;
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

/* The fabric's fault injection (the simulated libibverbs' private API). */
static void port_set(const char *dev, bool up)
{
	void *(*get)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "sf_get");
	int (*byname)(void *, const char *) =
		(int (*)(void *, const char *))dlsym(RTLD_DEFAULT, "sf_dev_by_name");
	int (*set)(void *, uint32_t, bool) =
		(int (*)(void *, uint32_t, bool))dlsym(RTLD_DEFAULT, "sf_port_set");

	if (!get || !byname || !set) {
		printf("Bail out! not running on simfabric (LD_LIBRARY_PATH?)\n");
		exit(100);
	}
	set(get(), (uint32_t)byname(get(), dev), up);
}

static void run(const char *kind, const char *sip, const char *cip, const char *sdev, bool ib)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_id *lid, *tcp;
	struct rdma_cm_event *ev;
	struct sockaddr_in a;
	struct side srv = {0}, cli = {0};
	struct rdma_conn_param cp = {0};
	struct ibv_port_attr pa;
	uint32_t srv_qpn = 0, qkey = 0;
	struct ibv_ah_attr ah = {0};
	char big[REQ_PRIV + 1];
	int ctx_marker;

	if (!sch || !cch)
		tap_bail("rdma_create_event_channel");

	/* Listen. */
	if (rdma_create_id(sch, &lid, &ctx_marker, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	sin_of(&a, sip, PORT);
	OK(rdma_bind_addr(lid, (struct sockaddr *)&a) == 0, "%s: bind %s:%d", kind, sip, PORT);
	OK(rdma_listen(lid, 1) == 0, "%s: rdma_listen on a UD id", kind);
	OK(rdma_listen(lid, 1) == -1 && errno == EINVAL, "%s: a second rdma_listen: EINVAL", kind);
	OK(rdma_accept(lid, NULL) == -1 && errno == EINVAL,
	   "%s: rdma_accept on the listener: EINVAL", kind);
	if (rdma_create_id(NULL, &tcp, NULL, RDMA_PS_TCP) == 0) {
		OK(rdma_listen(tcp, 1) == -1 && errno == EOPNOTSUPP,
		   "%s: rdma_listen on an RC (PS_TCP) id: EOPNOTSUPP", kind);
		rdma_destroy_id(tcp);
	}

	/* Accept, with private data both ways. */
	cli.id = client(cch, cip, sip, PORT, kind);
	side_qp(&cli);
	memset(big, 'x', sizeof(big));
	cp.private_data = big;
	cp.private_data_len = REQ_PRIV + 1;
	OK(rdma_connect(cli.id, &cp) == -1 && errno == EINVAL,
	   "%s: rdma_connect with %d bytes of private data: EINVAL", kind, REQ_PRIV + 1);
	cp.private_data = "hello-sidr";
	cp.private_data_len = 10;
	OK(rdma_connect(cli.id, &cp) == 0, "%s: rdma_connect", kind);
	OK(rdma_reject(cli.id, NULL, 0) == -1 && errno == EINVAL,
	   "%s: rdma_reject on the connecting id: EINVAL", kind);
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, kind);
	if (ev) {
		struct sockaddr_in *l = (struct sockaddr_in *)rdma_get_local_addr(ev->id);
		struct sockaddr_in *p = (struct sockaddr_in *)rdma_get_peer_addr(ev->id);
		struct sockaddr_in *c = (struct sockaddr_in *)rdma_get_local_addr(cli.id);
		char want_l[32], got[32];

		OK(ev->status == 0 && ev->listen_id == lid && ev->id && ev->id != lid,
		   "%s: CONNECT_REQUEST: status 0, listen_id the listener, a new id", kind);
		OK(ev->id->context == &ctx_marker && ev->id->channel == sch &&
			   ev->id->ps == RDMA_PS_UDP && ev->id->qp_type == IBV_QPT_UD,
		   "%s: the new id has the listener's context, channel, port space", kind);
		OK(ev->id->verbs && ev->id->verbs == lid->verbs && ev->id->port_num == 1,
		   "%s: the new id is on the listener's device, port 1", kind);
		OK(ev->param.ud.private_data_len == REQ_PRIV &&
			   !memcmp(ev->param.ud.private_data, "hello-sidr", 10) &&
			   all_zero((const char *)ev->param.ud.private_data + 10, REQ_PRIV - 10),
		   "%s: private data: the client's 10 bytes, zeros to %d (got %u)", kind, REQ_PRIV,
		   ev->param.ud.private_data_len);
		OK(ev->param.ud.qp_num == 0 && ev->param.ud.qkey == 0,
		   "%s: CONNECT_REQUEST carries no QPN, no Q_Key", kind);
		inet_ntop(AF_INET, &l->sin_addr, got, sizeof(got));
		snprintf(want_l, sizeof(want_l), "%s", sip);
		OK(l->sin_family == AF_INET && !strcmp(got, want_l) && ntohs(l->sin_port) == PORT,
		   "%s: local address %s:%u (want %s:%d)", kind, got, ntohs(l->sin_port), sip,
		   PORT);
		OK(p->sin_addr.s_addr == c->sin_addr.s_addr && p->sin_port == c->sin_port &&
			   p->sin_port != 0,
		   "%s: peer address is the client's address and port (%u)", kind,
		   ntohs(p->sin_port));
		srv.id = ev->id;
		rdma_ack_cm_event(ev);
		side_qp(&srv);
		srv_qpn = srv.id->qp->qp_num;
		cp.private_data = big;
		cp.private_data_len = 0;
		cp.private_data = "ok";
		cp.private_data_len = 2;
		OK(rdma_accept(srv.id, &cp) == 0, "%s: rdma_accept", kind);
		OK(rdma_accept(srv.id, &cp) == -1 && errno == EINVAL,
		   "%s: a second rdma_accept: EINVAL", kind);
		OK(rdma_reject(srv.id, NULL, 0) == -1 && errno == EINVAL,
		   "%s: rdma_reject after accepting: EINVAL", kind);
	}
	ev = expect(cch, RDMA_CM_EVENT_ESTABLISHED, kind);
	if (ev) {
		union ibv_gid sgid;

		OK(ev->status == 0 && ev->id == cli.id && ev->param.ud.qp_num == srv_qpn &&
			   ev->param.ud.qkey == UDP_QKEY,
		   "%s: ESTABLISHED: the server's QPN 0x%x, Q_Key 0x%x (got 0x%x, 0x%x)", kind,
		   srv_qpn, UDP_QKEY, ev->param.ud.qp_num, ev->param.ud.qkey);
		OK(ev->param.ud.private_data_len == REP_PRIV &&
			   !memcmp(ev->param.ud.private_data, "ok", 2) &&
			   all_zero((const char *)ev->param.ud.private_data + 2, REP_PRIV - 2),
		   "%s: REP private data: the server's 2 bytes, zeros to %d", kind, REP_PRIV);
		ah = ev->param.ud.ah_attr;
		qkey = ev->param.ud.qkey;
		ibv_query_port(srv.id->verbs, 1, &pa);
		if (ib) {
			OK(ah.dlid == pa.lid && !ah.is_global && ah.port_num == 1,
			   "%s: AH attribute: DLID %u (the server's LID %u), no GRH", kind, ah.dlid,
			   pa.lid);
		} else {
			ibv_query_gid(srv.id->verbs, 1, 3, &sgid);
			OK(ah.is_global && ah.dlid == 0 && ah.grh.sgid_index == 3 &&
				   !memcmp(&ah.grh.dgid, &sgid, sizeof(sgid)) && ah.port_num == 1,
			   "%s: AH attribute: GRH to the server's GID[3], SGID index 3", kind);
		}
		rdma_ack_cm_event(ev);
	}
	expect_none(cch, kind);
	expect_none(sch, kind);

	/* A datagram through the AH of the event reaches the server's QP. */
	{
		struct ibv_ah *h = ibv_create_ah(cli.pd, &ah);
		struct ibv_sge sge = {
			.addr = (uintptr_t)cli.buf, .length = MSG_LEN, .lkey = cli.mr->lkey};
		struct ibv_send_wr wr = {.sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;
		struct ibv_wc wc;
		int n = 0;

		OK(h != NULL, "%s: ibv_create_ah from the ESTABLISHED event", kind);
		if (h) {
			memset(cli.buf, 0x5a, MSG_LEN);
			wr.wr.ud.ah = h;
			wr.wr.ud.remote_qpn = srv_qpn;
			wr.wr.ud.remote_qkey = qkey;
			OK(ibv_post_send(cli.id->qp, &wr, &bad) == 0, "%s: send to the server",
			   kind);
			for (int i = 0; i < 3000 && !n; i++) {
				n = ibv_poll_cq(srv.cq, 1, &wc);
				if (!n)
					poll(NULL, 0, 1);
			}
			OK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
				   wc.byte_len == 40 + MSG_LEN && wc.src_qp == cli.id->qp->qp_num &&
				   srv.buf[40] == 0x5a && srv.buf[40 + MSG_LEN - 1] == 0x5a,
			   "%s: the server received it from the client's QP", kind);
			ibv_destroy_ah(h);
		}
	}
	side_free(&srv);
	side_free(&cli);

	/* Reject, with private data. */
	cli.id = client(cch, cip, sip, PORT, kind);
	OK(rdma_connect(cli.id, NULL) == 0, "%s: rdma_connect without conn_param", kind);
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, kind);
	if (ev) {
		struct rdma_cm_id *rid = ev->id;

		OK(ev->param.ud.private_data_len == REQ_PRIV &&
			   all_zero(ev->param.ud.private_data, REQ_PRIV),
		   "%s: no private data: %d zero bytes", kind, REQ_PRIV);
		rdma_ack_cm_event(ev);
		memset(big, 'r', sizeof(big));
		OK(rdma_reject(rid, big, REP_PRIV + 1) == -1 && errno == EINVAL,
		   "%s: rdma_reject with %d bytes of private data: EINVAL", kind, REP_PRIV + 1);
		OK(rdma_reject(rid, "no", 2) == 0, "%s: rdma_reject", kind);
		OK(rdma_accept(rid, NULL) == -1 && errno == EINVAL,
		   "%s: rdma_accept after rejecting: EINVAL", kind);
		rdma_destroy_id(rid);
	}
	ev = expect(cch, RDMA_CM_EVENT_UNREACHABLE, kind);
	if (ev) {
		OK(ev->status == 2 && ev->param.ud.private_data_len == REP_PRIV &&
			   !memcmp(ev->param.ud.private_data, "no", 2) && ev->param.ud.qp_num == 0,
		   "%s: rejected: UNREACHABLE status 2 (IB_SIDR_REJECT), the reject's data", kind);
		rdma_ack_cm_event(ev);
	}
	expect_none(cch, kind);
	side_free(&cli);

	/* The request's id destroyed without an answer: the CM rejects it. */
	cli.id = client(cch, cip, sip, PORT, kind);
	OK(rdma_connect(cli.id, NULL) == 0, "%s: rdma_connect", kind);
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, kind);
	if (ev) {
		struct rdma_cm_id *rid = ev->id;

		rdma_ack_cm_event(ev);
		rdma_destroy_id(rid);
	}
	ev = expect(cch, RDMA_CM_EVENT_UNREACHABLE, kind);
	if (ev) {
		OK(ev->status == 2, "%s: unanswered request destroyed: status 2 (got %d)", kind,
		   ev->status);
		rdma_ack_cm_event(ev);
	}
	side_free(&cli);

	/* Nothing listens on the port. */
	cli.id = client(cch, cip, sip, PORT + 1, kind);
	OK(rdma_connect(cli.id, NULL) == 0, "%s: rdma_connect to port %d", kind, PORT + 1);
	ev = expect(cch, RDMA_CM_EVENT_UNREACHABLE, kind);
	if (ev) {
		OK(ev->status == 1 && ev->param.ud.private_data_len == REP_PRIV,
		   "%s: no listener: UNREACHABLE status 1 (IB_SIDR_UNSUPPORTED; got %d)", kind,
		   ev->status);
		rdma_ack_cm_event(ev);
	}
	expect_none(sch, kind);
	side_free(&cli);

	/* The server's port is down: the request times out. */
	cli.id = client(cch, cip, sip, PORT, kind);
	port_set(sdev, false);
	OK(rdma_connect(cli.id, NULL) == 0, "%s: rdma_connect with the server's port down", kind);
	ev = expect(cch, RDMA_CM_EVENT_UNREACHABLE, kind);
	if (ev) {
		OK(ev->status == -ETIMEDOUT, "%s: port down: UNREACHABLE -ETIMEDOUT (got %d)", kind,
		   ev->status);
		rdma_ack_cm_event(ev);
	}
	port_set(sdev, true);
	expect_none(sch, kind);
	side_free(&cli);
	/* Drain the port events of the listener's device, if any, then stop listening. */
	rdma_destroy_id(lid);

	/* After rdma_destroy_id nothing listens any more. */
	cli.id = client(cch, cip, sip, PORT, kind);
	OK(rdma_connect(cli.id, NULL) == 0, "%s: rdma_connect after the listener is gone", kind);
	ev = expect(cch, RDMA_CM_EVENT_UNREACHABLE, kind);
	if (ev) {
		OK(ev->status == 1, "%s: listener destroyed: status 1 (got %d)", kind, ev->status);
		rdma_ack_cm_event(ev);
	}
	side_free(&cli);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* A synchronous listener (no channel): rdma_get_request hands out the requests. */
static void sync_listener(const char *kind, const char *sip, const char *cip)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_id *lid, *req = NULL, *async;
	struct rdma_cm_event *ev;
	struct sockaddr_in a;
	struct side cli = {0};
	struct rdma_conn_param cp = {.private_data = "sync", .private_data_len = 4};

	if (!cch || rdma_create_id(NULL, &lid, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	sin_of(&a, sip, PORT + 2);
	if (rdma_bind_addr(lid, (struct sockaddr *)&a) || rdma_listen(lid, 1))
		tap_bail("sync listen");
	if (rdma_create_id(cch, &async, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	OK(rdma_get_request(async, &req) == -1 && errno == EINVAL,
	   "%s: rdma_get_request on an id with a channel: EINVAL", kind);
	rdma_destroy_id(async);
	cli.id = client(cch, cip, sip, PORT + 2, kind);
	OK(rdma_connect(cli.id, &cp) == 0, "%s: rdma_connect to a synchronous listener", kind);
	OK(rdma_get_request(lid, &req) == 0 && req && req->event &&
		   req->event->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		   req->event->listen_id == lid && req->channel != lid->channel &&
		   !memcmp(req->event->param.ud.private_data, "sync", 4),
	   "%s: rdma_get_request: the new id, the request as its event, a channel of its own",
	   kind);
	if (req) {
		OK(rdma_accept(req, NULL) == 0 && req->event == NULL,
		   "%s: rdma_accept acks the request of a synchronous id", kind);
		ev = expect(cch, RDMA_CM_EVENT_ESTABLISHED, kind);
		if (ev) {
			OK(ev->param.ud.qkey == UDP_QKEY, "%s: ESTABLISHED from the synchronous id",
			   kind);
			rdma_ack_cm_event(ev);
		}
		rdma_destroy_id(req);
	}
	side_free(&cli);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(cch);
}

/*
 * A listener that never answers: the client's request times out (UNREACHABLE
 * -ETIMEDOUT), whether the listener read the request or not; a late accept is dropped.
 */
static void silent_listener(const char *kind, const char *sip, const char *cip)
{
	struct rdma_event_channel *lch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_id *lid, *req = NULL, *sid;
	struct rdma_cm_event *ev;
	struct sockaddr_in a, s;
	struct side cli = {0};
	struct rdma_conn_param cp = {0};
	int rc, err;

	if (!lch || !cch || rdma_create_id(lch, &lid, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	sin_of(&a, sip, PORT + 3);
	if (rdma_bind_addr(lid, (struct sockaddr *)&a) || rdma_listen(lid, 4))
		tap_bail("silent listen");

	/* The listener reads the request and keeps its id without an answer. */
	cli.id = client(cch, cip, sip, PORT + 3, kind);
	OK(rdma_connect(cli.id, &cp) == 0, "%s: rdma_connect to a silent listener", kind);
	ev = expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST, kind);
	if (ev) {
		req = ev->id;
		rdma_ack_cm_event(ev);
	}
	ev = get_event(cch, 30000);
	OK(ev && ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status == -ETIMEDOUT,
	   "%s: no answer: UNREACHABLE -ETIMEDOUT (got %s, status %d)", kind,
	   ev ? rdma_event_str(ev->event) : "nothing", ev ? ev->status : 0);
	if (ev)
		rdma_ack_cm_event(ev);
	if (req) {
		/* The server's CM sends its REP; the client's CM has given up on it. */
		OK(rdma_accept(req, NULL) == 0, "%s: a late rdma_accept succeeds", kind);
		expect_none(cch, kind);
		rdma_destroy_id(req);
	}
	side_free(&cli);

	/* A synchronous client; the listener does not even read its channel. */
	if (rdma_create_id(NULL, &sid, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	sin_of(&s, cip, 0);
	if (rdma_resolve_addr(sid, (struct sockaddr *)&s, (struct sockaddr *)&a, 1000) ||
	    rdma_resolve_route(sid, 1000))
		tap_bail("sync resolve");
	errno = 0;
	rc = rdma_connect(sid, &cp);
	err = errno;
	OK(rc == -1 && err == ETIMEDOUT,
	   "%s: synchronous rdma_connect to a silent listener: ETIMEDOUT (%d, errno %d)", kind, rc,
	   err);
	rdma_destroy_id(sid);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(lch);
}

int main(int argc, char **argv)
{
	int (*reset)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");

	/* A fresh fabric of its own: one left by another build may have another layout. */
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	if (argc > 1 && !strcmp(argv[1], "timeout")) {
		silent_listener("IB", "198.18.0.2", "198.18.0.3");
		silent_listener("RoCE", "198.19.0.2", "198.19.0.3");
		return tap_done();
	}
	run("IB", "198.18.0.2", "198.18.0.3", "sim_ib1", true);
	run("RoCE", "198.19.0.2", "198.19.0.3", "sim_roce1", false);
	sync_listener("IB", "198.18.0.2", "198.18.0.3");
	return tap_done();
}
