// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * UD queue pairs: creation, the state machine with the attribute checks of the kernel
 * (ib_modify_qp_is_ok), query, destruction and posting. Only UD is simulated: creating
 * any other QP type fails with EOPNOTSUPP, as on a device without that transport.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <unistd.h>

#include "sf.h"
#include "sf_priv.h"

#define SF_MAX_QP_WR  32768
#define SF_MAX_SGE    30
#define SF_MAX_INLINE 256

struct sf_qp_priv *g_own_qps[SF_MAX_QPS];

int sf_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static void sf_qp_free_ex(struct sf_qp_priv *q);

/* ---- a hanging send queue (simfab qp DEV QPN sq-hang on|off, fault.c) ---- */

/*
 * A send held while its QP's send queue hangs: a copy of the WR, of its scatter list and
 * inline bytes (the application may reuse those after the post; the buffers a scatter
 * entry points to stay the application's until the completion, as on a NIC), its place
 * in the send queue and its length, checked when it was posted.
 */
struct sf_held_wr {
	struct ibv_send_wr wr;
	uint64_t pos;
	uint32_t len;
	bool inl;
	struct ibv_sge sge[SF_MAX_SGE];
	uint8_t data[SF_MAX_INLINE];
};

_Atomic uint32_t g_sf_sq_held; /* QPs on g_held_first's list */
static struct sf_qp_priv *g_held_first;
static pthread_mutex_t g_held_lock = PTHREAD_MUTEX_INITIALIZER;

/* Send one checked WR at send-queue place pos: deliver it, complete it when signaled. */
static inline __attribute__((always_inline)) void
sf_send_one(struct sf_fabric *fab, struct sf_qp_priv *q, struct sf_qp *r, struct sf_dev *d,
	    struct ibv_send_wr *wr, uint32_t len, uint8_t *inline_data, uint64_t pos)
{
	struct sf_cq_priv *cq = (struct sf_cq_priv *)q->qp.send_cq;
	struct sf_tx tx;

	memset(&tx, 0, offsetof(struct sf_tx, hdr));
	tx.inline_data = inline_data;
	tx.qp = q;
	tx.sqp = r;
	tx.sdev = d;
	tx.wr = wr;
	tx.len = len;
	tx.qkey = wr->wr.ud.remote_qkey & SF_QKEY_USE_QP ? r->qkey : wr->wr.ud.remote_qkey;
	tx.with_imm = wr->opcode == IBV_WR_SEND_WITH_IMM;
	tx.solicited = wr->send_flags & IBV_SEND_SOLICITED;
	sf_wire_send(fab, &tx, (struct sf_ah_priv *)wr->wr.ud.ah);
	if (q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) {
		struct ibv_wc wc = {.wr_id = wr->wr_id,
				    .status = IBV_WC_SUCCESS,
				    .opcode = IBV_WC_SEND,
				    .qp_num = q->qp.qp_num};

		sf_cq_push(fab, cq->index, cq->ring, &wc, ((uint64_t)q->index << 40) | pos, false);
	}
}

/* Hold a checked WR of a hung send queue (inline: its bytes copied to inl). 0 or ENOMEM. */
static int sf_sq_hold(struct sf_qp_priv *q, const struct ibv_send_wr *wr, uint32_t len,
		      const uint8_t *inl)
{
	struct sf_held_wr *h;

	if (!q->held) {
		q->held = calloc(q->max_send_wr ? q->max_send_wr : 1, sizeof(*q->held));
		if (!q->held)
			return ENOMEM;
	}
	h = &q->held[q->nheld++];
	h->wr = *wr;
	h->wr.next = NULL;
	memcpy(h->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
	h->wr.sg_list = h->sge;
	h->pos = q->sq_posted;
	h->len = len;
	h->inl = inl != NULL;
	if (inl)
		memcpy(h->data, inl, len);
	if (!q->held_listed) {
		pthread_mutex_lock(&g_held_lock);
		q->held_next = g_held_first;
		g_held_first = q;
		q->held_listed = true;
		atomic_fetch_add(&g_sf_sq_held, 1);
		pthread_mutex_unlock(&g_held_lock);
	}
	return 0;
}

/* Take q off the list of QPs holding sends. g_held_lock held. */
static void sf_sq_unlist_locked(struct sf_qp_priv *q)
{
	for (struct sf_qp_priv **pp = &g_held_first; *pp; pp = &(*pp)->held_next) {
		if (*pp == q) {
			*pp = q->held_next;
			q->held_listed = false;
			atomic_fetch_sub(&g_sf_sq_held, 1);
			return;
		}
	}
}

static struct ibv_qp *sf_qp_create(struct ibv_context *context, struct ibv_pd *pd,
				   struct ibv_qp_init_attr_ex *a)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_fabric *fab = c->fab;
	struct sf_qp_priv *q;
	struct sf_qp *r;
	uint32_t i, n, rq_size, stride;

	if (a->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* With an SRQ, max_recv_wr and max_recv_sge are ignored (ibv_create_qp(3)): the QP
	 * has no receive queue of its own (mlx5_ib set_rq_size: 0 WQEs). */
	if (a->srq)
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	if (!a->send_cq || !a->recv_cq || !pd || a->cap.max_send_wr > SF_MAX_QP_WR ||
	    a->cap.max_recv_wr > SF_MAX_QP_WR || a->cap.max_send_sge > SF_MAX_SGE ||
	    a->cap.max_recv_sge > SF_MAX_SGE || a->cap.max_inline_data > SF_MAX_INLINE ||
	    (a->srq && a->srq->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    (a->create_flags & ~(uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	/* max_recv_wr 0: no receive queue (as mlx5: ibv_post_recv fails with ENOMEM, and a
	 * datagram for the QP is dropped as when no receive is posted). A send-only QP then
	 * costs no shared object and no mapping: 100 000 of them fit one process. */
	rq_size = a->cap.max_recv_wr ? (uint32_t)sf_roundup_pow2(a->cap.max_recv_wr) : 0;
	stride = sf_rwqe_stride(a->cap.max_recv_sge);

	sf_lock(fab);
	/* From the slot after the last one taken: creating N QPs does not cost N^2. */
	i = fab->qp_hint % SF_MAX_QPS;
	for (n = 0; n < SF_MAX_QPS && fab->qps[i].own.pid; n++)
		i = (i + 1) % SF_MAX_QPS;
	if (n == SF_MAX_QPS) {
		sf_unlock(fab);
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	fab->qp_hint = (i + 1) % SF_MAX_QPS;
	r = &fab->qps[i];
	sf_owner_claim(&r->own);
	r->nattached = 0; /* the last owner's attachments went with it (detach_all) */
	r->srq = 0;
	if (a->srq) {
		/* Counted under the fabric lock: ibv_destroy_srq is refused while it is used. */
		r->srq = ((struct sf_srq_priv *)a->srq)->index + 1;
		fab->srqs[r->srq - 1].nqps++;
	}
	sf_unlock(fab);

	q->rq = rq_size ? sf_obj_create("rq", r->own.serial, (size_t)rq_size * stride, NULL) : NULL;
	if (rq_size && !q->rq) {
		int e = errno;

		sf_lock(fab);
		if (r->srq)
			fab->srqs[r->srq - 1].nqps--;
		r->srq = 0;
		sf_owner_release(&r->own);
		sf_unlock(fab);
		free(q);
		errno = e;
		return NULL;
	}
	atomic_store(&r->lock, 0);
	r->dev = c->dev;
	r->qpn = atomic_fetch_add(&fab->devs[c->dev].next_qpn, 1);
	atomic_store(&r->state, IBV_QPS_RESET);
	r->qkey = 0;
	r->pkey_index = 0;
	r->block_self_mcast = (a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
			      (a->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	r->recv_cq = ((struct sf_cq_priv *)a->recv_cq)->index;
	r->send_cq = ((struct sf_cq_priv *)a->send_cq)->index;
	r->rq_size = rq_size;
	r->max_recv_sge = a->srq ? 0 : a->cap.max_recv_sge ? a->cap.max_recv_sge : 1;
	r->ctx = c->ctx_index;
	atomic_store(&r->rq_head, 0);
	atomic_store(&r->rq_tail, 0);
	r->cookie = (uintptr_t)&q->qp;
	sf_map_register_rq(i, q->rq);

	q->index = i;
	q->dev = c->dev;
	q->max_send_wr = a->cap.max_send_wr;
	q->max_send_sge = a->cap.max_send_sge;
	q->max_inline = a->cap.max_inline_data;
	q->max_recv_wr = a->cap.max_recv_wr;
	q->sq_sig_all = (uint32_t)a->sq_sig_all;
	q->rwqe_stride = stride;
	q->create_flags = r->block_self_mcast ? IBV_QP_CREATE_BLOCK_SELF_MCAST_LB : 0;
	q->qp.context = context;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.srq = a->srq;
	q->qp.handle = i;
	q->qp.qp_num = r->qpn;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = IBV_QPT_UD;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	g_own_qps[i] = q;
	return &q->qp;
}

SF_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	memcpy(&a, attr, sizeof(*attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = sf_qp_create(pd->context, pd, &a);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

/*
 * ---- Extended creation and the ibv_wr_* work-request API ----
 *
 * As mlx5 does it (rdma-core providers/mlx5/verbs.c create_qp, providers/mlx5/qp.c
 * mlx5_qp_fill_wr_pfns and the mlx5_send_wr_* functions):
 * - comp_mask IBV_QP_INIT_ATTR_SEND_OPS_FLAGS makes the QP extended: ibv_qp_to_qp_ex
 *   returns its struct ibv_qp_ex (which begins with the ibv_qp), else NULL. On a UD QP
 *   send_ops_flags beyond IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM
 *   (MLX5_SUPPORTED_SEND_OPS_FLAGS_UD) fail the creation with EOPNOTSUPP. Every builder
 *   and setter UD supports is filled whatever the flags asked for (mlx5: "Set all
 *   supported micro-functions regardless user request"): wr_send, wr_send_imm,
 *   wr_set_ud_addr, wr_set_sge(_list), wr_set_inline_data(_list), wr_start,
 *   wr_complete, wr_abort; the others stay NULL.
 * - Errors found while building are kept (the first one) and returned by wr_complete,
 *   which then posts nothing of the batch (mlx5 rolls the send queue back): a full send
 *   queue ENOMEM (mlx5_wq_overflow), more scatter entries than max_send_sge ENOMEM,
 *   inline data longer than max_inline_data ENOMEM. Zero-length scatter entries are
 *   skipped. wr_abort drops the batch.
 * - Where simfabric checks more than mlx5 at post time (a UD message larger than the
 *   path MTU, the QP not in RTS: ibv_post_send's EINVAL), wr_complete checks the whole
 *   batch first and posts none of it with EINVAL, so a batch is all or nothing.
 * The batch is built as ibv_send_wr entries and posted through sf_post_send, so both
 * APIs share one send path.
 */
struct sf_wr_batch {
	struct ibv_send_wr *wr; /* max_send_wr entries */
	struct ibv_sge *sge;	/* nsge per entry */
	uint8_t *inl;		/* max_inline bytes per entry */
	uint32_t cap;		/* entries */
	uint32_t nsge;		/* scatter entries per WR (max_send_sge, at least 1) */
	uint32_t n;		/* WRs built since wr_start */
	int err;		/* first error of the batch */
	bool cur_ok;		/* the WR being built has an entry */
};

#define SF_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

static struct sf_qp_priv *sf_qpx(struct ibv_qp_ex *qpx)
{
	return (struct sf_qp_priv *)qpx;
}

static void sf_wr_fail(struct sf_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

static void sf_wr_start(struct ibv_qp_ex *qpx)
{
	struct sf_wr_batch *b = sf_qpx(qpx)->wrb;

	b->n = 0;
	b->err = 0;
	b->cur_ok = false;
}

static void sf_wr_abort(struct ibv_qp_ex *qpx)
{
	sf_wr_start(qpx);
}

/* A new WR of the batch; a full send queue fails the batch with ENOMEM. */
static void sf_wr_new(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, __be32 imm)
{
	struct sf_qp_priv *q = sf_qpx(qpx);
	struct sf_wr_batch *b = q->wrb;
	struct ibv_send_wr *wr;

	b->cur_ok = false;
	if (q->sq_posted + b->n - atomic_load_explicit(&q->sq_retired, memory_order_acquire) >=
	    q->max_send_wr) {
		sf_wr_fail(b, ENOMEM);
		return;
	}
	wr = &b->wr[b->n];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = qpx->wr_id;
	wr->opcode = op;
	wr->send_flags = qpx->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	wr->imm_data = imm;
	wr->sg_list = &b->sge[(size_t)b->n * b->nsge];
	b->n++;
	b->cur_ok = true;
}

static void sf_wr_send(struct ibv_qp_ex *qpx)
{
	sf_wr_new(qpx, IBV_WR_SEND, 0);
}

static void sf_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	sf_wr_new(qpx, IBV_WR_SEND_WITH_IMM, imm);
}

static struct ibv_send_wr *sf_wr_cur(struct ibv_qp_ex *qpx)
{
	struct sf_wr_batch *b = sf_qpx(qpx)->wrb;

	return b->cur_ok ? &b->wr[b->n - 1] : NULL;
}

static void sf_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			      uint32_t remote_qkey)
{
	struct ibv_send_wr *wr = sf_wr_cur(qpx);

	if (!wr)
		return;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

static void sf_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg)
{
	struct sf_qp_priv *q = sf_qpx(qpx);
	struct ibv_send_wr *wr = sf_wr_cur(qpx);

	if (!wr)
		return;
	if (num_sge > q->wrb->nsge) {
		sf_wr_fail(q->wrb, ENOMEM);
		return;
	}
	wr->num_sge = 0;
	wr->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
	for (size_t i = 0; i < num_sge; i++)
		if (sg[i].length)
			wr->sg_list[wr->num_sge++] = sg[i];
}

static void sf_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	sf_wr_set_sge_list(qpx, 1, &sge);
}

static void sf_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				       const struct ibv_data_buf *buf)
{
	struct sf_qp_priv *q = sf_qpx(qpx);
	struct sf_wr_batch *b = q->wrb;
	struct ibv_send_wr *wr = sf_wr_cur(qpx);
	uint8_t *dst;
	size_t len = 0;

	if (!wr)
		return;
	for (size_t i = 0; i < num_buf; i++)
		len += buf[i].length;
	if (len > q->max_inline) {
		sf_wr_fail(b, ENOMEM);
		return;
	}
	wr->send_flags |= IBV_SEND_INLINE;
	wr->num_sge = 0;
	if (!len)
		return; /* a QP without inline space has no buffer: nothing to copy */
	/* The payload is copied now, as mlx5 copies it into the WQE: the caller's buffers
	 * may be reused at once. */
	dst = b->inl + (size_t)(b->n - 1) * q->max_inline;
	len = 0;
	for (size_t i = 0; i < num_buf; i++) {
		if (!buf[i].length)
			continue;
		memcpy(dst + len, buf[i].addr, buf[i].length);
		len += buf[i].length;
	}
	wr->num_sge = 1;
	wr->sg_list[0].addr = (uintptr_t)dst;
	wr->sg_list[0].length = (uint32_t)len;
	wr->sg_list[0].lkey = 0;
}

static void sf_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = {.addr = addr, .length = length};

	sf_wr_set_inline_data_list(qpx, 1, &buf);
}

static int sf_wr_complete(struct ibv_qp_ex *qpx)
{
	struct sf_qp_priv *q = sf_qpx(qpx);
	struct sf_wr_batch *b = q->wrb;
	struct sf_fabric *fab = sf_get();
	enum ibv_qp_state st = atomic_load(&fab->qps[q->index].state);
	uint32_t mtu = sf_mtu_bytes(fab->devs[q->dev].active_mtu);
	struct ibv_send_wr *bad;
	int err = b->err;

	if (!err && b->n) {
		if (st != IBV_QPS_RTS && st != IBV_QPS_ERR)
			err = EINVAL;
		for (uint32_t i = 0; !err && i < b->n; i++) {
			struct ibv_send_wr *wr = &b->wr[i];
			uint64_t len = 0;

			for (int k = 0; k < wr->num_sge; k++)
				len += wr->sg_list[k].length;
			if (len > mtu || !wr->wr.ud.ah ||
			    (!(wr->send_flags & IBV_SEND_INLINE) &&
			     (uint32_t)wr->num_sge > q->max_send_sge))
				err = EINVAL;
			wr->next = i + 1 < b->n ? &b->wr[i + 1] : NULL;
		}
		if (!err)
			err = sf_post_send(&q->qp, b->wr, &bad);
	}
	b->n = 0;
	b->err = 0;
	b->cur_ok = false;
	return err;
}

static int sf_qp_make_ex(struct sf_qp_priv *q)
{
	struct ibv_qp_ex *x = &q->qpx;
	struct sf_wr_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return ENOMEM;
	b->cap = q->max_send_wr ? q->max_send_wr : 1;
	b->nsge = q->max_send_sge ? q->max_send_sge : 1;
	b->wr = calloc(b->cap, sizeof(*b->wr));
	b->sge = calloc((size_t)b->cap * b->nsge, sizeof(*b->sge));
	b->inl = q->max_inline ? calloc(b->cap, q->max_inline) : NULL;
	if (!b->wr || !b->sge || (q->max_inline && !b->inl)) {
		free(b->wr);
		free(b->sge);
		free(b->inl);
		free(b);
		return ENOMEM;
	}
	q->wrb = b;
	x->comp_mask = 0;
	x->wr_send = sf_wr_send;
	x->wr_send_imm = sf_wr_send_imm;
	x->wr_set_ud_addr = sf_wr_set_ud_addr;
	x->wr_set_sge = sf_wr_set_sge;
	x->wr_set_sge_list = sf_wr_set_sge_list;
	x->wr_set_inline_data = sf_wr_set_inline_data;
	x->wr_set_inline_data_list = sf_wr_set_inline_data_list;
	x->wr_start = sf_wr_start;
	x->wr_complete = sf_wr_complete;
	x->wr_abort = sf_wr_abort;
	return 0;
}

static void sf_qp_free_ex(struct sf_qp_priv *q)
{
	if (!q->wrb)
		return;
	free(q->wrb->wr);
	free(q->wrb->sge);
	free(q->wrb->inl);
	free(q->wrb);
	q->wrb = NULL;
}

SF_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;

	return q->wrb ? &q->qpx : NULL;
}

struct ibv_qp *sf_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	int e;

	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && attr->qp_type == IBV_QPT_UD &&
	    (attr->send_ops_flags & ~(uint64_t)SF_UD_SEND_OPS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = sf_qp_create(context, attr->pd, attr);
	if (!qp || !(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return qp;
	e = sf_qp_make_ex((struct sf_qp_priv *)qp);
	if (e) {
		ibv_destroy_qp(qp);
		errno = e;
		return NULL;
	}
	return qp;
}

SF_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;
	struct sf_fabric *fab = sf_get();
	struct sf_qp *r = &fab->qps[q->index];
	char path[256];

	sf_lock(fab);
	sf_qp_detach_all_locked(fab, q->index);
	sf_qp_lock(r);
	atomic_store(&r->state, IBV_QPS_RESET);
	sf_obj_path(path, sizeof(path), "rq", r->own.pid, r->own.serial);
	if (r->srq)
		fab->srqs[r->srq - 1].nqps--;
	r->srq = 0;
	sf_owner_release(&r->own);
	sf_qp_unlock(r);
	sf_unlock(fab);
	g_own_qps[q->index] = NULL;
	if (q->held_listed) {
		pthread_mutex_lock(&g_held_lock);
		sf_sq_unlist_locked(q);
		pthread_mutex_unlock(&g_held_lock);
	}
	free(q->held);
	sf_qp_free_ex(q);
	if (q->rq) {
		unlink(path);
		munmap(q->rq, (size_t)r->rq_size * q->rwqe_stride);
	}
	free(q);
	return 0;
}

/* Required and optional attributes of each UD transition (IBTA 11.2.4.2, kernel qp_state_table). */
struct sf_trans {
	enum ibv_qp_state from, to;
	int req, opt;
};

static const struct sf_trans sf_ud_trans[] = {
	{IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
	{IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
	{IBV_QPS_INIT, IBV_QPS_RTR, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
	{IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
	{IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
};

static int sf_modify_ok(enum ibv_qp_state cur, enum ibv_qp_state next, int mask)
{
	mask &= ~IBV_QP_STATE;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return mask & ~IBV_QP_CUR_STATE ? 0 : 1;
	for (size_t i = 0; i < sizeof(sf_ud_trans) / sizeof(sf_ud_trans[0]); i++) {
		const struct sf_trans *t = &sf_ud_trans[i];

		if (t->from != cur || t->to != next)
			continue;
		return (mask & t->req) == t->req && !(mask & ~(t->req | t->opt));
	}
	return 0;
}

/* Drain the receive ring of a QP that went to the error state: flushed completions. */
static void sf_qp_flush_rq(struct sf_fabric *fab, struct sf_qp_priv *q)
{
	struct sf_qp *r = &fab->qps[q->index];
	struct sf_cq_priv *cq = (struct sf_cq_priv *)q->qp.recv_cq;

	sf_qp_lock(r);
	for (uint64_t h = atomic_load(&r->rq_head); h != atomic_load(&r->rq_tail); h++) {
		struct sf_rwqe *w = sf_rwqe_at(q->rq, q->rwqe_stride, h, r->rq_size);
		struct ibv_wc wc = {.wr_id = w->wr_id,
				    .status = IBV_WC_WR_FLUSH_ERR,
				    .opcode = IBV_WC_RECV,
				    .qp_num = r->qpn};

		if (sf_cq_push(fab, cq->index, cq->ring, &wc, UINT64_MAX, false))
			break;
		atomic_store(&r->rq_head, h + 1);
	}
	sf_qp_unlock(r);
}

/*
 * May this process give a QP a controlled Q_Key (high bit set, IBA 10.2.4)? Linux 6.4+
 * (RDMA/uverbs "Restrict usage of privileged QKEYs", ib_uverbs_modify_qp) refuses
 * IB_QP_QKEY with bit 31 set with -EPERM unless the caller has CAP_NET_RAW or the
 * administrator allowed it for all (`rdma system set privileged-qkey on`, the netlink
 * RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE). The simulation has no such system setting:
 * CAP_NET_RAW in the effective set decides.
 */
static bool sf_may_use_controlled_qkey(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32));
}

SF_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;
	struct sf_fabric *fab = sf_get();
	struct sf_qp *r = &fab->qps[q->index];
	enum ibv_qp_state cur = atomic_load(&r->state), next;

	if (mask & IBV_QP_CUR_STATE && attr->cur_qp_state != cur)
		return EINVAL;
	next = mask & IBV_QP_STATE ? attr->qp_state : cur;
	if (!sf_modify_ok(cur, next, mask))
		return EINVAL;
	if (mask & IBV_QP_PORT && attr->port_num != 1)
		return EINVAL;
	if (mask & IBV_QP_PKEY_INDEX &&
	    attr->pkey_index >= (fab->devs[q->dev].link == SF_LINK_IB ? 128 : 1))
		return EINVAL;
	if (mask & IBV_QP_QKEY && attr->qkey & SF_QKEY_USE_QP && !sf_may_use_controlled_qkey())
		return EPERM;

	sf_qp_lock(r);
	if (mask & IBV_QP_QKEY)
		r->qkey = attr->qkey;
	if (mask & IBV_QP_PKEY_INDEX)
		r->pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = attr->port_num;
	if (next == IBV_QPS_RESET) {
		atomic_store(&r->rq_head, 0);
		atomic_store(&r->rq_tail, 0);
		q->sq_posted = 0;
		atomic_store(&q->sq_retired, 0);
	}
	atomic_store(&r->state, next);
	sf_qp_unlock(r);

	if (mask & IBV_QP_QKEY)
		q->attr.qkey = attr->qkey;
	if (mask & IBV_QP_PKEY_INDEX)
		q->attr.pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		q->attr.port_num = attr->port_num;
	if (mask & IBV_QP_SQ_PSN)
		q->attr.sq_psn = attr->sq_psn;
	qp->state = next;
	if (next == IBV_QPS_ERR)
		sf_qp_flush_rq(fab, q);
	return 0;
}

SF_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			   struct ibv_qp_init_attr *init)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;
	struct sf_fabric *fab = sf_get();
	struct sf_qp *r = &fab->qps[q->index];

	(void)mask;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = atomic_load(&r->state);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = fab->devs[q->dev].active_mtu;
	attr->qkey = r->qkey;
	attr->pkey_index = (uint16_t)r->pkey_index;
	attr->port_num = (uint8_t)q->port_num;
	attr->sq_psn = q->attr.sq_psn;
	attr->cap.max_send_wr = q->max_send_wr;
	attr->cap.max_recv_wr = q->max_recv_wr;
	attr->cap.max_send_sge = q->max_send_sge;
	attr->cap.max_recv_sge = r->max_recv_sge;
	attr->cap.max_inline_data = q->max_inline;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->qp_context;
		init->send_cq = qp->send_cq;
		init->recv_cq = qp->recv_cq;
		init->srq = qp->srq;
		init->cap = attr->cap;
		init->qp_type = IBV_QPT_UD;
		init->sq_sig_all = (int)q->sq_sig_all;
	}
	return 0;
}

int sf_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;
	struct sf_fabric *fab = sf_get();
	struct sf_qp *r = &fab->qps[q->index];
	uint64_t tail = atomic_load_explicit(&r->rq_tail, memory_order_relaxed);
	int ret = 0;

	/* A QP of an SRQ has no receive queue: as posting to a full one (mlx5_post_recv's
	 * overflow check on a queue of 0 WQEs), ENOMEM. Receives go to ibv_post_srq_recv. */
	if (r->srq) {
		if (bad)
			*bad = wr;
		return ENOMEM;
	}
	for (; wr; wr = wr->next) {
		struct sf_rwqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > r->max_recv_sge) {
			ret = EINVAL;
			break;
		}
		if (tail - atomic_load_explicit(&r->rq_head, memory_order_acquire) >=
		    q->max_recv_wr) {
			ret = ENOMEM;
			break;
		}
		w = sf_rwqe_at(q->rq, q->rwqe_stride, tail, r->rq_size);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		memcpy(w->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
		tail++;
	}
	/* Pairs with the acquire load of rq_tail in the delivering process. */
	atomic_store_explicit(&r->rq_tail, tail, memory_order_release);
	if (ret && bad)
		*bad = wr;
	if (atomic_load(&r->state) == IBV_QPS_ERR)
		sf_qp_flush_rq(fab, q);
	return ret;
}

/*
 * The hang ended: send and complete the held WRs in order (a QP in the error state
 * flushes them). Called by the QP's owner thread (ibv_post_send), or by the poll of its
 * send CQ (sf_sq_release_cq) with g_held_lock held: a program that posts and polls a QP
 * from two threads at once must not use the knob on it.
 */
static void sf_sq_release_locked(struct sf_fabric *fab, struct sf_qp_priv *q)
{
	struct sf_qp *r = &fab->qps[q->index];
	struct sf_dev *d = &fab->devs[q->dev];
	struct sf_cq_priv *cq = (struct sf_cq_priv *)q->qp.send_cq;

	for (uint32_t i = 0; i < q->nheld; i++) {
		struct sf_held_wr *h = &q->held[i];

		if (atomic_load(&r->state) == IBV_QPS_ERR) {
			struct ibv_wc wc = {.wr_id = h->wr.wr_id,
					    .status = IBV_WC_WR_FLUSH_ERR,
					    .qp_num = q->qp.qp_num};

			sf_cq_push(fab, cq->index, cq->ring, &wc,
				   ((uint64_t)q->index << 40) | h->pos, false);
			continue;
		}
		sf_send_one(fab, q, r, d, &h->wr, h->len, h->inl ? h->data : NULL, h->pos);
	}
	q->nheld = 0;
	sf_sq_unlist_locked(q);
}

void sf_sq_release_cq(struct sf_fabric *fab, uint32_t cq)
{
	struct sf_qp_priv *q, *next;

	pthread_mutex_lock(&g_held_lock);
	for (q = g_held_first; q; q = next) {
		next = q->held_next;
		if (((struct sf_cq_priv *)q->qp.send_cq)->index == cq &&
		    !atomic_load_explicit(&fab->qps[q->index].sq_hang, memory_order_relaxed))
			sf_sq_release_locked(fab, q);
	}
	pthread_mutex_unlock(&g_held_lock);
}

/* ibv_post_send on a QP that hangs or holds sends: true while it hangs (hold the
 * call's sends); held sends of an ended hang are released first (order kept). */
static __attribute__((noinline)) bool sf_sq_hang_check(struct sf_fabric *fab, struct sf_qp_priv *q)
{
	if (atomic_load_explicit(&fab->qps[q->index].sq_hang, memory_order_relaxed))
		return true;
	if (q->nheld) {
		pthread_mutex_lock(&g_held_lock);
		sf_sq_release_locked(fab, q);
		pthread_mutex_unlock(&g_held_lock);
	}
	return false;
}

/* Complete a send WR with an error; the QP goes to the error state. */
static void sf_send_error(struct sf_fabric *fab, struct sf_qp_priv *q, struct ibv_send_wr *wr,
			  enum ibv_wc_status status)
{
	struct sf_cq_priv *cq = (struct sf_cq_priv *)q->qp.send_cq;
	struct ibv_wc wc = {.wr_id = wr->wr_id, .status = status, .qp_num = q->qp.qp_num};

	sf_cq_push(fab, cq->index, cq->ring, &wc, ((uint64_t)q->index << 40) | q->sq_posted, false);
	q->sq_posted++;
	atomic_store(&fab->qps[q->index].state, IBV_QPS_ERR);
	q->qp.state = IBV_QPS_ERR;
}

int sf_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;
	struct sf_fabric *fab = sf_get();
	struct sf_qp *r = &fab->qps[q->index];
	struct sf_dev *d = &fab->devs[q->dev];
	uint32_t mtu = sf_mtu_bytes(d->active_mtu);
	uint8_t inl[SF_MAX_INLINE];
	bool hold = false;
	int ret = 0;

	if (__builtin_expect(atomic_load_explicit(&r->sq_hang, memory_order_relaxed) || q->nheld,
			     0))
		hold = sf_sq_hang_check(fab, q);
	for (; wr; wr = wr->next) {
		enum ibv_qp_state st = atomic_load_explicit(&r->state, memory_order_relaxed);
		uint8_t *inline_data = NULL;
		uint64_t len = 0;

		if (st != IBV_QPS_RTS && st != IBV_QPS_ERR) {
			ret = EINVAL;
			break;
		}
		if ((wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) ||
		    wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_send_sge || !wr->wr.ud.ah) {
			ret = EINVAL;
			break;
		}
		if (q->sq_posted - atomic_load_explicit(&q->sq_retired, memory_order_acquire) >=
		    q->max_send_wr) {
			ret = ENOMEM;
			break;
		}
		for (int i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		/* A UD message is one packet: larger than the path MTU is rejected. */
		if (len > mtu || ((wr->send_flags & IBV_SEND_INLINE) && len > q->max_inline)) {
			ret = EINVAL;
			break;
		}
		if (st == IBV_QPS_ERR) {
			sf_send_error(fab, q, wr, IBV_WC_WR_FLUSH_ERR);
			continue;
		}
		if (wr->send_flags & IBV_SEND_INLINE) {
			uint32_t off = 0;

			for (int i = 0; i < wr->num_sge; i++) {
				memcpy(inl + off, (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				off += wr->sg_list[i].length;
			}
			inline_data = inl;
		} else {
			int i;

			for (i = 0; i < wr->num_sge; i++)
				if (!sf_mr_check(fab, wr->sg_list[i].lkey, wr->sg_list[i].addr,
						 wr->sg_list[i].length, r->own.pid))
					break;
			if (i < wr->num_sge) {
				sf_send_error(fab, q, wr, IBV_WC_LOC_PROT_ERR);
				continue;
			}
		}
		if (__builtin_expect(hold, 0)) {
			/* The queue hangs: accepted, neither sent nor completed (yet). */
			if (sf_sq_hold(q, wr, (uint32_t)len, inline_data)) {
				ret = ENOMEM;
				break;
			}
		} else {
			sf_send_one(fab, q, r, d, wr, (uint32_t)len, inline_data, q->sq_posted);
		}
		q->sq_posted++;
	}
	if (ret && bad)
		*bad = wr;
	return ret;
}
