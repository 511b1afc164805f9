/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Groups at run time (groups.c): ctl_group_add, ctl_group_insert and ctl_group_remove
 * (declared in ctl.h, used by the reload), and the console's join and leave.
 */
#ifndef CONTROL_GROUPS_H
#define CONTROL_GROUPS_H

struct ctl;

/* Register the join and leave commands. From app/start.c (app_control). 0 or -errno. */
int groups_init(struct ctl *c);

#endif /* CONTROL_GROUPS_H */
