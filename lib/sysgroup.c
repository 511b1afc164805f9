// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * System group lookup, apart from the rest: <grp.h> declares a struct group, and so
 * does the engine (a multicast group).
 */
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The line is read whole (getline): a kernel "Groups:" line of a process with many
 * supplementary groups is longer than any fixed buffer worth keeping on the stack, and a
 * gid cut at a buffer's end would read as another, smaller gid.
 */
int sysgroup_status_has(const char *path, gid_t gid)
{
	static const char key[] = "Groups:";
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	errno = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		const char *p = line + sizeof(key) - 1;

		if (strncmp(line, key, sizeof(key) - 1)) {
			errno = 0;
			continue;
		}
		for (;;) {
			char *end;
			unsigned long v;

			p += strspn(p, " \t");
			if (*p < '0' || *p > '9')
				break;
			errno = 0;
			v = strtoul(p, &end, 10);
			if (errno || v >= UINT32_MAX)
				break;
			if ((gid_t)v == gid) {
				ret = 1;
				break;
			}
			p = end;
		}
		goto out;
	}
	/* No Groups: line: the end of the file, or a read error. */
	ret = ferror(f) ? -(errno ? errno : EIO) : 0;
out:
	free(line);
	fclose(f);
	return ret;
}
