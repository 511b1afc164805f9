// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * IB multicast joins through the SA with libibumad (samcm.h). The request is perftest's
 * (multicast_resources.c, join_multicast_group): an MCMemberRecord Set with MGID,
 * PortGID, Q_Key, P_Key, TClass, SL, FlowLabel and JoinState in the component mask
 * (OpenSM's REQUIRED_MC_CREATE_COMP_MASK, so that the join can also create the group);
 * the SA answers with the group's record (OpenSM copy_from_create_mc_rec): MLID, Q_Key,
 * SL, flow label, TClass, hop limit, rate. A Delete leaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sa_mcm.h>

#include "samcm.h"

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

void samcm_init(struct samcm *s)
{
	s->port = s->agent = s->fd = -1;
	s->tid = 0;
}

int samcm_open(struct samcm *s, const char *dev, int port)
{
	int r, fl;

	if (s->port >= 0)
		return 0;
	if (umad_init() < 0)
		return -ENODEV;
	s->port = umad_open_port((char *)dev, port);
	if (s->port < 0) {
		r = s->port;
		s->port = -1;
		return r < 0 ? r : -ENODEV;
	}
	s->agent = umad_register(s->port, UMAD_CLASS_SUBN_ADM, UMAD_SA_CLASS_VERSION, 0, NULL);
	s->fd = s->agent >= 0 ? umad_get_fd(s->port) : -1;
	if (s->fd < 0) {
		r = s->agent < 0 ? s->agent : -EIO;
		umad_close_port(s->port);
		samcm_init(s);
		return r;
	}
	fl = fcntl(s->fd, F_GETFL);
	if (fl >= 0)
		fcntl(s->fd, F_SETFL, fl | O_NONBLOCK);
	return 0;
}

void samcm_close(struct samcm *s)
{
	if (s->port < 0)
		return;
	if (s->agent >= 0)
		umad_unregister(s->port, s->agent);
	umad_close_port(s->port);
	samcm_init(s);
}

int samcm_send(struct samcm *s, const struct samcm_req *r, bool join, uint32_t *tid)
{
	uint8_t buf[4096] __attribute__((aligned(8)));
	struct umad_sa_packet *p;
	struct umad_sa_mcmember_record *rec;

	if (s->port < 0)
		return -EBADF;
	*tid = ++s->tid;
	memset(buf, 0, umad_size() + SA_MAD_LEN);
	p = umad_get_mad(buf);
	p->mad_hdr.base_version = 1;
	p->mad_hdr.mgmt_class = UMAD_CLASS_SUBN_ADM;
	p->mad_hdr.class_version = UMAD_SA_CLASS_VERSION;
	p->mad_hdr.method = join ? UMAD_METHOD_SET : UMAD_SA_METHOD_DELETE;
	p->mad_hdr.tid = htobe64(*tid); /* the kernel puts the agent in the top 32 bits */
	p->mad_hdr.attr_id = htons(UMAD_SA_ATTR_MCMEMBER_REC);
	p->comp_mask = htobe64(join ? SA_JOIN_COMPS : SA_LEAVE_COMPS);
	rec = (struct umad_sa_mcmember_record *)p->data;
	memcpy(rec->mgid, r->mgid.raw, 16);
	memcpy(rec->portgid, r->port_gid.raw, 16);
	rec->qkey = htonl(r->qkey);
	rec->pkey = htons((uint16_t)(r->pkey | 0x8000));
	rec->tclass = r->tclass;
	rec->sl_flow_hop = umad_sa_mcm_set_sl_flow_hop(0, 0, 0);
	rec->scope_state = r->send_only ? UMAD_SA_MCM_JOIN_STATE_SEND_ONLY_FULL_MEMBER
					: UMAD_SA_MCM_JOIN_STATE_FULL_MEMBER;
	if (umad_set_addr(buf, r->sm_lid, SA_QP, r->sm_sl, SA_QP1_QKEY) < 0)
		return -EINVAL;
	if (umad_send(s->port, s->agent, buf, SA_MAD_LEN, SA_TIMEOUT_MS, SA_RETRIES) < 0)
		return errno ? -errno : -EIO;
	return 0;
}

int samcm_recv(struct samcm *s, struct samcm_answer *a)
{
	uint8_t buf[4096] __attribute__((aligned(8)));

	for (;;) {
		int len = (int)(sizeof(buf) - umad_size());
		const struct umad_sa_packet *p;
		const struct umad_sa_mcmember_record *rec;
		uint32_t flow;
		uint8_t sl, hop;

		if (s->port < 0 || umad_recv(s->port, buf, &len, 0) < 0)
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
		rec = (const void *)p->data;
		umad_sa_mcm_get_sl_flow_hop(rec->sl_flow_hop, &sl, &flow, &hop);
		a->qkey = ntohl(rec->qkey);
		a->mlid = ntohs(rec->mlid);
		a->sl = sl;
		a->flow_label = flow;
		a->hop_limit = hop;
		a->tclass = rec->tclass;
		a->rate = umad_sa_get_rate_mtu_or_life(rec->rate);
		memcpy(a->mgid.raw, rec->mgid, 16);
		return 1;
	}
}

void samcm_ah_attr(const struct samcm_answer *a, uint8_t port_num, uint8_t sgid_index,
		   struct ibv_ah_attr *aa)
{
	memset(aa, 0, sizeof(*aa));
	aa->dlid = a->mlid;
	aa->sl = a->sl;
	aa->port_num = port_num;
	aa->static_rate = a->rate;
	aa->is_global = 1;
	aa->grh.dgid = a->mgid;
	aa->grh.sgid_index = sgid_index;
	aa->grh.flow_label = a->flow_label;
	aa->grh.hop_limit = a->hop_limit;
	aa->grh.traffic_class = a->tclass;
}

const char *samcm_status_str(uint16_t st)
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
