// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Shared receive queues (basic type), as the mlx5 provider and kernel driver answer:
 * ibv_create_srq / ibv_create_srq_ex, ibv_modify_srq (arming the limit; no resize:
 * mlx5 does not set IBV_DEVICE_SRQ_RESIZE and refuses IBV_SRQ_MAX_WR with EINVAL),
 * ibv_query_srq, ibv_post_srq_recv, ibv_destroy_srq (EBUSY while a QP uses it).
 *
 * Sizes as mlx5 (kernel drivers/infiniband/hw/mlx5/srq.c, rdma-core providers/mlx5
 * verbs.c): the ring holds roundup_pow2(max_wr + 1) WQEs and max_wr = that - 1 is
 * reported back; a WQE is a 16-byte header and 16 bytes per scatter entry, at least 32
 * bytes and a power of two, and max_sge is reported as what fits. The device limits
 * are those of a ConnectX-6 (device.c). A QP created with init_attr.srq takes its
 * receives from the SRQ (wire.c); its own receive queue does not exist (qp.c).
 *
 * SIMFABRIC_NO_SRQ (non-empty, not "0") makes this process see a device without SRQs
 * (max_srq 0, ibv_create_srq EOPNOTSUPP), as some providers are: programs test their
 * per-QP receive queue fallback with it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sf.h"
#include "sf_priv.h"

/* ibv_devinfo -v of a ConnectX-6 Dx (vendor_part_id 4125, firmware 22.36.1010). */
#define SF_MAX_SRQ    8388608
#define SF_MAX_SRQ_WR 32767

int sf_srq_caps(uint32_t *max_srq_wr, uint32_t *max_srq_sge);

/* The SRQ limits this process advertises: max_srq, or 0 under SIMFABRIC_NO_SRQ. */
int sf_srq_caps(uint32_t *max_srq_wr, uint32_t *max_srq_sge)
{
	static int supported = -1;

	if (supported < 0) {
		const char *e = getenv("SIMFABRIC_NO_SRQ");

		supported = !(e && *e && strcmp(e, "0"));
	}
	*max_srq_wr = supported ? SF_MAX_SRQ_WR : 0;
	*max_srq_sge = supported ? SF_MAX_SRQ_SGE : 0;
	return supported ? SF_MAX_SRQ : 0;
}

/* WQE stride for `max_sge` entries and the entries that stride holds (mlx5_create_srq). */
static uint32_t sf_srq_stride(uint32_t max_sge, uint32_t *fits)
{
	uint32_t size = 16 + 16 * (max_sge ? max_sge : 1);

	size = size < 32 ? 32 : (uint32_t)sf_roundup_pow2(size);
	*fits = (size - 16) / 16;
	return size;
}

static struct ibv_srq *sf_srq_create(struct ibv_pd *pd, void *srq_context,
				     struct ibv_srq_attr *attr)
{
	struct sf_context *c = sf_ctx_of(pd->context);
	struct sf_fabric *fab = c->fab;
	uint32_t max_wr, max_sge, fits, stride, size, i;
	struct sf_srq_priv *q;
	struct sf_srq *r;

	if (!sf_srq_caps(&max_wr, &max_sge)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->max_wr || attr->max_wr > max_wr || attr->max_sge > max_sge) {
		errno = EINVAL;
		return NULL;
	}
	size = (uint32_t)sf_roundup_pow2((uint64_t)attr->max_wr + 1);
	stride = sf_srq_stride(attr->max_sge, &fits);
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	sf_lock(fab);
	for (i = 0; i < SF_MAX_SRQS && fab->srqs[i].own.pid; i++)
		;
	if (i == SF_MAX_SRQS) {
		sf_unlock(fab);
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	r = &fab->srqs[i];
	sf_owner_claim(&r->own);
	r->nqps = 0;
	sf_unlock(fab);

	q->ring = sf_obj_create("srq", r->own.serial, (size_t)size * stride, NULL);
	if (!q->ring) {
		int e = errno;

		sf_lock(fab);
		sf_owner_release(&r->own);
		sf_unlock(fab);
		free(q);
		errno = e;
		return NULL;
	}
	atomic_store(&r->lock, 0);
	r->dev = c->dev;
	r->ctx = c->ctx_index;
	r->size = size;
	r->stride = stride;
	r->max_sge = fits;
	r->cookie = (uintptr_t)&q->srq;
	atomic_store(&r->limit, 0);
	atomic_store(&r->head, 0);
	atomic_store(&r->tail, 0);
	sf_map_register_srq(i, q->ring);

	q->index = i;
	q->max_wr = size - 1;
	pthread_spin_init(&q->post_lock, PTHREAD_PROCESS_PRIVATE);
	q->srq.context = pd->context;
	q->srq.srq_context = srq_context;
	q->srq.pd = pd;
	q->srq.handle = i;
	pthread_mutex_init(&q->srq.mutex, NULL);
	pthread_cond_init(&q->srq.cond, NULL);
	/* What was created (ibv_create_srq(3)); srq_limit is irrelevant here and left. */
	attr->max_wr = q->max_wr;
	attr->max_sge = fits;
	return &q->srq;
}

SF_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	return sf_srq_create(pd, attr->srq_context, &attr->attr);
}

/*
 * The provider's create_srq_ex: ibv_create_srq_ex (verbs.h) calls it for what is not a
 * basic SRQ with a PD, i.e. XRC and tag-matching SRQs, neither of which is simulated
 * (no XRC domains, no tag matching): EOPNOTSUPP. A basic SRQ reaching it (a comp_mask
 * with more bits than TYPE and PD) is created like ibv_create_srq's.
 */
struct ibv_srq *sf_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
struct ibv_srq *sf_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask &
	    ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	return sf_srq_create(attr->pd, attr->srq_context, &attr->attr);
}

/*
 * ibv_modify_srq: IBV_SRQ_LIMIT arms the limit (srq_limit must be below the ring size,
 * as mlx5_ib_modify_srq; 0 disarms); IBV_SRQ_MAX_WR is refused with EINVAL (no resize).
 * Nothing changes when any attribute is refused.
 */
SF_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct sf_srq_priv *q = (struct sf_srq_priv *)srq;
	struct sf_fabric *fab = sf_get();
	struct sf_srq *r = &fab->srqs[q->index];

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL;
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit >= r->size)
			return EINVAL;
		atomic_store(&r->limit, attr->srq_limit);
	}
	return 0;
}

SF_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct sf_srq_priv *q = (struct sf_srq_priv *)srq;
	struct sf_fabric *fab = sf_get();
	struct sf_srq *r = &fab->srqs[q->index];

	attr->max_wr = q->max_wr;
	attr->max_sge = r->max_sge;
	/* 0 once the limit event fired (or never armed): ibv_query_srq(3). */
	attr->srq_limit = atomic_load(&r->limit);
	return 0;
}

SF_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct sf_srq_priv *q = (struct sf_srq_priv *)srq;
	struct sf_fabric *fab = sf_get();
	struct sf_srq *r = &fab->srqs[q->index];
	size_t len = (size_t)r->size * r->stride;
	char path[256];

	sf_lock(fab);
	if (r->nqps) {
		sf_unlock(fab);
		return EBUSY;
	}
	sf_srq_lock(r);
	sf_obj_path(path, sizeof(path), "srq", r->own.pid, r->own.serial);
	sf_owner_release(&r->own);
	sf_srq_unlock(r);
	sf_unlock(fab);
	unlink(path);
	munmap(q->ring, len);
	pthread_spin_destroy(&q->post_lock);
	free(q);
	return 0;
}

/*
 * ibv_post_srq_recv: as mlx5_post_srq_recv, EINVAL for more scatter entries than the
 * SRQ holds, ENOMEM when max_wr WQEs are outstanding; *bad names the first WR not
 * posted. Any thread of the owner (a lock, as the provider's).
 */
int sf_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int sf_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sf_srq_priv *q = (struct sf_srq_priv *)srq;
	struct sf_fabric *fab = sf_get();
	struct sf_srq *r = &fab->srqs[q->index];
	uint64_t tail;
	int ret = 0;

	pthread_spin_lock(&q->post_lock);
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	for (; wr; wr = wr->next) {
		struct sf_rwqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > r->max_sge) {
			ret = EINVAL;
			break;
		}
		/* Pairs with the release store of head in sf_srq_pop (wire.c). */
		if (tail - atomic_load_explicit(&r->head, memory_order_acquire) >= q->max_wr) {
			ret = ENOMEM;
			break;
		}
		w = sf_rwqe_at(q->ring, r->stride, tail, r->size);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		/* Up to max_sge (31) entries: the stride holds them, past sge[]'s declared 8. */
		memcpy((uint8_t *)w + offsetof(struct sf_rwqe, sge), wr->sg_list,
		       sizeof(struct ibv_sge) * (size_t)wr->num_sge);
		tail++;
	}
	/* Pairs with the acquire load of tail in the delivering process. */
	atomic_store_explicit(&r->tail, tail, memory_order_release);
	pthread_spin_unlock(&q->post_lock);
	if (ret && bad)
		*bad = wr;
	return ret;
}
