// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * simfab exec: run a program where the character devices of the kernel's RDMA stack
 * exist for the simulated devices (/dev/infiniband/umad<N>, issm<N>, uverbs<N>), and,
 * given a namespace made by `simfab netns`, inside its network namespace with its sysfs
 * on /sys (as `ip netns exec`). The host's /dev is not changed.
 *
 * Some programs look at those nodes before they use a device: UCX
 * (uct_ib_device_is_accessible, src/uct/ib/base/ib_md.c) skips every device whose
 * "/dev/infiniband/" + ibv_device.dev_name is not a character device it may read and
 * write; perftest and infiniband-diags look for umad<N>. The nodes have the kernel's
 * numbers (drivers/infiniband/core: user_mad.c IB_UMAD_MAJOR 231, umad<N> at minor N,
 * issm<N> at 64 + N; uverbs_main.c IB_UVERBS_MAJOR 231, uverbs<N> at 192 + N) for
 * device index N of the fabric. Nothing drives them on a host without RDMA drivers (an
 * open fails with ENXIO) and simfabric's libraries never open them: they are there for
 * the programs that check them.
 *
 * They exist only in a new mount namespace (its mounts do not propagate to the host):
 * there /dev becomes an overlay (the host's /dev as the lower layer, a private tmpfs as
 * the upper one), the mounts below /dev (shm, pts, mqueue, ...) are bound again on top
 * of it, so the fabric's shared memory and the terminals are the host's, and
 * /dev/infiniband with the nodes is made in the upper layer. Nodes that exist already
 * (a host with real RDMA devices) are kept. The scratch directory is detached and
 * removed before the program runs. Needs root (CAP_SYS_ADMIN) and overlayfs.
 */
#include <errno.h>
#include <fcntl.h>
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

/* The kernel's RDMA character devices (see above). */
#define DEVNS_IB_MAJOR	  231
#define DEVNS_ISSM_MINOR  64
#define DEVNS_VERBS_MINOR 192

/* The nodes of device index d in /dev/infiniband, unless they exist already. */
static int devns_nodes(uint32_t d, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		unsigned int base;
		mode_t mode;
	} nodes[] = {
		{"umad", 0, 0600},
		{"issm", DEVNS_ISSM_MINOR, 0600},
		{"uverbs", DEVNS_VERBS_MINOR, 0666},
	};
	struct stat st;

	for (size_t k = 0; k < sizeof(nodes) / sizeof(nodes[0]); k++) {
		char node[64];

		snprintf(node, sizeof(node), "/dev/infiniband/%s%u", nodes[k].name, d);
		if (!lstat(node, &st))
			continue;
		errno = 0;
		if (mknod(node, S_IFCHR | nodes[k].mode,
			  makedev(DEVNS_IB_MAJOR, nodes[k].base + d)) ||
		    chmod(node, nodes[k].mode)) /* the umask does not apply */
			return devns_fail(err, errlen, "mknod %s", node);
	}
	return 0;
}

/* Enter network namespace ns (/run/netns/ns, made by simfab netns or ip netns add). */
static int devns_enter_net(const char *ns, char *err, size_t errlen)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	errno = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return devns_fail(err, errlen, "%s", path);
	if (setns(fd, CLONE_NEWNET)) {
		close(fd);
		return devns_fail(err, errlen, "setns %s", path);
	}
	close(fd);
	return 0;
}

int sf_devns_exec(const struct sf_fabric *fab, const char *ns, char **argv, char *err,
		  size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char base[4096], old[4200], opts[13000];
	int r = -1;

	if (ns && devns_enter_net(ns, err, errlen))
		return -1;
	errno = 0;
	if (unshare(CLONE_NEWNS))
		return devns_fail(err, errlen, "new mount namespace (needs root)");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return devns_fail(err, errlen, "make mounts slaves");
	/* As ip netns exec: a sysfs of the namespace, so /sys/class/net lists its netdevs. */
	if (ns && umount2("/sys", MNT_DETACH) == 0 && mount(ns, "/sys", "sysfs", 0, NULL))
		return devns_fail(err, errlen, "mount sysfs");
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
	for (uint32_t d = 0; d < fab->ndevs; d++)
		if (!fab->devs[d].removed && devns_nodes(d, err, errlen))
			goto out;
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
