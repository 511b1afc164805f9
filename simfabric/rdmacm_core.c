// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1, its core: the library's process-wide state (cmlib), its
 * start (cm_init: the fabric and the device list), the devices and their PDs, the event
 * channels' queues (push, pop, take, the wake-up token), the lookups of ids and joins by
 * cookie, ids' creation and options, and the device list. Every other rdmacm_*.c file
 * builds on these; this one calls none of them. rdmacm_priv.h has the types, the layering
 * and the lock order.
 */
#include "rdmacm_priv.h"

/* The library's process-wide state (rdmacm_priv.h). */
struct cm_lib cmlib = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

/* ---- devices ---- */

/* A random number without touching the application's random() state. */
uint32_t cm_random(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16) ^ (uint32_t)ts.tv_sec;
	}
	return v;
}

/* Read net.ipv4.ip_local_port_range, as inet_get_local_port_range does. */
static void cm_port_range_init(void)
{
	unsigned int lo = CM_EPHEMERAL_LO, hi = CM_EPHEMERAL_HI;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2 || !lo || lo > hi || hi > 65535) {
			lo = CM_EPHEMERAL_LO;
			hi = CM_EPHEMERAL_HI;
		}
		fclose(f);
	}
	cmlib.port_lo = lo;
	cmlib.port_hi = hi;
	cmlib.port_next = lo + cm_random() % (hi - lo + 1);
}

/*
 * ucma_init: attach to the fabric and list the devices (ibv_get_device_list), once per
 * process; a failure is not remembered (upstream retries on the next call). Devices are
 * opened lazily (ucma_init_device). Fails with ENODEV when there is no device.
 */
int cm_init(void)
{
	struct ibv_device **list;
	struct sf_fabric *fab;
	int n = 0;

	pthread_mutex_lock(&cmlib.lock);
	if (cmlib.inited) {
		pthread_mutex_unlock(&cmlib.lock);
		return 0;
	}
	fab = sf_get();
	if (!fab)
		goto err;
	list = ibv_get_device_list(&n);
	if (!list) {
		errno = ENODEV;
		goto err;
	}
	if (n == 0) {
		ibv_free_device_list(list);
		errno = ENODEV;
		goto err;
	}
	for (int i = 0; i < n; i++) {
		int d = sf_dev_by_name(fab, ibv_get_device_name(list[i]));

		if (d >= 0 && d < SF_MAX_DEVS)
			cmlib.devs[d].ibdev = list[i];
	}
	cmlib.fab = fab;
	cmlib.ibdevs = list;
	cm_port_range_init();
	cmlib.inited = true;
	pthread_mutex_unlock(&cmlib.lock);
	return 0;
err:
	pthread_mutex_unlock(&cmlib.lock);
	return -1;
}

/* A device librdmacm can use: listed by libibverbs and not removed. */
bool cm_dev_usable(int d)
{
	return d >= 0 && d < SF_MAX_DEVS && (uint32_t)d < cmlib.fab->ndevs && cmlib.devs[d].ibdev &&
	       !cmlib.fab->devs[d].removed;
}

/* The usable device that owns an IPv4 address (rdma_translate_ip), or -1. */
int cm_dev_by_ipv4(uint32_t addr)
{
	int d = sf_dev_by_ipv4(cmlib.fab, addr);

	return cm_dev_usable(d) ? d : -1;
}

/*
 * The usable Ethernet device whose netdev owns an IPv6 address (rdma_translate_ip): its
 * global address or its link-local one, both in its GID table as RoCE v2 entries; -1.
 */
int cm_dev_by_ipv6(const struct in6_addr *addr)
{
	union ibv_gid gid;
	uint32_t index;
	int d;

	/* ::ffff:a.b.c.d is no IPv6 address of a netdev (ipv6_chk_addr), though a GID. */
	if (IN6_IS_ADDR_V4MAPPED(addr))
		return -1;
	memcpy(gid.raw, addr, sizeof(gid.raw));
	d = sf_dev_by_gid(cmlib.fab, &gid, &index);
	if (!cm_dev_usable(d) || cmlib.fab->devs[d].link != SF_LINK_ETH)
		return -1;
	return d;
}

/* Is addr on device d's connected IPv6 subnet (its global prefix or fe80::/64)? */
bool cm_dev_subnet6_has(int d, const struct in6_addr *addr)
{
	const struct sf_dev *dev = &cmlib.fab->devs[d];
	uint32_t plen = dev->ipv6_prefix, i;

	if (dev->link != SF_LINK_ETH)
		return false;
	if (IN6_IS_ADDR_LINKLOCAL(addr)) {
		/* fe80::/64 is on every link: reachable when a port of this segment owns it. */
		union ibv_gid gid;
		int peer;

		memcpy(gid.raw, addr, sizeof(gid.raw));
		peer = sf_dev_by_gid(cmlib.fab, &gid, NULL);
		return peer >= 0 && cmlib.fab->devs[peer].seg == dev->seg;
	}
	if (!plen)
		return false;
	for (i = 0; i<16; i++, plen = plen> 8 ? plen - 8 : 0) {
		uint8_t m = plen >= 8 ? 0xff : (uint8_t)(0xff00u >> plen);

		if ((dev->ipv6[i] & m) != (addr->s6_addr[i] & m))
			return false;
	}
	return true;
}

/* Is addr on device d's connected IPv4 subnet (its route)? */
bool cm_dev_subnet_has(int d, uint32_t addr)
{
	const struct sf_dev *dev = &cmlib.fab->devs[d];
	uint32_t mask;

	if (!dev->ipv4)
		return false;
	mask = dev->ipv4_prefix ? htonl(~0u << (32 - dev->ipv4_prefix)) : 0;
	return (dev->ipv4 & mask) == (addr & mask);
}

/* ucma_init_device: open the device once; the context stays open for the process. */
static int cm_dev_open_locked(int d)
{
	struct cm_dev *cd = &cmlib.devs[d];

	if (!cd->verbs) {
		cd->verbs = ibv_open_device(cd->ibdev);
		if (!cd->verbs)
			return cm_err(ENODEV);
	}
	return 0;
}

/* ucma_get_device: open the device and its PD on first use, take a reference. */
static int cm_dev_get_locked(int d)
{
	struct cm_dev *cd = &cmlib.devs[d];

	if (cm_dev_open_locked(d))
		return -1;
	if (!cd->pd) {
		cd->pd = ibv_alloc_pd(cd->verbs);
		if (!cd->pd)
			return -1;
	}
	cd->refcnt++;
	return 0;
}

/* ucma_put_device: the PD goes with the last reference. */
void cm_dev_put_locked(int d)
{
	struct cm_dev *cd = &cmlib.devs[d];

	if (--cd->refcnt == 0 && cd->pd) {
		/* Upstream ignores a busy PD (the application still uses id->pd). */
		ibv_dealloc_pd(cd->pd);
		cd->pd = NULL;
	}
}

/* ---- event channels ---- */

/* Keep one SF_MSG_CM token in the socket while local events are queued. */
void cm_chan_kick_locked(struct cm_chan *ch)
{
	struct sf_msg msg = {.kind = SF_MSG_CM};

	if (ch->token || !ch->head)
		return;
	if (sendto(ch->ch.fd, &msg, sizeof(msg), MSG_DONTWAIT | MSG_NOSIGNAL,
		   (struct sockaddr *)&ch->self, ch->selflen) == (ssize_t)sizeof(msg))
		ch->token = true;
	/* Else the socket is full of datagrams, hence readable: the next read retries. */
}

/* Queue a local event (the kernel's ucma event list) and make the fd readable. */
void cm_chan_push_locked(struct cm_chan *ch, struct cm_event *evt)
{
	evt->next = NULL;
	if (ch->tail)
		ch->tail->next = evt;
	else
		ch->head = evt;
	ch->tail = evt;
	cm_chan_kick_locked(ch);
}

/* The oldest unread local event, or NULL (a stale token). */
struct cm_event *cm_chan_pop_locked(struct cm_chan *ch)
{
	struct cm_event *evt = ch->head;

	if (evt) {
		ch->head = evt->next;
		if (!ch->head)
			ch->tail = NULL;
		evt->next = NULL;
	}
	return evt;
}

/*
 * Take the queued events of an id (mc NULL) or of one join off a channel: the kernel
 * drops the undelivered events of a destroyed id or a left join. Returns them as a list
 * when `keep`, else frees them.
 */
struct cm_event *cm_chan_take_locked(struct cm_chan *ch, struct cm_id *idp, struct cm_mc *mc,
				     bool keep)
{
	struct cm_event **pp = &ch->head, *evt, *taken = NULL, **tail = &taken;

	ch->tail = NULL;
	while ((evt = *pp)) {
		if (evt->idp == idp && (!mc || evt->mc == mc)) {
			*pp = evt->next;
			evt->next = NULL;
			if (keep) {
				*tail = evt;
				tail = &evt->next;
			} else {
				free(evt);
			}
			continue;
		}
		ch->tail = evt;
		pp = &evt->next;
	}
	return taken;
}

/*
 * rdma_create_event_channel: an endpoint socket of this process on the fabric, blocking
 * and close-on-exec like the rdma_cm character device upstream opens. NULL with errno
 * (ENODEV without devices).
 */
SF_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_chan *ch;
	int fd, fl;

	if (cm_init())
		return NULL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	ch->serial = sf_serial_next();
	fd = sf_endpoint_open(ch->serial);
	if (fd < 0) {
		free(ch);
		errno = -fd;
		return NULL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	ch->selflen = sizeof(ch->self);
	if (getsockname(fd, (struct sockaddr *)&ch->self, &ch->selflen) < 0) {
		int e = errno;

		close(fd);
		free(ch);
		errno = e;
		return NULL;
	}
	ch->ch.fd = fd;
	return &ch->ch;
}

/*
 * rdma_destroy_event_channel: upstream closes the fd and frees the channel; ids still
 * using it are the application's bug. Events never read are dropped.
 */
SF_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_chan *ch = container_of(channel, struct cm_chan, ch);
	struct cm_event *evt;

	pthread_mutex_lock(&cmlib.lock);
	while ((evt = cm_chan_pop_locked(ch)))
		free(evt);
	pthread_mutex_unlock(&cmlib.lock);
	close(ch->ch.fd);
	free(ch);
}

/* ---- ids and joins: lookups, creation, release ---- */

/* A live id of this process by its cookie (the kernel's uid → ctx lookup), or NULL. */
struct cm_id *cm_id_lookup_locked(uint64_t cookie)
{
	for (struct cm_id *idp = cmlib.ids; idp; idp = idp->next)
		if ((uintptr_t)&idp->id == cookie)
			return idp;
	return NULL;
}

/*
 * rdma_create_id: PS_UDP and PS_IPOIB ids are UD, every other port space gets RC
 * (librdmacm passes IBV_QPT_RC; the kernel takes it for PS_IB, forces RC for PS_TCP and
 * rejects unknown port spaces with EINVAL). Without a channel the id is synchronous: it
 * gets a channel of its own and the calls that produce an event wait for it.
 */
SF_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			     void *context, enum rdma_port_space ps)
{
	struct cm_id *idp;

	if (cm_init())
		return -1;
	if (!id)
		return cm_err(EINVAL);
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
	case RDMA_PS_IB:
		break;
	default:
		return cm_err(EINVAL);
	}
	idp = calloc(1, sizeof(*idp));
	if (!idp)
		return cm_err(ENOMEM);
	if (!channel) {
		channel = rdma_create_event_channel();
		if (!channel) {
			free(idp);
			return -1;
		}
		idp->sync = true;
	}
	idp->id.context = context;
	idp->id.ps = ps;
	idp->id.qp_type = (ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP) ? IBV_QPT_UD : IBV_QPT_RC;
	idp->id.channel = channel;
	idp->chan = container_of(channel, struct cm_chan, ch);
	idp->state = CM_IDLE;
	idp->dev = -1;
	idp->cma_dev = -1;
	idp->listen_slot = -1;
	/* cma.c: id_priv->seq_num = get_random_u32() & 0xffffff (the RTR rq_psn). */
	idp->seq_num = cm_random() & 0xffffff;

	pthread_mutex_lock(&cmlib.lock);
	idp->next = cmlib.ids;
	cmlib.ids = idp;
	pthread_mutex_unlock(&cmlib.lock);
	*id = &idp->id;
	return 0;
}

/* Give up the fabric membership of a join (fabric lock taken here). */
void cm_mc_release_locked(struct cm_mc *mc)
{
	struct sf_fabric *fab = cmlib.fab;
	struct sf_join *j;

	if (mc->slot < 0)
		return;
	sf_lock(fab);
	j = &fab->joins[mc->slot];
	/* Only if still ours: a reset fabric or a reclaim may have taken it. */
	if (j->own.pid == getpid() && j->own.gen == mc->slot_gen && j->mc_cookie == (uintptr_t)mc)
		sf_join_del_locked(fab, j);
	sf_unlock(fab);
	mc->slot = -1;
}

/* Wait, cmlib.lock held, until every reported event was acked (librdmacm's cond waits). */
void cm_wait_acked_locked(const uint64_t *completed, const uint64_t *reported)
{
	while (*completed < *reported)
		pthread_cond_wait(&cmlib.cond, &cmlib.lock);
}

/*
 * What librdmacm learns about the id from the kernel (ucma_query_addr + ucma_query_gid):
 * the addresses, and on first sight of a device, that device (opened, with its PD),
 * port 1 and the P_Key.
 */
int cm_id_publish_locked(struct cm_id *idp)
{
	struct rdma_addr *ra = &idp->id.route.addr;

	memcpy(&ra->src_storage, &idp->ksrc, sizeof(ra->src_storage));
	memcpy(&ra->dst_storage, &idp->kdst, sizeof(ra->dst_storage));
	if (idp->cma_dev < 0 && idp->dev >= 0) {
		if (cm_dev_get_locked(idp->dev))
			return -1;
		idp->cma_dev = idp->dev;
		idp->id.verbs = cmlib.devs[idp->dev].verbs;
		idp->id.pd = cmlib.devs[idp->dev].pd;
		idp->id.port_num = CM_PORT_NUM;
		ra->addr.ibaddr.pkey = htobe16(idp->pkey);
	}
	ra->addr.ibaddr.sgid = idp->ksgid;
	ra->addr.ibaddr.dgid = idp->kdgid;
	return 0;
}

/* A zeroed event of `type` for an id (and join), as the kernel fills struct rdma_ucm_event_resp. */
void cm_event_init(struct cm_event *evt, struct cm_id *idp, struct cm_mc *mc,
		   enum rdma_cm_event_type type, int status)
{
	memset(evt, 0, sizeof(*evt));
	evt->idp = idp;
	evt->mc = mc;
	evt->ev.id = &idp->id;
	evt->ev.event = type;
	evt->ev.status = status;
}

/* ---- id options, the device list ---- */

/*
 * rdma_set_option, level RDMA_OPTION_ID: TOS (uint8_t, always accepted: the traffic
 * class of IB multicast joins) and REUSEADDR (int; ucma/rdma_set_reuseaddr: allowed when
 * the id is idle, or to turn it on later). Other levels and options: EINVAL. A wrong
 * optlen: EINVAL; no optval: EFAULT.
 */
SF_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			      size_t optlen)
{
	struct cm_id *idp;
	int ret = 0;

	if (!id)
		return cm_err(EINVAL);
	if (level != RDMA_OPTION_ID ||
	    (optname != RDMA_OPTION_ID_TOS && optname != RDMA_OPTION_ID_REUSEADDR))
		return cm_err(EINVAL);
	if (!optval)
		return cm_err(EFAULT);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&cmlib.lock);
	if (optname == RDMA_OPTION_ID_TOS) {
		if (optlen != sizeof(uint8_t)) {
			ret = EINVAL;
		} else {
			idp->tos = *(uint8_t *)optval;
			idp->tos_set = true;
		}
	} else {
		int reuse;

		if (optlen != sizeof(int)) {
			ret = EINVAL;
		} else {
			reuse = *(int *)optval;
			if (reuse || idp->state == CM_IDLE)
				idp->reuseaddr = reuse;
			else
				ret = EINVAL;
		}
	}
	pthread_mutex_unlock(&cmlib.lock);
	return ret ? cm_err(ret) : 0;
}

/*
 * rdma_get_devices: every device, opened, NULL-terminated; each listed device holds a
 * reference until rdma_free_devices (its PD is left alone, as upstream). NULL (and
 * *num_devices 0) on error.
 */
SF_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = NULL;
	int n = 0, i = 0;

	if (num_devices)
		*num_devices = 0;
	if (cm_init())
		return NULL;
	pthread_mutex_lock(&cmlib.lock);
	for (int d = 0; d < SF_MAX_DEVS; d++) {
		if (!cm_dev_usable(d))
			continue;
		if (cm_dev_open_locked(d))
			goto out;
		n++;
	}
	list = malloc(sizeof(*list) * (size_t)(n + 1));
	if (!list)
		goto out;
	for (int d = 0; d < SF_MAX_DEVS && i < n; d++) {
		if (!cm_dev_usable(d))
			continue;
		cmlib.devs[d].refcnt++;
		list[i++] = cmlib.devs[d].verbs;
	}
	list[i] = NULL;
	if (num_devices)
		*num_devices = n;
out:
	pthread_mutex_unlock(&cmlib.lock);
	return list;
}

/* rdma_free_devices: drops the references of rdma_get_devices and frees the list. */
SF_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	if (!list)
		return;
	pthread_mutex_lock(&cmlib.lock);
	for (int i = 0; list[i]; i++) {
		int d = sf_context_dev(list[i]);

		if (d >= 0 && d < SF_MAX_DEVS && cmlib.devs[d].verbs == list[i] &&
		    cmlib.devs[d].refcnt)
			cmlib.devs[d].refcnt--;
	}
	pthread_mutex_unlock(&cmlib.lock);
	free(list);
}
