// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The control thread's context (ctl.h): set up the rdma_cm ids of both sides, register
 * the control plane's parts with the loop (loop.h: the joins of joins.c, the --workers 0
 * data path of evmode.c, queue pairs in the error state, the aging of senders and PGM
 * streams, SIGHUP's reload, the events and reload commands, the loop's heartbeat), run
 * the loop, and close what it opened. The run-time groups (groups.c) register from
 * app/start.c: ctl.c calls no other file of control/ but those below it (layout in
 * docs/architecture.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/ib.h>
#include <systemd/sd-daemon.h>

#include "bridge.h"
#include "console.h"
#include "ctl.h"
#include "evmode.h"
#include "joins.h"
#include "log.h"
#include "loop.h"
#include "options.h"
#include "senders.h"
#include "state.h"
#include "stream.h"

static void reload_hook(void *arg);
static loop_timer_fn qp_errors_tick, aging_tick;

static const struct console_cmd ctl_cmds[];

/*
 * The control thread's own registrations (loop.h), timers in the order they run at a
 * tick: the joins' (joins.c), queue pairs in the error state, the event-driven data
 * path's (evmode.c, --workers 0), the aging of senders and PGM streams; SIGHUP; the
 * events and reload commands.
 */
static int ctl_register(struct ctl *c)
{
	struct loop_timer *t;
	int r = joins_init(c);

	if (r)
		return r;
	t = loop_every(0, qp_errors_tick, c, "qp errors");
	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "queue pairs in the error state, stuck send queues (said once)");
	if (!c->br->cfg.nworkers && (r = evmode_init(c)))
		return r;
	t = loop_every(1000, aging_tick, c, "aging");
	if (!t)
		return -ENOMEM;
	loop_timer_what(t, "idle senders and PGM streams");
	if (loop_on_reload(reload_hook, c))
		return -ENOMEM;
	return console_cmd_register(ctl_cmds);
}

int ctl_init(struct ctl *c, struct bridge *br, char *err, size_t errlen)
{
	int r;

	c->br = br;
	r = loop_init(err, errlen);
	if (r)
		return r;
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];
		struct sockaddr_storage a;

		sd->cm_ch = rdma_create_event_channel();
		if (!sd->cm_ch || rdma_create_id(sd->cm_ch, &sd->cm_id, NULL, RDMA_PS_UDP)) {
			snprintf(err, errlen, "%s: rdma_cm: %s", sd->dev, strerror(errno));
			return -errno;
		}
		memset(&a, 0, sizeof(a));
		if (s == SIDE_IB) {
			/* Bind to the port GID: no IPoIB address needed. */
			struct sockaddr_ib *sib = (struct sockaddr_ib *)&a;

			sib->sib_family = AF_IB;
			sib->sib_pkey = htons(sd->pkey);
			memcpy(&sib->sib_addr, sd->gid.raw, 16);
		} else {
			struct sockaddr_in *sin = (struct sockaddr_in *)&a;

			sin->sin_family = AF_INET;
			sin->sin_addr.s_addr = sd->ipv4;
		}
		r = rdma_bind_addr(sd->cm_id, (struct sockaddr *)&a);
		if (r) {
			snprintf(err, errlen, "%s: rdma_bind_addr: %s", sd->dev, strerror(errno));
			return -errno;
		}
		c->side_ref[s] = (struct ctl_side){c, s};
	}
	/* The NIC's drop counters count from here: the baseline. */
	for (int s = 0; s < NSIDES; s++)
		nic_ctr_init(&c->nic[s], br->sd[s].ctx ? br->sd[s].ctx->device->ibdev_path : NULL,
			     br->sd[s].port);
	c->start_ms = mono_ms();
	c->start_wall = (int64_t)time(NULL);
	c->last_stats_ms = c->last_rate_ms = c->last_age_ms = c->start_ms;
	for (uint32_t i = 0; i < br->nworkers; i++)
		br->workers[i].hb_changed_ms = c->start_ms;
	if (!c->join_timeout_ms)
		c->join_timeout_ms = 30000;
	if (c->sd) {
		uint64_t usec = 0;

		if (sd_watchdog_enabled(0, &usec) > 0)
			c->wd_usec = usec;
		c->last_wd_ms = c->start_ms;
	}
	r = ctl_register(c);
	if (r)
		return opt_errf(err, errlen, r, "control thread: out of memory");
	return 0;
}

const char *const ctl_reload_outcome_name[CTL_RELOAD_NOUTCOMES] = {
	[CTL_RELOAD_OK] = "ok",
	[CTL_RELOAD_REFUSED] = "refused",
	[CTL_RELOAD_FAILED] = "failed",
};

int ctl_reload(struct ctl *c, FILE *out)
{
	int r;

	if (!c->reload)
		return -ENOSYS;
	r = c->reload(c, out);
	c->reloads[!r ? CTL_RELOAD_OK : r == -ECANCELED ? CTL_RELOAD_REFUSED : CTL_RELOAD_FAILED]++;
	return r;
}

static void do_reload(struct ctl *c, const char *why)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!c->reload)
		return;
	f = open_memstream(&buf, &len);
	if (!f)
		return;
	log_notice("%s: reloading the configuration", why);
	r = ctl_reload(c, f);
	fclose(f);
	log_text(r ? LOG_ERR : LOG_NOTICE, "reload: ", buf);
	free(buf);
}

static void reload_hook(void *arg)
{
	do_reload(arg, "SIGHUP");
}

/*
 * A channel's send queue got stuck (engine/fwd.c, chan_tx_full) or moves again: said once
 * per episode (an episode is its tx_stuck_ns, the time the worker first found the queue
 * full with no completion since), and once when it clears.
 */
static void tx_stuck_report(struct ctl *c, int s, uint32_t k, struct channel *ch, uint64_t now_ms)
{
	uint64_t at = chan_tx_stuck_ns(ch), logged = ch->tx_stuck_logged;
	const char *dev = c->br->sd[s].dev;

	if (at == logged)
		return;
	if (!at) {
		log_ctx(LOG_NOTICE, dev, NULL,
			"%s %s channel %u (QP %#x): send queue completes again, %" PRIu64
			" ms after it was first found full without completions",
			side_name[s], dev, k, ch->qpn, sub0(now_ms, logged / 1000000));
	} else {
		uint64_t head = CMM_LOAD_SHARED(ch->tx_head), tail = CMM_LOAD_SHARED(ch->tx_tail);

		log_ctx(LOG_ERR, dev, NULL,
			"%s %s channel %u (QP %#x): send queue stuck: %" PRIu64
			" sends outstanding, no send completion for %" PRIu64
			" ms; nothing is sent through it (tx_full drops) until it completes again",
			side_name[s], dev, k, ch->qpn, sub0(head, tail),
			sub0(now_ms, at / 1000000));
	}
	ch->tx_stuck_logged = at;
}

/*
 * A QP in the error state (flushed completions) no longer receives: say so once. A send
 * queue that stopped completing: said once per episode (tx_stuck_report).
 */
static void qp_errors_tick(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	for (int s = 0; s < NSIDES; s++) {
		for (uint32_t k = 0; k < c->br->sd[s].nchan; k++) {
			struct channel *ch = c->br->sd[s].chan[k];

			tx_stuck_report(c, s, k, ch, now);

			if (__atomic_load_n(&ch->broken, __ATOMIC_RELAXED) &&
			    !ch->broken_reported) {
				ch->broken_reported = true;
				log_ctx(LOG_ERR, c->br->sd[s].dev, NULL,
					"%s %s channel %u (QP %#x): queue pair in the error state, "
					"no longer forwarding; restart the bridge",
					side_name[s], c->br->sd[s].dev, k, ch->qpn);
			}
		}
	}
}

/* Idle senders and PGM streams age out; the sender table's first overflow is said. */
static void aging_tick(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	c->last_age_ms = now;
	sender_table_age(c->br->senders, now * 1000000ull,
			 (uint64_t)atomic_load(&c->sender_idle_s) * 1000000000ull);
	pgm_stream_table_age(c->br->pgm, now * 1000000ull,
			     (uint64_t)atomic_load(&c->pgm_idle_s) * 1000000000ull);
	/* Workers only count; the first time the count moves from 0, we say it. */
	if (!c->untracked_logged && sender_table_untracked(c->br->senders)) {
		log_warn("sender table full (%u records per worker): new senders are "
			 "forwarded but not tracked (senders_untracked; enable senders=N "
			 "at start-up for more)",
			 c->br->cfg.max_senders);
		c->untracked_logged = true;
	}
}

/* The reload's report is the reply, and logged as SIGHUP's is (do_reload). */
static int cmd_reload(struct ctl *c, char *args, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (concmd_no_args("reload", args, out))
		return -1;
	if (!c->reload) {
		fprintf(out, "reload: not available\n");
		return -1;
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		fprintf(out, "reload: out of memory\n");
		return -1;
	}
	log_notice("console: reloading the configuration");
	r = ctl_reload(c, f);
	if (fclose(f)) {
		fprintf(out, "reload: out of memory\n");
		free(buf);
		return -1;
	}
	fputs(buf, out);
	log_text(r ? LOG_ERR : LOG_NOTICE, "reload: ", buf);
	free(buf);
	return r ? -1 : 0;
}

/* The registered timers (loop.h), then READY's deadline and the joins waiting to retry. */
static int cmd_events(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("events", args, out))
		return -1;
	loop_timers_print(out);
	joins_print(c, out);
	return 0;
}

static const struct console_cmd ctl_cmds[] = {
	{{"events", NULL, "the control thread's timers", false}, cmd_events},
	{{"reload", NULL, "re-read the configuration (as SIGHUP)", false}, cmd_reload},
	{{NULL, NULL, NULL, false}, NULL},
};

/*
 * The control loop's heartbeat, once per iteration. A gap of more than CTL_STALL_MS since
 * the previous one means that nothing the loop serves (timers and statistics, console,
 * joins, async events, the watchdog ping, which is withheld so) ran meanwhile. A stalled
 * thread cannot say so while stalled: the stall is logged and counted here, once over.
 * Then the ctlstall fault injection: the loop stops for that long, once.
 */
static int heartbeat_pass(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	uint64_t gap = now - c->loop_ms;
	int64_t inject = atomic_exchange(&c->ctlstall, 0);

	if (c->loop_ms && gap > CTL_STALL_MS) {
		c->stalls++;
		c->stall_last_ms = gap;
		c->stall_ms = now;
		if (gap > c->stall_max_ms)
			c->stall_max_ms = gap;
		log_warn("control thread was stalled for %.1f s: no timers, console, joins or "
			 "watchdog pings meanwhile (%" PRIu64 " stall%s so far)",
			 (double)gap / 1000.0, c->stalls, c->stalls == 1 ? "" : "s");
	}
	c->loop_ms = now;
	if (inject > 0) {
		struct timespec ts = {inject / 1000, (inject % 1000) * 1000000L};

		log_notice("ctlstall: stopping the control thread for %" PRId64 " ms", inject);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return -1;
}

int ctl_run(struct ctl *c)
{
	int r;

	/* The heartbeat is the last pass: it may stop the thread (ctlstall) after the
	 * modules' passes replied and cleaned up. */
	if (loop_on_pass(heartbeat_pass, c))
		return -ENOMEM;
	r = loop_run();

	return r ? r : c->status;
}

void ctl_fini(struct ctl *c)
{
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &c->br->sd[s];

		if (sd->cm_id)
			rdma_destroy_id(sd->cm_id);
		if (sd->cm_ch)
			rdma_destroy_event_channel(sd->cm_ch);
		sd->cm_id = NULL;
		sd->cm_ch = NULL;
	}
	group_index_free(&c->gidx);
	ctl_group_census_drop(c);
	joins_free(c);
	loop_fini();
}
