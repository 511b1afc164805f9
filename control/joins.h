/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The rdma_cm join state machine (joins.c), a part of the control thread: the joins of
 * every group on both sides, their answers and retries, port and device events, the
 * ready check. ctl_start_joins and ctl_leave_all (ctl.h) are its entry points for main;
 * these are for the rest of control/. Control thread.
 */
#ifndef CONTROL_JOINS_H
#define CONTROL_JOINS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl;
struct group;

/* Register each side's rdma_cm and async fds and the joins timer (retries, ready check)
 * with the loop. From ctl_init. 0 or -errno. */
int joins_init(struct ctl *c);

/* Ask to join group g on side s (the answer arrives as an rdma_cm event); on a refusal
 * the join is retried with back-off. */
void join_issue(struct ctl *c, struct group *g, int s);

struct ibv_ah_attr;

/*
 * A join of g on side s was answered (rdma_cm's MULTICAST_JOIN, or the SA's record for
 * an SA join, sajoin.c): create the AH from attr (hop limit, TClass and rate the bridge's
 * own), attach the side's channel unless send-only, publish, and update the ready bits.
 */
void join_complete(struct ctl *c, struct group *g, int s, const struct ibv_ah_attr *attr);

/* A join of g on side s failed with errno err: retried after a back-off. */
void join_retry_later(struct group *g, int s, int err);

/* Drop g's membership on side s: detach, retire the AH, and with leave, leave the group. */
void join_drop(struct ctl *c, struct group *g, int s, bool leave);

/* A group was removed from br->groups: the join answers' set of running groups is built
 * again when next needed. Control thread. */
void joins_known_drop(struct ctl *c);

/* Free what the joins keep of the groups (ctl_fini). */
void joins_free(struct ctl *c);

/* READY's deadline while not ready, and the joins waiting to retry, one line each. */
void joins_print(struct ctl *c, FILE *out);

/* MLD memberships of IPv6 RoCE groups the kernel refused (IPV6_JOIN_GROUP) since the start,
 * for stats --json and the metrics (`events` prints it with the last reason). */
uint64_t joins_mld_refused(void);

#endif /* CONTROL_JOINS_H */
