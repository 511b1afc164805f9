// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* groupopts.c - option handlers shared by ib2roce and the tools (groupopts.h). */
#include <errno.h>
#include <string.h>

#include "groupopts.h"
#include "options.h"

void groupopts_defaults_init(struct groupopts_defaults *d, uint16_t port)
{
	d->fmt = MGID_RDMA;
	d->port = port;
	d->tos = -1;
	d->qkey = BR_UDP_QKEY;
	d->list_fmts = false;
}

int groupopts_dev_parse(const char *arg, char *dev, size_t devlen, uint8_t *port, char *err,
			size_t len)
{
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);

	if (!n || n >= devlen)
		return opt_errf(err, len, -EINVAL, "'%s': expected device[:port]", arg);
	memcpy(dev, arg, n);
	dev[n] = 0;
	*port = 0;
	if (colon) {
		uint64_t p;
		int r = opt_parse_uint(colon + 1, 1, 255, &p, err, len);

		if (r)
			return r;
		*port = (uint8_t)p;
	}
	return 0;
}

int groupopts_mgid_set(void *ctx, const char *arg, char *err, size_t len)
{
	struct groupopts_defaults *d = ctx;
	int f;

	if (!arg) {
		/* The list is for a command line (--mgid alone); a config line without a
		 * format is an error, as a bare enable is: listing and exiting 0 would stop
		 * a bridge at start-up with nothing in its log but the list. */
		if (opt_in_file())
			return opt_errf(err, len, -EINVAL,
					"a format is required here (RDMA, IPv4, IPv6, PORT, IB)");
		d->list_fmts = true;
		opt_request_exit();
		return 0;
	}
	f = mgid_fmt_parse(arg);
	if (f < 0)
		return opt_errf(err, len, -EINVAL,
				"unknown MGID format '%s' (RDMA, IPv4, IPv6, PORT, IB)", arg);
	d->fmt = (enum mgid_fmt)f;
	return 0;
}

int groupopts_port_set(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 1, 65535, &v, err, len);

	if (!r)
		((struct groupopts_defaults *)ctx)->port = (uint16_t)v;
	return r;
}

int groupopts_tos_set(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 0, 255, &v, err, len);

	if (!r)
		((struct groupopts_defaults *)ctx)->tos = (int)v;
	return r;
}

int groupopts_qkey_set(void *ctx, const char *arg, char *err, size_t len)
{
	uint32_t q;

	if (group_qkey_parse(arg, &q))
		return opt_errf(err, len, -EINVAL, "'%s' is not a 32-bit Q_Key (decimal or 0x hex)",
				arg);
	((struct groupopts_defaults *)ctx)->qkey = q;
	return 0;
}
