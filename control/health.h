/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Health: whether the bridge does its job right now, decided in one place. The console's
 * status and health commands, stats --json, the metrics file (ib2roce_healthy) and the
 * systemd STATUS= line all read health_check(), so they never disagree.
 *
 * The bridge is healthy when every condition holds:
 *   groups     every group forwards in every direction it has (ready bits set)
 *   workers    every worker's heartbeat advanced within health_stall_ms()
 *   sides      both ports are up and no channel is in the error state
 *   nic_drops  the NICs' receive drop counters did not rise in the last second
 *              (ctl.nic_drops_rising, sampled from the timer by ctl_nic_sample)
 * A bridge still waiting for its first joins (not ready) is not healthy either.
 *
 * Warnings are named conditions that do not make the bridge unhealthy:
 *   placement  a worker runs on a non-isolated CPU while isolated CPUs exist, on a CPU
 *              that takes a NIC's IRQs, or inside a housekeeping affinity narrower than
 *              the cpuset (control/placement.h, nworker_warn)
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
	HEALTH_NCONDS
};

/* The conditions' names (JSON keys, the metrics' condition label). */
extern const char *const health_cond_name[HEALTH_NCONDS];

enum health_warn { HEALTH_WARN_PLACEMENT, HEALTH_NWARNS };

/* The warnings' names (JSON keys of health_warnings, the metrics' condition label). */
extern const char *const health_warn_name[HEALTH_NWARNS];

#define HEALTH_WHY_LEN 160

struct health {
	bool ok;
	unsigned failed;			 /* bit per failed health_cond */
	uint32_t stalled;			 /* 1 + the first stalled worker, 0: none */
	uint32_t nstalled;			 /* workers whose heartbeat is stale */
	char why[HEALTH_NCONDS][HEALTH_WHY_LEN]; /* one line per failed condition, "" if ok */
	unsigned warned;			 /* bit per health_warn that holds */
	char warn[HEALTH_NWARNS][HEALTH_WHY_LEN]; /* one line per warning, "" if none */
};

/*
 * How long a worker's heartbeat may stand still before it counts as stalled: half the
 * systemd watchdog interval (at least 1 s) under a watchdog, HEALTH_STALL_MS otherwise.
 */
#define HEALTH_STALL_MS 5000
uint64_t health_stall_ms(const struct ctl *c);

/*
 * Evaluate every condition at now_ms (CLOCK_MONOTONIC ms) into h. Control thread (reads
 * the heartbeat bookkeeping of show_tick, join and side state). Cost: one pass over the
 * groups, workers and channels. Returns h->ok.
 */
bool health_check(struct ctl *c, uint64_t now_ms, struct health *h);

/*
 * The health for people (the console's health and status): "health ok", or one
 * "health FAILED <why>" line per failed condition; then one "health WARN <why>" line per
 * warning. Control thread. Returns the health (warnings do not change it).
 */
bool health_print(struct ctl *c, FILE *out);

#endif /* CONTROL_HEALTH_H */
