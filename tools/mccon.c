// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mccon.c - the console of mcsender and mclisten (mccon.h): the command table on the
 * console server of ib2roce (lib/conserver.c).
 *
 * The commands keep ib2roce's names and rules (prefixes, shutdown only in full, a
 * suggestion for a typo, quit/exit leave the console and the program keeps running), so
 * that bcom and operators' habits work against the tools as against the bridge.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "clock.h"
#include "concmd.h"
#include "conserver.h"
#include "featcmd.h"
#include "mccon.h"

struct mccon {
	struct conserver *srv;
	const char *prog;
	struct mccon_ops ops;
	void *arg;
	uint64_t next_ns; /* mccon_serve: the next look */
};

typedef int cmd_fn(struct mccon *con, char *args, FILE *out);

/* A command of the table (lib/concmd.h): name, synopsis, help; what runs it. */
struct cmd {
	struct concmd c;
	cmd_fn *fn;
};

static const struct cmd cmds[];

static int cmd_help(struct mccon *con, char *args, FILE *out)
{
	(void)con;
	return concmd_help(cmds, sizeof(cmds[0]), concmd_rest(args), out) ? 0 : -1;
}

static int cmd_status(struct mccon *con, char *args, FILE *out)
{
	if (concmd_no_args("status", args, out))
		return -1;
	con->ops.status(con->arg, out);
	return 0;
}

static int cmd_stats(struct mccon *con, char *args, FILE *out)
{
	char *opt = concmd_word(&args);

	if (concmd_no_args("stats", args, out))
		return -1;
	if (opt && strcmp(opt, "--json") && strcmp(opt, "json")) {
		fprintf(out, "stats: unknown option '%s' (--json)\n", opt);
		return -1;
	}
	con->ops.stats(con->arg, out, opt != NULL);
	return 0;
}

static int cmd_enable(struct mccon *con, char *args, FILE *out)
{
	(void)con;
	return feat_cmd(true, args, out, NULL);
}

static int cmd_disable(struct mccon *con, char *args, FILE *out)
{
	(void)con;
	return feat_cmd(false, args, out, NULL);
}

static int cmd_shutdown(struct mccon *con, char *args, FILE *out)
{
	if (concmd_no_args("shutdown", args, out))
		return -1;
	fprintf(out, "stopping %s\n", con->prog);
	con->ops.shutdown(con->arg);
	return 0;
}

/* quit and exit leave the console (bcom handles them itself and never sends them). */
static int cmd_quit(struct mccon *con, char *args, FILE *out)
{
	(void)args;
	fprintf(out, "quit leaves the console and %s keeps running; \"shutdown\" stops it\n",
		con->prog);
	return 0;
}

static const struct cmd cmds[] = {
	{FEAT_CONCMD_DISABLE, cmd_disable},
	{FEAT_CONCMD_ENABLE, cmd_enable},
	{{"exit", NULL, "same as quit", false}, cmd_quit},
	{{"help", "[command]", "this list", false}, cmd_help},
	{{"quit", NULL, "leave the console (the program keeps running)", false}, cmd_quit},
	{{"shutdown", NULL, "stop as at the end of --duration (summary, exit); never abbreviated",
	  true},
	 cmd_shutdown},
	{{"stats", "[--json]", "the summary so far: text, or the --json object", false}, cmd_stats},
	{{"status", NULL, "what the program does: port, groups, rate, counts so far", false},
	 cmd_status},
	{{NULL, NULL, NULL, false}, NULL},
};

/* Two names of one command (exit and quit). */
static bool cmd_same(const struct concmd *a, const struct concmd *b)
{
	return ((const struct cmd *)a)->fn == ((const struct cmd *)b)->fn;
}

/* The server's exec callback: find the command (prefixes, as ib2roce) and run it. */
static int mccon_exec(void *arg, const char *line, FILE *out)
{
	struct mccon *con = arg;
	char buf[CON_LINE_MAX], *args = buf, *name;
	const struct cmd *hit;
	size_t n = strlen(line);

	if (n >= sizeof(buf)) {
		fprintf(out, "command line too long (max %d bytes)\n", CON_LINE_MAX - 1);
		return CONSERVER_FAIL;
	}
	memcpy(buf, line, n + 1);
	name = concmd_word(&args);
	if (!name || name[0] == '#')
		return CONSERVER_OK;
	hit = (const struct cmd *)concmd_find(cmds, sizeof(cmds[0]), name, cmd_same, out);
	if (!hit || hit->fn(con, args, out))
		return CONSERVER_FAIL;
	return hit->fn == cmd_quit ? CONSERVER_CLOSE : CONSERVER_OK;
}

/* What the server has to say about clients: warnings to stderr, details nowhere. */
static void mccon_log(void *arg, int prio, const char *msg)
{
	struct mccon *con = arg;

	if (prio <= LOG_WARNING)
		fprintf(stderr, "%s: %s\n", con->prog, msg);
}

struct mccon *mccon_open(const char *prog, const char *path, const struct mccon_ops *ops, void *arg,
			 char *err, size_t errlen)
{
	struct mccon *con = calloc(1, sizeof(*con));
	struct conserver_cfg cfg = {
		.path = path,
		.listen_fd = -1,
		.admit_gid = (gid_t)-1,
		.prog = prog,
		.peer = "program",
		.exec = mccon_exec,
		.log = mccon_log,
	};
	int r;

	if (!con) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	con->prog = prog;
	con->ops = *ops;
	con->arg = arg;
	cfg.exec_arg = con;
	cfg.log_arg = con;
	con->srv = conserver_open(&cfg, err, errlen);
	if (!con->srv) {
		r = errno;
		free(con);
		errno = r;
		return NULL;
	}
	return con;
}

void mccon_poll(struct mccon *con)
{
	if (!con)
		return;
	conserver_poll(con->srv, 0);
	con->next_ns = mono_ns() + MCCON_POLL_MS * 1000000ull;
}

void mccon_serve(struct mccon *con, uint64_t now_ns)
{
	if (con && now_ns >= con->next_ns)
		mccon_poll(con);
}

int mccon_fd(const struct mccon *con)
{
	return con ? conserver_fd(con->srv) : -1;
}

void mccon_wait(struct mccon *con, uint64_t until_ns)
{
	struct pollfd pfd = {.fd = mccon_fd(con), .events = POLLIN};
	uint64_t now = mono_ns();
	struct timespec ts;

	if (!con || until_ns <= now)
		return;
	ts.tv_sec = (time_t)((until_ns - now) / 1000000000u);
	ts.tv_nsec = (long)((until_ns - now) % 1000000000u);
	if (ppoll(&pfd, 1, &ts, NULL) > 0)
		mccon_poll(con);
}

void mccon_close(struct mccon *con)
{
	if (!con)
		return;
	conserver_close(con->srv);
	free(con);
}
