// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mccon.c - the console of mcsender and mclisten (mccon.h): the command table on the
 * console server of ib2roce (control/conserver.c).
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

#include "conserver.h"
#include "mccon.h"
#include "options.h"
#include "suggest.h"

struct mccon {
	struct conserver *srv;
	const char *prog;
	struct mccon_ops ops;
	void *arg;
	uint64_t next_ns; /* mccon_serve: the next look */
};

typedef int cmd_fn(struct mccon *con, char *args, FILE *out);

struct cmd {
	const char *name;
	const char *args;
	const char *help;
	cmd_fn *fn;
};

static const struct cmd cmds[];

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Split off the next blank-separated word of *s (NULL at the end). */
static char *word(char **s)
{
	char *w = *s + strspn(*s, " \t"), *e;

	if (!*w)
		return NULL;
	e = w + strcspn(w, " \t");
	if (*e)
		*e++ = 0;
	*s = e;
	return w;
}

/* The rest of the line without surrounding blanks (NULL if empty). */
static char *rest(char *s)
{
	char *e;

	s += strspn(s, " \t");
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = 0;
	return *s ? s : NULL;
}

static int no_args(const char *cmd, char *args, FILE *out)
{
	char *extra = rest(args);

	if (!extra)
		return 0;
	fprintf(out, "%s: unexpected argument '%s'\n", cmd, extra);
	return -1;
}

static int cmd_help(struct mccon *con, char *args, FILE *out)
{
	char *what = rest(args);
	int w = 0;

	(void)con;
	for (const struct cmd *k = cmds; k->name; k++) {
		int n = (int)strlen(k->name) + (k->args ? 1 + (int)strlen(k->args) : 0);

		if (n > w)
			w = n;
	}
	for (const struct cmd *k = cmds; k->name; k++) {
		char head[64];

		if (what && strncmp(k->name, what, strlen(what)))
			continue;
		snprintf(head, sizeof(head), "%s%s%s", k->name, k->args ? " " : "",
			 k->args ? k->args : "");
		fprintf(out, "%-*s  %s\n", w, head, k->help);
	}
	if (!what)
		fprintf(out,
			"Commands may be abbreviated to any unique prefix, except shutdown.\n");
	return 0;
}

static int cmd_status(struct mccon *con, char *args, FILE *out)
{
	if (no_args("status", args, out))
		return -1;
	con->ops.status(con->arg, out);
	return 0;
}

static int cmd_stats(struct mccon *con, char *args, FILE *out)
{
	char *opt = word(&args);

	if (no_args("stats", args, out))
		return -1;
	if (opt && strcmp(opt, "--json") && strcmp(opt, "json")) {
		fprintf(out, "stats: unknown option '%s' (--json)\n", opt);
		return -1;
	}
	con->ops.stats(con->arg, out, opt != NULL);
	return 0;
}

static int set_feature(bool enable, char *args, FILE *out)
{
	char err[OPT_ERR_LEN];
	char *spec = rest(args);

	if (!spec) {
		feat_list(out);
		return 0;
	}
	if (feat_set(spec, enable, true, err, sizeof(err))) {
		fprintf(out, "%s\n", err);
		return -1;
	}
	fprintf(out, "%s %s\n", enable ? "enabled" : "disabled", spec);
	return 0;
}

static int cmd_enable(struct mccon *con, char *args, FILE *out)
{
	(void)con;
	return set_feature(true, args, out);
}

static int cmd_disable(struct mccon *con, char *args, FILE *out)
{
	(void)con;
	return set_feature(false, args, out);
}

static int cmd_shutdown(struct mccon *con, char *args, FILE *out)
{
	if (no_args("shutdown", args, out))
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
	{"disable", "[name]", "turn a runtime feature off (no name: list them)", cmd_disable},
	{"enable", "[name[=value]]", "turn a runtime feature on or set it (no name: list)",
	 cmd_enable},
	{"exit", NULL, "same as quit", cmd_quit},
	{"help", "[command]", "this list", cmd_help},
	{"quit", NULL, "leave the console (the program keeps running)", cmd_quit},
	{"shutdown", NULL, "stop as at the end of --duration (summary, exit); never abbreviated",
	 cmd_shutdown},
	{"stats", "[--json]", "the summary so far: text, or the --json object", cmd_stats},
	{"status", NULL, "what the program does: port, groups, rate, counts so far", cmd_status},
	{NULL, NULL, NULL, NULL},
};

/* A command never reached by a prefix: it must be typed in full (shutdown). */
static bool cmd_exact(const struct cmd *k)
{
	return k->fn == cmd_shutdown;
}

/* The server's exec callback: find the command (prefixes, as ib2roce) and run it. */
static int mccon_exec(void *arg, const char *line, FILE *out)
{
	struct mccon *con = arg;
	char buf[CON_LINE_MAX], *args = buf, *name;
	const struct cmd *hit = NULL;
	size_t n = strlen(line);
	int nhits = 0;

	if (n >= sizeof(buf)) {
		fprintf(out, "command line too long (max %d bytes)\n", CON_LINE_MAX - 1);
		return CONSERVER_FAIL;
	}
	memcpy(buf, line, n + 1);
	name = word(&args);
	if (!name || name[0] == '#')
		return CONSERVER_OK;
	n = strlen(name);
	for (const struct cmd *k = cmds; k->name; k++) {
		if (strncmp(k->name, name, n))
			continue;
		if (k->name[n] == 0) { /* exact */
			hit = k;
			nhits = 1;
			break;
		}
		if (cmd_exact(k))
			continue;
		if (!hit || hit->fn != k->fn)
			nhits++;
		if (!hit)
			hit = k;
	}
	if (!hit) {
		const char *best = NULL;
		size_t best_d = 0;

		for (const struct cmd *k = cmds; k->name; k++)
			suggest_consider(name, n, k->name, &best, &best_d);
		for (const struct cmd *k = cmds; k->name && !best; k++)
			if (cmd_exact(k) && !strncmp(k->name, name, n))
				best = k->name; /* a prefix of it: it must be typed in full */
		if (best)
			fprintf(out, "unknown command '%s': did you mean %s?\n", name, best);
		else
			fprintf(out, "unknown command '%s' (help lists them)\n", name);
		return CONSERVER_FAIL;
	}
	if (nhits > 1) {
		fprintf(out, "ambiguous command '%s':", name);
		for (const struct cmd *k = cmds; k->name; k++)
			if (!strncmp(k->name, name, n) && !cmd_exact(k))
				fprintf(out, " %s", k->name);
		fprintf(out, "\n");
		return CONSERVER_FAIL;
	}
	if (hit->fn(con, args, out))
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
