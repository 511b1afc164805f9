// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * GET /metrics over HTTP on the control thread (metrics_http.h). Own code rather than a
 * library (libmicrohttpd): one request a scrape, one reply, allowed clients only, on the
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
#include "loop.h"
#include "metrics_http.h"
#include "options.h"
#include "report.h"

struct mh_conn {
	struct metrics_http *m;
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
	struct mh_conn *conn[MH_CONNS_MAX];
	/* Evicted during an event batch that may still name them: freed after it. */
	struct mh_conn *evicted;
	uint64_t evictions; /* idle connections closed for a new one */
	struct metrics_http_cfg cfg;
	uint64_t refused; /* clients not in the allow-list */
};

static void conn_close(struct metrics_http *m, int slot)
{
	struct mh_conn *k = m->conn[slot];

	loop_unwatch(k->fd);
	close(k->fd);
	free(k->out);
	free(k);
	m->conn[slot] = NULL;
}

/* Close an idle connection for a new one; its memory waits for the end of the batch. */
static void conn_evict(struct metrics_http *m, int slot)
{
	struct mh_conn *k = m->conn[slot];

	loop_unwatch(k->fd);
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
	return !loop_rewatch(k->fd, EPOLLOUT);
}

/* The client may scrape: in the allow-list, or on loopback without one. */
static bool client_allowed(const struct metrics_http *m, const struct sockaddr_in *sa)
{
	uint32_t a = sa->sin_addr.s_addr;

	if (sa->sin_family != AF_INET)
		return false;
	if (!m->cfg.nallow)
		return (ntohl(a) >> 24) == 127;
	for (uint32_t i = 0; i < m->cfg.nallow; i++)
		if ((a & m->cfg.allow[i].mask) == m->cfg.allow[i].addr)
			return true;
	return false;
}

static void conn_fd(void *arg, unsigned events);

static void on_accept(struct metrics_http *m)
{
	/* Every pending connection: a backlog full of slow ones would keep a scraper out. */
	for (;;) {
		struct sockaddr_in sa;
		socklen_t salen = sizeof(sa);
		struct mh_conn *k;
		int fd = accept4(m->lfd, (struct sockaddr *)&sa, &salen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC),
		    slot;

		if (fd < 0)
			return;
		/* Refused before it takes a slot: closed unanswered, counted, logged once. */
		if (!client_allowed(m, &sa)) {
			char ip[INET_ADDRSTRLEN] = "?";

			close(fd);
			if (!m->refused++) {
				inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
				log_warn("metrics: refused a connection from %s (not in the "
					 "allow-list); further ones are counted in "
					 "ib2roce_metrics_refused_total",
					 ip);
			}
			continue;
		}
		slot = slot_for_new(m);
		k = slot >= 0 ? calloc(1, sizeof(*k)) : NULL;
		if (!k) {
			close(fd); /* all replying: the scraper tries again at its next interval */
			continue;
		}
		k->fd = fd;
		k->since_ms = mono_ms();
		k->m = m;
		if (loop_watch(fd, EPOLLIN, conn_fd, k)) {
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

/* The listening socket is readable. */
static void listen_fd(void *arg, unsigned events)
{
	(void)events;
	on_accept(arg);
}

/* A connection's socket is readable or writable. */
static void conn_fd(void *arg, unsigned events)
{
	struct mh_conn *k = arg;
	struct metrics_http *m = k->m;
	bool keep;

	if (k->fd < 0)
		return; /* evicted earlier in this batch */
	if (k->out)
		keep = !(events & (EPOLLERR | EPOLLHUP)) && conn_flush(m, k);
	else
		keep = conn_read(m, k);
	if (!keep)
		conn_close(m, conn_slot(m, k));
}

/* After every batch: free the evicted, close the connections that took too long. */
static void metrics_http_tick(struct metrics_http *m, uint64_t now_ms)
{
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

static int metrics_http_pass(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	if (c->mh)
		metrics_http_tick(c->mh, now);
	return -1;
}

void metrics_http_cfg_init(struct metrics_http_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->addr.s_addr = htonl(INADDR_LOOPBACK);
}

int metrics_http_addr_parse(struct metrics_http_cfg *cfg, const char *arg, char *err, size_t errlen)
{
	struct in_addr a;

	if (inet_pton(AF_INET, arg, &a) != 1)
		return opt_errf(
			err, errlen, -EINVAL,
			"metrics address '%s': not an IPv4 address (e.g. 10.0.0.5, 0.0.0.0)", arg);
	cfg->addr = a;
	return 0;
}

int metrics_http_allow_parse(struct metrics_http_cfg *cfg, const char *arg, char *err,
			     size_t errlen)
{
	struct mh_net nets[MH_ALLOW_MAX];
	uint32_t n = 0;
	const char *p = arg;

	for (;;) {
		size_t len = strcspn(p, ",");
		char item[32], *slash;
		unsigned long bits = 32;
		struct in_addr a;

		if (len == 0 || len >= sizeof(item))
			return opt_errf(err, errlen, -EINVAL,
					"metrics allow-list '%s': empty or too long item", arg);
		if (n == MH_ALLOW_MAX)
			return opt_errf(err, errlen, -EINVAL,
					"metrics allow-list: more than %d items", MH_ALLOW_MAX);
		memcpy(item, p, len);
		item[len] = '\0';
		slash = strchr(item, '/');
		if (slash) {
			char *end;

			*slash = '\0';
			errno = 0;
			bits = strtoul(slash + 1, &end, 10);
			if (!slash[1] || *end || errno || bits > 32)
				return opt_errf(err, errlen, -EINVAL,
						"metrics allow-list item '%.*s': the prefix length "
						"must be 0 to 32",
						(int)len, p);
		}
		if (inet_pton(AF_INET, item, &a) != 1)
			return opt_errf(err, errlen, -EINVAL,
					"metrics allow-list item '%.*s': not an IPv4 address or "
					"prefix (A.B.C.D or A.B.C.D/N)",
					(int)len, p);
		nets[n].mask = bits ? htonl(~0u << (32 - bits)) : 0;
		nets[n].addr = a.s_addr & nets[n].mask;
		n++;
		if (!p[len])
			break;
		p += len + 1;
	}
	memcpy(cfg->allow, nets, n * sizeof(nets[0]));
	cfg->nallow = n;
	return 0;
}

uint64_t metrics_http_refused(const struct metrics_http *m)
{
	return m ? m->refused : 0;
}

/* report's ib2roce_metrics_refused_total (report_on_refused). */
static uint64_t refused_of(const struct ctl *c)
{
	return metrics_http_refused(c->mh);
}

struct metrics_http *metrics_http_open(struct ctl *c, const struct metrics_http_cfg *cfg, char *err,
				       size_t errlen)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(cfg->port), .sin_addr = cfg->addr};
	struct metrics_http *m;
	char ip[INET_ADDRSTRLEN];
	int one = 1, r;

	inet_ntop(AF_INET, &cfg->addr, ip, sizeof(ip));
	if ((ntohl(cfg->addr.s_addr) >> 24) != 127 && !cfg->nallow) {
		opt_errf(err, errlen, -EINVAL,
			 "metrics address %s is not a loopback address: give --metrics-allow "
			 "(the clients that may scrape)",
			 ip);
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		opt_errf(err, errlen, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	m->c = c;
	m->cfg = *cfg;
	m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(m->lfd, MH_BACKLOG))
		goto fail;
	if (loop_watch(m->lfd, EPOLLIN, listen_fd, m) || loop_on_pass(metrics_http_pass, c))
		goto fail;
	c->mh = m;
	report_on_refused(refused_of);
	log_info("metrics on http://%s:%u/metrics%s", ip, (unsigned)cfg->port,
		 cfg->nallow ? " (clients in the allow-list)" : " (loopback clients)");
	return m;
fail:
	r = errno;
	opt_errf(err, errlen, -r, "metrics port %s:%u: %s", ip, (unsigned)cfg->port, strerror(r));
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
	loop_unwatch(m->lfd);
	close(m->lfd);
	if (m->c->mh == m)
		m->c->mh = NULL;
	free(m);
}
