// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ib2roce: the multicast bridge between an InfiniBand port and a RoCEv2 port.
 *
 * main() registers the options and runtime features, parses the command line (and
 * config files), opens both ports, builds the engine, starts the workers and runs the
 * control thread until a signal; then it stops the workers, leaves every group and
 * prints the final counters. Exit status: 0 after a clean shutdown, 1 when the bridge
 * could not start or failed, 2 for invalid options or configuration.
 *
 * Modes: --debug stays in the foreground, logs to stderr and reads console commands from
 * the terminal; --systemd (or NOTIFY_SOCKET in the environment) stays in the foreground,
 * logs to the journal and speaks sd_notify; otherwise it daemonizes and logs to syslog.
 * Every mode serves the console socket and holds the pid file lock.
 */
#include <errno.h>
#include <fcntl.h>
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

#define DEFAULT_PORT 4711

/* What the command line and config files say; a reload fills a second one. */
struct opts {
	struct bridge *br;
	struct ctl *ctl;
	struct bridge_cfg *cfg;	      /* &br->cfg, or the reload's copy */
	struct groupopts_defaults gd; /* -l, -p, -t: defaults of the groups that follow */
	int verbose;
	bool debug, systemd, check;
	bool tune_check;	/* --tune-check: print the tuning report and exit */
	bool show_placement;	/* --show-placement (with --check): print the plan */
	int control_cpu;	/* --control-cpu, -1: automatic */
	char allowed_cpus[256]; /* --allowed-cpus CPUSET (dry runs), "": the cgroup's */
	char affinity_cpus[256]; /* --allowed-cpus CPUSET:AFFINITY, "": CPUSET or the process's */
	char running_config[256]; /* --running-config (with --check), "": none */
	char control[CONTROL_PATH_MAX];
	char pidfile[256];
	char metrics[256];
	unsigned metrics_port;	    /* --metrics-port: GET /metrics on 127.0.0.1, 0 = off */
	struct metrics_http_cfg mh; /* --metrics-address, --metrics-allow */
	char control_group[64];
	/* Reload: the groups the configuration asks for (not bridged yet). */
	bool reloading;
	struct group **want;
	uint32_t nwant, want_cap;
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
	r = group_spec_parse(g, spec, o->gd.fmt, o->gd.port, o->gd.tos, err, len);
	if (r) {
		free(g);
		return r;
	}
	g->dir = dir;
	{
		struct group **v = o->reloading ? o->want : br->groups;
		uint32_t n = o->reloading ? o->nwant : br->ngroups;
		struct group *dup = group_array_find(v, n, g->addr);

		if (dup) {
			opt_errf(err, len, -EINVAL, "group '%s': address already bridged by '%s'",
				 spec, dup->spec);
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

static int opt_peer(void *ctx, const char *arg, char *err, size_t len)
{
	struct bridge_cfg *c = ((struct opts *)ctx)->cfg;
	struct in_addr a;

	if (inet_pton(AF_INET, arg, &a) != 1)
		return opt_errf(err, len, -EINVAL, "'%s' is not an IPv4 address", arg);
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
static bool argv_has_check(int argc, char **argv)
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

	return set_path(o->control, sizeof(o->control), arg, "control socket", err, len);
}

static int opt_pidfile(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	return set_path(o->pidfile, sizeof(o->pidfile), arg, "pid file", err, len);
}

static int opt_metrics(void *ctx, const char *arg, char *err, size_t len)
{
	struct opts *o = ctx;

	return set_path(o->metrics, sizeof(o->metrics), arg, "metrics file", err, len);
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

static _Atomic int64_t f_buffers, f_huge, f_mcqp, f_senders, f_backlog, f_rq, f_sq, f_sig;
static _Atomic int64_t f_pgm_csum, f_pgm_strict, f_foreign, f_join_timeout;
static _Atomic int64_t f_oversub, f_rt, f_mlock;

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
static int stall_check(const struct bridge *br, int64_t value, char *err, size_t len)
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

static int register_options(struct opts *o, struct ctl *ctl, struct bridge *br)
{
	const struct opt_def defs[] = {
		{"device", 'd', "dev[:port]", false,
		 "InfiniBand device (default: first active IB port)", opt_device, o, false},
		{"roce", 'r', "dev[:port]", false,
		 "RoCE device (default: first active port with a RoCEv2 IPv4 GID)", opt_roce, o,
		 false},
		{"multicast", 'm', "addr[:port][/fmt][#tos[,w=N]|#w=N]", false, "bridge a group both ways",
		 opt_multicast, o, true},
		{"inbound", 'i', "addr[:port][/fmt][#tos[,w=N]|#w=N]", false,
		 "bridge a group IB -> RoCE only (RoCE side joins send-only)", opt_inbound, o,
		 true},
		{"outbound", 'o', "addr[:port][/fmt][#tos[,w=N]|#w=N]", false,
		 "bridge a group RoCE -> IB only (IB side joins send-only)", opt_outbound, o, true},
		{"mgid", 'l', "fmt", true,
		 "IB MGID format of the groups that follow (RDMA, IPv4, IPv6, PORT, IB); no "
		 "argument: list them",
		 groupopts_mgid_set, &o->gd, true},
		{"port", 'p', "n", false, "default UDP port of the groups that follow (4711)",
		 groupopts_port_set, &o->gd, true},
		{"tos", 't', "n", false, "traffic class of the groups that follow",
		 groupopts_tos_set, &o->gd, true},
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
		{"console_idle", FEAT_INT, "seconds before a console client without a command is "
		 "disconnected", 300, 1, 86400, false, 0, false, 0, &ctl->con_idle_s, true, NULL,
		 NULL},
		{"ppsdisplay", FEAT_BOOL, "log a packet rate line every second", 0, 0, 0, false, 0,
		 false, 0, &ctl->ppsdisplay, true, NULL, NULL},
		{"join_timeout", FEAT_INT, "seconds before READY=1 with groups still not joined",
		 30, 1, 3600, false, 0, false, 0, &f_join_timeout, false, NULL, NULL},
		{"oversubscribe", FEAT_BOOL,
		 "allow workers to share CPUs or cores, and CPUs outside the allowed set", 0, 0, 0,
		 false, 0, false, 0, &f_oversub, false, NULL, NULL},
		{"rt", FEAT_INT,
		 "SCHED_FIFO priority of the workers (0 = off; needs sched_rt_runtime_us=-1)", 0, 0,
		 99, false, 0, true, 0, &f_rt, false, NULL, NULL},
		{"mlock", FEAT_BOOL,
		 "lock all memory (mlockall): no page faults on the data path; needs "
		 "RLIMIT_MEMLOCK or CAP_IPC_LOCK",
		 0, 0, 0, false, 0, false, 0, &f_mlock, false, NULL, NULL},
		{"stall", FEAT_INT,
		 "fault injection: worker N-1 stops making progress (watchdog test; 0 = off)", 0, 0,
		 64, false, 0, true, 0, &br->stall, true, apply_stall, br},
		{"ctlstall", FEAT_INT,
		 "fault injection: the control thread stops once for N ms (stall logging test)", 0,
		 0, 600000, false, 0, true, 0, &ctl->ctlstall, true, NULL, NULL},
	};
	int r;

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if ((r = opt_register(&defs[i])))
			return r;
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++)
		if ((r = feat_register(&feats[i])))
			return r;
	return opt_set_positional("addr[:port][/fmt][#tos[,w=N]|#w=N]", "groups bridged both ways (like -m)",
				  opt_multicast, o);
}

/* What the engine's configuration holds before the options are applied. */
static void cfg_defaults(struct bridge_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nworkers = 1;
	cfg->idle = IDLE_SPIN;
	cfg->idle_max_us = 1000;
}

/* ---- Reload (SIGHUP, the console's reload) ---- */

static struct {
	int argc;
	char **argv;
	struct opts *o;
	struct bridge_cfg given; /* br->cfg as the command line and files left it */
	struct opts first;	 /* the options as parsed at start, before defaults */
	int cwd; /* the directory relative config paths were given in (we chdir to /) */
} live;

static bool same_group(const struct group *a, const struct group *b)
{
	return a->addr == b->addr && a->dir == b->dir && a->port == b->port && a->fmt == b->fmt &&
	       a->tos_set == b->tos_set && (!a->tos_set || a->tos == b->tos);
}

static void free_want(struct opts *o)
{
	for (uint32_t i = 0; i < o->nwant; i++)
		free(o->want[i]);
	free(o->want);
	o->want = NULL;
	o->nwant = o->want_cap = 0;
}

/*
 * Parse the command line again (and with it every config file). The handlers write into
 * the struct opts they were registered with (main's), so it is switched to reload mode
 * for the parse: groups collected into want, settings into *shadow; the result is copied
 * to *res and main's opts restored.
 */
static int reparse(struct bridge_cfg *shadow, struct opts *res, char *err, size_t errlen)
{
	struct opts *o = live.o, saved = *o;
	int ret, here = open(".", O_PATH | O_CLOEXEC);

	cfg_defaults(shadow);
	o->cfg = shadow;
	groupopts_defaults_init(&o->gd, DEFAULT_PORT);
	o->control[0] = o->pidfile[0] = o->metrics[0] = o->control_group[0] = 0;
	o->control_cpu = -1;
	o->allowed_cpus[0] = 0;
	o->affinity_cpus[0] = 0;
	o->metrics_port = 0;
	metrics_http_cfg_init(&o->mh);
	o->reloading = true;
	o->want = NULL;
	o->nwant = o->want_cap = 0;
	if (live.cwd >= 0 && fchdir(live.cwd))
		log_debug("reload: fchdir: %s", strerror(errno));
	ret = opt_parse_argv(live.argc, live.argv, err, errlen);
	if (here >= 0) {
		if (fchdir(here))
			log_debug("reload: fchdir back: %s", strerror(errno));
		close(here);
	}
	*res = *o;
	*o = saved;
	return ret < 0 ? ret : 0;
}

/*
 * The settings a reload cannot change, one "name value" line each, in a fixed order:
 * what the engine opened, sized or pinned at start. With feats, the start-up-only
 * features too ("feature buffers 65536"). The console's config command prints the
 * running bridge's; --check --running-config compares a new file's with them.
 */
static void restart_settings(FILE *out, const struct bridge_cfg *c, const struct opts *o,
			     bool feats)
{
	/* Port 0: the first active one. */
	fprintf(out, "device %s", c->ib_dev[0] ? c->ib_dev : "auto");
	fprintf(out, c->ib_port ? ":%u\n" : "\n", c->ib_port);
	fprintf(out, "roce %s", c->roce_dev[0] ? c->roce_dev : "auto");
	fprintf(out, c->roce_port ? ":%u\n" : "\n", c->roce_port);
	fprintf(out, "workers %u\n", c->nworkers);
	fputs("cpus ", out);
	for (uint32_t i = 0; i < c->ncpus; i++)
		fprintf(out, "%s%d", i ? "," : "", c->cpus[i]);
	fputs(c->ncpus ? "\n" : "auto\n", out);
	fprintf(out, "idle %s\n", c->idle == IDLE_BACKOFF ? "backoff" : "spin");
	if (o->control_cpu < 0)
		fputs("control-cpu auto\n", out);
	else
		fprintf(out, "control-cpu %d\n", o->control_cpu);
	fputs("peer ", out);
	for (uint32_t i = 0; i < c->npeers; i++)
		fprintf(out, "%s%s", i ? "," : "",
			inet_ntoa(*(const struct in_addr *)&c->peers[i]));
	fputs(c->npeers ? "\n" : "none\n", out);
	fprintf(out, "control %s\n", o->control[0] ? o->control : "default");
	fprintf(out, "control-group %s\n", o->control_group[0] ? o->control_group : "none");
	fprintf(out, "pidfile %s\n", o->pidfile[0] ? o->pidfile : "default");
	fprintf(out, "metrics-file %s\n", o->metrics[0] ? o->metrics : "none");
	fprintf(out, "metrics-port %u\n", o->metrics_port);
	fprintf(out, "metrics-address %s\n", inet_ntoa(o->mh.addr));
	fputs("metrics-allow ", out);
	for (uint32_t i = 0; i < o->mh.nallow; i++) {
		struct in_addr a = {o->mh.allow[i].addr};

		fprintf(out, "%s%s/%d", i ? "," : "", inet_ntoa(a),
			__builtin_popcount(o->mh.allow[i].mask));
	}
	fputs(o->mh.nallow ? "\n" : "loopback\n", out);
	if (feats)
		feat_startup_print(out);
}

/* Why a setting of restart_settings cannot change while running. */
static const char *restart_why(const char *name)
{
	static const struct {
		const char *name, *why;
	} why[] = {
		{"device", "the devices are opened at start"},
		{"roce", "the devices are opened at start"},
		{"workers", "the engine sized its workers and channel pairs at start"},
		{"cpus", "the workers are pinned at start"},
		{"idle", "the workers read it at start"},
		{"control-cpu", "the control thread is pinned at start"},
		{"peer", "the peers' addresses are set up at start"},
		{"control", "the console socket is bound at start"},
		{"control-group", "the console socket is bound at start"},
		{"pidfile", "the pid file is locked at start"},
		{"metrics-file", "the metrics file is opened at start"},
		{"metrics-port", "the metrics listener is bound at start"},
		{"metrics-address", "the metrics listener is bound at start"},
		{"metrics-allow", "the metrics listener reads it at start"},
	};

	if (!strncmp(name, "feature ", 8))
		return FEAT_RESTART_WHY;
	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++)
		if (!strcmp(why[i].name, name))
			return why[i].why;
	return "read at start";
}

/* Split a "name value" line of restart_settings; "feature X V" keeps "feature X" whole. */
static bool restart_split(char *line, char **name, char **value)
{
	char *sp = strchr(line, ' ');

	if (sp && !strncmp(line, "feature ", 8))
		sp = strchr(sp + 1, ' ');
	if (!sp)
		return false;
	*sp = 0;
	*name = line;
	*value = sp + 1;
	return true;
}

/*
 * Compare two restart_settings texts: "needs a restart: NAME OLD -> NEW (why)" for each
 * setting whose value differs, a setting missing from old counted as unknown. Returns
 * the number of differences.
 */
static unsigned restart_diff(const char *old, const char *new, FILE *out)
{
	char *o = strdup(old), *n = strdup(new), *save = NULL, *line;
	unsigned diffs = 0;

	if (!o || !n) {
		free(o);
		free(n);
		fprintf(out, "needs a restart: unknown (out of memory)\n");
		return 1;
	}
	for (line = strtok_r(n, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *name, *value, *osave = NULL, *ol, *was = NULL, *oc = strdup(o);

		if (!oc || !restart_split(line, &name, &value)) {
			free(oc);
			continue;
		}
		for (ol = strtok_r(oc, "\n", &osave); ol && !was;
		     ol = strtok_r(NULL, "\n", &osave)) {
			char *on, *ov;

			if (restart_split(ol, &on, &ov) && !strcmp(on, name))
				was = ov;
		}
		if (!was || strcmp(was, value)) {
			fprintf(out, "needs a restart: %s %s -> %s (%s)\n", name,
				was ? was : "(not in the running configuration)", value,
				restart_why(name));
			diffs++;
		}
		free(oc);
	}
	free(o);
	free(n);
	return diffs;
}

/* restart_settings into a string (caller frees), NULL when out of memory. */
static char *restart_text(const struct bridge_cfg *c, const struct opts *o, bool feats)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	restart_settings(f, c, o, feats);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The console's config: the running bridge's restart settings (ctl.config). */
static int config_print(struct ctl *c, FILE *out)
{
	(void)c;
	restart_settings(out, &live.given, &live.first, true);
	return 0;
}

/*
 * --check --running-config FILE: the new configuration's restart settings against those
 * of a running bridge (FILE: what `bcom config` printed, "-": standard input). Prints a
 * "needs a restart: ..." line per difference, or that a reload applies it. Returns the
 * exit status: 0 (a reload is enough), 3 (a restart is needed), 1 (FILE unreadable).
 */
static int check_running(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *old = NULL, *new;
	size_t cap = 0, len = 0, n;
	char chunk[4096];
	unsigned diffs;

	if (!f) {
		fprintf(stderr, "ib2roce: --running-config %s: %s\n", path, strerror(errno));
		return 1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		char *b = realloc(old, cap = len + n + 1);

		if (!b)
			break;
		old = b;
		memcpy(old + len, chunk, n);
		len += n;
		old[len] = 0;
	}
	if (f != stdin)
		fclose(f);
	if (!old || !strstr(old, "workers ")) {
		fprintf(stderr,
			"ib2roce: --running-config %s: no 'workers' line: expected what `bcom "
			"config` prints\n",
			path);
		free(old);
		return 1;
	}
	new = restart_text(&live.given, &live.first, true);
	diffs = new ? restart_diff(old, new, stdout) : 1;
	if (!diffs)
		printf("a reload applies it: no setting needs a restart\n");
	(void)cap;
	free(old);
	free(new);
	return diffs ? 3 : 0;
}

/*
 * Read the configuration again: a first pass validates everything and changes nothing
 * (an error leaves the bridge as it was); a setting that needs a restart (a device, the
 * workers, CPUs, a start-up-only feature: restart_settings) refuses the whole reload,
 * each named with old -> new and why; otherwise the second pass applies runtime
 * features (each change noted old -> new); then the groups: those no longer configured
 * are left, new ones joined, changed ones (direction, port, format, class) left and
 * joined again. The notes go to out (the log for SIGHUP, the reply and the log for the
 * console). Returns 0, or -EINVAL when refused or a change failed.
 */
static int reload(struct ctl *c, FILE *out)
{
	struct opts *o = live.o;
	struct bridge_cfg shadow;
	struct opts r = {0};
	char err[OPT_ERR_LEN];
	uint32_t added = 0, removed = 0, failed = 0;
	int ret;

	char *was = NULL, *now = NULL;
	unsigned restarts;

	feat_reload_mode(true, true, out);
	ret = reparse(&shadow, &r, err, sizeof(err));
	feat_reload_mode(false, false, NULL);
	if (ret) {
		fprintf(out, "%s; nothing changed\n", err);
		ret = -ECANCELED; /* refused (ctl_reload) */
		goto done;
	}
	/* Settings the engine took at start: any change refuses the whole reload, so the
	 * running configuration stays one that a restart would also give (live.given: what
	 * was given, defaults filled in later are not in shadow either). */
	restarts = feat_reload_restarts();
	was = restart_text(&live.given, &live.first, false);
	now = restart_text(&shadow, &r, false);
	restarts += was && now ? restart_diff(was, now, out) : 1;
	free(was);
	free(now);
	if (restarts) {
		fprintf(out,
			"reload refused: %u setting%s need%s a restart; nothing changed (restart "
			"the service to apply the file)\n",
			restarts, restarts == 1 ? "" : "s", restarts == 1 ? "s" : "");
		ret = -ECANCELED; /* refused (ctl_reload) */
		goto done;
	}
	free_want(&r);
	feat_reload_mode(true, false, out);
	ret = reparse(&shadow, &r, err, sizeof(err));
	feat_reload_mode(false, false, NULL);
	if (ret) { /* the files changed between the two passes */
		fprintf(out, "%s\n", err);
		ret = -ECANCELED; /* nothing changed either: refused */
		goto done;
	}
	for (uint32_t i = 0; i < o->br->ngroups;) {
		struct group *g = o->br->groups[i];
		bool keep = false;

		for (uint32_t k = 0; k < r.nwant && !keep; k++)
			if (r.want[k] && same_group(g, r.want[k])) {
				/* A new weight counts for the groups placed from now on; this
				 * one stays on its pair. The spec (control thread) says it. */
				g->weight = r.want[k]->weight;
				memcpy(g->spec, r.want[k]->spec, sizeof(g->spec));
				keep = true;
			}
		if (keep) {
			i++;
			continue;
		}
		fprintf(out, "leaving %s\n", g->spec);
		if (ctl_group_remove(c, g->spec, err, sizeof(err))) {
			fprintf(out, "%s\n", err);
			i++;
			failed++;
			continue;
		}
		removed++;
	}
	for (uint32_t k = 0; k < r.nwant; k++) {
		struct group *w = r.want[k];
		bool have = false;

		for (uint32_t i = 0; i < o->br->ngroups && !have; i++)
			have = same_group(o->br->groups[i], w);
		if (have)
			continue;
		r.want[k] = NULL; /* ctl_group_insert owns it now */
		fprintf(out, "joining %s (%s)\n", w->spec, group_dir_name[w->dir]);
		if (ctl_group_insert(c, w, err, sizeof(err))) {
			fprintf(out, "%s\n", err);
			failed++;
			continue;
		}
		added++;
	}
	fprintf(out, "%u group%s added, %u removed%s\n", added, added == 1 ? "" : "s", removed,
		failed ? ", some changes failed" : "");
	ret = failed ? -EINVAL : 0;
done:
	free_want(&r);
	live.o = o;
	return ret;
}

/* ---- Start-up ---- */

/* Copy the features the engine reads at start-up into its configuration. */
static void cfg_from_features(struct bridge *br)
{
	br->cfg.nbufs = (uint32_t)atomic_load(&f_buffers);
	br->cfg.huge = atomic_load(&f_huge);
	br->cfg.mcqp = (uint32_t)atomic_load(&f_mcqp);
	br->cfg.max_senders = (uint32_t)atomic_load(&f_senders);
	br->cfg.backlog = (uint32_t)atomic_load(&f_backlog);
	br->cfg.rq_depth = (uint32_t)atomic_load(&f_rq);
	br->cfg.sq_depth = (uint32_t)atomic_load(&f_sq);
	br->cfg.sig_every = (uint32_t)atomic_load(&f_sig);
	br->cfg.allow_foreign = atomic_load(&f_foreign) != 0;
	if (br->cfg.sig_every > br->cfg.sq_depth / 2)
		br->cfg.sig_every = br->cfg.sq_depth / 2;
}

/*
 * The pair of each configured group: the heaviest groups first (their weight, "#w=N";
 * stable, so equal weights keep the command line's order), each on the worker with the
 * least weight so far that has a pair with room (mcqp groups), on that worker's pair with
 * the fewest groups (pair k belongs to worker k % nworkers). With every weight 1 this is
 * the round-robin i % npairs. bridge_build made enough pairs for the count.
 */
static int assign_pairs(struct bridge *br)
{
	uint32_t n = br->ngroups, nw = br->nworkers, *ord = calloc(n ? n : 1, sizeof(*ord));
	uint32_t *cnt = calloc(br->npairs, sizeof(*cnt));
	uint64_t *wload = calloc(nw, sizeof(*wload));

	if (!ord || !cnt || !wload) {
		free(ord);
		free(cnt);
		free(wload);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) { /* insertion sort: stable, by weight descending */
		uint32_t j = i;

		while (j && br->groups[ord[j - 1]]->weight < br->groups[i]->weight) {
			ord[j] = ord[j - 1];
			j--;
		}
		ord[j] = i;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct group *g = br->groups[ord[i]];
		uint32_t best = UINT32_MAX;

		for (uint32_t k = 0; k < br->npairs; k++) {
			if (cnt[k] >= br->cfg.mcqp)
				continue;
			if (best == UINT32_MAX || wload[k % nw] < wload[best % nw] ||
			    (k % nw == best % nw && cnt[k] < cnt[best]))
				best = k;
		}
		if (best == UINT32_MAX) { /* bridge_build counted: not reached */
			best = ord[i] % br->npairs;
		}
		g->pair = best;
		cnt[best]++;
		wload[best % nw] += g->weight;
	}
	free(ord);
	free(cnt);
	free(wload);
	return 0;
}

/* Publish the configured groups on their channel pairs (before the workers run). */
static int place_groups(struct bridge *br, uint32_t *npub)
{
	if (assign_pairs(br)) {
		log_err("placing the groups: out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < br->ngroups; i++) {
		struct group *g = br->groups[i];

		g->out_chan[SIDE_IB] = br->sd[SIDE_IB].chan[g->pair];
		g->out_chan[SIDE_ROCE] = br->sd[SIDE_ROCE].chan[g->pair];
		group_mgid_ib(g, br->sd[SIDE_IB].pkey, &g->mgid[SIDE_IB]);
		group_mgid_roce(g, &g->mgid[SIDE_ROCE]);
		if (group_publish(br, g)) {
			log_err("group %s: MGID already used by another group", g->spec);
			return -EEXIST;
		}
		(*npub)++;
	}
	return 0;
}

/* ---- Placement (control/placement.c) ---- */

/* The plan's input: options, the opened devices (or only their names), the groups. */
static void place_input(const struct opts *o, const struct bridge *br, struct place_in *in)
{
	memset(in, 0, sizeof(*in));
	in->nworkers = br->cfg.nworkers;
	in->cpus = br->cfg.cpus;
	in->ncpus = br->cfg.ncpus;
	in->control_cpu = o->control_cpu;
	in->allowed = o->allowed_cpus[0] ? o->allowed_cpus : NULL;
	in->affinity = o->affinity_cpus[0] ? o->affinity_cpus : NULL;
	in->oversubscribe = atomic_load(&f_oversub) != 0;
	in->rt_prio = (int)atomic_load(&f_rt);
	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];

		in->nic[s] = sd->ctx ? sd->dev : s == SIDE_IB ? br->cfg.ib_dev : br->cfg.roce_dev;
		in->ibdev_path[s] = sd->ctx ? sd->ctx->device->ibdev_path : NULL;
		for (uint32_t i = 0; i < br->ngroups; i++)
			in->rx_groups[s] += group_dir_rx(br->groups[i]->dir, (enum side)s);
	}
}

static void place_apply(const struct placement *pl, struct bridge_cfg *cfg)
{
	_Static_assert(PLACE_MAX_WORKERS <= sizeof(cfg->wcpu) / sizeof(cfg->wcpu[0]) &&
			       PLACE_MAX_WORKERS <= sizeof(cfg->wnode) / sizeof(cfg->wnode[0]),
		       "a plan's workers fit the engine's configuration");
	cfg->placed = true;
	cfg->node = pl->node;
	cfg->rt_prio = pl->rt_prio;
	for (uint32_t i = 0; i < pl->nworkers; i++) {
		cfg->wcpu[i] = pl->w[i].cpu;
		cfg->wnode[i] = pl->w[i].node >= 0 ? pl->w[i].node : pl->node;
	}
}

/* The plan in the log: one line per worker and for the control thread. */
static void place_log(const struct placement *pl, const struct bridge *br)
{
	char line[256];

	log_info("placement: %s; allowed CPUs %s; housekeeping CPUs %s; isolated CPUs %s", pl->topo,
		 pl->allowed, pl->housekeeping, pl->isolated);
	log_info("NICs: IB %s; RoCE %s", pl->nic[SIDE_IB], pl->nic[SIDE_ROCE]);
	log_info("workers' and pool's node: %s", pl->node_why);
	for (uint32_t i = 0; i < pl->nworkers; i++) {
		placement_thread_line(&pl->w[i], line, sizeof(line));
		log_info("worker %u: %s; %u channel%s%s", i, line, br->workers[i].nchan,
			 br->workers[i].nchan == 1 ? "" : "s", pl->rt_prio ? "; SCHED_FIFO" : "");
	}
	placement_thread_line(&pl->control, line, sizeof(line));
	log_info("control thread: %s", line);
	for (uint32_t i = 0; i < pl->nidle; i++)
		log_info("idle %s", pl->idle[i]);
	for (uint32_t i = 0; i < pl->nwarn; i++)
		log_warn("placement: %s", pl->warn[i]);
}

/*
 * --check --show-placement: open the devices to learn their sysfs directories, or, for a
 * named device the topology (HWLOC_XMLFILE) holds as an OpenFabrics OS device, take its
 * locality from there without opening it; print the plan. Pins and starts nothing.
 * Returns the exit status: 0, 1 (a device, the topology), 2 (the options).
 */
static int dry_run_placement(struct opts *o, struct bridge *br)
{
	struct placement pl;
	struct place_in in;
	char err[OPT_ERR_LEN];
	int r;

	for (int s = 0; s < NSIDES; s++) {
		const char *dev = s == SIDE_IB ? br->cfg.ib_dev : br->cfg.roce_dev;

		r = side_open(&br->sd[s], (enum side)s, dev,
			      s == SIDE_IB ? br->cfg.ib_port : br->cfg.roce_port, err, sizeof(err));
		if (r && !(dev[0] && placement_topology_has_nic(dev))) {
			fprintf(stderr, "ib2roce: %s\n", err);
			return 1;
		}
	}
	place_input(o, br, &in);
	r = placement_plan(&in, &pl, err, sizeof(err));
	if (r)
		fprintf(stderr, "ib2roce: %s\n", err);
	else
		placement_print(&pl, stdout);
	placement_fini(&pl);
	return !r ? 0 : r == -EINVAL ? 2 : 1;
}

/* Bytes per pool buffer: engine/setup.c's BR_BUF_SIZE (40-byte header + 4096 MTU). */
#define TUNE_BUF_BYTES 4160

/*
 * --tune-check: the tuning report for the configured bridge, then exit (tune.h: 0 all
 * PASS, 1 some WARN, 3 some FAIL). The NICs are opened as the bridge would open them;
 * the worker and control CPUs are the placement plan's (control/placement.c), so the
 * report judges the CPUs the bridge would use; the pool is the buffers feature's size.
 * A plan that cannot be made (bad --cpus) is the options' error: exit 2.
 */
static int tune_check(struct opts *o, struct bridge *br)
{
	const struct bridge_cfg *c = &br->cfg;
	struct tune_input in;
	struct tune_report rep;
	struct placement pl;
	struct place_in pin;
	int status, r;
	char err[OPT_ERR_LEN];

	tune_input_init(&in);
	in.pool_bytes = (uint64_t)c->nbufs * TUNE_BUF_BYTES;
	urcu_qsbr_register_thread();
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];
		const char *dev = s == SIDE_IB ? c->ib_dev : c->roce_dev;

		if (side_open(sd, (enum side)s, dev, s == SIDE_IB ? c->ib_port : c->roce_port, err,
			      sizeof(err)))
			tune_input_add_nic(&in, dev[0] ? dev : side_name[s], NULL, err);
		else
			tune_input_add_nic(&in, sd->dev, sd->ctx->device->ibdev_path, NULL);
	}
	memset(&pl, 0, sizeof(pl));
	if (tune_root()[0]) {
		/* Another host's snapshot: its workers are the --cpus given, verbatim (a plan
		 * is made against this machine's topology and affinity, not that host's). */
		for (uint32_t i = 0; i < c->nworkers; i++) {
			if (c->ncpus)
				CPU_SET(c->cpus[i % c->ncpus], &in.workers);
			else
				in.workers_unknown = true;
		}
	} else {
		place_input(o, br, &pin);
		r = placement_plan(&pin, &pl, err, sizeof(err));
		if (r) {
			fprintf(stderr, "ib2roce: %s\n", err);
			status = r == -EINVAL ? 2 : 1;
			goto out;
		}
		for (uint32_t i = 0; i < pl.nworkers; i++)
			if (pl.w[i].cpu >= 0)
				CPU_SET(pl.w[i].cpu, &in.workers);
		if (pl.control.cpu >= 0) {
			CPU_ZERO(&in.control);
			CPU_SET(pl.control.cpu, &in.control);
		}
	}
	if (tune_report_build(&in, &rep)) {
		fprintf(stderr, "ib2roce: tuning report: out of memory\n");
		status = 1;
	} else {
		tune_report_print(&rep, stdout);
		status = tune_report_exit_status(&rep);
		tune_report_free(&rep);
	}
out:
	placement_fini(&pl);
	bridge_destroy(br);
	urcu_qsbr_unregister_thread();
	return status;
}

/*
 * --enable mlock: lock every page, present and future (worker stacks, rings), so the
 * data path never faults. Without CAP_IPC_LOCK the kernel caps it at RLIMIT_MEMLOCK;
 * the error says so and how to raise it. 0 or -errno.
 */
static int lock_memory(void)
{
	struct rlimit rl;
	int e;

	if (!mlockall(MCL_CURRENT | MCL_FUTURE))
		return 0;
	e = errno;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		log_err("mlock: mlockall: %s", strerror(e));
	else
		log_err("mlock: mlockall: %s: RLIMIT_MEMLOCK is %llu KiB, less than the bridge "
			"uses (the buffer pool alone is %u buffers); raise it (systemd: "
			"LimitMEMLOCK=infinity; shell: ulimit -l unlimited) or grant CAP_IPC_LOCK, "
			"or run without -e mlock",
			strerror(e), (unsigned long long)rl.rlim_cur / 1024,
			(unsigned)atomic_load(&f_buffers));
	return -e;
}

/*
 * The last metrics file, with ib2roce_up 0 and the final counters: kept, not removed, so
 * that monitoring sees a clean stop (up 0) apart from a crash or kill -9 (the file stays
 * at up 1 and its mtime goes stale: docs/metrics.md, monitoring/ib2roce.rules.yml).
 */
static void write_final_metrics(struct ctl *ctl)
{
	char err[256];

	if (!ctl->metrics_path)
		return;
	ctl->metrics_final = true;
	if (metrics_write(ctl, ctl->metrics_path, err, sizeof(err)))
		log_warn("%s", err);
}

static void print_final(struct ctl *ctl, bool to_log)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!to_log) {
		show_final(ctl, stdout);
		return;
	}
	f = open_memstream(&buf, &len);
	if (!f)
		return;
	show_final(ctl, f);
	fclose(f);
	log_text(LOG_NOTICE, "", buf); /* in the background stdout goes nowhere */
	free(buf);
}

/*
 * An invalid configuration ends the start with exit status 2, which the unit's
 * RestartPreventExitStatus=2 keeps systemd from retrying (a restart reads the same
 * file). The message reaches the journal on stderr or through the log; under systemd
 * STATUS= says it too, so that `systemctl status` shows why the service is down.
 */
static int config_invalid(const char *msg)
{
	if (getenv("NOTIFY_SOCKET"))
		sd_notifyf(0, "STATUS=configuration invalid (exit status 2, not restarted): %s",
			   msg);
	return 2;
}

int main(int argc, char **argv)
{
	static struct bridge br;
	static struct ctl ctl;
	static struct placement pl;
	struct place_in pin;
	struct opts o = {.br = &br,
			 .ctl = &ctl,
			 .cfg = &br.cfg,
			 .gd = {.fmt = MGID_RDMA, .port = DEFAULT_PORT, .tos = -1},
			 .control_cpu = -1};
	struct console_cfg ccfg = {.listen_fd = -1, .admit_gid = (gid_t)-1};
	static struct capture_cfg capcfg; /* the options keep pointers into it */
	char err[OPT_ERR_LEN], pidpath[256];
	int report = -1, pidfd = -1;
	uint32_t npub = 0;
	bool daemon_mode, background_log;
	struct ha *ha = NULL;
	int r, status = 0;

	metrics_http_cfg_init(&o.mh);
	/*
	 * In every mode (issue 21 D6): a reader of stderr or stdout that goes away (--debug
	 * piped into a pager, --systemd without a journal: stderr is the fallback) must cost
	 * the messages, counted in log_dropped (log.c), not the bridge with exit 141, no
	 * final counters and no leaves. Sockets use MSG_NOSIGNAL besides.
	 */
	signal(SIGPIPE, SIG_IGN);
	cfg_defaults(&br.cfg);
	o.check = argv_has_check(argc, argv);
	r = opt_register_builtin(stdout, "ib2roce");
	if (!r)
		r = register_options(&o, &ctl, &br);
	if (!r)
		r = tune_register();
	if (!r)
		r = capture_opts_register(&capcfg);
	if (!r && !(ha = ha_opts_register()))
		r = -errno;
	if (r) {
		fprintf(stderr, "ib2roce: option registry: %s\n", strerror(-r));
		return 1;
	}
	r = opt_parse_argv(argc, argv, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "ib2roce: %s\n", err);
		return config_invalid(err);
	}
	if (o.gd.list_fmts) {
		for (int f = 0; f < MGID_NFMT; f++)
			printf("%s\n", mgid_fmt_name[f]);
		return 0;
	}
	if (r == OPT_EXIT)
		return 0;
	if (stall_check(&br, atomic_load(&br.stall), err, sizeof(err))) {
		fprintf(stderr, "ib2roce: feature 'stall': %s\n", err);
		return config_invalid(err);
	}
	if (o.verbose)
		atomic_store(&log_level, LOG_DEBUG);
	live.given = br.cfg;
	live.first = o;
	cfg_from_features(&br);
	if (o.tune_check) {
		status = tune_check(&o, &br);
		tune_release();
		return status;
	}
	if (!o.control[0] && control_default_path(o.control, sizeof(o.control))) {
		fprintf(stderr, "ib2roce: default control socket path too long\n");
		return 2;
	}
	if (!o.pidfile[0] && control_pid_path(o.control, o.pidfile, sizeof(o.pidfile))) {
		fprintf(stderr, "ib2roce: pid file path too long\n");
		return 2;
	}
	snprintf(pidpath, sizeof(pidpath), "%s", o.pidfile);
	if (o.control_group[0]) {
		sysgroup_lookup(o.control_group, &ccfg.admit_gid);
		ccfg.set_group = true;
	}
	ctl.join_timeout_ms = (uint64_t)atomic_load(&f_join_timeout) * 1000;
	ctl.def_fmt = o.gd.fmt;
	ctl.def_port = o.gd.port;
	ctl.def_tos = o.gd.tos;
	ctl.metrics_path = o.metrics[0] ? o.metrics : NULL;
	ctl.reload = reload;
	ctl.config = config_print;
	live.argc = argc;
	live.argv = argv;
	live.o = &o;
	live.cwd = open(".", O_PATH | O_CLOEXEC);

	ctl.sd = !o.check && (o.systemd || getenv("NOTIFY_SOCKET"));
	daemon_mode = !o.check && !o.debug && !ctl.sd;
	background_log = daemon_mode || (ctl.sd && !o.debug);
	if (!br.ngroups)
		log_warn("no multicast groups given: nothing to bridge");
	if (o.show_placement) {
		urcu_qsbr_register_thread();
		status = dry_run_placement(&o, &br);
		goto out_engine;
	}
	if (daemon_mode) {
		report = daemon_start(err, sizeof(err));
		if (report < 0) {
			fprintf(stderr, "ib2roce: %s\n", err);
			return 1;
		}
	}
	if (ctl.sd && !o.debug)
		log_open(LOG_TO_JOURNAL);
	if (!o.check) {
		/* The socket's directory (created once, 0750/0700) also holds the default pid
		 * file; a --pidfile elsewhere must name an existing directory. */
		if (control_make_dir(o.control, err, sizeof(err))) {
			log_err("%s", err);
			status = 1;
			goto out;
		}
		pidfd = pidfile_lock(pidpath, err, sizeof(err));
		if (pidfd < 0) {
			log_err("%s", err);
			status = 1;
			goto out;
		}
	}

	urcu_qsbr_register_thread();
	r = side_open(&br.sd[SIDE_IB], SIDE_IB, br.cfg.ib_dev, br.cfg.ib_port, err, sizeof(err));
	if (!r)
		r = side_open(&br.sd[SIDE_ROCE], SIDE_ROCE, br.cfg.roce_dev, br.cfg.roce_port, err,
			      sizeof(err));
	if (!r) {
		place_input(&o, &br, &pin);
		r = placement_plan(&pin, &pl, err, sizeof(err));
		if (r) {
			log_err("%s", err);
			status = r == -EINVAL ? config_invalid(err) : 1;
			goto out_engine;
		}
		place_apply(&pl, &br.cfg);
		ctl.place = &pl;
		/* Threads started from here on (urcu's, libraries') inherit this CPU. */
		if (!o.check && (r = placement_pin_self(pl.control.cpu)))
			log_warn("control thread: pinning to CPU %d: %s", pl.control.cpu,
				 strerror(-r));
		r = bridge_build(&br, br.ngroups, err, sizeof(err));
	}
	if (r) {
		log_err("%s", err);
		/* a pool too small for the options given */
		status = r == -ENOBUFS ? config_invalid(err) : 1;
		goto out_engine;
	}
	for (int s = 0; s < NSIDES; s++)
		if (!br.sd[s].srq)
			log_info("%s %s: no shared receive queues (max_srq 0): a receive queue "
				 "per QP",
				 side_name[s], br.sd[s].dev);
	if (br.cfg.rq_depth < br.rq_asked) {
		uint32_t nq = 0, nw = br.nworkers;

		for (int s = 0; s < NSIDES; s++)
			nq += br.sd[s].srq ? nw : br.npairs;
		log_info("receive queues: %u x %u buffers (rqdepth=%u does not fit in "
			 "buffers=%u)",
			 nq, br.cfg.rq_depth, br.rq_asked, br.cfg.nbufs);
	}
	log_info("IB %s:%u (lid %u) <-> RoCE %s:%u (%s), %u channel pair%s, %u worker%s%s",
		 br.sd[0].dev, br.sd[0].port, br.sd[0].pattr.lid, br.sd[1].dev, br.sd[1].port,
		 inet_ntoa(*(struct in_addr *)&br.sd[1].ipv4), br.npairs, br.npairs == 1 ? "" : "s",
		 br.cfg.nworkers, br.cfg.nworkers == 1 ? "" : "s",
		 br.cfg.nworkers ? "" : " (event-driven)");
	place_log(&pl, &br);
	if (!br.sd[SIDE_ROCE].netmask)
		log_info("RoCE %s: no interface holds %s, source subnet not checked", br.sd[1].dev,
			 inet_ntoa(*(struct in_addr *)&br.sd[1].ipv4));
	if (place_groups(&br, &npub)) {
		status = 2;
		goto out_engine;
	}
	if (o.check) {
		printf("configuration valid: IB %s:%u <-> RoCE %s:%u, %u group%s, %u channel "
		       "pair%s, %u worker%s\n",
		       br.sd[0].dev, br.sd[0].port, br.sd[1].dev, br.sd[1].port, br.ngroups,
		       br.ngroups == 1 ? "" : "s", br.npairs, br.npairs == 1 ? "" : "s",
		       br.cfg.nworkers, br.cfg.nworkers == 1 ? "" : "s");
		printf("receive queues: IB %s, RoCE %s, depth %u; buffers=%u, at least %u\n",
		       br.sd[0].srq ? "one SRQ per worker" : "one per QP",
		       br.sd[1].srq ? "one SRQ per worker" : "one per QP", br.cfg.rq_depth,
		       br.cfg.nbufs, br.pool_min);
		if (o.running_config[0])
			status = check_running(o.running_config);
		goto out_engine;
	}
	r = ctl_init(&ctl, &br, err, sizeof(err));
	if (r) {
		log_err("%s", err);
		status = 1;
		goto out_ctl;
	}
	ctl.ha = ha;
	r = ha_start(ha, &ctl, err, sizeof(err));
	if (r) {
		log_err("%s", err);
		status = 2;
		goto out_ctl;
	}
	/* The modules register their commands, timers and hooks (loop.h). */
	r = console_init(&ctl);
	if (!r)
		r = show_init(&ctl);
	if (!r)
		r = health_init(&ctl);
	if (!r)
		r = notify_init(&ctl);
	if (!r)
		r = report_init(&ctl);
	if (r) {
		log_err("registering the modules: %s", strerror(-r));
		status = 1;
		goto out_ctl;
	}
	ccfg.path = o.control;
	if (o.debug) {
		/* The terminal, or a pipe or FIFO (scripts); not /dev/null or a file. */
		struct stat st;

		ccfg.tty =
			isatty(STDIN_FILENO) || (!fstat(STDIN_FILENO, &st) && S_ISFIFO(st.st_mode));
	}
	if (sd_listen_fds(1) == 1 &&
	    sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0)
		ccfg.listen_fd = SD_LISTEN_FDS_START;
	if (!console_open(&ctl, &ccfg, err, sizeof(err))) {
		log_err("%s", err);
		status = 1;
		goto out_ctl;
	}
	log_info("console on %s%s", ccfg.listen_fd >= 0 ? "the socket from systemd, " : "",
		 o.control);
	o.mh.port = (uint16_t)o.metrics_port;
	if (o.metrics_port && !metrics_http_open(&ctl, &o.mh, err, sizeof(err))) {
		log_err("%s", err);
		status = 1;
		goto out_ctl;
	}
	if (atomic_load(&f_mlock) && lock_memory()) {
		status = 1;
		goto out_ctl;
	}
	capcfg.mlock = atomic_load(&f_mlock);
	ctl.cap = capture_new(&ctl, &capcfg);
	if (!ctl.cap) {
		log_err("capture: %s", strerror(errno));
		status = 1;
		goto out_ctl;
	}
	if (br.cfg.nworkers && (r = workers_start(&br))) {
		log_err("starting workers: %s%s", strerror(-r),
			r == -EPERM && br.cfg.rt_prio
				? " (rt: SCHED_FIFO needs CAP_SYS_NICE or RLIMIT_RTPRIO)"
				: "");
		status = 1;
		goto out_ctl;
	}
	feat_running_set(true);
	if (capcfg.file[0]) {
		char args[sizeof(capcfg.file)];

		snprintf(args, sizeof(args), "%s", capcfg.file);
		if (capture_start(ctl.cap, args, err, sizeof(err)) < 0) {
			log_err("%s", err);
			status = 1;
			loop_stop(); /* ctl_run returns at once: leave and stop as usual */
		}
	}
	ctl_start_joins(&ctl);
	if (report >= 0) {
		/* Started: from here on the daemon logs to syslog. */
		log_open(LOG_TO_SYSLOG);
		daemon_report(report, 0);
		report = -1;
	}
	/* From here to the end of the loop a blocked log output cannot stall it (log.h). */
	if ((r = log_async_start()))
		log_warn("log writer thread: %s: logging from the control thread", strerror(-r));
	r = ctl_run(&ctl);
	log_async_stop();
	if (r)
		status = 1;
	if (br.cfg.nworkers)
		workers_stop(&br);
	/* Groups left at run time fold their counters in after a grace period. */
	urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	print_final(&ctl, background_log);
	write_final_metrics(&ctl);
	ctl_leave_all(&ctl);
	npub = br.ngroups; /* runtime joins and leaves changed the set; all are published */
out_ctl:
	capture_free(ctl.cap); /* the workers stopped: its rings are free */
	ctl.cap = NULL;
	metrics_http_close(ctl.mh);
	console_close(ctl.con);
	ctl_fini(&ctl);
out_engine:
	for (uint32_t i = 0; i < npub; i++)
		group_unpublish(&br, br.groups[i]);
	urcu_qsbr_thread_offline();
	/* Address handles wait three grace periods (ctl.c): callbacks queue callbacks. */
	for (int i = 0; i < 3; i++)
		urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	bridge_destroy(&br);
	for (uint32_t i = 0; i < br.ngroups; i++)
		free(br.groups[i]);
	free(br.groups);
	urcu_qsbr_unregister_thread();
out:
	if (pidfd >= 0)
		pidfile_unlock(pidfd, pidpath);
	if (report >= 0)
		daemon_report(report, status);
	if (live.cwd >= 0)
		close(live.cwd);
	tune_release();
	placement_fini(&pl);
	ha_free(ha);
	return status;
}
