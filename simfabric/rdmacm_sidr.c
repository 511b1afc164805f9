// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1: the SIDR protocol under rdma_listen / rdma_connect /
 * rdma_accept / rdma_reject on UD ids: listener records in the fabric, the REQ and REP
 * messages between event channels, the outbox (its thread and lock) that retries a full
 * socket, and what a channel makes of a REQ or REP it reads (cm_sidr_req_locked,
 * cm_sidr_rep_locked, called by rdma_get_cm_event). The API calls themselves are in
 * rdmacm_conn.c, above the event reading they wait on. Calls the core and addresses.
 */
#include "rdmacm_priv.h"

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
 * the timeout ends it (UNREACHABLE -ETIMEDOUT). The caller may hold cmlib.lock: the outbox
 * has its own lock, taken after cmlib.lock, never the other way round.
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
 * (under cmlib.lock).
 */
uint64_t cm_sidr_timeout_ms(void)
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
int cm_sidr_post(int32_t pid, uint32_t serial, const struct sf_sidr_msg *m, uint64_t timeout_ms)
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
void cm_sidr_send_rep(int32_t pid, uint32_t serial, uint64_t cookie, uint32_t seq, uint32_t status,
		      uint32_t qpn, uint32_t qkey, const void *priv, uint8_t priv_len)
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
void cm_sidr_release_locked(struct cm_id *idp)
{
	if (idp->listen_slot >= 0) {
		struct sf_listen *l = &cmlib.fab->listens[idp->listen_slot];

		sf_lock(cmlib.fab);
		if (l->own.pid == getpid() && l->own.gen == idp->listen_gen)
			sf_owner_release(&l->own);
		sf_unlock(cmlib.fab);
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
uint32_t cm_sa_ipv4(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_addr.s_addr : 0;
}

/*
 * Claim the service in the fabric. Another process's listener on the same port space
 * and port: EADDRINUSE for the same address, EADDRNOTAVAIL when one of the two is the
 * wildcard (cma_check_port, which the kernel applies to every id of the network
 * namespace; ids of this process were checked by bind already). Returns 0 or -errno.
 */
int cm_listen_locked(struct cm_id *idp)
{
	const struct sockaddr *sa = (const struct sockaddr *)&idp->ksrc;
	struct sf_fabric *fab = cmlib.fab;
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

/* The device a SIDR request for the id's destination goes to, or -1. */
int cm_sidr_target_locked(const struct cm_id *idp)
{
	const struct sockaddr *dst = (const struct sockaddr *)&idp->kdst;
	uint32_t gidx;

	if (cm_addr_zero(dst) || cm_addr_loopback(dst))
		return idp->dev;
	if (dst->sa_family == AF_INET)
		return cm_dev_by_ipv4(cm_sa_ipv4(dst));
	if (dst->sa_family == AF_IB)
		return sf_dev_by_gid(cmlib.fab, &idp->kdgid, &gidx);
	return -1;
}

/* A live listener of service (ps, port) on device d for IPv4 address dst (0: any), or NULL. */
struct sf_listen *cm_sidr_listener_locked(uint32_t ps, uint16_t port, int d, uint32_t dst)
{
	for (int i = 0; i < SF_MAX_LISTENS; i++) {
		struct sf_listen *l = &cmlib.fab->listens[i];

		if (!l->own.pid || l->ps != ps || l->port != port)
			continue;
		if ((l->dev >= 0 && l->dev != d) || (l->ipv4 && l->ipv4 != dst))
			continue;
		if (l->dev < 0 && ps == RDMA_PS_IPOIB && cmlib.fab->devs[d].link != SF_LINK_IB)
			continue;
		if (!sf_pid_alive(l->own.pid, 0))
			continue;
		return l;
	}
	return NULL;
}

/* The rdma_cm header (struct cma_hdr, cma_format_hdr) at the start of REQ private data. */
void cm_sidr_hdr(uint8_t *hdr, const struct sockaddr *src, const struct sockaddr *dst)
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
 * A SIDR REQ read from a listener's channel (cma_ib_req_handler, ucma_process_conn_req):
 * a new id on the listener's channel, bound to the device the request reached, its
 * source the address the requester asked for (the listener's port), its destination the
 * requester's address from the rdma_cm header; CONNECT_REQUEST counted for the listener.
 * A listener that is gone answers IB_SIDR_UNSUPPORTED.
 */
struct cm_event *cm_sidr_req_locked(struct cm_chan *ch, const struct sf_sidr_msg *m)
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
	dev = &cmlib.fab->devs[m->dst_dev];
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
	idp->next = cmlib.ids;
	cmlib.ids = idp;
	if (cm_id_publish_locked(idp)) {
		/* No device context for the new id: the kernel would fail the request too. */
		cmlib.ids = idp->next;
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
	bool roce = cmlib.fab->devs[idp->dev].link != SF_LINK_IB;

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
struct cm_event *cm_sidr_rep_locked(struct cm_chan *ch, const struct sf_sidr_msg *m)
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
	idp->sidr_seq++;			     /* one answer per attempt */
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
 * A queued request that never reached its listener (outbox thread, without cmlib.lock):
 * UNREACHABLE with `status` for the connecting id, if it still waits for that attempt.
 */
static void cm_sidr_req_failed(const struct sf_sidr_msg *m, int status)
{
	struct cm_event *evt = malloc(sizeof(*evt));
	struct cm_id *idp;

	if (!evt)
		return;
	pthread_mutex_lock(&cmlib.lock);
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
	pthread_mutex_unlock(&cmlib.lock);
	free(evt);
}
