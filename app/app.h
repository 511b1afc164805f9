/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The bridge program's own parts (app/), shared by its files: main.c (start-up and
 * shutdown), options.c (its options and runtime features), reload.c (SIGHUP and the
 * console's reload), start.c (the start-up steps: placement, tuning check, groups on
 * channels, final counters). Nothing outside app/ includes this.
 */
#ifndef APP_APP_H
#define APP_APP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bridge.h"
#include "capture.h"
#include "console.h"
#include "ctl.h"
#include "groupopts.h"
#include "metrics_http.h"
#include "paths.h"
#include "placement.h"

struct place_in;

#define DEFAULT_PORT 4711

/* What the command line and config files say; a reload fills a second one. */
struct opts {
	struct bridge *br;
	struct ctl *ctl;
	struct bridge_cfg *cfg;	      /* &br->cfg, or the reload's copy */
	struct groupopts_defaults gd; /* -l, -p, -t: defaults of the groups that follow */
	int verbose;
	bool debug, systemd, check;
	bool tune_check;	  /* --tune-check: print the tuning report and exit */
	bool show_placement;	  /* --show-placement (with --check): print the plan */
	int control_cpu;	  /* --control-cpu, -1: automatic */
	char allowed_cpus[256];	  /* --allowed-cpus CPUSET (dry runs), "": the cgroup's */
	char affinity_cpus[256];  /* --allowed-cpus CPUSET:AFFINITY, "": CPUSET or the process's */
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
	/* The index of the list add_group appends to (br->groups at start, want in a
	 * reload), for its duplicate check; the parse's only. */
	struct group_index gidx;
};

/* What a reload needs of the start: the command line, main's opts, the settings given. */
struct app_live {
	int argc;
	char **argv;
	struct opts *o;
	struct bridge_cfg given; /* br->cfg as the command line and files left it */
	struct opts first;	 /* the options as parsed at start, before defaults */
	int cwd; /* the directory relative config paths were given in (we chdir to /) */
};
extern struct app_live live;

/* The runtime features of the engine's settings (options.c registers them). */
extern _Atomic int64_t f_buffers, f_huge, f_mcqp, f_senders, f_backlog, f_rq, f_sq, f_sig;
extern _Atomic int64_t f_pgm_csum, f_pgm_strict, f_foreign, f_join_timeout;
extern _Atomic int64_t f_oversub, f_rt, f_mlock;

/* Everything main's phases share (main.c, start.c). */
struct app {
	struct bridge br;
	struct ctl ctl;
	struct placement pl;
	struct opts o;
	struct console_cfg ccfg;
	struct capture_cfg capcfg; /* the options keep pointers into it */
	struct ha *ha;
	char pidpath[256];
	int report, pidfd; /* the daemon's start-up report pipe, the pid file lock: -1 none */
	uint32_t npub;	   /* groups published to the workers */
	bool daemon_mode, background_log;
	int status; /* the exit status */
};

/*
 * The phases of main (start.c), in order. app_parse: options and modes; the exit status
 * when the program ends here (--version, --tune-check, bad options), else -1.
 * app_detach: daemon, journal, control directory and pid file lock. app_engine: open
 * the ports, plan the placement, build the engine, place the groups (--check ends
 * here). app_control: the control thread's modules, the console, metrics, capture, the
 * workers, the joins. app_run: the loop until the stop, then the workers stopped, the
 * final counters, the leaves. Each failing phase sets status and returns -1; then the
 * close functions of the phases that ran, in reverse.
 */
int app_parse(struct app *a, int argc, char **argv);
int app_detach(struct app *a);
int app_engine(struct app *a);
int app_control(struct app *a);
void app_run(struct app *a);
void app_close_control(struct app *a);
void app_close_engine(struct app *a);
void app_close(struct app *a);

/* options.c */
bool argv_has_check(int argc, char **argv);
int stall_check(const struct bridge *br, int64_t value, char *err, size_t len);
int register_options(struct opts *o, struct ctl *ctl, struct bridge *br);
void cfg_defaults(struct bridge_cfg *cfg);

/* reload.c */
int config_print(struct ctl *c, FILE *out);
int check_running(const char *path);
int reload(struct ctl *c, FILE *out);

/* start.c */
void cfg_from_features(struct bridge *br);
int place_groups(struct bridge *br, uint32_t *npub);
void place_input(const struct opts *o, const struct bridge *br, struct place_in *in);
void place_apply(const struct placement *pl, struct bridge_cfg *cfg);
void place_log(const struct placement *pl, const struct bridge *br);
int dry_run_placement(struct opts *o, struct bridge *br);
int tune_check(struct opts *o, struct bridge *br);
int lock_memory(void);
void write_final_metrics(struct ctl *ctl);
void print_final(struct ctl *ctl, bool to_log);
int config_invalid(const char *msg);

#endif /* APP_APP_H */
