// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * System group lookup, apart from the rest: <grp.h> declares a struct group, and so
 * does the engine (a multicast group).
 */
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdlib.h>

#include "sysgroup.h"

int sysgroup_lookup(const char *name, gid_t *gid)
{
	struct group *gr = getgrnam(name);
	char *end;
	unsigned long v;

	if (gr) {
		*gid = gr->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (*name < '0' || *name > '9' || *end || errno || v >= UINT32_MAX)
		return -ENOENT;
	*gid = (gid_t)v;
	return 0;
}
