/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmacm_priv.h: what the files of the simulated librdmacm.so.1 share: the UD / multicast
 * part of the rdma_cm API, as rdma-core 44's librdmacm (librdmacm/cma.c, addrinfo.c) and
 * the Linux rdma_cm (drivers/infiniband/core/cma.c, ucma.c) present it to user space, on
 * the shared-memory fabric of the simulated libibverbs. Private to the library.
 *
 * Two layers, as upstream:
 *  - the "kernel" side (what ucma/cma keep per id): the bound device, addresses, state,
 *    Q_Key, multicast memberships in the fabric (struct sf_join) and the events not yet
 *    read. Here it lives in this process, under cmlib.lock.
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
 * their cookies are checked against the live ids and joins before use. UD
 * "connections" (SIDR) are SF_MSG_CM_SIDR_* datagrams between channels (struct
 * sf_sidr_msg, larger than an sf_msg), listeners records in fab->listens.
 *
 * The files, each calling only those above it in this list (no circle):
 *   rdmacm_core.c     state, cm_init, devices, channel queues, id/join lookups, ids,
 *                     options, the device list
 *   rdmacm_addr.c     socket addresses, the IPoIB MGID map, rdma_getaddrinfo
 *   rdmacm_qp.c       an id's QP and CQs, its Q_Key
 *   rdmacm_sidr.c     the SIDR protocol: listeners, REQ/REP, the outbox
 *   rdmacm_events.c   rdma_get_cm_event / ack, cm_complete (synchronous ids),
 *                     rdma_destroy_id, rdma_migrate_id
 *   rdmacm_resolve.c  bind, resolve address and route
 *   rdmacm_mcast.c    join and leave multicast groups
 *   rdmacm_conn.c     rdma_listen / connect / accept / reject (SIDR on UD ids), and the
 *                     connection management and rsockets calls refused
 * rdma_get_cm_event reads SIDR messages (rdmacm_sidr.c, below it), while the calls that
 * wait for their event through cm_complete (resolve, multicast, rdma_connect) sit above
 * it: so SIDR is two files, the protocol below the events and its API calls above.
 *
 * Lock order: cmlib.lock, then the fabric lock (sf_lock); cmlib.lock, then the SIDR
 * outbox's lock (rdmacm_sidr.c), under which only the endpoints' send lock (notify.c)
 * is taken: never cmlib.lock (the outbox thread drops its lock before failing a
 * request) nor sf_lock. Verbs calls made under
 * cmlib.lock do not call back into this library. rdma_get_cm_event blocks in recv()
 * without cmlib.lock. Waits for acknowledgements use cmlib.cond.
 */
#ifndef SF_RDMACM_PRIV_H
#define SF_RDMACM_PRIV_H

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

/* ifindex of a RoCE port's netdev: 100 + device index (ndev_ifindex, simfab netns). */
#define CM_IFINDEX_BASE 100u

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
	struct cm_mc *mcs; /* newest first; indexed below (rdmacm_mcast.c) */
	struct cm_mc **mc_by_addr, **mc_by_ptr; /* mc_buckets chains each, NULL: none yet */
	uint32_t mc_buckets, nmcs;
	uint64_t mc_serial;
	uint64_t reported;  /* events handed to the application */
	uint64_t completed; /* events acknowledged */
};

struct cm_mc {
	struct cm_mc *next, **pprev; /* the id's list (pprev: the link to this one) */
	struct cm_mc *hnext_addr, *hnext_ptr; /* the id's hash chains */
	uint64_t serial; /* join order on the id: the newest of equal addresses wins */
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

/*
 * Process-wide state of the library (librdmacm's globals: cma_dev_list, mut, ...),
 * defined in rdmacm_core.c. lock protects everything of the rdmacm_*.c files but the
 * SIDR outbox (its own lock): ids, joins, channel queues, counters, per-device PDs.
 */
struct cm_lib {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* broadcast on every acknowledgement (rdma_ack_cm_event) */
	bool inited;
	struct sf_fabric *fab;
	struct ibv_device **ibdevs; /* kept for the life of the process, like dev_list */
	struct cm_dev devs[SF_MAX_DEVS];
	struct cm_id *ids;
	uint32_t port_lo, port_hi, port_next;
};

/* librdmacm's ERR(e): set errno, return -1. */
static inline int cm_err(int e)
{
	errno = e;
	return -1;
}

/*
 * The functions one file of the library calls in another, by the file that defines them
 * (the contract of each is the comment at its definition). A _locked function is called
 * with cmlib.lock held; the others take it themselves where they need it.
 */

/* rdmacm_core.c */
extern struct cm_lib cmlib;
uint32_t cm_random(void);
int cm_init(void);
bool cm_dev_usable(int d);
int cm_dev_by_ipv4(uint32_t addr);
int cm_dev_by_ipv6(const struct in6_addr *addr);
bool cm_dev_subnet6_has(int d, const struct in6_addr *addr);
bool cm_dev_subnet_has(int d, uint32_t addr);
void cm_dev_put_locked(int d);
void cm_chan_kick_locked(struct cm_chan *ch);
void cm_chan_push_locked(struct cm_chan *ch, struct cm_event *evt);
struct cm_event *cm_chan_pop_locked(struct cm_chan *ch);
struct cm_event *cm_chan_take_locked(struct cm_chan *ch, struct cm_id *idp, struct cm_mc *mc,
				     bool keep);
struct cm_id *cm_id_lookup_locked(uint64_t cookie);
struct cm_mc *cm_mc_lookup_locked(struct cm_id *idp, uint64_t cookie);
void cm_mc_index_free(struct cm_id *idp);
void cm_mc_release_locked(struct cm_mc *mc);
void cm_wait_acked_locked(const uint64_t *completed, const uint64_t *reported);
int cm_id_publish_locked(struct cm_id *idp);
void cm_event_init(struct cm_event *evt, struct cm_id *idp, struct cm_mc *mc,
		   enum rdma_cm_event_type type, int status);

/* rdmacm_addr.c */
socklen_t cm_addrlen(const struct sockaddr *sa);
bool cm_addr_zero(const struct sockaddr *sa);
bool cm_addr_loopback(const struct sockaddr *sa);
bool cm_addr_multicast(const struct sockaddr *sa);
bool cm_addr_equal(const struct sockaddr *a, const struct sockaddr *b);
uint16_t cm_addr_port(const struct sockaddr *sa);
void cm_addr_set_port(struct sockaddr *sa, uint16_t port);
const union ibv_gid *cm_sib_gid(const struct sockaddr *sa);
void cm_ip2gid(const struct sockaddr *sa, union ibv_gid *gid);
bool cm_host_owns(const struct sockaddr *sa);
void cm_ipoib_mc_map(const struct sockaddr *sa, uint16_t pkey, bool rdma_cm_sig,
		     union ibv_gid *mgid);

/* rdmacm_qp.c */
uint32_t cm_qkey_locked(struct cm_id *idp);

/* rdmacm_sidr.c */
uint64_t cm_sidr_timeout_ms(void);
int cm_sidr_post(int32_t pid, uint32_t serial, const struct sf_sidr_msg *m, uint64_t timeout_ms);
void cm_sidr_send_rep(int32_t pid, uint32_t serial, uint64_t cookie, uint32_t seq, uint32_t status,
		      uint32_t qpn, uint32_t qkey, const void *priv, uint8_t priv_len);
void cm_sidr_release_locked(struct cm_id *idp);
uint32_t cm_sa_ipv4(const struct sockaddr *sa);
int cm_listen_locked(struct cm_id *idp);
int cm_sidr_target_locked(const struct cm_id *idp);
struct sf_listen *cm_sidr_listener_locked(uint32_t ps, uint16_t port, int d, uint32_t dst);
void cm_sidr_hdr(uint8_t *hdr, const struct sockaddr *src, const struct sockaddr *dst);
struct cm_event *cm_sidr_req_locked(struct cm_chan *ch, const struct sf_sidr_msg *m);
struct cm_event *cm_sidr_rep_locked(struct cm_chan *ch, const struct sf_sidr_msg *m);

/* rdmacm_events.c */
int cm_complete(struct cm_id *idp);

/* rdmacm_resolve.c */
int cm_bind_locked(struct cm_id *idp, const struct sockaddr *addr, socklen_t len);

#endif
