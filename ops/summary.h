/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The one-line summary of the bridge (summary.c): systemd's STATUS= line. */
#ifndef OPS_SUMMARY_H
#define OPS_SUMMARY_H

#include <stddef.h>

struct ctl;

/*
 * The one-line summary (systemd STATUS=), raw counters, prefixed with "waiting for
 * joins: " or "UNHEALTHY (conditions): " (health.h); always terminated, truncated.
 */
void show_summary(struct ctl *c, char *buf, size_t len);

#endif /* OPS_SUMMARY_H */
