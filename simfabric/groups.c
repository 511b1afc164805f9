// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Multicast groups (what the switches / HCA replication know: attached QPs) and rdma_cm
 * joins (what the SA or IGMP knows: which ports are members).
 */
#include <errno.h>
#include <string.h>

#include "sf.h"
#include "sf_priv.h"

/* Per device, how many QPs one group may hold (ConnectX: max_mcast_qp_attach). */
#define SF_MCAST_QP_ATTACH 240

struct sf_group *sf_group_find(struct sf_fabric *fab, uint32_t seg, const union ibv_gid *mgid)
{
	for (uint32_t i = 0; i < SF_MAX_GROUPS; i++) {
		struct sf_group *g = &fab->groups[i];

		if (g->in_use && g->seg == seg && !memcmp(g->mgid.raw, mgid->raw, 16))
			return g;
	}
	return NULL;
}

struct sf_group *sf_group_find_mlid(struct sf_fabric *fab, uint32_t seg, uint32_t mlid)
{
	for (uint32_t i = 0; i < SF_MAX_GROUPS; i++) {
		struct sf_group *g = &fab->groups[i];

		if (g->in_use && g->seg == seg && g->mlid == mlid)
			return g;
	}
	return NULL;
}

struct sf_group *sf_group_get_locked(struct sf_fabric *fab, uint32_t seg, const union ibv_gid *mgid,
				     uint32_t mlid)
{
	struct sf_group *g = sf_group_find(fab, seg, mgid);

	if (g)
		return g;
	for (uint32_t i = 0; i < SF_MAX_GROUPS; i++) {
		g = &fab->groups[i];
		if (g->in_use)
			continue;
		g->seg = seg;
		g->mgid = *mgid;
		g->njoins = 0;
		atomic_store(&g->full_mask, 0);
		atomic_store(&g->any_mask, 0);
		memset(g->nfull, 0, sizeof(g->nfull));
		memset(g->nsend, 0, sizeof(g->nsend));
		for (uint32_t s = 0; s < SF_GROUP_SLOTS; s++)
			atomic_store(&g->slots[s], 0);
		atomic_store(&g->nslots, 0);
		if (fab->segs[seg].link == SF_LINK_IB)
			g->mlid = mlid ? mlid : fab->segs[seg].next_mlid++;
		else
			g->mlid = 0;
		g->gen++;
		atomic_store_explicit(&g->in_use, 1, memory_order_release);
		atomic_fetch_add(&fab->groups_gen, 1);
		return g;
	}
	errno = ENOSPC;
	return NULL;
}

static uint32_t sf_group_dev_count(struct sf_fabric *fab, struct sf_group *g, uint32_t dev)
{
	uint32_t n = 0, ns = atomic_load(&g->nslots);

	for (uint32_t s = 0; s < ns; s++) {
		uint32_t v = atomic_load(&g->slots[s]);

		if (v && fab->qps[v - 1].dev == dev)
			n++;
	}
	return n;
}

int sf_group_attach_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t qp_index)
{
	uint32_t ns = atomic_load(&g->nslots), free_slot = UINT32_MAX;

	for (uint32_t s = 0; s < ns; s++) {
		uint32_t v = atomic_load(&g->slots[s]);

		/* Attaching a QP twice still yields one copy. */
		if (v == qp_index + 1)
			return 0;
		if (!v && free_slot == UINT32_MAX)
			free_slot = s;
	}
	if (sf_group_dev_count(fab, g, fab->qps[qp_index].dev) >= SF_MCAST_QP_ATTACH)
		return -ENOMEM;
	if (free_slot == UINT32_MAX) {
		if (ns >= SF_GROUP_SLOTS)
			return -ENOMEM;
		free_slot = ns;
		atomic_store_explicit(&g->slots[free_slot], qp_index + 1, memory_order_release);
		atomic_store_explicit(&g->nslots, ns + 1, memory_order_release);
		return 0;
	}
	atomic_store_explicit(&g->slots[free_slot], qp_index + 1, memory_order_release);
	return 0;
}

int sf_group_detach_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t qp_index)
{
	uint32_t ns = atomic_load(&g->nslots);

	(void)fab;
	for (uint32_t s = 0; s < ns; s++) {
		if (atomic_load(&g->slots[s]) == qp_index + 1) {
			atomic_store_explicit(&g->slots[s], 0, memory_order_release);
			return 0;
		}
	}
	return -EINVAL;
}

void sf_group_put_locked(struct sf_fabric *fab, struct sf_group *g)
{
	uint32_t ns = atomic_load(&g->nslots);

	if (g->njoins)
		return;
	for (uint32_t s = 0; s < ns; s++)
		if (atomic_load(&g->slots[s]))
			return;
	atomic_store(&g->nslots, 0);
	atomic_store_explicit(&g->in_use, 0, memory_order_release);
	g->gen++;
	atomic_fetch_add(&fab->groups_gen, 1);
}

void sf_qp_detach_all_locked(struct sf_fabric *fab, uint32_t qp_index)
{
	for (uint32_t i = 0; i < SF_MAX_GROUPS; i++) {
		struct sf_group *g = &fab->groups[i];

		if (!g->in_use)
			continue;
		if (!sf_group_detach_locked(fab, g, qp_index))
			sf_group_put_locked(fab, g);
	}
}

static void sf_group_masks_update(struct sf_group *g, uint32_t dev)
{
	uint32_t bit = 1u << dev;

	if (g->nfull[dev])
		atomic_fetch_or(&g->full_mask, bit);
	else
		atomic_fetch_and(&g->full_mask, ~bit);
	if (g->nfull[dev] || g->nsend[dev])
		atomic_fetch_or(&g->any_mask, bit);
	else
		atomic_fetch_and(&g->any_mask, ~bit);
}

struct sf_join *sf_join_add_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t dev,
				   bool send_only, int32_t chan_pid, uint32_t chan_serial,
				   uint64_t id_cookie, uint64_t mc_cookie)
{
	for (uint32_t i = 0; i < SF_MAX_JOINS; i++) {
		struct sf_join *j = &fab->joins[i];

		if (j->own.pid)
			continue;
		sf_owner_claim(&j->own);
		j->dev = dev;
		j->group = (uint32_t)(g - fab->groups);
		j->send_only = send_only;
		j->chan_pid = chan_pid;
		j->chan_serial = chan_serial;
		j->id_cookie = id_cookie;
		j->mc_cookie = mc_cookie;
		g->njoins++;
		if (send_only)
			g->nsend[dev]++;
		else
			g->nfull[dev]++;
		sf_group_masks_update(g, dev);
		atomic_store(&j->state, SF_JOIN_ACTIVE);
		return j;
	}
	errno = ENOSPC;
	return NULL;
}

/* Drop the membership of an active join (port error, leave). Lock held. */
static void sf_join_deactivate_locked(struct sf_fabric *fab, struct sf_join *j)
{
	struct sf_group *g = &fab->groups[j->group];

	if (atomic_load(&j->state) != SF_JOIN_ACTIVE)
		return;
	if (j->send_only)
		g->nsend[j->dev]--;
	else
		g->nfull[j->dev]--;
	sf_group_masks_update(g, j->dev);
	atomic_store(&j->state, SF_JOIN_ERROR);
}

void sf_join_del_locked(struct sf_fabric *fab, struct sf_join *j)
{
	struct sf_group *g = &fab->groups[j->group];

	if (!j->own.pid)
		return;
	sf_join_deactivate_locked(fab, j);
	atomic_store(&j->state, SF_JOIN_FREE);
	sf_owner_release(&j->own);
	g->njoins--;
	sf_group_put_locked(fab, g);
}

void sf_joins_error_dev_locked(struct sf_fabric *fab, uint32_t dev, int status)
{
	for (uint32_t i = 0; i < SF_MAX_JOINS; i++) {
		struct sf_join *j = &fab->joins[i];
		struct sf_msg m = {.kind = SF_MSG_CM_MCERR, .status = status};

		if (!j->own.pid || j->dev != dev || atomic_load(&j->state) != SF_JOIN_ACTIVE)
			continue;
		sf_join_deactivate_locked(fab, j);
		m.cookie = j->id_cookie;
		m.cookie2 = j->mc_cookie;
		sf_endpoint_send(j->chan_pid, j->chan_serial, &m);
	}
}
