// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The one-line summary (summary.h): systemd's STATUS= (notify.c). Above health.c (it
 * reads the conditions), below notify.c and the tables (docs/architecture.md, Layout).
 */
#include <inttypes.h>
#include <stdio.h>

#include "bridge.h"
#include "clock.h"
#include "ctl.h"
#include "health.h"
#include "show_priv.h"
#include "summary.h"

void show_summary(struct ctl *c, char *buf, size_t len)
{
	struct bridge *br = c->br;
	struct chan_stats st[NSIDES];
	struct counts n;
	struct health h;
	char pre[96] = "";

	counts_get(br, &n);
	for (int s = 0; s < NSIDES; s++)
		side_stats_sum(br, s, false, &st[s]);
	if (!c->ready) {
		snprintf(pre, sizeof(pre), "waiting for joins: ");
	} else if (health_check(c, mono_ms(), &h), h.failed) {
		/* UNHEALTHY: the FAILED conditions; DEGRADED: only DEGRADED ones fail. */
		size_t off =
			(size_t)snprintf(pre, sizeof(pre), "%s (", h.ok ? "DEGRADED" : "UNHEALTHY");

		for (int k = 0, first = 1; k < HEALTH_NCONDS && off < sizeof(pre); k++) {
			if (!(h.failed & (1u << k)) || health_cond_level[k] != h.level)
				continue;
			off += (size_t)snprintf(pre + off, sizeof(pre) - off, "%s%s",
						first ? "" : ", ", health_cond_name[k]);
			first = 0;
		}
		if (off < sizeof(pre))
			snprintf(pre + off, sizeof(pre) - off, "): ");
	}
	snprintf(buf, len,
		 "%sforwarding %u/%u groups | IB rx %" PRIu64 " fwd %" PRIu64 " drop %" PRIu64
		 " | RoCE rx %" PRIu64 " fwd %" PRIu64 " drop %" PRIu64 " | %u worker%s%s",
		 pre, n.forwarding, n.groups, st[0].rx_pkts, st[0].fwd_pkts,
		 chan_stats_drops(&st[0]), st[1].rx_pkts, st[1].fwd_pkts, chan_stats_drops(&st[1]),
		 br->cfg.nworkers, br->cfg.nworkers == 1 ? "" : "s",
		 br->cfg.nworkers ? "" : " (event-driven)");
}
