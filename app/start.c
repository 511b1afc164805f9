// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The start-up steps of main (app.h): features into the engine's settings, channel pairs
 * and groups on them, the worker placement, the tuning check, locking memory, and the
 * final counters and metrics at shutdown.
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
#include "groups.h"
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

/* ---- Start-up ---- */

/* Copy the features the engine reads at start-up into its configuration. */
void cfg_from_features(struct bridge *br)
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
	/* The Q_Key each pair's channels hold so far (0: no group yet): a QP has one. */
	uint32_t *kq = calloc(2 * (size_t)br->npairs, sizeof(*kq));

	if (!ord || !cnt || !wload || !kq) {
		free(ord);
		free(cnt);
		free(wload);
		free(kq);
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
	/* Each Q_Key combination first reserves the pairs its groups need (ceil(n / mcqp),
	 * consecutive pairs: over the workers in turn), in the order its first group comes;
	 * bridge_build counted them. A single combination (the usual case) reserves its
	 * share and may use the rest as before. */
	{
		uint32_t next = 0;

		for (uint32_t i = 0; i < n; i++) {
			const struct group *g = br->groups[ord[i]];
			uint32_t qi = group_qkey(g, SIDE_IB), qr = group_qkey(g, SIDE_ROCE),
				 cnt_c = 0;
			bool seen = false;

			for (uint32_t k = 0; k < next && !seen; k++)
				seen = kq[2 * k] == qi && kq[2 * k + 1] == qr;
			if (seen)
				continue;
			for (uint32_t j = 0; j < n; j++)
				cnt_c += group_qkey(br->groups[j], SIDE_IB) == qi &&
					 group_qkey(br->groups[j], SIDE_ROCE) == qr;
			for (uint32_t p = 0;
			     p < (cnt_c + br->cfg.mcqp - 1) / br->cfg.mcqp && next < br->npairs;
			     p++, next++) {
				kq[2 * next] = qi;
				kq[2 * next + 1] = qr;
			}
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct group *g = br->groups[ord[i]];
		uint32_t best = UINT32_MAX;

		for (uint32_t k = 0; k < br->npairs; k++) {
			if (cnt[k] >= br->cfg.mcqp)
				continue;
			if ((kq[2 * k] && kq[2 * k] != group_qkey(g, SIDE_IB)) ||
			    (kq[2 * k + 1] && kq[2 * k + 1] != group_qkey(g, SIDE_ROCE)))
				continue; /* the pair holds groups of other Q_Keys */
			if (best == UINT32_MAX || wload[k % nw] < wload[best % nw] ||
			    (k % nw == best % nw && cnt[k] < cnt[best]))
				best = k;
		}
		if (best == UINT32_MAX) {
			/* Groups of several Q_Keys need more pairs than their count: a pair
			 * of the least loaded worker, made now (before the workers run). */
			char why[256];
			uint32_t wmin = 0;
			int r;

			sigset_t ss, old;

			for (uint32_t w = 1; w < nw; w++)
				wmin = wload[w] < wload[wmin] ? w : wmin;
			/* bridge_pair_add retires the old views with call_rcu, whose helper
			 * thread starts on first use with this thread's signal mask: block what
			 * the loop's signalfd takes (loop.c), or a SIGINT could kill us there. */
			sigemptyset(&ss);
			sigaddset(&ss, SIGHUP);
			sigaddset(&ss, SIGINT);
			sigaddset(&ss, SIGTERM);
			pthread_sigmask(SIG_BLOCK, &ss, &old);
			r = bridge_pair_add(br, wmin, why, sizeof(why));
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			if (r < 0) {
				log_err("group %s: no channel pair for Q_Keys 0x%08x/0x%08x: %s",
					g->spec, group_qkey(g, SIDE_IB), group_qkey(g, SIDE_ROCE),
					why);
				free(ord);
				free(cnt);
				free(wload);
				free(kq);
				return r;
			}
			best = (uint32_t)r;
			{
				uint32_t *c2 = realloc(cnt, br->npairs * sizeof(*cnt));
				uint32_t *k2 =
					c2 ? realloc(kq, 2 * (size_t)br->npairs * sizeof(*kq))
					   : NULL;

				if (c2)
					cnt = c2;
				if (k2)
					kq = k2;
				if (!c2 || !k2) {
					free(ord);
					free(cnt);
					free(wload);
					free(kq);
					return -ENOMEM;
				}
				cnt[best] = 0;
				kq[2 * best] = kq[2 * best + 1] = 0;
			}
		}
		g->pair = best;
		cnt[best]++;
		kq[2 * best] = group_qkey(g, SIDE_IB);
		kq[2 * best + 1] = group_qkey(g, SIDE_ROCE);
		wload[best % nw] += g->weight;
	}
	free(ord);
	free(cnt);
	free(wload);
	free(kq);
	return 0;
}

/* Publish the configured groups on their channel pairs (before the workers run). */
int place_groups(struct bridge *br, uint32_t *npub)
{
	char err[OPT_ERR_LEN];
	int r;

	/* A controlled Q_Key the kernel would refuse: the group is refused, with why. */
	for (uint32_t i = 0; i < br->ngroups; i++) {
		if (group_qkey_check(br, br->groups[i], err, sizeof(err))) {
			log_err("%s", err);
			return -EPERM;
		}
	}
	r = assign_pairs(br);
	if (r) {
		if (r == -ENOMEM)
			log_err("placing the groups: out of memory");
		return r;
	}
	for (uint32_t i = 0; i < br->ngroups; i++) {
		struct group *g = br->groups[i];

		g->out_chan[SIDE_IB] = br->sd[SIDE_IB].chan[g->pair];
		g->out_chan[SIDE_ROCE] = br->sd[SIDE_ROCE].chan[g->pair];
		if (group_qkeys_apply(br, g, err, sizeof(err))) {
			log_err("%s", err);
			return -EPERM;
		}
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

/* ---- Placement (host/placement.c) ---- */

/* The plan's input: options, the opened devices (or only their names), the groups. */
void place_input(const struct opts *o, const struct bridge *br, struct place_in *in)
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

void place_apply(const struct placement *pl, struct bridge_cfg *cfg)
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
void place_log(const struct placement *pl, const struct bridge *br)
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
int dry_run_placement(struct opts *o, struct bridge *br)
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
 * the worker and control CPUs are the placement plan's (host/placement.c), so the
 * report judges the CPUs the bridge would use; the pool is the buffers feature's size.
 * A plan that cannot be made (bad --cpus) is the options' error: exit 2.
 */
int tune_check(struct opts *o, struct bridge *br)
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
int lock_memory(void)
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
void write_final_metrics(struct ctl *ctl)
{
	char err[256];

	if (!ctl->metrics_path)
		return;
	ctl->metrics_final = true;
	if (metrics_write(ctl, ctl->metrics_path, err, sizeof(err)))
		log_warn("%s", err);
}

void print_final(struct ctl *ctl, bool to_log)
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
int config_invalid(const char *msg)
{
	if (getenv("NOTIFY_SOCKET"))
		sd_notifyf(0, "STATUS=configuration invalid (exit status 2, not restarted): %s",
			   msg);
	return 2;
}

/* ---- The phases of main (app.h: struct app) ---- */

int app_parse(struct app *a, int argc, char **argv)
{
	char err[OPT_ERR_LEN];
	int r;

	metrics_http_cfg_init(&a->o.mh);
	/*
	 * In every mode (issue 21 D6): a reader of stderr or stdout that goes away (--debug
	 * piped into a pager, --systemd without a journal: stderr is the fallback) must cost
	 * the messages, counted in log_dropped (log.c), not the bridge with exit 141, no
	 * final counters and no leaves. Sockets use MSG_NOSIGNAL besides.
	 */
	signal(SIGPIPE, SIG_IGN);
	cfg_defaults(&a->br.cfg);
	a->o.check = argv_has_check(argc, argv);
	r = opt_register_builtin(stdout, "ib2roce");
	if (!r)
		r = register_options(&a->o, &a->ctl, &a->br);
	if (!r)
		r = tune_register();
	if (!r)
		r = capture_opts_register(&a->capcfg);
	if (!r && !(a->ha = ha_opts_register()))
		r = -errno;
	if (r) {
		fprintf(stderr, "ib2roce: option registry: %s\n", strerror(-r));
		return 1;
	}
	r = opt_parse_argv(argc, argv, err, sizeof(err));
	/* The groups' index serves the parse only (add_group): br->groups changes later. */
	group_index_free(&a->o.gidx);
	if (r < 0) {
		fprintf(stderr, "ib2roce: %s\n", err);
		return config_invalid(err);
	}
	if (a->o.gd.list_fmts) {
		for (int f = 0; f < MGID_NFMT; f++)
			printf("%s\n", mgid_fmt_name[f]);
		return 0;
	}
	if (r == OPT_EXIT)
		return 0;
	/* What ha_start would refuse, refused by --check too (and before the devices). */
	if (ha_check_groups(a->ha, a->br.groups, a->br.ngroups, err, sizeof(err))) {
		fprintf(stderr, "ib2roce: %s\n", err);
		return config_invalid(err);
	}
	if (stall_check(&a->br, atomic_load(&a->br.stall), err, sizeof(err))) {
		fprintf(stderr, "ib2roce: feature 'stall': %s\n", err);
		return config_invalid(err);
	}
	if (a->o.verbose)
		atomic_store(&log_level, LOG_DEBUG);
	live.given = a->br.cfg;
	live.first = a->o;
	cfg_from_features(&a->br);
	if (a->o.tune_check) {
		a->status = tune_check(&a->o, &a->br);
		tune_release();
		return a->status;
	}
	if (!a->o.control[0] && control_default_path(a->o.control, sizeof(a->o.control))) {
		fprintf(stderr, "ib2roce: default control socket path too long\n");
		return 2;
	}
	if (!a->o.pidfile[0] &&
	    control_pid_path(a->o.control, a->o.pidfile, sizeof(a->o.pidfile))) {
		fprintf(stderr, "ib2roce: pid file path too long\n");
		return 2;
	}
	snprintf(a->pidpath, sizeof(a->pidpath), "%s", a->o.pidfile);
	if (a->o.control_group[0]) {
		sysgroup_lookup(a->o.control_group, &a->ccfg.admit_gid);
		a->ccfg.set_group = true;
	}
	a->ctl.join_timeout_ms = (uint64_t)atomic_load(&f_join_timeout) * 1000;
	a->ctl.def_fmt = a->o.gd.fmt;
	a->ctl.def_port = a->o.gd.port;
	a->ctl.def_tos = a->o.gd.tos;
	a->ctl.def_qkey = a->o.gd.qkey;
	a->ctl.metrics_path = a->o.metrics[0] ? a->o.metrics : NULL;
	a->ctl.reload = reload;
	a->ctl.config = config_print;
	live.argc = argc;
	live.argv = argv;
	live.o = &a->o;
	live.cwd = open(".", O_PATH | O_CLOEXEC);

	a->ctl.sd = !a->o.check && (a->o.systemd || getenv("NOTIFY_SOCKET"));
	a->daemon_mode = !a->o.check && !a->o.debug && !a->ctl.sd;
	a->background_log = a->daemon_mode || (a->ctl.sd && !a->o.debug);
	if (!a->br.ngroups)
		log_warn("no multicast groups given: nothing to bridge");
	return -1;
}

int app_detach(struct app *a)
{
	char err[OPT_ERR_LEN];

	if (a->daemon_mode) {
		a->report = daemon_start(err, sizeof(err));
		if (a->report < 0) {
			fprintf(stderr, "ib2roce: %s\n", err);
			a->status = 1;
			return -1;
		}
	}
	if (a->ctl.sd && !a->o.debug)
		log_open(LOG_TO_JOURNAL);
	if (!a->o.check) {
		/* The socket's directory (created once, 0750/0700) also holds the default pid
		 * file; a --pidfile elsewhere must name an existing directory. */
		if (control_make_dir(a->o.control, err, sizeof(err))) {
			log_err("%s", err);
			a->status = 1;
			return -1;
		}
		a->pidfd = pidfile_lock(a->pidpath, err, sizeof(err));
		if (a->pidfd < 0) {
			log_err("%s", err);
			a->status = 1;
			return -1;
		}
	}
	return 0;
}

int app_engine(struct app *a)
{
	char err[OPT_ERR_LEN];
	struct place_in pin;
	int r;

	r = side_open(&a->br.sd[SIDE_IB], SIDE_IB, a->br.cfg.ib_dev, a->br.cfg.ib_port, err,
		      sizeof(err));
	if (!r)
		r = side_open(&a->br.sd[SIDE_ROCE], SIDE_ROCE, a->br.cfg.roce_dev,
			      a->br.cfg.roce_port, err, sizeof(err));
	if (!r) {
		place_input(&a->o, &a->br, &pin);
		r = placement_plan(&pin, &a->pl, err, sizeof(err));
		if (r) {
			log_err("%s", err);
			a->status = r == -EINVAL ? config_invalid(err) : 1;
			return -1;
		}
		place_apply(&a->pl, &a->br.cfg);
		a->ctl.place = &a->pl;
		/* Threads started from here on (urcu's, libraries') inherit this CPU. */
		if (!a->o.check && (r = placement_pin_self(a->pl.control.cpu)))
			log_warn("control thread: pinning to CPU %d: %s", a->pl.control.cpu,
				 strerror(-r));
		r = bridge_build(&a->br, a->br.ngroups, err, sizeof(err));
	}
	if (r) {
		log_err("%s", err);
		/* a pool too small for the options given */
		a->status = r == -ENOBUFS ? config_invalid(err) : 1;
		return -1;
	}
	for (int s = 0; s < NSIDES; s++)
		if (!a->br.sd[s].srq)
			log_info("%s %s: no shared receive queues (max_srq 0): a receive queue "
				 "per QP",
				 side_name[s], a->br.sd[s].dev);
	if (a->br.cfg.rq_depth < a->br.rq_asked) {
		uint32_t nq = 0, nw = a->br.nworkers;

		for (int s = 0; s < NSIDES; s++)
			nq += a->br.sd[s].srq ? nw : a->br.npairs;
		log_info("receive queues: %u x %u buffers (rqdepth=%u does not fit in "
			 "buffers=%u)",
			 nq, a->br.cfg.rq_depth, a->br.rq_asked, a->br.cfg.nbufs);
	}
	log_info("IB %s:%u (lid %u) <-> RoCE %s:%u (%s), %u channel pair%s, %u worker%s%s",
		 a->br.sd[0].dev, a->br.sd[0].port, a->br.sd[0].pattr.lid, a->br.sd[1].dev,
		 a->br.sd[1].port, inet_ntoa(*(struct in_addr *)&a->br.sd[1].ipv4), a->br.npairs,
		 a->br.npairs == 1 ? "" : "s", a->br.cfg.nworkers,
		 a->br.cfg.nworkers == 1 ? "" : "s", a->br.cfg.nworkers ? "" : " (event-driven)");
	place_log(&a->pl, &a->br);
	if (!a->br.sd[SIDE_ROCE].netmask)
		log_info("RoCE %s: no interface holds %s, source subnet not checked",
			 a->br.sd[1].dev, inet_ntoa(*(struct in_addr *)&a->br.sd[1].ipv4));
	if (place_groups(&a->br, &a->npub)) {
		a->status = 2;
		return -1;
	}
	if (a->o.check) {
		printf("configuration valid: IB %s:%u <-> RoCE %s:%u, %u group%s, %u channel "
		       "pair%s, %u worker%s\n",
		       a->br.sd[0].dev, a->br.sd[0].port, a->br.sd[1].dev, a->br.sd[1].port,
		       a->br.ngroups, a->br.ngroups == 1 ? "" : "s", a->br.npairs,
		       a->br.npairs == 1 ? "" : "s", a->br.cfg.nworkers,
		       a->br.cfg.nworkers == 1 ? "" : "s");
		printf("receive queues: IB %s, RoCE %s, depth %u; buffers=%u, at least %u\n",
		       a->br.sd[0].srq ? "one SRQ per worker" : "one per QP",
		       a->br.sd[1].srq ? "one SRQ per worker" : "one per QP", a->br.cfg.rq_depth,
		       a->br.cfg.nbufs, a->br.pool_min);
		if (a->o.running_config[0])
			a->status = check_running(a->o.running_config);
		return -1;
	}
	return 0;
}

int app_control(struct app *a)
{
	char err[OPT_ERR_LEN];
	int r;

	r = ctl_init(&a->ctl, &a->br, err, sizeof(err));
	if (r) {
		log_err("%s", err);
		a->status = 1;
		return -1;
	}
	a->ctl.ha = a->ha;
	r = ha_start(a->ha, &a->ctl, err, sizeof(err));
	if (r) {
		log_err("%s", err);
		a->status = 2;
		return -1;
	}
	/* The modules register their commands, timers and hooks (loop.h). */
	r = console_init(&a->ctl);
	if (!r)
		r = groups_init(&a->ctl);
	if (!r)
		r = show_init(&a->ctl);
	if (!r)
		r = health_init(&a->ctl);
	if (!r)
		r = notify_init(&a->ctl);
	if (!r)
		r = report_init(&a->ctl);
	if (r) {
		log_err("registering the modules: %s", strerror(-r));
		a->status = 1;
		return -1;
	}
	a->ccfg.path = a->o.control;
	if (a->o.debug) {
		/* The terminal, or a pipe or FIFO (scripts); not /dev/null or a file. */
		struct stat st;

		a->ccfg.tty =
			isatty(STDIN_FILENO) || (!fstat(STDIN_FILENO, &st) && S_ISFIFO(st.st_mode));
	}
	if (sd_listen_fds(1) == 1 &&
	    sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0)
		a->ccfg.listen_fd = SD_LISTEN_FDS_START;
	if (!console_open(&a->ctl, &a->ccfg, err, sizeof(err))) {
		log_err("%s", err);
		a->status = 1;
		return -1;
	}
	log_info("console on %s%s", a->ccfg.listen_fd >= 0 ? "the socket from systemd, " : "",
		 a->o.control);
	a->o.mh.port = (uint16_t)a->o.metrics_port;
	if (a->o.metrics_port && !metrics_http_open(&a->ctl, &a->o.mh, err, sizeof(err))) {
		log_err("%s", err);
		a->status = 1;
		return -1;
	}
	if (atomic_load(&f_mlock) && lock_memory()) {
		a->status = 1;
		return -1;
	}
	a->capcfg.mlock = atomic_load(&f_mlock);
	a->ctl.cap = capture_new(&a->ctl, &a->capcfg);
	if (!a->ctl.cap) {
		log_err("capture: %s", strerror(errno));
		a->status = 1;
		return -1;
	}
	if (a->br.cfg.nworkers && (r = workers_start(&a->br))) {
		log_err("starting workers: %s%s", strerror(-r),
			r == -EPERM && a->br.cfg.rt_prio
				? " (rt: SCHED_FIFO needs CAP_SYS_NICE or RLIMIT_RTPRIO)"
				: "");
		a->status = 1;
		return -1;
	}
	feat_running_set(true);
	if (a->capcfg.file[0]) {
		char args[sizeof(a->capcfg.file)];

		snprintf(args, sizeof(args), "%s", a->capcfg.file);
		if (capture_start(a->ctl.cap, args, err, sizeof(err)) < 0) {
			log_err("%s", err);
			a->status = 1;
			loop_stop(); /* ctl_run returns at once: leave and stop as usual */
		}
	}
	ctl_start_joins(&a->ctl);
	return 0;
}

void app_run(struct app *a)
{
	int r;

	if (a->report >= 0) {
		/* Started: from here on the daemon logs to syslog. */
		log_open(LOG_TO_SYSLOG);
		daemon_report(a->report, 0);
		a->report = -1;
	}
	/* From here to the end of the loop a blocked log output cannot stall it (log.h). */
	if ((r = log_async_start()))
		log_warn("log writer thread: %s: logging from the control thread", strerror(-r));
	r = ctl_run(&a->ctl);
	log_async_stop();
	if (r)
		a->status = 1;
	if (a->br.cfg.nworkers)
		workers_stop(&a->br);
	/* Groups left at run time fold their counters in after a grace period. */
	urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	print_final(&a->ctl, a->background_log);
	write_final_metrics(&a->ctl);
	ctl_leave_all(&a->ctl);
	a->npub = a->br.ngroups; /* runtime joins and leaves changed the set; all are published */
}

void app_close_control(struct app *a)
{
	capture_free(a->ctl.cap); /* the workers stopped: its rings are free */
	a->ctl.cap = NULL;
	metrics_http_close(a->ctl.mh);
	console_close(a->ctl.con);
	ctl_fini(&a->ctl);
}

void app_close_engine(struct app *a)
{
	for (uint32_t i = 0; i < a->npub; i++)
		group_unpublish(&a->br, a->br.groups[i]);
	urcu_qsbr_thread_offline();
	/* Address handles wait three grace periods (control/joins.c): callbacks queue callbacks. */
	for (int i = 0; i < 3; i++)
		urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	bridge_destroy(&a->br);
	for (uint32_t i = 0; i < a->br.ngroups; i++)
		free(a->br.groups[i]);
	free(a->br.groups);
	urcu_qsbr_unregister_thread();
}

void app_close(struct app *a)
{
	if (a->pidfd >= 0)
		pidfile_unlock(a->pidfd, a->pidpath);
	if (a->report >= 0)
		daemon_report(a->report, a->status);
	if (live.cwd >= 0)
		close(live.cwd);
	tune_release();
	placement_fini(&a->pl);
	ha_free(a->ha);
}
