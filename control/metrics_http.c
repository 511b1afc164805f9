// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * GET /metrics over HTTP on the control thread (metrics_http.h). Own code rather than a
 * library (libmicrohttpd): one request a scrape, one reply, loopback only, on the
 * control thread's existing epoll; a library would bring its own threads or loop.
 *
 * A slow client must not blind it (issue 21 D7: eight connections that sent half a
 * request held every slot for 5 s). A connection that has not sent a whole request
 * yet is idle: when every slot is taken, a new connection takes the oldest idle one's
 * slot (the idle one is closed), and an idle one is closed after MH_HEADER_MS. A new
 * connection's request is read at once (a scraper's usually arrives with it), so a
 * scrape is answered whatever number of slow connections keep coming.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ctl.h"
#include "log.h"
#include "metrics_http.h"
#include "options.h"
#include "show.h"

struct mh_conn {
	struct ev_tag tag; /* first: the epoll tag points at the connection */
	int fd;
	char req[MH_REQ_MAX];
	size_t len;
	char *out; /* the reply, NULL while the request is read (idle) */
	size_t outlen, outoff;
	uint64_t since_ms;
	struct mh_conn *next_evicted; /* on the evicted list */
};

struct metrics_http {
	struct ctl *c;
	int lfd;
	struct ev_tag ltag;
	struct mh_conn *conn[MH_CONNS_MAX];
	/* Evicted during an event batch that may still name them: freed after it. */
	struct mh_conn *evicted;
	uint64_t evictions; /* idle connections closed for a new one */
};

static void conn_close(struct metrics_http *m, int slot)
{
	struct mh_conn *k = m->conn[slot];

	ctl_unwatch(m->c, k->fd);
	close(k->fd);
	free(k->out);
	free(k);
	m->conn[slot] = NULL;
}

/* Close an idle connection for a new one; its memory waits for the end of the batch. */
static void conn_evict(struct metrics_http *m, int slot)
{
	struct mh_conn *k = m->conn[slot];

	ctl_unwatch(m->c, k->fd);
	close(k->fd);
	k->fd = -1;
	k->next_evicted = m->evicted;
	m->evicted = k;
	m->conn[slot] = NULL;
	m->evictions++;
}

/* A free slot, or the oldest idle connection's (evicted); -1 when all are replying. */
static int slot_for_new(struct metrics_http *m)
{
	int oldest = -1;

	for (int i = 0; i < MH_CONNS_MAX; i++) {
		if (!m->conn[i])
			return i;
		if (!m->conn[i]->out &&
		    (oldest < 0 || m->conn[i]->since_ms < m->conn[oldest]->since_ms))
			oldest = i;
	}
	if (oldest >= 0)
		conn_evict(m, oldest);
	return oldest;
}

static int conn_slot(struct metrics_http *m, struct mh_conn *k)
{
	for (int i = 0; i < MH_CONNS_MAX; i++)
		if (m->conn[i] == k)
			return i;
	return -1;
}

/* The reply to the request in k->req: the metrics, or an error status. */
static void conn_answer(struct metrics_http *m, struct mh_conn *k)
{
	char *body = NULL;
	size_t blen = 0;
	const char *status = "200 OK";
	FILE *f;

	k->req[k->len] = '\0';
	if (strncmp(k->req, "GET ", 4) && strncmp(k->req, "HEAD ", 5)) {
		status = "405 Method Not Allowed";
	} else {
		const char *path = strchr(k->req, ' ') + 1;
		size_t plen = strcspn(path, " ?\r\n");

		if (plen != 8 || strncmp(path, "/metrics", 8))
			status = "404 Not Found";
	}
	f = open_memstream(&body, &blen);
	if (!f)
		return;
	if (!strcmp(status, "200 OK"))
		report_prometheus(m->c, f);
	else
		fprintf(f, "%s: only GET /metrics is served here\n", status);
	if (fclose(f)) {
		free(body);
		return;
	}
	f = open_memstream(&k->out, &k->outlen);
	if (!f) {
		free(body);
		return;
	}
	fprintf(f,
		"HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
		"Content-Length: %zu\r\nConnection: close\r\n\r\n",
		status, blen);
	if (strncmp(k->req, "HEAD ", 5))
		fwrite(body, 1, blen, f);
	if (fclose(f)) {
		free(k->out);
		k->out = NULL;
	}
	free(body);
}

/* Write what the socket takes. false: done (or failed): close it. */
static bool conn_flush(struct metrics_http *m, struct mh_conn *k)
{
	while (k->outoff < k->outlen) {
		ssize_t w = send(k->fd, k->out + k->outoff, k->outlen - k->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0)
			return errno == EAGAIN || errno == EINTR;
		k->outoff += (size_t)w;
	}
	(void)m;
	return false;
}

static bool conn_read(struct metrics_http *m, struct mh_conn *k)
{
	ssize_t n = recv(k->fd, k->req + k->len, sizeof(k->req) - 1 - k->len, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n < 0)
		return true;
	k->len += (size_t)n;
	k->req[k->len] = '\0';
	/* The headers end with an empty line; a request longer than the buffer is refused. */
	if (!strstr(k->req, "\r\n\r\n") && !strstr(k->req, "\n\n")) {
		if (k->len + 1 < sizeof(k->req))
			return true;
		return false;
	}
	conn_answer(m, k);
	if (!k->out)
		return false;
	if (!conn_flush(m, k))
		return false;
	return !ctl_rewatch(m->c, k->fd, EPOLLOUT, &k->tag);
}

static void on_accept(struct metrics_http *m)
{
	/* Every pending connection: a backlog full of slow ones would keep a scraper out. */
	for (;;) {
		struct mh_conn *k;
		int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), slot;

		if (fd < 0)
			return;
		slot = slot_for_new(m);
		k = slot >= 0 ? calloc(1, sizeof(*k)) : NULL;
		if (!k) {
			close(fd); /* all replying: the scraper tries again at its next interval */
			continue;
		}
		k->fd = fd;
		k->since_ms = mono_ms();
		k->tag = (struct ev_tag){.kind = EV_METRICS_HTTP, .ptr = k};
		if (ctl_watch(m->c, fd, EPOLLIN, &k->tag)) {
			close(fd);
			free(k);
			continue;
		}
		m->conn[slot] = k;
		/* A scraper's request is usually there already: answer it now. */
		if (!conn_read(m, k))
			conn_close(m, slot);
	}
}

void metrics_http_event(struct metrics_http *m, void *tag, unsigned events)
{
	struct ev_tag *t = tag;
	struct mh_conn *k;
	bool keep;

	if (t == &m->ltag) {
		on_accept(m);
		return;
	}
	k = t->ptr;
	if (k->fd < 0)
		return; /* evicted earlier in this batch */
	if (k->out)
		keep = !(events & (EPOLLERR | EPOLLHUP)) && conn_flush(m, k);
	else
		keep = conn_read(m, k);
	if (!keep)
		conn_close(m, conn_slot(m, k));
}

void metrics_http_tick(struct metrics_http *m, uint64_t now_ms)
{
	if (!m)
		return;
	while (m->evicted) {
		struct mh_conn *k = m->evicted;

		m->evicted = k->next_evicted;
		free(k->out);
		free(k);
	}
	for (int i = 0; i < MH_CONNS_MAX; i++) {
		struct mh_conn *k = m->conn[i];

		if (k && now_ms - k->since_ms > (k->out ? MH_TIMEOUT_MS : MH_HEADER_MS))
			conn_close(m, i);
	}
}

struct metrics_http *metrics_http_open(struct ctl *c, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct metrics_http *m = calloc(1, sizeof(*m));
	int one = 1, r;

	if (!m) {
		opt_errf(err, errlen, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	m->c = c;
	m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(m->lfd, MH_BACKLOG))
		goto fail;
	m->ltag = (struct ev_tag){.kind = EV_METRICS_HTTP, .ptr = NULL};
	if (ctl_watch(c, m->lfd, EPOLLIN, &m->ltag))
		goto fail;
	c->mh = m;
	log_info("metrics on http://127.0.0.1:%u/metrics", (unsigned)port);
	return m;
fail:
	r = errno;
	opt_errf(err, errlen, -r, "metrics port 127.0.0.1:%u: %s", (unsigned)port, strerror(r));
	if (m->lfd >= 0)
		close(m->lfd);
	free(m);
	errno = r;
	return NULL;
}

void metrics_http_close(struct metrics_http *m)
{
	if (!m)
		return;
	for (int i = 0; i < MH_CONNS_MAX; i++)
		if (m->conn[i])
			conn_close(m, i);
	metrics_http_tick(m, 0); /* frees the evicted */
	ctl_unwatch(m->c, m->lfd);
	close(m->lfd);
	if (m->c->mh == m)
		m->c->mh = NULL;
	free(m);
}
