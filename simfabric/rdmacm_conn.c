// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rdmacm_conn.c: the rest of librdmacm.so.1's ABI (rdma-core 44): connection
 * management and rsockets. The simulated fabric carries UD datagrams (unicast and
 * multicast) only; connected QPs (RC, UC, XRC) are not simulated (rdma_listen,
 * rdma_connect, rdma_accept and rdma_reject work on UD ids through SIDR, rdmacm.c, and
 * refuse other ids with EOPNOTSUPP). So that a program
 * written for real hosts loads and fails cleanly instead of dying with "undefined
 * symbol", every such call is exported and refused as librdmacm refuses a call the
 * kernel does not support: -1 with errno EOPNOTSUPP (ids, endpoints, ECE), and
 * rsocket() likewise; calls on an rsocket descriptor that cannot exist answer EBADF, as
 * upstream answers for a descriptor that is not an rsocket. What is real: rselect()
 * over ordinary descriptors (upstream converts to rpoll, and so does this),
 * rdma_create_srq()/rdma_destroy_srq() (basic SRQs, srq.c) and rdma_destroy_ep() on ids
 * made by rdma_create_id().
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

#include "sf.h"

/* librdmacm's ERR(e). */
static int conn_err(int e)
{
	errno = e;
	return -1;
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
