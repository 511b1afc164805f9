// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A multicast group's Q_Key as the SA keeps it, and controlled Q_Keys on QPs, checked
 * against what OpenSM and Linux do (the sources are named at each check):
 * - OpenSM osm_sa_mcmember_record.c: the join that creates a group sets its record
 *   (Q_Key, TClass, SL, flow label, hop limit; mcmr_rcv_create_new_mgrp), and needs the
 *   creation components (REQUIRED_MC_CREATE_COMP_MASK, else ERR 1B11 Insufficient
 *   Components); a join to an existing group whose component mask names a field with
 *   another value is refused with Request Invalid (validate_other_comp_fields, ERR 1B30
 *   for the Q_Key); the response carries the group's record, not the request's
 *   (copy_from_create_mc_rec). The group goes with its last member.
 * - Linux drivers/infiniband/core/cma.c cma_join_ib_multicast: rdma_cm's IB join asks
 *   for the id's Q_Key (RDMA_UDP_QKEY) with IB_SA_MCMEMBER_REC_QKEY in the mask, so a
 *   group made by middleware with Q_Key 0x11111111 (perftest's) refuses it: the event is
 *   RDMA_CM_EVENT_MULTICAST_ERROR with status -EINVAL (sa_query.c: an SA status).
 * - Linux 6.4+ ib_uverbs_modify_qp ("RDMA/uverbs: Restrict usage of privileged QKEYs"):
 *   IBV_QP_QKEY with bit 31 set is EPERM without CAP_NET_RAW.
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
#include <unistd.h>
#include <infiniband/ib.h>
#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/verbs.h>
#include <linux/capability.h>
#include <rdma/rdma_cma.h>
#include <sys/syscall.h>

#include "tap.h"

#define MAD_LEN	       256
#define SA_DATA	       56
#define QP1_QKEY       0x80010000u
#define TID	       0x5a0b1c2du
#define PERFTEST_QKEY  0x11111111u /* perftest's DEF_QKEY (multicast_resources.h) */
#define RDMA_CM_QKEY   0x01234567u /* RDMA_UDP_QKEY */
#define CONTROLLED_KEY 0x80000123u

/* MCMemberRecord component mask bits (IBA 15.2.5.17). */
#define C_MGID	 (1ull << 0)
#define C_PGID	 (1ull << 1)
#define C_QKEY	 (1ull << 2)
#define C_TCLASS (1ull << 6)
#define C_PKEY	 (1ull << 7)
#define C_SL	 (1ull << 12)
#define C_FLOW	 (1ull << 13)
#define C_JOIN	 (1ull << 16)
#define C_CREATE (C_MGID | C_PGID | C_QKEY | C_TCLASS | C_PKEY | C_SL | C_FLOW | C_JOIN)

struct mad_buf {
	struct ib_user_mad hdr;
	uint8_t mad[MAD_LEN];
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* An SA MCMemberRecord request (Set: join, Delete: leave); the answer's SA status. */
static int sa_mcm(int port, int agent, uint8_t method, const union ibv_gid *mgid,
		  const union ibv_gid *pgid, uint64_t mask, uint32_t qkey, struct mad_buf *m)
{
	uint8_t *r = m->mad + SA_DATA;
	int len = MAD_LEN;

	memset(m, 0, sizeof(*m));
	m->mad[0] = 1;
	m->mad[1] = UMAD_CLASS_SUBN_ADM;
	m->mad[2] = 2;
	m->mad[3] = method;
	put32(m->mad + 12, TID);
	m->mad[16] = (uint8_t)(UMAD_SA_ATTR_MCMEMBER_REC >> 8);
	m->mad[17] = (uint8_t)UMAD_SA_ATTR_MCMEMBER_REC;
	put64(m->mad + 48, mask);
	memcpy(r, mgid->raw, 16);
	memcpy(r + 16, pgid->raw, 16);
	put32(r + 32, qkey);
	r[40] = 0xff;
	r[41] = 0xff;
	r[48] = 1; /* full member */
	umad_set_addr(m, 1, 1, 0, QP1_QKEY);
	if (umad_send(port, agent, m, MAD_LEN, 100, 3) < 0 ||
	    umad_recv(port, m, &len, 1000) != agent || m->hdr.status)
		return -1;
	return get16(m->mad + 4) >> 8; /* the SA's status (class-specific bits 8-14) */
}

static int port_gid(const char *dev, union ibv_gid *gid)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int r = -1;

	for (int i = 0; list && list[i]; i++) {
		if (strcmp(ibv_get_device_name(list[i]), dev))
			continue;
		struct ibv_context *ctx = ibv_open_device(list[i]);

		if (ctx) {
			r = ibv_query_gid(ctx, 1, 0, gid);
			ibv_close_device(ctx);
		}
	}
	ibv_free_device_list(list);
	return r;
}

/* The effective set with or without CAP_NET_RAW (it stays permitted). */
static bool cap_net_raw(int set)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	uint32_t bit = 1u << (CAP_NET_RAW % 32);

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	if (set >= 0) {
		if (set)
			d[CAP_NET_RAW / 32].effective |= bit;
		else
			d[CAP_NET_RAW / 32].effective &= ~bit;
		if (syscall(SYS_capset, &h, d))
			return false;
	}
	return d[CAP_NET_RAW / 32].effective & bit;
}

static void controlled_qkeys(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = pd && cq ? ibv_create_qp(pd, &qa) : NULL;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = CONTROLLED_KEY};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	bool had = cap_net_raw(-1);

	ibv_free_device_list(list);
	if (!qp)
		tap_bail("a UD QP");
	if (had) {
		OK(ibv_modify_qp(qp, &a, mask) == 0,
		   "with CAP_NET_RAW a controlled Q_Key (0x%x) is set", CONTROLLED_KEY);
		OK(cap_net_raw(0) == false, "CAP_NET_RAW dropped from the effective set");
	}
	a.qkey = CONTROLLED_KEY;
	OK(ibv_modify_qp(qp, &a, had ? IBV_QP_QKEY : mask) == EPERM,
	   "without CAP_NET_RAW ibv_modify_qp with a controlled Q_Key: EPERM (Linux 6.4+)");
	a.qkey = PERFTEST_QKEY;
	OK(ibv_modify_qp(qp, &a, had ? IBV_QP_QKEY : mask) == 0,
	   "without CAP_NET_RAW an ordinary Q_Key (0x%x) is set", PERFTEST_QKEY);
	if (had)
		cap_net_raw(1);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/* An rdma_cm (PS_IB, AF_IB) join of mgid on sim_ib2: the event it gets and its status. */
static int cm_join(const union ibv_gid *mgid, int *status, uint32_t *qkey)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in src = {.sin_family = AF_INET};
	struct sockaddr_ib sib = {.sib_family = AF_IB, .sib_pkey = htons(0xffff)};
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct pollfd p;
	int r = -1;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	inet_pton(AF_INET, "198.18.0.3", &src.sin_addr);
	if (rdma_bind_addr(id, (struct sockaddr *)&src))
		tap_bail("rdma_bind_addr");
	memcpy(&sib.sib_addr, mgid->raw, 16);
	p.fd = ch->fd;
	p.events = POLLIN;
	if (!rdma_join_multicast(id, (struct sockaddr *)&sib, NULL) && poll(&p, 1, 3000) == 1 &&
	    !rdma_get_cm_event(ch, &ev)) {
		r = ev->event;
		*status = ev->status;
		*qkey = ev->param.ud.qkey;
		rdma_ack_cm_event(ev);
	}
	if (r == RDMA_CM_EVENT_MULTICAST_JOIN)
		rdma_leave_multicast(id, (struct sockaddr *)&sib);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return r;
}

int main(void)
{
	int (*reset)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");
	union ibv_gid mgid, other, gid1, gid2;
	struct mad_buf m;
	int port, agent, st, ev, status = 0;
	uint32_t qkey = 0;

	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	controlled_qkeys();

	if (port_gid("sim_ib1", &gid1) || port_gid("sim_ib2", &gid2))
		tap_bail("port GIDs");
	port = umad_open_port("sim_ib1", 1);
	agent = port >= 0 ? umad_register(port, UMAD_CLASS_SUBN_ADM, 2, 0, NULL) : -1;
	if (agent < 0)
		tap_bail("umad agent");
	inet_pton(AF_INET6, "ff12:401b:ffff::1234", mgid.raw);
	inet_pton(AF_INET6, "ff12:401b:ffff::5678", other.raw);

	/* perftest's join: creates the group with its Q_Key. */
	st = sa_mcm(port, agent, UMAD_METHOD_SET, &mgid, &gid1, C_CREATE, PERFTEST_QKEY, &m);
	OK(st == 0 && get32(m.mad + SA_DATA + 32) == PERFTEST_QKEY,
	   "SA join creating ff12:401b:ffff::1234 with Q_Key 0x%x: status 0, that Q_Key",
	   PERFTEST_QKEY);
	st = sa_mcm(port, agent, UMAD_METHOD_SET, &mgid, &gid2, C_CREATE, RDMA_CM_QKEY, &m);
	OK(st == UMAD_SA_STATUS_REQ_INVALID,
	   "SA join of the group asking Q_Key 0x%x: Request Invalid (OpenSM ERR 1B30), got %d",
	   RDMA_CM_QKEY, st);
	st = sa_mcm(port, agent, UMAD_METHOD_SET, &mgid, &gid2, C_CREATE, PERFTEST_QKEY, &m);
	OK(st == 0, "SA join of the group with its Q_Key: status 0");
	st = sa_mcm(port, agent, UMAD_METHOD_SET, &mgid, &gid2, C_MGID | C_PGID | C_JOIN,
		    RDMA_CM_QKEY, &m);
	OK(st == 0 && get32(m.mad + SA_DATA + 32) == PERFTEST_QKEY,
	   "a join whose mask has no Q_Key is taken; the answer carries the group's Q_Key");
	ev = cm_join(&mgid, &status, &qkey);
	OK(ev == RDMA_CM_EVENT_MULTICAST_ERROR && status == -EINVAL,
	   "rdma_cm join of the group (Q_Key 0x%x): MULTICAST_ERROR -EINVAL (event %d, status %d)",
	   RDMA_CM_QKEY, ev, status);
	st = sa_mcm(port, agent, UMAD_METHOD_SET, &other, &gid1, C_MGID | C_PGID | C_JOIN,
		    PERFTEST_QKEY, &m);
	OK(st == UMAD_SA_STATUS_INSUF_COMPS,
	   "creating a group without Q_Key, TClass, P_Key, SL, flow label: Insufficient "
	   "Components (OpenSM ERR 1B11), got %d",
	   st);

	/* The group goes with its last member: then rdma_cm's Q_Key makes it anew. */
	for (int i = 0; i < 2; i++)
		sa_mcm(port, agent, UMAD_SA_METHOD_DELETE, &mgid, &gid2, C_MGID | C_PGID | C_JOIN,
		       PERFTEST_QKEY, &m);
	st = sa_mcm(port, agent, UMAD_SA_METHOD_DELETE, &mgid, &gid1, C_MGID | C_PGID | C_JOIN,
		    PERFTEST_QKEY, &m);
	OK(st == 0, "the last SA member leaves");
	ev = cm_join(&mgid, &status, &qkey);
	OK(ev == RDMA_CM_EVENT_MULTICAST_JOIN && qkey == RDMA_CM_QKEY,
	   "then an rdma_cm join creates the group anew: MULTICAST_JOIN, Q_Key 0x%x", qkey);
	umad_close_port(port);
	return tap_done();
}
