/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Health: whether the bridge does its job right now, decided in one place. The console's
 * status and health commands, stats --json, the metrics file (ib2roce_healthy) and the
 * systemd STATUS= line all read health_check(), so they never disagree.
 *
 * Each condition has a level (health_cond_level[]), which says what its failing means:
 *
 * FAILED: the bridge does not do its job; traffic should move to the standby (the HA
 * notify reader and its --health-file, `bcom health` exit status 1, ib2roce_healthy 0):
 *   ready      startup is over (every group joined, or the join timeout passed)
 *   groups     every group forwards in every direction it has (ready bits set)
 *   workers    every worker's heartbeat advanced within health_stall_ms()
 *   sides      both ports are up and no channel is in the error state
 *   tx_stuck   no channel's send queue is stuck: full, with no send completion for
 *              BR_TX_STUCK_NS (engine/fwd.c, chan_tx_full); such a channel sends nothing,
 *              its groups lose that direction whole, and the standby's queue is its own
 *
 * DEGRADED: the bridge forwards but lost something or nearly did; a person should look,
 * a failover would not help (the standby sees the same microburst, the same disk) and
 * would cost a second failover on preemption (ib2roce_degraded 1, `bcom health` prints
 * the lines and exits 0). Each holds for HEALTH_DEGRADED_HOLD_MS after the event, so a
 * person paged for it still sees it:
 *   nic_drops    the NICs' receive drop counters rose (ctl.nic_drops_ms, sampled once
 *                a second from the timer by ctl_nic_sample)
 *   ctl_stall    the control thread stalled (ctl.stall_ms, ctl_heartbeat)
 *   log_dropped  log messages were dropped (ctl.log_dropped_ms, health_tick)
 *   placement    a worker runs on a non-isolated CPU while isolated CPUs exist, on a
 *                CPU that takes a NIC's IRQs, or inside a housekeeping affinity narrower
 *                than the cpuset (host/placement.h, nworker_warn): holds while the
 *                placement does
 */
#ifndef CONTROL_HEALTH_H
#define CONTROL_HEALTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl;

enum health_cond {
	HEALTH_READY,
	HEALTH_GROUPS,
	HEALTH_WORKERS,
	HEALTH_SIDES,
	HEALTH_NIC_DROPS,
	HEALTH_CTL_STALL,
	HEALTH_LOG_DROPPED,
	HEALTH_PLACEMENT,
	HEALTH_TX_STUCK,
	HEALTH_NCONDS
};

/* The conditions' names (JSON keys, the metrics' condition label). */
extern const char *const health_cond_name[HEALTH_NCONDS];

/* What a failing condition means (see above). */
enum health_level { HEALTH_LEVEL_OK, HEALTH_LEVEL_DEGRADED, HEALTH_LEVEL_FAILED };
extern const enum health_level health_cond_level[HEALTH_NCONDS];
/* "ok", "degraded", "failed" (the metrics' level label, JSON health_level). */
extern const char *const health_level_name[3];

/* How long a DEGRADED condition stays after its event. */
#define HEALTH_DEGRADED_HOLD_MS 60000

#define HEALTH_WHY_LEN 160

struct health {
	bool ok;				 /* no FAILED condition (level < FAILED) */
	bool degraded;				 /* a DEGRADED condition fails */
	enum health_level level;		 /* the worst level of a failing condition */
	unsigned failed;			 /* bit per failing health_cond, any level */
	uint32_t stalled;			 /* 1 + the first stalled worker, 0: none */
	uint32_t nstalled;			 /* workers whose heartbeat is stale */
	char why[HEALTH_NCONDS][HEALTH_WHY_LEN]; /* one line per failed condition, "" if ok */
};

/* How long a worker's heartbeat may stand still: health_stall_ms (control/state.h). */

/*
 * Evaluate every condition at now_ms (CLOCK_MONOTONIC ms) into h. Control thread (reads
 * the heartbeat bookkeeping of show_tick, join and side state). Cost: one pass over the
 * groups, workers and channels. Returns h->ok: false only when a FAILED condition fails.
 */
bool health_check(struct ctl *c, uint64_t now_ms, struct health *h);

/*
 * The health for people (the console's health and status): "health ok", or one
 * "health FAILED <why>" or "health DEGRADED <why>" line per failing condition (FAILED
 * ones first). Control thread. Returns h.ok: true also when only DEGRADED ones fail.
 */
bool health_print(struct ctl *c, FILE *out);

/*
 * Register the health timer (once a second, after the rates: the NICs' drop counters,
 * the conditions; a stalled worker and every change logged, health_on_change's hook
 * told of a change)
 * and the health command with the loop. Before the loop runs. 0 or -errno.
 */
int health_init(struct ctl *c);

/*
 * The failing conditions changed (the health timer): fn(c) right after, before
 * c->health_failed takes the new set (notify.c: systemd's STATUS=, which is above health
 * in ops/: docs/architecture.md, Layout). One hook; NULL takes it back. Before the loop.
 */
typedef void health_change_fn(struct ctl *c);
void health_on_change(health_change_fn *fn);

#endif /* CONTROL_HEALTH_H */
