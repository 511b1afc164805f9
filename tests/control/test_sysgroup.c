// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_sysgroup - lib/sysgroup.c: the console's supplementary group check reads
 * the "Groups:" line of /proc/PID/status. A line longer than 4096 bytes, with a gid cut
 * at byte 4095, must not be read as a shorter gid (the first 4095 bytes of 1000001 at
 * the cut are "100"), and gids past the cut must be found.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sysgroup.h"
#include "tap.h"

/* Where a fixed 4096-byte buffer (fgets) would cut the line. */
#define CUT 4095

static char dir[256], path[300];

/* Write a status file whose Groups: line is groups (a string). */
static void write_status(const char *groups)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	fprintf(f, "Name:\tbcom\nUmask:\t0022\nGroups:\t%s\nNgid:\t0\n", groups);
	fclose(f);
}

static void test_long_line(void)
{
	char *line = malloc(2 * CUT);
	size_t len = strlen("Groups:\t");
	size_t n = 0;

	if (!CHECK(line))
		return;
	/* Filler gids 7 ("7 ") until 1000001 starts three bytes before the cut. */
	if ((CUT - 3 - len) % 2)
		n += (size_t)sprintf(line + n, "77 ");
	while (len + n < CUT - 3)
		n += (size_t)sprintf(line + n, "7 ");
	CHECK_EQ(len + n, CUT - 3);
	n += (size_t)sprintf(line + n, "1000001 4242 555");
	write_status(line);

	CHECK_EQ(sysgroup_status_has(path, 100), 0);	 /* the cut "100" of 1000001 */
	CHECK_EQ(sysgroup_status_has(path, 1), 0);	 /* the cut "0001" */
	CHECK_EQ(sysgroup_status_has(path, 1000001), 1); /* across the cut */
	CHECK_EQ(sysgroup_status_has(path, 4242), 1);	 /* after it */
	CHECK_EQ(sysgroup_status_has(path, 555), 1);	 /* the last one */
	CHECK_EQ(sysgroup_status_has(path, 7), 1);
	CHECK_EQ(sysgroup_status_has(path, 77), (CUT - 3 - len) % 2 ? 1 : 0);
	free(line);
}

static void test_short_lines(void)
{
	write_status("4 24 27 1000");
	CHECK_EQ(sysgroup_status_has(path, 24), 1);
	CHECK_EQ(sysgroup_status_has(path, 1000), 1);
	CHECK_EQ(sysgroup_status_has(path, 2), 0);
	CHECK_EQ(sysgroup_status_has(path, 100), 0);
	write_status(""); /* no supplementary groups */
	CHECK_EQ(sysgroup_status_has(path, 0), 0);
	CHECK_EQ(sysgroup_status_has("/nonexistent/status", 0), -ENOENT);
	/* Our own process: our primary group is in our supplementary list or not, but the
	 * file is read. */
	CHECK(sysgroup_status_has("/proc/self/status", 4294967294u) == 0);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/test_sysgroup.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp %s: %s\n", dir, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/status", dir);
	test_long_line();
	test_short_lines();
	unlink(path);
	rmdir(dir);
	return tap_done();
}
