// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Conformance of the simulated fabric with what rdma-core 44 + Linux deliver to a UD
 * multicast application (../shared/reference/verbs-facts.md): MGIDs, join events, the
 * 40-byte receive header, work completions, loopback and its blocking, drops and their
 * counters, send-queue accounting, CQ overflow, async events, completion channels
 * across processes, unicast.
 *
 * Built against the real rdma-core headers and libraries; run with
 * LD_LIBRARY_PATH=<build>/simfabric. Fault injection and counters come from the
 * simulated libibverbs' private API, looked up with dlsym (the test does not link it).
 * Output is TAP; the exit status is the number of failed checks (capped).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"
#include "../../simfabric/sf.h"

#define GROUP	"239.1.2.3"
#define MSG_LEN 100
#define BUF_LEN (40 + 4096)
#define NBUF	64
#define WAIT_MS 3000

/* ---- the simulated fabric's private API (dlsym) ---- */

static struct sf_fabric *(*p_sf_get)(void);
static int (*p_sf_port_set)(struct sf_fabric *, uint32_t, bool);
static int (*p_sf_dev_by_name)(struct sf_fabric *, const char *);
static void (*p_sf_counters_read)(struct sf_fabric *, uint32_t, struct sf_counters *);

static struct sf_fabric *fab(void)
{
	if (!p_sf_get) {
		p_sf_get = (struct sf_fabric * (*)(void)) dlsym(RTLD_DEFAULT, "sf_get");
		p_sf_port_set = (int (*)(struct sf_fabric *, uint32_t, bool))dlsym(RTLD_DEFAULT,
										   "sf_port_set");
		p_sf_dev_by_name = (int (*)(struct sf_fabric *, const char *))dlsym(
			RTLD_DEFAULT, "sf_dev_by_name");
		p_sf_counters_read =
			(void (*)(struct sf_fabric *, uint32_t, struct sf_counters *))dlsym(
				RTLD_DEFAULT, "sf_counters_read");
		if (!p_sf_get || !p_sf_port_set || !p_sf_dev_by_name || !p_sf_counters_read) {
			printf("Bail out! not running on simfabric (LD_LIBRARY_PATH?)\n");
			exit(100);
		}
	}
	return p_sf_get();
}

/* A snapshot of port `dev`'s counters (summed over processes). */
static struct sf_counters *ctr(const char *dev)
{
	static struct sf_counters snap;

	p_sf_counters_read(fab(), (uint32_t)p_sf_dev_by_name(fab(), dev), &snap);
	return &snap;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- an endpoint: one rdma_cm id with a UD QP, a CQ and receive buffers ---- */

struct ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *cc;
	struct ibv_mr *mr;
	uint8_t *buf; /* NBUF receive buffers + one send buffer */
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
	struct rdma_ud_param ud; /* the join event */
	int join_status;
	uint8_t mgid[16];
};

static struct rdma_cm_event *get_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static uint8_t *rbuf(struct ep *e, int i)
{
	return e->buf + (size_t)i * BUF_LEN;
}

static void post_recvs(struct ep *e, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {(uintptr_t)rbuf(e, i), BUF_LEN, e->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(e->id->qp, &wr, &bad))
			tap_bail("ibv_post_recv");
	}
}

/*
 * Bind to `ip`, create the QP (optionally blocking self loopback), with `nrecv`
 * receives posted, and join `group` (sockaddr) with `flags`.
 */
static void ep_open(struct ep *e, const char *ip, enum rdma_port_space ps, bool block_self,
		    bool with_channel, int cqe)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct ibv_qp_init_attr_ex qa;

	memset(e, 0, sizeof(*e));
	inet_pton(AF_INET, ip, &a.sin_addr);
	e->ch = rdma_create_event_channel();
	if (!e->ch || rdma_create_id(e->ch, &e->id, e, ps))
		tap_bail("rdma_create_id");
	if (rdma_bind_addr(e->id, (struct sockaddr *)&a))
		tap_bail("rdma_bind_addr");
	e->pd = ibv_alloc_pd(e->id->verbs);
	if (with_channel)
		e->cc = ibv_create_comp_channel(e->id->verbs);
	e->cq = ibv_create_cq(e->id->verbs, cqe, e, e->cc, 0);
	if (!e->pd || !e->cq)
		tap_bail("pd/cq");
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = NBUF;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = e->pd;
	if (block_self) {
		qa.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		qa.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	}
	if (rdma_create_qp_ex(e->id, &qa))
		tap_bail("rdma_create_qp_ex");
	e->buf = aligned_alloc(4096, ((size_t)(NBUF + 1) * BUF_LEN + 4095) & ~(size_t)4095);
	memset(e->buf, 0xee, (size_t)(NBUF + 1) * BUF_LEN);
	e->mr = ibv_reg_mr(e->pd, e->buf, (size_t)(NBUF + 1) * BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		tap_bail("ibv_reg_mr");
}

/* Join and wait for the event; returns the event type. Fills e->ud and the AH. */
static int ep_join(struct ep *e, struct sockaddr *group, bool send_only)
{
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					: RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = group,
	};
	struct rdma_cm_event *ev;
	int type;

	if (rdma_join_multicast_ex(e->id, &ja, e))
		tap_bail("rdma_join_multicast_ex");
	ev = get_event(e->ch, WAIT_MS);
	if (!ev)
		return -1;
	type = ev->event;
	e->join_status = ev->status;
	if (type == RDMA_CM_EVENT_MULTICAST_JOIN) {
		e->ud = ev->param.ud;
		memcpy(e->mgid, ev->param.ud.ah_attr.grh.dgid.raw, 16);
		e->remote_qpn = ev->param.ud.qp_num;
		e->remote_qkey = ev->param.ud.qkey;
		if (e->ah) /* joined again: the new join's AH replaces the old one */
			ibv_destroy_ah(e->ah);
		e->ah = ibv_create_ah(e->pd, &ev->param.ud.ah_attr);
	}
	rdma_ack_cm_event(ev);
	return type;
}

static void ep_close(struct ep *e, struct sockaddr *group)
{
	if (e->ah)
		ibv_destroy_ah(e->ah);
	if (group)
		rdma_leave_multicast(e->id, group);
	rdma_destroy_qp(e->id);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	if (e->cc)
		ibv_destroy_comp_channel(e->cc);
	ibv_dealloc_pd(e->pd);
	rdma_destroy_id(e->id);
	rdma_destroy_event_channel(e->ch);
	free(e->buf);
}

static int ep_send(struct ep *e, uint32_t len, bool imm, uint32_t imm_data, int flags,
		   uint64_t wr_id, uint32_t qkey)
{
	uint8_t *s = rbuf(e, NBUF);
	struct ibv_sge sge = {(uintptr_t)s, len, e->mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;

	for (uint32_t i = 0; i < len; i++)
		s[i] = (uint8_t)(i * 7 + 3);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = htonl(imm_data);
	wr.send_flags = (unsigned int)flags;
	wr.wr.ud.ah = e->ah;
	wr.wr.ud.remote_qpn = e->remote_qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(e->id->qp, &wr, &bad);
}

/* Poll until n completions or the timeout; returns how many. */
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

static struct sockaddr *in4(struct sockaddr_in *a, const char *ip)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a->sin_addr);
	return (struct sockaddr *)a;
}

static bool gid_eq(const uint8_t *a, const char *text)
{
	uint8_t b[16];

	inet_pton(AF_INET6, text, b);
	return !memcmp(a, b, 16);
}

static bool payload_ok(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 7 + 3))
			return false;
	return true;
}

static uint16_t csum(const uint8_t *h, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* ---- tests ---- */

static void test_mgids(void)
{
	struct sockaddr_in g;
	struct sockaddr_ib sib;
	struct ep e;

	ep_open(&e, "198.18.0.2", RDMA_PS_UDP, false, false, 256);
	OK(ep_join(&e, in4(&g, GROUP), false) == RDMA_CM_EVENT_MULTICAST_JOIN,
	   "IB PS_UDP join gives MULTICAST_JOIN");
	OK(gid_eq(e.mgid, "ff12:4001:ffff::f01:203"), "IB PS_UDP MGID ff12:4001:ffff::f01:203");
	OK(e.ud.qp_num == 0xffffff, "join event qp_num 0xffffff (%#x)", e.ud.qp_num);
	OK(e.ud.qkey == 0x01234567, "join event qkey 0x01234567 (%#x)", e.ud.qkey);
	OK(e.ud.private_data == &e, "join event private_data is the join context");
	OK(e.ud.ah_attr.is_global == 1 && e.ud.ah_attr.port_num == 1, "ah_attr global, port 1");
	OK(e.ud.ah_attr.dlid >= 0xc000 && e.ud.ah_attr.dlid < 0xffff, "IB dlid is an MLID (%#x)",
	   e.ud.ah_attr.dlid);
	OK(e.ud.ah_attr.grh.hop_limit == 0 && e.ud.ah_attr.grh.sgid_index == 0,
	   "IB join hop_limit 0, sgid_index 0");
	ep_close(&e, (struct sockaddr *)&g);

	ep_open(&e, "198.18.0.2", RDMA_PS_IPOIB, false, false, 256);
	OK(ep_join(&e, in4(&g, GROUP), false) == RDMA_CM_EVENT_MULTICAST_JOIN &&
		   gid_eq(e.mgid, "ff12:401b:ffff::f01:203"),
	   "IB PS_IPOIB MGID ff12:401b:ffff::f01:203");
	ep_close(&e, (struct sockaddr *)&g);

	ep_open(&e, "198.19.0.2", RDMA_PS_UDP, false, false, 256);
	OK(ep_join(&e, in4(&g, GROUP), false) == RDMA_CM_EVENT_MULTICAST_JOIN &&
		   gid_eq(e.mgid, "::ffff:239.1.2.3"),
	   "RoCE MGID ::ffff:239.1.2.3");
	OK(e.ud.ah_attr.dlid == 0 && e.ud.ah_attr.grh.hop_limit == 64 &&
		   e.ud.ah_attr.grh.sgid_index == 3 && e.ud.ah_attr.sl == 0,
	   "RoCE join: dlid 0, hop_limit 64, sgid_index 3 (RoCE v2 IPv4 GID)");
	ep_close(&e, (struct sockaddr *)&g);

	/* AF_IB addresses on a UD id (PS_UDP, as mckey -M): PS_IB ids are connected. */
	ep_open(&e, "198.18.0.2", RDMA_PS_UDP, false, false, 256);
	memset(&sib, 0, sizeof(sib));
	sib.sib_family = AF_IB;
	inet_pton(AF_INET6, "ff15:a01b:ffff::1234:ef01:0203", &sib.sib_addr);
	OK(ep_join(&e, (struct sockaddr *)&sib, false) == RDMA_CM_EVENT_MULTICAST_JOIN &&
		   gid_eq(e.mgid, "ff15:a01b:ffff::1234:ef01:0203"),
	   "AF_IB MGID used verbatim");
	ep_close(&e, (struct sockaddr *)&sib);
}

/* A sender on dev `tx_ip`, a receiver on `rx_ip`: header, completion and payload bytes. */
static void test_data(bool roce)
{
	const char *rx_ip = roce ? "198.19.0.2" : "198.18.0.2";
	const char *tx_ip = roce ? "198.19.0.4" : "198.18.0.4";
	const char *name = roce ? "RoCE" : "IB";
	struct sockaddr_in g;
	struct ep rx, tx;
	struct ibv_wc wc[4];
	struct ibv_ah_attr aa;
	union ibv_gid sgid;
	const uint8_t *h;
	int n;

	ep_open(&rx, rx_ip, RDMA_PS_UDP, false, false, 256);
	ep_open(&tx, tx_ip, RDMA_PS_UDP, false, false, 256);
	post_recvs(&rx, 4);
	ep_join(&rx, in4(&g, GROUP), false);
	OK(ep_join(&tx, in4(&g, GROUP), true) == RDMA_CM_EVENT_MULTICAST_JOIN, "%s send-only join",
	   name);
	/* An AH with our own traffic class / hop limit to see them echoed. */
	aa = tx.ud.ah_attr;
	aa.grh.traffic_class = 0x28;
	aa.grh.hop_limit = roce ? 33 : 1;
	aa.grh.flow_label = roce ? 0 : 0x12345;
	ibv_destroy_ah(tx.ah);
	tx.ah = ibv_create_ah(tx.pd, &aa);
	OK(ep_send(&tx, MSG_LEN, true, 0x11223344, IBV_SEND_SIGNALED, 77, tx.remote_qkey) == 0,
	   "%s post_send", name);
	n = poll_n(tx.cq, wc, 1, WAIT_MS);
	OK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND &&
		   wc[0].wr_id == 77 && wc[0].qp_num == tx.id->qp->qp_num,
	   "%s signaled send completes: status, opcode SEND, wr_id, qp_num", name);
	n = poll_n(rx.cq, wc, 1, WAIT_MS);
	OK(n == 1, "%s receiver gets one completion", name);
	if (n != 1)
		goto out;
	OK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV && wc[0].wr_id == 0,
	   "%s recv wc: success, IBV_WC_RECV, wr_id of the first posted receive", name);
	OK(wc[0].byte_len == 40 + MSG_LEN, "%s byte_len includes the 40-byte header (%u)", name,
	   wc[0].byte_len);
	OK(wc[0].wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM) && ntohl(wc[0].imm_data) == 0x11223344,
	   "%s wc_flags GRH|WITH_IMM, imm_data in network order", name);
	OK(wc[0].src_qp == tx.id->qp->qp_num && wc[0].qp_num == rx.id->qp->qp_num,
	   "%s src_qp is the sender QPN, qp_num the receiver's", name);
	/* mlx5 reports a RoCE packet's network header type in sl: RoCEv2/IPv4 0xA. */
	OK(wc[0].slid == (roce ? 0 : 4) && wc[0].pkey_index == 0 && wc[0].sl == (roce ? 0xa : 0),
	   "%s slid %u, pkey_index 0, sl %u (IB: the SL; RoCE: the packet type)", name, wc[0].slid,
	   wc[0].sl);
	h = rbuf(&rx, 0);
	OK(payload_ok(h + 40, MSG_LEN), "%s payload bytes exact at offset 40", name);
	ibv_query_gid(tx.id->verbs, 1, roce ? 3 : 0, &sgid);
	if (roce) {
		const uint8_t *ip = h + 20;
		uint8_t zero[20] = {0};
		uint32_t tot = 20 + 8 + 12 + 8 + 4 + MSG_LEN + 4;

		OK(!memcmp(h, zero, 20), "RoCE bytes 0-19 zero");
		OK(ip[0] == 0x45 && ip[1] == 0x28,
		   "RoCE IPv4 version/IHL 0x45, TOS = traffic_class");
		OK((ip[2] << 8 | ip[3]) == (int)tot, "RoCE IPv4 tot_len %u", tot);
		OK((ip[6] << 8 | ip[7]) == 0x4000 && ip[8] == 33 && ip[9] == 17,
		   "RoCE IPv4 DF, TTL = hop_limit, protocol UDP");
		OK(csum(ip, 20) == 0xffff, "RoCE IPv4 header checksum valid");
		OK(!memcmp(ip + 12, &sgid.raw[12], 4) && ip[16] == 239 && ip[17] == 1 &&
			   ip[18] == 2 && ip[19] == 3,
		   "RoCE IPv4 saddr = sender 198.19.0.4, daddr = 239.1.2.3");
	} else {
		uint32_t vtf = (uint32_t)h[0] << 24 | h[1] << 16 | h[2] << 8 | h[3];
		uint32_t pad = (4 - (MSG_LEN & 3)) & 3;

		OK(vtf >> 28 == 6 && ((vtf >> 20) & 0xff) == 0x28 && (vtf & 0xfffff) == 0x12345,
		   "IB GRH IPVer 6, TClass, FlowLabel");
		OK((h[4] << 8 | h[5]) == (int)(12 + 8 + 4 + MSG_LEN + pad + 4),
		   "IB GRH PayLen = BTH..ICRC");
		OK(h[6] == 0x1b && h[7] == 1, "IB GRH NxtHdr 0x1B, HopLmt as sent");
		OK(!memcmp(h + 8, sgid.raw, 16), "IB GRH SGID = sender port GID");
		OK(gid_eq(h + 24, "ff12:4001:ffff::f01:203"), "IB GRH DGID = MGID");
	}
out:
	ep_close(&tx, (struct sockaddr *)&g);
	ep_close(&rx, (struct sockaddr *)&g);
}

static void test_loopback(void)
{
	struct sockaddr_in g;
	struct ep a, b;
	struct ibv_wc wc[4];

	/* a: QP that sends and receives; b: another QP on the same device. */
	ep_open(&a, "198.19.0.1", RDMA_PS_UDP, false, false, 256);
	ep_open(&b, "198.19.0.1", RDMA_PS_UDP, false, false, 256);
	post_recvs(&a, 4);
	post_recvs(&b, 4);
	ep_join(&a, in4(&g, "239.1.2.9"), false);
	ep_join(&b, in4(&g, "239.1.2.9"), false);
	ep_send(&a, 64, false, 0, 0, 1, a.remote_qkey);
	OK(poll_n(a.cq, wc, 2, 300) == 1 && wc[0].opcode == IBV_WC_RECV &&
		   wc[0].src_qp == a.id->qp->qp_num,
	   "multicast loopback: the sending QP receives its own packet");
	OK(poll_n(b.cq, wc, 2, 300) == 1, "loopback to another QP of the same device");
	ep_close(&a, (struct sockaddr *)&g);

	ep_open(&a, "198.19.0.1", RDMA_PS_UDP, true, false, 256);
	post_recvs(&a, 4);
	ep_join(&a, in4(&g, "239.1.2.9"), false);
	ep_send(&a, 64, false, 0, 0, 1, a.remote_qkey);
	OK(poll_n(a.cq, wc, 2, 300) == 0,
	   "IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: no copy to the sending QP");
	OK(poll_n(b.cq, wc, 2, 300) == 1, "blocked self loopback still reaches other QPs");
	ep_close(&a, (struct sockaddr *)&g);
	ep_close(&b, (struct sockaddr *)&g);
}

static void test_drops(void)
{
	struct sockaddr_in g;
	struct ep rx, tx;
	struct ibv_wc wc[4];
	struct ibv_port_attr pa;
	uint64_t oob, qv;
	uint32_t qv_port;

	ep_open(&rx, "198.18.0.1", RDMA_PS_UDP, false, false, 256);
	ep_open(&tx, "198.18.0.3", RDMA_PS_UDP, false, false, 256);
	ep_join(&rx, in4(&g, "239.1.2.10"), false);
	ep_join(&tx, in4(&g, "239.1.2.10"), true);
	oob = atomic_load(&ctr("sim_ib0")->out_of_buffer);
	ep_send(&tx, 64, false, 0, 0, 1, tx.remote_qkey);
	OK(poll_n(rx.cq, wc, 1, 200) == 0 && atomic_load(&ctr("sim_ib0")->out_of_buffer) == oob + 1,
	   "no posted receive: dropped and counted in out_of_buffer");

	post_recvs(&rx, 2);
	ibv_query_port(rx.id->verbs, 1, &pa);
	qv_port = pa.qkey_viol_cntr;
	qv = atomic_load(&ctr("sim_ib0")->qkey_viol);
	ep_send(&tx, 64, false, 0, 0, 1, 0x0badc0de);
	ibv_query_port(rx.id->verbs, 1, &pa);
	OK(poll_n(rx.cq, wc, 1, 200) == 0 && atomic_load(&ctr("sim_ib0")->qkey_viol) == qv + 1 &&
		   pa.qkey_viol_cntr == qv_port + 1,
	   "Q_Key mismatch: dropped, qkey_viol_cntr counts it");
	ep_send(&tx, 64, false, 0, 0, 1, 0x80000000);
	OK(poll_n(rx.cq, wc, 1, 500) == 1, "remote_qkey with the high bit uses the QP's own Q_Key");

	OK(ep_send(&tx, 4097, false, 0, 0, 1, tx.remote_qkey) == EINVAL,
	   "a send larger than the 4096 MTU is rejected (EINVAL)");

	/* A member QP in the error state receives nothing: the copy is counted. */
	{
		struct ibv_qp_attr qa = {.qp_state = IBV_QPS_ERR};
		uint64_t nr = atomic_load(&ctr("sim_ib0")->qp_not_ready);
		uint64_t rcv = atomic_load(&ctr("sim_ib0")->rcv_pkts);

		OK(!ibv_modify_qp(rx.id->qp, &qa, IBV_QP_STATE), "QP to the error state");
		poll_n(rx.cq, wc, 4, 100); /* the flushed receives */
		ep_send(&tx, 64, false, 0, 0, 1, tx.remote_qkey);
		OK(atomic_load(&ctr("sim_ib0")->qp_not_ready) == nr + 1 &&
			   atomic_load(&ctr("sim_ib0")->rcv_pkts) == rcv,
		   "a member QP not in RTR/RTS: the copy is dropped and counted in qp_not_ready");
	}
	ep_close(&tx, (struct sockaddr *)&g);
	ep_close(&rx, (struct sockaddr *)&g);
}

static void test_send_queue(void)
{
	struct sockaddr_in g;
	struct ep tx;
	struct ibv_wc wc[32];
	int r = 0, n;

	ep_open(&tx, "198.19.0.3", RDMA_PS_UDP, false, false, 256);
	ep_join(&tx, in4(&g, "239.1.2.11"), true);
	/* max_send_wr 16: 15 unsignaled and one signaled fill it; the 17th is refused. */
	for (int i = 0; i < 15 && !r; i++)
		r = ep_send(&tx, 32, false, 0, 0, (uint64_t)i, tx.remote_qkey);
	r |= ep_send(&tx, 32, false, 0, IBV_SEND_SIGNALED, 15, tx.remote_qkey);
	OK(r == 0, "16 sends fit a send queue of 16");
	OK(ep_send(&tx, 32, false, 0, IBV_SEND_SIGNALED, 16, tx.remote_qkey) == ENOMEM,
	   "send queue full until a completion is polled: ENOMEM");
	n = poll_n(tx.cq, wc, 32, 300);
	OK(n == 1 && wc[0].wr_id == 15, "only the signaled send completes (%d completions)", n);
	OK(ep_send(&tx, 32, false, 0, IBV_SEND_SIGNALED, 16, tx.remote_qkey) == 0,
	   "polling the signaled completion retires the 16 earlier sends");
	n = poll_n(tx.cq, wc, 32, 300);
	OK(n == 1 && wc[0].wr_id == 16, "completions in order");
	ep_close(&tx, (struct sockaddr *)&g);
}

static void test_cq_overflow(void)
{
	struct sockaddr_in g;
	struct ep rx, tx;
	struct ibv_async_event ae;
	struct pollfd p;
	int got = 0;

	/* A CQ of 8 entries (mlx5 rounds cqe 7 up to 8 - 1 = 7 usable... we ask 3 -> 3). */
	ep_open(&rx, "198.19.0.1", RDMA_PS_UDP, false, false, 3);
	ep_open(&tx, "198.19.0.3", RDMA_PS_UDP, false, false, 256);
	post_recvs(&rx, 16);
	ep_join(&rx, in4(&g, "239.1.2.12"), false);
	ep_join(&tx, in4(&g, "239.1.2.12"), true);
	for (int i = 0; i < 8; i++)
		ep_send(&tx, 32, false, 0, 0, 1, tx.remote_qkey);
	p.fd = rx.id->verbs->async_fd;
	p.events = POLLIN;
	if (poll(&p, 1, WAIT_MS) == 1 && !ibv_get_async_event(rx.id->verbs, &ae)) {
		got = ae.event_type == IBV_EVENT_CQ_ERR && ae.element.cq == rx.cq;
		ibv_ack_async_event(&ae);
	}
	OK(got, "CQ overrun raises IBV_EVENT_CQ_ERR for that CQ");
	OK(atomic_load(&ctr("sim_roce0")->cq_overrun) >= 1, "CQ overrun counted on the port");
	ep_close(&tx, (struct sockaddr *)&g);
	ep_close(&rx, (struct sockaddr *)&g);
}

static bool wait_async(struct ibv_context *ctx, enum ibv_event_type type)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (now_ms() < end) {
		struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
		struct ibv_async_event ae;
		bool ok;

		if (poll(&p, 1, 100) != 1)
			continue;
		if (ibv_get_async_event(ctx, &ae))
			return false;
		ok = ae.event_type == type;
		ibv_ack_async_event(&ae);
		if (ok)
			return true;
	}
	return false;
}

static void test_port_events(void)
{
	struct sockaddr_in g;
	struct ep ib, ro;
	struct rdma_cm_event *ev;
	int dev;

	ep_open(&ib, "198.18.0.2", RDMA_PS_UDP, false, false, 256);
	ep_open(&ro, "198.19.0.2", RDMA_PS_UDP, false, false, 256);
	ep_join(&ib, in4(&g, "239.1.2.13"), false);
	ep_join(&ro, in4(&g, "239.1.2.13"), false);

	dev = p_sf_dev_by_name(fab(), "sim_ib1");
	p_sf_port_set(fab(), (uint32_t)dev, false);
	OK(wait_async(ib.id->verbs, IBV_EVENT_PORT_ERR), "IB port down: IBV_EVENT_PORT_ERR");
	ev = get_event(ib.ch, WAIT_MS);
	OK(ev && ev->event == RDMA_CM_EVENT_MULTICAST_ERROR && ev->status == -ENETRESET &&
		   ev->param.ud.private_data == &ib,
	   "IB port down: MULTICAST_ERROR -ENETRESET on the joined id");
	if (ev)
		rdma_ack_cm_event(ev);
	p_sf_port_set(fab(), (uint32_t)dev, true);
	OK(wait_async(ib.id->verbs, IBV_EVENT_PORT_ACTIVE), "IB port up: IBV_EVENT_PORT_ACTIVE");

	dev = p_sf_dev_by_name(fab(), "sim_roce1");
	p_sf_port_set(fab(), (uint32_t)dev, false);
	OK(wait_async(ro.id->verbs, IBV_EVENT_PORT_ERR), "RoCE port down: IBV_EVENT_PORT_ERR");
	OK(get_event(ro.ch, 300) == NULL, "RoCE port down: no multicast error");
	p_sf_port_set(fab(), (uint32_t)dev, true);
	OK(wait_async(ro.id->verbs, IBV_EVENT_PORT_ACTIVE), "RoCE port up: IBV_EVENT_PORT_ACTIVE");

	/* After the IB error the application leaves and joins again. */
	rdma_leave_multicast(ib.id, (struct sockaddr *)&g);
	OK(ep_join(&ib, in4(&g, "239.1.2.13"), false) == RDMA_CM_EVENT_MULTICAST_JOIN,
	   "IB re-join after the error");
	ep_close(&ib, (struct sockaddr *)&g);
	ep_close(&ro, (struct sockaddr *)&g);
}

/* Child process: join as send-only on sim_roce3 and send `count` packets. */
static int role_sender(const char *group, int count)
{
	struct sockaddr_in g;
	struct ep tx;

	ep_open(&tx, "198.19.0.4", RDMA_PS_UDP, false, false, 256);
	if (ep_join(&tx, in4(&g, group), true) != RDMA_CM_EVENT_MULTICAST_JOIN)
		return 1;
	/* One signaled send in 8 retires the send queue (16 deep) as completions are polled. */
	for (int i = 0; i < count; i++) {
		int flags = i % 8 == 7 ? IBV_SEND_SIGNALED : 0;
		struct ibv_wc wc[4];

		while (ep_send(&tx, MSG_LEN, true, (uint32_t)i, flags, (uint64_t)i,
			       tx.remote_qkey) == ENOMEM)
			if (poll_n(tx.cq, wc, 1, WAIT_MS) != 1)
				return 1;
	}
	ep_close(&tx, (struct sockaddr *)&g);
	return 0;
}

static void test_cross_process(const char *self)
{
	struct sockaddr_in g;
	struct ep rx;
	struct ibv_wc wc[NBUF];
	struct ibv_cq *ecq;
	void *ectx;
	int got = 0, events = 0, status;
	bool bytes_ok = true;
	pid_t pid;

	ep_open(&rx, "198.19.0.2", RDMA_PS_UDP, false, true, 256);
	post_recvs(&rx, NBUF);
	ep_join(&rx, in4(&g, "239.1.2.14"), false);
	ibv_req_notify_cq(rx.cq, 0);
	pid = fork();
	if (pid == 0) {
		execl(self, self, "--sender", "239.1.2.14", "32", (char *)NULL);
		_exit(127);
	}
	while (got < 32) {
		struct pollfd p = {.fd = rx.cc->fd, .events = POLLIN};
		int n;

		if (poll(&p, 1, WAIT_MS) != 1)
			break;
		if (ibv_get_cq_event(rx.cc, &ecq, &ectx))
			break;
		events++;
		ibv_ack_cq_events(ecq, 1);
		ibv_req_notify_cq(ecq, 0);
		while ((n = ibv_poll_cq(rx.cq, NBUF, wc)) > 0) {
			for (int i = 0; i < n; i++) {
				bytes_ok &= wc[i].status == IBV_WC_SUCCESS &&
					    payload_ok(rbuf(&rx, (int)wc[i].wr_id) + 40, MSG_LEN) &&
					    ntohl(wc[i].imm_data) == (uint32_t)(got + i);
			}
			got += n;
		}
	}
	waitpid(pid, &status, 0);
	OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender process ran");
	OK(got == 32, "all 32 packets from another process received (%d)", got);
	OK(events >= 1 && ecq == rx.cq && ectx == &rx,
	   "completion channel events across processes (%d events)", events);
	OK(bytes_ok, "payloads and immediate data in order and byte-exact");
	ep_close(&rx, (struct sockaddr *)&g);
}

/* Is a completion event readable on the channel within ms? Reads and acks it. */
static bool cq_event_within(struct ep *e, int ms)
{
	struct pollfd p = {.fd = e->cc->fd, .events = POLLIN};
	struct ibv_cq *ecq;
	void *ectx;

	if (poll(&p, 1, ms) != 1 || ibv_get_cq_event(e->cc, &ecq, &ectx))
		return false;
	ibv_ack_cq_events(ecq, 1);
	return ecq == e->cq;
}

/*
 * Arming a CQ as mlx5 does (docs/simfabric.md): an event for a new completion; arming
 * while unpolled completions are in the CQ raises it at once (the doorbell carries the
 * consumer index); one event per arm; a solicited-only arm waits for a solicited CQE.
 */
static void test_arm_semantics(void)
{
	struct sockaddr_in g;
	struct ep rx, tx;
	struct ibv_wc wc[4];

	ep_open(&rx, "198.19.0.3", RDMA_PS_UDP, false, true, 64);
	ep_open(&tx, "198.19.0.4", RDMA_PS_UDP, false, false, 64);
	post_recvs(&rx, 8);
	ep_join(&rx, in4(&g, "239.1.2.15"), false);
	ep_join(&tx, (struct sockaddr *)&g, true);

	ibv_req_notify_cq(rx.cq, 0);
	OK(!cq_event_within(&rx, 100), "arm: no event while the CQ is empty");
	ep_send(&tx, MSG_LEN, false, 0, 0, 1, tx.remote_qkey);
	OK(cq_event_within(&rx, 1000), "arm: a new completion raises the event");
	ep_send(&tx, MSG_LEN, false, 0, 0, 2, tx.remote_qkey);
	OK(!cq_event_within(&rx, 100), "arm: one shot, the next completion raises none");
	ibv_req_notify_cq(rx.cq, 1);
	OK(!cq_event_within(&rx, 100), "solicited-only arm with unpolled completions: no event");
	ibv_req_notify_cq(rx.cq, 0);
	OK(cq_event_within(&rx, 1000),
	   "arm with 2 unpolled completions in the CQ: the event comes at once (mlx5)");
	OK(poll_n(rx.cq, wc, 2, 500) == 2, "both completions polled after the event");
	ibv_req_notify_cq(rx.cq, 0);
	OK(!cq_event_within(&rx, 100), "arm after polling everything: no event");
	ep_close(&tx, (struct sockaddr *)&g);
	ep_close(&rx, (struct sockaddr *)&g);
}

static void test_unicast(void)
{
	struct ep a, b;
	struct ibv_ah_attr aa = {0};
	struct ibv_wc wc[2];
	union ibv_gid dgid;

	/* IB: to LID 2 (sim_ib1), QPN of b; no GRH: wc without IBV_WC_GRH. */
	ep_open(&a, "198.18.0.1", RDMA_PS_UDP, false, false, 256);
	ep_open(&b, "198.18.0.2", RDMA_PS_UDP, false, false, 256);
	post_recvs(&b, 2);
	aa.dlid = 2;
	aa.port_num = 1;
	a.ah = ibv_create_ah(a.pd, &aa);
	a.remote_qpn = b.id->qp->qp_num;
	ep_send(&a, 64, false, 0, 0, 1, 0x01234567);
	OK(poll_n(b.cq, wc, 1, 500) == 1 && wc[0].src_qp == a.id->qp->qp_num &&
		   !(wc[0].wc_flags & IBV_WC_GRH) && wc[0].slid == 1,
	   "IB unicast to LID+QPN without GRH");
	ep_close(&a, NULL);
	ep_close(&b, NULL);

	/* RoCE: to the IPv4-mapped GID of sim_roce1. */
	ep_open(&a, "198.19.0.1", RDMA_PS_UDP, false, false, 256);
	ep_open(&b, "198.19.0.2", RDMA_PS_UDP, false, false, 256);
	post_recvs(&b, 2);
	ibv_query_gid(b.id->verbs, 1, 3, &dgid);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = dgid;
	aa.grh.sgid_index = 3;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	a.ah = ibv_create_ah(a.pd, &aa);
	a.remote_qpn = b.id->qp->qp_num;
	ep_send(&a, 64, false, 0, 0, 1, 0x01234567);
	OK(poll_n(b.cq, wc, 1, 500) == 1 && (wc[0].wc_flags & IBV_WC_GRH) &&
		   rbuf(&b, 0)[20 + 16] == 198 && rbuf(&b, 0)[20 + 19] == 2,
	   "RoCE unicast to the IPv4 GID + QPN, IPv4 daddr is the receiver");
	ep_close(&a, NULL);
	ep_close(&b, NULL);
}

static void test_ib_membership(void)
{
	struct sockaddr_in g;
	struct ep rx, tx;
	struct ibv_wc wc[2];

	/* A receiver attached without an IB join (raw attach) gets nothing from another
	 * port: the switch forwards to ports the SA knows as full members. */
	ep_open(&rx, "198.18.0.2", RDMA_PS_UDP, false, false, 256);
	ep_open(&tx, "198.18.0.3", RDMA_PS_UDP, false, false, 256);
	post_recvs(&rx, 2);
	ep_join(&tx, in4(&g, "239.1.2.15"), true);
	OK(ibv_attach_mcast(rx.id->qp, &tx.ud.ah_attr.grh.dgid, tx.ud.ah_attr.dlid) == 0,
	   "raw ibv_attach_mcast");
	ep_send(&tx, 64, false, 0, 0, 1, tx.remote_qkey);
	OK(poll_n(rx.cq, wc, 1, 300) == 0 && atomic_load(&ctr("sim_ib1")->no_member) >= 1,
	   "IB: attached but not joined port receives nothing (counted no_member)");
	ibv_detach_mcast(rx.id->qp, &tx.ud.ah_attr.grh.dgid, tx.ud.ah_attr.dlid);
	ep_close(&tx, (struct sockaddr *)&g);
	ep_close(&rx, NULL);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--sender"))
		return role_sender(argv[2], atoi(argv[3]));
	int (*reset)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A fabric of its own (meson sets SIMFABRIC), fresh: left by another build, its
	 * layout may differ (refused, EPROTO). */
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	(void)fab();
	test_mgids();
	test_data(false);
	test_data(true);
	test_loopback();
	test_drops();
	test_send_queue();
	test_cq_overflow();
	test_port_events();
	test_cross_process(argv[0]);
	test_arm_semantics();
	test_unicast();
	test_ib_membership();
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	return tap_done();
}
