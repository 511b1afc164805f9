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

/*
 * The group tables are indexed by two hash tables of chains, by (segment, MGID) and by
 * (segment, MLID), so that a fabric of tens of thousands of groups finds one without a
 * scan. Writers change them under the fabric lock; readers on the data path walk them
 * without it. A writer makes groups_gen odd, changes a chain, and makes it even again;
 * a reader that started on an odd value or ends on another value walked a changing
 * table and looks again (a freed group re-used on another chain can divert a walk). A
 * group unlinked from its chain keeps its link, so a reader standing on it goes on.
 */
/* Spins on an odd groups_gen before a lookup takes the fabric lock to get past it. */
#define SF_GROUPS_SPIN_MAX (1u << 20)

static uint32_t sf_hash_mgid(uint32_t seg, const union ibv_gid *mgid)
{
	uint64_t a, b;

	memcpy(&a, mgid->raw, 8);
	memcpy(&b, mgid->raw + 8, 8);
	a = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ seg;
	a ^= a >> 29;
	a *= 0xff51afd7ed558ccdull;
	a ^= a >> 32;
	return (uint32_t)a & (SF_GROUP_HASH - 1);
}

static uint32_t sf_hash_mlid(uint32_t seg, uint32_t mlid)
{
	return (uint32_t)(((uint64_t)seg << 16 | mlid) * 0x9e3779b97f4a7c15ull >> 40) &
	       (SF_GROUP_HASH - 1);
}

static void sf_groups_change_begin(struct sf_fabric *fab)
{
	atomic_fetch_add_explicit(&fab->groups_gen, 1, memory_order_acq_rel);
}

/*
 * What a multicast send delivers to changed (group, attached QPs, membership masks):
 * after the change's stores; pairs with the acquire load in wire.c sf_wire_mcast, so
 * that an AH that sees the new count rebuilds its snapshot from the new state.
 */
static void sf_members_changed(struct sf_fabric *fab)
{
	atomic_fetch_add_explicit(&fab->members_gen, 1, memory_order_release);
}

static void sf_groups_change_end(struct sf_fabric *fab)
{
	atomic_fetch_add_explicit(&fab->groups_gen, 1, memory_order_release);
	sf_members_changed(fab);
}

/* Walk one chain for a live group matching seg and (mgid or mlid). */
static struct sf_group *sf_group_walk(struct sf_fabric *fab, uint32_t head, bool by_mgid,
				      uint32_t seg, const union ibv_gid *mgid, uint32_t mlid)
{
	/* A diverted walk could cycle: no chain is longer than the table. */
	for (uint32_t n = 0; head && n < SF_MAX_GROUPS; n++) {
		struct sf_group *g = &fab->groups[head - 1];

		if (atomic_load_explicit(&g->in_use, memory_order_acquire) && g->seg == seg &&
		    (by_mgid ? !memcmp(g->mgid.raw, mgid->raw, 16) : g->mlid == mlid))
			return g;
		head = atomic_load_explicit(by_mgid ? &g->next_by_mgid : &g->next_by_mlid,
					    memory_order_acquire);
	}
	return NULL;
}

static struct sf_group *sf_group_lookup(struct sf_fabric *fab, bool by_mgid, uint32_t seg,
					const union ibv_gid *mgid, uint32_t mlid)
{
	_Atomic uint32_t *bucket = by_mgid ? &fab->group_by_mgid[sf_hash_mgid(seg, mgid)]
					   : &fab->group_by_mlid[sf_hash_mlid(seg, mlid)];
	struct sf_group *g;
	uint64_t gen;

	do {
		for (uint32_t spins = 0;
		     (gen = atomic_load_explicit(&fab->groups_gen, memory_order_acquire)) & 1;
		     spins++) {
			/*
			 * A change takes a few stores under the lock; a writer that died inside
			 * one left the count odd: taking the lock recovers it (sf_lock). Never
			 * reached with the lock held: writers look up before they change.
			 */
			if (spins == SF_GROUPS_SPIN_MAX) {
				sf_lock(fab);
				sf_unlock(fab);
				spins = 0;
			}
		}
		g = sf_group_walk(fab, atomic_load_explicit(bucket, memory_order_acquire),
				  by_mgid, seg, mgid, mlid);
	} while (atomic_load_explicit(&fab->groups_gen, memory_order_acquire) != gen);
	return g;
}

struct sf_group *sf_group_find(struct sf_fabric *fab, uint32_t seg, const union ibv_gid *mgid)
{
	return sf_group_lookup(fab, true, seg, mgid, 0);
}

struct sf_group *sf_group_find_mlid(struct sf_fabric *fab, uint32_t seg, uint32_t mlid)
{
	return sf_group_lookup(fab, false, seg, NULL, mlid);
}

static bool sf_mlid_used(const struct sf_segment *sg, uint32_t mlid)
{
	uint32_t b = mlid - SF_IB_MLID_BASE;

	return sg->mlid_used[b / 64] >> (b % 64) & 1;
}

static void sf_mlid_mark(struct sf_segment *sg, uint32_t mlid, bool used)
{
	uint32_t b = mlid - SF_IB_MLID_BASE;

	if (used)
		sg->mlid_used[b / 64] |= 1ull << (b % 64);
	else
		sg->mlid_used[b / 64] &= ~(1ull << (b % 64));
}

/* A free multicast LID of the segment, from where the last one was handed out; 0: none. */
static uint32_t sf_mlid_alloc(struct sf_segment *sg)
{
	uint32_t l = sg->next_mlid;

	for (uint32_t n = 0; n < SF_SEG_MAX_GROUPS; n++, l++) {
		if (l < SF_IB_MLID_BASE || l > SF_IB_MLID_LAST)
			l = SF_IB_MLID_BASE;
		if (!sf_mlid_used(sg, l)) {
			sg->next_mlid = l + 1;
			return l;
		}
	}
	return 0;
}

/* Unlink g from the chain that starts at *bucket (lock held). */
static void sf_group_unlink(struct sf_fabric *fab, _Atomic uint32_t *bucket, struct sf_group *g,
			    bool by_mgid)
{
	uint32_t self = (uint32_t)(g - fab->groups) + 1;
	_Atomic uint32_t *link = bucket;

	for (uint32_t n = 0; n < SF_MAX_GROUPS; n++) {
		uint32_t v = atomic_load(link);
		struct sf_group *c;

		if (!v)
			return;
		c = &fab->groups[v - 1];
		if (v == self) {
			atomic_store_explicit(link,
					      atomic_load(by_mgid ? &c->next_by_mgid : &c->next_by_mlid),
					      memory_order_release);
			return;
		}
		link = by_mgid ? &c->next_by_mgid : &c->next_by_mlid;
	}
}

struct sf_group *sf_group_get_locked(struct sf_fabric *fab, uint32_t seg, const union ibv_gid *mgid,
				     uint32_t mlid)
{
	struct sf_group *g = sf_group_find(fab, seg, mgid);
	struct sf_segment *sg = &fab->segs[seg];
	bool ib = sg->link == SF_LINK_IB;
	uint32_t i = fab->group_hint, self;
	bool owned;

	if (g)
		return g;
	/* What the subnet holds: the multicast LID space (IB), as many groups on RoCE. */
	if (sg->ngroups >= SF_SEG_MAX_GROUPS) {
		errno = ENOSPC;
		return NULL;
	}
	/* An MLID given by ibv_attach_mcast is the caller's (IB lets MGIDs share one). */
	owned = ib && !mlid;
	if (owned) {
		mlid = sf_mlid_alloc(sg);
		if (!mlid) {
			errno = ENOSPC;
			return NULL;
		}
	}
	for (uint32_t n = 0; n < SF_MAX_GROUPS; n++, i = (i + 1) % SF_MAX_GROUPS) {
		g = &fab->groups[i];
		if (!g->in_use)
			break;
	}
	if (g->in_use) {
		errno = ENOSPC;
		return NULL;
	}
	fab->group_hint = (i + 1) % SF_MAX_GROUPS;
	self = i + 1;
	sf_groups_change_begin(fab);
	g->seg = seg;
	g->mgid = *mgid;
	g->njoins = 0;
	g->rec_set = 0;
	atomic_store(&g->full_mask, 0);
	atomic_store(&g->any_mask, 0);
	memset(g->nfull, 0, sizeof(g->nfull));
	memset(g->nsend, 0, sizeof(g->nsend));
	for (uint32_t s = 0; s < SF_GROUP_SLOTS; s++)
		atomic_store(&g->slots[s], 0);
	atomic_store(&g->nslots, 0);
	g->mlid = ib ? mlid : 0;
	g->mlid_owned = owned;
	if (owned)
		sf_mlid_mark(sg, mlid, true);
	g->gen++;
	atomic_store(&g->next_by_mgid, atomic_load(&fab->group_by_mgid[sf_hash_mgid(seg, mgid)]));
	if (ib)
		atomic_store(&g->next_by_mlid,
			     atomic_load(&fab->group_by_mlid[sf_hash_mlid(seg, g->mlid)]));
	atomic_store_explicit(&g->in_use, 1, memory_order_release);
	atomic_store_explicit(&fab->group_by_mgid[sf_hash_mgid(seg, mgid)], self,
			      memory_order_release);
	if (ib) /* only IB groups have an MLID to be found by */
		atomic_store_explicit(&fab->group_by_mlid[sf_hash_mlid(seg, g->mlid)], self,
				      memory_order_release);
	sg->ngroups++;
	sf_groups_change_end(fab);
	return g;
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
		fab->qps[qp_index].nattached++;
		sf_members_changed(fab);
		return 0;
	}
	atomic_store_explicit(&g->slots[free_slot], qp_index + 1, memory_order_release);
	fab->qps[qp_index].nattached++;
	sf_members_changed(fab);
	return 0;
}

int sf_group_detach_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t qp_index)
{
	uint32_t ns = atomic_load(&g->nslots);

	for (uint32_t s = 0; s < ns; s++) {
		if (atomic_load(&g->slots[s]) == qp_index + 1) {
			atomic_store_explicit(&g->slots[s], 0, memory_order_release);
			fab->qps[qp_index].nattached--;
			sf_members_changed(fab);
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
	sf_groups_change_begin(fab);
	atomic_store(&g->nslots, 0);
	atomic_store_explicit(&g->in_use, 0, memory_order_release);
	sf_group_unlink(fab, &fab->group_by_mgid[sf_hash_mgid(g->seg, &g->mgid)], g, true);
	if (fab->segs[g->seg].link == SF_LINK_IB)
		sf_group_unlink(fab, &fab->group_by_mlid[sf_hash_mlid(g->seg, g->mlid)], g, false);
	if (g->mlid_owned)
		sf_mlid_mark(&fab->segs[g->seg], g->mlid, false);
	fab->segs[g->seg].ngroups--;
	g->gen++;
	sf_groups_change_end(fab);
}

void sf_qp_detach_all_locked(struct sf_fabric *fab, uint32_t qp_index)
{
	/* Most QPs (senders) are attached to nothing: no scan of the group table. */
	for (uint32_t i = 0; i < SF_MAX_GROUPS && fab->qps[qp_index].nattached; i++) {
		struct sf_group *g = &fab->groups[i];

		if (!g->in_use)
			continue;
		if (!sf_group_detach_locked(fab, g, qp_index))
			sf_group_put_locked(fab, g);
	}
}

static void sf_group_masks_update(struct sf_fabric *fab, struct sf_group *g, uint32_t dev)
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
	sf_members_changed(fab);
}

struct sf_join *sf_join_add_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t dev,
				   bool send_only, int32_t chan_pid, uint32_t chan_serial,
				   uint64_t id_cookie, uint64_t mc_cookie)
{
	for (uint32_t n = 0, i = fab->join_hint; n < SF_MAX_JOINS; n++, i = (i + 1) % SF_MAX_JOINS) {
		struct sf_join *j = &fab->joins[i];

		if (j->own.pid)
			continue;
		fab->join_hint = (i + 1) % SF_MAX_JOINS;
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
		sf_group_masks_update(fab, g, dev);
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
	sf_group_masks_update(fab, g, j->dev);
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
	if (!g->njoins)
		g->rec_set = 0; /* the SA deletes a group with its last member */
	sf_group_put_locked(fab, g);
}

int sf_group_rec_join_locked(struct sf_group *g, uint64_t mask, uint32_t qkey, uint8_t tclass,
			     uint32_t sl_flow_hop)
{
	if (!g->rec_set) {
		g->rec_qkey = qkey;
		g->rec_tclass = tclass;
		g->rec_sl_flow_hop = sl_flow_hop;
		g->rec_set = 1;
		return 0;
	}
	if ((mask & SF_MCR_QKEY && qkey != g->rec_qkey) ||
	    (mask & SF_MCR_TCLASS && tclass != g->rec_tclass) ||
	    (mask & SF_MCR_SL && (sl_flow_hop ^ g->rec_sl_flow_hop) >> 28) ||
	    (mask & SF_MCR_FLOW && ((sl_flow_hop ^ g->rec_sl_flow_hop) >> 8 & 0xfffff)) ||
	    (mask & SF_MCR_HOP && ((sl_flow_hop ^ g->rec_sl_flow_hop) & 0xff)))
		return -EINVAL;
	return 0;
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
