// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The bridge's own options and runtime features (app.h): the group options (-m, -i, -o),
 * devices, workers and placement, modes, paths, the metrics endpoint, and the features
 * of the engine's settings; register_options registers them with the registry
 * (options.h), the other modules' options are registered by the modules.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "bridge.h"
#include "capture.h"
#include "console.h"
#include "ctl.h"
#include "groupopts.h"
#include "ha.h"
#include "daemon.h"
#include "fwd.h"
#include "health.h"
#include "log.h"
#include "loop.h"
#include "metrics_http.h"
#include "notify.h"
#include "options.h"
#include "paths.h"
#include "pgm.h"
#include "placement.h"
#include "report.h"
#include "setup.h"
#include "show.h"
#include "sysgroup.h"
#include "tune.h"
#include "version_line.h"

#include "app.h"

static int add_group(struct opts *o, const char *spec, enum group_dir dir, char *err, size_t len)
{
	struct bridge *br = o->br;
	struct group *g;
	int r;

	g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return opt_errf(err, len, -ENOMEM, "out of memory");
	memset(g, 0, sizeof(*g));
	r = group_spec_parse(g, spec, o->gd.fmt, o->gd.port, o->gd.tos, o->gd.qkey, err, len);
	if (r) {
		free(g);
		return r;
	}
	g->dir = dir;
	{
		struct group **v = o->reloading ? o->want : br->groups;
		uint32_t n = o->reloading ? o->nwant : br->ngroups;
		const char *why = NULL;
		struct group *dup;

		/* An index, not a walk of the list: thousands of groups (mgid.c). */
		if (group_index_sync(&o->gidx, v, n)) {
			free(g);
			return opt_errf(err, len, -ENOMEM, "out of memory");
		}
		dup = group_index_same(&o->gidx, g, &why);
		if (dup) {
			opt_errf(err, len, -EINVAL, "group '%s': its %s is already bridged by '%s'",
				 spec, why, dup->spec);
			free(g);
			return -EINVAL;
		}
	}
	r = o->reloading ? group_array_push(&o->want, &o->nwant, &o->want_cap, g)
			 : group_array_push(&br->groups, &br->ngroups, &br->groups_cap, g);
	if (r) {
		free(g);
		return opt_errf(err, len, r, "out of memory");
	}
	/* Out of memory leaves it empty: the next group's sync builds it again. */
	(void)group_index_add(&o->gidx, g);
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

static int opt_device(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = ((struct opts *)ctx)->cfg;

	return groupopts_dev_parse(arg, c->ib_dev, sizeof(c->ib_dev), &c->ib_port, err, len);
}

static int opt_roce(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = ((struct opts *)ctx)->cfg;

	return groupopts_dev_parse(arg, c->roce_dev, sizeof(c->roce_dev), &c->roce_port, err, len);
}

/* --version: the version line on stdout, then exit 0 (as --help). */
static int opt_version(void *ctx, const char *arg, char *err, size_t len)
{
	(void)ctx;
	(void)arg;
	(void)err;
	(void)len;
	printf("%s\n", version_line);
	opt_request_exit();
	return 0;
}

static int opt_workers(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 0, 64, &v, err, len);

	if (!r)
		((struct opts *)ctx)->cfg->nworkers = (uint32_t)v;
	return r;
}

static int opt_cpus(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = ((struct opts *)ctx)->cfg;

	/* Checked against the machine (exists, allowed, not twice) by placement_plan. */
	return placement_cpulist_parse(arg, c->cpus, sizeof(c->cpus) / sizeof(c->cpus[0]),
				       &c->ncpus, err, len);
}

static int opt_control_cpu(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 0, 65535, &v, err, len);

	if (!r)
		((struct opts *)ctx)->control_cpu = (int)v;
	return r;
}

static int opt_show_placement(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	(void)arg;
	if (!o->check)
		return opt_errf(err, len, -EINVAL, "show-placement needs --check");
	o->show_placement = true;
	return 0;
}

static int opt_allowed_cpus(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	if (!o->check)
		return opt_errf(err, len, -EINVAL,
				"allowed-cpus is for planning: only with --check --show-placement");
	const char *colon = strchr(arg, ':');

	if (strlen(arg) >= sizeof(o->allowed_cpus))
		return opt_errf(err, len, -EINVAL, "allowed-cpus: list too long");
	/* CPUSET[:AFFINITY]: one list stands for both (a process whose affinity is its whole
	 * cpuset), as before the two were told apart. */
	snprintf(o->allowed_cpus, sizeof(o->allowed_cpus), "%.*s",
		 colon ? (int)(colon - arg) : (int)strlen(arg), arg);
	snprintf(o->affinity_cpus, sizeof(o->affinity_cpus), "%s", colon ? colon + 1 : "");
	return 0;
}

/*
 * --peer: another bridge's RoCE source address, IPv4 (peers, compared as one word) or
 * IPv6 (peers6: its RoCEv2 IPv6 address, for IPv6 groups).
 */
static int opt_peer(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = ((struct opts *)ctx)->cfg;
	struct in6_addr a6;
	struct in_addr a;

	if (inet_pton(AF_INET6, arg, &a6) == 1) {
		/* A unicast source: not ::, not multicast (ff00::/8), not IPv4-mapped (say
		 * the IPv4 address instead). */
		if (IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_MULTICAST(&a6) ||
		    IN6_IS_ADDR_V4MAPPED(&a6) || IN6_IS_ADDR_LOOPBACK(&a6))
			return opt_errf(err, len, -EINVAL,
					"'%s' is not a unicast IPv6 address (a peer is another "
					"bridge's RoCE address; an IPv4-mapped one: give the IPv4 "
					"address)",
					arg);
		if (c->npeers6 == sizeof(c->peers6) / sizeof(c->peers6[0]))
			return opt_errf(err, len, -EINVAL, "too many IPv6 peers (max %zu)",
					sizeof(c->peers6) / sizeof(c->peers6[0]));
		memcpy(c->peers6[c->npeers6++].raw, a6.s6_addr, 16);
		return 0;
	}
	if (inet_pton(AF_INET, arg, &a) != 1)
		return opt_errf(err, len, -EINVAL, "'%s' is not an IPv4 or IPv6 address", arg);
	/* A peer is another bridge's unicast source address: no packet comes from these. */
	if (a.s_addr == htonl(INADDR_ANY) || a.s_addr == htonl(INADDR_BROADCAST) ||
	    IN_MULTICAST(ntohl(a.s_addr)))
		return opt_errf(err, len, -EINVAL,
				"'%s' is not a unicast address (a peer is another bridge's "
				"RoCE address)",
				arg);
	if (c->npeers == sizeof(c->peers) / sizeof(c->peers[0]))
		return opt_errf(err, len, -EINVAL, "too many peers (max %zu)",
				sizeof(c->peers) / sizeof(c->peers[0]));
	c->peers[c->npeers++] = a.s_addr;
	return 0;
}

static int opt_idle(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = ((struct opts *)ctx)->cfg;

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
	(void)arg;
	(void)err;
	(void)len;
	((struct opts *)ctx)->debug = true;
	return 0;
}

static int opt_systemd(void *ctx, const char *arg, char *err, size_t len)
{
	(void)arg;
	(void)err;
	(void)len;
	((struct opts *)ctx)->systemd = true;
	return 0;
}

/* Does the command line itself hold --check (or an abbreviation of it)? */
bool argv_has_check(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		size_t n = strlen(argv[i]);

		if (n >= 4 && !strncmp(argv[i], "--check", n))
			return true;
	}
	return false;
}

static int opt_check(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	(void)arg;
	/* Only the command line may say it: a file is read by a bridge that runs. */
	if (!o->check)
		return opt_errf(err, len, -EINVAL, "check is a command-line option");
	return 0;
}

static int opt_tune_check(void *ctx, const char *arg, char *err, size_t len)
{
	(void)arg;
	(void)err;
	(void)len;
	((struct opts *)ctx)->tune_check = true;
	return 0;
}

static int set_path(char *dst, size_t dstlen, const char *arg, const char *what, char *err,
		    size_t len)
{
	if (!*arg)
		return opt_errf(err, len, -EINVAL, "empty %s path", what);
	if (strlen(arg) >= dstlen)
		return opt_errf(err, len, -EINVAL, "%s path too long (max %zu bytes)", what,
				dstlen - 1);
	strcpy(dst, arg);
	return 0;
}

/*
 * A file the bridge opens after it has become a daemon (which changes to "/"): made
 * absolute against the directory it was started in (a reload's parse runs there too,
 * app/reload.c), so that `--control c.sock` is the c.sock that `bcom --control c.sock`
 * finds from that directory.
 */
static int set_abs_path(char *dst, size_t dstlen, const char *arg, const char *what,
			char *err, size_t len)
{
	char abs[PATH_MAX];
	int r;

	if (!*arg)
		return opt_errf(err, len, -EINVAL, "empty %s path", what);
	r = path_absolute(arg, abs, sizeof(abs));
	if (r == -ENAMETOOLONG || (!r && strlen(abs) >= dstlen)) {
		if (arg[0] == '/')
			return opt_errf(err, len, -EINVAL, "%s path too long (max %zu bytes)",
					what, dstlen - 1);
		return opt_errf(err, len, -EINVAL,
				"%s path '%s' is too long from the current directory (max %zu "
				"bytes as an absolute path)",
				what, arg, dstlen - 1);
	}
	if (r)
		return opt_errf(err, len, r, "%s path '%s': current directory: %s", what, arg,
				strerror(-r));
	strcpy(dst, abs);
	return 0;
}

static int opt_running_config(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	if (!o->check)
		return opt_errf(err, len, -EINVAL, "running-config is only for --check");
	return set_path(o->running_config, sizeof(o->running_config), arg, "running-config", err,
			len);
}

static int opt_control(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	return set_abs_path(o->control, sizeof(o->control), arg, "control socket", err, len);
}

static int opt_pidfile(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	return set_abs_path(o->pidfile, sizeof(o->pidfile), arg, "pid file", err, len);
}

static int opt_metrics(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	return set_abs_path(o->metrics, sizeof(o->metrics), arg, "metrics file", err, len);
}

static int opt_metrics_port(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;
	uint64_t v;
	int r = opt_parse_uint(arg, 0, 65535, &v, err, len);

	if (!r)
		o->metrics_port = (unsigned)v;
	return r;
}

static int opt_metrics_address(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	return metrics_http_addr_parse(&o->mh, arg, err, len);
}

static int opt_metrics_allow(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	return metrics_http_allow_parse(&o->mh, arg, err, len);
}

static int opt_control_group(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;
	gid_t gid;

	if (sysgroup_lookup(arg, &gid))
		return opt_errf(err, len, -EINVAL, "no group '%s'", arg);
	return set_path(o->control_group, sizeof(o->control_group), arg, "group", err, len);
}

_Atomic int64_t f_buffers, f_huge, f_mcqp, f_senders, f_backlog, f_rq, f_sq, f_sig;
_Atomic int64_t f_pgm_csum, f_pgm_strict, f_foreign, f_join_timeout;
_Atomic int64_t f_oversub, f_rt, f_mlock;

/* pgm_checksum / pgm_strict: one bit each of the data path's PGM drop policy. */
static void pgm_policy_bit(struct bridge *br, int64_t bit, int64_t on)
{
	if (on)
		atomic_fetch_or(&br->pgm_policy, bit);
	else
		atomic_fetch_and(&br->pgm_policy, ~bit);
}

/*
 * stall=N freezes worker N-1: refuse a worker that does not exist while running (at
 * start-up --workers may still follow: stall_check() runs after the parse).
 */
int stall_check(const struct bridge *br, int64_t value, char *err, size_t len)
{
	if (value > br->cfg.nworkers)
		return opt_errf(
			err, len, -EINVAL, "there is no worker %lld (the bridge has %u worker%s)",
			(long long)value - 1, br->cfg.nworkers, br->cfg.nworkers == 1 ? "" : "s");
	return 0;
}

static int apply_stall(void *ctx, int64_t value, char *err, size_t len)
{
	return feat_running_get() ? stall_check(ctx, value, err, len) : 0;
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

int register_options(struct opts *o, struct ctl *ctl, struct bridge *br)
{
	const struct opt_def defs[] = {
		{"device", 'd', "dev[:port]", false,
		 "InfiniBand device (default: first active IB port)", opt_device, o, false},
		{"roce", 'r', "dev[:port]", false,
		 "RoCE device (default: first active port with a RoCEv2 IPv4 GID)", opt_roce, o,
		 false},
		{"multicast", 'm', "group[#opts]", false, "bridge a group both ways", opt_multicast,
		 o, true},
		{"inbound", 'i', "group[#opts]", false,
		 "bridge a group IB -> RoCE only (RoCE side joins send-only)", opt_inbound, o,
		 true},
		{"outbound", 'o', "group[#opts]", false,
		 "bridge a group RoCE -> IB only (IB side joins send-only)", opt_outbound, o, true},
		{"mgid", 'l', "fmt", true,
		 "IB MGID format of the groups that follow (RDMA, IPv4, IPv6, PORT, IB); no "
		 "argument: list them",
		 groupopts_mgid_set, &o->gd, true},
		{"port", 'p', "n", false, "default UDP port of the groups that follow (4711)",
		 groupopts_port_set, &o->gd, true},
		{"tos", 't', "n", false, "traffic class of the groups that follow",
		 groupopts_tos_set, &o->gd, true},
		{"qkey", 0, "Q", false,
		 "Q_Key of the groups that follow, both sides (default 0x01234567, rdma_cm's)",
		 groupopts_qkey_set, &o->gd, true},
		{"cores", 'k', "n", false, "busy-polling worker threads (same as --workers)",
		 opt_workers, o, false},
		{"workers", 0, "n", false,
		 "worker threads; 0 = event-driven data path on the control thread", opt_workers, o,
		 false},
		{"version", 0, NULL, false, "show the version and exit", opt_version, o, false},
		{"cpus", 0, "list", false,
		 "CPUs for the workers in order, e.g. 2,3 or 4-7 (default: NIC-local cores)",
		 opt_cpus, o, false},
		{"control-cpu", 0, "n", false,
		 "CPU of the control thread (default: a housekeeping CPU no worker uses)",
		 opt_control_cpu, o, false},
		{"show-placement", 0, NULL, false,
		 "with --check: print where workers, control thread and memory would go",
		 opt_show_placement, o, false},
		{"allowed-cpus", 0, "cpuset[:affinity]", false,
		 "with --check --show-placement: plan for this cgroup cpuset (CPUs workers may "
		 "use) and inherited affinity (housekeeping; default: the cpuset) instead of "
		 "this process's",
		 opt_allowed_cpus, o, false},
		{"running-config", 0, "file", false,
		 "with --check: compare with a running bridge's settings (what `bcom config` "
		 "prints; - for standard input): 'needs a restart: workers 1 -> 2' lines and "
		 "exit 3, or exit 0 when a reload applies the file",
		 opt_running_config, o, false},
		{"idle", 0, "spin|backoff", false,
		 "worker idle policy: spin, or spin then yield and sleep (default spin)", opt_idle,
		 o, false},
		{"peer", 0, "addr", false,
		 "RoCE address of another bridge: its packets are never bridged back", opt_peer, o,
		 true},
		{"verbose", 'v', NULL, false, "more logging", opt_verbose, o, true},
		{"debug", 'x', NULL, false,
		 "stay in the foreground, log to stderr, read console commands from stdin",
		 opt_debug, o, false},
		{"systemd", 's', NULL, false,
		 "run under systemd: foreground, journal, sd_notify (implied by NOTIFY_SOCKET)",
		 opt_systemd, o, false},
		{"check", 0, NULL, false,
		 "validate the configuration and open the devices, then exit (0 valid, 2 bad "
		 "configuration, 1 unusable devices)",
		 opt_check, o, false},
		{"tune-check", 0, NULL, false,
		 "print the host tuning report for this configuration and exit (0 all PASS, 1 "
		 "some WARN, 3 some FAIL)",
		 opt_tune_check, o, false},
		{"control", 0, "path", false,
		 "console socket (default /run/ib2roce/ib2roce.sock as root or under systemd, "
		 "else $XDG_RUNTIME_DIR/ib2roce.sock)",
		 opt_control, o, false},
		{"control-group", 0, "group", false,
		 "group admitted to the console besides root and our user (socket's group)",
		 opt_control_group, o, false},
		{"pidfile", 0, "path", false,
		 "pid file with a lock (default: the console socket path with .pid)", opt_pidfile,
		 o, false},
		{"metrics-file", 0, "path", false,
		 "write Prometheus metrics to this file every stats interval (atomically)",
		 opt_metrics, o, false},
		{"metrics-port", 0, "n", false,
		 "serve GET /metrics over HTTP on 127.0.0.1:n (0 = off, the default)",
		 opt_metrics_port, o, false},
		{"metrics-address", 0, "addr", false,
		 "the IPv4 address --metrics-port listens on (default 127.0.0.1; another needs "
		 "--metrics-allow)",
		 opt_metrics_address, o, false},
		{"metrics-allow", 0, "list", false,
		 "clients that may scrape --metrics-port: IPv4 addresses and prefixes A.B.C.D/N, "
		 "comma-separated (default: loopback only)",
		 opt_metrics_allow, o, false},
	};
	const struct feat_def feats[] = {
		{.name = "bridging",
		 .type = FEAT_BOOL,
		 .help = "forward packets (off: count them as bridging_off)",
		 .def = 1,
		 .value = &br->bridging,
		 .runtime = true},
		{.name = "drop",
		 .type = FEAT_INT,
		 .help = "fault injection: drop every Nth packet (0 = off)",
		 .max = 1000000000,
		 .has_off = true,
		 .value = &br->drop_every,
		 .runtime = true},
		{.name = "loopbackprev",
		 .type = FEAT_BOOL,
		 .help = "block multicast loopback in the NIC (else filter own packets)",
		 .def = 1,
		 .value = &br->loopback_prev},
		{.name = "hwrate",
		 .type = FEAT_BOOL,
		 .help = "keep the static rate of the join in address handles",
		 .value = &ctl->hwrate},
		{.name = "statint",
		 .type = FEAT_INT,
		 .help = "seconds between statistics lines (0 = off)",
		 .def = 10,
		 .max = 3600,
		 .has_off = true,
		 .value = &ctl->statint,
		 .runtime = true},
		{.name = "metrics_groups",
		 .type = FEAT_BOOL,
		 .help = "per-group series in the metrics (off: only the totals, for thousands "
			 "of groups)",
		 .def = 1,
		 .value = &ctl->metrics_groups,
		 .runtime = true},
		{.name = "loglevel",
		 .type = FEAT_INT,
		 .help = "syslog level of messages shown (3 error .. 7 debug)",
		 .def = 6,
		 .max = 7,
		 .value = &log_level,
		 .runtime = true},
		{.name = "buffers",
		 .type = FEAT_INT,
		 .help = "packet buffers in the pool",
		 .def = 65536,
		 .min = 1024,
		 .max = 16777216,
		 .value = &f_buffers},
		{.name = "huge",
		 .type = FEAT_BOOL,
		 .help = "put the buffer pool in 2 MiB huge pages",
		 .value = &f_huge},
		{.name = "mcqp",
		 .type = FEAT_INT,
		 .help = "groups per channel (0 = device max_mcast_qp_attach)",
		 .max = 65536,
		 .value = &f_mcqp},
		{.name = "senders",
		 .type = FEAT_INT,
		 .help = "sender records per worker",
		 .def = 16384,
		 .min = 16,
		 .max = 4194304,
		 .value = &f_senders},
		{.name = "sender_idle",
		 .type = FEAT_INT,
		 .help = "seconds before an idle sender is forgotten",
		 .def = 300,
		 .min = 1,
		 .max = 86400,
		 .value = &ctl->sender_idle_s,
		 .runtime = true},
		{.name = "backlog",
		 .type = FEAT_INT,
		 .help = "packets waiting for send-queue space per channel",
		 .def = 4096,
		 .max = 1048576,
		 .value = &f_backlog},
		{.name = "rqdepth",
		 .type = FEAT_INT,
		 .help = "receive queue depth per channel",
		 .def = 2048,
		 .min = 64,
		 .max = 32768,
		 .value = &f_rq},
		{.name = "sqdepth",
		 .type = FEAT_INT,
		 .help = "send queue depth per channel",
		 .def = 2048,
		 .min = 64,
		 .max = 32768,
		 .value = &f_sq},
		{.name = "sigevery",
		 .type = FEAT_INT,
		 .help = "signal one send completion in N",
		 .def = 32,
		 .min = 1,
		 .max = 1024,
		 .value = &f_sig},
		{.name = "foreign",
		 .type = FEAT_BOOL,
		 .help = "bridge RoCE sources outside the interface subnet",
		 .value = &f_foreign},
		{.name = "pgm",
		 .type = FEAT_BOOL,
		 .help = "inspect PGM (RFC 3208): stream counters, loop and OPX checks",
		 .def = 1,
		 .value = &br->pgm_on,
		 .runtime = true},
		{.name = "pgm_dups",
		 .type = FEAT_BOOL,
		 .help = "drop PGM ODATA duplicates (off: count and forward them)",
		 .value = &br->pgm_dups,
		 .runtime = true},
		{.name = "pgm_checksum",
		 .type = FEAT_BOOL,
		 .help = "drop PGM packets with a wrong checksum",
		 .value = &f_pgm_csum,
		 .runtime = true,
		 .apply = apply_pgm_csum,
		 .ctx = br},
		{.name = "pgm_strict",
		 .type = FEAT_BOOL,
		 .help = "drop payloads that are not valid PGM",
		 .value = &f_pgm_strict,
		 .runtime = true,
		 .apply = apply_pgm_strict,
		 .ctx = br},
		{.name = "pgm_idle",
		 .type = FEAT_INT,
		 .help = "seconds before an idle PGM stream is forgotten",
		 .def = 600,
		 .min = 1,
		 .max = 86400,
		 .value = &ctl->pgm_idle_s,
		 .runtime = true},
		{.name = "console_idle",
		 .type = FEAT_INT,
		 .help = "seconds before a console client without a command is "
			 "disconnected",
		 .def = 300,
		 .min = 1,
		 .max = 86400,
		 .value = &ctl->con_idle_s,
		 .runtime = true},
		{.name = "ppsdisplay",
		 .type = FEAT_BOOL,
		 .help = "log a packet rate line every second",
		 .value = &ctl->ppsdisplay,
		 .runtime = true},
		{.name = "join_timeout",
		 .type = FEAT_INT,
		 .help = "seconds before READY=1 with groups still not joined",
		 .def = 30,
		 .min = 1,
		 .max = 3600,
		 .value = &f_join_timeout},
		{.name = "oversubscribe",
		 .type = FEAT_BOOL,
		 .help = "allow workers to share CPUs or cores, and CPUs outside the allowed set",
		 .value = &f_oversub},
		{.name = "rt",
		 .type = FEAT_INT,
		 .help = "SCHED_FIFO priority of the workers (0 = off; needs "
			 "sched_rt_runtime_us=-1)",
		 .max = 99,
		 .has_off = true,
		 .value = &f_rt},
		{.name = "mlock",
		 .type = FEAT_BOOL,
		 .help = "lock all memory (mlockall): no page faults on the data path; needs "
			 "RLIMIT_MEMLOCK or CAP_IPC_LOCK",
		 .value = &f_mlock},
		{.name = "stall",
		 .type = FEAT_INT,
		 .help = "fault injection: worker N-1 stops making progress (watchdog test; 0 = "
			 "off)",
		 .max = 64,
		 .has_off = true,
		 .value = &br->stall,
		 .runtime = true,
		 .apply = apply_stall,
		 .ctx = br},
		{.name = "ctlstall",
		 .type = FEAT_INT,
		 .help = "fault injection: the control thread stops once for N ms (stall logging "
			 "test)",
		 .max = 600000,
		 .has_off = true,
		 .value = &ctl->ctlstall,
		 .runtime = true},
	};
	int r;

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if ((r = opt_register(&defs[i])))
			return r;
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++)
		if ((r = feat_register(&feats[i])))
			return r;
	return opt_set_positional("group[#opts]", "groups bridged both ways (like -m)",
				  opt_multicast, o);
}

/* What the engine's configuration holds before the options are applied. */
void cfg_defaults(struct bridge_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nworkers = 1;
	cfg->idle = IDLE_SPIN;
	cfg->idle_max_us = 1000;
}
