/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef LIB_SYSGROUP_H
#define LIB_SYSGROUP_H

#include <sys/types.h>

/* The gid of a group name, or of a number. 0 or -ENOENT. */
int sysgroup_lookup(const char *name, gid_t *gid);

/*
 * Does the "Groups:" line of a file in the format of /proc/PID/status list gid? Reads
 * the whole line, however long (a process may have up to NGROUPS_MAX supplementary
 * groups). Any thread; blocking file I/O. 1 = listed, 0 = not listed or no such line,
 * -errno when the file cannot be opened or read.
 */
int sysgroup_status_has(const char *path, gid_t gid);

#endif /* LIB_SYSGROUP_H */
