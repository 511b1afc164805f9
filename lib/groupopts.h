/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * groupopts.h - the option handlers that ib2roce, mcsender and mclisten share for the
 * port and the groups: -d/-r dev[:port], and -l/-p/-t, the defaults of the groups that
 * follow on the command line (or in a config file). Handlers of the option registry
 * (options.h: opt_handler_fn); they run on the thread that parses (main, or the control
 * thread for a reload).
 */
#ifndef LIB_GROUPOPTS_H
#define LIB_GROUPOPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bridge.h" /* enum mgid_fmt */

/* What -l, -p, -t and --qkey set: how the groups that follow are parsed
 * (group_spec_parse). */
struct groupopts_defaults {
	enum mgid_fmt fmt; /* -l: MGID format */
	uint16_t port;	   /* -p: UDP port */
	int tos;	   /* -t: traffic class, -1 = the join's */
	uint32_t qkey;	   /* --qkey: Q_Key of both sides (BR_UDP_QKEY, rdma_cm's) */
	bool list_fmts;	   /* -l without a format: list them (the parse then asks to exit) */
};

/* groupopts_defaults_init - RDMA format, port, no traffic class, rdma_cm's Q_Key, no
 * listing. */
void groupopts_defaults_init(struct groupopts_defaults *d, uint16_t port);

/*
 * groupopts_dev_parse - "dev[:port]" into dev (devlen bytes) and *port (0: none given).
 * 0, or -EINVAL with a message in err.
 */
int groupopts_dev_parse(const char *arg, char *dev, size_t devlen, uint8_t *port, char *err,
			size_t len);

/*
 * Handlers for -l (optional argument: NULL lists the formats and requests exit), -p and
 * -t; ctx is a struct groupopts_defaults. 0, or -EINVAL with a message in err.
 */
int groupopts_mgid_set(void *ctx, const char *arg, char *err, size_t len);
int groupopts_port_set(void *ctx, const char *arg, char *err, size_t len);
int groupopts_tos_set(void *ctx, const char *arg, char *err, size_t len);
/* --qkey Q: the Q_Key of the groups that follow (both sides), decimal or 0x hex. */
int groupopts_qkey_set(void *ctx, const char *arg, char *err, size_t len);

#endif /* LIB_GROUPOPTS_H */
