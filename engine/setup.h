/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Building and tearing down the engine (control thread, before/after the workers run). */
#ifndef ENGINE_SETUP_H
#define ENGINE_SETUP_H

#include "bridge.h"

/*
 * Open the port of side `side`: device `dev` ("" = the first suitable one), port `port`
 * (0 = the first suitable one). IB: an active InfiniBand port; RoCE: an active Ethernet
 * port with a RoCEv2 IPv4 GID. Allocates the PD and the side's group table. 0 or -errno
 * with a message.
 */
int side_open(struct side_ctx *sd, enum side side, const char *dev, uint8_t port, char *err,
	      size_t errlen);

/* NUMA node of the side's device, -1 if unknown. */
int side_numa_node(const struct side_ctx *sd);

/*
 * With both sides open: allocate and register the pool, create the channel pairs for
 * `ngroups` groups (cfg.mcqp per channel) and the workers owning them, fill the receive
 * queues. The receive queue depth is fitted to the pool first: cfg.rq_depth is lowered
 * when every channel's queue at the configured depth (kept in br->rq_asked) does not fit
 * beside the per-worker reserve (docs/pool.md). Control thread, before the workers start.
 * 0 or -errno with a message: -ENOBUFS when cfg.nbufs is below the minimum of this
 * configuration (the message states it), nothing allocated then.
 */
int bridge_build(struct bridge *br, uint32_t ngroups, char *err, size_t errlen);

/*
 * Add a channel pair at run time, owned by worker `wid` (control thread, workers
 * running, a registered QSBR reader): its IB and RoCE QPs on the worker's CQs and SRQs
 * (or, without SRQs, each with its own receive queue, filled by the worker's next pass),
 * published to the worker and to the own-packet filter through RCU (struct wside_view,
 * struct qpn_set). Refused when the worker's CQs are sized for no more pairs (-ENOSPC,
 * wside_cq_pairs) or the pool cannot hold the new receive queues (-ENOBUFS,
 * docs/pool.md), with a message. Returns the new pair's index (br->npairs - 1).
 */
int bridge_pair_add(struct bridge *br, uint32_t wid, char *err, size_t errlen);

/*
 * Give channel ch's QP the Q_Key qkey (RTS to RTS, IBV_QP_QKEY): what its QP receives
 * (a datagram whose DETH Q_Key differs is dropped by the NIC, counted in qkey_viol) and,
 * for a controlled Q_Key (BR_QKEY_CONTROLLED set in a send's remote_qkey), what it sends
 * with. Control thread, for a channel no group uses (the layout by Q_Key: control/
 * groups.c). 0 or -errno (-EPERM: a controlled Q_Key without the privilege).
 */
int channel_set_qkey(struct channel *ch, uint32_t qkey);

/*
 * May a QP of side sd get Q_Key qkey? Asks the kernel: a scratch UD QP is moved to INIT
 * with it and destroyed. Linux 6.4+ (commit 0cadb4db79e1, backported to the stable kernels
 * of June 2023) refuses a controlled Q_Key (bit 31) with EPERM unless
 * the process has CAP_NET_RAW or `rdma system set privileged-qkey on` was given
 * (ib_uverbs_modify_qp). Control thread. 0 or -errno (-EPERM).
 */
int side_qkey_probe(struct side_ctx *sd, uint32_t qkey);

/* Undo bridge_build and side_open (workers stopped, groups left). Caller: the control
 * thread, registered with QSBR and online. */
void bridge_destroy(struct bridge *br);

#endif /* ENGINE_SETUP_H */
