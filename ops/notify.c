// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The statistics and pps lines, and systemd's notifications (notify.h): timers and hooks
 * registered with the loop (loop.h); nothing here is called by name by the loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "bridge.h"
#include "ctl.h"
#include "health.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "state.h"
#include "summary.h"

/* The statistics line (every statint seconds), then systemd's STATUS=. */
static void stats_timer(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	struct chan_stats st[NSIDES];
	double dt = (double)(now - c->last_stats_ms) / 1000.0;

	for (int s = 0; s < NSIDES; s++)
		side_stats_sum(c->br, s, false, &st[s]);
	ctl_nic_read(c);
	if (dt > 0)
		log_notice("IB rx %" PRIu64 " (%.0f pps) fwd %" PRIu64 " drop %" PRIu64
			   " | RoCE rx %" PRIu64 " (%.0f pps) fwd %" PRIu64 " drop %" PRIu64,
			   st[0].rx_pkts, (double)(st[0].rx_pkts - c->last_rx[0]) / dt,
			   st[0].fwd_pkts, chan_stats_drops(&st[0]), st[1].rx_pkts,
			   (double)(st[1].rx_pkts - c->last_rx[1]) / dt, st[1].fwd_pkts,
			   chan_stats_drops(&st[1]));
	c->last_rx[0] = st[0].rx_pkts;
	c->last_rx[1] = st[1].rx_pkts;
	c->last_stats_ms = now;
	if (c->sd && c->ready) {
		char sum[256];

		show_summary(c, sum, sizeof(sum));
		sd_notifyf(0, "STATUS=%s", sum);
	}
}

static uint64_t stats_period(void *arg)
{
	struct ctl *c = arg;
	int64_t statint = atomic_load(&c->statint);

	return statint > 0 ? (uint64_t)statint * 1000 : 0;
}

/* ppsdisplay: each side's packets per second, once a second (after the rates). */
static void pps_timer(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	char line[512];
	size_t off = 0;

	(void)now;
	for (int s = 0; s < NSIDES; s++) {
		uint64_t rx = 0, fwd = 0;

		for (uint32_t k = 0; k < c->br->sd[s].nchan; k++) {
			rx += c->br->sd[s].chan[k]->pps_rx;
			fwd += c->br->sd[s].chan[k]->pps_fwd;
		}
		off += (size_t)snprintf(line + off, sizeof(line) - off,
					"%s%s rx %" PRIu64 " pps fwd %" PRIu64 " pps",
					s ? " | " : "", side_name[s], rx, fwd);
	}
	log_notice("%s", line);
}

static uint64_t pps_period(void *arg)
{
	struct ctl *c = arg;

	return atomic_load(&c->ppsdisplay) ? 1000 : 0;
}

/*
 * The systemd watchdog: pinged from the control thread at half the interval, but only
 * while every worker's heartbeat advances (the health timer), so a stuck worker gets the
 * service restarted. With --workers 0 the control thread is the data path and its own
 * liveness is enough. Looked at every tick: a ping withheld goes out at the first tick
 * after the workers move again.
 */
static void watchdog_timer(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	uint64_t half = c->wd_usec / 2000;

	if (now - c->last_wd_ms < half || c->wd_stalled)
		return;
	sd_notify(0, "WATCHDOG=1");
	c->last_wd_ms = now;
}

/* Every group joined (missing 0), or the join timeout passed without some. */
static void notify_ready(struct ctl *c, uint32_t missing, const char *names, bool late)
{
	char sum[256];

	if (!c->sd)
		return;
	if (missing) {
		sd_notifyf(0, "READY=1\nSTATUS=%u group%s not joined: %s%s", missing,
			   missing == 1 ? "" : "s", names, missing > 8 ? ", ..." : "");
		return;
	}
	show_summary(c, sum, sizeof(sum));
	sd_notifyf(0, "%sSTATUS=%s", late ? "" : "READY=1\n", sum);
}

/* A health condition failed or recovered (health_on_change): STATUS= at once. */
static void notify_health(struct ctl *c)
{
	char sum[256];

	if (!c->sd || !c->ready)
		return;
	show_summary(c, sum, sizeof(sum));
	sd_notifyf(0, "STATUS=%s", sum);
}

static void notify_exit(void *arg)
{
	struct ctl *c = arg;

	if (c->sd)
		sd_notify(0, "STOPPING=1\nSTATUS=shutting down: leaving groups");
}

int notify_init(struct ctl *c)
{
	struct loop_timer *t;

	t = loop_every(1000, pps_timer, c, "pps");
	if (!t)
		return -ENOMEM;
	loop_timer_follow(t, pps_period);
	loop_timer_what(t, "pps line (ppsdisplay)");
	if (c->sd && c->wd_usec) {
		t = loop_every(0, watchdog_timer, c, "watchdog");
		if (!t)
			return -ENOMEM;
		loop_timer_what(t, "WATCHDOG=1 at half the interval, while the workers move");
	}
	t = loop_every(1000, stats_timer, c, "stats");
	if (!t)
		return -ENOMEM;
	loop_timer_follow(t, stats_period);
	loop_timer_what(t, "statistics line, systemd STATUS");
	c->on_ready = notify_ready;
	health_on_change(notify_health);
	return loop_on_exit(notify_exit, c);
}
