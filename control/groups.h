/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Groups at run time (groups.c): ctl_group_add, ctl_group_insert and ctl_group_remove
 * (declared in ctl.h, used by the reload), and the console's join and leave.
 */
#ifndef CONTROL_GROUPS_H
#define CONTROL_GROUPS_H

struct ctl;
struct bridge;
struct group;

/*
 * Refuse group g when a Q_Key of it is controlled (high bit set) and the kernel would
 * not let a QP of that side take it (side_qkey_probe: EPERM without CAP_NET_RAW or
 * `rdma system set privileged-qkey on`). At start, on reload (before anything changes)
 * and on the console's join. Control thread. 0 or -errno with a message naming the
 * group and the reason.
 */
int group_qkey_check(struct bridge *br, const struct group *g, char *err, size_t errlen);

/*
 * Give g's channels (g->out_chan, placed on channels of its Q_Keys or unused ones) g's
 * Q_Key on each side (channel_set_qkey), logging a change. Control thread. 0 or -errno
 * with a message.
 */
int group_qkeys_apply(struct bridge *br, struct group *g, char *err, size_t errlen);

/* Register the join and leave commands. From app/start.c (app_control). 0 or -errno. */
int groups_init(struct ctl *c);

#endif /* CONTROL_GROUPS_H */
