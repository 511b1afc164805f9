// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1: multicast (rdma_join_multicast[_ex],
 * rdma_leave_multicast): the MGID of a join (IB: the SA assigns one or maps the IP
 * address; RoCE: ::ffff:a.b.c.d), the membership in the fabric, the MULTICAST_JOIN
 * event. Calls the core, addresses, QPs (the Q_Key) and events (cm_complete).
 */
#include "rdmacm_priv.h"

/* The zero MGID: "let the SA assign one". */
static const union ibv_gid cm_zero_gid;

/*
 * An MGID the SA assigns for a join of the zero MGID, in OpenSM's format: signature
 * 0xA01B (which cma_set_mgid recognises as "SA assigned"), the P_Key, and a value unique
 * on the fabric (pid, per-process serial). Fabric lock held.
 */
static void cm_sa_assign_mgid(uint32_t seg, uint16_t pkey, union ibv_gid *mgid)
{
	uint32_t pid = htobe32((uint32_t)getpid()), serial;

	do {
		memset(mgid, 0, sizeof(*mgid));
		mgid->raw[0] = 0xff;
		mgid->raw[1] = 0x10 | CM_IPOIB_SCOPE;
		mgid->raw[2] = 0xa0;
		mgid->raw[3] = 0x1b;
		mgid->raw[4] = (uint8_t)(pkey >> 8);
		mgid->raw[5] = (uint8_t)pkey;
		serial = htobe32(sf_serial_next());
		memcpy(&mgid->raw[8], &pid, 4);
		memcpy(&mgid->raw[12], &serial, 4);
	} while (sf_group_find(cmlib.fab, seg, mgid));
}

/*
 * cma_set_mgid (IB port): zero address: zero MGID (the SA assigns one); an IPv6 address
 * that is an SA-assigned MGID (ff1x:a01b) and AF_IB: verbatim; IP groups: the IPoIB
 * mapping with the RDMA CM signature for PS_UDP.
 */
static void cm_mgid_ib(const struct cm_id *idp, const struct sockaddr *sa, union ibv_gid *mgid)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (cm_addr_zero(sa)) {
		memset(mgid, 0, sizeof(*mgid));
	} else if (sa->sa_family == AF_INET6 &&
		   (be32toh(sin6->sin6_addr.s6_addr32[0]) & 0xfff0ffff) == 0xff10a01b) {
		memcpy(mgid->raw, &sin6->sin6_addr, sizeof(mgid->raw));
	} else if (sa->sa_family == AF_IB) {
		memcpy(mgid->raw, &((const struct sockaddr_ib *)sa)->sib_addr, sizeof(mgid->raw));
	} else {
		cm_ipoib_mc_map(sa, idp->pkey, idp->id.ps == RDMA_PS_UDP, mgid);
	}
}

/* The MULTICAST_JOIN event (cma_make_mc_event, ib_init_ah_from_mcmember). */
static void cm_join_event(struct cm_event *evt, struct cm_id *idp, struct cm_mc *mc,
			  const struct sf_dev *dev)
{
	struct rdma_ud_param *ud = &evt->ev.param.ud;

	cm_event_init(evt, idp, mc, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	ud->private_data = mc->context;
	ud->qp_num = SF_MCAST_QPN;
	ud->qkey = cm_qkey_locked(idp);
	ud->ah_attr.is_global = 1;
	ud->ah_attr.port_num = CM_PORT_NUM;
	ud->ah_attr.grh.dgid = mc->mgid;
	ud->ah_attr.grh.sgid_index = (uint8_t)idp->gid_index;
	if (dev->link == SF_LINK_IB) {
		/* The SA's MCMemberRecord: MLID, SL 0, rate of the port, our TClass. */
		ud->ah_attr.dlid = mc->mlid;
		ud->ah_attr.static_rate = IBV_RATE_100_GBPS;
		ud->ah_attr.grh.traffic_class = idp->tos_set ? idp->tos : 0;
	} else {
		ud->ah_attr.grh.hop_limit = CM_ROCE_HOP_LIMIT;
	}
}

/*
 * The kernel's rdma_join_multicast. Synchronous errors (-errno): EINVAL when the id has
 * no device or is neither bound nor resolved, when it is not UD (RDMA/cma: "Allow UD
 * qp_type to join multicast only", in 6.1 stable), on RoCE for the zero address;
 * ENODEV once the device was removed;
 * ENOTSUPP (524) on RoCE for anything but AF_INET (cma_iboe_join_multicast: an IPv6
 * group on a port whose default GID type is RoCE v2, as on mlx5, is refused; only RoCE v1
 * mode, set through configfs, would take it: applications attach an IPv6 group with
 * ibv_attach_mcast and join MLD on the netdev themselves); ENOMEM
 * when the fabric's group or join tables are full. Otherwise the membership is taken in
 * the fabric and MULTICAST_JOIN is queued; on an IB port that is not active the SA
 * cannot be reached (no SM AH: -EAGAIN) and MULTICAST_ERROR is queued instead.
 */
static int cm_join_locked(struct cm_id *idp, struct cm_mc *mc, struct cm_event *evt)
{
	const struct sockaddr *sa = (const struct sockaddr *)&mc->addr;
	struct sf_fabric *fab = cmlib.fab;
	const struct sf_dev *dev;
	struct sf_group *grp;
	struct sf_join *j = NULL;
	bool send_only = mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;

	if (idp->dev < 0 || (idp->state != CM_ADDR_BOUND && idp->state != CM_ADDR_RESOLVED &&
			     idp->state != CM_ROUTE_RESOLVED))
		return -EINVAL;
	if (idp->id.qp_type != IBV_QPT_UD)
		return -EINVAL;
	dev = &fab->devs[idp->dev];
	if (dev->removed)
		return -ENODEV;
	if (dev->link == SF_LINK_IB) {
		cm_mgid_ib(idp, sa, &mc->mgid);
		if (atomic_load(&dev->port_state) != IBV_PORT_ACTIVE) {
			cm_event_init(evt, idp, mc, RDMA_CM_EVENT_MULTICAST_ERROR, -EAGAIN);
			evt->ev.param.ud.private_data = mc->context;
			return 0;
		}
	} else {
		if (cm_addr_zero(sa))
			return -EINVAL;
		if (sa->sa_family != AF_INET)
			return -CM_ENOTSUPP;
		sf_gid_from_ipv4(&mc->mgid, ((const struct sockaddr_in *)sa)->sin_addr.s_addr);
	}

	sf_lock(fab);
	if (dev->link == SF_LINK_IB && !memcmp(&mc->mgid, &cm_zero_gid, sizeof(mc->mgid)))
		cm_sa_assign_mgid(dev->seg, idp->pkey, &mc->mgid);
	grp = sf_group_get_locked(fab, dev->seg, &mc->mgid, 0);
	/*
	 * IB: the kernel's SA join (cma_join_ib_multicast) sends the IPoIB broadcast group's
	 * record (SL, flow label, TClass: 0 with OpenSM's defaults) with the id's Q_Key
	 * (RDMA_UDP_QKEY for PS_UDP and PS_IB), all four in its component mask: a group that
	 * exists with another Q_Key refuses it (OpenSM: ERR_REQ_INVALID), which the kernel
	 * reports as MULTICAST_ERROR with -EINVAL (sa_query.c: a MAD status is -EINVAL).
	 */
	if (grp && dev->link == SF_LINK_IB &&
	    sf_group_rec_join_locked(grp, SF_MCR_QKEY | SF_MCR_SL | SF_MCR_FLOW | SF_MCR_TCLASS,
				     cm_qkey_locked(idp), 0, 0)) {
		sf_group_put_locked(fab, grp);
		sf_unlock(fab);
		cm_event_init(evt, idp, mc, RDMA_CM_EVENT_MULTICAST_ERROR, -EINVAL);
		evt->ev.param.ud.private_data = mc->context;
		return 0;
	}
	if (grp) {
		j = sf_join_add_locked(fab, grp, (uint32_t)idp->dev, send_only, getpid(),
				       idp->chan->serial, (uintptr_t)&idp->id, (uintptr_t)mc);
		if (!j)
			sf_group_put_locked(fab, grp);
	}
	if (!j) {
		sf_unlock(fab);
		return -ENOMEM;
	}
	mc->slot = (int32_t)(j - fab->joins);
	mc->slot_gen = j->own.gen;
	mc->mlid = dev->link == SF_LINK_IB ? (uint16_t)grp->mlid : 0;
	sf_unlock(fab);

	cm_join_event(evt, idp, mc, dev);
	return 0;
}

/*
 * The id's joins, indexed (cmlib.lock held): by address for rdma_leave_multicast and by
 * cookie (the cm_mc pointer) for the fabric's notifications, in two tables of chains that
 * double when the joins outnumber the buckets, so that leaving one of 16 000 groups
 * costs a short chain, not a walk of the id's list (librdmacm walks its list: the
 * simulated one must not make a bridge's shutdown quadratic). Without a table (its
 * allocation failed) the list is walked.
 */
#define CM_MC_BUCKETS_MIN 16u

static uint32_t cm_mc_hash_addr(const struct sockaddr *sa, socklen_t len, uint32_t nb)
{
	const uint8_t *p = (const uint8_t *)sa;
	uint64_t h = 0xcbf29ce484222325ull;

	for (socklen_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ h >> 32) & (nb - 1);
}

static uint32_t cm_mc_hash_ptr(uint64_t cookie, uint32_t nb)
{
	return (uint32_t)(cookie * 0x9e3779b97f4a7c15ull >> 32) & (nb - 1);
}

static void cm_mc_hash_in(struct cm_id *idp, struct cm_mc *mc)
{
	const struct sockaddr *sa = (const struct sockaddr *)&mc->addr;
	uint32_t a = cm_mc_hash_addr(sa, cm_addrlen(sa), idp->mc_buckets);
	uint32_t p = cm_mc_hash_ptr((uintptr_t)mc, idp->mc_buckets);

	mc->hnext_addr = idp->mc_by_addr[a];
	idp->mc_by_addr[a] = mc;
	mc->hnext_ptr = idp->mc_by_ptr[p];
	idp->mc_by_ptr[p] = mc;
}

/* Rebuild the tables with `nb` buckets (a power of two); false: no memory, kept as is. */
static bool cm_mc_rehash(struct cm_id *idp, uint32_t nb)
{
	struct cm_mc **a = calloc(nb, sizeof(*a)), **p = calloc(nb, sizeof(*p));

	if (!a || !p) {
		free(a);
		free(p);
		return false;
	}
	free(idp->mc_by_addr);
	free(idp->mc_by_ptr);
	idp->mc_by_addr = a;
	idp->mc_by_ptr = p;
	idp->mc_buckets = nb;
	for (struct cm_mc *mc = idp->mcs; mc; mc = mc->next)
		cm_mc_hash_in(idp, mc);
	return true;
}

/* Put mc on the id's list (first) and in its tables. */
static void cm_mc_link_locked(struct cm_id *idp, struct cm_mc *mc)
{
	mc->serial = ++idp->mc_serial;
	mc->next = idp->mcs;
	if (mc->next)
		mc->next->pprev = &mc->next;
	mc->pprev = &idp->mcs;
	idp->mcs = mc;
	idp->nmcs++;
	if (idp->nmcs > idp->mc_buckets &&
	    cm_mc_rehash(idp, idp->mc_buckets ? idp->mc_buckets * 2 : CM_MC_BUCKETS_MIN))
		return; /* the rebuild put mc in */
	if (idp->mc_buckets)
		cm_mc_hash_in(idp, mc);
}

/* Take mc off the id's list and tables. */
static void cm_mc_unlink_locked(struct cm_id *idp, struct cm_mc *mc)
{
	*mc->pprev = mc->next;
	if (mc->next)
		mc->next->pprev = mc->pprev;
	idp->nmcs--;
	if (!idp->mc_buckets)
		return;
	{
		const struct sockaddr *sa = (const struct sockaddr *)&mc->addr;
		struct cm_mc **pp =
			&idp->mc_by_addr[cm_mc_hash_addr(sa, cm_addrlen(sa), idp->mc_buckets)];

		while (*pp != mc)
			pp = &(*pp)->hnext_addr;
		*pp = mc->hnext_addr;
		pp = &idp->mc_by_ptr[cm_mc_hash_ptr((uintptr_t)mc, idp->mc_buckets)];
		while (*pp != mc)
			pp = &(*pp)->hnext_ptr;
		*pp = mc->hnext_ptr;
	}
}

/* The newest join of the id with address `addr` (memcmp over `len` bytes), or NULL. */
static struct cm_mc *cm_mc_find_addr_locked(struct cm_id *idp, const struct sockaddr *addr,
					    socklen_t len)
{
	struct cm_mc *best = NULL;

	if (!idp->mc_buckets) {
		for (struct cm_mc *mc = idp->mcs; mc; mc = mc->next)
			if (!memcmp(&mc->addr, addr, len))
				return mc;
		return NULL;
	}
	for (struct cm_mc *mc = idp->mc_by_addr[cm_mc_hash_addr(addr, len, idp->mc_buckets)]; mc;
	     mc = mc->hnext_addr)
		if (!memcmp(&mc->addr, addr, len) && (!best || mc->serial > best->serial))
			best = mc;
	return best;
}

/* A live join of the id by its cookie, or NULL. */
struct cm_mc *cm_mc_lookup_locked(struct cm_id *idp, uint64_t cookie)
{
	struct cm_mc *mc;

	if (!idp->mc_buckets) {
		for (mc = idp->mcs; mc; mc = mc->next)
			if ((uintptr_t)mc == cookie)
				return mc;
		return NULL;
	}
	for (mc = idp->mc_by_ptr[cm_mc_hash_ptr(cookie, idp->mc_buckets)]; mc; mc = mc->hnext_ptr)
		if ((uintptr_t)mc == cookie)
			return mc;
	return NULL;
}

/* Free the id's tables (rdma_destroy_id, after its joins were freed). */
void cm_mc_index_free(struct cm_id *idp)
{
	free(idp->mc_by_addr);
	free(idp->mc_by_ptr);
	idp->mc_by_addr = idp->mc_by_ptr = NULL;
	idp->mc_buckets = idp->nmcs = 0;
}

/*
 * rdma_join_multicast2: the join record goes on the id's list, the kernel queues the
 * event (MULTICAST_JOIN or MULTICAST_ERROR), a synchronous id waits for it.
 */
static int cm_join(struct rdma_cm_id *id, struct sockaddr *addr, socklen_t addrlen,
		   uint16_t join_flags, void *context)
{
	struct cm_id *idp = container_of(id, struct cm_id, id);
	struct cm_event *evt;
	struct cm_mc *mc;
	int ret;

	mc = calloc(1, sizeof(*mc));
	evt = malloc(sizeof(*evt));
	if (!mc || !evt) {
		free(mc);
		free(evt);
		return cm_err(ENOMEM);
	}
	mc->idp = idp;
	mc->context = context;
	mc->join_flags = join_flags;
	mc->slot = -1;
	memcpy(&mc->addr, addr, addrlen);

	pthread_mutex_lock(&cmlib.lock);
	ret = cm_join_locked(idp, mc, evt);
	if (ret) {
		pthread_mutex_unlock(&cmlib.lock);
		free(mc);
		free(evt);
		return cm_err(-ret);
	}
	cm_mc_link_locked(idp, mc);
	cm_chan_push_locked(idp->chan, evt);
	pthread_mutex_unlock(&cmlib.lock);
	return cm_complete(idp);
}

/*
 * rdma_join_multicast_ex (RDMACM_1.1): comp_mask beyond the defined bits: ENOTSUP;
 * ADDRESS and JOIN_FLAGS are required and the flags must be FULLMEMBER (0) or
 * SENDONLY_FULLMEMBER (1), else EINVAL.
 */
SF_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	socklen_t addrlen;

	if (!id || !mc_join_attr)
		return cm_err(EINVAL);
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return cm_err(ENOTSUP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return cm_err(EINVAL);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cm_err(EINVAL);
	addrlen = cm_addrlen(mc_join_attr->addr);
	if (!addrlen)
		return cm_err(EINVAL);
	return cm_join(id, mc_join_attr->addr, addrlen, (uint16_t)mc_join_attr->join_flags,
		       context);
}

/* rdma_join_multicast: a full-member join. */
SF_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	socklen_t addrlen = cm_addrlen(addr);

	if (!id || !addrlen)
		return cm_err(EINVAL);
	return cm_join(id, addr, addrlen, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

/*
 * rdma_leave_multicast: the newest join of the id with this address (librdmacm: the first
 * on its newest-first list, memcmp over the address length; none: EADDRNOTAVAIL) leaves
 * the list, found through the id's address table (O(1), not a walk of the list); id->qp
 * is detached from the group librdmacm attached it to (unless send-only); the kernel
 * drops the membership and the join's unread events; then the call waits until the
 * join's delivered events are acked.
 */
SF_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	socklen_t addrlen = cm_addrlen(addr);
	struct cm_mc *mc;
	struct cm_id *idp;

	if (!id || !addrlen)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&cmlib.lock);
	mc = cm_mc_find_addr_locked(idp, addr, addrlen);
	if (!mc) {
		pthread_mutex_unlock(&cmlib.lock);
		return cm_err(EADDRNOTAVAIL);
	}
	cm_mc_unlink_locked(idp, mc);
	if (id->qp && mc->seen && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		ibv_detach_mcast(id->qp, &mc->umgid, mc->umlid);
	cm_mc_release_locked(mc);
	cm_chan_take_locked(idp->chan, idp, mc, false);
	cm_wait_acked_locked(&mc->completed, &mc->reported);
	pthread_mutex_unlock(&cmlib.lock);
	free(mc);
	return 0;
}
