/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The metrics over HTTP (--metrics-port, off by default): GET /metrics on 127.0.0.1, or
 * on --metrics-address for a central Prometheus, answers the Prometheus text of the
 * metrics file (docs/metrics.md). Only clients in the allow-list (--metrics-allow;
 * without it, loopback addresses only) are served: others are closed at once and
 * counted (metrics_http_refused). Other requests than GET (or HEAD) /metrics get 404 or
 * 405. Served on the control thread's epoll without ever
 * blocking it: at most MH_CONNS_MAX connections, a request of at most MH_REQ_MAX bytes
 * that must arrive within MH_HEADER_MS, a reply written within MH_TIMEOUT_MS, one reply
 * per connection (HTTP/1.0, closed). With every slot taken, a new connection takes the
 * slot of the oldest one that has not sent a whole request (it is closed).
 */
#ifndef CONTROL_METRICS_HTTP_H
#define CONTROL_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define MH_CONNS_MAX  8
#define MH_REQ_MAX    2048
#define MH_HEADER_MS  1000 /* a request arrives within this (loopback: milliseconds) */
#define MH_TIMEOUT_MS 5000 /* a reply is taken within this */
#define MH_BACKLOG    64   /* listen backlog: all pending connections are accepted */

#define MH_ALLOW_MAX 64 /* --metrics-allow entries (addresses or prefixes) */

struct ctl;
struct metrics_http;

/* An IPv4 prefix of the allow-list, network byte order. */
struct mh_net {
	uint32_t addr, mask;
};

/* Where to listen and whom to serve (the options --metrics-port, -address, -allow). */
struct metrics_http_cfg {
	uint16_t port;
	struct in_addr addr; /* INADDR_LOOPBACK unless --metrics-address */
	uint32_t nallow;     /* 0: loopback clients (127.0.0.0/8) only */
	struct mh_net allow[MH_ALLOW_MAX];
};

/* Defaults: port 0 (off), 127.0.0.1, loopback clients only. */
void metrics_http_cfg_init(struct metrics_http_cfg *cfg);

/* Parse an IPv4 address for --metrics-address. 0 or -EINVAL with a message in err. */
int metrics_http_addr_parse(struct metrics_http_cfg *cfg, const char *arg, char *err,
			    size_t errlen);

/*
 * Parse --metrics-allow: IPv4 addresses and prefixes (A.B.C.D or A.B.C.D/N), separated
 * by commas, replacing the list. 0, or -EINVAL with a message naming the bad item in err
 * (cfg unchanged).
 */
int metrics_http_allow_parse(struct metrics_http_cfg *cfg, const char *arg, char *err,
			     size_t errlen);

/*
 * Listen on cfg->addr:cfg->port and register the socket, its connections and a pass after
 * every batch with the loop (loop.h: the connections evicted in the batch freed; those
 * without a whole request after MH_HEADER_MS, or with a reply after MH_TIMEOUT_MS,
 * closed). A non-loopback address needs an allow-list (-EINVAL
 * otherwise: serving the metrics to anyone who can reach the port is not a default).
 * Main thread, before ctl_run. NULL + errno with a message in err.
 */
struct metrics_http *metrics_http_open(struct ctl *c, const struct metrics_http_cfg *cfg, char *err,
				       size_t errlen);

/* Connections refused because the client is not in the allow-list; 0 for NULL. Control
 * thread. */
uint64_t metrics_http_refused(const struct metrics_http *m);

/* Close every connection and the socket; NULL is a no-op. */
void metrics_http_close(struct metrics_http *m);

#endif /* CONTROL_METRICS_HTTP_H */
