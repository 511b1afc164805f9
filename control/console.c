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
#include "concmd.h"
#include "conserver.h"
#include "console.h"
#include "ctl.h"
#include "featcmd.h"
#include "log.h"
#include "loop.h"
#include "options.h"

struct console {
	struct ctl *c;
	struct conserver *srv;
};

/* ---- The command registry ---- */

/* Every module's commands (console_cmd_register), by name, ending with a NULL name. */
static struct console_cmd *cmds;
static uint32_t ncmds;

int console_cmd_register(const struct console_cmd *table)
{
	uint32_t n = 0;
	struct console_cmd *v;

	while (table[n].c.name)
		n++;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < ncmds; k++)
			if (!strcmp(table[i].c.name, cmds[k].c.name))
				return -EEXIST;
	v = realloc(cmds, (ncmds + n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = ncmds++;

		/* Insert by name: help lists them in that order. */
		while (k && strcmp(v[k - 1].c.name, table[i].c.name) > 0) {
			v[k] = v[k - 1];
			k--;
		}
		v[k] = table[i];
	}
	v[ncmds] = (struct console_cmd){{NULL, NULL, NULL, false}, NULL};
	cmds = v;
	return 0;
}

/* ---- The console's own commands ---- */

static int cmd_help(struct ctl *c, char *args, FILE *out)
{
	(void)c;
	return concmd_help(cmds, sizeof(cmds[0]), concmd_rest(args), out) ? 0 : -1;
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

uint64_t console_defer(struct ctl *c)
{
	return c->con ? conserver_defer(c->con->srv) : 0;
}

void console_complete(struct ctl *c, uint64_t token, const char *report, bool ok)
{
	if (c->con)
		conserver_complete(c->con->srv, token, report, ok);
}

/* What may hold the console's shutdown (console_on_shutdown): one module (HA). */
static console_hold_fn *shutdown_hold;

void console_on_shutdown(console_hold_fn *fn)
{
	shutdown_hold = fn;
}

void console_shutdown_done(struct ctl *c, void *arg, int rc, const char *report)
{
	char *text = NULL;

	(void)rc;
	if (asprintf(&text, "%sstopping the bridge\n", report) < 0)
		text = NULL;
	if (c->con)
		conserver_complete(c->con->srv, (uint64_t)(uintptr_t)arg,
				   text ? text : "stopping the bridge\n", true);
	free(text);
	loop_stop();
}

static int cmd_shutdown(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("shutdown", args, out))
		return -1;
	log_notice("console: shutdown: stopping the bridge");
	/* As SIGTERM: with an HA peer, make-before-break first (the loop serving on
	 * meanwhile; shutdown_hold, ha.c); if the peer cannot take over, the bridge stops
	 * anyway (what it asked for): each partition's outcome is said. */
	if (shutdown_hold) {
		int r = shutdown_hold(c, out);

		if (r == 1)
			return CONSOLE_PENDING;
		if (r == -EBUSY)
			return -1; /* the message says: after the handover in progress */
	}
	fprintf(out, "stopping the bridge\n");
	loop_stop();
	return 0;
}

int console_reply_confirm(struct ctl *c, void (*undo)(void *arg), void *arg)
{
	if (!c->con)
		return -ENOTCONN;
	return conserver_reply_confirm(c->con->srv, undo, arg);
}

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

/*
 * ---- The configuration's groups (unbridged; bcom's Tab after join) ----
 *
 * The groups that the configuration names (at start: the groups bridged then; after a
 * reload that got as far as the groups: the file's), with the MGIDs that
 * group_spec_same compares, so that a group bridged now under another spelling counts
 * as bridged. Control thread only.
 */
struct conf_group {
	char spec[sizeof(((struct group *)0)->spec)];
	enum group_dir dir;
	union ibv_gid mgid[NSIDES]; /* IB (P_Key 0xffff, as group_spec_same) and RoCE */
};

/* The direction as join takes it (groups.c's group_dir_name: console.c calls no module
 * above it). */
static const char *const conf_dir[] = {[DIR_BOTH] = "both", [DIR_IN] = "in", [DIR_OUT] = "out"};

static struct conf_group *conf_groups;
static uint32_t nconf_groups;

void console_conf_groups(struct group *const *v, uint32_t n)
{
	struct conf_group *cg = calloc(n ? n : 1, sizeof(*cg));

	if (!cg)
		return; /* the last list stays: unbridged may offer a stale group */
	for (uint32_t i = 0; i < n; i++) {
		memcpy(cg[i].spec, v[i]->spec, sizeof(cg[i].spec));
		cg[i].spec[sizeof(cg[i].spec) - 1] = 0;
		cg[i].dir = v[i]->dir;
		group_mgid_ib(v[i], 0xffff, &cg[i].mgid[SIDE_IB]);
		group_mgid_roce(v[i], &cg[i].mgid[SIDE_ROCE]);
	}
	free(conf_groups);
	conf_groups = cg;
	nconf_groups = n;
}

static int gid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(union ibv_gid));
}

/*
 * unbridged: the configured groups that no group bridged now has the IB MGID or the RoCE
 * group of (left with leave, or a reload failed to join them), one "spec dir" line each.
 * The bridged groups' MGIDs are sorted once: 16 000 groups take a moment, not n².
 */
static int cmd_unbridged(struct ctl *c, char *args, FILE *out)
{
	struct bridge *br = c->br;
	uint32_t n = br ? br->ngroups : 0, shown = 0;
	union ibv_gid *have[NSIDES];
	int w = 5;

	if (concmd_no_args("unbridged", args, out))
		return -1;
	have[SIDE_IB] = calloc(n ? n : 1, sizeof(union ibv_gid));
	have[SIDE_ROCE] = calloc(n ? n : 1, sizeof(union ibv_gid));
	if (!have[SIDE_IB] || !have[SIDE_ROCE]) {
		free(have[SIDE_IB]);
		free(have[SIDE_ROCE]);
		fprintf(out, "unbridged: out of memory\n");
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		group_mgid_ib(br->groups[i], 0xffff, &have[SIDE_IB][i]);
		group_mgid_roce(br->groups[i], &have[SIDE_ROCE][i]);
	}
	for (int s = 0; s < NSIDES; s++)
		qsort(have[s], n, sizeof(union ibv_gid), gid_cmp);
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < nconf_groups; i++) {
			const struct conf_group *g = &conf_groups[i];
			bool bridged = false;

			for (int s = 0; s < NSIDES && !bridged; s++)
				bridged = bsearch(&g->mgid[s], have[s], n, sizeof(union ibv_gid),
						  gid_cmp) != NULL;
			if (bridged)
				continue;
			if (!pass) {
				int len = (int)strlen(g->spec);

				w = len > w ? len : w;
				continue;
			}
			if (!shown++)
				fprintf(out, "%-*s  dir\n", w, "group");
			fprintf(out, "%-*s  %s\n", w, g->spec, conf_dir[g->dir]);
		}
	}
	if (!shown)
		fprintf(out, "every configured group is bridged\n");
	free(have[SIDE_IB]);
	free(have[SIDE_ROCE]);
	return 0;
}

static const struct console_cmd console_cmds[] = {
	{{"config", NULL,
	  "the settings a reload cannot change (input of ib2roce --check --running-config)", false},
	 cmd_config},
	{FEAT_CONCMD_DISABLE, cmd_disable},
	{FEAT_CONCMD_ENABLE, cmd_enable},
	{{"help", "[command]", "this list", false}, cmd_help},
	{{"exit", NULL, "same as quit", false}, cmd_quit},
	{{"quit", NULL, "leave the console (the bridge keeps running)", false}, cmd_quit},
	{{"unbridged", NULL,
	  "the configured groups not bridged now (left, or a reload failed to join them)", false},
	 cmd_unbridged},
	{{"shutdown", NULL, "stop the bridge (leave groups, final counters); never abbreviated",
	  true},
	 cmd_shutdown},
	{{NULL, NULL, NULL, false}, NULL},
};

/* Two names of one command (cores and workers). */
static bool cmd_same(const struct concmd *a, const struct concmd *b)
{
	return ((const struct console_cmd *)a)->fn == ((const struct console_cmd *)b)->fn;
}

/* console_exec, telling whether the command was quit/exit (*quit_seen). */
static int exec_line(struct ctl *c, const char *line, FILE *out, bool *quit_seen)
{
	char buf[CON_LINE_MAX], *args = buf, *name;
	const struct console_cmd *hit;
	size_t n = strlen(line);

	if (n >= sizeof(buf)) {
		fprintf(out, "command line too long (max %d bytes)\n", CON_LINE_MAX - 1);
		return -1;
	}
	memcpy(buf, line, n + 1);
	name = concmd_word(&args);
	if (!name || name[0] == '#')
		return 0;
	if (!cmds) {
		fprintf(out, "unknown command '%s' (help lists them)\n", name);
		return -1;
	}
	hit = (const struct console_cmd *)concmd_find(cmds, sizeof(cmds[0]), name, cmd_same, out);
	if (!hit)
		return -1;
	*quit_seen = hit->fn == cmd_quit;
	return hit->fn(c, args, out);
}

int console_exec(struct ctl *c, const char *line, FILE *out)
{
	bool quit;
	int r = exec_line(c, line, out, &quit);

	return r == CONSOLE_PENDING ? 0 : r;
}

/* The server's exec callback: quit and exit close the client after the reply. */
static int console_run(void *arg, const char *line, FILE *out)
{
	bool quit = false;
	int r = exec_line(arg, line, out, &quit);

	if (r == CONSOLE_PENDING)
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

/* The server's epoll fd is readable: serve the clients. */
static void console_fd(void *arg, unsigned events)
{
	struct console *con = arg;

	(void)events;
	conserver_poll(con->srv, 0);
}

uint64_t console_tty_dropped(const struct console *con)
{
	return con ? conserver_tty_dropped(con->srv) : 0;
}

/* After each batch of events: pending replies, deadlines, idle clients. */
static int console_pass(void *arg, uint64_t now)
{
	struct ctl *c = arg;

	(void)now;
	if (c->con)
		conserver_poll(c->con->srv, 0);
	return -1;
}

int console_init(struct ctl *c)
{
	int r = console_cmd_register(console_cmds);

	if (c->br) /* the groups bridged at start are the configuration's */
		console_conf_groups(c->br->groups, c->br->ngroups);

	return r ? r : loop_on_pass(console_pass, c);
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
	if (loop_watch(conserver_fd(con->srv), EPOLLIN, console_fd, con)) {
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
	loop_unwatch(conserver_fd(con->srv));
	conserver_close(con->srv);
	if (con->c->con == con)
		con->c->con = NULL;
	free(con);
}
