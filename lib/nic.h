/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Drops at the NIC: packets the port's hardware dropped before the bridge saw them,
 * because no receive was posted on the QP (the receive queue was empty). mlx5 counts
 * them per port in <ibdev_path>/ports/<port>/hw_counters/out_of_buffer; the bridge
 * shows them since its start (and since the last zap) as nic_rx_dropped, beside its own
 * counters. Control thread only; no logging.
 */
#ifndef LIB_NIC_H
#define LIB_NIC_H

#include <stdbool.h>
#include <stdint.h>

/* One port's out_of_buffer, accumulated from the raw hardware counter. */
struct nic_ctr {
	char path[384]; /* the counter file; empty: no ibdev_path */
	uint64_t prev;	/* raw value at the last successful read */
	uint64_t total; /* drops since the first successful read (the bridge's start) */
	uint64_t zap;	/* total at the last zap */
	bool seen;	/* a read succeeded once: prev is valid */
	bool avail;	/* the last read succeeded */
};

/*
 * nic_ctr_init - name the counter of port `port` of the device whose sysfs directory is
 * `ibdev_path` (ibv_device.ibdev_path) and read its baseline. Control thread.
 */
void nic_ctr_init(struct nic_ctr *n, const char *ibdev_path, unsigned int port);

/*
 * nic_ctr_read - read the counter now (open, read, close: a few microseconds). A
 * missing or unreadable file (a kernel or driver without hw_counters) makes the counter
 * unavailable until a read succeeds again; a raw value that went back (driver reload)
 * counts from zero again. Control thread.
 */
void nic_ctr_read(struct nic_ctr *n);

/* nic_ctr_zap - what the console shows starts again from 0 (console "zap"). */
void nic_ctr_zap(struct nic_ctr *n);

/*
 * nic_ctr_get - drops since the start, or since the last zap when `zapped`, into *v.
 * Returns false when the counter is unavailable (show "-", not 0).
 */
bool nic_ctr_get(const struct nic_ctr *n, bool zapped, uint64_t *v);

#endif /* LIB_NIC_H */
