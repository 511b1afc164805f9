// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1: the UD / multicast part of the rdma_cm API, as rdma-core
 * 44's librdmacm (librdmacm/cma.c, addrinfo.c) and the Linux rdma_cm
 * (drivers/infiniband/core/cma.c, ucma.c) present it to user space, on the shared-memory
 * fabric of the simulated libibverbs.
 *
 * Two layers, as upstream:
 *  - the "kernel" side (what ucma/cma keep per id): the bound device, addresses, state,
 *    Q_Key, multicast memberships in the fabric (struct sf_join) and the events not yet
 *    read. Here it lives in this process, under g.lock.
 *  - the "library" side (what librdmacm keeps): the rdma_cm_id fields the application
 *    reads (verbs, pd, port_num, route), filled when upstream fills them: on bind, and
 *    when the ADDR_RESOLVED event is read; the multicast list and the event counters that
 *    rdma_destroy_id / rdma_leave_multicast / rdma_migrate_id wait on.
 *
 * Event channels: channel->fd is a simfabric endpoint (abstract AF_UNIX datagram socket,
 * sf_endpoint_open). Events made by this process (ADDR_RESOLVED, MULTICAST_JOIN, ...) are
 * queued on the channel; while the queue is not empty exactly one SF_MSG_CM "token"
 * datagram sits in the socket, so the fd is readable exactly when an event is there
 * (poll/epoll users) and the socket queue (net.unix.max_dgram_qlen, 10 by default) never
 * fills with local wake-ups. Other processes (fault injection: port down, device
 * removal) send SF_MSG_CM_MCERR / SF_MSG_CM_DEVRM datagrams straight to the endpoint;
 * their cookies are checked against the live ids and joins before use.
 *
 * UD "connections" (SIDR: rdma_listen, rdma_connect, rdma_accept, rdma_reject,
 * rdma_get_request on UD ids) are here too, not in rdmacm_conn.c: they create ids, queue
 * events and read channels with this file's kernel side, which is private to it. Their
 * requests and replies are SF_MSG_CM_SIDR_* datagrams between channels (struct
 * sf_sidr_msg, larger than an sf_msg), listeners records in fab->listens.
 *
 * Locking: g.lock protects everything in this file (ids, joins, channel queues,
 * counters, per-device PDs). Order: g.lock, then the fabric lock (sf_lock). Verbs calls
 * made under g.lock do not call back into this library. rdma_get_cm_event blocks in
 * recv() without g.lock. Waits for acknowledgements use g.cond, broadcast on every ack.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "sf.h"

#define SF_EXPORT __attribute__((visibility("default")))

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* The kernel's internal ENOTSUPP (include/linux/errno.h): user space sees errno 524. */
#define CM_ENOTSUPP 524

/* Q_Key of the IPoIB broadcast group as OpenSM creates it: the PS_IPOIB Q_Key. */
#define CM_IPOIB_QKEY 0x0000000Bu

/* IPoIB multicast scope of the default broadcast group (ff12:401b:...): link-local. */
#define CM_IPOIB_SCOPE 0x2

/* RoCEv2 IPv4 multicast: the kernel uses IPV6_DEFAULT_HOPLIMIT as the AH hop limit. */
#define CM_ROCE_HOP_LIMIT 64

/* Default ip_local_port_range, used if /proc cannot be read. */
#define CM_EPHEMERAL_LO 32768
#define CM_EPHEMERAL_HI 60999

/* The only port of a simulated device. */
#define CM_PORT_NUM 1

enum cm_state {
	CM_IDLE = 0,
	CM_ADDR_BOUND,
	CM_ADDR_RESOLVED,
	CM_ROUTE_RESOLVED,
	CM_LISTEN,  /* rdma_listen on a UD id: a SIDR service */
	CM_CONNECT, /* SIDR: request sent (client) or received (server's new id) */
};

/* enum ib_cm_sidr_status (include/rdma/ib_cm.h): the SIDR REP status field. */
enum cm_sidr_status {
	CM_SIDR_SUCCESS = 0,
	CM_SIDR_UNSUPPORTED = 1, /* the CM answers this when nothing listens */
	CM_SIDR_REJECT = 2,	 /* rdma_reject, or the request's id destroyed unanswered */
};

/* sizeof(struct cma_hdr) (cma.c): what rdma_cm puts before AF_INET/AF_INET6 private data. */
#define CM_HDR_LEN 36

/* Per simulated device: librdmacm's struct cma_device. */
struct cm_dev {
	struct ibv_device *ibdev;
	struct ibv_context *verbs; /* opened on first use, kept for the process */
	struct ibv_pd *pd;	   /* allocated on first get, freed with the last ref */
	int refcnt;
};

struct cm_event;

struct cm_chan {
	struct rdma_event_channel ch; /* what the application holds */
	uint32_t serial;
	struct sockaddr_un self; /* the endpoint's own address: tokens are sent there */
	socklen_t selflen;
	struct cm_event *head, *tail; /* local events not yet read */
	bool token;		      /* an SF_MSG_CM datagram is in the socket */
};

struct cm_mc;

struct cm_id {
	struct rdma_cm_id id; /* what the application holds */
	struct cm_id *next;
	struct cm_chan *chan;
	bool sync; /* created without a channel: the library owns chan */

	/* "Kernel" state. */
	enum cm_state state;
	int dev; /* bound device, -1: none */
	uint32_t gid_index;
	uint16_t pkey; /* host order */
	uint32_t qkey; /* 0 until first needed */
	uint32_t seq_num;
	bool port_bound;
	uint16_t port; /* host order */
	struct sockaddr_storage ksrc, kdst;
	union ibv_gid ksgid, kdgid;
	struct ibv_sa_path_rec path; /* id.route.path_rec after ROUTE_RESOLVED */
	uint8_t tos;
	bool tos_set;
	int reuseaddr;
	bool removed; /* DEVICE_REMOVAL delivered */

	/* SIDR (rdma_listen / rdma_connect / rdma_accept on UD ids). */
	int32_t listen_slot; /* index into fab->listens while listening, -1: none */
	uint64_t listen_gen;
	uint32_t sidr_seq; /* client: the current connect attempt (stale replies ignored) */
	bool sidr_req;	   /* server: made from a SIDR request not yet answered */
	int32_t req_pid;   /* ... whose requester's channel is (req_pid, req_serial) */
	uint32_t req_serial;
	uint64_t req_cookie; /* the requesting id */
	uint32_t req_seq;

	/* Library state. */
	int cma_dev; /* device whose reference (and PD) this id holds, -1: none */
	struct cm_mc *mcs;
	uint64_t reported;  /* events handed to the application */
	uint64_t completed; /* events acknowledged */
};

struct cm_mc {
	struct cm_mc *next;
	struct cm_id *idp;
	void *context;
	struct sockaddr_storage addr;
	uint16_t join_flags;
	/* Membership in the fabric: index into fab->joins, -1 when none. */
	int32_t slot;
	uint64_t slot_gen;
	union ibv_gid mgid;
	uint16_t mlid;
	/* What librdmacm learnt from the JOIN event (ucma_process_join). */
	bool seen;
	union ibv_gid umgid;
	uint16_t umlid;
	uint64_t reported, completed;
};

struct cm_event {
	struct rdma_cm_event ev; /* what the application holds */
	struct cm_event *next;
	struct cm_id *idp; /* the id the event counts for (the listener's for CONNECT_REQUEST) */
	struct cm_mc *mc;
	uint8_t priv[SF_SIDR_REQ_PRIV]; /* param.ud.private_data of SIDR events */
};

/* Process-wide state of the library (librdmacm's globals: cma_dev_list, mut, ...). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool inited;
	struct sf_fabric *fab;
	struct ibv_device **ibdevs; /* kept for the life of the process, like dev_list */
	struct cm_dev devs[SF_MAX_DEVS];
	struct cm_id *ids;
	uint32_t port_lo, port_hi, port_next;
} g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

/* The zero MGID: "let the SA assign one". */
static const union ibv_gid cm_zero_gid;

/* librdmacm's ERR(e): set errno, return -1. */
static int cm_err(int e)
{
	errno = e;
	return -1;
}

/* ---- addresses ---- */

/* ucma_addrlen: AF_IB is supported (every kernel since 3.11 has AF_IB in the ucma ABI). */
static socklen_t cm_addrlen(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

/* cma_zero_addr / cma_any_addr. */
static bool cm_addr_zero(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	case AF_INET6:
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_IB:
		return ib_addr_any(&((const struct sockaddr_ib *)sa)->sib_addr);
	default:
		return false;
	}
}

/* cma_loopback_addr. */
static bool cm_addr_loopback(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) ==
		       IN_LOOPBACKNET;
	case AF_INET6:
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_IB:
		return ib_addr_loopback(&((const struct sockaddr_ib *)sa)->sib_addr);
	default:
		return false;
	}
}

/* IPv4 224/4 or IPv6 ff00::/8 (AF_IB has no such notion here). */
static bool cm_addr_multicast(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	case AF_INET6:
		return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	default:
		return false;
	}
}

/* Same family and same address (ports not compared): cma_addr_cmp. */
static bool cm_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	switch (a->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	case AF_INET6:
		return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
					  &((const struct sockaddr_in6 *)b)->sin6_addr);
	case AF_IB:
		return !ib_addr_cmp(&((const struct sockaddr_ib *)a)->sib_addr,
				    &((const struct sockaddr_ib *)b)->sib_addr);
	default:
		return false;
	}
}

/* The port of an address, host order: cma_port (AF_IB: the SID bits under the mask). */
static uint16_t cm_addr_port(const struct sockaddr *sa)
{
	const struct sockaddr_ib *sib;

	switch (sa->sa_family) {
	case AF_INET:
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	case AF_INET6:
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	case AF_IB:
		sib = (const struct sockaddr_ib *)sa;
		return (uint16_t)(be64toh(sib->sib_sid) & be64toh(sib->sib_sid_mask));
	default:
		return 0;
	}
}

/* cma_bind_port: store the port; AF_IB keeps the PS bits of the SID, mask becomes ~0. */
static void cm_addr_set_port(struct sockaddr *sa, uint16_t port)
{
	struct sockaddr_ib *sib;
	uint64_t sid, mask;

	switch (sa->sa_family) {
	case AF_INET:
		((struct sockaddr_in *)sa)->sin_port = htons(port);
		break;
	case AF_INET6:
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
		break;
	case AF_IB:
		sib = (struct sockaddr_ib *)sa;
		sid = be64toh(sib->sib_sid);
		mask = be64toh(sib->sib_sid_mask);
		sib->sib_sid = htobe64((sid & mask) | port);
		sib->sib_sid_mask = htobe64(~0ull);
		break;
	}
}

/* ucma_get_port: the port as librdmacm reports it (network order). */
static __be16 cm_user_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	case AF_IB:
		return htobe16((uint16_t)be64toh(((const struct sockaddr_ib *)sa)->sib_sid));
	default:
		return 0;
	}
}

/* The GID in an AF_IB address. */
static const union ibv_gid *cm_sib_gid(const struct sockaddr *sa)
{
	return (const union ibv_gid *)&((const struct sockaddr_ib *)sa)->sib_addr;
}

/* rdma_ip2gid: IPv4 → ::ffff:a.b.c.d, IPv6 as is, AF_IB its GID. */
static void cm_ip2gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	switch (sa->sa_family) {
	case AF_INET:
		sf_gid_from_ipv4(gid, ((const struct sockaddr_in *)sa)->sin_addr.s_addr);
		break;
	case AF_INET6:
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, sizeof(gid->raw));
		break;
	case AF_IB:
		memcpy(gid->raw, &((const struct sockaddr_ib *)sa)->sib_addr, sizeof(gid->raw));
		break;
	}
}

/*
 * Does a host interface (not a simulated device) own this address? Then the kernel finds
 * the netdev but no RDMA device on it (cma_acquire_dev_by_src_ip: -ENODEV); an address
 * nobody owns fails earlier in rdma_translate_ip with -EADDRNOTAVAIL.
 */
static bool cm_host_owns(const struct sockaddr *sa)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != sa->sa_family)
			continue;
		found = cm_addr_equal(i->ifa_addr, sa);
	}
	freeifaddrs(ifa);
	return found;
}

/* ---- devices ---- */

/* A random number without touching the application's random() state. */
static uint32_t cm_random(void)
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
	g.port_lo = lo;
	g.port_hi = hi;
	g.port_next = lo + cm_random() % (hi - lo + 1);
}

/*
 * ucma_init: attach to the fabric and list the devices (ibv_get_device_list), once per
 * process; a failure is not remembered (upstream retries on the next call). Devices are
 * opened lazily (ucma_init_device). Fails with ENODEV when there is no device.
 */
static int cm_init(void)
{
	struct ibv_device **list;
	struct sf_fabric *fab;
	int n = 0;

	pthread_mutex_lock(&g.lock);
	if (g.inited) {
		pthread_mutex_unlock(&g.lock);
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
			g.devs[d].ibdev = list[i];
	}
	g.fab = fab;
	g.ibdevs = list;
	cm_port_range_init();
	g.inited = true;
	pthread_mutex_unlock(&g.lock);
	return 0;
err:
	pthread_mutex_unlock(&g.lock);
	return -1;
}

/* A device librdmacm can use: listed by libibverbs and not removed. */
static bool cm_dev_usable(int d)
{
	return d >= 0 && d < SF_MAX_DEVS && (uint32_t)d < g.fab->ndevs && g.devs[d].ibdev &&
	       !g.fab->devs[d].removed;
}

/* The usable device that owns an IPv4 address (rdma_translate_ip), or -1. */
static int cm_dev_by_ipv4(uint32_t addr)
{
	int d = sf_dev_by_ipv4(g.fab, addr);

	return cm_dev_usable(d) ? d : -1;
}

/* Is addr on device d's connected IPv4 subnet (its route)? */
static bool cm_dev_subnet_has(int d, uint32_t addr)
{
	const struct sf_dev *dev = &g.fab->devs[d];
	uint32_t mask;

	if (!dev->ipv4)
		return false;
	mask = dev->ipv4_prefix ? htonl(~0u << (32 - dev->ipv4_prefix)) : 0;
	return (dev->ipv4 & mask) == (addr & mask);
}

/* ucma_init_device: open the device once; the context stays open for the process. */
static int cm_dev_open_locked(int d)
{
	struct cm_dev *cd = &g.devs[d];

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
	struct cm_dev *cd = &g.devs[d];

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
static void cm_dev_put_locked(int d)
{
	struct cm_dev *cd = &g.devs[d];

	if (--cd->refcnt == 0 && cd->pd) {
		/* Upstream ignores a busy PD (the application still uses id->pd). */
		ibv_dealloc_pd(cd->pd);
		cd->pd = NULL;
	}
}

/* ---- event channels ---- */

/* Keep one SF_MSG_CM token in the socket while local events are queued. */
static void cm_chan_kick_locked(struct cm_chan *ch)
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
static void cm_chan_push_locked(struct cm_chan *ch, struct cm_event *evt)
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
static struct cm_event *cm_chan_pop_locked(struct cm_chan *ch)
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
static struct cm_event *cm_chan_take_locked(struct cm_chan *ch, struct cm_id *idp, struct cm_mc *mc,
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

	pthread_mutex_lock(&g.lock);
	while ((evt = cm_chan_pop_locked(ch)))
		free(evt);
	pthread_mutex_unlock(&g.lock);
	close(ch->ch.fd);
	free(ch);
}

/* ---- ids ---- */

static void cm_sidr_release_locked(struct cm_id *idp);

/* A live id of this process by its cookie (the kernel's uid → ctx lookup), or NULL. */
static struct cm_id *cm_id_lookup_locked(uint64_t cookie)
{
	for (struct cm_id *idp = g.ids; idp; idp = idp->next)
		if ((uintptr_t)&idp->id == cookie)
			return idp;
	return NULL;
}

/* A live join of the id by its cookie, or NULL. */
static struct cm_mc *cm_mc_lookup_locked(struct cm_id *idp, uint64_t cookie)
{
	for (struct cm_mc *mc = idp->mcs; mc; mc = mc->next)
		if ((uintptr_t)mc == cookie)
			return mc;
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

	pthread_mutex_lock(&g.lock);
	idp->next = g.ids;
	g.ids = idp;
	pthread_mutex_unlock(&g.lock);
	*id = &idp->id;
	return 0;
}

/* Give up the fabric membership of a join (fabric lock taken here). */
static void cm_mc_release_locked(struct cm_mc *mc)
{
	struct sf_fabric *fab = g.fab;
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

/* Wait, g.lock held, until every reported event was acked (librdmacm's cond waits). */
static void cm_wait_acked_locked(const uint64_t *completed, const uint64_t *reported)
{
	while (*completed < *reported)
		pthread_cond_wait(&g.cond, &g.lock);
}

/*
 * rdma_destroy_id: the kernel drops the id's memberships (not the QP attachments: the
 * application's QP stays attached until it is destroyed) and its unread events, and
 * reports how many events it delivered; librdmacm waits until all of those were acked.
 * Multicast records are freed here (upstream leaks them).
 */
SF_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *idp, **pp;
	struct cm_mc *mc;

	if (!id)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);

	pthread_mutex_lock(&g.lock);
	for (pp = &g.ids; *pp && *pp != idp; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&g.lock);
		return cm_err(EINVAL);
	}
	*pp = idp->next;
	for (mc = idp->mcs; mc; mc = mc->next)
		cm_mc_release_locked(mc);
	cm_sidr_release_locked(idp);
	cm_chan_take_locked(idp->chan, idp, NULL, false);
	pthread_mutex_unlock(&g.lock);

	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}

	pthread_mutex_lock(&g.lock);
	cm_wait_acked_locked(&idp->completed, &idp->reported);
	while ((mc = idp->mcs)) {
		idp->mcs = mc->next;
		free(mc);
	}
	if (idp->cma_dev >= 0)
		cm_dev_put_locked(idp->cma_dev);
	pthread_mutex_unlock(&g.lock);

	if (idp->sync)
		rdma_destroy_event_channel(id->channel);
	free(idp);
	return 0;
}

/* ---- bind and resolve ---- */

/* Is the port taken by another id of this process (cma_check_port)? */
static bool cm_port_taken_locked(const struct cm_id *self, const struct sockaddr *addr,
				 uint16_t port)
{
	for (const struct cm_id *o = g.ids; o; o = o->next) {
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
	uint32_t n = g.port_hi - g.port_lo + 1;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t p = g.port_lo + (g.port_next - g.port_lo + i) % n;

		if (!cm_port_taken_locked(self, addr, (uint16_t)p)) {
			g.port_next = p + 1 > g.port_hi ? g.port_lo : p + 1;
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
	const struct sf_dev *dev = &g.fab->devs[d];

	if (dev->link != SF_LINK_IB && idp->id.ps == RDMA_PS_IPOIB)
		return -EINVAL;
	idp->dev = d;
	if (dev->link == SF_LINK_IB) {
		idp->gid_index = 0;
		idp->ksgid = dev->gids[0].gid;
		/* IPoIB always sets the full-membership bit in its broadcast P_Key. */
		idp->pkey = (uint16_t)(dev->pkey | 0x8000);
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
 * when a host interface owns it). AF_INET6: no simulated device has an IPv6 address.
 * AF_IB: the IB device that has the GID (-ENODEV otherwise), P_Key from sib_pkey.
 * Port 0 takes an ephemeral port; a used port: -EADDRINUSE. Returns 0 or -errno.
 */
static int cm_bind_locked(struct cm_id *idp, const struct sockaddr *addr, socklen_t len)
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
		case AF_INET6:
			return cm_host_owns(sa) ? -ENODEV : -EADDRNOTAVAIL;
		case AF_IB:
			d = sf_dev_by_gid(g.fab, cm_sib_gid(sa), &gidx);
			if (!cm_dev_usable(d) || g.fab->devs[d].link != SF_LINK_IB)
				return -ENODEV;
			break;
		}
		if (g.fab->devs[d].link != SF_LINK_IB && idp->id.ps == RDMA_PS_IPOIB)
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
 * What librdmacm learns about the id from the kernel (ucma_query_addr + ucma_query_gid):
 * the addresses, and on first sight of a device, that device (opened, with its PD),
 * port 1 and the P_Key.
 */
static int cm_id_publish_locked(struct cm_id *idp)
{
	struct rdma_addr *ra = &idp->id.route.addr;

	memcpy(&ra->src_storage, &idp->ksrc, sizeof(ra->src_storage));
	memcpy(&ra->dst_storage, &idp->kdst, sizeof(ra->dst_storage));
	if (idp->cma_dev < 0 && idp->dev >= 0) {
		if (cm_dev_get_locked(idp->dev))
			return -1;
		idp->cma_dev = idp->dev;
		idp->id.verbs = g.devs[idp->dev].verbs;
		idp->id.pd = g.devs[idp->dev].pd;
		idp->id.port_num = CM_PORT_NUM;
		ra->addr.ibaddr.pkey = htobe16(idp->pkey);
	}
	ra->addr.ibaddr.sgid = idp->ksgid;
	ra->addr.ibaddr.dgid = idp->kdgid;
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
	pthread_mutex_lock(&g.lock);
	ret = cm_bind_locked(idp, addr, len);
	if (!ret)
		ret = cm_id_publish_locked(idp);
	else
		ret = cm_err(-ret);
	pthread_mutex_unlock(&g.lock);
	return ret;
}

/* IPoIB hardware multicast address of an IP group (ip_ib_mc_map / ipv6_ib_mc_map). */
static void cm_ipoib_mc_map(const struct sockaddr *sa, uint16_t pkey, bool rdma_cm_sig,
			    union ibv_gid *mgid)
{
	memset(mgid, 0, sizeof(*mgid));
	mgid->raw[0] = 0xff;
	mgid->raw[1] = 0x10 | CM_IPOIB_SCOPE;
	mgid->raw[2] = sa->sa_family == AF_INET6 ? 0x60 : 0x40;
	/* cma_set_mgid: byte 3 becomes 0x01, "the RDMA CM signature", for RDMA_PS_UDP. */
	mgid->raw[3] = rdma_cm_sig ? 0x01 : 0x1b;
	mgid->raw[4] = (uint8_t)(pkey >> 8);
	mgid->raw[5] = (uint8_t)pkey;
	if (sa->sa_family == AF_INET6) {
		memcpy(&mgid->raw[6], &((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr[6], 10);
	} else {
		memcpy(&mgid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr.s_addr, 4);
		mgid->raw[12] &= 0x0f;
	}
}

/* A zeroed event of `type` for an id (and join), as the kernel fills struct rdma_ucm_event_resp. */
static void cm_event_init(struct cm_event *evt, struct cm_id *idp, struct cm_mc *mc,
			  enum rdma_cm_event_type type, int status)
{
	memset(evt, 0, sizeof(*evt));
	evt->idp = idp;
	evt->mc = mc;
	evt->ev.id = &idp->id;
	evt->ev.event = type;
	evt->ev.status = status;
}

/* First simulated device with an active port, else the first device (cma_bind_loopback). */
static int cm_loopback_dev(void)
{
	int first = -1;

	for (uint32_t d = 0; d < g.fab->ndevs; d++) {
		if (!cm_dev_usable((int)d))
			continue;
		if (atomic_load(&g.fab->devs[d].port_state) == IBV_PORT_ACTIVE)
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

	for (uint32_t d = 0; d < g.fab->ndevs; d++) {
		const struct sf_dev *dev = &g.fab->devs[d];

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
 *    cma_acquire_dev_by_src_ip result in addr_handler); unicast IPv6 likewise;
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
		for (uint32_t i = 0; d < 0 && i < g.fab->ndevs; i++)
			if (cm_dev_usable((int)i) && g.fab->devs[i].ipv4)
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
			for (uint32_t i = 0; d < 0 && i < g.fab->ndevs; i++)
				if (cm_dev_usable((int)i) && cm_dev_subnet_has((int)i, a))
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
			if (!status && g.fab->devs[d].link != SF_LINK_IB)
				idp->ksgid = g.fab->devs[d].gids[idp->gid_index].gid;
		} else if (dst->sa_family == AF_IB) {
			/* cma_resolve_ib_dev: the source takes the port GID. */
			struct sockaddr_ib *sib = (struct sockaddr_ib *)ksrc;

			idp->dev = d;
			idp->gid_index = 0;
			idp->ksgid = g.fab->devs[d].gids[0].gid;
			memcpy(&sib->sib_addr, &idp->ksgid, sizeof(sib->sib_addr));
			idp->pkey = be16toh(sib->sib_pkey);
		} else {
			/* The route's source address: the device's address (IPv4 only). */
			if (ksrc->sa_family == AF_INET)
				((struct sockaddr_in *)ksrc)->sin_addr.s_addr = g.fab->devs[d].ipv4;
			status = cm_acquire_dev_locked(idp, d, ksrc);
		}
		if (status) {
			idp->dev = -1;
			if (ksrc->sa_family == AF_INET)
				((struct sockaddr_in *)ksrc)->sin_addr.s_addr = htonl(INADDR_ANY);
		}
	}

	if (status) {
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_ADDR_ERROR, status);
		return 0;
	}

	/* The destination's "hardware address" as ucma_query_gid reports it. */
	dev = &g.fab->devs[d];
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
			idp->kdgid = g.fab->devs[peer].gids[0].gid;
	}
	idp->state = CM_ADDR_RESOLVED;
	cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	return 0;
}

/*
 * ucma_complete: for a synchronous id, wait for the event the call produced and turn
 * its status into errno (REJECTED: ECONNREFUSED; negative: -status; else status).
 */
static int cm_complete(struct cm_id *idp)
{
	struct rdma_cm_event *ev;

	if (!idp->sync)
		return 0;
	if (idp->id.event) {
		rdma_ack_cm_event(idp->id.event);
		idp->id.event = NULL;
	}
	if (rdma_get_cm_event(idp->id.channel, &idp->id.event))
		return -1;
	ev = idp->id.event;
	if (ev->status) {
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			return cm_err(ECONNREFUSED);
		if (ev->status < 0)
			return cm_err(-ev->status);
		return cm_err(ev->status);
	}
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
	pthread_mutex_lock(&g.lock);
	ret = cm_resolve_locked(idp, src_addr, dst_addr, dst_len, evt);
	if (ret) {
		pthread_mutex_unlock(&g.lock);
		free(evt);
		return cm_err(-ret);
	}
	memcpy(&id->route.addr.dst_storage, dst_addr, dst_len);
	cm_chan_push_locked(idp->chan, evt);
	pthread_mutex_unlock(&g.lock);
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
	pthread_mutex_lock(&g.lock);
	if (idp->state != CM_ADDR_RESOLVED && idp->state != CM_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&g.lock);
		free(evt);
		return cm_err(EINVAL);
	}
	d = &g.fab->devs[idp->dev];
	p = &idp->path;
	memset(p, 0, sizeof(*p));
	p->sgid = idp->ksgid;
	p->dgid = idp->kdgid;
	if (d->link == SF_LINK_IB) {
		p->slid = htobe16((uint16_t)d->lid);
		peer = cm_ib_dev_for(&idp->kdgid);
		p->dlid = htobe16((uint16_t)(peer >= 0 ? g.fab->devs[peer].lid : d->lid));
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
	pthread_mutex_unlock(&g.lock);
	return cm_complete(idp);
}

/* ---- QPs ---- */

/* cma_set_default_qkey: RDMA_UDP_QKEY, or the IPoIB broadcast group's for PS_IPOIB. */
static uint32_t cm_qkey_locked(struct cm_id *idp)
{
	if (!idp->qkey)
		idp->qkey = idp->id.ps == RDMA_PS_IPOIB ? CM_IPOIB_QKEY : SF_RDMA_UDP_QKEY;
	return idp->qkey;
}

/*
 * The kernel's rdma_init_qp_attr for an id that is not connected (all UD ids):
 * cma_ib_init_qp_attr whatever the requested state: pkey_index (of 0xffff on RoCE, of
 * the id's P_Key on IB; -ENOENT if absent), port 1, and the Q_Key (UD) or no access
 * flags (RC); the RTR request also gets rq_psn = the id's sequence number.
 * ibv_copy_qp_attr_from_kern overwrites every field but rate_limit.
 */
static int cm_init_qp_attr_locked(struct cm_id *idp, struct ibv_qp_attr *attr, int *mask)
{
	enum ibv_qp_state want = attr->qp_state;
	const struct sf_dev *dev;
	uint16_t pkey;

	if (idp->dev < 0)
		return -EINVAL;
	dev = &g.fab->devs[idp->dev];
	pkey = dev->link == SF_LINK_IB ? idp->pkey : SF_IB_DEFAULT_PKEY;
	/* One P_Key per simulated port, at index 0; membership bit ignored. */
	if ((pkey & 0x7fff) != (dev->pkey & 0x7fff))
		return -ENOENT;
	memset(attr, 0, offsetof(struct ibv_qp_attr, rate_limit));
	attr->qp_state = want;
	attr->pkey_index = 0;
	attr->port_num = CM_PORT_NUM;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (idp->id.qp_type == IBV_QPT_UD) {
		attr->qkey = cm_qkey_locked(idp);
		*mask |= IBV_QP_QKEY;
	} else {
		attr->qp_access_flags = 0;
		*mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (want == IBV_QPS_RTR)
		attr->rq_psn = idp->seq_num;
	return 0;
}

/* rdma_init_qp_attr (RDMACM_1.2): EINVAL without a device. */
SF_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				int *qp_attr_mask)
{
	struct cm_id *idp;
	int ret;

	if (!id || !qp_attr || !qp_attr_mask)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&g.lock);
	ret = cm_init_qp_attr_locked(idp, qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&g.lock);
	return ret ? cm_err(-ret) : 0;
}

/*
 * ucma_init_ud_qp: INIT with the attributes of rdma_init_qp_attr (STATE|PKEY_INDEX|
 * PORT|QKEY), RTR (STATE), RTS (STATE|SQ_PSN, sq_psn 0). ucma_init_conn_qp for other ids:
 * INIT only. Errors: -1 with errno.
 */
static int cm_init_qp(struct cm_id *idp, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	attr.qp_state = IBV_QPS_INIT;
	ret = rdma_init_qp_attr(&idp->id, &attr, &mask);
	if (ret)
		return ret;
	ret = ibv_modify_qp(qp, &attr, mask);
	if (ret)
		return cm_err(ret);
	if (idp->id.qp_type != IBV_QPT_UD)
		return 0;

	attr.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (ret)
		return cm_err(ret);

	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return ret ? cm_err(ret) : 0;
}

/* ucma_destroy_cqs: the CQs and completion channels librdmacm created for the id. */
static void cm_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
}

/*
 * ucma_create_cqs: a completion channel and a CQ (cq_context = id) per direction that
 * needs one, sized by the requested work requests; 0 means none.
 */
static int cm_create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err;
	}
	return 0;
err:
	cm_destroy_cqs(id);
	return -1;
}

/*
 * rdma_create_qp_ex: EINVAL if the id has a QP, if the PD belongs to another device or
 * if given CQs differ from the id's. Missing CQs are created, the QP is created on
 * id->verbs (ibv_create_qp_ex: create flags need the provider's create_qp_ex) and moved
 * to RTS (UD) or INIT (others); then id->pd = qp->pd and id->qp = qp. An id without a
 * device fails with EINVAL (upstream would dereference a NULL context).
 */
SF_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *idp;
	struct ibv_qp *qp;
	int ret, e;

	if (!id || !attr)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	if (id->qp || !id->verbs)
		return cm_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (id->verbs != attr->pd->context) {
		return cm_err(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return cm_err(EINVAL);

	ret = cm_create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
			    attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr);
	if (ret)
		return ret;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;

	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = -1;
		goto err_cqs;
	}
	ret = cm_init_qp(idp, qp);
	if (ret)
		goto err_qp;

	pthread_mutex_lock(&g.lock);
	id->pd = qp->pd;
	id->qp = qp;
	pthread_mutex_unlock(&g.lock);
	return 0;
err_qp:
	e = errno;
	ibv_destroy_qp(qp);
	errno = e;
err_cqs:
	e = errno;
	cm_destroy_cqs(id);
	errno = e;
	return ret;
}

/* rdma_create_qp: rdma_create_qp_ex with comp_mask PD (pd NULL: id->pd). */
SF_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	if (!id || !qp_init_attr)
		return cm_err(EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &attr_ex);
	memcpy(qp_init_attr, &attr_ex, sizeof(*qp_init_attr));
	return ret;
}

/*
 * rdma_destroy_qp: destroys id->qp and the CQs librdmacm created. Done under the
 * library lock so that an event thread attaching the QP for a JOIN never sees it freed.
 */
SF_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id)
		return;
	pthread_mutex_lock(&g.lock);
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	pthread_mutex_unlock(&g.lock);
	cm_destroy_cqs(id);
}

/* ---- multicast ---- */

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
	} while (sf_group_find(g.fab, seg, mgid));
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
 * ENOTSUPP (524) on RoCE for anything but AF_INET (cma_iboe_join_multicast); ENOMEM
 * when the fabric's group or join tables are full. Otherwise the membership is taken in
 * the fabric and MULTICAST_JOIN is queued; on an IB port that is not active the SA
 * cannot be reached (no SM AH: -EAGAIN) and MULTICAST_ERROR is queued instead.
 */
static int cm_join_locked(struct cm_id *idp, struct cm_mc *mc, struct cm_event *evt)
{
	const struct sockaddr *sa = (const struct sockaddr *)&mc->addr;
	struct sf_fabric *fab = g.fab;
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

	pthread_mutex_lock(&g.lock);
	ret = cm_join_locked(idp, mc, evt);
	if (ret) {
		pthread_mutex_unlock(&g.lock);
		free(mc);
		free(evt);
		return cm_err(-ret);
	}
	mc->next = idp->mcs;
	idp->mcs = mc;
	cm_chan_push_locked(idp->chan, evt);
	pthread_mutex_unlock(&g.lock);
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
 * rdma_leave_multicast: the first join of the id with this address (memcmp over the
 * address length; none: EADDRNOTAVAIL) leaves the list; id->qp is detached from the
 * group librdmacm attached it to (unless send-only); the kernel drops the membership and
 * the join's unread events; then the call waits until the join's delivered events are
 * acked.
 */
SF_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	socklen_t addrlen = cm_addrlen(addr);
	struct cm_mc *mc, **pp;
	struct cm_id *idp;

	if (!id || !addrlen)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&g.lock);
	for (pp = &idp->mcs; *pp; pp = &(*pp)->next)
		if (!memcmp(&(*pp)->addr, addr, addrlen))
			break;
	mc = *pp;
	if (!mc) {
		pthread_mutex_unlock(&g.lock);
		return cm_err(EADDRNOTAVAIL);
	}
	*pp = mc->next;
	if (id->qp && mc->seen && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		ibv_detach_mcast(id->qp, &mc->umgid, mc->umlid);
	cm_mc_release_locked(mc);
	cm_chan_take_locked(idp->chan, idp, mc, false);
	cm_wait_acked_locked(&mc->completed, &mc->reported);
	pthread_mutex_unlock(&g.lock);
	free(mc);
	return 0;
}

/* ---- SIDR: UD "connections" (rdma_listen, rdma_connect, rdma_accept, rdma_reject) ---- */

/*
 * On a real host an rdma_connect on a UD id (PS_UDP, PS_IPOIB) does no connection: the
 * kernel's rdma_cm sends an IB CM SIDR REQ (service ID resolution) for the service
 * ID ps << 16 | port to the destination, and the IB CM there hands it to the listener
 * of that service, which answers with rdma_accept (its QPN and Q_Key) or rdma_reject.
 * Sources: Linux drivers/infiniband/core/cma.c (rdma_listen, cma_resolve_ib_udp,
 * cma_ib_req_handler / cma_ib_new_udp_id, cma_send_sidr_rep, rdma_accept, rdma_reject,
 * cma_sidr_rep_handler), cm.c (a SIDR REQ for a service nobody listens on is answered
 * IB_SIDR_UNSUPPORTED; destroying the request's id unanswered sends IB_SIDR_REJECT), and
 * rdma-core 44 librdmacm/cma.c (rdma_accept on a UD id does not touch the QP; the
 * CONNECT_REQUEST event makes a new id, ucma_process_conn_req; ucma_copy_ud_event). The
 * client sees:
 *  - ESTABLISHED, status 0, param.ud: the listener's QPN and Q_Key, an AH attribute made
 *    from the id's path (ib_init_ah_attr_from_path: DLID on IB, a GRH when the path has a
 *    hop limit or on RoCE), the 136 bytes of REP private data;
 *  - UNREACHABLE with the REP status: 1 (IB_SIDR_UNSUPPORTED) when nothing listens on the
 *    service, 2 (IB_SIDR_REJECT) after rdma_reject (the kernel reports a SIDR reject as
 *    UNREACHABLE, never REJECTED), with the REP's private data;
 *  - UNREACHABLE -ETIMEDOUT (110) when no answer comes: the IB CM sends the SIDR REQ
 *    up to 16 times (cma.c cma_resolve_ib_udp: timeout_ms 1 << (CMA_CM_RESPONSE_TIMEOUT
 *    20 - 8) = 4096, max_cm_retries CMA_MAX_CM_RETRIES 15; cm.c ib_send_cm_sidr_req hands
 *    both to the MAD layer, which retries at that fixed interval) and then reports
 *    IB_CM_SIDR_REQ_ERROR, which cma_sidr_rep_handler turns into UNREACHABLE -ETIMEDOUT.
 *    The simulation waits as long, 65536 ms after rdma_connect (SIMFABRIC_SIDR_TIMEOUT_MS
 *    sets another time), for a listener that is alive but never answers; when no device
 *    of its segment owns the destination or a port on the way is down nothing can answer,
 *    and it reports the timeout at once.
 * The server sees CONNECT_REQUEST on the listener's channel with a new id (event->id, its
 * context the listener's, listen_id the listener), param.ud.private_data the requester's
 * private data (216 bytes of SIDR REQ private data less the 36-byte rdma_cm header on
 * AF_INET/AF_INET6), qp_num/qkey 0.
 *
 * In the fabric: a listener is a record in fab->listens (claimed by rdma_listen, dropped
 * by rdma_destroy_id or when its process dies); REQ and REP are SF_MSG_CM_SIDR_*
 * datagrams between the two event channels (struct sf_sidr_msg).
 */

/*
 * Sending a SIDR message. A receiver's socket holds net.unix.max_dgram_qlen datagrams
 * (10 by default); a listener that is slow to read its channel (udaddy -c 30: each
 * request costs it a QP and memory registration) would have requests refused that the
 * IB CM delivers by retrying (16 tries, 4 s apart). A message that finds the socket
 * full waits in this process's outbox, which a thread of its own (started on first
 * use, all signals blocked) retries every millisecond for up to the SIDR timeout; a
 * request that still finds no room, or whose listener went away meanwhile, fails as
 * the kernel's does (UNREACHABLE -ETIMEDOUT, or status 1). A request that was sent
 * stays in the outbox as the client's timer until its answer comes (cm_out_cancel) or
 * the timeout ends it (UNREACHABLE -ETIMEDOUT). The caller may hold g.lock: the outbox
 * has its own lock, taken after g.lock, never the other way round.
 */
#define CM_SIDR_TIMEOUT_MS  65536 /* 16 tries of 4096 ms (see above) */
#define CM_SIDR_TIMEOUT_MAX 3600000

struct cm_out {
	struct cm_out *next;
	int32_t pid;
	uint32_t serial;
	uint64_t deadline_ms;
	bool sent; /* a request delivered, waiting for its answer until deadline_ms */
	struct sf_sidr_msg msg;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cm_out *head;
	bool started;
} cm_out = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static uint64_t cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cm_sidr_req_failed(const struct sf_sidr_msg *m, int status);

/*
 * The time a SIDR request waits for its answer: SIMFABRIC_SIDR_TIMEOUT_MS (1 to
 * CM_SIDR_TIMEOUT_MAX), else the kernel's CM_SIDR_TIMEOUT_MS. A bad value is named on
 * stderr once and the default used. Read at the first rdma_connect of the process
 * (under g.lock).
 */
static uint64_t cm_sidr_timeout_ms(void)
{
	static uint64_t ms;

	if (!ms) {
		const char *s = getenv("SIMFABRIC_SIDR_TIMEOUT_MS");
		char *end;
		unsigned long v;

		ms = CM_SIDR_TIMEOUT_MS;
		if (s && *s) {
			errno = 0;
			v = strtoul(s, &end, 10);
			if (*end || errno || v < 1 || v > CM_SIDR_TIMEOUT_MAX || *s == '-')
				fprintf(stderr,
					"simfabric: SIMFABRIC_SIDR_TIMEOUT_MS '%s': not 1 to %d "
					"milliseconds, using %d\n",
					s, CM_SIDR_TIMEOUT_MAX, CM_SIDR_TIMEOUT_MS);
			else
				ms = v;
		}
	}
	return ms;
}

/* A forked child has no outbox thread and none of the parent's messages. */
static void cm_out_atfork_child(void)
{
	pthread_mutex_init(&cm_out.lock, NULL);
	pthread_cond_init(&cm_out.cond, NULL);
	cm_out.head = NULL;
	cm_out.started = false;
}

static void *cm_out_thread(void *arg)
{
	struct cm_out *o, **pp, *failed;
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&cm_out.lock);
	for (;;) {
		struct timespec ts;
		uint64_t now;

		uint64_t wake;
		bool unsent = false;

		while (!cm_out.head)
			pthread_cond_wait(&cm_out.cond, &cm_out.lock);
		now = cm_now_ms();
		wake = UINT64_MAX;
		failed = NULL;
		for (pp = &cm_out.head; (o = *pp);) {
			bool req = o->msg.hdr.kind == SF_MSG_CM_SIDR_REQ;
			int r;

			if (!o->sent)
				r = sf_endpoint_send_buf(o->pid, o->serial, &o->msg,
							 sizeof(o->msg));
			else
				r = now < o->deadline_ms ? 0 : -ETIMEDOUT;

			if (r == -EAGAIN && now < o->deadline_ms) {
				unsent = true;
				pp = &o->next;
				continue;
			}
			if (!r && req) {
				/* Delivered (now or before): the answer is awaited. */
				o->sent = true;
				if (o->deadline_ms < wake)
					wake = o->deadline_ms;
				pp = &o->next;
				continue;
			}
			*pp = o->next;
			if (r && req) {
				o->msg.status = r == -EAGAIN || r == -ETIMEDOUT
							? (uint32_t)-ETIMEDOUT
							: CM_SIDR_UNSUPPORTED;
				o->next = failed;
				failed = o;
			} else {
				free(o); /* sent, or a reply nobody can take: the client times out
					  */
			}
		}
		if (failed) {
			pthread_mutex_unlock(&cm_out.lock);
			while ((o = failed)) {
				failed = o->next;
				cm_sidr_req_failed(&o->msg, (int)o->msg.status);
				free(o);
			}
			pthread_mutex_lock(&cm_out.lock);
		}
		if (cm_out.head) {
			/* Every millisecond while a message waits for room, else at the
			 * first deadline (or when a message is added or answered). */
			uint64_t ms = unsent ? 1 : wake > now ? wake - now : 0;

			if (ms > 1000)
				ms = 1000;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)(ms / 1000);
			ts.tv_nsec += (long)(ms % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&cm_out.cond, &cm_out.lock, &ts);
		}
	}
	return NULL;
}

/*
 * Send a SIDR message to the channel (pid, serial), or queue it when the socket is
 * full. 0 (sent or queued), or -errno when the channel is gone (or no memory).
 */
static int cm_sidr_post(int32_t pid, uint32_t serial, const struct sf_sidr_msg *m,
			uint64_t timeout_ms)
{
	struct cm_out *o, **pp;
	int r = sf_endpoint_send_buf(pid, serial, m, sizeof(*m));

	if (r != -EAGAIN && (r || m->hdr.kind != SF_MSG_CM_SIDR_REQ))
		return r;
	o = malloc(sizeof(*o));
	if (!o)
		return r ? -ENOMEM : 0; /* sent: without a timer, as before */
	o->next = NULL;
	o->pid = pid;
	o->serial = serial;
	o->deadline_ms = cm_now_ms() + timeout_ms;
	o->sent = !r;
	o->msg = *m;
	pthread_mutex_lock(&cm_out.lock);
	if (!cm_out.started) {
		pthread_t t;

		if (pthread_create(&t, NULL, cm_out_thread, NULL)) {
			pthread_mutex_unlock(&cm_out.lock);
			free(o);
			return -EAGAIN;
		}
		pthread_detach(t);
		pthread_atfork(NULL, NULL, cm_out_atfork_child);
		cm_out.started = true;
	}
	for (pp = &cm_out.head; *pp; pp = &(*pp)->next)
		;
	*pp = o;
	pthread_cond_signal(&cm_out.cond);
	pthread_mutex_unlock(&cm_out.lock);
	return 0;
}

/* A SIDR REP to the requester (pid, serial) for its id `cookie`, attempt `seq`. */
static void cm_sidr_send_rep(int32_t pid, uint32_t serial, uint64_t cookie, uint32_t seq,
			     uint32_t status, uint32_t qpn, uint32_t qkey, const void *priv,
			     uint8_t priv_len)
{
	struct sf_sidr_msg rep;

	memset(&rep, 0, sizeof(rep));
	rep.hdr.kind = SF_MSG_CM_SIDR_REP;
	rep.hdr.cookie = cookie;
	rep.seq = seq;
	rep.status = status;
	rep.qpn = qpn;
	rep.qkey = qkey;
	if (priv && priv_len) {
		memcpy(rep.priv, priv, priv_len);
		rep.priv_len = priv_len;
	}
	cm_sidr_post(pid, serial, &rep, cm_sidr_timeout_ms());
}

/*
 * Drop the outbox's requests of the connecting id `cookie`: attempt `seq` (answered), or
 * every attempt when `any` (the id destroyed), so that no timer fires for it.
 */
static void cm_out_cancel(uint64_t cookie, uint32_t seq, bool any)
{
	struct cm_out *o, **pp;

	pthread_mutex_lock(&cm_out.lock);
	for (pp = &cm_out.head; (o = *pp);) {
		if (o->msg.hdr.kind == SF_MSG_CM_SIDR_REQ && o->msg.hdr.cookie2 == cookie &&
		    (any || o->msg.seq == seq)) {
			*pp = o->next;
			free(o);
		} else {
			pp = &o->next;
		}
	}
	pthread_mutex_unlock(&cm_out.lock);
}

/*
 * What rdma_destroy_id does for SIDR: a listener gives up its service; an id made from a
 * request that was neither accepted nor rejected answers IB_SIDR_REJECT (cm.c,
 * cm_destroy_id in state IB_CM_SIDR_REQ_RCVD).
 */
static void cm_sidr_release_locked(struct cm_id *idp)
{
	if (idp->listen_slot >= 0) {
		struct sf_listen *l = &g.fab->listens[idp->listen_slot];

		sf_lock(g.fab);
		if (l->own.pid == getpid() && l->own.gen == idp->listen_gen)
			sf_owner_release(&l->own);
		sf_unlock(g.fab);
		idp->listen_slot = -1;
	}
	if (idp->sidr_req) {
		idp->sidr_req = false;
		cm_sidr_send_rep(idp->req_pid, idp->req_serial, idp->req_cookie, idp->req_seq,
				 CM_SIDR_REJECT, 0, 0, NULL, 0);
	} else if (idp->sidr_seq) {
		cm_out_cancel((uintptr_t)&idp->id, 0, true); /* a client's pending requests */
	}
}

/* IPv4 address of an AF_INET sockaddr (network order), 0 otherwise. */
static uint32_t cm_sa_ipv4(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_addr.s_addr : 0;
}

/*
 * Claim the service in the fabric. Another process's listener on the same port space
 * and port: EADDRINUSE for the same address, EADDRNOTAVAIL when one of the two is the
 * wildcard (cma_check_port, which the kernel applies to every id of the network
 * namespace; ids of this process were checked by bind already). Returns 0 or -errno.
 */
static int cm_listen_locked(struct cm_id *idp)
{
	const struct sockaddr *sa = (const struct sockaddr *)&idp->ksrc;
	struct sf_fabric *fab = g.fab;
	uint32_t ipv4 = cm_sa_ipv4(sa);
	bool any = cm_addr_zero(sa);
	int slot = -1, ret = 0;

	sf_lock(fab);
	for (int i = 0; i < SF_MAX_LISTENS; i++) {
		struct sf_listen *l = &fab->listens[i];

		if (!l->own.pid) {
			if (slot < 0)
				slot = i;
			continue;
		}
		if (l->own.pid == getpid() || l->ps != (uint32_t)idp->id.ps || l->port != idp->port)
			continue;
		if (!sf_pid_alive(l->own.pid, 0)) {
			sf_owner_release(&l->own);
			if (slot < 0)
				slot = i;
			continue;
		}
		if (any || (l->dev < 0 && !l->ipv4)) {
			ret = -EADDRNOTAVAIL;
			break;
		}
		if (l->family == sa->sa_family && l->dev == idp->dev && l->ipv4 == ipv4) {
			ret = -EADDRINUSE;
			break;
		}
	}
	if (!ret && slot < 0)
		ret = -ENOMEM;
	if (!ret) {
		struct sf_listen *l = &fab->listens[slot];

		sf_owner_claim(&l->own);
		l->ps = (uint32_t)idp->id.ps;
		l->port = idp->port;
		l->family = sa->sa_family;
		l->dev = idp->dev;
		l->ipv4 = ipv4;
		l->chan_serial = idp->chan->serial;
		l->id_cookie = (uintptr_t)&idp->id;
		idp->listen_slot = slot;
		idp->listen_gen = l->own.gen;
	}
	sf_unlock(fab);
	return ret;
}

/*
 * rdma_listen: UD ids only (connected QPs are not simulated: EOPNOTSUPP). An idle id is
 * bound to the IPv4 wildcard first, as the kernel does; a second listen: EINVAL. The
 * backlog has no meaning for SIDR.
 */
SF_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *idp;
	int ret = 0;

	(void)backlog;
	if (!id)
		return cm_err(EINVAL);
	if (id->qp_type != IBV_QPT_UD)
		return cm_err(EOPNOTSUPP);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&g.lock);
	if (idp->state == CM_IDLE) {
		struct sockaddr_in any = {.sin_family = AF_INET};

		ret = cm_bind_locked(idp, (struct sockaddr *)&any, sizeof(any));
	}
	if (!ret && idp->state != CM_ADDR_BOUND)
		ret = -EINVAL;
	if (!ret)
		ret = cm_listen_locked(idp);
	if (!ret) {
		idp->state = CM_LISTEN;
		ret = cm_id_publish_locked(idp);
	} else {
		ret = cm_err(-ret);
	}
	pthread_mutex_unlock(&g.lock);
	return ret;
}

/* The device a SIDR request for the id's destination goes to, or -1. */
static int cm_sidr_target_locked(const struct cm_id *idp)
{
	const struct sockaddr *dst = (const struct sockaddr *)&idp->kdst;
	uint32_t gidx;

	if (cm_addr_zero(dst) || cm_addr_loopback(dst))
		return idp->dev;
	if (dst->sa_family == AF_INET)
		return cm_dev_by_ipv4(cm_sa_ipv4(dst));
	if (dst->sa_family == AF_IB)
		return sf_dev_by_gid(g.fab, &idp->kdgid, &gidx);
	return -1;
}

/* A live listener of service (ps, port) on device d for IPv4 address dst (0: any), or NULL. */
static struct sf_listen *cm_sidr_listener_locked(uint32_t ps, uint16_t port, int d, uint32_t dst)
{
	for (int i = 0; i < SF_MAX_LISTENS; i++) {
		struct sf_listen *l = &g.fab->listens[i];

		if (!l->own.pid || l->ps != ps || l->port != port)
			continue;
		if ((l->dev >= 0 && l->dev != d) || (l->ipv4 && l->ipv4 != dst))
			continue;
		if (l->dev < 0 && ps == RDMA_PS_IPOIB && g.fab->devs[d].link != SF_LINK_IB)
			continue;
		if (!sf_pid_alive(l->own.pid, 0))
			continue;
		return l;
	}
	return NULL;
}

/* The rdma_cm header (struct cma_hdr, cma_format_hdr) at the start of REQ private data. */
static void cm_sidr_hdr(uint8_t *hdr, const struct sockaddr *src, const struct sockaddr *dst)
{
	memset(hdr, 0, CM_HDR_LEN);
	hdr[0] = 0; /* CMA_VERSION */
	if (src->sa_family == AF_INET) {
		hdr[1] = 4 << 4;
		memcpy(&hdr[2], &((const struct sockaddr_in *)src)->sin_port, 2);
		memcpy(&hdr[4 + 12], &((const struct sockaddr_in *)src)->sin_addr, 4);
		memcpy(&hdr[20 + 12], &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		hdr[1] = 6 << 4;
		memcpy(&hdr[2], &((const struct sockaddr_in6 *)src)->sin6_port, 2);
		memcpy(&hdr[4], &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(&hdr[20], &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
}

/*
 * rdma_connect on a UD id: a SIDR REQ (cma_resolve_ib_udp). The route must be resolved
 * (EINVAL otherwise); the private data and the 36-byte rdma_cm header (AF_IB: none) must
 * fit the 216 bytes of a SIDR REQ (EINVAL). The answer comes as an event (see above);
 * a synchronous id waits for it (UNREACHABLE: -1 with errno the status, as
 * ucma_complete). Other QP types: EOPNOTSUPP (not simulated).
 */
SF_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	const struct sockaddr *src, *dst;
	struct sf_sidr_msg req;
	struct sf_listen *l = NULL;
	struct cm_event *evt;
	struct cm_id *idp;
	uint8_t plen = conn_param && conn_param->private_data ? conn_param->private_data_len : 0;
	int32_t pid = 0;
	uint32_t serial = 0;
	int d, status = 0, off;

	if (!id)
		return cm_err(EINVAL);
	if (id->qp_type != IBV_QPT_UD)
		return cm_err(EOPNOTSUPP);
	idp = container_of(id, struct cm_id, id);
	evt = malloc(sizeof(*evt));
	if (!evt)
		return cm_err(ENOMEM);
	pthread_mutex_lock(&g.lock);
	src = (const struct sockaddr *)&idp->ksrc;
	dst = (const struct sockaddr *)&idp->kdst;
	off = src->sa_family == AF_IB ? 0 : CM_HDR_LEN;
	if (idp->state != CM_ROUTE_RESOLVED || off + plen > SF_SIDR_REQ_PRIV) {
		pthread_mutex_unlock(&g.lock);
		free(evt);
		return cm_err(EINVAL);
	}
	memset(&req, 0, sizeof(req));
	req.hdr.kind = SF_MSG_CM_SIDR_REQ;
	req.hdr.cookie2 = (uintptr_t)&idp->id;
	req.reply_pid = getpid();
	req.reply_serial = idp->chan->serial;
	req.seq = ++idp->sidr_seq;
	req.ps = (uint32_t)idp->id.ps;
	req.src_dev = (uint32_t)idp->dev;
	req.pkey = idp->pkey;
	req.family = src->sa_family;
	req.sgid = idp->ksgid;
	req.dgid = idp->kdgid;
	memcpy(req.src_sa, src, cm_addrlen(src));
	memcpy(req.dst_sa, dst, cm_addrlen(dst));
	if (off)
		cm_sidr_hdr(req.priv, src, dst);
	if (plen)
		memcpy(req.priv + off, conn_param->private_data, plen);
	req.priv_len = (uint8_t)(off + plen);
	idp->state = CM_CONNECT;

	d = cm_sidr_target_locked(idp);
	sf_lock(g.fab);
	if (d < 0 || !cm_dev_usable(d) || g.fab->devs[d].seg != g.fab->devs[idp->dev].seg ||
	    atomic_load(&g.fab->devs[d].port_state) != IBV_PORT_ACTIVE ||
	    atomic_load(&g.fab->devs[idp->dev].port_state) != IBV_PORT_ACTIVE) {
		status = -ETIMEDOUT;
	} else {
		l = cm_sidr_listener_locked(req.ps, cm_addr_port(dst), d, cm_sa_ipv4(dst));
		if (l) {
			req.hdr.cookie = l->id_cookie;
			req.dst_dev = (uint32_t)d;
			pid = l->own.pid;
			serial = l->chan_serial;
		} else {
			status = CM_SIDR_UNSUPPORTED;
		}
	}
	sf_unlock(g.fab);
	/* A listener whose process is gone: its host's CM has no listener either. */
	if (l && cm_sidr_post(pid, serial, &req, cm_sidr_timeout_ms()))
		status = CM_SIDR_UNSUPPORTED;
	if (status) {
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_UNREACHABLE, status);
		if (status > 0) {
			/* A REP came back (with no private data): its 136 bytes are reported. */
			evt->ev.param.ud.private_data = evt->priv;
			evt->ev.param.ud.private_data_len = SF_SIDR_REP_PRIV;
		}
		cm_chan_push_locked(idp->chan, evt);
	} else {
		free(evt);
	}
	pthread_mutex_unlock(&g.lock);
	return cm_complete(idp);
}

/*
 * A SIDR REQ read from a listener's channel (cma_ib_req_handler, ucma_process_conn_req):
 * a new id on the listener's channel, bound to the device the request reached, its
 * source the address the requester asked for (the listener's port), its destination the
 * requester's address from the rdma_cm header; CONNECT_REQUEST counted for the listener.
 * A listener that is gone answers IB_SIDR_UNSUPPORTED.
 */
static struct cm_event *cm_sidr_req_locked(struct cm_chan *ch, const struct sf_sidr_msg *m)
{
	struct cm_id *lst = cm_id_lookup_locked(m->hdr.cookie), *idp;
	struct rdma_ud_param *ud;
	struct cm_event *evt;
	const struct sf_dev *dev;
	int off = m->family == AF_IB ? 0 : CM_HDR_LEN;

	if (!lst || lst->state != CM_LISTEN || m->dst_dev >= SF_MAX_DEVS) {
		cm_sidr_send_rep(m->reply_pid, m->reply_serial, m->hdr.cookie2, m->seq,
				 CM_SIDR_UNSUPPORTED, 0, 0, NULL, 0);
		return NULL;
	}
	idp = calloc(1, sizeof(*idp));
	evt = malloc(sizeof(*evt));
	if (!idp || !evt) {
		free(idp);
		free(evt);
		cm_sidr_send_rep(m->reply_pid, m->reply_serial, m->hdr.cookie2, m->seq,
				 CM_SIDR_REJECT, 0, 0, NULL, 0);
		return NULL;
	}
	dev = &g.fab->devs[m->dst_dev];
	idp->id.context = lst->id.context;
	idp->id.ps = lst->id.ps;
	idp->id.qp_type = lst->id.qp_type;
	idp->id.channel = lst->id.channel;
	idp->chan = lst->chan;
	idp->state = CM_CONNECT;
	idp->dev = (int)m->dst_dev;
	idp->cma_dev = -1;
	idp->listen_slot = -1;
	idp->seq_num = cm_random() & 0xffffff;
	idp->port = lst->port;
	idp->pkey = m->pkey;
	idp->gid_index = dev->link == SF_LINK_IB ? 0 : sf_dev_ipv4_gid_index(dev);
	idp->ksgid = dev->gids[idp->gid_index].gid;
	idp->kdgid = m->sgid;
	/* cma_save_net_info: ours is the requested address, theirs the requester's. */
	memcpy(&idp->ksrc, m->dst_sa, sizeof(m->dst_sa));
	memcpy(&idp->kdst, m->src_sa, sizeof(m->src_sa));
	cm_addr_set_port((struct sockaddr *)&idp->ksrc, lst->port);
	idp->sidr_req = true;
	idp->req_pid = m->reply_pid;
	idp->req_serial = m->reply_serial;
	idp->req_cookie = m->hdr.cookie2;
	idp->req_seq = m->seq;
	idp->next = g.ids;
	g.ids = idp;
	if (cm_id_publish_locked(idp)) {
		/* No device context for the new id: the kernel would fail the request too. */
		g.ids = idp->next;
		cm_sidr_send_rep(m->reply_pid, m->reply_serial, m->hdr.cookie2, m->seq,
				 CM_SIDR_REJECT, 0, 0, NULL, 0);
		free(idp);
		free(evt);
		return NULL;
	}

	cm_event_init(evt, lst, NULL, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	evt->ev.id = &idp->id;
	evt->ev.listen_id = &lst->id;
	ud = &evt->ev.param.ud;
	memcpy(evt->priv, m->priv + off, SF_SIDR_REQ_PRIV - off);
	ud->private_data = evt->priv;
	ud->private_data_len = (uint8_t)(SF_SIDR_REQ_PRIV - off);
	if (lst->chan != ch) {
		cm_chan_push_locked(lst->chan, evt);
		return NULL;
	}
	return evt;
}

/* ib_init_ah_attr_from_path: the AH attribute for the id's resolved path. */
static void cm_ah_from_path(const struct cm_id *idp, struct ibv_ah_attr *ah)
{
	const struct ibv_sa_path_rec *p = &idp->path;
	bool roce = g.fab->devs[idp->dev].link != SF_LINK_IB;

	memset(ah, 0, sizeof(*ah));
	ah->dlid = roce ? 0 : be16toh(p->dlid);
	ah->sl = p->sl;
	ah->static_rate = p->rate;
	ah->port_num = CM_PORT_NUM;
	if (p->hop_limit > 0 || roce) {
		ah->is_global = 1;
		ah->grh.dgid = p->dgid;
		ah->grh.flow_label = be32toh(p->flow_label);
		ah->grh.hop_limit = p->hop_limit;
		ah->grh.sgid_index = (uint8_t)idp->gid_index;
		ah->grh.traffic_class = p->traffic_class;
	}
}

/*
 * A SIDR REP read from a connecting id's channel (cma_sidr_rep_handler). Replies for an
 * id that is gone, not connecting, or for an older attempt are dropped.
 */
static struct cm_event *cm_sidr_rep_locked(struct cm_chan *ch, const struct sf_sidr_msg *m)
{
	struct cm_id *idp = cm_id_lookup_locked(m->hdr.cookie);
	struct rdma_ud_param *ud;
	struct cm_event *evt;

	if (!idp || idp->state != CM_CONNECT || idp->sidr_req || m->seq != idp->sidr_seq)
		return NULL;
	evt = malloc(sizeof(*evt));
	if (!evt)
		return NULL;
	cm_out_cancel(m->hdr.cookie, m->seq, false); /* answered: no timeout */
	idp->sidr_seq++; /* one answer per attempt */
	if (m->status != CM_SIDR_SUCCESS) {
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_UNREACHABLE, (int)m->status);
	} else if (idp->qkey && idp->qkey != m->qkey) {
		/* cma_set_qkey refuses a second, different Q_Key. */
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_ADDR_ERROR, -EINVAL);
	} else {
		idp->qkey = m->qkey;
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_ESTABLISHED, 0);
		cm_ah_from_path(idp, &evt->ev.param.ud.ah_attr);
		evt->ev.param.ud.qp_num = m->qpn;
		evt->ev.param.ud.qkey = m->qkey;
	}
	ud = &evt->ev.param.ud;
	memcpy(evt->priv, m->priv, SF_SIDR_REP_PRIV);
	ud->private_data = evt->priv;
	ud->private_data_len = SF_SIDR_REP_PRIV;
	if (idp->chan != ch) {
		cm_chan_push_locked(idp->chan, evt);
		return NULL;
	}
	return evt;
}

/*
 * A queued request that never reached its listener (outbox thread, without g.lock):
 * UNREACHABLE with `status` for the connecting id, if it still waits for that attempt.
 */
static void cm_sidr_req_failed(const struct sf_sidr_msg *m, int status)
{
	struct cm_event *evt = malloc(sizeof(*evt));
	struct cm_id *idp;

	if (!evt)
		return;
	pthread_mutex_lock(&g.lock);
	idp = cm_id_lookup_locked(m->hdr.cookie2);
	if (idp && idp->state == CM_CONNECT && !idp->sidr_req && idp->sidr_seq == m->seq) {
		idp->sidr_seq++;
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_UNREACHABLE, status);
		if (status > 0) {
			evt->ev.param.ud.private_data = evt->priv;
			evt->ev.param.ud.private_data_len = SF_SIDR_REP_PRIV;
		}
		cm_chan_push_locked(idp->chan, evt);
		evt = NULL;
	}
	pthread_mutex_unlock(&g.lock);
	free(evt);
}

/*
 * rdma_accept on an id made from a SIDR request: the REP with the QP number (the id's
 * QP, else conn_param->qp_num), the id's Q_Key (the port space's default, RDMA_UDP_QKEY
 * for PS_UDP: librdmacm's conn_param has no Q_Key, so ucma passes 0 and cma_send_sidr_rep
 * sets the default), and up to 136 bytes of private data (more: EINVAL). The QP is not touched
 * (librdmacm: UD ids skip the RTR/RTS transitions). When the kernel's accept fails it rejects the
 * request (the client sees UNREACHABLE status 2). Not such an id, or answered already: EINVAL.
 * Non-UD ids: EOPNOTSUPP.
 */
SF_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *idp;
	uint32_t qpn;
	uint8_t plen;
	int ret = 0;

	if (!id)
		return cm_err(EINVAL);
	if (id->qp_type != IBV_QPT_UD)
		return cm_err(EOPNOTSUPP);
	idp = container_of(id, struct cm_id, id);
	qpn = id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0;
	plen = conn_param && conn_param->private_data ? conn_param->private_data_len : 0;
	pthread_mutex_lock(&g.lock);
	if (idp->state != CM_CONNECT || !idp->sidr_req) {
		pthread_mutex_unlock(&g.lock);
		return cm_err(EINVAL);
	}
	idp->sidr_req = false;
	if (plen > SF_SIDR_REP_PRIV)
		ret = EINVAL;
	if (ret) {
		cm_sidr_send_rep(idp->req_pid, idp->req_serial, idp->req_cookie, idp->req_seq,
				 CM_SIDR_REJECT, 0, 0, NULL, 0);
	} else {
		cm_sidr_send_rep(idp->req_pid, idp->req_serial, idp->req_cookie, idp->req_seq,
				 CM_SIDR_SUCCESS, qpn, cm_qkey_locked(idp),
				 plen ? conn_param->private_data : NULL, plen);
	}
	pthread_mutex_unlock(&g.lock);
	if (ret)
		return cm_err(ret);
	/* librdmacm: a synchronous UD id acks the request it was handed. */
	if (idp->sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	return 0;
}

/*
 * rdma_get_request: the next connection request of a synchronous listener (one made
 * without a channel; EINVAL otherwise), as upstream: the new id with the request as
 * its id->event. A REJECTED event: ECONNREFUSED; an event with an error: its errno;
 * another event: EINVAL (kept in listen->event). Non-UD ids: EOPNOTSUPP, *id NULL.
 */
SF_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *event;
	int ret;

	if (!listen || !id)
		return cm_err(EINVAL);
	if (listen->qp_type != IBV_QPT_UD) {
		*id = NULL;
		return cm_err(EOPNOTSUPP);
	}
	if (!container_of(listen, struct cm_id, id)->sync)
		return cm_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	ret = rdma_get_cm_event(listen->channel, &event);
	if (ret)
		return ret;
	if (event->event == RDMA_CM_EVENT_REJECTED)
		ret = cm_err(ECONNREFUSED);
	else if (event->status)
		ret = cm_err(-event->status);
	else if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		ret = cm_err(EINVAL);
	if (ret) {
		listen->event = event;
		return ret;
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
}

/*
 * rdma_reject on an id made from a SIDR request: a REP with status IB_SIDR_REJECT and up
 * to 136 bytes of private data (more: EINVAL). Any other id, or one answered already:
 * EINVAL. Non-UD ids: EOPNOTSUPP.
 */
SF_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct cm_id *idp;
	uint8_t plen = private_data ? private_data_len : 0;

	if (!id)
		return cm_err(EINVAL);
	if (id->qp_type != IBV_QPT_UD)
		return cm_err(EOPNOTSUPP);
	idp = container_of(id, struct cm_id, id);
	pthread_mutex_lock(&g.lock);
	if (idp->state != CM_CONNECT || !idp->sidr_req || plen > SF_SIDR_REP_PRIV) {
		pthread_mutex_unlock(&g.lock);
		return cm_err(EINVAL);
	}
	idp->sidr_req = false;
	cm_sidr_send_rep(idp->req_pid, idp->req_serial, idp->req_cookie, idp->req_seq,
			 CM_SIDR_REJECT, 0, 0, private_data, plen);
	pthread_mutex_unlock(&g.lock);
	return 0;
}

/* rdma_reject_ece: rdma_reject with reason 35, which a SIDR REP does not carry. */
SF_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}

/* ---- events ---- */

/*
 * What librdmacm does when it reads an event: count it for the id (and join) it belongs
 * to; ADDR_RESOLVED: learn the device and addresses (failure: ADDR_ERROR, status -1 as
 * ucma_query_addr returns); MULTICAST_JOIN (ucma_process_join): remember MGID/MLID and
 * attach id->qp unless send-only; a failed attach makes it MULTICAST_ERROR with the
 * status rdma_seterrno gives (-1, errno set).
 */
static void cm_event_deliver_locked(struct cm_event *evt)
{
	struct cm_id *idp = evt->idp;
	struct cm_mc *mc = evt->mc;
	int ret;

	idp->reported++;
	if (mc)
		mc->reported++;
	switch (evt->ev.event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (cm_id_publish_locked(idp)) {
			evt->ev.event = RDMA_CM_EVENT_ADDR_ERROR;
			evt->ev.status = -1;
		}
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		mc->seen = true;
		mc->umgid = evt->ev.param.ud.ah_attr.grh.dgid;
		mc->umlid = evt->ev.param.ud.ah_attr.dlid;
		if (!idp->id.qp || mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
			break;
		ret = ibv_attach_mcast(idp->id.qp, &mc->umgid, mc->umlid);
		if (ret) {
			errno = ret;
			evt->ev.status = -1;
			evt->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		}
		break;
	default:
		break;
	}
}

/*
 * An event sent by another process (fault injection). MCERR: cookie = id, cookie2 =
 * join record, status; DEVRM: cookie = id. Unknown or stale cookies: NULL (dropped, as
 * the kernel drops events of destroyed ids). An event for an id that moved to another
 * channel is queued there.
 */
static struct cm_event *cm_remote_event_locked(struct cm_chan *ch, const struct sf_msg *msg)
{
	struct cm_id *idp = cm_id_lookup_locked(msg->cookie);
	struct cm_event *evt;
	struct cm_mc *mc = NULL;

	if (!idp)
		return NULL;
	if (msg->kind == SF_MSG_CM_MCERR) {
		mc = cm_mc_lookup_locked(idp, msg->cookie2);
		if (!mc)
			return NULL;
	} else {
		/* One DEVICE_REMOVAL per id (the fabric notifies every join of the id). */
		if (idp->removed)
			return NULL;
		idp->removed = true;
	}
	evt = malloc(sizeof(*evt));
	if (!evt)
		return NULL;
	if (mc) {
		cm_event_init(evt, idp, mc, RDMA_CM_EVENT_MULTICAST_ERROR, msg->status);
		evt->ev.param.ud.private_data = mc->context;
	} else {
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	}
	if (idp->chan != ch) {
		cm_chan_push_locked(idp->chan, evt);
		return NULL;
	}
	return evt;
}

/*
 * rdma_get_cm_event: one event from the channel; blocks in the channel's socket unless
 * the application made channel->fd non-blocking (-1/EAGAIN), -1/EINTR on a signal.
 * The event must be given back with rdma_ack_cm_event.
 */
SF_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_chan *ch;
	struct cm_event *evt;
	union {
		struct sf_msg msg;
		struct sf_sidr_msg sidr;
	} buf;
	const struct sf_msg *m = &buf.msg;
	bool migrate;
	ssize_t n;

	if (cm_init())
		return -1;
	if (!event || !channel)
		return cm_err(EINVAL);
	ch = container_of(channel, struct cm_chan, ch);
	for (;;) {
		n = recv(ch->ch.fd, &buf, sizeof(buf), 0);
		if (n < 0)
			return -1;
		evt = NULL;
		pthread_mutex_lock(&g.lock);
		if (n == (ssize_t)sizeof(buf.sidr) && m->kind == SF_MSG_CM_SIDR_REQ)
			evt = cm_sidr_req_locked(ch, &buf.sidr);
		else if (n == (ssize_t)sizeof(buf.sidr) && m->kind == SF_MSG_CM_SIDR_REP)
			evt = cm_sidr_rep_locked(ch, &buf.sidr);
		else if (n == (ssize_t)sizeof(*m)) {
			switch (m->kind) {
			case SF_MSG_CM:
				ch->token = false;
				evt = cm_chan_pop_locked(ch);
				break;
			case SF_MSG_CM_MCERR:
			case SF_MSG_CM_DEVRM:
				evt = cm_remote_event_locked(ch, m);
				break;
			default:
				break;
			}
		}
		if (evt)
			cm_event_deliver_locked(evt);
		cm_chan_kick_locked(ch);
		migrate = evt && evt->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && evt->idp->sync;
		pthread_mutex_unlock(&g.lock);
		/* ucma_process_conn_req: a synchronous listener's new id gets a channel of its own.
		 */
		if (migrate && rdma_migrate_id(evt->ev.id, NULL)) {
			rdma_destroy_id(evt->ev.id);
			rdma_ack_cm_event(&evt->ev);
			continue;
		}
		if (evt) {
			*event = &evt->ev;
			return 0;
		}
	}
}

/*
 * rdma_ack_cm_event: counts the event as completed for its id (and join), wakes
 * whoever waits in rdma_destroy_id / rdma_leave_multicast / rdma_migrate_id, frees it.
 */
SF_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *evt;

	if (!event)
		return cm_err(EINVAL);
	evt = container_of(event, struct cm_event, ev);
	pthread_mutex_lock(&g.lock);
	if (evt->mc)
		evt->mc->completed++;
	evt->idp->completed++;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	free(evt);
	return 0;
}

/* rdma_event_str: the names upstream returns. */
SF_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return "RDMA_CM_EVENT_ADDR_RESOLVED";
	case RDMA_CM_EVENT_ADDR_ERROR:
		return "RDMA_CM_EVENT_ADDR_ERROR";
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return "RDMA_CM_EVENT_ROUTE_RESOLVED";
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return "RDMA_CM_EVENT_ROUTE_ERROR";
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return "RDMA_CM_EVENT_CONNECT_REQUEST";
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return "RDMA_CM_EVENT_CONNECT_RESPONSE";
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return "RDMA_CM_EVENT_CONNECT_ERROR";
	case RDMA_CM_EVENT_UNREACHABLE:
		return "RDMA_CM_EVENT_UNREACHABLE";
	case RDMA_CM_EVENT_REJECTED:
		return "RDMA_CM_EVENT_REJECTED";
	case RDMA_CM_EVENT_ESTABLISHED:
		return "RDMA_CM_EVENT_ESTABLISHED";
	case RDMA_CM_EVENT_DISCONNECTED:
		return "RDMA_CM_EVENT_DISCONNECTED";
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return "RDMA_CM_EVENT_DEVICE_REMOVAL";
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		return "RDMA_CM_EVENT_MULTICAST_JOIN";
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		return "RDMA_CM_EVENT_MULTICAST_ERROR";
	case RDMA_CM_EVENT_ADDR_CHANGE:
		return "RDMA_CM_EVENT_ADDR_CHANGE";
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
	default:
		return "UNKNOWN EVENT";
	}
}

/* ---- options, migration, ports, device list ---- */

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
	pthread_mutex_lock(&g.lock);
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
	pthread_mutex_unlock(&g.lock);
	return ret ? cm_err(ret) : 0;
}

/*
 * rdma_migrate_id: move the id to another channel (NULL: a new synchronous one; EINVAL
 * if the id is already synchronous). Its unread events and its joins' notifications
 * follow it; the call waits until the events already read on the old channel are acked.
 */
SF_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_chan *oldch, *newch;
	struct cm_event *moved, *next;
	struct cm_id *idp;
	bool sync;

	if (!id)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	if (idp->sync && !channel)
		return cm_err(EINVAL);
	sync = !channel;
	if (sync) {
		channel = rdma_create_event_channel();
		if (!channel)
			return -1;
	}
	newch = container_of(channel, struct cm_chan, ch);

	pthread_mutex_lock(&g.lock);
	oldch = idp->chan;
	moved = cm_chan_take_locked(oldch, idp, NULL, true);
	for (; moved; moved = next) {
		next = moved->next;
		cm_chan_push_locked(newch, moved);
	}
	idp->chan = newch;
	sf_lock(g.fab);
	for (struct cm_mc *mc = idp->mcs; mc; mc = mc->next) {
		struct sf_join *j;

		if (mc->slot < 0)
			continue;
		j = &g.fab->joins[mc->slot];
		if (j->own.pid == getpid() && j->own.gen == mc->slot_gen)
			j->chan_serial = newch->serial;
	}
	if (idp->listen_slot >= 0) {
		struct sf_listen *l = &g.fab->listens[idp->listen_slot];

		if (l->own.pid == getpid() && l->own.gen == idp->listen_gen)
			l->chan_serial = newch->serial;
	}
	sf_unlock(g.fab);
	pthread_mutex_unlock(&g.lock);

	if (idp->sync) {
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(&oldch->ch);
	}

	pthread_mutex_lock(&g.lock);
	idp->sync = sync;
	id->channel = channel;
	cm_wait_acked_locked(&idp->completed, &idp->reported);
	pthread_mutex_unlock(&g.lock);
	return 0;
}

/* rdma_get_src_port / rdma_get_dst_port: ucma_get_port of the route's addresses. */
SF_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return cm_user_port(&id->route.addr.src_addr);
}

SF_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return cm_user_port(&id->route.addr.dst_addr);
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
	pthread_mutex_lock(&g.lock);
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
		g.devs[d].refcnt++;
		list[i++] = g.devs[d].verbs;
	}
	list[i] = NULL;
	if (num_devices)
		*num_devices = n;
out:
	pthread_mutex_unlock(&g.lock);
	return list;
}

/* rdma_free_devices: drops the references of rdma_get_devices and frees the list. */
SF_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	if (!list)
		return;
	pthread_mutex_lock(&g.lock);
	for (int i = 0; list[i]; i++) {
		int d = sf_context_dev(list[i]);

		if (d >= 0 && d < SF_MAX_DEVS && g.devs[d].verbs == list[i] && g.devs[d].refcnt)
			g.devs[d].refcnt--;
	}
	pthread_mutex_unlock(&g.lock);
	free(list);
}

/* ---- rdma_getaddrinfo ---- */

/* ucma_copy_addr: a malloc'ed copy of an address. */
static int cm_copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
			socklen_t src_len)
{
	*dst = malloc(src_len);
	if (!*dst)
		return cm_err(ENOMEM);
	memcpy(*dst, src, src_len);
	*dst_len = src_len;
	return 0;
}

/* ucma_set_sid: SID = port space << 16 | port; the masks of what is set. */
static void cm_set_sid(int ps, const struct sockaddr *addr, struct sockaddr_ib *sib)
{
	__be16 port = addr ? cm_user_port(addr) : 0;

	sib->sib_sid = htobe64(((uint64_t)ps << 16) + be16toh(port));
	if (ps)
		sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK);
	if (port)
		sib->sib_sid_mask |= htobe64(RDMA_IB_IP_PORT_MASK);
}

/* ucma_convert_in6: an IPv6 result as an AF_IB address (P_Key 0xffff, SID from the PS). */
static int cm_convert_in6(int ps, struct sockaddr **dst, socklen_t *dst_len,
			  const struct sockaddr_in6 *src)
{
	struct sockaddr_ib *sib = calloc(1, sizeof(*sib));

	if (!sib)
		return cm_err(ENOMEM);
	sib->sib_family = AF_IB;
	sib->sib_pkey = htobe16(SF_IB_DEFAULT_PKEY);
	sib->sib_flowinfo = src->sin6_flowinfo;
	memcpy(&sib->sib_addr, &src->sin6_addr, sizeof(sib->sib_addr));
	cm_set_sid(ps, (const struct sockaddr *)src, sib);
	sib->sib_scope_id = src->sin6_scope_id;
	*dst = (struct sockaddr *)sib;
	*dst_len = sizeof(*sib);
	return 0;
}

/* ucma_convert_to_ai: the libc hints for rdma_addrinfo hints. */
static void cm_hints_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;
	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

/*
 * ucma_convert_to_rai: QP type and port space from the hints, else from the socket type
 * and protocol; the address becomes the source (AI_PASSIVE) or the destination. AF_IB
 * with RAI_FAMILY|RAI_NUMERICHOST turns an IPv6 result into a sockaddr_ib (an IPv4
 * result is kept as is: upstream would read past it).
 */
static int cm_ai_to_rai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
			const struct addrinfo *ai)
{
	bool to_ib = (hints->ai_flags & RAI_FAMILY) && hints->ai_family == AF_IB &&
		     (hints->ai_flags & RAI_NUMERICHOST) && ai->ai_family == AF_INET6;
	struct sockaddr **addr;
	socklen_t *len;

	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		if (ai->ai_canonname)
			rai->ai_src_canonname = strdup(ai->ai_canonname);
		addr = &rai->ai_src_addr;
		len = &rai->ai_src_len;
	} else {
		if (ai->ai_canonname)
			rai->ai_dst_canonname = strdup(ai->ai_canonname);
		addr = &rai->ai_dst_addr;
		len = &rai->ai_dst_len;
	}
	if (to_ib) {
		rai->ai_family = AF_IB;
		return cm_convert_in6(rai->ai_port_space, addr, len,
				      (const struct sockaddr_in6 *)ai->ai_addr);
	}
	rai->ai_family = ai->ai_family;
	return cm_copy_addr(addr, len, ai->ai_addr, ai->ai_addrlen);
}

/*
 * rdma_getaddrinfo: names and services through libc getaddrinfo (first result only, as
 * upstream), or the hints' addresses when neither is given. No ibacm service exists on
 * the simulated fabric, so no route is filled in (upstream without ibacm: the same).
 * Errors as upstream: EINVAL without node, service and hints; otherwise -1 with errno
 * set to the getaddrinfo EAI_* code or the errno of the failure.
 */
SF_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if (!service && !node && !hints)
		return cm_err(EINVAL);
	if (!res)
		return cm_err(EINVAL);
	if (cm_init())
		return -1;
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return cm_err(ENOMEM);

	if (node || service) {
		struct addrinfo ai_hints, *ai;

		if (hints) {
			cm_hints_to_ai(&ai_hints, hints);
			ret = getaddrinfo(node, service, &ai_hints, &ai);
		} else {
			ret = getaddrinfo(node, service, NULL, &ai);
		}
		if (!ret) {
			ret = cm_ai_to_rai(rai, hints ? hints : &nohints, ai);
			freeaddrinfo(ai);
		}
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = cm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					   hints->ai_dst_len);
	}
	if (ret)
		goto err;
	if (hints && !rai->ai_src_len && hints->ai_src_len) {
		ret = cm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				   hints->ai_src_len);
		if (ret)
			goto err;
	}
	*res = rai;
	return 0;
err:
	rdma_freeaddrinfo(rai);
	/* Upstream: return ERR(ret), i.e. errno = the EAI_* code (or -1). */
	return cm_err(ret);
}

/* rdma_freeaddrinfo: the whole list and everything it points to. */
SF_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *rai;

	while (res) {
		rai = res;
		res = res->ai_next;
		free(rai->ai_connect);
		free(rai->ai_route);
		free(rai->ai_src_canonname);
		free(rai->ai_dst_canonname);
		free(rai->ai_src_addr);
		free(rai->ai_dst_addr);
		free(rai);
	}
}

/*
 * rpoll: upstream polls rsockets and hands every other fd to poll(2). No rsocket exists
 * here, so it is poll(2) (the rdma_cm examples poll their channel fd with it).
 */
SF_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}
