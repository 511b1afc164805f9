// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1: binding and resolving (rdma_bind_addr, rdma_resolve_addr,
 * rdma_resolve_route): ports, port spaces, the device an address or GID belongs to, the
 * path record, as the kernel's cma.c does them. Calls the core, addresses and events
 * (cm_complete).
 */
#include "rdmacm_priv.h"

/* Is the port taken by another id of this process (cma_check_port)? */
static bool cm_port_taken_locked(const struct cm_id *self, const struct sockaddr *addr,
				 uint16_t port)
{
	for (const struct cm_id *o = cmlib.ids; o; o = o->next) {
		const struct sockaddr *oa = (const struct sockaddr *)&o->ksrc;

		if (o == self || !o->port_bound || o->port != port || o->id.ps != self->id.ps)
			continue;
		if (self->reuseaddr && o->reuseaddr)
			continue;
		if (cm_addr_zero(oa) || cm_addr_zero(addr) || cm_addr_equal(oa, addr))
			return true;
	}
	return false;
}

/* cma_alloc_any_port: next free port of the ephemeral range, from a per-process rover. */
static int cm_port_alloc_locked(const struct cm_id *self, const struct sockaddr *addr)
{
	uint32_t n = cmlib.port_hi - cmlib.port_lo + 1;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t p = cmlib.port_lo + (cmlib.port_next - cmlib.port_lo + i) % n;

		if (!cm_port_taken_locked(self, addr, (uint16_t)p)) {
			cmlib.port_next = p + 1 > cmlib.port_hi ? cmlib.port_lo : p + 1;
			return (int)p;
		}
	}
	return -EADDRNOTAVAIL;
}

/*
 * cma_select_ib_ps: the port space an AF_IB address selects through its service ID, and
 * the SID rewritten to carry it. -EPROTONOSUPPORT when the id's port space cannot use it.
 */
static int cm_ib_select_ps(const struct cm_id *idp, struct sockaddr_ib *sib)
{
	uint64_t mask = be64toh(sib->sib_sid_mask) & RDMA_IB_IP_PS_MASK;
	uint64_t sid = be64toh(sib->sib_sid) & mask;
	enum rdma_port_space ps = idp->id.ps;
	uint64_t sid_ps;

	if (ps == RDMA_PS_IB && sid == (RDMA_IB_PS_IB & mask))
		sid_ps = RDMA_IB_PS_IB;
	else if ((ps == RDMA_PS_IB || ps == RDMA_PS_TCP) && sid == (RDMA_IB_IP_PS_TCP & mask))
		sid_ps = RDMA_IB_IP_PS_TCP;
	else if ((ps == RDMA_PS_IB || ps == RDMA_PS_UDP) && sid == (RDMA_IB_IP_PS_UDP & mask))
		sid_ps = RDMA_IB_IP_PS_UDP;
	else
		return -EPROTONOSUPPORT;
	sib->sib_sid = htobe64(sid_ps | cm_addr_port((struct sockaddr *)sib));
	sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK | be64toh(sib->sib_sid_mask));
	return 0;
}

/*
 * Bind the "kernel" side of an id to a device: the GID the address maps to, its index
 * and the P_Key (IPoIB broadcast P_Key on IB; an Ethernet broadcast address carries
 * none, so 0 on RoCE, as ib_addr_get_pkey returns there). PS_IPOIB is IB only
 * (cma_acquire_dev*: -EINVAL).
 */
static int cm_acquire_dev_locked(struct cm_id *idp, int d, const struct sockaddr *src)
{
	const struct sf_dev *dev = &cmlib.fab->devs[d];

	if (dev->link != SF_LINK_IB && idp->id.ps == RDMA_PS_IPOIB)
		return -EINVAL;
	idp->dev = d;
	if (dev->link == SF_LINK_IB) {
		idp->gid_index = 0;
		idp->ksgid = dev->gids[0].gid;
		/* IPoIB always sets the full-membership bit in its broadcast P_Key. */
		idp->pkey = (uint16_t)(dev->pkey | 0x8000);
	} else if (src->sa_family == AF_INET6 && !cm_addr_zero(src)) {
		/*
		 * An IPv6 address of the netdev: its RoCE v2 GID entry, the port's default
		 * GID type (cma_acquire_dev_by_src_ip, cma_validate_port with
		 * default_gid_type RoCE v2 as mlx5 ports have it, cma.c).
		 */
		int g;

		cm_ip2gid(src, &idp->ksgid);
		g = sf_dev_v2_gid_index(dev, &idp->ksgid);
		if (g < 0)
			return -ENODEV;
		idp->gid_index = (uint32_t)g;
		idp->pkey = 0;
	} else {
		idp->gid_index = sf_dev_ipv4_gid_index(dev);
		cm_ip2gid(src, &idp->ksgid);
		idp->pkey = 0;
	}
	return 0;
}

/*
 * rdma_bind_addr in the kernel: state IDLE → ADDR_BOUND. A wildcard address binds no
 * device. AF_INET: the device that owns the address (none: -EADDRNOTAVAIL, or -ENODEV
 * when a host interface owns it). AF_INET6 likewise: the Ethernet device whose netdev has
 * the address (its global address or its fe80:: link-local one, which needs the
 * netdev's index in sin6_scope_id), bound to the RoCE v2 GID entry of that address.
 * AF_IB: the IB device that has the GID (-ENODEV otherwise), P_Key from sib_pkey.
 * Port 0 takes an ephemeral port; a used port: -EADDRINUSE. Returns 0 or -errno.
 */
int cm_bind_locked(struct cm_id *idp, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_storage src;
	struct sockaddr *sa = (struct sockaddr *)&src;
	int d = -1, port, ret;
	uint32_t gidx = 0;

	if (idp->state != CM_IDLE)
		return -EINVAL;
	memset(&src, 0, sizeof(src));
	memcpy(&src, addr, len);

	if (!cm_addr_zero(sa)) {
		switch (sa->sa_family) {
		case AF_INET:
			d = cm_dev_by_ipv4(((struct sockaddr_in *)sa)->sin_addr.s_addr);
			if (d < 0)
				return cm_host_owns(sa) ? -ENODEV : -EADDRNOTAVAIL;
			break;
		case AF_INET6: {
			const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

			/*
			 * cma_check_linklocal: a link-local address needs its interface
			 * (sin6_scope_id, else -EINVAL), which becomes bound_dev_if; the GID
			 * is then looked up on that netdev only (cma_acquire_dev_by_src_ip):
			 * another interface's index gives -ENODEV. The netdev of a RoCE port
			 * has ifindex CM_IFINDEX_BASE + device index (its GID table's).
			 */
			if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !s6->sin6_scope_id)
				return -EINVAL;
			d = cm_dev_by_ipv6(&s6->sin6_addr);
			if (d < 0)
				return cm_host_owns(sa) ? -ENODEV : -EADDRNOTAVAIL;
			if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) &&
			    s6->sin6_scope_id != CM_IFINDEX_BASE + (uint32_t)d)
				return -ENODEV;
			break;
		}
		case AF_IB:
			d = sf_dev_by_gid(cmlib.fab, cm_sib_gid(sa), &gidx);
			if (!cm_dev_usable(d) || cmlib.fab->devs[d].link != SF_LINK_IB)
				return -ENODEV;
			break;
		}
		if (cmlib.fab->devs[d].link != SF_LINK_IB && idp->id.ps == RDMA_PS_IPOIB)
			return -EINVAL;
	}
	if (sa->sa_family == AF_IB) {
		ret = cm_ib_select_ps(idp, (struct sockaddr_ib *)sa);
		if (ret)
			return ret;
	}
	port = cm_addr_port(sa);
	if (!port) {
		port = cm_port_alloc_locked(idp, sa);
		if (port < 0)
			return port;
	} else if (cm_port_taken_locked(idp, sa, (uint16_t)port)) {
		return -EADDRINUSE;
	}
	cm_addr_set_port(sa, (uint16_t)port);

	if (d >= 0) {
		ret = cm_acquire_dev_locked(idp, d, sa);
		if (ret)
			return ret;
		if (sa->sa_family == AF_IB) {
			idp->gid_index = gidx;
			memcpy(idp->ksgid.raw, &((struct sockaddr_ib *)sa)->sib_addr,
			       sizeof(idp->ksgid.raw));
			idp->pkey = be16toh(((struct sockaddr_ib *)sa)->sib_pkey);
		}
	} else {
		cm_ip2gid(sa, &idp->ksgid);
	}
	idp->ksrc = src;
	idp->port = (uint16_t)port;
	idp->port_bound = true;
	idp->state = CM_ADDR_BOUND;
	return 0;
}

/*
 * rdma_bind_addr: librdmacm passes the address to the kernel and then queries the
 * result. Errors: EINVAL (bad family, already bound), EADDRNOTAVAIL (no device owns the
 * address), ENODEV, EADDRINUSE, EPROTONOSUPPORT (AF_IB SID of another port space).
 */
SF_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *idp;
	socklen_t len = cm_addrlen(addr);
	int ret;

	if (!len || !id)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&cmlib.lock);
	ret = cm_bind_locked(idp, addr, len);
	if (!ret)
		ret = cm_id_publish_locked(idp);
	else
		ret = cm_err(-ret);
	pthread_mutex_unlock(&cmlib.lock);
	return ret;
}

/* First simulated device with an active port, else the first device (cma_bind_loopback). */
static int cm_loopback_dev(void)
{
	int first = -1;

	for (uint32_t d = 0; d < cmlib.fab->ndevs; d++) {
		if (!cm_dev_usable((int)d))
			continue;
		if (atomic_load(&cmlib.fab->devs[d].port_state) == IBV_PORT_ACTIVE)
			return (int)d;
		if (first < 0)
			first = (int)d;
	}
	return first;
}

/* The IB device for an AF_IB destination: its own GID, else one on the same subnet. */
static int cm_ib_dev_for(const union ibv_gid *dgid)
{
	int cand = -1;

	for (uint32_t d = 0; d < cmlib.fab->ndevs; d++) {
		const struct sf_dev *dev = &cmlib.fab->devs[d];

		if (!cm_dev_usable((int)d) || dev->link != SF_LINK_IB)
			continue;
		for (int i = 0; i < SF_GID_MAX; i++) {
			if (!dev->gids[i].valid)
				continue;
			if (!memcmp(&dev->gids[i].gid, dgid, sizeof(*dgid)))
				return (int)d;
			if (cand < 0 &&
			    dev->gids[i].gid.global.subnet_prefix == dgid->global.subnet_prefix)
				cand = (int)d;
		}
	}
	return cand;
}

/*
 * The IPv6 source address a route through Ethernet device `dev` to `dst` gets (RFC 6724
 * rule 2, scope): the link-local one (fe80::<EUI-64>, GID entry 0/1) for a link-local
 * destination or a multicast group of interface- or link-local scope (ff01::/16,
 * ff02::/16), else the global address, or the link-local one when there is none.
 */
static void cm_ipv6_source(const struct sf_dev *dev, const struct sockaddr *dst,
			   struct in6_addr *src)
{
	const struct in6_addr *a = &((const struct sockaddr_in6 *)dst)->sin6_addr;
	bool link = IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_MC_LINKLOCAL(a) ||
		    IN6_IS_ADDR_MC_NODELOCAL(a);

	if (!link && dev->ipv6_prefix)
		memcpy(src->s6_addr, dev->ipv6, 16);
	else
		memcpy(src->s6_addr, dev->gids[0].gid.raw, 16);
}

/*
 * Address resolution in the kernel (rdma_resolve_addr, addr_handler). Returns 0 with
 * the event to queue (ADDR_RESOLVED or ADDR_ERROR), or -errno for a synchronous error.
 *
 * Device choice for an id not bound to a device (the simulation has no routing table,
 * so this stands for the host's routes):
 *  - wildcard or loopback destination: first device with an active port (as
 *    cma_bind_loopback);
 *  - multicast destination (IPv4 or IPv6): the first device that has an IPv4 address,
 *    i.e. a multicast route through the first RDMA interface;
 *  - unicast IPv4: the device whose subnet contains it; none: the route would leave
 *    through a host interface without RDMA, so ADDR_ERROR with -ENODEV (the kernel's
 *    cma_acquire_dev_by_src_ip result in addr_handler); unicast IPv6 likewise, with
 *    the Ethernet devices' IPv6 prefixes (fe80::/64: a device on the segment of the
 *    port that owns the address); the source becomes the device's address of the same
 *    scope (link-local for a link-local or link-scope multicast destination, else the
 *    global one), as IPv6 source address selection picks it;
 *  - AF_IB: the IB device with that GID or one on its subnet, else -ENODEV at once.
 * An id bound to a device resolves a unicast IPv4 address only inside that device's
 * subnet (else ADDR_ERROR -ENETUNREACH); multicast and loopback always resolve.
 */
static int cm_resolve_locked(struct cm_id *idp, const struct sockaddr *src,
			     const struct sockaddr *dst, socklen_t dstlen, struct cm_event *evt)
{
	const struct sf_dev *dev;
	struct sockaddr *ksrc;
	int d = -1, status = 0, ret;

	if (idp->state == CM_IDLE) {
		struct sockaddr_storage any;

		if (!src || !src->sa_family) {
			/* cma_bind_addr: the wildcard of the destination's family. */
			memset(&any, 0, sizeof(any));
			any.ss_family = dst->sa_family;
			if (dst->sa_family == AF_INET6)
				((struct sockaddr_in6 *)&any)->sin6_scope_id =
					((const struct sockaddr_in6 *)dst)->sin6_scope_id;
			else if (dst->sa_family == AF_IB)
				((struct sockaddr_ib *)&any)->sib_pkey =
					((const struct sockaddr_ib *)dst)->sib_pkey;
			src = (const struct sockaddr *)&any;
		}
		ret = cm_bind_locked(idp, src, cm_addrlen(src));
		if (ret)
			return ret;
	}
	ksrc = (struct sockaddr *)&idp->ksrc;
	if (ksrc->sa_family != dst->sa_family)
		return -EINVAL;
	if (idp->state != CM_ADDR_BOUND)
		return -EINVAL;

	memset(&idp->kdst, 0, sizeof(idp->kdst));
	memcpy(&idp->kdst, dst, dstlen);

	if (cm_addr_zero(dst) || cm_addr_loopback(dst)) {
		d = idp->dev >= 0 ? idp->dev : cm_loopback_dev();
		if (d < 0)
			return -ENODEV;
	} else if (dst->sa_family == AF_IB) {
		d = idp->dev >= 0 ? idp->dev : cm_ib_dev_for(cm_sib_gid(dst));
		if (d < 0)
			return -ENODEV;
	} else if (cm_addr_multicast(dst)) {
		d = idp->dev;
		for (uint32_t i = 0; d < 0 && i < cmlib.fab->ndevs; i++)
			if (cm_dev_usable((int)i) && cmlib.fab->devs[i].ipv4)
				d = (int)i;
		if (d < 0)
			status = -ENODEV;
	} else if (dst->sa_family == AF_INET) {
		uint32_t a = ((const struct sockaddr_in *)dst)->sin_addr.s_addr;

		if (idp->dev >= 0) {
			d = idp->dev;
			if (!cm_dev_subnet_has(d, a))
				status = -ENETUNREACH;
		} else {
			for (uint32_t i = 0; d < 0 && i < cmlib.fab->ndevs; i++)
				if (cm_dev_usable((int)i) && cm_dev_subnet_has((int)i, a))
					d = (int)i;
			if (d < 0)
				status = -ENODEV;
		}
	} else if (dst->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)dst)->sin6_addr;

		if (idp->dev >= 0) {
			d = idp->dev;
			if (!cm_dev_subnet6_has(d, a))
				status = -ENETUNREACH;
		} else {
			for (uint32_t i = 0; d < 0 && i < cmlib.fab->ndevs; i++)
				if (cm_dev_usable((int)i) && cm_dev_subnet6_has((int)i, a))
					d = (int)i;
			if (d < 0)
				status = -ENODEV;
		}
	} else {
		status = idp->dev >= 0 ? -ENETUNREACH : -ENODEV;
	}

	if (!status && idp->dev < 0) {
		if (cm_addr_zero(dst) || cm_addr_loopback(dst)) {
			/*
			 * cma_bind_loopback: the port's GID and P_Key, the source address stays
			 * the wildcard. On RoCE the RoCEv2 IPv4 GID is used so that joins get a
			 * usable source GID.
			 */
			status = cm_acquire_dev_locked(idp, d, ksrc);
			if (!status && cmlib.fab->devs[d].link != SF_LINK_IB)
				idp->ksgid = cmlib.fab->devs[d].gids[idp->gid_index].gid;
		} else if (dst->sa_family == AF_IB) {
			/* cma_resolve_ib_dev: the source takes the port GID. */
			struct sockaddr_ib *sib = (struct sockaddr_ib *)ksrc;

			idp->dev = d;
			idp->gid_index = 0;
			idp->ksgid = cmlib.fab->devs[d].gids[0].gid;
			memcpy(&sib->sib_addr, &idp->ksgid, sizeof(sib->sib_addr));
			idp->pkey = be16toh(sib->sib_pkey);
		} else {
			/* The route's source address: the device's address. */
			if (ksrc->sa_family == AF_INET)
				((struct sockaddr_in *)ksrc)->sin_addr.s_addr =
					cmlib.fab->devs[d].ipv4;
			else if (ksrc->sa_family == AF_INET6 &&
				 cmlib.fab->devs[d].link == SF_LINK_ETH)
				cm_ipv6_source(&cmlib.fab->devs[d], dst,
					       &((struct sockaddr_in6 *)ksrc)->sin6_addr);
			status = cm_acquire_dev_locked(idp, d, ksrc);
		}
		if (status) {
			idp->dev = -1;
			if (ksrc->sa_family == AF_INET)
				((struct sockaddr_in *)ksrc)->sin_addr.s_addr = htonl(INADDR_ANY);
			else if (ksrc->sa_family == AF_INET6)
				memset(&((struct sockaddr_in6 *)ksrc)->sin6_addr, 0,
				       sizeof(struct in6_addr));
		}
	}

	if (status) {
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_ADDR_ERROR, status);
		return 0;
	}

	/* The destination's "hardware address" as ucma_query_gid reports it. */
	dev = &cmlib.fab->devs[d];
	memset(&idp->kdgid, 0, sizeof(idp->kdgid));
	if (cm_addr_zero(dst) || cm_addr_loopback(dst)) {
		idp->kdgid = idp->ksgid;
	} else if (dst->sa_family == AF_IB) {
		cm_ip2gid(dst, &idp->kdgid);
	} else if (dev->link != SF_LINK_IB) {
		cm_ip2gid(dst, &idp->kdgid);
	} else if (cm_addr_multicast(dst)) {
		cm_ipoib_mc_map(dst, idp->pkey, false, &idp->kdgid);
	} else if (dst->sa_family == AF_INET) {
		int peer = cm_dev_by_ipv4(((const struct sockaddr_in *)dst)->sin_addr.s_addr);

		if (peer >= 0)
			idp->kdgid = cmlib.fab->devs[peer].gids[0].gid;
	}
	idp->state = CM_ADDR_RESOLVED;
	cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	return 0;
}

/*
 * rdma_resolve_addr: binds an idle id first (to src, or the wildcard), then resolves
 * the destination at once (timeout_ms is not needed: the simulated fabric answers
 * immediately) and queues ADDR_RESOLVED or ADDR_ERROR. librdmacm copies dst into
 * id->route.addr.dst_addr right away; the device becomes visible in id->verbs when the
 * ADDR_RESOLVED event is read, as upstream.
 */
SF_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct cm_event *evt;
	struct cm_id *idp;
	socklen_t dst_len = cm_addrlen(dst_addr), src_len = cm_addrlen(src_addr);
	int ret;

	(void)timeout_ms;
	if (!id || !dst_len || (src_addr && !src_len))
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	evt = malloc(sizeof(*evt));
	if (!evt)
		return cm_err(ENOMEM);
	pthread_mutex_lock(&cmlib.lock);
	ret = cm_resolve_locked(idp, src_addr, dst_addr, dst_len, evt);
	if (ret) {
		pthread_mutex_unlock(&cmlib.lock);
		free(evt);
		return cm_err(-ret);
	}
	memcpy(&id->route.addr.dst_storage, dst_addr, dst_len);
	cm_chan_push_locked(idp->chan, evt);
	pthread_mutex_unlock(&cmlib.lock);
	return cm_complete(idp);
}

/*
 * rdma_resolve_route: the path to the resolved destination, one record, as the SA (IB)
 * or the kernel's RoCE route lookup would give it on this flat fabric: the two GIDs,
 * both LIDs on IB (none on Ethernet), the P_Key, the port's MTU, reversible, one hop.
 * Valid once the address is resolved (EINVAL before, as upstream); queues
 * ROUTE_RESOLVED. A route is what connected QPs need: rdma_connect is not simulated
 * (rdmacm_conn.c), but a program may resolve it before deciding what to do.
 */
SF_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct ibv_sa_path_rec *p;
	struct cm_event *evt;
	struct cm_id *idp;
	const struct sf_dev *d;
	int peer;

	(void)timeout_ms;
	if (!id)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	evt = malloc(sizeof(*evt));
	if (!evt)
		return cm_err(ENOMEM);
	pthread_mutex_lock(&cmlib.lock);
	if (idp->state != CM_ADDR_RESOLVED && idp->state != CM_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&cmlib.lock);
		free(evt);
		return cm_err(EINVAL);
	}
	d = &cmlib.fab->devs[idp->dev];
	p = &idp->path;
	memset(p, 0, sizeof(*p));
	p->sgid = idp->ksgid;
	p->dgid = idp->kdgid;
	if (d->link == SF_LINK_IB) {
		p->slid = htobe16((uint16_t)d->lid);
		peer = cm_ib_dev_for(&idp->kdgid);
		p->dlid = htobe16((uint16_t)(peer >= 0 ? cmlib.fab->devs[peer].lid : d->lid));
	} else {
		p->hop_limit = 1;
	}
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htobe16(idp->pkey);
	p->mtu_selector = 2; /* exactly */
	p->mtu = (uint8_t)d->active_mtu;
	p->rate_selector = 2;
	p->rate = IBV_RATE_100_GBPS;
	p->packet_life_time_selector = 2;
	p->packet_life_time = 18;
	p->traffic_class = idp->tos;
	id->route.path_rec = p;
	id->route.num_paths = 1;
	idp->state = CM_ROUTE_RESOLVED;
	cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	cm_chan_push_locked(idp->chan, evt);
	pthread_mutex_unlock(&cmlib.lock);
	return cm_complete(idp);
}
