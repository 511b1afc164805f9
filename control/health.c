// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Health (health.h): the one definition every report reads. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "health.h"
#include "placement.h"
#include "show_priv.h"

const char *const health_cond_name[HEALTH_NCONDS] = {
	[HEALTH_READY] = "ready", [HEALTH_GROUPS] = "groups",	    [HEALTH_WORKERS] = "workers",
	[HEALTH_SIDES] = "sides", [HEALTH_NIC_DROPS] = "nic_drops",
};

const char *const health_warn_name[HEALTH_NWARNS] = {
	[HEALTH_WARN_PLACEMENT] = "placement",
};

uint64_t health_stall_ms(const struct ctl *c)
{
	uint64_t half = c->wd_usec / 2000;

	if (!c->wd_usec)
		return HEALTH_STALL_MS;
	return half > 1000 ? half : 1000;
}

static void fail(struct health *h, enum health_cond k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct health *h, enum health_cond k, const char *fmt, ...)
{
	va_list ap;

	h->ok = false;
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
	if (c->nic_drops_rising)
		fail(h, HEALTH_NIC_DROPS, "nic_drops: the NIC's receive drop counter is rising");
	if (c->place && c->place->nworker_warn) {
		h->warned |= 1u << HEALTH_WARN_PLACEMENT;
		snprintf(h->warn[HEALTH_WARN_PLACEMENT], HEALTH_WHY_LEN,
			 "placement: %u worker warning%s: %.100s%s", c->place->nworker_warn,
			 c->place->nworker_warn == 1 ? "" : "s", c->place->worker_warn,
			 strlen(c->place->worker_warn) > 100 ? "..." : "");
	}
	return h->ok;
}

bool health_print(struct ctl *c, FILE *out)
{
	struct health h;

	bool ok = health_check(c, mono_ms(), &h);

	if (ok)
		fprintf(out, "health ok\n");
	for (int k = 0; k < HEALTH_NCONDS; k++)
		if (h.failed & (1u << k))
			fprintf(out, "health FAILED %s\n", h.why[k]);
	for (int k = 0; k < HEALTH_NWARNS; k++)
		if (h.warned & (1u << k))
			fprintf(out, "health WARN %s\n", h.warn[k]);
	return ok;
}
