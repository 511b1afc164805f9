// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Event endpoints: completion channels, context async fds and rdma_cm event channels are
 * abstract-namespace AF_UNIX datagram sockets, named after the fabric, the owner pid and
 * a per-process serial. Any process of the fabric can post an event to any endpoint; a
 * datagram is one event, so poll(2) on the fd behaves like the kernel's event files.
 * Most are a struct sf_msg; rdma_cm's SIDR requests and replies a struct sf_sidr_msg.
 *
 * Abstract names belong to the network namespace of the socket (not of the thread that
 * binds or sends): with SIMFABRIC_NETNS=PATH (a network namespace file, e.g.
 * /proc/PID/ns/net or /run/netns/NAME) the endpoints are made in that namespace, so that
 * processes in other network namespaces (the "hosts" of tests/ha/twohost.sh) share one
 * fabric while their own sockets (TCP, keepalived's VRRP) stay in theirs. setns(2) with
 * CLONE_NEWNET acts on the calling thread only: a short-lived thread makes the socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sf.h"
#include "sf_priv.h"

static int g_tx_fd = -1;
static pthread_mutex_t g_tx_lock = PTHREAD_MUTEX_INITIALIZER;

static socklen_t sf_endpoint_addr(struct sockaddr_un *a, int32_t pid, uint32_t serial)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract name: leading NUL, not NUL-terminated. */
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "simfabric.%s.ev.%d.%u", sf_name(),
		     pid, serial);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

struct ns_socket {
	const char *path;
	int type;
	int fd; /* the socket, or -errno */
};

static void *ns_socket_thread(void *arg)
{
	struct ns_socket *m = arg;
	int ns = open(m->path, O_RDONLY | O_CLOEXEC);

	if (ns < 0 || setns(ns, CLONE_NEWNET)) {
		m->fd = -errno;
		if (ns >= 0)
			close(ns);
		return NULL;
	}
	close(ns);
	m->fd = socket(AF_UNIX, m->type, 0);
	if (m->fd < 0)
		m->fd = -errno;
	return NULL;
}

/* An AF_UNIX socket of the fabric's network namespace (SIMFABRIC_NETNS, else ours). */
static int sf_socket(int type)
{
	const char *path = getenv("SIMFABRIC_NETNS");
	struct ns_socket m = {.path = path, .type = type, .fd = -EINVAL};
	pthread_t t;
	int r;

	if (!path || !*path) {
		r = socket(AF_UNIX, type, 0);
		return r < 0 ? -errno : r;
	}
	r = pthread_create(&t, NULL, ns_socket_thread, &m);
	if (r)
		return -r;
	pthread_join(t, NULL);
	return m.fd;
}

int sf_endpoint_open(uint32_t serial)
{
	struct sockaddr_un a;
	socklen_t len = sf_endpoint_addr(&a, getpid(), serial);
	int fd = sf_socket(SOCK_DGRAM | SOCK_CLOEXEC);

	if (fd < 0)
		return fd;
	if (bind(fd, (struct sockaddr *)&a, len) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

int sf_endpoint_send(int32_t pid, uint32_t serial, const struct sf_msg *msg)
{
	return sf_endpoint_send_buf(pid, serial, msg, sizeof(*msg));
}

int sf_endpoint_send_buf(int32_t pid, uint32_t serial, const void *buf, size_t size)
{
	struct sockaddr_un a;
	socklen_t len;
	ssize_t n;

	if (pid <= 0)
		return -EINVAL;
	len = sf_endpoint_addr(&a, pid, serial);
	pthread_mutex_lock(&g_tx_lock);
	if (g_tx_fd < 0) {
		int fd = sf_socket(SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			pthread_mutex_unlock(&g_tx_lock);
			return fd;
		}
		g_tx_fd = fd;
	}
	pthread_mutex_unlock(&g_tx_lock);
	n = sendto(g_tx_fd, buf, size, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, len);
	return n < 0 ? -errno : 0;
}

void sf_async_post_ctx(struct sf_fabric *fab, uint32_t ctx, enum ibv_event_type type,
		       uint64_t cookie, uint32_t port)
{
	struct sf_ctx *c = &fab->ctxs[ctx];
	struct sf_msg m = {.kind = SF_MSG_ASYNC, .type = type, .cookie = cookie, .port = port};

	if (c->own.pid)
		sf_endpoint_send(c->own.pid, c->own.serial, &m);
}

void sf_async_post_dev(struct sf_fabric *fab, uint32_t dev, enum ibv_event_type type)
{
	for (uint32_t i = 0; i < SF_MAX_CTXS; i++) {
		struct sf_ctx *c = &fab->ctxs[i];

		if (c->own.pid && c->dev == dev)
			sf_async_post_ctx(fab, i, type, 0, 1);
	}
}
