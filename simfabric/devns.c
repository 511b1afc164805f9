// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * simfab devns: run a program with /dev/infiniband/uverbs<N> present for the simulated
 * devices, without changing the host's /dev.
 *
 * Some programs look at the uverbs character device of an RDMA device before using it:
 * UCX (uct_ib_device_is_accessible, src/uct/ib/base/ib_md.c) skips every device whose
 * "/dev/infiniband/" + ibv_device.dev_name is not a character device it may read and
 * write. Nothing opens the node on the simulation (ibv_open_device does not), so a node
 * with /dev/null's numbers (1:3, mode 0666) satisfies the check and can do no harm.
 *
 * Nodes are made for every possible device number (0 to SF_MAX_DEVS - 1), whatever the
 * fabric holds, so the fabric need not be attached (simfab execs the program, which
 * attaches it itself). The nodes exist only in a new mount namespace: there /dev becomes an overlay
 * (the host's /dev as the lower layer, a private tmpfs as the upper one), the mounts below /dev
 * (shm, pts, mqueue, ...) are bound again on top of it, so the fabric's shared memory and the
 * terminals are the host's, and /dev/infiniband with the nodes is made in the upper layer. Nodes
 * that exist already (a host with real RDMA devices) are kept. The scratch directory is detached
 * and removed before the program runs.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "devns.h"

static __attribute__((format(printf, 3, 4))) int devns_fail(char *err, size_t len, const char *fmt,
							    ...)
{
	va_list ap;
	int e = errno;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	if (e) {
		size_t n = strlen(err);

		snprintf(err + n, len - n, ": %s", strerror(e));
	}
	return -1;
}

/* Unescape a mountinfo path field (\040 for a blank and the like) in place. */
static void devns_unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = 0;
}

/* Bind every mount directly below old (old/X) onto /dev/X again, with its submounts. */
static int devns_rebind(const char *old, char *err, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	size_t ol = strlen(old);
	char line[4096];

	if (!f)
		return devns_fail(err, len, "/proc/self/mountinfo");
	while (fgets(line, sizeof(line), f)) {
		char mp[4096], dst[4200];
		const char *rest;

		/* id parent major:minor root mount-point ... */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		devns_unescape(mp);
		if (strncmp(mp, old, ol) || mp[ol] != '/')
			continue;
		rest = mp + ol + 1;
		if (!*rest || strchr(rest, '/'))
			continue; /* only direct children; rbind brings what is below */
		snprintf(dst, sizeof(dst), "/dev/%s", rest);
		errno = 0;
		if (mount(mp, dst, NULL, MS_BIND | MS_REC, NULL)) {
			fclose(f);
			return devns_fail(err, len, "bind %s on %s", rest, dst);
		}
	}
	fclose(f);
	return 0;
}

int sf_devns_exec(char **argv, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char base[4096], old[4200], opts[13000];
	struct stat st;
	int r = -1;

	errno = 0;
	if (unshare(CLONE_NEWNS))
		return devns_fail(err, errlen, "new mount namespace (needs root)");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return devns_fail(err, errlen, "make mounts private");
	snprintf(base, sizeof(base), "%s/simfab-devns.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base))
		return devns_fail(err, errlen, "mkdtemp %s", base);
	if (mount("simfab-devns", base, "tmpfs", 0, "mode=0700")) {
		devns_fail(err, errlen, "tmpfs on %s", base);
		rmdir(base);
		return -1;
	}
	snprintf(old, sizeof(old), "%s/old", base);
	snprintf(opts, sizeof(opts), "lowerdir=/dev,upperdir=%s/upper,workdir=%s/work", base, base);
	for (const char *d = "old\0upper\0work\0"; *d; d += strlen(d) + 1) {
		char p[4200];

		snprintf(p, sizeof(p), "%s/%s", base, d);
		if (mkdir(p, 0755)) {
			devns_fail(err, errlen, "mkdir %s", p);
			goto out;
		}
	}
	if (mount("/dev", old, NULL, MS_BIND | MS_REC, NULL)) {
		devns_fail(err, errlen, "bind /dev on %s", old);
		goto out;
	}
	if (mount("simfab-dev", "/dev", "overlay", 0, opts)) {
		devns_fail(err, errlen, "overlay on /dev");
		goto out;
	}
	if (devns_rebind(old, err, errlen))
		goto out;
	if (mkdir("/dev/infiniband", 0755) && errno != EEXIST) {
		devns_fail(err, errlen, "mkdir /dev/infiniband");
		goto out;
	}
	errno = 0;
	for (unsigned int i = 0; i < SF_MAX_DEVS; i++) {
		char node[64];

		snprintf(node, sizeof(node), "/dev/infiniband/uverbs%u", i);
		if (!lstat(node, &st))
			continue;
		if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) || chmod(node, 0666)) {
			devns_fail(err, errlen, "mknod %s", node);
			goto out;
		}
	}
	r = 0;
out:
	umount2(old, MNT_DETACH);
	umount2(base, MNT_DETACH);
	rmdir(base);
	if (r)
		return r;
	errno = 0;
	execvp(argv[0], argv);
	return devns_fail(err, errlen, "%s", argv[0]);
}
