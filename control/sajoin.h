/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IB joins through the subnet administrator (sajoin.c), for groups whose IB Q_Key is not
 * rdma_cm's: an SA MCMemberRecord Set/Delete sent with libibumad, as perftest joins
 * (perftest multicast_resources.c). Control thread.
 */
#ifndef CONTROL_SAJOIN_H
#define CONTROL_SAJOIN_H

#include <stdbool.h>

struct ctl;
struct group;

/* Does g's IB join go through the SA (its IB Q_Key is not rdma_cm's RDMA_UDP_QKEY)? */
bool sajoin_wanted(const struct group *g);

/*
 * Send g's IB join (full member, or send-only full member for a group that does not
 * receive on IB) to the SA: the group's MGID, the port's GID and P_Key, its Q_Key, SL 0,
 * flow label 0, TClass from "#tos" (what creating a group needs). The answer is read
 * from the umad descriptor in the loop and completes the join (join_complete) or retries
 * it with back-off, logging the SA's status. Opens the IB port's umad agent on first
 * use. 0 (g->js[IB].sa_tid names the request) or -errno.
 */
int sajoin_issue(struct ctl *c, struct group *g);

/* Leave g's IB group at the SA (MCMemberRecord Delete; its answer is read and dropped). */
void sajoin_leave(struct ctl *c, struct group *g);

#endif /* CONTROL_SAJOIN_H */
