/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The control thread (ctl.c). */
#ifndef CONTROL_CTL_H
#define CONTROL_CTL_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "bridge.h"
#include "clock.h" /* mono_ns, mono_ms: every timer and age of the control plane */
#include "nic.h"

struct console;
struct metrics_http;
struct placement;
struct capture;
struct chan_census;
struct sa_tid_slot;

/* Outcomes of a reload, the ib2roce_reloads_total{outcome} label. */
enum ctl_reload_outcome {
	CTL_RELOAD_OK,
	CTL_RELOAD_REFUSED,
	CTL_RELOAD_FAILED,
	CTL_RELOAD_NOUTCOMES
};
extern const char *const ctl_reload_outcome_name[CTL_RELOAD_NOUTCOMES];

struct ctl {
	struct bridge *br;
	const struct placement *place; /* where the threads run (host/placement.h) */
	int status;		 /* exit status after ctl_run: 0, or 1 once a side was stopped */
	uint64_t start_ms;	 /* CLOCK_MONOTONIC ms at ctl_init */
	int64_t start_wall;	 /* time(NULL) at ctl_init */
	bool ready;		 /* every group joined on both sides (or the join timeout passed) */
	bool all_joined;	 /* every group was joined on both sides once (check_ready) */
	uint32_t join_scan;	 /* check_ready: groups before it were seen joined */
	struct console *con;	 /* the console (control/console.c), NULL without one */
	struct capture *cap;	 /* packet capture (control/capture.c), NULL without */
	struct metrics_http *mh; /* GET /metrics (--metrics-port), NULL: off */
	struct ha *ha;		 /* partitions and roles (control/ha.c), NULL before ha_start */
	/* br->groups indexed for ctl_group_insert's duplicate check (control/groups.c):
	 * grown with each insert, dropped at each removal, built again when needed. */
	struct group_index gidx;
	/* What place_group counts of the running groups per channel and worker (groups.c),
	 * kept likewise; NULL: counted at the next insert. */
	struct chan_census *census;
	/* The running groups' addresses for the join answers (joins.c group_known): a set
	 * of known_mask + 1 slots holding known_n groups; NULL: built when needed. */
	const struct group **known;
	size_t known_mask;
	uint32_t known_n;
	/* The groups of the last SA joins by TID (joins.c sa_tid_note); NULL: none yet. */
	struct sa_tid_slot *sa_tids;
	size_t sa_tid_mask;
	/* systemd (sd_notify): active, watchdog interval (0: none), last ping. */
	bool sd;
	uint64_t wd_usec, last_wd_ms;
	uint32_t wd_stalled; /* 1 + the stalled worker already logged, 0: none */
	/*
	 * The control loop's own heartbeat (ctl_run, control thread only): when its current
	 * iteration began, and the stalls seen, a stall being a gap of more than
	 * CTL_STALL_MS between two iterations (nothing the loop serves ran meanwhile).
	 */
	uint64_t loop_ms;
	uint64_t stalls, stall_max_ms, stall_last_ms;
	uint64_t stall_ms;	/* when the last stall was seen (mono_ms), 0: never */
	unsigned health_failed; /* health conditions failed at the last check (health.h) */
	/*
	 * Health input (health.h): when the NICs' receive drop counters (nic_rx_dropped)
	 * were last seen rising (ctl_nic_sample, from the timer; 0: never, also while no
	 * side has the counter), and when the log's dropped count last rose (health_tick).
	 */
	uint64_t nic_drops_ms;
	uint64_t nic_drops_seen; /* both sides' totals at the last sample */
	uint64_t log_dropped_ms, log_dropped_seen;
	uint64_t join_timeout_ms; /* READY=1 at the latest this long after start */
	const char *metrics_path; /* --metrics-file, NULL: none */
	bool metrics_final;	  /* the last metrics file, at a clean exit: ib2roce_up 0 */
	uint64_t last_metrics_ms, last_rate_ms, last_pps_ms;
	const char *config_path; /* -c FILE (for SIGHUP), NULL: none */
	/* Re-read the configuration (main.c): 0 applied, -ECANCELED refused (nothing
	 * changed), another -errno failed (some changes not applied). Run by ctl_reload. */
	int (*reload)(struct ctl *c, FILE *out);
	uint64_t reloads[CTL_RELOAD_NOUTCOMES]; /* reloads by outcome (ctl_reload) */
	/* The monotonic PGM gap counters last reported (report.c: never lower). */
	uint64_t pgm_gaps_reported, pgm_missed_reported;
	int (*config)(struct ctl *c, FILE *out); /* the settings a reload cannot change */
	/* Defaults of groups joined at run time (the last -l, -p, -t, --qkey of the command
	 * line). */
	int def_fmt, def_tos;
	uint16_t def_port;
	uint32_t def_qkey;
	/* The argument of each side's rdma_cm, async and completion fds (loop_watch). */
	struct ctl_side {
		struct ctl *c;
		int side;
	} side_ref[NSIDES];
	/*
	 * Every group joined on both sides (missing 0, late: after the join timeout), or the
	 * join timeout passed with missing groups (the first few in names): the ready
	 * notification (ops/notify.c sets it; NULL: none). Control thread.
	 */
	void (*on_ready)(struct ctl *c, uint32_t missing, const char *names, bool late);
	uint64_t last_stats_ms, last_age_ms;
	bool untracked_logged; /* the sender table full warning was logged */
	uint64_t last_rx[NSIDES];
	/* Receive drops of each side's port at the NIC (read at every statint and report). */
	struct nic_ctr nic[NSIDES];
	/* Runtime features owned by the control thread. */
	_Atomic int64_t statint;
	_Atomic int64_t metrics_groups; /* per-group series in the metrics (ops/report.c) */
	_Atomic int64_t hwrate;
	_Atomic int64_t sender_idle_s;
	_Atomic int64_t pgm_idle_s;
	_Atomic int64_t con_idle_s; /* console_idle: a client without a command is closed */
	_Atomic int64_t ppsdisplay;
	_Atomic int64_t ctlstall; /* fault injection: the loop stops once for N ms (0 = off) */
};

/* A gap between two iterations of the control loop (normally at most one tick) that
 * counts as a stall of the control thread. */
#define CTL_STALL_MS 1000

static inline void fcntl_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Read each side's NIC drop counter now (control thread). */
static inline void ctl_nic_read(struct ctl *c)
{
	for (int s = 0; s < NSIDES; s++)
		nic_ctr_read(&c->nic[s]);
}

/* Sample the NIC drop counters once a second: are they rising? (control thread) */
static inline void ctl_nic_sample(struct ctl *c)
{
	uint64_t sum = 0, v;

	ctl_nic_read(c);
	for (int s = 0; s < NSIDES; s++)
		if (nic_ctr_get(&c->nic[s], false, &v))
			sum += v;
	if (sum > c->nic_drops_seen)
		c->nic_drops_ms = mono_ms();
	c->nic_drops_seen = sum;
}

/* Set up the loop (loop_init), the rdma_cm ids (bound, not joined) and register their
 * descriptors and the control thread's timers with the loop. 0 or -errno. */
int ctl_init(struct ctl *c, struct bridge *br, char *err, size_t errlen);

/*
 * Wait until every worker has emptied its completion queues once after the call (with
 * --workers 0: poll every channel empty here), so that what the receive queues held is
 * handled under the flags published before (HA: forwarded before a partition goes
 * standby). Control thread; blocks about CTL_DRAIN_MS at most. Returns false when a
 * worker did not get through its queues in time.
 */
bool ctl_data_drain(struct ctl *c);
#define CTL_DRAIN_MS 500

/* Issue the joins of every group on both sides (answers arrive in ctl_run). */
void ctl_start_joins(struct ctl *c);

/* Run the loop until SIGINT/SIGTERM, shutdown or a fatal device event. 0 or -errno. */
int ctl_run(struct ctl *c);

/*
 * Re-read the configuration (c->reload) with its report to out, and count the outcome
 * in c->reloads. Control thread. Returns c->reload's value; -ENOSYS without reload.
 */
int ctl_reload(struct ctl *c, FILE *out);

/* Leave every group on both sides (shutdown, workers stopped). */
void ctl_leave_all(struct ctl *c);

void ctl_fini(struct ctl *c);

/*
 * Bridge one more group at run time ("join" command, reload): parse spec with the
 * defaults, pick channels with room (the same pair when possible), publish it and start
 * its joins. Forwarding of other groups goes on. 0 or -errno with a message.
 */
int ctl_group_add(struct ctl *c, const char *spec, enum group_dir dir, char *err, size_t errlen);

/* The same for a group already parsed (aligned_alloc'd, zeroed, spec/addr/dir set):
 * takes ownership, freed on failure. */
int ctl_group_insert(struct ctl *c, struct group *g, char *err, size_t errlen);

/*
 * Stop bridging a group (by spec or address): leave both sides, unpublish, free it after
 * the workers let go. 0 or -ENOENT with a message.
 */
int ctl_group_remove(struct ctl *c, const char *name, char *err, size_t errlen);

/* A running group's weight changed (reload): place_group counts the workers' again. */
void ctl_group_census_drop(struct ctl *c);

/* The directions' names: both, in, out. */
extern const char *const group_dir_name[3];

#endif /* CONTROL_CTL_H */
