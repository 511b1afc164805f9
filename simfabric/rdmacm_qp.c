// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1: an id's QP and CQs (rdma_create_qp[_ex], rdma_destroy_qp,
 * rdma_init_qp_attr), the Q_Key of an id, as rdma-core 44 librdmacm/cma.c and the
 * kernel's cma.c set them up for UD. Calls only the core.
 */
#include "rdmacm_priv.h"

/* cma_set_default_qkey: RDMA_UDP_QKEY, or the IPoIB broadcast group's for PS_IPOIB. */
uint32_t cm_qkey_locked(struct cm_id *idp)
{
	if (!idp->qkey)
		idp->qkey = idp->id.ps == RDMA_PS_IPOIB ? CM_IPOIB_QKEY : SF_RDMA_UDP_QKEY;
	return idp->qkey;
}

/*
 * The kernel's rdma_init_qp_attr for an id that is not connected (all UD ids):
 * cma_ib_init_qp_attr whatever the requested state: pkey_index (of 0xffff on RoCE, of
 * the id's P_Key on IB; -ENOENT if absent), port 1, and the Q_Key (UD) or no access
 * flags (RC); the RTR request also gets rq_psn = the id's sequence number.
 * ibv_copy_qp_attr_from_kern overwrites every field but rate_limit.
 */
static int cm_init_qp_attr_locked(struct cm_id *idp, struct ibv_qp_attr *attr, int *mask)
{
	enum ibv_qp_state want = attr->qp_state;
	const struct sf_dev *dev;
	uint16_t pkey;

	if (idp->dev < 0)
		return -EINVAL;
	dev = &cmlib.fab->devs[idp->dev];
	pkey = dev->link == SF_LINK_IB ? idp->pkey : SF_IB_DEFAULT_PKEY;
	/* One P_Key per simulated port, at index 0; membership bit ignored. */
	if ((pkey & 0x7fff) != (dev->pkey & 0x7fff))
		return -ENOENT;
	memset(attr, 0, offsetof(struct ibv_qp_attr, rate_limit));
	attr->qp_state = want;
	attr->pkey_index = 0;
	attr->port_num = CM_PORT_NUM;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (idp->id.qp_type == IBV_QPT_UD) {
		attr->qkey = cm_qkey_locked(idp);
		*mask |= IBV_QP_QKEY;
	} else {
		attr->qp_access_flags = 0;
		*mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (want == IBV_QPS_RTR)
		attr->rq_psn = idp->seq_num;
	return 0;
}

/* rdma_init_qp_attr (RDMACM_1.2): EINVAL without a device. */
SF_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				int *qp_attr_mask)
{
	struct cm_id *idp;
	int ret;

	if (!id || !qp_attr || !qp_attr_mask)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&cmlib.lock);
	ret = cm_init_qp_attr_locked(idp, qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&cmlib.lock);
	return ret ? cm_err(-ret) : 0;
}

/*
 * ucma_init_ud_qp: INIT with the attributes of rdma_init_qp_attr (STATE|PKEY_INDEX|
 * PORT|QKEY), RTR (STATE), RTS (STATE|SQ_PSN, sq_psn 0). ucma_init_conn_qp for other ids:
 * INIT only. Errors: -1 with errno.
 */
static int cm_init_qp(struct cm_id *idp, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	attr.qp_state = IBV_QPS_INIT;
	ret = rdma_init_qp_attr(&idp->id, &attr, &mask);
	if (ret)
		return ret;
	ret = ibv_modify_qp(qp, &attr, mask);
	if (ret)
		return cm_err(ret);
	if (idp->id.qp_type != IBV_QPT_UD)
		return 0;

	attr.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (ret)
		return cm_err(ret);

	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return ret ? cm_err(ret) : 0;
}

/* ucma_destroy_cqs: the CQs and completion channels librdmacm created for the id. */
static void cm_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
}

/*
 * ucma_create_cqs: a completion channel and a CQ (cq_context = id) per direction that
 * needs one, sized by the requested work requests; 0 means none.
 */
static int cm_create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err;
	}
	return 0;
err:
	cm_destroy_cqs(id);
	return -1;
}

/*
 * rdma_create_qp_ex: EINVAL if the id has a QP, if the PD belongs to another device or
 * if given CQs differ from the id's. Missing CQs are created, the QP is created on
 * id->verbs (ibv_create_qp_ex: create flags need the provider's create_qp_ex) and moved
 * to RTS (UD) or INIT (others); then id->pd = qp->pd and id->qp = qp. An id without a
 * device fails with EINVAL (upstream would dereference a NULL context).
 */
SF_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *idp;
	struct ibv_qp *qp;
	int ret, e;

	if (!id || !attr)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	if (id->qp || !id->verbs)
		return cm_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (id->verbs != attr->pd->context) {
		return cm_err(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return cm_err(EINVAL);

	ret = cm_create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
			    attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr);
	if (ret)
		return ret;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;

	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = -1;
		goto err_cqs;
	}
	ret = cm_init_qp(idp, qp);
	if (ret)
		goto err_qp;

	pthread_mutex_lock(&cmlib.lock);
	id->pd = qp->pd;
	id->qp = qp;
	pthread_mutex_unlock(&cmlib.lock);
	return 0;
err_qp:
	e = errno;
	ibv_destroy_qp(qp);
	errno = e;
err_cqs:
	e = errno;
	cm_destroy_cqs(id);
	errno = e;
	return ret;
}

/* rdma_create_qp: rdma_create_qp_ex with comp_mask PD (pd NULL: id->pd). */
SF_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	if (!id || !qp_init_attr)
		return cm_err(EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &attr_ex);
	memcpy(qp_init_attr, &attr_ex, sizeof(*qp_init_attr));
	return ret;
}

/*
 * rdma_destroy_qp: destroys id->qp and the CQs librdmacm created. Done under the
 * library lock so that an event thread attaching the QP for a JOIN never sees it freed.
 */
SF_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id)
		return;
	pthread_mutex_lock(&cmlib.lock);
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	pthread_mutex_unlock(&cmlib.lock);
	cm_destroy_cqs(id);
}
