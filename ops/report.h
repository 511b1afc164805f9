/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The reports (report.c): the final counters (printed at shutdown, and the console's
 * stats), stats --json and the Prometheus text (the metrics file, GET /metrics). Raw,
 * monotonic counters; control thread. docs/metrics.md documents the JSON schema and the
 * metrics.
 */
#ifndef OPS_REPORT_H
#define OPS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ctl;

/*
 * Register the metrics file's timer (--metrics-file: every statint seconds, 10 without
 * statistics; the first at the first tick) with the loop. 0 or -errno.
 */
int report_init(struct ctl *c);

/*
 * The connections GET /metrics refused (ib2roce_metrics_refused_total): metrics_http.c,
 * which is above report in ops/ (it serves report_prometheus), registers its count when
 * it opens (docs/architecture.md, Layout). None registered: 0. Control thread.
 */
typedef uint64_t report_count_fn(const struct ctl *c);
void report_on_refused(report_count_fn *fn);

/*
 * The final counters (printed at shutdown, and the console's "stats"): one line per
 * side, the latency percentiles, senders, the PGM streams, groups left at run time, one
 * line per group. Raw counters; tests parse this format.
 */
void show_final(struct ctl *c, FILE *out);

/*
 * The same counters with a header for their moment: "ib2roce: final counters" (final),
 * or "ib2roce: counters after N s (running)" (the console's stats).
 */
void show_counters(struct ctl *c, FILE *out, bool final);

/* stats --json: one JSON object on one line, newline-terminated (docs/metrics.md). */
void report_json(struct ctl *c, FILE *out);

/* The Prometheus text (what metrics_write puts in the file) to out. Control thread. */
void report_prometheus(struct ctl *c, FILE *out);

/*
 * Write the Prometheus text file (format 0.0.4, docs/metrics.md) atomically: a temp
 * file ".<name>.tmp.<pid>" in the same directory, renamed over path (no fsync: see
 * there). Returns 0, or -errno with "metrics file PATH: reason" in err (the temp file
 * removed). Control thread.
 */
int metrics_write(struct ctl *c, const char *path, char *err, size_t errlen);

#endif /* OPS_REPORT_H */
