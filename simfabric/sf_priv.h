/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Internal to the simulated libibverbs: the process-local halves of the verbs objects
 * (what the application's pointers point to) and the delivery engine.
 */
#ifndef SIMFABRIC_SF_PRIV_H
#define SIMFABRIC_SF_PRIV_H

#include <sched.h>
#include <infiniband/verbs.h>

#include "sf.h"

#pragma GCC visibility push(hidden)

struct sf_device {
	struct ibv_device dev;
	uint32_t index;
};

struct sf_context {
	uint32_t dev;
	uint32_t ctx_index; /* fab->ctxs */
	struct sf_fabric *fab;
	struct verbs_context vctx; /* ibv_context is its last member */
};

static inline struct sf_context *sf_ctx_of(struct ibv_context *c)
{
	return (struct sf_context *)((char *)c - offsetof(struct sf_context, vctx.context));
}

struct sf_comp_channel {
	struct ibv_comp_channel ch;
	uint32_t serial;
};

struct sf_cq_priv {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cqx; /* ibv_create_cq_ex: begins with ibv_cq's members */
	};
	uint32_t index; /* fab->cqs */
	uint32_t mask;
	struct sf_cqe *ring;
	int32_t chan_pid;
};

struct sf_wr_batch;

struct sf_qp_priv {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qpx; /* QPs created with send_ops_flags (ibv_qp_to_qp_ex) */
	};
	uint32_t index; /* fab->qps */
	uint32_t dev;
	uint32_t max_send_wr;
	uint32_t max_send_sge;
	uint32_t max_inline;
	uint32_t max_recv_wr;
	uint32_t sq_sig_all;
	uint32_t rwqe_stride;	     /* bytes per receive WQE */
	uint8_t *rq;		     /* the shared receive ring */
	uint64_t sq_posted;	     /* WRs posted (owner thread) */
	_Atomic uint64_t sq_retired; /* WRs retired by polled send completions */
	struct ibv_qp_attr attr;     /* last modify, for query */
	uint32_t create_flags;
	uint32_t port_num;
	struct sf_wr_batch *wrb; /* the ibv_wr_* batch being built; NULL: not extended */
	/* Sends held while the send queue hangs (qp.c, sf_sq_hold): nheld of them, in
	 * order; the QP is then on the process's list of such QPs (held_next). */
	struct sf_held_wr *held;
	uint32_t nheld;
	bool held_listed;
	struct sf_qp_priv *held_next;
};

/*
 * QPs of this process holding sends of a hung send queue (qp.c): ibv_poll_cq of a send CQ
 * that finds nothing releases those whose hang ended (sf_sq_release_cq). Nonzero only
 * while a QP of the process holds sends, so the poll pays one load otherwise.
 */
extern _Atomic uint32_t g_sf_sq_held;
void sf_sq_release_cq(struct sf_fabric *fab, uint32_t cq);

/* The process-local half of a shared receive queue (qp.c). */
struct sf_srq_priv {
	struct ibv_srq srq;
	uint32_t index; /* fab->srqs */
	uint32_t max_wr;
	uint8_t *ring;
	pthread_spinlock_t post_lock; /* posting threads of the owner */
};

struct sf_mr_priv {
	struct ibv_mr mr;
	uint32_t index; /* fab->mrs */
};

/*
 * Members of its group an AH keeps for a multicast send (QP indices + 1); a group with
 * more attached QPs is read from the fabric's group table at each send.
 */
#define SF_AH_SNAP_QPS	2
#define SF_AH_SNAP_NONE 0xff /* snap_n: more members than fit, read the group */

/*
 * What a multicast send reads from its AH, in one cache line (the second of the AH,
 * which is allocated 64-byte aligned): the header fields and a snapshot of the group's
 * delivery (attached QPs, membership masks) as of fab->members_gen == snap_gen (low 32
 * bits + 1, 0: none). A send to one of 16 000 groups then reads one line of its AH and
 * none of the fabric's group table (wire.c sf_wire_mcast; docs/simfabric.md).
 */
struct sf_ah_hot {
	union ibv_gid dgid;
	union ibv_gid sgid;
	uint32_t flow_label;
	uint16_t dlid;
	uint8_t traffic_class, hop_limit, is_global;
	uint8_t snap_n; /* members in snap_qp, or SF_AH_SNAP_NONE */
	uint16_t pad;
	_Atomic uint32_t snap_gen;
	uint32_t snap_any, snap_full;
	uint32_t snap_qp[SF_AH_SNAP_QPS];
};

struct sf_ah_priv {
	struct ibv_ah ah;
	uint32_t dev;
	_Atomic uint32_t snap_busy; /* one thread at a time rebuilds the snapshot */
	uint32_t group;	     /* cached group index, UINT32_MAX: none */
	uint64_t group_gen;  /* that group's gen when cached */
	uint64_t groups_gen; /* fab->groups_gen when the cache was filled */
	struct sf_ah_hot hot __attribute__((aligned(64)));
	struct ibv_ah_attr attr;
	union ibv_gid sgid;
	bool mcast;
	/* unicast: the destination QP found for uc_qpn */
	uint32_t uc_qpn;
	uint32_t uc_qpi;
	uint64_t uc_gen;
};
_Static_assert(sizeof(struct sf_ah_hot) == 64, "the AH's send fields fill one cache line");
_Static_assert(offsetof(struct sf_ah_priv, hot) == 64, "the AH's send line is its second");

/* Receive WQE stride for a QP with `max_sge` scatter entries. */
static inline uint32_t sf_rwqe_stride(uint32_t max_sge)
{
	return (uint32_t)(16 + 16 * (max_sge ? max_sge : 1));
}

static inline struct sf_rwqe *sf_rwqe_at(uint8_t *rq, uint32_t stride, uint64_t i, uint32_t size)
{
	return (struct sf_rwqe *)(rq + (size_t)stride * (i & (size - 1)));
}

/* ---- fabric.c ---- */

/* This process's pid, cached (refreshed in a forked child). */
int32_t sf_self_pid(void);

/* This process's counter block for port `dev` (see struct sf_fabric.pctr). */
struct sf_counters *sf_ctr_mine(struct sf_fabric *fab, uint32_t dev);

#define SF_CTR_ADD(fab, dev, field, n)                                                             \
	atomic_fetch_add_explicit(&sf_ctr_mine((fab), (dev))->field, (n), memory_order_relaxed)

/* What device.c reports and sysfs.c writes: a ConnectX-6 (MT4123) as mlx5 shows it. */
#define SF_FW_VER   "20.31.1014"
#define SF_HCA_TYPE "MT4123"
#define SF_BOARD_ID "MT_0000000223"

/* ibv_query_port's answer for the port of device `dev` (device.c). */
void sf_port_attr_fill(struct sf_fabric *fab, uint32_t dev, struct ibv_port_attr *a);

/* Is the fabric this process attached still the one named (not reset since)? (fabric.c) */
bool sf_fabric_current(void);

/* ---- the simulated sysfs (sysfs.c) ---- */

/*
 * sf_sysfs_start - start this process's refresher thread (once; again in a forked
 * child). Called when a device is opened. sf_sysfs_stop - stop it and publish what this
 * process counted (process exit).
 */
void sf_sysfs_start(struct sf_fabric *fab);
void sf_sysfs_stop(void);

/* ---- QP delivery lock (wire.c) ---- */

/*
 * A process-shared spinlock in fabric memory that holds its holder's pid: a waiter that
 * has spun long takes it over when the holder died (SIGKILL mid-section). The QP, SRQ
 * and CQ producer locks.
 */
void sf_pidlock_lock(_Atomic int32_t *lock);
void sf_pidlock_unlock(_Atomic int32_t *lock);

void sf_qp_lock(struct sf_qp *qp);
void sf_qp_unlock(struct sf_qp *qp);

/* The SRQ's delivery lock: the same spinlock as the QP's (wire.c). */
void sf_srq_lock(struct sf_srq *srq);
void sf_srq_unlock(struct sf_srq *srq);

/* Detach QP `qp_index` from every group. Lock held. */
void sf_qp_detach_all_locked(struct sf_fabric *fab, uint32_t qp_index);

/* ---- peer mappings (wire.c): shared rings and receive memory of other processes ---- */

void sf_map_register_cq(uint32_t index, struct sf_cqe *ring);
void sf_map_register_rq(uint32_t index, uint8_t *rq);
void sf_map_register_srq(uint32_t index, uint8_t *ring);

/* ---- completions (cq.c) ---- */

/*
 * Publish a completion into CQ `cqi` (any process). Returns 0, or -EOVERFLOW when the CQ
 * is full (the CQ goes to error and its owner gets IBV_EVENT_CQ_ERR).
 */
int sf_cq_push(struct sf_fabric *fab, uint32_t cqi, struct sf_cqe *ring, const struct ibv_wc *wc,
	       uint64_t sq_index, bool solicited);

/* ---- sending (wire.c) ---- */

struct sf_tx {
	struct sf_qp_priv *qp;
	struct sf_qp *sqp;
	struct sf_dev *sdev;
	const struct ibv_send_wr *wr;
	uint32_t len; /* payload bytes */
	uint32_t qkey;
	bool with_imm;
	bool solicited;
	const uint8_t *inline_data; /* gathered inline payload, else NULL */
	uint8_t hdr[SF_GRH_LEN];    /* the 40 bytes each receiver gets in front */
	bool has_grh;
	uint32_t cap_seen; /* capture: ports this send was recorded on */
	uint16_t dlid;	   /* the address handle's DLID (the MLID of a group on IB) */
};

/* Copy n payload bytes of a send, from byte off, to dst (wire.c). */
void sf_wire_gather(const struct sf_tx *tx, uint32_t off, uint8_t *dst, uint32_t n);

/* Record a datagram reaching port `dev` in the capture ring (capture.c). */
void sf_cap_record(struct sf_fabric *fab, struct sf_tx *tx, uint32_t dev, uint32_t gen);

/* Deliver one send work request to its destination(s). */
void sf_wire_send(struct sf_fabric *fab, struct sf_tx *tx, struct sf_ah_priv *ah);

/* Random loss decision for a copy on segment `seg`. */
bool sf_wire_lose(struct sf_fabric *fab, uint32_t seg);

/* ---- memory (mem.c) ---- */

/* Pointer in this process to [addr, addr+len) of MR `mri` owned by another process. */
uint8_t *sf_mr_peer_ptr(struct sf_fabric *fab, uint32_t mri, uint64_t addr, uint64_t len);

/* Lookup an lkey of this process: the MR record if it covers [addr, addr+len). */
struct sf_mr *sf_mr_check(struct sf_fabric *fab, uint32_t lkey, uint64_t addr, uint64_t len,
			  int32_t pid);

/* ---- async events ---- */

void sf_async_post_ctx(struct sf_fabric *fab, uint32_t ctx, enum ibv_event_type type,
		       uint64_t cookie, uint32_t port);

static inline void sf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	sched_yield();
#endif
}

#pragma GCC visibility pop

#endif /* SIMFABRIC_SF_PRIV_H */
