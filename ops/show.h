/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The console's tables (aligned, for people); the machine-readable reports (stats
 * --json, the Prometheus metrics file) are report.h's. Everything here runs on the control thread,
 * a registered QSBR reader that is online; it reads the workers' counters as snapshots and never
 * stops them. It writes only the control-thread-only fields of bridge.h (zap snapshots, rates,
 * heartbeat bookkeeping).
 *
 * Tables show counters since the last "zap" (st - zap); the summary line, the JSON
 * report and the metrics file show the raw, monotonic counters. docs/metrics.md
 * documents the JSON schema and the metrics.
 */
#ifndef CONTROL_SHOW_H
#define CONTROL_SHOW_H

#include <stdint.h>
#include <stdio.h>

#include <stdbool.h>

struct bridge;
struct chan_stats;
struct ctl;

/*
 * Register the console's tables (status, multicast, channels, buffers, workers and
 * cores, interfaces, senders and endpoints, tsi, stats, zap, tuning) and the rates timer
 * (show_tick, once a second) with the loop. Before the loop runs. 0 or -errno.
 */
int show_init(struct ctl *c);

/*
 * Once a second (control thread): per-channel pps_rx/pps_fwd over the interval since
 * the previous call (c->last_rate_ms, updated here; the first call only takes the
 * references), per-worker loop_rate from the heartbeat, and hb_prev/hb_changed_ms
 * (hb_changed_ms = now_ms when the heartbeat moved, and at the first call). Cost: a few
 * loads per channel and worker.
 */
void show_tick(struct ctl *c, uint64_t now_ms);

/*
 * zap: record the current counters as the tables' zero (channel counters, group
 * forwarded packets, worker latency histograms). The JSON report and the metrics file
 * are not affected. Control thread. Cost: 8 KiB copied per worker.
 */
void show_zap(struct ctl *c);

/*
 * The console tables, written to out (control thread). Counters since zap.
 * status: version, uptime, readiness, health, per-side counters, non-zero drop reasons,
 * totals; returns the health (health.h): true when healthy.
 * multicast: one row per group: direction, pair, join state per side, packets, forwarding.
 * channels: one row per channel: QPN, worker, queues, backlog, counters, rate, state.
 * buffers: the pool and its census by state (one pass over the buffer metadata).
 * workers: CPU, NUMA node, loop rate, heartbeat age, latency quantiles since zap.
 */
bool show_status(struct ctl *c, FILE *out);
void show_multicast(struct ctl *c, FILE *out);
void show_channels(struct ctl *c, FILE *out);
void show_buffers(struct ctl *c, FILE *out);
void show_workers(struct ctl *c, FILE *out);

/*
 * The ports, device limits and GID table of each side (queried live: a few verbs calls
 * per GID table entry). name: a device name or a side name ("IB", "RoCE", any case),
 * NULL = both. Returns 0, or -ENOENT after writing "no interface 'x' (have: ...)".
 */
int show_interfaces(struct ctl *c, const char *name, FILE *out);

/*
 * The senders, most packets first. arg: NULL (100 rows) or a decimal row count
 * 1..1000000; anything else: -EINVAL after writing a message. -ENOMEM if the rows
 * cannot be collected. Cost: one pass over the sender table, a sort.
 */
int show_senders(struct ctl *c, const char *arg, FILE *out);

/*
 * The PGM stream lines ("pgm side=IB stream gsi=... loops=N opx_discard=N"), one per
 * side a stream was seen on, and nothing else: the final counters use it too, and the
 * tests compare the lines with OpenPGM's fixture, so the format is fixed.
 * filter: NULL, or a substring every line shown contains.
 */
void show_tsi(struct ctl *c, const char *filter, FILE *out);

#endif /* CONTROL_SHOW_H */
