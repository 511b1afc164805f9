/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The metrics over HTTP (--metrics-port, off by default): GET /metrics on 127.0.0.1
 * answers the Prometheus text of the metrics file (docs/metrics.md), for a Prometheus
 * that scrapes the bridge directly. Served on the control thread's epoll without ever
 * blocking it: at most MH_CONNS_MAX connections, a request of at most MH_REQ_MAX bytes
 * that must arrive within MH_HEADER_MS, a reply written within MH_TIMEOUT_MS, one reply
 * per connection (HTTP/1.0, closed). With every slot taken, a new connection takes the
 * slot of the oldest one that has not sent a whole request (it is closed).
 */
#ifndef CONTROL_METRICS_HTTP_H
#define CONTROL_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define MH_CONNS_MAX  8
#define MH_REQ_MAX    2048
#define MH_HEADER_MS  1000 /* a request arrives within this (loopback: milliseconds) */
#define MH_TIMEOUT_MS 5000 /* a reply is taken within this */
#define MH_BACKLOG    64   /* listen backlog: all pending connections are accepted */

struct ctl;
struct metrics_http;

/*
 * Listen on 127.0.0.1:port and watch the socket on the control thread's epoll (tagged
 * EV_METRICS_HTTP). Main thread, before ctl_run. NULL + errno with a message in err.
 */
struct metrics_http *metrics_http_open(struct ctl *c, uint16_t port, char *err, size_t errlen);

/* An epoll event of one of its fds (control thread). */
void metrics_http_event(struct metrics_http *m, void *tag, unsigned events);

/* After each event batch of the control loop: free the connections evicted in it; close
 * those without a whole request after MH_HEADER_MS, or with a reply after MH_TIMEOUT_MS. */
void metrics_http_tick(struct metrics_http *m, uint64_t now_ms);

/* Close every connection and the socket; NULL is a no-op. */
void metrics_http_close(struct metrics_http *m);

#endif /* CONTROL_METRICS_HTTP_H */
