// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The NIC's receive drops (nic.h). Only out_of_buffer: the kernel's other per-port
 * counters (counters/, the IB PMA set) have no "receive discarded for lack of a WQE"
 * and count link-level errors the bridge cannot cause or act on.
 *
 * The file is opened for every read: sysfs answers a read at offset 0 with the current
 * value either way, and a file replaced by rename(2) (the simulated fabric's sysfs)
 * would otherwise keep showing its old contents.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nic.h"

/* The raw counter, or -errno (a file without a decimal number is -EINVAL). */
static int nic_file_read(const char *path, uint64_t *v)
{
	char buf[32], *end;
	ssize_t n;
	int fd;

	if (!*path)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = 0;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	return 0;
}

void nic_ctr_init(struct nic_ctr *n, const char *ibdev_path, unsigned int port)
{
	memset(n, 0, sizeof(*n));
	if (ibdev_path && *ibdev_path &&
	    snprintf(n->path, sizeof(n->path), "%s/ports/%u/hw_counters/out_of_buffer", ibdev_path,
		     port) >= (int)sizeof(n->path))
		n->path[0] = 0;
	nic_ctr_read(n);
}

void nic_ctr_read(struct nic_ctr *n)
{
	uint64_t v = 0;

	if (nic_file_read(n->path, &v)) {
		n->avail = false;
		return;
	}
	if (n->seen)
		n->total += v >= n->prev ? v - n->prev : v;
	n->prev = v;
	n->seen = true;
	n->avail = true;
}

void nic_ctr_zap(struct nic_ctr *n)
{
	n->zap = n->total;
}

bool nic_ctr_get(const struct nic_ctr *n, bool zapped, uint64_t *v)
{
	if (!n->avail)
		return false;
	*v = n->total - (zapped ? n->zap : 0);
	return true;
}
