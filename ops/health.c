// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Health (health.h): the one definition every report reads. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "concmd.h"
#include "console.h"
#include "ctl.h"
#include "health.h"
#include "log.h"
#include "loop.h"
#include "placement.h"
#include "state.h"

/* One line per condition: its name, and what its failing means (health.h). */
const char *const health_cond_name[HEALTH_NCONDS] = {
	[HEALTH_READY] = "ready",	      /* failed */
	[HEALTH_GROUPS] = "groups",	      /* failed */
	[HEALTH_WORKERS] = "workers",	      /* failed */
	[HEALTH_SIDES] = "sides",	      /* failed */
	[HEALTH_NIC_DROPS] = "nic_drops",     /* degraded */
	[HEALTH_CTL_STALL] = "ctl_stall",     /* degraded */
	[HEALTH_LOG_DROPPED] = "log_dropped", /* degraded */
	[HEALTH_PLACEMENT] = "placement",     /* degraded */
	[HEALTH_TX_STUCK] = "tx_stuck",	      /* failed */
};

const enum health_level health_cond_level[HEALTH_NCONDS] = {
	[HEALTH_READY] = HEALTH_LEVEL_FAILED,	      /* groups not joined yet */
	[HEALTH_GROUPS] = HEALTH_LEVEL_FAILED,	      /* a group does not forward */
	[HEALTH_WORKERS] = HEALTH_LEVEL_FAILED,	      /* a worker stalled */
	[HEALTH_SIDES] = HEALTH_LEVEL_FAILED,	      /* a side down */
	[HEALTH_NIC_DROPS] = HEALTH_LEVEL_DEGRADED,   /* the standby sees the same burst */
	[HEALTH_CTL_STALL] = HEALTH_LEVEL_DEGRADED,   /* the data path forwarded meanwhile */
	[HEALTH_LOG_DROPPED] = HEALTH_LEVEL_DEGRADED, /* the data path forwards */
	[HEALTH_PLACEMENT] = HEALTH_LEVEL_DEGRADED,   /* the standby is placed alike */
	[HEALTH_TX_STUCK] = HEALTH_LEVEL_FAILED,      /* a channel sends nothing */
};

const char *const health_level_name[3] = {
	[HEALTH_LEVEL_OK] = "ok",
	[HEALTH_LEVEL_DEGRADED] = "degraded",
	[HEALTH_LEVEL_FAILED] = "failed",
};

static void fail(struct health *h, enum health_cond k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct health *h, enum health_cond k, const char *fmt, ...)
{
	va_list ap;

	if (health_cond_level[k] == HEALTH_LEVEL_FAILED)
		h->ok = false;
	else
		h->degraded = true;
	if (health_cond_level[k] > h->level)
		h->level = health_cond_level[k];
	h->failed |= 1u << k;
	va_start(ap, fmt);
	vsnprintf(h->why[k], sizeof(h->why[k]), fmt, ap);
	va_end(ap);
}

static void check_groups(struct ctl *c, struct health *h)
{
	struct bridge *br = c->br;
	uint32_t bad = 0;
	const char *first = NULL;

	for (uint32_t i = 0; i < br->ngroups; i++) {
		if (group_fwd_state(br->groups[i]) == FWD_YES)
			continue;
		if (!bad++)
			first = br->groups[i]->spec;
	}
	if (bad)
		fail(h, HEALTH_GROUPS, "groups: %u of %u not forwarding in every direction (%s%s)",
		     bad, br->ngroups, first, bad > 1 ? ", ..." : "");
}

static void check_workers(struct ctl *c, uint64_t now_ms, struct health *h)
{
	struct bridge *br = c->br;
	uint64_t limit = health_stall_ms(c), worst = 0;

	/* With --workers 0 the control thread is the data path: it runs this very code. */
	for (uint32_t i = 0; br->cfg.nworkers && i < br->nworkers; i++) {
		uint64_t age = worker_hb_age_ms(c, &br->workers[i], now_ms);

		if (age <= limit)
			continue;
		if (!h->nstalled++) {
			h->stalled = i + 1;
			worst = age;
		}
	}
	if (h->nstalled)
		fail(h, HEALTH_WORKERS,
		     "workers: %u stalled (worker %u on CPU %d: no progress for %" PRIu64
		     " ms, limit %" PRIu64 " ms)",
		     h->nstalled, h->stalled - 1, br->workers[h->stalled - 1].cpu, worst, limit);
}

static void check_sides(struct ctl *c, struct health *h)
{
	struct bridge *br = c->br;
	char msg[HEALTH_WHY_LEN] = "";
	size_t off = 0;

	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];
		uint32_t broken = side_broken(br, s);

		if (sd->state != SIDE_UP && off < sizeof(msg))
			off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s %s port %u %s",
						off ? "; " : "", side_name[s], sd->dev, sd->port,
						side_state_str(sd->state));
		if (broken && off < sizeof(msg))
			off += (size_t)snprintf(msg + off, sizeof(msg) - off,
						"%s%s %u channel%s in the error state",
						off ? "; " : "", side_name[s], broken,
						broken == 1 ? "" : "s");
	}
	if (off)
		fail(h, HEALTH_SIDES, "sides: %s", msg);
}

/*
 * Send queues that stopped completing (engine/fwd.c, chan_tx_full): the first one named,
 * with how long since its queue was first found full without a completion. FAILED: that
 * channel sends nothing, so its groups lose that direction whole; the standby's queue
 * pairs are its own, so a failover helps at once (where a microburst, DEGRADED, would
 * reach the standby too).
 */
static void check_tx_stuck(struct ctl *c, uint64_t now_ms, struct health *h)
{
	struct bridge *br = c->br;
	struct channel *first = NULL;
	uint64_t first_ns = 0;
	uint32_t n = 0;
	int first_s = 0;

	for (int s = 0; s < NSIDES; s++) {
		for (uint32_t k = 0; k < br->sd[s].nchan; k++) {
			struct channel *ch = br->sd[s].chan[k];
			uint64_t at = chan_tx_stuck_ns(ch);

			if (!at)
				continue;
			if (!n++) {
				first = ch;
				first_ns = at;
				first_s = s;
			}
		}
	}
	if (n)
		fail(h, HEALTH_TX_STUCK,
		     "tx_stuck: %s %s channel %u (QP %#x): send queue full, no send completion "
		     "for %.1f s%s",
		     side_name[first_s], br->sd[first_s].dev, first->index, first->qpn,
		     (double)sub0(now_ms, first_ns / 1000000) / 1000.0,
		     n > 1 ? " (and more channels)" : "");
}

/* A DEGRADED condition's event (at ms, 0: never) is recent enough to hold. */
static bool recent(uint64_t ms, uint64_t now_ms)
{
	return ms && now_ms - ms < HEALTH_DEGRADED_HOLD_MS;
}

bool health_check(struct ctl *c, uint64_t now_ms, struct health *h)
{
	memset(h, 0, sizeof(*h));
	h->ok = true;
	if (!c->ready)
		fail(h, HEALTH_READY, "ready: waiting for the first joins");
	else
		check_groups(c, h);
	check_workers(c, now_ms, h);
	check_sides(c, h);
	check_tx_stuck(c, now_ms, h);
	if (recent(c->nic_drops_ms, now_ms))
		fail(h, HEALTH_NIC_DROPS,
		     "nic_drops: the NIC's receive drop counter rose %" PRIu64 " s ago",
		     (now_ms - c->nic_drops_ms) / 1000);
	if (recent(c->stall_ms, now_ms))
		fail(h, HEALTH_CTL_STALL,
		     "ctl_stall: the control thread stalled for %.1f s, %" PRIu64 " s ago",
		     (double)c->stall_last_ms / 1000.0, (now_ms - c->stall_ms) / 1000);
	if (recent(c->log_dropped_ms, now_ms))
		fail(h, HEALTH_LOG_DROPPED,
		     "log_dropped: log messages were dropped (log output blocked), %" PRIu64
		     " s ago",
		     (now_ms - c->log_dropped_ms) / 1000);
	if (c->place && c->place->nworker_warn)
		fail(h, HEALTH_PLACEMENT, "placement: %u worker warning%s: %.100s%s",
		     c->place->nworker_warn, c->place->nworker_warn == 1 ? "" : "s",
		     c->place->worker_warn, strlen(c->place->worker_warn) > 100 ? "..." : "");
	return h->ok;
}

bool health_print(struct ctl *c, FILE *out)
{
	struct health h;

	health_check(c, mono_ms(), &h);
	if (!h.failed) {
		fprintf(out, "health ok\n");
		return true;
	}
	for (int lv = HEALTH_LEVEL_FAILED; lv > HEALTH_LEVEL_OK; lv--)
		for (int k = 0; k < HEALTH_NCONDS; k++)
			if ((h.failed & (1u << k)) && (int)health_cond_level[k] == lv)
				fprintf(out, "health %s %s\n",
					lv == HEALTH_LEVEL_FAILED ? "FAILED" : "DEGRADED",
					h.why[k]);
	return h.ok;
}

/* ---- The health timer and command ---- */

/* Told of every change of the failing conditions (health_on_change). */
static health_change_fn *on_change;

void health_on_change(health_change_fn *fn)
{
	on_change = fn;
}

/*
 * Once a second after show_tick: the NICs' drop counters sampled (ctl_nic_sample); a
 * worker that stalls is logged in every mode (and once more when it moves again), a
 * condition that fails or recovers is logged, and every change is told at once to the
 * hook of health_on_change (notify.c: systemd's STATUS=).
 */
static void health_tick(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	struct health h;
	unsigned changed;
	uint64_t logd = log_dropped();

	ctl_nic_sample(c);
	if (logd > c->log_dropped_seen)
		c->log_dropped_ms = now;
	c->log_dropped_seen = logd;
	health_check(c, now, &h);
	if (h.stalled != c->wd_stalled) {
		if (h.stalled)
			log_err("%s%s", h.why[HEALTH_WORKERS],
				c->sd && c->wd_usec ? ": withholding the watchdog" : "");
		else
			log_notice("workers: every worker makes progress again");
		c->wd_stalled = h.stalled;
	}
	changed = (h.failed ^ c->health_failed) & ~(1u << HEALTH_READY);
	for (int k = 0; k < HEALTH_NCONDS; k++) {
		if (!(changed & (1u << k)) || k == HEALTH_WORKERS)
			continue;
		if (h.failed & (1u << k))
			log_warn("health: %s", h.why[k]);
		else
			log_notice("health: %s ok again", health_cond_name[k]);
	}
	if (h.failed != c->health_failed && on_change)
		on_change(c);
	c->health_failed = h.failed;
}

static int cmd_health(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("health", args, out))
		return -1;
	return health_print(c, out) ? 0 : -1;
}

static const struct console_cmd health_cmds[] = {
	{{"health", NULL, "ok, or one line per failed health condition (fails if unhealthy)",
	  false},
	 cmd_health},
	{{NULL, NULL, NULL, false}, NULL},
};

int health_init(struct ctl *c)
{
	struct loop_timer *t = loop_every(1000, health_tick, c, "health");

	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "NIC drops, health conditions (logged, systemd STATUS)");
	return console_cmd_register(health_cmds);
}
