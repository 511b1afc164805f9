// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The console (console.h): the command table and the Unix-socket server.
 *
 * Every client is a small state machine on the control thread's epoll: bytes come in
 * without blocking, a complete line runs one command into a memory stream, the reply is
 * queued and written as the socket takes it. What a client can cost is bounded: a line
 * is at most CON_LINE_MAX bytes (longer ones are answered with an error once their
 * newline comes), it must end within CON_LINE_MS, unread output may reach CON_OUT_MAX
 * before the client is dropped, and at most CON_CLIENTS_MAX are connected. While a
 * client has unread output we stop reading from it, so a client that sends commands
 * but never reads cannot make us queue without bound.
 *
 * Slow or idle clients cannot lock others out: a client without a command for
 * console_idle seconds (300 by default) is closed, and when all slots are taken a new
 * client takes the place of the least recently active one. What clients cause in the
 * log (refusals, time-outs, evictions) is rate-limited: CON_WARN_BURST lines per
 * CON_WARN_WINDOW_MS, then one line with the number left out.
 *
 * Admission: the socket file is 0660 (owner and group), and SO_PEERCRED of every
 * connection is checked: root, our own uid and the admitted group (--control-group,
 * else our gid) get in; anyone else gets a refusal and we log it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "bridge.h"
#include "capture.h"
#include "console.h"
#include "ctl.h"
#include "health.h"
#include "ha.h"
#include "log.h"
#include "options.h"
#include "paths.h"
#include "pool.h"
#include "show.h"
#include "suggest.h"
#include "sysgroup.h"
#include "tune.h"

/* A command line being put together from bytes (a socket client's, or the terminal's). */
struct con_line {
	char buf[CON_LINE_MAX];
	size_t len;
	bool overlong; /* passed CON_LINE_MAX - 1 bytes: refused at its end */
	bool binary;   /* holds a control character: refused at its end */
};

/* Add one byte. true when it ended the line: buf then holds it, without a final CR. */
static bool line_put(struct con_line *l, unsigned char ch)
{
	if (ch == '\n') {
		if (l->len && l->buf[l->len - 1] == '\r')
			l->len--;
		l->buf[l->len] = 0;
		return true;
	}
	if ((ch < 0x20 && ch != '\t' && ch != '\r') || ch == 0x7f)
		l->binary = true;
	if (l->len + 1 >= sizeof(l->buf))
		l->overlong = true;
	else
		l->buf[l->len++] = (char)ch;
	return false;
}

/* Why a completed line is not run (the reply), or NULL. */
static const char *line_refused(const struct con_line *l)
{
	if (l->overlong)
		return "command line too long (max 1023 bytes)\n";
	if (l->binary)
		return "control characters in the command line\n";
	return NULL;
}

static void line_reset(struct con_line *l)
{
	l->len = 0;
	l->overlong = l->binary = false;
}

struct client {
	struct ev_tag tag; /* first: the epoll tag points at the client */
	int fd;
	struct con_line in;
	char raw[4096]; /* bytes received, not yet looked at (pipelined commands) */
	size_t rawlen, rawoff;
	uint64_t line_ms; /* when the current line started, 0 = no partial line */
	char *out;	  /* reply bytes not yet written */
	size_t outlen, outoff;
	bool close_after; /* close once out is written (refusal, quit) */
	bool evicted;	  /* closed in the middle of an event batch: freed after it */
	struct client *next_evicted;
	unsigned watching; /* epoll events registered */
	uint64_t last_ms;  /* connected, or ran its last command (idle time-out, eviction) */
	pid_t pid;
	uid_t uid;
};

/* Log lines that clients cause: a burst per window, then a count of the rest. */
struct con_ratelimit {
	uint64_t start_ms; /* the window began */
	unsigned logged;   /* lines logged in this window */
	uint64_t left_out; /* lines not logged in this window */
};

struct console {
	struct ctl *c;
	int lfd;
	bool own_path; /* we created the socket file: unlink it at close */
	char path[CONTROL_PATH_MAX];
	gid_t admit_gid;
	struct ev_tag ltag;
	struct client *cl[CON_CLIENTS_MAX];
	struct client *evicted; /* closed, still named by events of the current batch */
	struct con_ratelimit warn;
	/* The terminal console (--debug): commands from stdin, replies to stdout. */
	bool tty;
	struct ev_tag ttytag;
	struct con_line tin;
};

/* ---- Commands ---- */

typedef int cmd_fn(struct ctl *c, char *args, FILE *out);

struct cmd {
	const char *name;
	const char *args;
	const char *help;
	cmd_fn *fn;
};

static const struct cmd cmds[];

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

static int cmd_help(struct ctl *c, char *args, FILE *out)
{
	char *what = rest(args);
	int w = 0;

	(void)c;
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

static int cmd_shutdown(struct ctl *c, char *args, FILE *out)
{
	if (no_args("shutdown", args, out))
		return -1;
	log_notice("console: shutdown: stopping the bridge");
	/* As SIGTERM: with a peer, make-before-break first; if the peer cannot take over,
	 * the bridge stops anyway (what it asked for). */
	if (c->ha && ha_peer(c->ha))
		ha_handover(c->ha, c, NULL, "console shutdown", out);
	fprintf(out, "stopping the bridge\n");
	c->stop = true;
	return 0;
}

static int cmd_role(struct ctl *c, char *args, FILE *out)
{
	char *a = word(&args), *b = word(&args), *role = b ? b : a;
	bool standby;

	if (!a) {
		ha_show(c->ha, c, out);
		return 0;
	}
	if (no_args("role", args, out))
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
	if (no_args("ha", args, out))
		return -1;
	ha_show(c->ha, c, out);
	return 0;
}

static int cmd_handover(struct ctl *c, char *args, FILE *out)
{
	char *part = word(&args);

	if (no_args("handover", args, out))
		return -1;
	return ha_handover(c->ha, c, part, "console handover", out) ? -1 : 0;
}

static int cmd_status(struct ctl *c, char *args, FILE *out)
{
	if (no_args("status", args, out))
		return -1;
	/* Unhealthy is a failed status: a script's `bcom status` exits 1. */
	return show_status(c, out) ? 0 : -1;
}

static int cmd_health(struct ctl *c, char *args, FILE *out)
{
	if (no_args("health", args, out))
		return -1;
	return health_print(c, out) ? 0 : -1;
}

static int cmd_zap(struct ctl *c, char *args, FILE *out)
{
	if (no_args("zap", args, out))
		return -1;
	show_zap(c);
	fprintf(out, "counters shown by the console reset (stats --json and metrics are not)\n");
	return 0;
}

static int cmd_multicast(struct ctl *c, char *args, FILE *out)
{
	if (no_args("multicast", args, out))
		return -1;
	show_multicast(c, out);
	return 0;
}

static int cmd_channels(struct ctl *c, char *args, FILE *out)
{
	if (no_args("channels", args, out))
		return -1;
	show_channels(c, out);
	return 0;
}

static int cmd_interfaces(struct ctl *c, char *args, FILE *out)
{
	char *name = word(&args);

	if (no_args("interfaces", args, out))
		return -1;
	return show_interfaces(c, name, out) ? -1 : 0;
}

static int cmd_buffers(struct ctl *c, char *args, FILE *out)
{
	if (no_args("buffers", args, out))
		return -1;
	show_buffers(c, out);
	return 0;
}

static int cmd_senders(struct ctl *c, char *args, FILE *out)
{
	char *n = word(&args);

	if (no_args("senders", args, out))
		return -1;
	return show_senders(c, n, out) ? -1 : 0;
}

static int cmd_tsi(struct ctl *c, char *args, FILE *out)
{
	show_tsi(c, rest(args), out);
	return 0;
}

static int cmd_events(struct ctl *c, char *args, FILE *out)
{
	if (no_args("events", args, out))
		return -1;
	ctl_events(c, out);
	return 0;
}

static int cmd_workers(struct ctl *c, char *args, FILE *out)
{
	if (no_args("workers", args, out))
		return -1;
	show_workers(c, out);
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
	log_notice("console: %s %s", enable ? "enable" : "disable", spec);
	fprintf(out, "%s %s\n", enable ? "enabled" : "disabled", spec);
	return 0;
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
	char *spec = word(&args), *d = word(&args);
	enum group_dir dir = DIR_BOTH;

	if (!spec) {
		fprintf(out, "join: usage: join addr[:port][/fmt][#tos] [both|in|out]\n");
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
	if (no_args("join", args, out))
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
	char *name = word(&args);

	if (!name) {
		fprintf(out, "leave: usage: leave <group>\n");
		return -1;
	}
	if (no_args("leave", args, out))
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
	char *opt = word(&args);

	if (no_args("stats", args, out))
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

	if (no_args("tuning", args, out))
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
	char *sub = word(&args), err[OPT_ERR_LEN];

	if (!c->cap) {
		fprintf(out, "capture: not available\n");
		return -1;
	}
	if (!sub || !strcmp(sub, "status")) {
		if (sub && no_args("capture status", args, out))
			return -1;
		capture_status(c->cap, out);
		return 0;
	}
	if (!strcmp(sub, "stop")) {
		if (no_args("capture stop", args, out))
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
	if (capture_start(c->cap, args, err, sizeof(err))) {
		fprintf(out, "%s\n", err);
		return -1;
	}
	fprintf(out, "capture started\n");
	return 0;
}

static int cmd_reload(struct ctl *c, char *args, FILE *out)
{
	if (no_args("reload", args, out))
		return -1;
	if (!c->reload) {
		fprintf(out, "reload: not available\n");
		return -1;
	}
	return c->reload(c, out) ? -1 : 0;
}

static const struct cmd cmds[] = {
	{"buffers", NULL, "the buffer pool: buffers per state", cmd_buffers},
	{"capture",
	 "start FILE [group G] [side ib|roce|both] [count N] [snaplen N] | stop | status",
	 "packet capture to a pcapng file in capture_dir", cmd_capture},
	{"channels", NULL, "queue pairs: groups, queues, backlog, counters, pps", cmd_channels},
	{"cores", NULL, "same as workers", cmd_workers},
	{"disable", "[name]", "turn a runtime feature off (no name: list them)", cmd_disable},
	{"enable", "[name[=value]]", "turn a runtime feature on or set it (no name: list)",
	 cmd_enable},
	{"endpoints", "[N]", "same as senders", cmd_senders},
	{"events", NULL, "the control thread's timers", cmd_events},
	{"health", NULL, "ok, or one line per failed health condition (fails if unhealthy)",
	 cmd_health},
	{"ha", NULL, "HA partitions: role, since when, transitions, last reason", cmd_ha},
	{"handover", "[partition]",
	 "make the peer (--ha-peer-control) active, then this bridge standby", cmd_handover},
	{"help", "[command]", "this list", cmd_help},
	{"interfaces", "[name]", "devices, ports, limits and GID tables", cmd_interfaces},
	{"join", "group [both|in|out]", "bridge one more group now", cmd_join},
	{"leave", "group", "stop bridging a group now", cmd_leave},
	{"multicast", NULL, "groups, join state per side, packets each way", cmd_multicast},
	{"exit", NULL, "same as quit", cmd_quit},
	{"quit", NULL, "leave the console (the bridge keeps running)", cmd_quit},
	{"reload", NULL, "re-read the configuration (as SIGHUP)", cmd_reload},
	{"role", "[partition] active|standby", "set the HA role (no argument: as ha)", cmd_role},
	{"senders", "[N]", "who sends into the bridge (N rows, default 100)", cmd_senders},
	{"shutdown", NULL, "stop the bridge (leave groups, final counters); never abbreviated",
	 cmd_shutdown},
	{"stats", "[--json]", "all counters: final-counters format, or one JSON object", cmd_stats},
	{"status", NULL,
	 "health, per-side counters, drops by reason, join summary (fails if unhealthy)",
	 cmd_status},
	{"tsi", "[filter]", "PGM streams (lines containing filter)", cmd_tsi},
	{"tuning", NULL, "host tuning report: isolation, IRQs, SMT, C-states (as --tune-check)",
	 cmd_tuning},
	{"workers", NULL, "worker threads: CPU, node, loop rate, heartbeat, latency", cmd_workers},
	{"zap", NULL, "reset the counters the console shows", cmd_zap},
	{NULL, NULL, NULL, NULL},
};

/* A command never reached by a prefix: it must be typed in full (shutdown). */
static bool cmd_exact(const struct cmd *k)
{
	return k->fn == cmd_shutdown;
}

/* console_exec, telling whether the command was quit/exit (*quit_seen). */
static int exec_line(struct ctl *c, const char *line, FILE *out, bool *quit_seen)
{
	char buf[CON_LINE_MAX], *args = buf, *name;
	const struct cmd *hit = NULL;
	size_t n;
	int nhits = 0;

	n = strlen(line);
	if (n >= sizeof(buf)) {
		fprintf(out, "command line too long (max %d bytes)\n", CON_LINE_MAX - 1);
		return -1;
	}
	memcpy(buf, line, n + 1);
	name = word(&args);
	if (!name || name[0] == '#')
		return 0;
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
		return -1;
	}
	if (nhits > 1) {
		fprintf(out, "ambiguous command '%s':", name);
		for (const struct cmd *k = cmds; k->name; k++)
			if (!strncmp(k->name, name, n) && !cmd_exact(k))
				fprintf(out, " %s", k->name);
		fprintf(out, "\n");
		return -1;
	}
	*quit_seen = hit->fn == cmd_quit;
	return hit->fn(c, args, out);
}

int console_exec(struct ctl *c, const char *line, FILE *out)
{
	bool quit;

	return exec_line(c, line, out, &quit);
}

/*
 * Run a line into a freshly allocated reply with the protocol's terminator; *quit tells
 * that it was quit (the client is closed after the reply).
 */
static char *run_line(struct console *con, const char *line, size_t *len, bool *quit)
{
	char *buf = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);
	int r;

	if (!f)
		return NULL;
	r = exec_line(con->c, line, f, quit);
	fputc(0, f);
	fputc(r ? '1' : '0', f);
	fputc('\n', f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	*len = sz;
	return buf;
}

/* ---- Clients ---- */

/* End the rate limit's window when it is over: say how many lines were left out. */
static void warn_window(struct console *con, uint64_t now)
{
	struct con_ratelimit *r = &con->warn;

	if (now - r->start_ms < CON_WARN_WINDOW_MS)
		return;
	if (r->left_out)
		log_warn("console: %" PRIu64 " more client warning%s in %d s not logged "
			 "(rate limit: %d per %d s)",
			 r->left_out, r->left_out == 1 ? "" : "s", CON_WARN_WINDOW_MS / 1000,
			 CON_WARN_BURST, CON_WARN_WINDOW_MS / 1000);
	r->start_ms = now;
	r->logged = 0;
	r->left_out = 0;
}

/* A warning caused by a client, within the rate limit. */
static void con_warn(struct console *con, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void con_warn(struct console *con, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	warn_window(con, mono_ms());
	if (con->warn.logged >= CON_WARN_BURST) {
		con->warn.left_out++;
		return;
	}
	con->warn.logged++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("%s", msg);
}

static void client_free(struct console *con, int slot)
{
	struct client *k = con->cl[slot];

	ctl_unwatch(con->c, k->fd);
	close(k->fd);
	free(k->out);
	free(k);
	con->cl[slot] = NULL;
}

static int client_slot(struct console *con, struct client *k)
{
	for (int i = 0; i < CON_CLIENTS_MAX; i++)
		if (con->cl[i] == k)
			return i;
	return -1;
}

/* Queue reply bytes for a client; false when the client is over its output limit. */
static bool client_queue(struct client *k, const char *p, size_t n)
{
	size_t pending = k->outlen - k->outoff;
	char *nb;

	if (pending + n > CON_OUT_MAX)
		return false;
	if (k->outoff) {
		memmove(k->out, k->out + k->outoff, pending);
		k->outlen = pending;
		k->outoff = 0;
	}
	nb = realloc(k->out, k->outlen + n);
	if (!nb)
		return false;
	memcpy(nb + k->outlen, p, n);
	k->out = nb;
	k->outlen += n;
	return true;
}

static void client_reply(struct console *con, struct client *k, const char *text, bool ok)
{
	char tail[3] = {0, ok ? '0' : '1', '\n'};

	(void)con;
	if (!client_queue(k, text, strlen(text)) || !client_queue(k, tail, 3))
		k->close_after = true;
}

/* Write what the socket takes; update epoll interest. false: the client is gone. */
static bool client_flush(struct console *con, struct client *k)
{
	unsigned want;

	while (k->outoff < k->outlen) {
		ssize_t w = send(k->fd, k->out + k->outoff, k->outlen - k->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return false;
		}
		k->outoff += (size_t)w;
	}
	if (k->outoff == k->outlen) {
		k->outoff = k->outlen = 0;
		if (k->close_after)
			return false;
	}
	/* Unread output pending: stop reading commands until the client catches up. */
	want = k->outlen ? EPOLLOUT : EPOLLIN;
	if (want != k->watching) {
		ctl_rewatch(con->c, k->fd, want, &k->tag);
		k->watching = want;
	}
	return true;
}

static void client_line(struct console *con, struct client *k)
{
	const char *refused = line_refused(&k->in);
	bool quit = false;
	char *reply;
	size_t len;

	if (refused) {
		client_reply(con, k, refused, false);
	} else {
		reply = run_line(con, k->in.buf, &len, &quit);
		k->close_after |= quit;
		if (!reply) {
			client_reply(con, k, "out of memory\n", false);
		} else {
			if (!client_queue(k, reply, len)) {
				con_warn(con,
					 "console: pid %d: reply of %zu bytes over the limit: "
					 "disconnected",
					 (int)k->pid, len);
				k->close_after = true;
				k->outlen = k->outoff = 0;
			}
			free(reply);
		}
	}
	line_reset(&k->in);
	k->line_ms = 0;
	k->last_ms = mono_ms();
}

/*
 * Look at received bytes until a command line is complete and its reply queued (the
 * next pipelined command waits until the client took the reply). false: client gone.
 */
static bool client_process(struct console *con, struct client *k)
{
	for (;;) {
		while (k->rawoff < k->rawlen) {
			unsigned char ch = (unsigned char)k->raw[k->rawoff++];

			if (!k->line_ms)
				k->line_ms = mono_ms();
			if (!line_put(&k->in, ch))
				continue;
			client_line(con, k);
			if (k->close_after || k->outlen)
				break;
		}
		if (k->rawoff == k->rawlen)
			k->rawoff = k->rawlen = 0;
		if (!client_flush(con, k))
			return false;
		/* The reply went out at once: go on with the next pipelined command. */
		if (k->outlen || !k->rawlen)
			return true;
	}
}

static void client_read(struct console *con, struct client *k)
{
	ssize_t n = recv(k->fd, k->raw, sizeof(k->raw), MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_free(con, client_slot(con, k));
		return;
	}
	if (n < 0)
		return;
	k->rawoff = 0;
	k->rawlen = (size_t)n;
	if (!client_process(con, k))
		client_free(con, client_slot(con, k));
}

/*
 * Is the peer a member of gid through its supplementary groups? SO_PEERCRED carries only
 * the primary gid; the rest is in /proc/PID/status (the peer is connected, so its pid is
 * alive; it could in theory exit and the pid be reused between accept and here: the
 * file then names someone else, a risk shared by every user of this interface).
 */
static bool peer_in_group(pid_t pid, gid_t gid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return sysgroup_status_has(path, gid) == 1;
}

/*
 * All slots taken: close the least recently active client to admit pid (a console that
 * slow or idle clients hold is no console). It is told why when nothing else is on its
 * way to it. Returns the freed slot.
 */
static int client_evict(struct console *con, pid_t pid)
{
	static const char msg[] = "console full: disconnected to admit a new client (this one "
				  "was the least recently active)\n\0"
				  "1\n";
	uint64_t now = mono_ms();
	struct client *k;
	int old = 0;

	for (int i = 1; i < CON_CLIENTS_MAX; i++)
		if (con->cl[i]->last_ms < con->cl[old]->last_ms)
			old = i;
	con_warn(con,
		 "console: %d clients connected: pid %d (no command for %.1f s) disconnected "
		 "to admit pid %d",
		 CON_CLIENTS_MAX, (int)con->cl[old]->pid,
		 (double)(now - con->cl[old]->last_ms) / 1000, (int)pid);
	k = con->cl[old];
	if (!k->outlen && send(k->fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("console: notice not sent: %s", strerror(errno));
	/*
	 * We run inside the control thread's event batch, which may still hold an event
	 * of this client: close it now, free it after the batch (console_tick).
	 */
	ctl_unwatch(con->c, k->fd);
	close(k->fd);
	k->evicted = true;
	k->next_evicted = con->evicted;
	con->evicted = k;
	con->cl[old] = NULL;
	return old;
}

static void on_accept(struct console *con)
{
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct client *k;
	int fd, slot;

	fd = accept4(con->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen)) {
		close(fd);
		return;
	}
	if (cr.uid != 0 && cr.uid != geteuid() && cr.gid != con->admit_gid &&
	    !peer_in_group(cr.pid, con->admit_gid)) {
		char msg[128];
		int len = snprintf(msg, sizeof(msg),
				   "ib2roce: permission denied (uid %u, gid %u)\n%c1\n",
				   (unsigned)cr.uid, (unsigned)cr.gid, 0);

		con_warn(con,
			 "console: refused pid %d uid %u gid %u (admitted: root, uid %u, gid %u)",
			 (int)cr.pid, (unsigned)cr.uid, (unsigned)cr.gid, (unsigned)geteuid(),
			 (unsigned)con->admit_gid);
		if (send(fd, msg, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("console: refusal not sent: %s", strerror(errno));
		close(fd);
		return;
	}
	for (slot = 0; slot < CON_CLIENTS_MAX && con->cl[slot]; slot++)
		;
	if (slot == CON_CLIENTS_MAX)
		slot = client_evict(con, cr.pid);
	k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return;
	}
	k->fd = fd;
	k->pid = cr.pid;
	k->uid = cr.uid;
	k->last_ms = mono_ms();
	k->tag = (struct ev_tag){.kind = EV_CONSOLE, .ptr = k};
	k->watching = EPOLLIN;
	if (ctl_watch(con->c, fd, EPOLLIN, &k->tag)) {
		close(fd);
		free(k);
		return;
	}
	con->cl[slot] = k;
	log_debug("console: client pid %d uid %u", (int)cr.pid, (unsigned)cr.uid);
}

/* ---- The terminal (--debug) ---- */

static void tty_read(struct console *con)
{
	char buf[4096];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* End of input: the bridge goes on, the terminal console stops. */
		ctl_unwatch(con->c, STDIN_FILENO);
		con->tty = false;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		const char *refused;

		if (!line_put(&con->tin, (unsigned char)buf[i]))
			continue;
		refused = line_refused(&con->tin);
		if (refused)
			fputs(refused, stdout);
		else
			console_exec(con->c, con->tin.buf, stdout);
		fflush(stdout);
		line_reset(&con->tin);
	}
}

void console_event(struct console *con, void *tag, unsigned events)
{
	struct ev_tag *t = tag;

	if (t == &con->ltag) {
		on_accept(con);
		return;
	}
	if (t == &con->ttytag) {
		tty_read(con);
		return;
	}
	{
		struct client *k = t->ptr;

		if (k->evicted)
			return;
		if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
			client_free(con, client_slot(con, k));
			return;
		}
		if (k->outlen) {
			/* Reply written out: go on with commands already received. */
			if (!client_flush(con, k) || (!k->outlen && !client_process(con, k)))
				client_free(con, client_slot(con, k));
			return;
		}
		client_read(con, k);
	}
}

/* Close a client without a command for console_idle seconds (unread output or not). */
static void client_idle(struct console *con, int i, uint64_t now)
{
	uint64_t idle_ms = (uint64_t)atomic_load(&con->c->con_idle_s) * 1000;
	struct client *k = con->cl[i];

	if (k->line_ms || now - k->last_ms < idle_ms)
		return;
	if (k->outlen || k->close_after) {
		/* It does not read what it was sent (or its last words) either. */
		con_warn(con,
			 "console: pid %d: no command and unread output for %" PRIu64
			 " s: disconnected",
			 (int)k->pid, idle_ms / 1000);
		client_free(con, i);
		return;
	}
	con_warn(con, "console: pid %d: no command for %" PRIu64 " s: disconnected", (int)k->pid,
		 idle_ms / 1000);
	client_reply(con, k, "no command for too long: disconnected\n", false);
	k->close_after = true;
	if (!client_flush(con, k))
		client_free(con, i);
}

/* Free the clients evicted during the event batch that just ended. */
static void evicted_free(struct console *con)
{
	while (con->evicted) {
		struct client *k = con->evicted;

		con->evicted = k->next_evicted;
		free(k->out);
		free(k);
	}
}

void console_tick(struct console *con, uint64_t now)
{
	evicted_free(con);
	warn_window(con, now);
	for (int i = 0; i < CON_CLIENTS_MAX; i++) {
		struct client *k = con->cl[i];

		if (k)
			client_idle(con, i, now);
		k = con->cl[i];
		if (!k || !k->line_ms || now - k->line_ms < CON_LINE_MS)
			continue;
		con_warn(con, "console: pid %d: command line not finished in %d s: disconnected",
			 (int)k->pid, CON_LINE_MS / 1000);
		client_reply(con, k, "command line not finished in time\n", false);
		k->close_after = true;
		k->line_ms = 0;
		line_reset(&k->in);
		if (!client_flush(con, k))
			client_free(con, i);
	}
}

/* ---- The socket ---- */

/* Is a bridge listening at path? (connect succeeds) */
static bool path_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = !connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	return live;
}

static int listen_path(struct console *con, const char *path, bool set_group, char *err,
		       size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int fd, r;

	if (!path)
		return opt_errf(err, errlen, -EINVAL, "no control socket path");
	if (strlen(path) >= sizeof(sa.sun_path))
		return opt_errf(err, errlen, -ENAMETOOLONG, "control socket path too long: %s",
				path);
	strcpy(sa.sun_path, path);
	r = control_make_dir(path, err, errlen);
	if (r)
		return r;
	if (set_group) {
		/* The admitted group must reach the socket: its directory too, if ours. */
		char dir[CONTROL_PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			if (!stat(dir, &st) && st.st_uid == geteuid() &&
			    (chown(dir, (uid_t)-1, con->admit_gid) ||
			     chmod(dir, (st.st_mode & 07777) | 0010)))
				return opt_errf(err, errlen, -errno, "%s: %s", dir,
						strerror(errno));
		}
	}
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return opt_errf(err, errlen, -EEXIST, "%s exists and is not a socket",
					path);
		if (path_live(&sa))
			return opt_errf(err, errlen, -EADDRINUSE,
					"another bridge is listening on %s", path);
		unlink(path); /* stale: its bridge is gone */
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return opt_errf(err, errlen, -errno, "control socket: %s", strerror(errno));
	/* Never world-accessible, not even between bind and chmod. */
	old = umask(0117);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r || chmod(path, 0660) || (set_group && chown(path, (uid_t)-1, con->admit_gid)) ||
	    listen(fd, CON_CLIENTS_MAX)) {
		r = -errno;
		opt_errf(err, errlen, r, "control socket %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return r;
	}
	con->lfd = fd;
	con->own_path = true;
	snprintf(con->path, sizeof(con->path), "%s", path);
	return 0;
}

struct console *console_open(struct ctl *c, const struct console_cfg *cfg, char *err, size_t errlen)
{
	struct console *con = calloc(1, sizeof(*con));
	int r;

	if (!con) {
		opt_errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	con->c = c;
	con->lfd = -1;
	con->admit_gid = cfg->admit_gid == (gid_t)-1 ? getegid() : cfg->admit_gid;
	if (cfg->listen_fd >= 0) {
		con->lfd = cfg->listen_fd;
		fcntl_nonblock(con->lfd);
		if (cfg->path)
			snprintf(con->path, sizeof(con->path), "%s", cfg->path);
	} else if ((r = listen_path(con, cfg->path, cfg->set_group, err, errlen))) {
		free(con);
		errno = -r;
		return NULL;
	}
	con->ltag = (struct ev_tag){.kind = EV_CONSOLE, .ptr = NULL};
	if (ctl_watch(c, con->lfd, EPOLLIN, &con->ltag)) {
		r = errno;
		opt_errf(err, errlen, -r, "control socket: epoll: %s", strerror(r));
		console_close(con);
		errno = r;
		return NULL;
	}
	if (cfg->tty) {
		con->ttytag = (struct ev_tag){.kind = EV_CONSOLE, .ptr = NULL};
		fcntl_nonblock(STDIN_FILENO);
		con->tty = !ctl_watch(c, STDIN_FILENO, EPOLLIN, &con->ttytag);
	}
	c->con = con;
	return con;
}

void console_close(struct console *con)
{
	if (!con)
		return;
	for (int i = 0; i < CON_CLIENTS_MAX; i++)
		if (con->cl[i])
			client_free(con, i);
	evicted_free(con);
	if (con->tty)
		ctl_unwatch(con->c, STDIN_FILENO);
	if (con->lfd >= 0) {
		ctl_unwatch(con->c, con->lfd);
		close(con->lfd);
	}
	if (con->own_path)
		unlink(con->path);
	if (con->c->con == con)
		con->c->con = NULL;
	free(con);
}
