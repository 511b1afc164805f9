/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef CONTROL_SYSGROUP_H
#define CONTROL_SYSGROUP_H

#include <sys/types.h>

/* The gid of a group name, or of a number. 0 or -ENOENT. */
int sysgroup_lookup(const char *name, gid_t *gid);

#endif /* CONTROL_SYSGROUP_H */
