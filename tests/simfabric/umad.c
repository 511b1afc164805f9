// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated libibumad.so.3 and the fabric's SM agents and SA (IBA 1.3 chapters 13-15;
 * rdma-core 44 libibumad): CA and port queries agree with libibverbs; an SA
 * MCMemberRecord join made with umad is the group an rdma_cm join of the same MGID
 * finds (same MLID), and it makes its port a member (a datagram to the group reaches a
 * QP attached there; after the SA leave the port is no member and the copy is dropped);
 * PathRecord and SMP queries; requests nobody answers time out.
 *
 * Run with LD_LIBRARY_PATH=<build>/simfabric; TAP output, exit status = failed checks.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sm.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"
#include "tap_verbs.h"

#define MAD_LEN	 256
#define SA_DATA	 56
#define SMP_DATA 64
#define QP1_QKEY 0x80010000
#define MSG_LEN	 64
#define TID	 0x5eed1234u

/* MCMemberRecord components: MGID, PortGID, Q_Key, TClass, P_Key, SL, FlowLabel, JoinState
 * (what creating a group needs: OpenSM REQUIRED_MC_CREATE_COMP_MASK). */
#define MCM_MASK                                                                                \
	((1ull << 0) | (1ull << 1) | (1ull << 2) | (1ull << 6) | (1ull << 7) | (1ull << 12) |    \
	 (1ull << 13) | (1ull << 16))

struct mad_buf {
	struct ib_user_mad hdr;
	uint8_t mad[MAD_LEN];
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* A MAD header (IBA 13.4.2) for class/version/method/attribute. */
static void mad_init(struct mad_buf *m, uint8_t mgmt_class, uint8_t version, uint8_t method,
		     uint16_t attr)
{
	memset(m, 0, sizeof(*m));
	m->mad[0] = 1;
	m->mad[1] = mgmt_class;
	m->mad[2] = version;
	m->mad[3] = method;
	m->mad[12] = (uint8_t)(TID >> 24);
	m->mad[13] = (uint8_t)(TID >> 16);
	m->mad[14] = (uint8_t)(TID >> 8);
	m->mad[15] = (uint8_t)TID;
	m->mad[16] = (uint8_t)(attr >> 8);
	m->mad[17] = (uint8_t)attr;
}

/* Send and wait for the answer; the agent id received, or < 0. */
static int rpc(int port, int agent, struct mad_buf *m, int dlid, int dqp)
{
	int len = MAD_LEN;

	umad_set_addr(m, dlid, dqp, 0, dqp ? QP1_QKEY : 0);
	if (umad_send(port, agent, m, MAD_LEN, 100, 3) < 0)
		return -1;
	return umad_recv(port, m, &len, 1000);
}

/* An SA MCMemberRecord Set (join) or Delete (leave) of port_gid in mgid. */
static int sa_mcm(int port, int agent, uint8_t method, const union ibv_gid *mgid,
		  const union ibv_gid *port_gid, uint8_t join_state, struct mad_buf *m)
{
	uint8_t *r = m->mad + SA_DATA;

	mad_init(m, UMAD_CLASS_SUBN_ADM, 2, method, UMAD_SA_ATTR_MCMEMBER_REC);
	put64(m->mad + 48, MCM_MASK);
	memcpy(r, mgid->raw, 16);
	memcpy(r + 16, port_gid->raw, 16);
	r[32] = 0x01; /* Q_Key 0x01234567 */
	r[33] = 0x23;
	r[34] = 0x45;
	r[35] = 0x67;
	r[40] = 0xff;
	r[41] = 0xff;
	r[48] = join_state;
	return rpc(port, agent, m, 1, 1);
}

/* A UD QP on a device with receives posted, attached to nothing yet. */
struct rx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[4][40 + MSG_LEN];
};

static void rx_open(struct rx *x, const char *dev)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x01234567};

	x->ctx = tap_open_dev(dev);
	x->pd = ibv_alloc_pd(x->ctx);
	x->cq = ibv_create_cq(x->ctx, 8, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = x->cq;
	x->qp = x->pd && x->cq ? ibv_create_qp(x->pd, &qa) : NULL;
	x->mr = x->qp ? ibv_reg_mr(x->pd, x->buf, sizeof(x->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!x->mr ||
	    ibv_modify_qp(x->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		tap_bail("rx QP");
	at.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(x->qp, &at, IBV_QP_STATE))
		tap_bail("RTR");
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	if (ibv_modify_qp(x->qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN))
		tap_bail("RTS");
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)x->buf[i],
				      .length = sizeof(x->buf[i]),
				      .lkey = x->mr->lkey};
		struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(x->qp, &wr, &bad))
			tap_bail("ibv_post_recv");
	}
}

static void rx_close(struct rx *x)
{
	ibv_destroy_qp(x->qp);
	ibv_dereg_mr(x->mr);
	ibv_destroy_cq(x->cq);
	ibv_dealloc_pd(x->pd);
	ibv_close_device(x->ctx);
}

static int rx_poll(struct rx *x)
{
	struct ibv_wc wc;
	int n = 0;

	for (int i = 0; i < 200 && !n; i++) {
		n = ibv_poll_cq(x->cq, 1, &wc);
		if (!n)
			poll(NULL, 0, 1);
	}
	return n == 1 && wc.status == IBV_WC_SUCCESS ? 1 : 0;
}

/* Send one datagram to the group from the rdma_cm id's QP. */
static void mc_send(struct rdma_cm_id *id, struct ibv_ah *ah, struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = MSG_LEN, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;
	struct ibv_wc wc;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xffffff;
	wr.wr.ud.remote_qkey = 0x01234567;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(id->qp, &wr, &bad))
		tap_bail("ibv_post_send");
	for (int i = 0; i < 200 && ibv_poll_cq(id->qp->send_cq, 1, &wc) == 0; i++)
		poll(NULL, 0, 1);
}

static void queries(void)
{
	char names[16][UMAD_CA_NAME_LEN];
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	umad_ca_t ca;
	umad_port_t port;
	__be64 guids[4];
	int n;

	n = umad_get_cas_names(names, 16);
	OK(n == 8 && !strcmp(names[0], "sim_ib0") && !strcmp(names[7], "sim_roce3"),
	   "umad_get_cas_names: the 8 devices, sorted (%d)", n);
	list = ibv_get_device_list(NULL);
	ctx = list ? ibv_open_device(list[1]) : NULL;
	ibv_free_device_list(list);
	if (!ctx)
		tap_bail("ibv_open_device");
	ibv_query_port(ctx, 1, &pa);
	ibv_query_gid(ctx, 1, 0, &gid);
	OK(umad_get_ca("sim_ib1", &ca) == 0 && ca.numports == 1 && ca.node_type == 1 &&
		   ca.ports[1] && !ca.ports[0],
	   "umad_get_ca sim_ib1: a CA with port 1");
	list = ibv_get_device_list(NULL);
	OK(list && ca.node_guid == ibv_get_device_guid(list[1]) &&
		   !strcmp(ca.fw_ver, "20.31.1014") && !strcmp(ca.ca_type, "MT4123"),
	   "umad_get_ca: node GUID, firmware and type as libibverbs reports them");
	ibv_free_device_list(list);
	OK(ca.ports[1]->base_lid == pa.lid && ca.ports[1]->sm_lid == pa.sm_lid &&
		   ca.ports[1]->state == 4 && ca.ports[1]->phys_state == 5 &&
		   ca.ports[1]->rate == 200 && be32toh(ca.ports[1]->capmask) == pa.port_cap_flags &&
		   ca.ports[1]->port_guid == gid.global.interface_id &&
		   ca.ports[1]->gid_prefix == gid.global.subnet_prefix &&
		   !strcmp(ca.ports[1]->link_layer, "InfiniBand") &&
		   ca.ports[1]->pkeys_size == 128 && ca.ports[1]->pkeys[0] == 0xffff,
	   "umad_get_ca: port 1 as ibv_query_port/ibv_query_gid (LID %u, SM LID %u)",
	   ca.ports[1]->base_lid, ca.ports[1]->sm_lid);
	umad_release_ca(&ca);
	OK(umad_get_port("sim_roce2", 1, &port) == 0 && !strcmp(port.link_layer, "Ethernet") &&
		   port.base_lid == 0 && port.rate == 100,
	   "umad_get_port sim_roce2: Ethernet, LID 0, 100 Gb/s");
	umad_release_port(&port);
	OK(umad_get_ca_portguids("sim_ib1", guids, 4) == 2 && guids[0] == 0 &&
		   guids[1] == gid.global.interface_id,
	   "umad_get_ca_portguids: port 0 none, port 1 the port GUID");
	OK(umad_get_ca("nosuch", &ca) < 0, "umad_get_ca of an unknown CA fails");
	ibv_close_device(ctx);
}

int main(void)
{
	int (*reset)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_in src = {.sin_family = AF_INET}, grp = {.sin_family = AF_INET};
	union ibv_gid mgid, gid1, gid2;
	struct mad_buf m;
	struct rx x = {0};
	struct ibv_ah *ah = NULL;
	struct ibv_mr *smr = NULL;
	char sbuf[MSG_LEN] = "to the group";
	uint16_t mlid = 0;
	int port, agent, smi, r, len;

	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	queries();

	port = umad_open_port("sim_ib1", 1);
	OK(port >= 0, "umad_open_port sim_ib1 port 1");
	if (port < 0)
		return tap_done();
	agent = umad_register(port, UMAD_CLASS_SUBN_ADM, 2, 0, NULL);
	smi = umad_register(port, UMAD_CLASS_SUBN_LID_ROUTED, 1, 0, NULL);
	OK(agent >= 0 && smi >= 0 && agent != smi, "umad_register: SA and SMI agents");
	x.ctx = NULL;
	rx_open(&x, "sim_ib1");
	ibv_query_gid(x.ctx, 1, 0, &gid1);

	/* SA join of sim_ib1 to the MGID rdma_cm makes of 239.1.2.3 (PS_UDP). */
	inet_pton(AF_INET6, "ff12:4001:ffff::f01:203", mgid.raw);
	r = sa_mcm(port, agent, UMAD_METHOD_SET, &mgid, &gid1, 1, &m);
	mlid = get16(m.mad + SA_DATA + 36);
	OK(r == agent && m.hdr.status == 0 && m.mad[3] == UMAD_METHOD_GET_RESP &&
		   get16(m.mad + 4) == 0 && get16(m.mad + 14) == (TID & 0xffff) &&
		   !memcmp(m.mad + SA_DATA, mgid.raw, 16),
	   "SA MCMemberRecord Set: GetResp, status 0, the MGID and TID echoed");
	OK(mlid >= 0xc000 && mlid < 0xffff && (m.mad[SA_DATA + 48] & 0xf) == 1,
	   "SA join: multicast LID 0x%x, full member", mlid);
	OK(ibv_attach_mcast(x.qp, &mgid, mlid) == 0, "sim_ib1's QP attached with that MLID");

	/* An rdma_cm join of the same group on sim_ib2 finds the SA's group. */
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	inet_pton(AF_INET, "198.18.0.3", &src.sin_addr);
	inet_pton(AF_INET, "239.1.2.3", &grp.sin_addr);
	if (rdma_bind_addr(id, (struct sockaddr *)&src))
		tap_bail("rdma_bind_addr");
	{
		struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
					      .cap = {.max_send_wr = 4,
						      .max_recv_wr = 4,
						      .max_send_sge = 1,
						      .max_recv_sge = 1}};

		if (rdma_create_qp(id, NULL, &qa))
			tap_bail("rdma_create_qp");
	}
	ibv_query_gid(id->verbs, 1, 0, &gid2);
	OK(rdma_join_multicast(id, (struct sockaddr *)&grp, NULL) == 0, "rdma_join_multicast");
	{
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};

		ev = poll(&p, 1, 3000) == 1 && !rdma_get_cm_event(ch, &ev) ? ev : NULL;
	}
	OK(ev && ev->event == RDMA_CM_EVENT_MULTICAST_JOIN && ev->param.ud.ah_attr.dlid == mlid &&
		   !memcmp(&ev->param.ud.ah_attr.grh.dgid, &mgid, 16),
	   "rdma_cm join of 239.1.2.3: the SA's MGID and MLID 0x%x (got 0x%x)", mlid,
	   ev ? ev->param.ud.ah_attr.dlid : 0);
	if (ev) {
		ah = ibv_create_ah(id->pd, &ev->param.ud.ah_attr);
		rdma_ack_cm_event(ev);
	}
	smr = ibv_reg_mr(id->pd, sbuf, sizeof(sbuf), 0);
	if (!ah || !smr)
		tap_bail("ah/mr");
	mc_send(id, ah, smr, sbuf);
	OK(rx_poll(&x) == 1 && !memcmp(x.buf[0] + 40, "to the group", 12),
	   "a datagram to the group reaches sim_ib1 (a member through the SA)");

	/* Leave through the SA: sim_ib1 is no member any more; its attached QP gets nothing. */
	r = sa_mcm(port, agent, UMAD_SA_METHOD_DELETE, &mgid, &gid1, 1, &m);
	OK(r == agent && m.hdr.status == 0 && m.mad[3] == UMAD_SA_METHOD_DELETE_RESP &&
		   get16(m.mad + 4) == 0 && get16(m.mad + SA_DATA + 36) == mlid,
	   "SA MCMemberRecord Delete: DeleteResp, status 0, MLID 0x%x", mlid);
	mc_send(id, ah, smr, sbuf);
	OK(rx_poll(&x) == 0, "after the SA leave the copy to sim_ib1 is dropped");
	r = sa_mcm(port, agent, UMAD_SA_METHOD_DELETE, &mgid, &gid1, 1, &m);
	OK(r == agent && (get16(m.mad + 4) >> 8) == UMAD_SA_STATUS_REQ_INVALID,
	   "a second Delete: status Request Invalid (0x%04x)", get16(m.mad + 4));
	ibv_detach_mcast(x.qp, &mgid, mlid);
	rx_close(&x);
	ibv_destroy_ah(ah);
	ibv_dereg_mr(smr);
	rdma_leave_multicast(id, (struct sockaddr *)&grp);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);

	/* PathRecord Get sim_ib1 → sim_ib2. */
	mad_init(&m, UMAD_CLASS_SUBN_ADM, 2, UMAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC);
	put64(m.mad + 48, (1ull << 2) | (1ull << 3));
	memcpy(m.mad + SA_DATA + 8, gid2.raw, 16);
	memcpy(m.mad + SA_DATA + 24, gid1.raw, 16);
	r = rpc(port, agent, &m, 1, 1);
	OK(r == agent && get16(m.mad + 4) == 0 && get16(m.mad + SA_DATA + 40) == 3 &&
		   get16(m.mad + SA_DATA + 42) == 2 && (m.mad[SA_DATA + 54] & 0x3f) == IBV_MTU_4096,
	   "SA PathRecord: DLID 3, SLID 2, MTU 4096");

	/* SMPs: NodeInfo of LID 3, PortInfo of the own port by directed route. */
	mad_init(&m, UMAD_CLASS_SUBN_LID_ROUTED, 1, UMAD_METHOD_GET, UMAD_SM_ATTR_NODE_INFO);
	r = rpc(port, smi, &m, 3, 0);
	OK(r == smi && get16(m.mad + 4) == 0 && m.mad[SMP_DATA + 2] == 1 &&
		   get64(m.mad + SMP_DATA + 12) == be64toh(gid2.global.interface_id),
	   "SMP NodeInfo to LID 3: a CA with sim_ib2's GUID");
	{
		int dr = umad_register(port, UMAD_CLASS_SUBN_DIRECTED_ROUTE, 1, 0, NULL);

		mad_init(&m, UMAD_CLASS_SUBN_DIRECTED_ROUTE, 1, UMAD_METHOD_GET,
			 UMAD_SM_ATTR_PORT_INFO);
		r = rpc(port, dr, &m, 0xffff, 0);
		OK(r == dr && (get16(m.mad + 4) & 0x7fff) == 0 &&
			   get16(m.mad + SMP_DATA + 16) == 2 && get16(m.mad + SMP_DATA + 18) == 1 &&
			   (m.mad[SMP_DATA + 32] & 0xf) == 4,
		   "directed-route PortInfo, 0 hops: LID 2, SM LID 1, Active");
	}

	/* Nobody answers: the request comes back with status ETIMEDOUT. */
	mad_init(&m, UMAD_CLASS_SUBN_ADM, 2, UMAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC);
	r = rpc(port, agent, &m, 7, 1);
	OK(r == agent && m.hdr.status == ETIMEDOUT, "SA request to LID 7 (no SM): ETIMEDOUT");
	len = MAD_LEN;
	OK(umad_recv(port, &m, &len, 50) == -ETIMEDOUT,
	   "umad_recv with nothing queued: -ETIMEDOUT");
	OK(umad_send(port, 17, &m, MAD_LEN, 100, 1) < 0 && errno == EINVAL,
	   "umad_send with an unregistered agent: EINVAL");

	/* Thousands of requests before the first read (a bridge joining 16 000 groups with
	 * their own Q_Keys): every answer is kept, in order, as the kernel's recv_list keeps
	 * them (a socket's buffer alone holds a few hundred). */
	{
		const int n = 5000;
		int sent = 0, got = 0;

		for (int i = 0; i < n; i++) {
			mad_init(&m, UMAD_CLASS_SUBN_ADM, 2, UMAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC);
			m.mad[12] = (uint8_t)(i >> 24);
			m.mad[13] = (uint8_t)(i >> 16);
			m.mad[14] = (uint8_t)(i >> 8);
			m.mad[15] = (uint8_t)i;
			umad_set_addr(&m, 1, 1, 0, QP1_QKEY);
			sent += umad_send(port, agent, &m, MAD_LEN, 100, 3) == 0;
		}
		for (int i = 0; i < n; i++) {
			len = MAD_LEN;
			if (umad_recv(port, &m, &len, 0) != agent || m.hdr.status != 0 ||
			    m.mad[3] != UMAD_METHOD_GET_RESP || get16(m.mad + 12) != (i >> 16) ||
			    get16(m.mad + 14) != (i & 0xffff))
				break;
			got++;
		}
		OK(sent == n && got == n,
		   "%d SA requests before a read: %d sent, %d answers in order", n, sent, got);
		len = MAD_LEN;
		OK(umad_recv(port, &m, &len, 0) == -EWOULDBLOCK, "then nothing queued");
		/* Answers left unread are freed with the port (the sanitizer run's leak check). */
		for (int i = 0; i < n; i++) {
			umad_set_addr(&m, 1, 1, 0, QP1_QKEY);
			umad_send(port, agent, &m, MAD_LEN, 100, 3);
		}
	}
	OK(umad_unregister(port, agent) == 0 && umad_unregister(port, agent) == -1,
	   "umad_unregister: once");
	umad_close_port(port);

	/* A RoCE port has no SM: the SA does not answer. */
	port = umad_open_port("sim_roce1", 1);
	if (port >= 0) {
		agent = umad_register(port, UMAD_CLASS_SUBN_ADM, 2, 0, NULL);
		inet_pton(AF_INET6, "::ffff:239.1.2.3", mgid.raw);
		r = sa_mcm(port, agent, UMAD_METHOD_SET, &mgid, &gid1, 1, &m);
		OK(r == agent && m.hdr.status == ETIMEDOUT, "SA join on a RoCE port: ETIMEDOUT");
		umad_close_port(port);
	}
	return tap_done();
}
