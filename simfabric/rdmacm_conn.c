// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rdmacm_conn.c: connection management and rsockets of librdmacm.so.1's ABI (rdma-core
 * 44). The simulated fabric carries UD datagrams (unicast and multicast) only: on UD ids
 * rdma_listen, rdma_connect, rdma_accept, rdma_get_request and rdma_reject work through
 * SIDR (the calls here, the protocol below the event reading they wait on in
 * rdmacm_sidr.c); connected QPs (RC, UC, XRC) are not simulated, and those calls refuse
 * other ids with EOPNOTSUPP. So that a program
 * written for real hosts loads and fails cleanly instead of dying with "undefined
 * symbol", every other such call is exported and refused as librdmacm refuses a call the
 * kernel does not support: -1 with errno EOPNOTSUPP (ids, endpoints, ECE), and
 * rsocket() likewise; calls on an rsocket descriptor that cannot exist answer EBADF, as
 * upstream answers for a descriptor that is not an rsocket. What is real: rpoll() and
 * rselect() over ordinary descriptors (upstream converts select to rpoll, and so does
 * this), rdma_create_srq()/rdma_destroy_srq() (basic SRQs, srq.c) and rdma_destroy_ep()
 * on ids made by rdma_create_id().
 * docs/simfabric.md lists these calls.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "rdmacm_priv.h"

/* librdmacm's ERR(e). */
static int conn_err(int e)
{
	errno = e;
	return -1;
}

/* ---- SIDR on UD ids: rdma_listen, rdma_connect, rdma_accept, rdma_get_request, rdma_reject ----
 */

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
	pthread_mutex_lock(&cmlib.lock);
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
	pthread_mutex_unlock(&cmlib.lock);
	return ret;
}

/*
 * rdma_connect on a UD id: a SIDR REQ (cma_resolve_ib_udp). The route must be resolved
 * (EINVAL otherwise); the private data and the 36-byte rdma_cm header (AF_IB: none) must
 * fit the 216 bytes of a SIDR REQ (EINVAL). The answer comes as an event (rdmacm_sidr.c);
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
	pthread_mutex_lock(&cmlib.lock);
	src = (const struct sockaddr *)&idp->ksrc;
	dst = (const struct sockaddr *)&idp->kdst;
	off = src->sa_family == AF_IB ? 0 : CM_HDR_LEN;
	if (idp->state != CM_ROUTE_RESOLVED || off + plen > SF_SIDR_REQ_PRIV) {
		pthread_mutex_unlock(&cmlib.lock);
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
	sf_lock(cmlib.fab);
	if (d < 0 || !cm_dev_usable(d) || cmlib.fab->devs[d].seg != cmlib.fab->devs[idp->dev].seg ||
	    atomic_load(&cmlib.fab->devs[d].port_state) != IBV_PORT_ACTIVE ||
	    atomic_load(&cmlib.fab->devs[idp->dev].port_state) != IBV_PORT_ACTIVE) {
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
	sf_unlock(cmlib.fab);
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
	pthread_mutex_unlock(&cmlib.lock);
	return cm_complete(idp);
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
	pthread_mutex_lock(&cmlib.lock);
	if (idp->state != CM_CONNECT || !idp->sidr_req) {
		pthread_mutex_unlock(&cmlib.lock);
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
	pthread_mutex_unlock(&cmlib.lock);
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
	pthread_mutex_lock(&cmlib.lock);
	if (idp->state != CM_CONNECT || !idp->sidr_req || plen > SF_SIDR_REP_PRIV) {
		pthread_mutex_unlock(&cmlib.lock);
		return cm_err(EINVAL);
	}
	idp->sidr_req = false;
	cm_sidr_send_rep(idp->req_pid, idp->req_serial, idp->req_cookie, idp->req_seq,
			 CM_SIDR_REJECT, 0, 0, private_data, plen);
	pthread_mutex_unlock(&cmlib.lock);
	return 0;
}

/* rdma_reject_ece: rdma_reject with reason 35, which a SIDR REP does not carry. */
SF_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}

/* ---- connection management: not simulated ---- */

SF_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	(void)res;
	(void)pd;
	(void)qp_init_attr;
	if (id)
		*id = NULL;
	return conn_err(EOPNOTSUPP);
}

/* As upstream: the QP, the SRQ, then the id. */
SF_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

/*
 * rdma_create_srq_ex, as librdmacm's: the comp_mask must name the SRQ type (EINVAL);
 * no PD: the id's (the device's default PD, allocated when the id was bound); then
 * ibv_create_srq_ex on id->verbs, and id->srq (and id->pd if unset). Basic SRQs only:
 * an XRC SRQ needs an XRC domain, which the simulated device does not have (EOPNOTSUPP
 * from ibv_create_srq_ex). An id not bound to a device: EINVAL; an id that already has
 * an SRQ: EINVAL (rdma_create_srq(3): one SRQ per id).
 */
SF_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr || !id->verbs || id->srq || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return conn_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (!attr->pd || attr->pd->context != id->verbs)
		return conn_err(EINVAL);
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return -1;
	if (!id->pd)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

/* rdma_create_srq: a basic SRQ (XRC for an XRC receive id) through rdma_create_srq_ex. */
SF_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	int ret;

	if (!id || !attr)
		return conn_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ax.pd = pd;
	ret = rdma_create_srq_ex(id, &ax);
	memcpy(attr, &ax, sizeof(*attr));
	return ret;
}

/* The id's SRQ, made by rdma_create_srq; its QP must be gone first (EBUSY otherwise,
 * and the SRQ stays: upstream ignores ibv_destroy_srq's answer too). */
SF_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id && id->srq && !ibv_destroy_srq(id->srq))
		id->srq = NULL;
}

SF_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	(void)id;
	return conn_err(EOPNOTSUPP);
}

SF_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id;
	(void)event;
	return conn_err(EOPNOTSUPP);
}

SF_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	(void)id;
	return conn_err(EOPNOTSUPP);
}

SF_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return conn_err(EOPNOTSUPP);
}

SF_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return conn_err(EOPNOTSUPP);
}

/* ---- rsockets: stream and datagram sockets over connected QPs, not simulated ---- */

SF_EXPORT int rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	return conn_err(EOPNOTSUPP);
}

/* Every call below takes an rsocket descriptor; rsocket() never returns one. */
#define CONN_NOT_RSOCKET(socket) ((void)(socket), conn_err(EBADF))

SF_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)addr;
	(void)addrlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rlisten(int socket, int backlog)
{
	(void)backlog;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)addr;
	(void)addrlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)addr;
	(void)addrlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rshutdown(int socket, int how)
{
	(void)how;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rclose(int socket)
{
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)buf;
	(void)len;
	(void)flags;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
			    socklen_t *addrlen)
{
	(void)buf;
	(void)len;
	(void)flags;
	(void)src_addr;
	(void)addrlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)msg;
	(void)flags;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)buf;
	(void)len;
	(void)flags;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)buf;
	(void)len;
	(void)flags;
	(void)dest_addr;
	(void)addrlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)msg;
	(void)flags;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	(void)buf;
	(void)count;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)iov;
	(void)iovcnt;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)buf;
	(void)count;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)iov;
	(void)iovcnt;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)addr;
	(void)addrlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)addr;
	(void)addrlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int rfcntl(int socket, int cmd, ...)
{
	(void)cmd;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return CONN_NOT_RSOCKET(socket);
}

SF_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	(void)buf;
	(void)len;
	return CONN_NOT_RSOCKET(socket);
}

/* Upstream returns the count written or (size_t)-1 with errno. */
SF_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	return (size_t)CONN_NOT_RSOCKET(socket);
}

/*
 * rpoll: upstream polls rsockets and hands every other fd to poll(2). No rsocket exists
 * here, so it is poll(2) (the rdma_cm examples poll their channel fd with it).
 */
SF_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

/* Add the descriptors of one fd_set to fds with the given events. */
static void conn_fds_add(struct pollfd *fds, nfds_t *n, int nfds, fd_set *set, short events)
{
	if (!set)
		return;
	for (int fd = 0; fd < nfds; fd++) {
		nfds_t i;

		if (!FD_ISSET(fd, set))
			continue;
		for (i = 0; i < *n && fds[i].fd != fd; i++)
			;
		if (i == *n) {
			fds[i].fd = fd;
			fds[i].events = 0;
			fds[i].revents = 0;
			(*n)++;
		}
		fds[i].events |= events;
	}
}

/* Rewrite one fd_set from the poll results; returns how many descriptors are set. */
static int conn_fds_take(const struct pollfd *fds, nfds_t n, fd_set *set, short events)
{
	int cnt = 0;

	if (!set)
		return 0;
	FD_ZERO(set);
	for (nfds_t i = 0; i < n; i++)
		if (fds[i].revents & events) {
			FD_SET(fds[i].fd, set);
			cnt++;
		}
	return cnt;
}

/*
 * rselect: select() through rpoll(), as upstream does: read interest is POLLIN (ready
 * also on POLLHUP/POLLERR), write POLLOUT, except POLLPRI. The timeout is rounded up
 * to milliseconds and not updated.
 */
SF_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		      struct timeval *timeout)
{
	struct pollfd *fds;
	nfds_t n = 0;
	int ret, ms;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return conn_err(EINVAL);
	fds = calloc(nfds ? (size_t)nfds : 1, sizeof(*fds));
	if (!fds)
		return conn_err(ENOMEM);
	conn_fds_add(fds, &n, nfds, readfds, POLLIN);
	conn_fds_add(fds, &n, nfds, writefds, POLLOUT);
	conn_fds_add(fds, &n, nfds, exceptfds, POLLPRI);
	ms = timeout ? (int)(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000) : -1;
	ret = rpoll(fds, n, ms);
	if (ret >= 0) {
		ret = conn_fds_take(fds, n, readfds, POLLIN | POLLHUP | POLLERR);
		ret += conn_fds_take(fds, n, writefds, POLLOUT | POLLERR);
		ret += conn_fds_take(fds, n, exceptfds, POLLPRI);
	}
	free(fds);
	return ret;
}
