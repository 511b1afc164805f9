// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * IB joins through the subnet administrator (sajoin.h), for groups whose IB Q_Key is not
 * rdma_cm's.
 *
 * Why not rdma_cm: the kernel's IB join (drivers/infiniband/core/cma.c,
 * cma_join_ib_multicast) asks the SA for the id's Q_Key, RDMA_UDP_QKEY 0x01234567 for
 * RDMA_PS_UDP and RDMA_PS_IB (cma_set_qkey), with IB_SA_MCMEMBER_REC_QKEY in the
 * component mask; librdmacm has no option to change it. A group that middleware created
 * with its own Q_Key (perftest: 0x11111111) refuses that join: OpenSM's
 * validate_other_comp_fields (osm_sa_mcmember_record.c, ERR 1B30 "Q_Key mismatch",
 * mcgroup_join_validation TRUE by default) answers Request Invalid, which rdma_cm reports
 * as MULTICAST_ERROR. Created by our join instead, the group would carry rdma_cm's Q_Key
 * and the middleware's own joins would fail the same way.
 *
 * So the bridge sends the MCMemberRecord Set itself through libibumad, as perftest does
 * (multicast_resources.c, join_multicast_group): MGID, PortGID, Q_Key, P_Key, TClass,
 * SL, FlowLabel and JoinState in the component mask (OpenSM's
 * REQUIRED_MC_CREATE_COMP_MASK, so that the join can also create the group). The SA
 * answers with the group's record (copy_from_create_mc_rec): MLID, Q_Key, SL, flow
 * label, TClass, from which the AH is made as the kernel makes rdma_cm's
 * (ib_init_ah_from_mcmember). Unlike perftest the request is not waited for: joins.c
 * watches the umad descriptor in the loop and reads the answers (sajoin_recv), matched to
 * their group by transaction id. A Delete leaves. An SA join lives as long as the port's
 * registration: after a port, LID, SM or re-register event joins.c drops and joins every
 * group again (side_rejoin), SA joins included. This file only speaks to the SA: it
 * holds no join state and calls nothing of joins.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sa_mcm.h>
#include <sys/epoll.h>

#include "bridge.h"
#include "ctl.h"
#include "sajoin.h"

#define SA_QP	      1
#define SA_MAD_LEN    256	  /* a MAD (IBA 13.4.3) */
#define SA_QP1_QKEY   0x80010000u /* IBA 13.4.6.2: GSI's well-known Q_Key */
#define SA_TIMEOUT_MS 1000	  /* per try; the kernel retries */
#define SA_RETRIES    3
#define SA_JOIN_COMPS                                                                              \
	(UMAD_SA_MCM_COMP_MASK_MGID | UMAD_SA_MCM_COMP_MASK_PORT_GID |                             \
	 UMAD_SA_MCM_COMP_MASK_QKEY | UMAD_SA_MCM_COMP_MASK_TCLASS | UMAD_SA_MCM_COMP_MASK_PKEY |  \
	 UMAD_SA_MCM_COMP_MASK_SL | UMAD_SA_MCM_COMP_MASK_FLOW_LABEL |                             \
	 UMAD_SA_MCM_COMP_MASK_JOIN_STATE)
#define SA_LEAVE_COMPS                                                                             \
	(UMAD_SA_MCM_COMP_MASK_MGID | UMAD_SA_MCM_COMP_MASK_PORT_GID |                             \
	 UMAD_SA_MCM_COMP_MASK_JOIN_STATE)

/* The IB port's umad agent (control thread only): opened on first use. */
static struct {
	int port;  /* umad port id, -1 when not open */
	int agent; /* SA agent */
	int fd;
	uint32_t tid;
} sa = {.port = -1, .agent = -1, .fd = -1};

bool sajoin_wanted(const struct group *g)
{
	return group_qkey(g, SIDE_IB) != BR_UDP_QKEY;
}

const char *sajoin_status_str(uint16_t st)
{
	switch (st >> 8 & 0x7f) {
	case UMAD_SA_STATUS_NO_RESOURCES:
		return "no resources";
	case UMAD_SA_STATUS_REQ_INVALID:
		return "request invalid (the group exists with another Q_Key, TClass, SL or "
		       "flow label: give the middleware's)";
	case UMAD_SA_STATUS_NO_RECORDS:
		return "no records";
	case UMAD_SA_STATUS_INSUF_COMPS:
		return "insufficient components";
	case UMAD_SA_STATUS_REQ_DENIED:
		return "request denied";
	default:
		return (st & 0xff) ? "MAD error" : "SA error";
	}
}

int sajoin_fd(void)
{
	return sa.fd;
}

int sajoin_open(const struct side_ctx *sd)
{
	int r;

	if (sa.port >= 0)
		return 0;
	if (umad_init() < 0)
		return -ENODEV;
	sa.port = umad_open_port((char *)sd->dev, sd->port);
	if (sa.port < 0) {
		r = sa.port;
		sa.port = -1;
		return r < 0 ? r : -ENODEV;
	}
	sa.agent = umad_register(sa.port, UMAD_CLASS_SUBN_ADM, UMAD_SA_CLASS_VERSION, 0, NULL);
	sa.fd = sa.agent >= 0 ? umad_get_fd(sa.port) : -1;
	if (sa.fd < 0) {
		r = sa.agent < 0 ? sa.agent : -EIO;
		umad_close_port(sa.port);
		sa.port = sa.agent = sa.fd = -1;
		return r;
	}
	fcntl_nonblock(sa.fd);
	return 0;
}

/* An MCMemberRecord request of g's IB membership; 0 or -errno. */
static int sa_send(const struct side_ctx *sd, const struct group *g, uint8_t method, uint64_t comps,
		   uint32_t tid)
{
	uint8_t buf[4096] __attribute__((aligned(8)));
	struct umad_sa_packet *p;
	struct umad_sa_mcmember_record *rec;
	uint8_t join = group_dir_rx(g->dir, SIDE_IB) ? UMAD_SA_MCM_JOIN_STATE_FULL_MEMBER
						     : UMAD_SA_MCM_JOIN_STATE_SEND_ONLY_FULL_MEMBER;

	memset(buf, 0, umad_size() + SA_MAD_LEN);
	p = umad_get_mad(buf);
	p->mad_hdr.base_version = 1;
	p->mad_hdr.mgmt_class = UMAD_CLASS_SUBN_ADM;
	p->mad_hdr.class_version = UMAD_SA_CLASS_VERSION;
	p->mad_hdr.method = method;
	p->mad_hdr.tid = htobe64(tid); /* the kernel puts the agent in the top 32 bits */
	p->mad_hdr.attr_id = htons(UMAD_SA_ATTR_MCMEMBER_REC);
	p->comp_mask = htobe64(comps);
	rec = (struct umad_sa_mcmember_record *)p->data;
	memcpy(rec->mgid, g->mgid[SIDE_IB].raw, 16);
	memcpy(rec->portgid, sd->gid.raw, 16);
	rec->qkey = htonl(group_qkey(g, SIDE_IB));
	rec->pkey = htons((uint16_t)(sd->pkey | 0x8000));
	rec->tclass = g->tos_set ? g->tos : 0;
	rec->sl_flow_hop = umad_sa_mcm_set_sl_flow_hop(0, 0, 0);
	rec->scope_state = join;
	if (umad_set_addr(buf, sd->pattr.sm_lid, SA_QP, sd->pattr.sm_sl, SA_QP1_QKEY) < 0)
		return -EINVAL;
	if (umad_send(sa.port, sa.agent, buf, SA_MAD_LEN, SA_TIMEOUT_MS, SA_RETRIES) < 0)
		return errno ? -errno : -EIO;
	return 0;
}

int sajoin_send(const struct side_ctx *sd, const struct group *g, bool join, uint32_t *tid)
{
	int r = sajoin_open(sd);

	if (r)
		return r;
	*tid = ++sa.tid;
	return join ? sa_send(sd, g, UMAD_METHOD_SET, SA_JOIN_COMPS, *tid)
		    : sa_send(sd, g, UMAD_SA_METHOD_DELETE, SA_LEAVE_COMPS, *tid);
}

int sajoin_recv(const struct side_ctx *sd, struct sajoin_answer *a)
{
	uint8_t buf[4096] __attribute__((aligned(8)));

	for (;;) {
		int len = (int)(sizeof(buf) - umad_size());
		const struct umad_sa_packet *p;
		const struct umad_sa_mcmember_record *rec;
		uint32_t flow;
		uint8_t sl, hop;

		if (sa.port < 0 || umad_recv(sa.port, buf, &len, 0) < 0)
			return 0;
		p = umad_get_mad(buf);
		memset(a, 0, sizeof(*a));
		a->tid = (uint32_t)be64toh(p->mad_hdr.tid);
		a->err = umad_status(buf);
		/* A request nobody answered comes back as sent, with umad's status. */
		if (p->mad_hdr.attr_id != htons(UMAD_SA_ATTR_MCMEMBER_REC) ||
		    p->mad_hdr.method != (a->err ? UMAD_METHOD_SET : UMAD_METHOD_GET_RESP))
			continue; /* a leave's answer, or nothing of ours */
		a->status = a->err ? 0 : ntohs(p->mad_hdr.status);
		if (a->err || a->status)
			return 1;
		/* The AH from the record, as the kernel's ib_init_ah_from_mcmember. */
		rec = (const void *)p->data;
		umad_sa_mcm_get_sl_flow_hop(rec->sl_flow_hop, &sl, &flow, &hop);
		a->qkey = ntohl(rec->qkey);
		a->aa.dlid = ntohs(rec->mlid);
		a->aa.sl = sl;
		a->aa.port_num = sd->port;
		a->aa.static_rate = umad_sa_get_rate_mtu_or_life(rec->rate);
		a->aa.is_global = 1;
		memcpy(a->aa.grh.dgid.raw, rec->mgid, 16);
		a->aa.grh.sgid_index = (uint8_t)sd->gid_index;
		a->aa.grh.flow_label = flow;
		a->aa.grh.hop_limit = hop;
		a->aa.grh.traffic_class = rec->tclass;
		return 1;
	}
}
