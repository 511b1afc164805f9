// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * umad_sm.c: the simulated subnet's management entities that answer the MADs sent
 * through the simulated libibumad (umad.c): the subnet management agent (SMA) of every
 * IB port and the subnet administrator (SA) at the segment's SM LID (IBA 1.3 chapters
 * 14 and 15; docs/simfabric.md "Subnet manager, SA and user MADs" lists what they
 * answer). SA joins use the fabric's group and join tables (groups.c), the ones rdma_cm
 * joins use.
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sm.h>
#include <infiniband/verbs.h>

#include "sf.h"
#include "umad_priv.h"

/* IBA link width/speed of the simulated ports: 4X HDR on IB (what sysfs' rate says). */
#define PI_WIDTH_4X	 2
#define PI_SPEED_EXT_HDR 4

/* SMA: NodeInfo (IBA 14.2.5.3). */
static void sma_node_info(const struct sf_dev *d, uint8_t *a)
{
	a[0] = 1; /* BaseVersion */
	a[1] = 1; /* ClassVersion */
	a[2] = 1; /* NodeType: CA */
	a[3] = 1; /* NumPorts */
	put64(a + 4, be64toh(d->sys_image_guid));
	put64(a + 12, be64toh(d->node_guid));
	put64(a + 20, be64toh(d->node_guid)); /* PortGUID = node GUID (ConnectX-4 and later) */
	put16(a + 28, 128);		      /* PartitionCap */
	put16(a + 30, 0x101b);		      /* DeviceID: ConnectX-6 */
	put32(a + 32, 0);		      /* Revision */
	a[36] = 1;			      /* LocalPortNum */
	a[37] = 0x00;			      /* VendorID 0x0002c9 */
	a[38] = 0x02;
	a[39] = 0xc9;
}

/* SMA: PortInfo (IBA 14.2.5.6), the fields infiniband-diags reads. */
static void sma_port_info(const struct sf_fabric *fab, const struct sf_dev *d, uint8_t *a)
{
	uint32_t st = atomic_load(&d->port_state);

	put64(a + 8, be64toh(fab->segs[d->seg].subnet_prefix));
	put16(a + 16, (uint16_t)d->lid);
	put16(a + 18, (uint16_t)d->sm_lid);
	put32(a + 20, 0x2651e848u); /* CapabilityMask, as ibv_query_port */
	a[28] = 1;		    /* LocalPortNum */
	a[29] = 3;		    /* LinkWidthEnabled: 1X, 4X */
	a[30] = 3;		    /* LinkWidthSupported */
	a[31] = PI_WIDTH_4X;	    /* LinkWidthActive */
	/* LinkSpeedSupported 7 (SDR-QDR) | PortState. */
	a[32] = (uint8_t)(7 << 4 | (st == IBV_PORT_ACTIVE ? 4 : 1));
	/* PortPhysicalState (LinkUp 5, Disabled 3) | LinkDownDefaultState 2 (Polling). */
	a[33] = (uint8_t)((st == IBV_PORT_ACTIVE ? 5 : 3) << 4 | 2);
	a[34] = 0;					/* M_KeyProtectBits, LMC 0 */
	a[35] = (uint8_t)(4 << 4 | 7);			/* LinkSpeedActive QDR | Enabled */
	a[36] = (uint8_t)(d->active_mtu << 4);		/* NeighborMTU | MasterSMSL 0 */
	a[37] = (uint8_t)(4 << 4);			/* VLCap VL0-VL3 */
	a[41] = (uint8_t)d->active_mtu;			/* MTUCap */
	a[43] = (uint8_t)(4 << 4);			/* OperationalVLs */
	a[50] = 1;					/* GUIDCap */
	a[51] = 18;					/* SubnetTimeOut */
	a[52] = 16;					/* RespTimeValue */
	a[62] = (uint8_t)(PI_SPEED_EXT_HDR << 4 | 0x7); /* LinkSpeedExtActive | Supported */
	a[63] = 0x7;					/* LinkSpeedExtEnabled */
}

/* Which device an SMP reaches: LID-routed by DLID, directed route with 0 hops: own port. */
static int sma_target(const struct sf_fabric *fab, const struct sf_dev *self, int self_dev,
		      const uint8_t *mad, uint16_t dlid)
{
	if (mad[MAD_CLASS] == UMAD_CLASS_SUBN_DIRECTED_ROUTE) {
		if (mad[MAD_HOP_CNT] == 0)
			return self_dev;
		/* A path through switches: this fabric has none (a flat subnet). */
		return -1;
	}
	if (dlid == self->lid)
		return self_dev;
	return sf_dev_by_lid((struct sf_fabric *)fab, self->seg, dlid);
}

/* Answer an SMP into resp (a copy of the request); false: nothing answers. */
bool sf_sma_answer(struct sf_fabric *fab, int self_dev, uint16_t dlid, uint8_t *resp)
{
	const struct sf_dev *self = &fab->devs[self_dev], *d;
	uint16_t attr = get16(resp + MAD_ATTR), status = 0;
	uint8_t *a = resp + SMP_DATA;
	int t = sma_target(fab, self, self_dev, resp, dlid);

	if (t < 0)
		return false;
	d = &fab->devs[t];
	if (d->link != SF_LINK_IB || d->removed || atomic_load(&d->port_state) != IBV_PORT_ACTIVE)
		return false;
	memset(a, 0, 64);
	if (resp[MAD_METHOD] != UMAD_METHOD_GET) {
		status = resp[MAD_METHOD] == UMAD_METHOD_SET ? MAD_ST_UNSUPPORTED : MAD_ST_BAD_METHOD;
	} else {
		switch (attr) {
		case UMAD_SM_ATTR_NODE_INFO:
			sma_node_info(d, a);
			break;
		case UMAD_SM_ATTR_NODE_DESC:
			snprintf((char *)a, 64, "simfabric %s", d->name);
			break;
		case UMAD_SM_ATTR_PORT_INFO:
			sma_port_info(fab, d, a);
			break;
		case UMAD_SM_ATTR_GUID_INFO:
			put64(a, be64toh(d->node_guid));
			break;
		case UMAD_SM_ATTR_PKEY_TABLE:
			put16(a, (uint16_t)d->pkey);
			break;
		default:
			status = MAD_ST_UNSUPPORTED;
			break;
		}
	}
	resp[MAD_METHOD] = UMAD_METHOD_GET_RESP;
	if (resp[MAD_CLASS] == UMAD_CLASS_SUBN_DIRECTED_ROUTE)
		status |= SMP_DIRECTION;
	put16(resp + MAD_STATUS, status);
	return true;
}

/* The SA's join state bits (IBA 15.2.5.17): full member, non member, send-only. */
#define JOIN_FULL     0x1
#define JOIN_SENDONLY 0x8

/* MCMemberRecord component mask bits used here (IBA 15.2.5.17). */
#define MCM_MGID     (1ull << 0)
#define MCM_PORT_GID (1ull << 1)
#define MCM_JOIN     (1ull << 16)
/* What creating a group needs (OpenSM REQUIRED_MC_CREATE_COMP_MASK): MGID, PortGID,
 * JoinState, Q_Key, TClass, P_Key, FlowLabel, SL; the MGID bit is not asked for, since a
 * join without an MGID gets one assigned). */
#define MCM_CREATE                                                                         \
	(MCM_PORT_GID | MCM_JOIN | SF_MCR_QKEY | SF_MCR_TCLASS | (1ull << 7) |    \
	 SF_MCR_FLOW | SF_MCR_SL)

/* The SA's MGID for a join without one: ff12:a01b:<pkey>::<unique> (as OpenSM). */
static void sa_assign_mgid(struct sf_fabric *fab, uint32_t seg, uint16_t pkey, union ibv_gid *mgid)
{
	uint32_t pid = (uint32_t)getpid();

	do {
		memset(mgid, 0, sizeof(*mgid));
		mgid->raw[0] = 0xff;
		mgid->raw[1] = 0x12;
		mgid->raw[2] = 0xa0;
		mgid->raw[3] = 0x1b;
		mgid->raw[4] = (uint8_t)(pkey >> 8);
		mgid->raw[5] = (uint8_t)pkey;
		put32(&mgid->raw[8], pid);
		put32(&mgid->raw[12], sf_serial_next());
	} while (sf_group_find(fab, seg, mgid));
}

/*
 * MCMemberRecord Set (join), Delete (leave), Get. The record's PortGID names the
 * joining port (a port of this segment); the join state's full-member bit makes a full
 * member, any other join state a send-only member (what the fabric's copies follow).
 * Set on a new MGID creates the group with the next free MLID; the response carries
 * the record with MLID, MTU and rate of the port, the requested Q_Key, TClass, P_Key,
 * SL, flow label and join state. Delete removes one membership of that port made
 * through the SA. Returns the status.
 */
static uint16_t sa_mcmember(struct sf_fabric *fab, const struct sf_dev *self, uint8_t *resp)
{
	uint8_t *r = resp + SA_DATA, method = resp[MAD_METHOD];
	uint64_t mask = get64(resp + SA_COMP_MASK);
	union ibv_gid mgid, pgid;
	uint8_t join = r[48] & 0xf;
	uint32_t gidx;
	struct sf_group *grp;
	int d;
	uint16_t status = 0;

	memcpy(mgid.raw, r, 16);
	memcpy(pgid.raw, r + 16, 16);
	if (method == UMAD_METHOD_GET) {
		if (!(mask & MCM_MGID))
			return SA_ST_INSUF_COMPS;
		sf_lock(fab);
		grp = sf_group_find(fab, self->seg, &mgid);
		if (grp) {
			put16(r + 36, (uint16_t)grp->mlid);
			if (grp->rec_set) {
				put32(r + 32, grp->rec_qkey);
				r[39] = grp->rec_tclass;
				put32(r + 44, grp->rec_sl_flow_hop);
			}
		}
		sf_unlock(fab);
		return grp ? 0 : SA_ST_NO_RECORDS;
	}
	if (!(mask & MCM_PORT_GID) || !(mask & MCM_JOIN) || !join)
		return SA_ST_INSUF_COMPS;
	d = sf_dev_by_gid(fab, &pgid, &gidx);
	if (d < 0 || fab->devs[d].seg != self->seg || fab->devs[d].link != SF_LINK_IB)
		return SA_ST_REQ_INVALID;
	sf_lock(fab);
	if (method == UMAD_METHOD_SET) {
		struct sf_join *j = NULL;

		if (!memcmp(mgid.raw, (uint8_t[16]){0}, 16))
			sa_assign_mgid(fab, self->seg, (uint16_t)(self->pkey | 0x8000), &mgid);
		grp = sf_group_find(fab, self->seg, &mgid);
		if (!grp && (mask & MCM_CREATE) != MCM_CREATE) {
			/* OpenSM's REQUIRED_MC_CREATE_COMP_MASK (ERR 1B11). */
			sf_unlock(fab);
			return SA_ST_INSUF_COMPS;
		}
		if (!grp)
			grp = sf_group_get_locked(fab, self->seg, &mgid, 0);
		if (grp && sf_group_rec_join_locked(grp, mask, get32(r + 32), r[39],
						    get32(r + 44))) {
			/* validate_other_comp_fields: Q_Key, TClass, SL, flow label, hop limit. */
			sf_group_put_locked(fab, grp);
			sf_unlock(fab);
			return SA_ST_REQ_INVALID;
		}
		if (grp) {
			j = sf_join_add_locked(fab, grp, (uint32_t)d, !(join & JOIN_FULL), 0, 0, 0,
					       0);
			if (!j)
				sf_group_put_locked(fab, grp);
		}
		if (!j) {
			status = UMAD_SA_STATUS_NO_RESOURCES << 8;
		} else {
			/* The group's record (copy_from_create_mc_rec), not the request's. */
			put32(r + 32, grp->rec_qkey);
			r[39] = grp->rec_tclass;
			put32(r + 44, grp->rec_sl_flow_hop);
			memcpy(r, mgid.raw, 16);
			put16(r + 36, (uint16_t)grp->mlid);
			r[38] = (uint8_t)(2 << 6 | fab->devs[d].active_mtu); /* exactly this MTU */
			if (!get16(r + 40))
				put16(r + 40, (uint16_t)(fab->devs[d].pkey | 0x8000));
			r[42] = (uint8_t)(2 << 6 | IBV_RATE_200_GBPS);
			r[43] = (uint8_t)(2 << 6 | 18);	    /* packet lifetime */
			r[48] = (uint8_t)(0x2 << 4 | join); /* link-local scope */
		}
	} else {
		struct sf_join *found = NULL;

		grp = sf_group_find(fab, self->seg, &mgid);
		for (uint32_t i = 0; grp && !found && i < SF_MAX_JOINS; i++) {
			struct sf_join *j = &fab->joins[i];

			if (j->own.pid && !j->chan_pid && !j->id_cookie && j->dev == (uint32_t)d &&
			    &fab->groups[j->group] == grp)
				found = j;
		}
		if (found) {
			put16(r + 36, (uint16_t)grp->mlid);
			sf_join_del_locked(fab, found);
		} else {
			status = SA_ST_REQ_INVALID;
		}
	}
	sf_unlock(fab);
	return status;
}

/* PathRecord Get between two ports of the segment, named by GID (or LID). */
#define PR_DGID (1ull << 2)
#define PR_SGID (1ull << 3)
#define PR_DLID (1ull << 4)
#define PR_SLID (1ull << 5)

static uint16_t sa_path(struct sf_fabric *fab, const struct sf_dev *self, uint8_t *resp)
{
	uint8_t *r = resp + SA_DATA;
	uint64_t mask = get64(resp + SA_COMP_MASK);
	union ibv_gid g;
	uint32_t gidx;
	int s = -1, t = -1;

	if (resp[MAD_METHOD] != UMAD_METHOD_GET)
		return MAD_ST_UNSUPPORTED;
	if (mask & PR_DGID) {
		memcpy(g.raw, r + 8, 16);
		t = sf_dev_by_gid(fab, &g, &gidx);
	} else if (mask & PR_DLID) {
		t = sf_dev_by_lid(fab, self->seg, get16(r + 40));
	}
	if (mask & PR_SGID) {
		memcpy(g.raw, r + 24, 16);
		s = sf_dev_by_gid(fab, &g, &gidx);
	} else if (mask & PR_SLID) {
		s = sf_dev_by_lid(fab, self->seg, get16(r + 42));
	}
	if (!(mask & (PR_DGID | PR_DLID)) || !(mask & (PR_SGID | PR_SLID)))
		return SA_ST_INSUF_COMPS;
	if (s < 0 || t < 0 || fab->devs[s].seg != self->seg || fab->devs[t].seg != self->seg)
		return SA_ST_NO_RECORDS;
	memset(r, 0, 64);
	memcpy(r + 8, fab->devs[t].gids[0].gid.raw, 16);
	memcpy(r + 24, fab->devs[s].gids[0].gid.raw, 16);
	put16(r + 40, (uint16_t)fab->devs[t].lid);
	put16(r + 42, (uint16_t)fab->devs[s].lid);
	r[49] = 0x80 | 1; /* reversible, one path */
	put16(r + 50, (uint16_t)(self->pkey | 0x8000));
	r[54] = (uint8_t)(2 << 6 | fab->devs[t].active_mtu);
	r[55] = (uint8_t)(2 << 6 | IBV_RATE_200_GBPS);
	r[56] = (uint8_t)(2 << 6 | 18);
	return 0;
}

/* Answer a MAD to the SA; false: nothing answers (not the SM's LID, not QP1). */
bool sf_sa_answer(struct sf_fabric *fab, const struct sf_dev *self, uint16_t dlid, uint32_t dqpn,
		  uint8_t *resp)
{
	uint8_t method = resp[MAD_METHOD];
	uint16_t status;

	if (self->link != SF_LINK_IB || dqpn != 1 || dlid != self->sm_lid)
		return false;
	switch (get16(resp + MAD_ATTR)) {
	case UMAD_SA_ATTR_MCMEMBER_REC:
		status = method == UMAD_METHOD_SET || method == UMAD_SA_METHOD_DELETE ||
					 method == UMAD_METHOD_GET
				 ? sa_mcmember(fab, self, resp)
				 : MAD_ST_UNSUPPORTED;
		break;
	case UMAD_SA_ATTR_PATH_REC:
		status = sa_path(fab, self, resp);
		break;
	default:
		status = MAD_ST_UNSUPPORTED;
		break;
	}
	resp[MAD_METHOD] =
		method == UMAD_SA_METHOD_DELETE ? UMAD_SA_METHOD_DELETE_RESP : UMAD_METHOD_GET_RESP;
	put16(resp + MAD_STATUS, status);
	return true;
}
