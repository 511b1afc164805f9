/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * High availability (docs/operations.md, "An HA pair"): the groups are split into
 * partitions, and for each partition this bridge is active (forwards) or standby (joined
 * on both sides, receiving, counting what it would have forwarded as `standby`). The
 * role is a bit of each group's ready word (GROUP_STANDBY, engine/bridge.h) that the
 * workers read on every packet of the slow path and once per burst on the flow fast
 * path: a switch needs no leave, no re-join. Without --partition every group is in the
 * implicit partition "default", active unless --role says otherwise.
 *
 * Everything here runs on the control thread.
 */
#ifndef CONTROL_HA_H
#define CONTROL_HA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl;
struct group;

#define HA_NAME_MAX 32
#define HA_DEFAULT  "default" /* the partition of groups no --partition names */

struct ha_part {
	char name[HA_NAME_MAX];
	bool standby;
	uint32_t ngroups;     /* groups of the bridge in the partition now */
	uint64_t since_ms;    /* CLOCK_MONOTONIC ms of the last role change (or the start) */
	int64_t since_wall;   /* the same as time(NULL) */
	uint64_t transitions; /* role changes since the start */
	char reason[96];      /* why the role is what it is */
};

struct ha;

/*
 * Register the options --partition, --role and --ha-peer-control (config keywords
 * partition, role, ha-peer-control). Returns the HA state (freed by ha_free) or NULL
 * with errno.
 */
struct ha *ha_opts_register(void);

/* Free the state; NULL is a no-op. */
void ha_free(struct ha *ha);

/*
 * After the options are parsed and the groups created, before the first join: put
 * every group of the bridge in its partition with its partition's role. Returns 0, or
 * -EINVAL with a message when --partition names a group that is not bridged.
 */
int ha_start(struct ha *ha, struct ctl *c, char *err, size_t errlen);

/* A group added at run time (console join, reload): its partition and role. */
void ha_group_assign(struct ha *ha, struct group *g);

/* The partitions, index 0 being "default". */
uint32_t ha_nparts(const struct ha *ha);
const struct ha_part *ha_part_get(const struct ha *ha, uint32_t i);

/* --ha-peer-control, NULL when not set. */
const char *ha_peer(const struct ha *ha);

/*
 * Set the role of partition `name` (NULL: every partition) and publish it to the
 * workers. `reason` is kept for `ha`. Returns 0 (a message on out), or -ENOENT / -EINVAL
 * with a message on out and nothing changed.
 */
int ha_role_set(struct ha *ha, struct ctl *c, const char *name, bool standby, const char *reason,
		FILE *out);

/*
 * Make-before-break: ask the peer (--ha-peer-control) to make partition `name` (NULL:
 * every partition active here) active, wait for its answer, then make it standby here.
 * Blocks the control thread for the peer's answer (at most HA_PEER_TIMEOUT_MS per
 * partition). Returns 0, or a negative errno with the bridge unchanged for the
 * partition that failed (message on out).
 */
int ha_handover(struct ha *ha, struct ctl *c, const char *name, const char *why, FILE *out);

/* The console's `ha`: partitions, roles, since when, transitions, reasons. */
void ha_show(struct ha *ha, struct ctl *c, FILE *out);

#define HA_PEER_TIMEOUT_MS 2000

#endif /* CONTROL_HA_H */
