// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The console (console.h): the bridge's command table, served by the console server
 * (conserver.h: the Unix socket, admission, clients, framing, limits) and, with --debug,
 * on the terminal. The server's epoll fd is one fd of the control thread's epoll; the
 * commands run on the control thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "bridge.h"
#include "capture.h"
#include "concmd.h"
#include "conserver.h"
#include "console.h"
#include "ctl.h"
#include "featcmd.h"
#include "health.h"
#include "ha.h"
#include "log.h"
#include "options.h"
#include "pool.h"
#include "show.h"
#include "tune.h"

struct console {
	struct ctl *c;
	struct conserver *srv;
	struct ev_tag tag; /* the server's epoll fd in the control thread's epoll */
};

/* ---- Commands ---- */

/* What a command returns: 0 done, -1 failed (the reason on out), CMD_PENDING: its reply
 * comes later (console_done, conserver_complete). */
typedef int cmd_fn(struct ctl *c, char *args, FILE *out);
#define CMD_PENDING 2

/* A command of the table (concmd.h): name, synopsis, help; what runs it. */
struct cmd {
	struct concmd c;
	cmd_fn *fn;
};

static const struct cmd cmds[];

static int cmd_help(struct ctl *c, char *args, FILE *out)
{
	(void)c;
	concmd_help(cmds, sizeof(cmds[0]), concmd_rest(args), out);
	return 0;
}

/*
 * quit and exit leave the console client: bcom handles them itself and never sends them.
 * One that reaches us (another client, the terminal console) stops nothing: a socket
 * client is told and disconnected (quit_closes), the terminal just told.
 */
static int cmd_quit(struct ctl *c, char *args, FILE *out)
{
	(void)c;
	(void)args;
	fprintf(out, "quit leaves the console and the bridge keeps running; "
		     "\"shutdown\" stops the bridge\n");
	return 0;
}

/* A deferred reply for the command running now (console_done), 0: none possible. */
static uint64_t console_defer(struct ctl *c)
{
	return c->con ? conserver_defer(c->con->srv) : 0;
}

/* A handover of the console is over: its report is the command's reply. */
static void console_done(struct ctl *c, void *arg, int rc, const char *report)
{
	if (c->con)
		conserver_complete(c->con->srv, (uint64_t)(uintptr_t)arg, report, !rc);
}

/* The handover of shutdown is over: its report, then the stop. */
static void shutdown_done(struct ctl *c, void *arg, int rc, const char *report)
{
	char *text = NULL;

	(void)rc;
	if (asprintf(&text, "%sstopping the bridge\n", report) < 0)
		text = NULL;
	if (c->con)
		conserver_complete(c->con->srv, (uint64_t)(uintptr_t)arg,
				   text ? text : "stopping the bridge\n", true);
	free(text);
	c->stop = true;
}

static int cmd_shutdown(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("shutdown", args, out))
		return -1;
	log_notice("console: shutdown: stopping the bridge");
	/* As SIGTERM: with a peer, make-before-break first (the loop serving on meanwhile);
	 * if the peer cannot take over, the bridge stops anyway (what it asked for): each
	 * partition's outcome is said. */
	if (c->ha && ha_peer(c->ha)) {
		uint64_t token = console_defer(c);
		int r = ha_handover(c->ha, c, NULL, "console shutdown", true, shutdown_done,
				    (void *)(uintptr_t)token, out);

		if (r == 1)
			return CMD_PENDING;
		if (r == -EBUSY)
			return -1; /* the message says: after the handover in progress */
	}
	fprintf(out, "stopping the bridge\n");
	c->stop = true;
	return 0;
}

static int cmd_role(struct ctl *c, char *args, FILE *out)
{
	char *a = concmd_word(&args), *b = concmd_word(&args), *role = b ? b : a;
	bool standby;

	if (!a) {
		ha_show(c->ha, c, out);
		return 0;
	}
	if (concmd_no_args("role", args, out))
		return -1;
	if (!strcmp(role, "active"))
		standby = false;
	else if (!strcmp(role, "standby"))
		standby = true;
	else {
		fprintf(out, "role: expected [partition] active|standby, not '%s'\n", role);
		return -1;
	}
	return ha_role_set(c->ha, c, b ? a : NULL, standby, "console role command", out) ? -1 : 0;
}

static int cmd_ha(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("ha", args, out))
		return -1;
	ha_show(c->ha, c, out);
	return 0;
}

static int cmd_handover(struct ctl *c, char *args, FILE *out)
{
	char *part = concmd_word(&args);
	uint64_t token;
	int r;

	if (concmd_no_args("handover", args, out))
		return -1;
	token = console_defer(c);
	if (!token) {
		fprintf(out, "handover: only from a console client (its reply comes later)\n");
		return -1;
	}
	r = ha_handover(c->ha, c, part, "console handover", false, console_done,
			(void *)(uintptr_t)token, out);
	return r == 1 ? CMD_PENDING : r ? -1 : 0;
}

/* The peer's side of a handover (ha.h): sent by the other bridge's handover. */
static int cmd_takeover(struct ctl *c, char *args, FILE *out)
{
	return ha_takeover(c->ha, c, args, out) ? -1 : 0;
}

int console_reply_confirm(struct ctl *c, void (*undo)(void *arg), void *arg)
{
	if (!c->con)
		return -ENOTCONN;
	return conserver_reply_confirm(c->con->srv, undo, arg);
}

static int cmd_status(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("status", args, out))
		return -1;
	/* Unhealthy is a failed status: a script's `bcom status` exits 1. */
	return show_status(c, out) ? 0 : -1;
}

static int cmd_health(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("health", args, out))
		return -1;
	return health_print(c, out) ? 0 : -1;
}

static int cmd_zap(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("zap", args, out))
		return -1;
	show_zap(c);
	fprintf(out, "counters shown by the console reset (stats --json and metrics are not)\n");
	return 0;
}

static int cmd_multicast(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("multicast", args, out))
		return -1;
	show_multicast(c, out);
	return 0;
}

static int cmd_channels(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("channels", args, out))
		return -1;
	show_channels(c, out);
	return 0;
}

static int cmd_interfaces(struct ctl *c, char *args, FILE *out)
{
	char *name = concmd_word(&args);

	if (concmd_no_args("interfaces", args, out))
		return -1;
	return show_interfaces(c, name, out) ? -1 : 0;
}

static int cmd_buffers(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("buffers", args, out))
		return -1;
	show_buffers(c, out);
	return 0;
}

static int cmd_senders(struct ctl *c, char *args, FILE *out)
{
	char *n = concmd_word(&args);

	if (concmd_no_args("senders", args, out))
		return -1;
	return show_senders(c, n, out) ? -1 : 0;
}

static int cmd_tsi(struct ctl *c, char *args, FILE *out)
{
	show_tsi(c, concmd_rest(args), out);
	return 0;
}

static int cmd_events(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("events", args, out))
		return -1;
	ctl_events(c, out);
	return 0;
}

static int cmd_workers(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("workers", args, out))
		return -1;
	show_workers(c, out);
	return 0;
}

/* enable and disable (featcmd.h, as the tools'), logged here. */
static int set_feature(bool enable, char *args, FILE *out)
{
	const char *spec;
	int ret = feat_cmd(enable, args, out, &spec);

	if (spec)
		log_notice("console: %s %s", enable ? "enable" : "disable", spec);
	return ret;
}

static int cmd_enable(struct ctl *c, char *args, FILE *out)
{
	(void)c;
	return set_feature(true, args, out);
}

static int cmd_disable(struct ctl *c, char *args, FILE *out)
{
	(void)c;
	return set_feature(false, args, out);
}

static int cmd_join(struct ctl *c, char *args, FILE *out)
{
	char err[OPT_ERR_LEN];
	char *spec = concmd_word(&args), *d = concmd_word(&args);
	enum group_dir dir = DIR_BOTH;

	if (!spec) {
		fprintf(out, "join: usage: join addr[:port][/fmt][#tos[,w=N]|#w=N] [both|in|out]\n");
		return -1;
	}
	if (d) {
		int k;

		for (k = 0; k < 3 && strcmp(d, group_dir_name[k]); k++)
			;
		if (k == 3) {
			fprintf(out, "join: direction '%s': expected both, in or out\n", d);
			return -1;
		}
		dir = (enum group_dir)k;
	}
	if (concmd_no_args("join", args, out))
		return -1;
	if (ctl_group_add(c, spec, dir, err, sizeof(err))) {
		fprintf(out, "join: %s\n", err);
		return -1;
	}
	log_ctx(LOG_NOTICE, NULL, spec, "console: join %s %s", spec, group_dir_name[dir]);
	fprintf(out, "joining %s (%s)\n", spec, group_dir_name[dir]);
	return 0;
}

static int cmd_leave(struct ctl *c, char *args, FILE *out)
{
	char err[OPT_ERR_LEN];
	char *name = concmd_word(&args);

	if (!name) {
		fprintf(out, "leave: usage: leave <group>\n");
		return -1;
	}
	if (concmd_no_args("leave", args, out))
		return -1;
	if (ctl_group_remove(c, name, err, sizeof(err))) {
		fprintf(out, "leave: %s\n", err);
		return -1;
	}
	log_ctx(LOG_NOTICE, NULL, name, "console: leave %s", name);
	fprintf(out, "left %s\n", name);
	return 0;
}

static int cmd_stats(struct ctl *c, char *args, FILE *out)
{
	char *opt = concmd_word(&args);

	if (concmd_no_args("stats", args, out))
		return -1;
	if (!opt) {
		show_counters(c, out, false);
		return 0;
	}
	if (strcmp(opt, "--json") && strcmp(opt, "json")) {
		fprintf(out, "stats: unknown option '%s' (--json)\n", opt);
		return -1;
	}
	report_json(c, out);
	return 0;
}

/* The tuning report (tune.h) for the running bridge: its workers' CPUs, this thread's
 * affinity as the control's, both devices' sysfs directories and the pool's size. */
static int cmd_tuning(struct ctl *c, char *args, FILE *out)
{
	struct bridge *br = c->br;
	struct tune_input in;
	struct tune_report rep;

	if (concmd_no_args("tuning", args, out))
		return -1;
	tune_input_init(&in);
	for (uint32_t i = 0; i < br->cfg.nworkers; i++)
		if (br->workers[i].cpu >= 0)
			CPU_SET(br->workers[i].cpu, &in.workers);
	for (int s = 0; s < NSIDES; s++)
		if (br->sd[s].ctx)
			tune_input_add_nic(&in, br->sd[s].dev, br->sd[s].ctx->device->ibdev_path,
					   NULL);
	in.pool_bytes = (uint64_t)pool_nbufs(br->pool) * pool_buf_size(br->pool);
	if (tune_report_build(&in, &rep)) {
		fprintf(out, "tuning: out of memory\n");
		return -1;
	}
	tune_report_print(&rep, out);
	tune_report_free(&rep);
	return 0;
}

static int cmd_capture(struct ctl *c, char *args, FILE *out)
{
	char *sub = concmd_word(&args), err[OPT_ERR_LEN];
	int r;

	if (!c->cap) {
		fprintf(out, "capture: not available\n");
		return -1;
	}
	if (!sub || !strcmp(sub, "status")) {
		if (sub && concmd_no_args("capture status", args, out))
			return -1;
		capture_status(c->cap, out);
		return 0;
	}
	if (!strcmp(sub, "stop")) {
		if (concmd_no_args("capture stop", args, out))
			return -1;
		if (capture_stop(c->cap, out)) {
			fprintf(out, "capture stop: no capture running\n");
			return -1;
		}
		log_info("console: capture stop");
		return 0;
	}
	if (strcmp(sub, "start")) {
		fprintf(out, "capture: unknown '%s' (start, stop, status)\n", sub);
		return -1;
	}
	r = capture_start(c->cap, args, err, sizeof(err));
	if (r < 0) {
		fprintf(out, "%s\n", err);
		return -1;
	}
	fprintf(out, r ? "capture starting: allocating the rings (capture status shows when it "
			 "runs)\n"
		       : "capture started\n");
	return 0;
}

/* The reload's report is the reply, and logged as SIGHUP's is (ctl.c do_reload). */
static int cmd_reload(struct ctl *c, char *args, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (concmd_no_args("reload", args, out))
		return -1;
	if (!c->reload) {
		fprintf(out, "reload: not available\n");
		return -1;
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		fprintf(out, "reload: out of memory\n");
		return -1;
	}
	log_notice("console: reloading the configuration");
	r = ctl_reload(c, f);
	if (fclose(f)) {
		fprintf(out, "reload: out of memory\n");
		free(buf);
		return -1;
	}
	fputs(buf, out);
	log_text(r ? LOG_ERR : LOG_NOTICE, "reload: ", buf);
	free(buf);
	return r ? -1 : 0;
}

static int cmd_config(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("config", args, out))
		return -1;
	if (!c->config) {
		fprintf(out, "config: not available\n");
		return -1;
	}
	return c->config(c, out) ? -1 : 0;
}

static const struct cmd cmds[] = {
	{{"buffers", NULL, "the buffer pool: buffers per state", false}, cmd_buffers},
	{{"capture",
	  "start FILE [group G] [side ib|roce|both] [count N] [snaplen N] | stop | status",
	  "packet capture to a pcapng file in capture_dir", false},
	 cmd_capture},
	{{"channels", NULL, "queue pairs: groups, queues, backlog, counters, pps", false},
	 cmd_channels},
	{{"cores", NULL, "same as workers", false}, cmd_workers},
	{{"config", NULL,
	  "the settings a reload cannot change (input of ib2roce --check --running-config)", false},
	 cmd_config},
	{FEAT_CONCMD_DISABLE, cmd_disable},
	{FEAT_CONCMD_ENABLE, cmd_enable},
	{{"endpoints", "[N]", "same as senders", false}, cmd_senders},
	{{"events", NULL, "the control thread's timers", false}, cmd_events},
	{{"health", NULL, "ok, or one line per failed health condition (fails if unhealthy)",
	  false},
	 cmd_health},
	{{"ha", NULL, "HA partitions: role, since when, transitions, last reason", false}, cmd_ha},
	{{"handover", "[partition]",
	  "make the peer (--ha-peer-control) active, then this bridge standby", false},
	 cmd_handover},
	{{"help", "[command]", "this list", false}, cmd_help},
	{{"interfaces", "[name]", "devices, ports, limits and GID tables", false}, cmd_interfaces},
	{{"join", "group [both|in|out]", "bridge one more group now", false}, cmd_join},
	{{"leave", "group", "stop bridging a group now", false}, cmd_leave},
	{{"multicast", NULL, "groups, join state per side, packets each way", false},
	 cmd_multicast},
	{{"exit", NULL, "same as quit", false}, cmd_quit},
	{{"quit", NULL, "leave the console (the bridge keeps running)", false}, cmd_quit},
	{{"reload", NULL, "re-read the configuration (as SIGHUP)", false}, cmd_reload},
	{{"role", "[partition] active|standby", "set the HA role (no argument: as ha)", false},
	 cmd_role},
	{{"senders", "[N]", "who sends into the bridge (N rows, default 100)", false}, cmd_senders},
	{{"shutdown", NULL, "stop the bridge (leave groups, final counters); never abbreviated",
	  true},
	 cmd_shutdown},
	{{"stats", "[--json]", "all counters: final-counters format, or one JSON object", false},
	 cmd_stats},
	{{"status", NULL,
	  "health, per-side counters, drops by reason, join summary (fails if unhealthy)", false},
	 cmd_status},
	{{"takeover", "prepare|commit partition id",
	  "HA: the peer's side of a handover (sent by the other bridge's handover)", false},
	 cmd_takeover},
	{{"tsi", "[filter]", "PGM streams (lines containing filter)", false}, cmd_tsi},
	{{"tuning", NULL, "host tuning report: isolation, IRQs, SMT, C-states (as --tune-check)",
	  false},
	 cmd_tuning},
	{{"workers", NULL, "worker threads: CPU, node, loop rate, heartbeat, latency", false},
	 cmd_workers},
	{{"zap", NULL, "reset the counters the console shows", false}, cmd_zap},
	{{NULL, NULL, NULL, false}, NULL},
};

/* Two names of one command (cores and workers). */
static bool cmd_same(const struct concmd *a, const struct concmd *b)
{
	return ((const struct cmd *)a)->fn == ((const struct cmd *)b)->fn;
}

/* console_exec, telling whether the command was quit/exit (*quit_seen). */
static int exec_line(struct ctl *c, const char *line, FILE *out, bool *quit_seen)
{
	char buf[CON_LINE_MAX], *args = buf, *name;
	const struct cmd *hit;
	size_t n = strlen(line);

	if (n >= sizeof(buf)) {
		fprintf(out, "command line too long (max %d bytes)\n", CON_LINE_MAX - 1);
		return -1;
	}
	memcpy(buf, line, n + 1);
	name = concmd_word(&args);
	if (!name || name[0] == '#')
		return 0;
	hit = (const struct cmd *)concmd_find(cmds, sizeof(cmds[0]), name, cmd_same, out);
	if (!hit)
		return -1;
	*quit_seen = hit->fn == cmd_quit;
	return hit->fn(c, args, out);
}

int console_exec(struct ctl *c, const char *line, FILE *out)
{
	bool quit;
	int r = exec_line(c, line, out, &quit);

	return r == CMD_PENDING ? 0 : r;
}

/* The server's exec callback: quit and exit close the client after the reply. */
static int console_run(void *arg, const char *line, FILE *out)
{
	bool quit = false;
	int r = exec_line(arg, line, out, &quit);

	if (r == CMD_PENDING)
		return CONSERVER_PENDING;
	if (r)
		return CONSERVER_FAIL;
	return quit ? CONSERVER_CLOSE : CONSERVER_OK;
}

/* The server's messages go to the bridge's log. */
static void console_log(void *arg, int prio, const char *msg)
{
	(void)arg;
	log_msg(prio, "%s", msg);
}

void console_event(struct console *con, void *tag, unsigned events)
{
	(void)tag;
	(void)events;
	conserver_poll(con->srv, 0);
}

uint64_t console_tty_dropped(const struct console *con)
{
	return con ? conserver_tty_dropped(con->srv) : 0;
}

void console_tick(struct console *con, uint64_t now)
{
	(void)now;
	conserver_poll(con->srv, 0);
}

struct console *console_open(struct ctl *c, const struct console_cfg *cfg, char *err, size_t errlen)
{
	struct conserver_cfg scfg = {
		.path = cfg->path,
		.listen_fd = cfg->listen_fd,
		.admit_gid = cfg->admit_gid,
		.set_group = cfg->set_group,
		.tty = cfg->tty,
		.prog = "ib2roce",
		.peer = "bridge",
		.exec = console_run,
		.exec_arg = c,
		.log = console_log,
		.idle_s = &c->con_idle_s,
	};
	struct console *con = calloc(1, sizeof(*con));
	int r;

	if (!con) {
		opt_errf(err, errlen, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	con->c = c;
	con->srv = conserver_open(&scfg, err, errlen);
	if (!con->srv) {
		r = errno;
		free(con);
		errno = r;
		return NULL;
	}
	con->tag = (struct ev_tag){.kind = EV_CONSOLE, .ptr = con};
	if (ctl_watch(c, conserver_fd(con->srv), EPOLLIN, &con->tag)) {
		r = errno;
		opt_errf(err, errlen, -r, "control socket: epoll: %s", strerror(r));
		conserver_close(con->srv);
		free(con);
		errno = r;
		return NULL;
	}
	c->con = con;
	return con;
}

void console_close(struct console *con)
{
	if (!con)
		return;
	ctl_unwatch(con->c, conserver_fd(con->srv));
	conserver_close(con->srv);
	if (con->c->con == con)
		con->c->con = NULL;
	free(con);
}
