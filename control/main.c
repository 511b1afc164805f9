// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ib2roce: the multicast bridge between an InfiniBand port and a RoCEv2 port.
 *
 * main() registers the options and runtime features, parses the command line (and
 * config files), opens both ports, builds the engine, starts the workers and runs the
 * control thread until a signal; then it stops the workers, leaves every group and
 * prints the final counters. Exit status: 0 after a clean shutdown, 1 when the bridge
 * could not start or failed, 2 for invalid options or configuration.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "bridge.h"
#include "ctl.h"
#include "fwd.h"
#include "log.h"
#include "options.h"
#include "pgm.h"
#include "setup.h"

#define DEFAULT_PORT 4711

struct opts {
	struct bridge *br;
	struct ctl *ctl;
	enum mgid_fmt fmt; /* -l: format of the groups that follow */
	uint16_t port;	   /* -p: default port of the groups that follow */
	int tos;	   /* -t: traffic class of the groups that follow, -1 = join's */
	int verbose;
	bool list_fmts;
};

static int add_group(struct opts *o, const char *spec, enum group_dir dir, char *err, size_t len)
{
	struct bridge *br = o->br;
	struct group *g;
	int r;

	g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return opt_errf(err, len, -ENOMEM, "out of memory");
	memset(g, 0, sizeof(*g));
	r = group_spec_parse(g, spec, o->fmt, o->port, o->tos, err, len);
	if (r) {
		free(g);
		return r;
	}
	g->dir = dir;
	for (uint32_t i = 0; i < br->ngroups; i++) {
		if (br->groups[i]->addr == g->addr) {
			opt_errf(err, len, -EINVAL, "group '%s': address already bridged by '%s'",
				 spec, br->groups[i]->spec);
			free(g);
			return -EINVAL;
		}
	}
	if (br->ngroups == br->groups_cap) {
		uint32_t cap = br->groups_cap ? 2 * br->groups_cap : 64;
		struct group **n = realloc(br->groups, cap * sizeof(*n));

		if (!n) {
			free(g);
			return opt_errf(err, len, -ENOMEM, "out of memory");
		}
		br->groups = n;
		br->groups_cap = cap;
	}
	br->groups[br->ngroups++] = g;
	return 0;
}

static int opt_multicast(void *ctx, const char *arg, char *err, size_t len)
{
	return add_group(ctx, arg, DIR_BOTH, err, len);
}

static int opt_inbound(void *ctx, const char *arg, char *err, size_t len)
{
	return add_group(ctx, arg, DIR_IN, err, len);
}

static int opt_outbound(void *ctx, const char *arg, char *err, size_t len)
{
	return add_group(ctx, arg, DIR_OUT, err, len);
}

static int parse_dev(const char *arg, char *dev, size_t devlen, uint8_t *port, char *err,
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

static int opt_device(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = &((struct opts *)ctx)->br->cfg;

	return parse_dev(arg, c->ib_dev, sizeof(c->ib_dev), &c->ib_port, err, len);
}

static int opt_roce(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = &((struct opts *)ctx)->br->cfg;

	return parse_dev(arg, c->roce_dev, sizeof(c->roce_dev), &c->roce_port, err, len);
}

static int opt_mgid(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;
	int f;

	if (!arg) {
		o->list_fmts = true;
		opt_request_exit();
		return 0;
	}
	f = mgid_fmt_parse(arg);
	if (f < 0)
		return opt_errf(err, len, -EINVAL,
				"unknown MGID format '%s' (RDMA, IPv4, IPv6, PORT, IB)", arg);
	o->fmt = (enum mgid_fmt)f;
	return 0;
}

static int opt_port(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 1, 65535, &v, err, len);

	if (!r)
		((struct opts *)ctx)->port = (uint16_t)v;
	return r;
}

static int opt_tos(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 0, 255, &v, err, len);

	if (!r)
		((struct opts *)ctx)->tos = (int)v;
	return r;
}

static int opt_workers(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 0, 64, &v, err, len);

	if (!r)
		((struct opts *)ctx)->br->cfg.nworkers = (uint32_t)v;
	return r;
}

static int opt_cpus(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = &((struct opts *)ctx)->br->cfg;
	char buf[1024], *save = NULL, *tok;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if (strlen(arg) >= sizeof(buf))
		return opt_errf(err, len, -EINVAL, "CPU list too long");
	strcpy(buf, arg);
	c->ncpus = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t lo, hi;
		char *dash = strchr(tok, '-');
		int r;

		if (dash)
			*dash = 0;
		r = opt_parse_uint(tok, 0, (uint64_t)ncpu - 1, &lo, err, len);
		if (!r)
			r = dash ? opt_parse_uint(dash + 1, lo, (uint64_t)ncpu - 1, &hi, err, len)
				 : (hi = lo, 0);
		if (r)
			return r;
		for (uint64_t cpu = lo; cpu <= hi; cpu++) {
			if (c->ncpus == sizeof(c->cpus) / sizeof(c->cpus[0]))
				return opt_errf(err, len, -EINVAL, "too many CPUs in '%s'", arg);
			c->cpus[c->ncpus++] = (int)cpu;
		}
	}
	if (!c->ncpus)
		return opt_errf(err, len, -EINVAL, "empty CPU list");
	return 0;
}

static int opt_peer(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = &((struct opts *)ctx)->br->cfg;
	struct in_addr a;

	if (inet_pton(AF_INET, arg, &a) != 1)
		return opt_errf(err, len, -EINVAL, "'%s' is not an IPv4 address", arg);
	if (c->npeers == sizeof(c->peers) / sizeof(c->peers[0]))
		return opt_errf(err, len, -EINVAL, "too many peers (max %zu)",
				sizeof(c->peers) / sizeof(c->peers[0]));
	c->peers[c->npeers++] = a.s_addr;
	return 0;
}

static int opt_idle(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = &((struct opts *)ctx)->br->cfg;

	if (!strcmp(arg, "spin"))
		c->idle = IDLE_SPIN;
	else if (!strcmp(arg, "backoff"))
		c->idle = IDLE_BACKOFF;
	else
		return opt_errf(err, len, -EINVAL, "idle policy '%s': expected spin or backoff",
				arg);
	return 0;
}

static int opt_verbose(void *ctx, const char *arg, char *err, size_t len)
{
	(void)arg;
	(void)err;
	(void)len;
	((struct opts *)ctx)->verbose++;
	return 0;
}

static int opt_debug(void *ctx, const char *arg, char *err, size_t len)
{
	(void)ctx;
	(void)arg;
	(void)err;
	(void)len;
	/* The bridge runs in the foreground and logs to stderr: what --debug asks for. */
	return 0;
}

static _Atomic int64_t f_buffers, f_huge, f_mcqp, f_senders, f_backlog, f_rq, f_sq, f_sig;
static _Atomic int64_t f_pgm_csum, f_pgm_strict, f_foreign;

/* pgm_checksum / pgm_strict: one bit each of the data path's PGM drop policy. */
static void pgm_policy_bit(struct bridge *br, int64_t bit, int64_t on)
{
	if (on)
		atomic_fetch_or(&br->pgm_policy, bit);
	else
		atomic_fetch_and(&br->pgm_policy, ~bit);
}

static int apply_pgm_csum(void *ctx, int64_t value, char *err, size_t len)
{
	(void)err;
	(void)len;
	pgm_policy_bit(ctx, PGM_DROP_BAD_CHECKSUM, value);
	return 0;
}

static int apply_pgm_strict(void *ctx, int64_t value, char *err, size_t len)
{
	(void)err;
	(void)len;
	pgm_policy_bit(ctx, PGM_DROP_MALFORMED, value);
	return 0;
}

static int register_options(struct opts *o, struct ctl *ctl, struct bridge *br)
{
	const struct opt_def defs[] = {
		{"device", 'd', "dev[:port]", false,
		 "InfiniBand device (default: first active IB port)", opt_device, o, false},
		{"roce", 'r', "dev[:port]", false,
		 "RoCE device (default: first active port with a RoCEv2 IPv4 GID)", opt_roce, o,
		 false},
		{"multicast", 'm', "addr[:port][/fmt][#tos]", false, "bridge a group both ways",
		 opt_multicast, o, true},
		{"inbound", 'i', "addr[:port][/fmt][#tos]", false,
		 "bridge a group IB -> RoCE only (RoCE side joins send-only)", opt_inbound, o,
		 true},
		{"outbound", 'o', "addr[:port][/fmt][#tos]", false,
		 "bridge a group RoCE -> IB only (IB side joins send-only)", opt_outbound, o, true},
		{"mgid", 'l', "fmt", true,
		 "IB MGID format of the groups that follow (RDMA, IPv4, IPv6, PORT, IB); no "
		 "argument: list them",
		 opt_mgid, o, true},
		{"port", 'p', "n", false, "default UDP port of the groups that follow (4711)",
		 opt_port, o, true},
		{"tos", 't', "n", false, "traffic class of the groups that follow", opt_tos, o,
		 true},
		{"cores", 'k', "n", false, "busy-polling worker threads (same as --workers)",
		 opt_workers, o, false},
		{"workers", 0, "n", false,
		 "worker threads; 0 = event-driven data path on the control thread", opt_workers, o,
		 false},
		{"cpus", 0, "list", false, "CPUs for the workers, e.g. 2,3 or 4-7", opt_cpus, o,
		 false},
		{"idle", 0, "spin|backoff", false,
		 "worker idle policy: spin, or spin then yield and sleep (default spin)", opt_idle,
		 o, false},
		{"peer", 0, "addr", false,
		 "RoCE address of another bridge: its packets are never bridged back", opt_peer, o,
		 true},
		{"verbose", 'v', NULL, false, "more logging", opt_verbose, o, true},
		{"debug", 'x', NULL, false, "stay in the foreground and log to stderr", opt_debug,
		 o, false},
	};
	const struct feat_def feats[] = {
		{"bridging", FEAT_BOOL, "forward packets (off: count them as bridging_off)", 1, 0,
		 0, false, 0, false, 0, &br->bridging, true, NULL, NULL},
		{"drop", FEAT_INT, "fault injection: drop every Nth packet (0 = off)", 0, 0,
		 1000000000, false, 0, true, 0, &br->drop_every, true, NULL, NULL},
		{"loopbackprev", FEAT_BOOL,
		 "block multicast loopback in the NIC (else filter own packets)", 1, 0, 0, false, 0,
		 false, 0, &br->loopback_prev, false, NULL, NULL},
		{"hwrate", FEAT_BOOL, "keep the static rate of the join in address handles", 0, 0,
		 0, false, 0, false, 0, &ctl->hwrate, false, NULL, NULL},
		{"statint", FEAT_INT, "seconds between statistics lines (0 = off)", 10, 0, 3600,
		 false, 0, true, 0, &ctl->statint, true, NULL, NULL},
		{"loglevel", FEAT_INT, "syslog level of messages shown (3 error .. 7 debug)", 6, 0,
		 7, false, 0, false, 0, &log_level, true, NULL, NULL},
		{"buffers", FEAT_INT, "packet buffers in the pool", 65536, 1024, 16777216, false, 0,
		 false, 0, &f_buffers, false, NULL, NULL},
		{"huge", FEAT_BOOL, "put the buffer pool in 2 MiB huge pages", 0, 0, 0, false, 0,
		 false, 0, &f_huge, false, NULL, NULL},
		{"mcqp", FEAT_INT, "groups per channel (0 = device max_mcast_qp_attach)", 0, 0,
		 65536, false, 0, false, 0, &f_mcqp, false, NULL, NULL},
		{"senders", FEAT_INT, "sender records per worker", 16384, 16, 4194304, false, 0,
		 false, 0, &f_senders, false, NULL, NULL},
		{"sender_idle", FEAT_INT, "seconds before an idle sender is forgotten", 300, 1,
		 86400, false, 0, false, 0, &ctl->sender_idle_s, true, NULL, NULL},
		{"backlog", FEAT_INT, "packets waiting for send-queue space per channel", 4096, 0,
		 1048576, false, 0, false, 0, &f_backlog, false, NULL, NULL},
		{"rqdepth", FEAT_INT, "receive queue depth per channel", 2048, 64, 32768, false, 0,
		 false, 0, &f_rq, false, NULL, NULL},
		{"sqdepth", FEAT_INT, "send queue depth per channel", 2048, 64, 32768, false, 0,
		 false, 0, &f_sq, false, NULL, NULL},
		{"sigevery", FEAT_INT, "signal one send completion in N", 32, 1, 1024, false, 0,
		 false, 0, &f_sig, false, NULL, NULL},
		{"foreign", FEAT_BOOL, "bridge RoCE sources outside the interface subnet", 0, 0, 0,
		 false, 0, false, 0, &f_foreign, false, NULL, NULL},
		{"pgm", FEAT_BOOL, "inspect PGM (RFC 3208): stream counters, loop and OPX checks",
		 1, 0, 0, false, 0, false, 0, &br->pgm_on, true, NULL, NULL},
		{"pgm_dups", FEAT_BOOL, "drop PGM ODATA duplicates (off: count and forward them)",
		 0, 0, 0, false, 0, false, 0, &br->pgm_dups, true, NULL, NULL},
		{"pgm_checksum", FEAT_BOOL, "drop PGM packets with a wrong checksum", 0, 0, 0,
		 false, 0, false, 0, &f_pgm_csum, true, apply_pgm_csum, br},
		{"pgm_strict", FEAT_BOOL, "drop payloads that are not valid PGM", 0, 0, 0, false, 0,
		 false, 0, &f_pgm_strict, true, apply_pgm_strict, br},
		{"pgm_idle", FEAT_INT, "seconds before an idle PGM stream is forgotten", 600, 1,
		 86400, false, 0, false, 0, &ctl->pgm_idle_s, true, NULL, NULL},
	};
	int r;

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if ((r = opt_register(&defs[i])))
			return r;
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++)
		if ((r = feat_register(&feats[i])))
			return r;
	return opt_set_positional("addr[:port][/fmt][#tos]", "groups bridged both ways (like -m)",
				  opt_multicast, o);
}

int main(int argc, char **argv)
{
	static struct bridge br;
	static struct ctl ctl;
	struct opts o = {.br = &br, .ctl = &ctl, .fmt = MGID_RDMA, .port = DEFAULT_PORT, .tos = -1};
	char err[OPT_ERR_LEN];
	uint32_t npub = 0;
	int r, status = 0;

	br.cfg.nworkers = 1;
	br.cfg.idle = IDLE_SPIN;
	br.cfg.idle_max_us = 1000;
	r = opt_register_builtin(stdout, "ib2roce");
	if (!r)
		r = register_options(&o, &ctl, &br);
	if (r) {
		fprintf(stderr, "ib2roce: option registry: %s\n", strerror(-r));
		return 1;
	}
	r = opt_parse_argv(argc, argv, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "ib2roce: %s\n", err);
		return 2;
	}
	if (o.list_fmts) {
		for (int f = 0; f < MGID_NFMT; f++)
			printf("%s\n", mgid_fmt_name[f]);
		return 0;
	}
	if (r == OPT_EXIT)
		return 0;
	if (o.verbose)
		atomic_store(&log_level, LOG_DEBUG);
	br.cfg.nbufs = (uint32_t)atomic_load(&f_buffers);
	br.cfg.huge = atomic_load(&f_huge);
	br.cfg.mcqp = (uint32_t)atomic_load(&f_mcqp);
	br.cfg.max_senders = (uint32_t)atomic_load(&f_senders);
	br.cfg.backlog = (uint32_t)atomic_load(&f_backlog);
	br.cfg.rq_depth = (uint32_t)atomic_load(&f_rq);
	br.cfg.sq_depth = (uint32_t)atomic_load(&f_sq);
	br.cfg.sig_every = (uint32_t)atomic_load(&f_sig);
	br.cfg.allow_foreign = atomic_load(&f_foreign) != 0;
	if (br.cfg.sig_every > br.cfg.sq_depth / 2)
		br.cfg.sig_every = br.cfg.sq_depth / 2;
	if (!br.ngroups)
		log_warn("no multicast groups given: nothing to bridge");

	urcu_qsbr_register_thread();
	r = side_open(&br.sd[SIDE_IB], SIDE_IB, br.cfg.ib_dev, br.cfg.ib_port, err, sizeof(err));
	if (!r)
		r = side_open(&br.sd[SIDE_ROCE], SIDE_ROCE, br.cfg.roce_dev, br.cfg.roce_port, err,
			      sizeof(err));
	if (!r)
		r = bridge_build(&br, br.ngroups, err, sizeof(err));
	if (r) {
		log_err("%s", err);
		status = 1;
		goto out;
	}
	log_info("IB %s:%u (lid %u) <-> RoCE %s:%u (%s), %u channel pair%s, %u worker%s%s",
		 br.sd[0].dev, br.sd[0].port, br.sd[0].pattr.lid, br.sd[1].dev, br.sd[1].port,
		 inet_ntoa(*(struct in_addr *)&br.sd[1].ipv4), br.npairs, br.npairs == 1 ? "" : "s",
		 br.cfg.nworkers, br.cfg.nworkers == 1 ? "" : "s",
		 br.cfg.nworkers ? "" : " (event-driven)");
	for (uint32_t i = 0; i < br.cfg.nworkers; i++)
		log_info("worker %u: CPU %d, %u channel%s", i, br.workers[i].cpu,
			 br.workers[i].nchan, br.workers[i].nchan == 1 ? "" : "s");
	if (!br.sd[SIDE_ROCE].netmask)
		log_info("RoCE %s: no interface holds %s, source subnet not checked", br.sd[1].dev,
			 inet_ntoa(*(struct in_addr *)&br.sd[1].ipv4));
	for (uint32_t i = 0; i < br.ngroups; i++) {
		struct group *g = br.groups[i];

		g->pair = i % br.npairs;
		g->out_chan[SIDE_IB] = br.sd[SIDE_IB].chan[g->pair];
		g->out_chan[SIDE_ROCE] = br.sd[SIDE_ROCE].chan[g->pair];
		group_mgid_ib(g, br.sd[SIDE_IB].pkey, &g->mgid[SIDE_IB]);
		group_mgid_roce(g, &g->mgid[SIDE_ROCE]);
		if (group_publish(&br, g)) {
			log_err("group %s: MGID already used by another group", g->spec);
			status = 2;
			goto out;
		}
		npub++;
	}
	r = ctl_init(&ctl, &br, err, sizeof(err));
	if (r) {
		log_err("%s", err);
		status = 1;
		goto out;
	}
	if (br.cfg.nworkers && (r = workers_start(&br))) {
		log_err("starting workers: %s", strerror(-r));
		status = 1;
		goto out_ctl;
	}
	feat_running_set(true);
	ctl_start_joins(&ctl);
	r = ctl_run(&ctl);
	if (r)
		status = 1;
	if (br.cfg.nworkers)
		workers_stop(&br);
	ctl_print_final(&ctl, stdout);
	ctl_leave_all(&ctl);
out_ctl:
	ctl_fini(&ctl);
out:
	for (uint32_t i = 0; i < npub; i++)
		group_unpublish(&br, br.groups[i]);
	urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	bridge_destroy(&br);
	for (uint32_t i = 0; i < br.ngroups; i++)
		free(br.groups[i]);
	free(br.groups);
	urcu_qsbr_unregister_thread();
	return status;
}
