/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fixture.c - see fixture.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fixture.h"
#include "options.h"

struct fixture fx;

static void log_call(const char *name, const char *arg)
{
	size_t used = strlen(fx.log);

	snprintf(fx.log + used, sizeof(fx.log) - used, "%s%s%s%s", used ? " " : "", name,
		 arg ? "=" : "", arg ? arg : "");
}

/* Handlers whose ctx is the option's long name: log and accept. */
static int h_log(void *ctx, const char *arg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	log_call(ctx, arg);
	return 0;
}

/* A group: "a.b.c.d" with optional ":port", "/fmt", "#tos"; only the address is checked. */
static int h_group(void *ctx, const char *arg, char *err, size_t errlen)
{
	unsigned a, b, c, d;
	char rest;

	int n = sscanf(arg, "%u.%u.%u.%u%c", &a, &b, &c, &d, &rest);

	if (n < 4 || (n == 5 && !strchr(":/#", rest)) || a < 224 || a > 239 || b > 255 || c > 255 ||
	    d > 255)
		return opt_errf(err, errlen, -EINVAL, "'%s' is not an IPv4 multicast address", arg);
	fx.groups++;
	log_call(ctx ? ctx : "group", arg);
	return 0;
}

static int h_port(void *ctx, const char *arg, char *err, size_t errlen)
{
	uint64_t v;
	int ret = opt_parse_uint(arg, 1, 65535, &v, err, errlen);

	if (ret)
		return ret;
	fx.port = v;
	log_call(ctx, arg);
	return 0;
}

static int h_workers(void *ctx, const char *arg, char *err, size_t errlen)
{
	uint64_t v;
	int ret = opt_parse_uint(arg, 0, 1024, &v, err, errlen);

	if (!ret)
		log_call(ctx, arg);
	return ret;
}

/* -l [fmt]: no format lists them and stops, as the reference's -l did. */
static int h_mgid(void *ctx, const char *arg, char *err, size_t errlen)
{
	static const char *const fmts[] = {"RDMA", "IPv4", "IPv6", "PORT", "IB"};

	if (!arg) {
		for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
			fprintf(fx.out, "%s\n", fmts[i]);
		opt_request_exit();
		return 0;
	}
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		if (!strcasecmp(arg, fmts[i])) {
			log_call(ctx, fmts[i]);
			return 0;
		}
	return opt_errf(err, errlen, -EINVAL, "unknown MGID format '%s'", arg);
}

static int apply_mcqp(void *ctx, int64_t value, char *err, size_t errlen)
{
	(void)ctx;
	fx.applied_mcqp++;
	if (value > 32)
		return opt_errf(err, errlen, -EINVAL,
				"the device attaches at most 32 groups per QP");
	return 0;
}

static void must(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "fixture: registering %s: %s\n", what, strerror(-ret));
		exit(99);
	}
}

void fixture_setup(void)
{
	const struct opt_def opts[] = {
		{"device", 'd', "dev[:port]", false, "InfiniBand device", h_log, "device", false},
		{"roce", 'r', "dev[:port]", false, "RoCE device", h_log, "roce", false},
		{"multicast", 'm', "addr[:port][/fmt][#tos]", false, "group bridged both ways",
		 h_group, "multicast", true},
		{"inbound", 'i', "addr", false, "group bridged IB to RoCE only", h_group, "inbound",
		 true},
		{"outbound", 'o', "addr", false, "group bridged RoCE to IB only", h_group,
		 "outbound", true},
		{"mgid", 'l', "fmt", true, "MGID format of the following groups; no fmt: list",
		 h_mgid, "mgid", false},
		{"port", 'p', "n", false, "default UDP port", h_port, "port", false},
		{"tos", 't', "n", false, "traffic class of the following groups", h_log, "tos",
		 false},
		{"cores", 'k', "n", false, "busy-polling workers", h_workers, "cores", false},
		{"systemd", 's', NULL, false, "run under systemd", h_log, "systemd", false},
		{"debug", 'x', NULL, false, "stay in the foreground, console on the terminal",
		 h_log, "debug", false},
		{"verbose", 'v', NULL, false, "more logging (twice: dump packets)", h_log,
		 "verbose", true},
		{"test", 'q', NULL, false, "self test", h_log, "test", false},
		{"cpus", 0, "LIST", false, "CPUs for the workers", h_log, "cpus", false},
		{"workers", 0, "N", false, "busy-polling workers (0: event-driven)", h_workers,
		 "workers", false},
	};
	const struct feat_def feats[] = {
		{.name = "bridging",
		 .type = FEAT_BOOL,
		 .help = "forward packets",
		 .def = 1,
		 .value = &fx.bridging,
		 .runtime = true},
		{.name = "drop",
		 .type = FEAT_INT,
		 .help = "drop every Nth packet (fault injection)",
		 .min = 0,
		 .max = 1000000,
		 .has_on = true,
		 .on = 100,
		 .has_off = true,
		 .value = &fx.drop,
		 .runtime = true},
		{.name = "loglevel",
		 .type = FEAT_INT,
		 .help = "log priority threshold",
		 .def = 6,
		 .min = 0,
		 .max = 7,
		 .has_on = true,
		 .on = 5,
		 .has_off = true,
		 .off = 3,
		 .value = &fx.loglevel,
		 .runtime = true},
		{.name = "buffers",
		 .type = FEAT_INT,
		 .help = "buffers in the pool",
		 .def = 200000,
		 .min = 1024,
		 .max = 100000000,
		 .value = &fx.buffers},
		{.name = "huge",
		 .type = FEAT_BOOL,
		 .help = "huge pages for the buffers",
		 .value = &fx.huge},
		{.name = "mcqp",
		 .type = FEAT_INT,
		 .help = "groups per QP",
		 .def = 16,
		 .min = 1,
		 .max = 64,
		 .value = &fx.mcqp,
		 .apply = apply_mcqp},
		{.name = "pgm",
		 .type = FEAT_BOOL,
		 .help = "PGM awareness",
		 .def = 1,
		 .value = &fx.pgm,
		 .runtime = true},
		{.name = "pgm_nak",
		 .type = FEAT_BOOL,
		 .help = "bridge PGM NAKs",
		 .value = &fx.pgm_nak,
		 .runtime = true},
		{.name = "ppsdisplay",
		 .type = FEAT_BOOL,
		 .help = "show packet rates",
		 .value = &fx.ppsdisplay,
		 .runtime = true},
		{.name = "statint",
		 .type = FEAT_INT,
		 .help = "statistics interval (s)",
		 .def = 10,
		 .min = 0,
		 .max = 3600,
		 .has_off = true,
		 .value = &fx.statint,
		 .runtime = true},
	};

	fixture_teardown();
	fx.out = open_memstream(&fx.out_buf, &fx.out_len);
	if (!fx.out)
		exit(99);
	must(opt_register_builtin(fx.out, "ib2roce"), "built-ins");
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		must(opt_register(&opts[i]), opts[i].name);
	must(opt_set_positional("GROUP", "groups bridged both ways (as --multicast)", h_group,
				NULL),
	     "positional");
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++)
		must(feat_register(&feats[i]), feats[i].name);
}

const char *fixture_output(void)
{
	fflush(fx.out);
	return fx.out_buf;
}

void fixture_teardown(void)
{
	opt_registry_clear();
	feat_registry_clear();
	if (fx.out)
		fclose(fx.out);
	free(fx.out_buf);
	memset(&fx, 0, sizeof(fx));
}
