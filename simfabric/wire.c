// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The wire: delivery of a UD send to the QPs it reaches, in the sender's process.
 *
 * Per destination QP: check state and Q_Key, the receiving port, injected loss; then
 * under the QP's delivery lock pop one posted receive, write the 40-byte network header
 * and the payload into the receive buffer (one copy), publish the completion. A send
 * reaches, for a multicast address, every QP attached to the group on the segment
 * (including the sender's own QP unless it was created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB); on IB a QP of another port only if the sending
 * port is a member of the group and the receiving port a full member (the SA programs
 * the switches from the joins); for a unicast address, the QP with that number on the
 * port with that LID (IB) or GID (RoCE).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "sf.h"
#include "sf_priv.h"

#define SF_GRH_NEXT_HDR_BTH 0x1b
#define SF_IPPROTO_UDP	    17
#define SF_IP_DF	    0x4000
/* wc.sl of a RoCE receive on mlx5: the packet type (UDP bit 3 | L3 header type). */
#define SF_ROCE_PKT_IPV6    0x9
#define SF_ROCE_PKT_IPV4    0xa
#define SF_LOCK_SPINS_CHECK (1u << 20)

/* ---- the delivery locks of QPs and SRQs ---- */

/* A spinlock holding its holder's pid, so that a waiter can break it when the holder died. */
void sf_pidlock_lock(_Atomic int32_t *lock)
{
	int32_t me = sf_self_pid();
	uint32_t spins = 0;

	for (;;) {
		int32_t exp = 0;

		if (atomic_compare_exchange_weak_explicit(lock, &exp, me, memory_order_acquire,
							  memory_order_relaxed))
			return;
		sf_cpu_relax();
		if (++spins < SF_LOCK_SPINS_CHECK)
			continue;
		/* Held for a long time: if the holder died, take the lock over. */
		spins = 0;
		exp = atomic_load(lock);
		if (exp && exp != me && !sf_pid_alive(exp, 0) &&
		    atomic_compare_exchange_strong(lock, &exp, me))
			return;
	}
}

void sf_pidlock_unlock(_Atomic int32_t *lock)
{
	atomic_store_explicit(lock, 0, memory_order_release);
}

void sf_qp_lock(struct sf_qp *qp)
{
	sf_pidlock_lock(&qp->lock);
}

void sf_qp_unlock(struct sf_qp *qp)
{
	sf_pidlock_unlock(&qp->lock);
}

void sf_srq_lock(struct sf_srq *srq)
{
	sf_pidlock_lock(&srq->lock);
}

void sf_srq_unlock(struct sf_srq *srq)
{
	sf_pidlock_unlock(&srq->lock);
}

/* ---- mappings of other processes' rings ---- */

struct sf_ring_map {
	_Atomic uint64_t gen;
	void *ring;
};

static struct sf_ring_map g_rq_maps[SF_MAX_QPS];
static struct sf_ring_map g_cq_maps[SF_MAX_CQS];
static struct sf_ring_map g_srq_maps[SF_MAX_SRQS];
static pthread_mutex_t g_map_lock = PTHREAD_MUTEX_INITIALIZER;

void sf_map_register_cq(uint32_t index, struct sf_cqe *ring)
{
	struct sf_fabric *fab = sf_get();

	pthread_mutex_lock(&g_map_lock);
	g_cq_maps[index].ring = ring;
	atomic_store_explicit(&g_cq_maps[index].gen, fab->cqs[index].own.gen, memory_order_release);
	pthread_mutex_unlock(&g_map_lock);
}

void sf_map_register_rq(uint32_t index, uint8_t *rq)
{
	struct sf_fabric *fab = sf_get();

	pthread_mutex_lock(&g_map_lock);
	g_rq_maps[index].ring = rq;
	atomic_store_explicit(&g_rq_maps[index].gen, fab->qps[index].own.gen, memory_order_release);
	pthread_mutex_unlock(&g_map_lock);
}

void sf_map_register_srq(uint32_t index, uint8_t *ring)
{
	struct sf_fabric *fab = sf_get();

	pthread_mutex_lock(&g_map_lock);
	g_srq_maps[index].ring = ring;
	atomic_store_explicit(&g_srq_maps[index].gen, fab->srqs[index].own.gen,
			      memory_order_release);
	pthread_mutex_unlock(&g_map_lock);
}

/*
 * The ring of object `own` in this process, mapping it on first use. A stale mapping (the
 * slot was reused) is replaced; the old one is left mapped since another thread of this
 * process may still be delivering through it.
 */
static void *sf_ring_get(struct sf_ring_map *m, const struct sf_owner *own, const char *kind,
			 size_t len)
{
	uint64_t gen = own->gen;
	void *p;

	if (atomic_load_explicit(&m->gen, memory_order_acquire) == gen)
		return m->ring;
	pthread_mutex_lock(&g_map_lock);
	if (atomic_load(&m->gen) != gen) {
		p = sf_obj_map(kind, own->pid, own->serial, len);
		if (!p) {
			pthread_mutex_unlock(&g_map_lock);
			return NULL;
		}
		m->ring = p;
		atomic_store_explicit(&m->gen, gen, memory_order_release);
	}
	p = m->ring;
	pthread_mutex_unlock(&g_map_lock);
	return p;
}

/* ---- loss ---- */

static __thread uint64_t t_rng;

bool sf_wire_lose(struct sf_fabric *fab, uint32_t seg)
{
	uint32_t ppm = atomic_load_explicit(&fab->segs[seg].loss_ppm, memory_order_relaxed);

	if (!ppm)
		return false;
	if (!t_rng) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		t_rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)gettid() ^ 0x9e3779b97f4a7c15ull;
	}
	t_rng ^= t_rng << 13;
	t_rng ^= t_rng >> 7;
	t_rng ^= t_rng << 17;
	return t_rng % 1000000 < ppm;
}

/* ---- headers ---- */

static uint16_t sf_ip_csum(const uint8_t *h, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void sf_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void sf_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * The 40 bytes a receiver finds in front of the payload: the IB GRH, or for RoCEv2 the
 * IPv4 header at offset 20 (bytes 0-19 zero, as rxe) or the IPv6 header.
 */
static void sf_wire_header(struct sf_fabric *fab, struct sf_tx *tx, const struct sf_ah_priv *ah)
{
	const struct sf_ah_hot *a = &ah->hot; /* one cache line: the send reads nothing else */
	uint32_t pad = (4 - (tx->len & 3)) & 3;
	uint32_t transport = SF_BTH_LEN + SF_DETH_LEN + (tx->with_imm ? SF_IMM_LEN : 0) + tx->len +
			     pad + SF_ICRC_LEN;
	uint8_t *h = tx->hdr;

	memset(h, 0, SF_GRH_LEN);
	tx->has_grh = a->is_global;
	if (!a->is_global)
		return;
	if (tx->sdev->link == SF_LINK_ETH && sf_gid_is_ipv4(&a->sgid)) {
		uint8_t *ip = h + SF_IPV4_OFF;
		/* Per-thread IPv4 identification: ids only need to vary between packets. */
		static __thread uint16_t t_ip_id;
		uint16_t id = t_ip_id++;

		ip[0] = 0x45;
		ip[1] = a->traffic_class;
		sf_put16(ip + 2, (uint16_t)(SF_IPV4_LEN + SF_UDP_LEN + transport));
		sf_put16(ip + 4, id);
		sf_put16(ip + 6, SF_IP_DF);
		ip[8] = a->hop_limit;
		ip[9] = SF_IPPROTO_UDP;
		memcpy(ip + 12, &a->sgid.raw[12], 4);
		memcpy(ip + 16, &a->dgid.raw[12], 4);
		sf_put16(ip + 10, sf_ip_csum(ip, SF_IPV4_LEN));
		return;
	}
	/* IB GRH, or the IPv6 header of RoCEv2 over IPv6 (same layout). */
	sf_put32(h, 6u << 28 | (uint32_t)a->traffic_class << 20 | (a->flow_label & 0xfffff));
	if (tx->sdev->link == SF_LINK_ETH) {
		sf_put16(h + 4, (uint16_t)(SF_UDP_LEN + transport));
		h[6] = SF_IPPROTO_UDP;
	} else {
		sf_put16(h + 4, (uint16_t)transport);
		h[6] = SF_GRH_NEXT_HDR_BTH;
	}
	h[7] = a->hop_limit;
	memcpy(h + 8, a->sgid.raw, 16);
	memcpy(h + 24, a->dgid.raw, 16);
	(void)fab;
}

/* ---- delivery ---- */

/* Copy `n` bytes from the sender's gather list, starting at byte `off`, to dst. */
void sf_wire_gather(const struct sf_tx *tx, uint32_t off, uint8_t *dst, uint32_t n)
{
	const struct ibv_send_wr *wr = tx->wr;

	if (tx->inline_data) {
		memcpy(dst, tx->inline_data + off, n);
		return;
	}
	for (int i = 0; i < wr->num_sge && n; i++) {
		uint32_t l = wr->sg_list[i].length;
		uint32_t c;

		if (off >= l) {
			off -= l;
			continue;
		}
		c = l - off < n ? l - off : n;
		memcpy(dst, (uint8_t *)(uintptr_t)wr->sg_list[i].addr + off, c);
		dst += c;
		n -= c;
		off = 0;
	}
}

/*
 * Take the oldest receive WQE of SRQ `s` (ring `ring` mapped here) into `dst`, under the
 * SRQ's lock; NULL when none is posted. A take that leaves fewer WQEs than the armed
 * limit disarms it and posts IBV_EVENT_SRQ_LIMIT_REACHED to the owner (once per arming,
 * as the HCA: ibv_modify_srq(3)). The WQE is copied out so that the lock is not held
 * while the payload is written: QPs sharing the SRQ receive in parallel.
 */
static struct sf_rwqe *sf_srq_pop(struct sf_fabric *fab, struct sf_srq *s, uint8_t *ring,
				  struct sf_rwqe *dst)
{
	const struct sf_rwqe *w;
	uint64_t head, tail;
	uint32_t limit;
	bool fire = false;

	sf_srq_lock(s);
	head = atomic_load_explicit(&s->head, memory_order_relaxed);
	/* Pairs with the release store of tail in sf_post_srq_recv. */
	tail = atomic_load_explicit(&s->tail, memory_order_acquire);
	if (head == tail) {
		sf_srq_unlock(s);
		return NULL;
	}
	w = sf_rwqe_at(ring, s->stride, head, s->size);
	memcpy(dst, w, 16 + sizeof(struct ibv_sge) * (size_t)w->num_sge);
	atomic_store_explicit(&s->head, head + 1, memory_order_release);
	limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
	if (limit && tail - head - 1 < limit && atomic_exchange(&s->limit, 0))
		fire = true;
	sf_srq_unlock(s);
	if (fire)
		sf_async_post_ctx(fab, s->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, s->cookie, 0);
	return dst;
}

static void sf_deliver(struct sf_fabric *fab, struct sf_tx *tx, uint32_t qpi)
{
	struct sf_qp *r = &fab->qps[qpi];
	struct sf_dev *rdev = &fab->devs[r->dev];
	uint32_t need = SF_GRH_LEN + tx->len, total = 0, done = 0;
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	struct sf_owner own = r->own;
	struct sf_srq *srq = NULL;
	union {
		struct sf_rwqe w;
		uint8_t raw[16 + sizeof(struct ibv_sge) * SF_MAX_SRQ_SGE];
	} wq;
	struct sf_cq *cq;
	struct sf_rwqe *w;
	struct ibv_wc wc;
	uint8_t *rq;
	struct sf_cqe *ring;
	uint64_t head;
	uint32_t st;

	/* A QP that is not ready to receive (a QP receives from RTR on, ibv_modify_qp(3);
	 * in Reset, Init or Error what reaches it is discarded), or one being destroyed:
	 * counted, so that no copy leaves the fabric without a counter naming it. */
	st = atomic_load_explicit(&r->state, memory_order_acquire);
	if (!own.pid)
		return; /* a free slot: no QP, no port to count on */
	if (st != IBV_QPS_RTR && st != IBV_QPS_RTS) {
		SF_CTR_ADD(fab, r->dev, qp_not_ready, 1);
		return;
	}
	/* Only the sender's MTU was checked at post time: a packet larger than the receiving
	 * port's MTU is dropped on the way (the switch port, or the NIC's MAC). */
	if (tx->len > sf_mtu_bytes(rdev->active_mtu)) {
		SF_CTR_ADD(fab, r->dev, mtu_drop, 1);
		return;
	}
	if (tx->qkey != r->qkey) {
		SF_CTR_ADD(fab, r->dev, qkey_viol, 1);
		return;
	}
	if (atomic_load_explicit(&rdev->port_state, memory_order_relaxed) != IBV_PORT_ACTIVE) {
		SF_CTR_ADD(fab, r->dev, port_down, 1);
		return;
	}
	if (sf_wire_lose(fab, rdev->seg)) {
		SF_CTR_ADD(fab, r->dev, sim_loss, 1);
		return;
	}
	{
		/* A capture (simfab capture): one load while none runs. */
		uint64_t cg = atomic_load_explicit(&fab->cap_gen, memory_order_acquire);

		if (__builtin_expect(cg != 0, 0) && !(tx->cap_seen & (1u << r->dev)))
			sf_cap_record(fab, tx, r->dev, (uint32_t)cg);
	}
	if (r->srq) {
		/* A QP of a shared receive queue: the buffer comes from the SRQ. */
		srq = &fab->srqs[r->srq - 1];
		rq = sf_ring_get(&g_srq_maps[r->srq - 1], &srq->own, "srq",
				 (size_t)srq->size * srq->stride);
	} else if (!r->rq_size) {
		/* A QP made without a receive queue (max_recv_wr 0): never a receive posted. */
		SF_CTR_ADD(fab, r->dev, out_of_buffer, 1);
		return;
	} else {
		rq = sf_ring_get(&g_rq_maps[qpi], &own, "rq",
				 (size_t)r->rq_size * sf_rwqe_stride(r->max_recv_sge));
	}
	cq = &fab->cqs[r->recv_cq];
	ring = sf_ring_get(&g_cq_maps[r->recv_cq], &cq->own, "cq",
			   cq->size * sizeof(struct sf_cqe));
	if (!rq || !ring) {
		/* Its queues cannot be mapped: the QP's process is going away. */
		SF_CTR_ADD(fab, r->dev, qp_not_ready, 1);
		return;
	}

	sf_qp_lock(r);
	if (r->own.gen != own.gen || atomic_load(&r->state) < IBV_QPS_RTR ||
	    atomic_load(&r->state) > IBV_QPS_RTS) {
		SF_CTR_ADD(fab, r->dev, qp_not_ready, 1);
		goto out;
	}
	if (srq) {
		head = 0;
		w = sf_srq_pop(fab, srq, rq, &wq.w);
		if (!w) {
			SF_CTR_ADD(fab, r->dev, out_of_buffer, 1);
			goto out;
		}
	} else {
		head = atomic_load_explicit(&r->rq_head, memory_order_relaxed);
		if (head == atomic_load_explicit(&r->rq_tail, memory_order_acquire)) {
			SF_CTR_ADD(fab, r->dev, out_of_buffer, 1);
			goto out;
		}
		w = sf_rwqe_at(rq, sf_rwqe_stride(r->max_recv_sge), head, r->rq_size);
	}
	for (uint32_t i = 0; i < w->num_sge; i++)
		total += w->sge[i].length;
	if (total < need) {
		status = IBV_WC_LOC_LEN_ERR;
		SF_CTR_ADD(fab, r->dev, len_err, 1);
	}
	for (uint32_t i = 0; i < w->num_sge && status == IBV_WC_SUCCESS && done < need; i++) {
		const struct ibv_sge *s = &w->sge[i];
		uint32_t c = s->length < need - done ? s->length : need - done;
		struct sf_mr *mr = sf_mr_check(fab, s->lkey, s->addr, c, own.pid);
		uint8_t *dst;
		uint32_t h;

		if (!mr || !(mr->access & IBV_ACCESS_LOCAL_WRITE) ||
		    !(dst = sf_mr_peer_ptr(fab, s->lkey >> 8, s->addr, c))) {
			status = IBV_WC_LOC_PROT_ERR;
			SF_CTR_ADD(fab, r->dev, prot_err, 1);
			break;
		}
		/* The header part of this segment, then the payload part. */
		h = done < SF_GRH_LEN ? (SF_GRH_LEN - done < c ? SF_GRH_LEN - done : c) : 0;
		if (h && tx->has_grh)
			memcpy(dst, tx->hdr + done, h);
		if (c > h)
			sf_wire_gather(tx, done + h - SF_GRH_LEN, dst + h, c - h);
		done += c;
	}

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = status;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = r->qpn;
	if (status == IBV_WC_SUCCESS) {
		wc.byte_len = need;
		wc.src_qp = tx->sqp->qpn;
		wc.wc_flags = (tx->has_grh ? IBV_WC_GRH : 0) | (tx->with_imm ? IBV_WC_WITH_IMM : 0);
		wc.imm_data = tx->with_imm ? tx->wr->imm_data : 0;
		wc.pkey_index = (uint16_t)r->pkey_index;
		wc.slid = tx->sdev->link == SF_LINK_IB ? (uint16_t)tx->sdev->lid : 0;
		/* On RoCE mlx5 reports the network header type in sl (rdma-core
		 * providers/mlx5/cq.c: sl = CQE flags_rqpn bits 24-27; PRM: bit 3 UDP,
		 * bits 0-2 0 GRH, 1 IPv6, 2 IPv4): RoCEv2 over IPv4 0xA, over IPv6 0x9.
		 * UCX's UD transport reads it to find the destination address among the
		 * 40 bytes. On IB it is the SL, 0 here. */
		if (tx->sdev->link == SF_LINK_ETH && tx->has_grh)
			wc.sl = tx->hdr[0] >> 4 == 6 ? SF_ROCE_PKT_IPV6 : SF_ROCE_PKT_IPV4;
		else
			wc.sl = 0;
	}
	/* The WQE is consumed before its completion is visible: an owner that polled the
	 * completion may post a receive into the slot at once (post_recv reads rq_head). On
	 * a CQ overrun the packet is lost and the QP goes to the error state, like the HCA.
	 * (An SRQ's WQE was taken when it was copied out.) */
	if (!srq)
		atomic_store_explicit(&r->rq_head, head + 1, memory_order_release);
	if (sf_cq_push(fab, r->recv_cq, ring, &wc, UINT64_MAX, tx->solicited)) {
		SF_CTR_ADD(fab, r->dev, cq_overrun, 1);
		atomic_store(&r->state, IBV_QPS_ERR);
		goto out;
	}
	if (status != IBV_WC_SUCCESS) {
		atomic_store(&r->state, IBV_QPS_ERR);
		goto out;
	}
	sf_qp_unlock(r);
	SF_CTR_ADD(fab, r->dev, rcv_pkts, 1);
	SF_CTR_ADD(fab, r->dev, rcv_bytes, tx->len);
	return;
out:
	sf_qp_unlock(r);
}

/* The group an AH sends to, cached in the AH while the group table does not change. */
static struct sf_group *sf_ah_group(struct sf_fabric *fab, struct sf_ah_priv *ah)
{
	uint64_t gg = atomic_load_explicit(&fab->groups_gen, memory_order_acquire);
	uint32_t seg = fab->devs[ah->dev].seg;
	struct sf_group *g;

	if (ah->group != UINT32_MAX) {
		g = &fab->groups[ah->group];
		if (atomic_load_explicit(&g->in_use, memory_order_acquire) &&
		    g->gen == ah->group_gen)
			return g;
	} else if (ah->groups_gen == gg) {
		return NULL;
	}
	g = ah->attr.is_global ? sf_group_find(fab, seg, &ah->attr.grh.dgid)
			       : sf_group_find_mlid(fab, seg, ah->attr.dlid);
	ah->groups_gen = gg;
	ah->group = g ? (uint32_t)(g - fab->groups) : UINT32_MAX;
	ah->group_gen = g ? g->gen : 0;
	return g;
}

/*
 * One attached QP `v` (index + 1) of the group: HCA replication on the sending port
 * (not to the sender itself with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB); on IB another port
 * only if the sending port is a member and the receiving one a full member.
 */
static inline void sf_wire_member(struct sf_fabric *fab, struct sf_tx *tx, uint32_t v, uint32_t any,
				  uint32_t full)
{
	uint32_t sdev = tx->qp->dev;
	struct sf_qp *r = &fab->qps[v - 1];

	if (r->dev == sdev) {
		if (v - 1 == tx->qp->index && r->block_self_mcast)
			return;
	} else if (tx->sdev->link == SF_LINK_IB &&
		   (!(any & 1u << sdev) || !(full & (1u << r->dev)))) {
		SF_CTR_ADD(fab, r->dev, no_member, 1);
		return;
	}
	sf_deliver(fab, tx, v - 1);
}

/*
 * Rebuild the AH's snapshot of its group's delivery as of members_gen `mg` (read before
 * the group, acquire): a change made after that read bumps members_gen again, so a
 * snapshot that caught half of it is rebuilt at the next send. One thread publishes at a
 * time (snap_busy); the others use what they read. `snap` gets the result either way.
 */
static void sf_ah_snap(struct sf_fabric *fab, struct sf_ah_priv *ah, uint64_t mg,
		       struct sf_ah_hot *snap)
{
	struct sf_group *g = sf_ah_group(fab, ah);
	struct sf_ah_hot *h = &ah->hot;
	uint32_t n = 0;

	snap->snap_any = snap->snap_full = 0;
	if (g) {
		uint32_t ns = atomic_load_explicit(&g->nslots, memory_order_acquire);

		snap->snap_any = atomic_load_explicit(&g->any_mask, memory_order_relaxed);
		snap->snap_full = atomic_load_explicit(&g->full_mask, memory_order_relaxed);
		for (uint32_t s = 0; s < ns && n != SF_AH_SNAP_NONE; s++) {
			uint32_t v = atomic_load_explicit(&g->slots[s], memory_order_acquire);

			if (!v)
				continue;
			if (n == SF_AH_SNAP_QPS)
				n = SF_AH_SNAP_NONE;
			else
				snap->snap_qp[n++] = v;
		}
	}
	snap->snap_n = (uint8_t)n;
	if (atomic_exchange_explicit(&ah->snap_busy, 1, memory_order_acquire))
		return;
	/* Seqlock-like: 0 while the fields change, pairs with the loads in sf_wire_mcast. */
	atomic_store_explicit(&h->snap_gen, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	h->snap_n = snap->snap_n;
	h->snap_any = snap->snap_any;
	h->snap_full = snap->snap_full;
	memcpy(h->snap_qp, snap->snap_qp, sizeof(h->snap_qp));
	atomic_store_explicit(&h->snap_gen, (uint32_t)mg + 1, memory_order_release);
	atomic_store_explicit(&ah->snap_busy, 0, memory_order_release);
}

static void sf_wire_mcast(struct sf_fabric *fab, struct sf_tx *tx, struct sf_ah_priv *ah)
{
	/* Pairs with the release increment after each membership change (groups.c). */
	uint64_t mg = atomic_load_explicit(&fab->members_gen, memory_order_acquire);
	const struct sf_ah_hot *h = &ah->hot;
	struct sf_ah_hot snap;
	uint32_t sg = atomic_load_explicit(&h->snap_gen, memory_order_acquire);
	struct sf_group *g;
	uint32_t ns, any, full;

	snap.snap_n = h->snap_n;
	snap.snap_any = h->snap_any;
	snap.snap_full = h->snap_full;
	memcpy(snap.snap_qp, h->snap_qp, sizeof(snap.snap_qp));
	atomic_thread_fence(memory_order_acquire);
	if (sg != (uint32_t)mg + 1 ||
	    atomic_load_explicit(&h->snap_gen, memory_order_relaxed) != sg)
		sf_ah_snap(fab, ah, mg, &snap);
	if (snap.snap_n != SF_AH_SNAP_NONE) {
		for (uint32_t i = 0; i < snap.snap_n; i++)
			sf_wire_member(fab, tx, snap.snap_qp[i], snap.snap_any, snap.snap_full);
		return;
	}
	/* More members than the AH keeps: walk the group's slots. */
	g = sf_ah_group(fab, ah);
	if (!g)
		return;
	any = atomic_load_explicit(&g->any_mask, memory_order_relaxed);
	full = atomic_load_explicit(&g->full_mask, memory_order_relaxed);
	ns = atomic_load_explicit(&g->nslots, memory_order_acquire);
	for (uint32_t s = 0; s < ns; s++) {
		uint32_t v = atomic_load_explicit(&g->slots[s], memory_order_acquire);

		if (v)
			sf_wire_member(fab, tx, v, any, full);
	}
}

static void sf_wire_ucast(struct sf_fabric *fab, struct sf_tx *tx, struct sf_ah_priv *ah)
{
	uint32_t qpn = tx->wr->wr.ud.remote_qpn;
	uint32_t seg = tx->sdev->seg;
	struct sf_qp *r;
	int dev;

	if (ah->uc_gen && ah->uc_qpn == qpn) {
		r = &fab->qps[ah->uc_qpi];
		if (r->own.gen == ah->uc_gen) {
			sf_deliver(fab, tx, ah->uc_qpi);
			return;
		}
	}
	if (tx->sdev->link == SF_LINK_IB && !ah->attr.is_global)
		dev = sf_dev_by_lid(fab, seg, ah->attr.dlid);
	else
		dev = sf_dev_by_gid(fab, &ah->attr.grh.dgid, NULL);
	if (dev < 0 || fab->devs[dev].seg != seg)
		return;
	for (uint32_t i = 0; i < SF_MAX_QPS; i++) {
		r = &fab->qps[i];
		if (r->own.pid && r->dev == (uint32_t)dev && r->qpn == qpn) {
			ah->uc_qpn = qpn;
			ah->uc_qpi = i;
			ah->uc_gen = r->own.gen;
			sf_deliver(fab, tx, i);
			return;
		}
	}
}

void sf_wire_send(struct sf_fabric *fab, struct sf_tx *tx, struct sf_ah_priv *ah)
{
	if (atomic_load_explicit(&tx->sdev->port_state, memory_order_relaxed) != IBV_PORT_ACTIVE) {
		SF_CTR_ADD(fab, tx->qp->dev, port_down, 1);
		return;
	}
	tx->cap_seen = 0;
	tx->dlid = ah->hot.dlid;
	SF_CTR_ADD(fab, tx->qp->dev, xmit_pkts, 1);
	SF_CTR_ADD(fab, tx->qp->dev, xmit_bytes, tx->len);
	sf_wire_header(fab, tx, ah);
	if (tx->wr->wr.ud.remote_qpn == SF_MCAST_QPN)
		sf_wire_mcast(fab, tx, ah);
	else
		sf_wire_ucast(fab, tx, ah);
}
