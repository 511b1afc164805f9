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
 * (lib/samcm.c builds and reads the MADs; mcsender and mclisten use it too): MGID,
 * PortGID, Q_Key, P_Key, TClass, SL, FlowLabel and JoinState in the component mask
 * (OpenSM's REQUIRED_MC_CREATE_COMP_MASK, so that the join can also create the group).
 * The SA answers with the group's record (copy_from_create_mc_rec): MLID, Q_Key, SL,
 * flow label, TClass, from which the AH is made as the kernel makes rdma_cm's
 * (ib_init_ah_from_mcmember). Unlike perftest the request is not waited for: joins.c
 * watches the umad descriptor in the loop and reads the answers (sajoin_recv), matched to
 * their group by transaction id. A Delete leaves. An SA join lives as long as the port's
 * registration: after a port, LID, SM or re-register event joins.c drops and joins every
 * group again (side_rejoin), SA joins included. This file only speaks to the SA: it
 * holds no join state and calls nothing of joins.c.
 */
#include <errno.h>
#include <string.h>

#include "bridge.h"
#include "ctl.h"
#include "samcm.h"
#include "sajoin.h"

/* The IB port's umad agent (control thread only): opened on first use. */
static struct samcm sa = {.port = -1, .agent = -1, .fd = -1};

bool sajoin_wanted(const struct group *g)
{
	return group_qkey(g, SIDE_IB) != BR_UDP_QKEY;
}

const char *sajoin_status_str(uint16_t st)
{
	return samcm_status_str(st);
}

int sajoin_fd(void)
{
	return sa.fd;
}

int sajoin_open(const struct side_ctx *sd)
{
	return samcm_open(&sa, sd->dev, sd->port);
}

int sajoin_send(const struct side_ctx *sd, const struct group *g, bool join, uint32_t *tid)
{
	struct samcm_req q;
	int r = sajoin_open(sd);

	if (r)
		return r;
	memset(&q, 0, sizeof(q));
	q.mgid = g->mgid[SIDE_IB];
	q.port_gid = sd->gid;
	q.qkey = group_qkey(g, SIDE_IB);
	q.pkey = sd->pkey;
	q.tclass = g->tos_set ? g->tos : 0;
	q.send_only = !group_dir_rx(g->dir, SIDE_IB);
	q.sm_lid = sd->pattr.sm_lid;
	q.sm_sl = sd->pattr.sm_sl;
	return samcm_send(&sa, &q, join, tid);
}

int sajoin_recv(const struct side_ctx *sd, struct sajoin_answer *a)
{
	struct samcm_answer x;

	if (!samcm_recv(&sa, &x))
		return 0;
	memset(a, 0, sizeof(*a));
	a->tid = x.tid;
	a->err = x.err;
	a->status = x.status;
	if (!x.err && !x.status) {
		a->qkey = x.qkey;
		samcm_ah_attr(&x, (uint8_t)sd->port, (uint8_t)sd->gid_index, &a->aa);
	}
	return 1;
}
