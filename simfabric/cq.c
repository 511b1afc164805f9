// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Completion queues: a shared ring per CQ, filled by any process of the fabric (the
 * senders that deliver into this process's QPs, and the owner's own send completions),
 * drained by the owner with ibv_poll_cq. Completion events go to the CQ's channel.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sf.h"
#include "sf_priv.h"

/* Completion channels keep per-CQ event counts for ibv_ack_cq_events / destroy. */
struct sf_cq_events {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t got;
	uint32_t acked;
};

struct sf_cq_full {
	struct sf_cq_priv p;
	struct sf_cq_events ev;
	struct ibv_wc cur; /* ibv_create_cq_ex: the completion start/next_poll stand on */
};

/* Per-process table of our own QPs, for retiring send-queue slots on send completions. */
extern struct sf_qp_priv *g_own_qps[SF_MAX_QPS];

/* Producer-side view of each CQ's consumer index: reloaded only when the ring looks full. */
static _Atomic uint64_t g_cons_seen[SF_MAX_CQS];

int sf_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

SF_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_fabric *fab = c->fab;
	struct sf_cq_full *f;
	struct sf_cq *r;
	uint32_t i, size;

	if (cqe < 1 || cqe > 4194303 || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	/* mlx5 rounds the ring up to a power of two and reports one less. */
	size = (uint32_t)sf_roundup_pow2((uint64_t)cqe + 1);
	sf_lock(fab);
	for (i = 0; i < SF_MAX_CQS; i++)
		if (!fab->cqs[i].own.pid)
			break;
	if (i == SF_MAX_CQS) {
		sf_unlock(fab);
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	r = &fab->cqs[i];
	sf_owner_claim(&r->own);
	sf_unlock(fab);

	f->p.ring = sf_obj_create("cq", r->own.serial, size * sizeof(struct sf_cqe), NULL);
	if (!f->p.ring) {
		int e = errno;

		sf_lock(fab);
		sf_owner_release(&r->own);
		sf_unlock(fab);
		free(f);
		errno = e;
		return NULL;
	}
	r->size = size;
	r->cqe = size - 1;
	atomic_store(&r->prod, 0);
	atomic_store(&r->plock, 0);
	atomic_store(&r->cons, 0);
	atomic_store(&g_cons_seen[i], 0);
	atomic_store(&r->armed, 0);
	atomic_store(&r->error, 0);
	r->ctx = c->ctx_index;
	r->chan_pid = channel ? getpid() : 0;
	r->chan_serial = channel ? ((struct sf_comp_channel *)channel)->serial : 0;
	r->cookie = (uintptr_t)&f->p.cq;
	sf_map_register_cq(i, f->p.ring);

	f->p.index = i;
	f->p.mask = size - 1;
	f->p.cq.context = context;
	f->p.cq.channel = channel;
	f->p.cq.cq_context = cq_context;
	f->p.cq.cqe = (int)(size - 1);
	f->p.cq.handle = i;
	pthread_mutex_init(&f->p.cq.mutex, NULL);
	pthread_cond_init(&f->p.cq.cond, NULL);
	pthread_mutex_init(&f->ev.lock, NULL);
	pthread_cond_init(&f->ev.cond, NULL);
	if (channel) {
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
	return &f->p.cq;
}

/*
 * ---- ibv_create_cq_ex and the extended poll (ibv_start_poll, ibv_next_poll,
 * ibv_end_poll, ibv_wc_read_*) ----
 *
 * As mlx5 does it (rdma-core providers/mlx5/verbs.c create_cq, providers/mlx5/cq.c
 * mlx5_cq_fill_pfns): cqe 0, comp_mask bits other than IBV_CQ_INIT_ATTR_MASK_FLAGS |
 * IBV_CQ_INIT_ATTR_MASK_PD, and creation flags other than SINGLE_THREADED |
 * IGNORE_OVERRUN fail with EINVAL; wc_flags beyond CREATE_CQ_SUPPORTED_WC_FLAGS (the
 * standard flags, the two timestamps, CVLAN, FLOW_TAG, TM_INFO) with ENOTSUP. Of what
 * mlx5 accepts, simfabric refuses with EOPNOTSUPP what its device does not have (as mlx5
 * refuses WALLCLOCK without a clock page): a PD (mlx5 wants a parent domain, which the
 * simulation has none of: mlx5's EINVAL), completion timestamps (no HCA clock:
 * completion_timestamp_mask is 0), CVLAN and FLOW_TAG (raw packet QPs), TM_INFO (tag
 * matching), and IGNORE_OVERRUN (an overrun always puts the CQ in error here).
 * read_opcode, read_vendor_err and read_wc_flags are always set; each other reader only
 * when its wc_flags bit was asked for (NULL otherwise, as on mlx5). The CQ is also an
 * ordinary CQ: ibv_poll_cq, ibv_req_notify_cq and completion events work on it.
 * start_poll with attr->comp_mask set fails with EINVAL; an empty CQ gives ENOENT.
 */
#define SF_CQ_EX_MLX5_WC_FLAGS                                                                     \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_CVLAN |      \
	 IBV_WC_EX_WITH_FLOW_TAG | IBV_WC_EX_WITH_TM_INFO |                                        \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static struct sf_cq_full *sf_cqx(struct ibv_cq_ex *cqx)
{
	return (struct sf_cq_full *)cqx;
}

static int sf_cqx_next(struct ibv_cq_ex *cqx)
{
	struct sf_cq_full *f = sf_cqx(cqx);

	if (sf_poll_cq(&f->p.cq, 1, &f->cur) != 1)
		return ENOENT;
	cqx->wr_id = f->cur.wr_id;
	cqx->status = f->cur.status;
	return 0;
}

static int sf_cqx_start(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	if (attr->comp_mask)
		return EINVAL;
	return sf_cqx_next(cqx);
}

static void sf_cqx_end(struct ibv_cq_ex *cqx)
{
	(void)cqx;
}

static enum ibv_wc_opcode sf_cqx_opcode(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.opcode;
}

static uint32_t sf_cqx_vendor_err(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.vendor_err;
}

static uint32_t sf_cqx_byte_len(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.byte_len;
}

static __be32 sf_cqx_imm(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.imm_data;
}

static uint32_t sf_cqx_qp_num(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.qp_num;
}

static uint32_t sf_cqx_src_qp(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.src_qp;
}

static unsigned int sf_cqx_wc_flags(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.wc_flags;
}

static uint32_t sf_cqx_slid(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.slid;
}

static uint8_t sf_cqx_sl(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.sl;
}

static uint8_t sf_cqx_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return sf_cqx(cqx)->cur.dlid_path_bits;
}

struct ibv_cq_ex *sf_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *a)
{
	struct ibv_cq_ex *x;
	struct ibv_cq *cq;

	if (!a->cqe ||
	    (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (a->flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
				     IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wc_flags & ~(uint64_t)SF_CQ_EX_MLX5_WC_FLAGS) {
		errno = ENOTSUP;
		return NULL;
	}
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (a->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = ibv_create_cq(context, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector);
	if (!cq)
		return NULL;
	x = &((struct sf_cq_priv *)cq)->cqx;
	x->comp_mask = 0;
	x->start_poll = sf_cqx_start;
	x->next_poll = sf_cqx_next;
	x->end_poll = sf_cqx_end;
	x->read_opcode = sf_cqx_opcode;
	x->read_vendor_err = sf_cqx_vendor_err;
	x->read_wc_flags = sf_cqx_wc_flags;
	if (a->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = sf_cqx_byte_len;
	if (a->wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = sf_cqx_imm;
	if (a->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = sf_cqx_qp_num;
	if (a->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = sf_cqx_src_qp;
	if (a->wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = sf_cqx_slid;
	if (a->wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = sf_cqx_sl;
	if (a->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = sf_cqx_dlid_path_bits;
	return x;
}

SF_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct sf_cq_full *f = (struct sf_cq_full *)cq;
	struct sf_fabric *fab = sf_get();
	struct sf_cq *r = &fab->cqs[f->p.index];
	char path[256];

	/* Like libibverbs: wait until every completion event was acknowledged. */
	pthread_mutex_lock(&f->ev.lock);
	while (f->ev.got != f->ev.acked)
		pthread_cond_wait(&f->ev.cond, &f->ev.lock);
	pthread_mutex_unlock(&f->ev.lock);

	sf_lock(fab);
	for (uint32_t i = 0; i < SF_MAX_QPS; i++) {
		struct sf_qp *q = &fab->qps[i];

		if (q->own.pid == r->own.pid &&
		    (q->recv_cq == f->p.index || q->send_cq == f->p.index)) {
			sf_unlock(fab);
			return EBUSY;
		}
	}
	sf_obj_path(path, sizeof(path), "cq", r->own.pid, r->own.serial);
	sf_owner_release(&r->own);
	sf_unlock(fab);
	unlink(path);
	munmap(f->p.ring, (size_t)(f->p.mask + 1) * sizeof(struct sf_cqe));
	if (cq->channel) {
		pthread_mutex_lock(&cq->context->mutex);
		cq->channel->refcnt--;
		pthread_mutex_unlock(&cq->context->mutex);
	}
	free(f);
	return 0;
}

/*
 * SIMFABRIC_TEST_DIE_IN_CQ_PUSH=N (tests only, tests/simfabric/deadpush.c): the N-th
 * completion this process writes into another process's CQ kills it with SIGKILL in the
 * middle of the write (CQE place taken, not published): a producer killed at the worst
 * moment, on demand. Read once; 0 (unset) costs one predictable branch per push.
 */
static int64_t g_die_in_push = -1;

static void sf_cq_push_test_die(const struct sf_cq *r)
{
	if (g_die_in_push < 0) {
		const char *e = getenv("SIMFABRIC_TEST_DIE_IN_CQ_PUSH");

		g_die_in_push = e ? strtoll(e, NULL, 10) : 0;
		if (g_die_in_push < 0)
			g_die_in_push = 0;
	}
	if (g_die_in_push > 0 && r->own.pid != sf_self_pid() && --g_die_in_push == 0)
		raise(SIGKILL);
}

/*
 * Producers (the owner's send completions, and every process that delivers into one of
 * its QPs) write under the CQ's pid lock and advance `prod` only after the CQE is
 * published. A lock-free claim (a compare-and-swap of prod, then the write, then seq)
 * left a hole when the claiming process was killed between the two: the owner polls in
 * order and stopped at the unpublished CQE for good, the CQ filled and every later
 * completion was lost; the send queue of a bridge stopped retiring after its HA peer's
 * SIGKILL (docs/operations.md, "tx wedge"). A real CQ is written by the HCA alone, which a
 * dying process does not stop. Here a producer that dies holding the lock is taken over
 * by the next one (sf_pidlock_lock): if the dead one had published its CQE but not yet
 * advanced prod, prod moves past it; if it had not published, its half-written CQE is
 * overwritten. Either way the owner never waits on a dead process.
 */
int sf_cq_push(struct sf_fabric *fab, uint32_t cqi, struct sf_cqe *ring, const struct ibv_wc *wc,
	       uint64_t sq_index, bool solicited)
{
	struct sf_cq *r = &fab->cqs[cqi];
	uint64_t prod, cons = atomic_load_explicit(&g_cons_seen[cqi], memory_order_relaxed);
	struct sf_cqe *e;
	uint32_t armed;

	sf_pidlock_lock(&r->plock);
	prod = atomic_load_explicit(&r->prod, memory_order_relaxed);
	e = &ring[prod & (r->size - 1)];
	if (atomic_load_explicit(&e->seq, memory_order_relaxed) == prod + 1) {
		/* Published by a producer that died before it advanced prod. */
		prod++;
		atomic_store_explicit(&r->prod, prod, memory_order_relaxed);
		e = &ring[prod & (r->size - 1)];
	}
	if (prod - cons >= r->cqe) {
		/* Pairs with the release store of cons in sf_poll_cq. */
		cons = atomic_load_explicit(&r->cons, memory_order_acquire);
		atomic_store_explicit(&g_cons_seen[cqi], cons, memory_order_relaxed);
		if (prod - cons >= r->cqe) {
			sf_pidlock_unlock(&r->plock);
			if (!atomic_exchange(&r->error, 1))
				sf_async_post_ctx(fab, r->ctx, IBV_EVENT_CQ_ERR, r->cookie, 0);
			return -EOVERFLOW;
		}
	}
	e->wc = *wc;
	e->sq_index = sq_index;
	if (__builtin_expect(g_die_in_push != 0, 0))
		sf_cq_push_test_die(r);
	atomic_store_explicit(&e->seq, prod + 1, memory_order_release);
	atomic_store_explicit(&r->prod, prod + 1, memory_order_relaxed);
	sf_pidlock_unlock(&r->plock);

	/* A CQ without a completion channel can never be armed. */
	if (!r->chan_pid)
		return 0;
	/* Pairs with the seq_cst store in sf_req_notify_cq: either we see the arm, or the
	 * owner's poll after arming sees this completion. */
	atomic_thread_fence(memory_order_seq_cst);
	armed = atomic_load_explicit(&r->armed, memory_order_relaxed);
	if (armed && (armed == 1 || solicited || wc->status != IBV_WC_SUCCESS) &&
	    atomic_exchange(&r->armed, 0)) {
		struct sf_msg m = {.kind = SF_MSG_CQ, .cookie = r->cookie};

		sf_endpoint_send(r->chan_pid, r->chan_serial, &m);
	}
	return 0;
}

int sf_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct sf_cq_priv *p = (struct sf_cq_priv *)cq;
	struct sf_fabric *fab = sf_get();
	struct sf_cq *r = &fab->cqs[p->index];
	uint64_t cons = atomic_load_explicit(&r->cons, memory_order_relaxed);
	int i;

	for (i = 0; i < n; i++) {
		struct sf_cqe *e = &p->ring[cons & p->mask];

		if (atomic_load_explicit(&e->seq, memory_order_acquire) != cons + 1)
			break;
		wc[i] = e->wc;
		if (e->sq_index != UINT64_MAX) {
			uint32_t qi = (uint32_t)(e->sq_index >> 40);
			struct sf_qp_priv *q = g_own_qps[qi];

			/* UD sends complete in order: everything up to this WR is retired. */
			if (q)
				atomic_store_explicit(&q->sq_retired,
						      (e->sq_index & ((1ull << 40) - 1)) + 1,
						      memory_order_release);
		}
		cons++;
	}
	if (i)
		atomic_store_explicit(&r->cons, cons, memory_order_release);
	else if (__builtin_expect(atomic_load_explicit(&g_sf_sq_held, memory_order_relaxed), 0))
		sf_sq_release_cq(fab, p->index); /* a hung send queue's held sends (qp.c) */
	return i;
}

int sf_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct sf_cq_priv *p = (struct sf_cq_priv *)cq;
	struct sf_fabric *fab = sf_get();

	struct sf_cq *r = &fab->cqs[p->index];
	uint64_t cons;

	if (!cq->channel)
		return EINVAL;
	atomic_store(&r->armed, solicited_only ? 2 : 1);
	/*
	 * mlx5 arms a CQ with the index of the next CQE the consumer will poll (the CQ
	 * doorbell carries cons_index): an event is due once a CQE exists at that index, so
	 * arming a CQ that still holds unpolled completions raises the event at once. The
	 * verbs man page promises an event only for a new CQE; applications arm, then poll
	 * again, and work either way. Solicited-only arms wait for a new solicited CQE.
	 * The seq_cst store above pairs with the fence in sf_cq_push: a completion pushed
	 * concurrently either sees the arm or is seen here.
	 */
	if (solicited_only)
		return 0;
	cons = atomic_load_explicit(&r->cons, memory_order_acquire);
	if (atomic_load_explicit(&p->ring[cons & p->mask].seq, memory_order_acquire) == cons + 1 &&
	    atomic_exchange(&r->armed, 0)) {
		struct sf_msg m = {.kind = SF_MSG_CQ, .cookie = r->cookie};

		sf_endpoint_send(r->chan_pid, r->chan_serial, &m);
	}
	return 0;
}

/*
 * ibv_get_cq_event: the next completion event of the channel. Blocks in one recv() on
 * the channel's socket, never retried, as rdma-core blocks in one read() of the uverbs
 * event fd (libibverbs/verbs.c): when a signal handler runs, the kernel's
 * ib_uverbs_event_read (drivers/infiniband/core/uverbs_main.c) leaves its
 * wait_event_interruptible with -ERESTARTSYS, so the read is restarted when the handler
 * was installed with SA_RESTART and fails with EINTR without it. A blocking recv() on
 * an AF_UNIX socket without a receive timeout answers a signal the same way (the socket
 * layer's sock_intr_errno; signal(7)), so the call returns -1/EINTR exactly where
 * rdma-core does: programs such as qperf end a timed wait with a SIGALRM handler
 * installed without SA_RESTART. ibv_get_async_event and rdma_get_cm_event (ucma's
 * ucma_get_event, the same wait) behave alike. A non-blocking fd gives -1/EAGAIN.
 */
SF_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			       void **cq_context)
{
	struct sf_msg m;
	struct sf_cq_full *f;
	ssize_t n;

	/* One recv, never retried (see above). */
	n = recv(channel->fd, &m, sizeof(m), 0);
	if (n != (ssize_t)sizeof(m) || m.kind != SF_MSG_CQ) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	f = (struct sf_cq_full *)(uintptr_t)m.cookie;
	*cq = &f->p.cq;
	*cq_context = f->p.cq.cq_context;
	pthread_mutex_lock(&f->ev.lock);
	f->ev.got++;
	pthread_mutex_unlock(&f->ev.lock);
	return 0;
}

SF_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct sf_cq_full *f = (struct sf_cq_full *)cq;

	pthread_mutex_lock(&f->ev.lock);
	f->ev.acked += nevents;
	pthread_cond_broadcast(&f->ev.cond);
	pthread_mutex_unlock(&f->ev.lock);
}
