/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_console.c - libFuzzer target for the console's command path (control/console.c
 * served by lib/conserver.c): the bytes of one client go through the real client
 * state machine (receive, line
 * assembly, command dispatch with abbreviations, argument parsing, reply queueing and
 * writing, pipelining) over a socket pair, in chunks whose size the input's first byte
 * chooses. The runtime features are the test fixture's (tests/control/fixture.h), group
 * specs of join are parsed by the engine's parser (engine/mgid.c); the commands the other
 * modules register (ctl.c, show.c, health.c, ha.c, capture.c) are stand-ins with their
 * names and synopses, each answering one line (join and leave with a model of the groups
 * joined), since there is no bridge here.
 *
 * Invariants (a broken one traps): every line the client ends gets exactly one reply,
 * framed as text, NUL, '0' or '1', newline, in order; a line of 1024 bytes or more is
 * refused as too long, a line with a control character as such, both with status 1 and
 * nothing run; a client that reads its replies is dropped only after a command that
 * succeeded (quit, exit: the console closes after the reply), else never; the joined
 * groups of the model stay consistent with join/leave.
 * Built and run by run_fuzz.sh (suite 'fuzz').
 */
#include <sys/ioctl.h>

#include "../../lib/concmd.c"
#include "../../lib/conserver.c"
#include "../../control/console.c"

#include "fixture.h"

#define REQUIRE(c)                                                                                 \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

/* ---- What console.c needs of the rest of the bridge ---- */

const char *const group_dir_name[3] = {"both", "in", "out"};

#define JOINED_MAX 8
static char joined[JOINED_MAX][CON_LINE_MAX];
static unsigned njoined;
static char logbuf[1024];

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	(void)prio;
	va_start(ap, fmt);
	vsnprintf(logbuf, sizeof(logbuf), fmt, ap);
	va_end(ap);
}

void log_ctx(int prio, const char *device, const char *group, const char *fmt, ...)
{
	va_list ap;

	(void)prio;
	(void)device;
	(void)group;
	va_start(ap, fmt);
	vsnprintf(logbuf, sizeof(logbuf), fmt, ap);
	va_end(ap);
}

void log_text(int prio, const char *prefix, char *text)
{
	(void)prio;
	snprintf(logbuf, sizeof(logbuf), "%s%s", prefix, text);
}

/* The loop (control/loop.c): nothing is watched here, the events are made up below. */
int loop_watch(int fd, unsigned events, loop_fd_fn *fn, void *arg)
{
	(void)fd, (void)events, (void)fn, (void)arg;
	return 0;
}

void loop_unwatch(int fd)
{
	(void)fd;
}

int loop_on_pass(loop_pass_fn *fn, void *arg)
{
	(void)fn, (void)arg;
	return 0;
}

static bool stopped;

void loop_stop(void)
{
	stopped = true;
}

/*
 * The other modules' commands (ctl.c, show.c, health.c, ha.c, capture.c register them
 * with the console): the same names, synopses and flags, so that the dispatch (prefixes,
 * aliases, ambiguity, exact names) is the bridge's; what they would show of a running
 * bridge is one line each. join and leave keep a model of the groups joined (the group
 * spec parsed by the engine's parser), senders and interfaces check their argument.
 */
static int stub_line(struct ctl *c, char *args, FILE *out)
{
	(void)c;
	(void)args;
	fprintf(out, "ok\n");
	return 0;
}

static int stub_join(struct ctl *c, char *args, FILE *out)
{
	char *spec = concmd_word(&args), *d = concmd_word(&args), err[OPT_ERR_LEN];
	struct group g;
	int r;

	if (!spec || (d && strcmp(d, "both") && strcmp(d, "in") && strcmp(d, "out")) ||
	    concmd_no_args("join", args, out)) {
		fprintf(out, "join: usage\n");
		return -1;
	}
	memset(&g, 0, sizeof(g));
	r = group_spec_parse(&g, spec, (enum mgid_fmt)c->def_fmt, c->def_port, c->def_tos,
			     c->def_qkey, err, sizeof(err));
	if (r) {
		REQUIRE(r < 0 && memchr(err, 0, sizeof(err)) && err[0]);
		fprintf(out, "join: %s\n", err);
		return -1;
	}
	for (unsigned i = 0; i < njoined; i++)
		if (!strcmp(joined[i], spec)) {
			fprintf(out, "join: %s is already bridged\n", spec);
			return -1;
		}
	if (njoined == JOINED_MAX) {
		fprintf(out, "join: too many groups\n");
		return -1;
	}
	REQUIRE(strlen(spec) < CON_LINE_MAX);
	strcpy(joined[njoined++], spec);
	fprintf(out, "joining %s\n", spec);
	return 0;
}

static int stub_leave(struct ctl *c, char *args, FILE *out)
{
	char *name = concmd_word(&args);

	(void)c;
	if (!name || concmd_no_args("leave", args, out)) {
		fprintf(out, "leave: usage: leave <group>\n");
		return -1;
	}
	for (unsigned i = 0; i < njoined; i++)
		if (!strcmp(joined[i], name)) {
			memmove(joined[i], joined[i + 1], (njoined - i - 1) * sizeof(joined[0]));
			njoined--;
			fprintf(out, "left %s\n", name);
			return 0;
		}
	fprintf(out, "leave: %s is not bridged\n", name);
	return -1;
}

static int stub_senders(struct ctl *c, char *args, FILE *out)
{
	char *n = concmd_word(&args), err[OPT_ERR_LEN];
	uint64_t v;

	(void)c;
	if (concmd_no_args("senders", args, out))
		return -1;
	if (n && opt_parse_uint(n, 1, 1000000, &v, err, sizeof(err))) {
		fprintf(out, "senders: %s\n", err);
		return -1;
	}
	fprintf(out, "senders\n");
	return 0;
}

static int stub_interfaces(struct ctl *c, char *args, FILE *out)
{
	char *name = concmd_word(&args);

	(void)c;
	if (concmd_no_args("interfaces", args, out))
		return -1;
	if (name && strcmp(name, "sim_ib0")) {
		fprintf(out, "no interface '%s'\n", name);
		return -1;
	}
	fprintf(out, "interfaces\n");
	return 0;
}

static const struct console_cmd module_cmds[] = {
	{{"buffers", NULL, "", false}, stub_line},
	{{"capture", "start FILE | stop | status", "", false}, stub_line},
	{{"channels", NULL, "", false}, stub_line},
	{{"cores", NULL, "", false}, stub_line},
	{{"endpoints", "[N]", "", false}, stub_senders},
	{{"events", NULL, "", false}, stub_line},
	{{"ha", NULL, "", false}, stub_line},
	{{"handover", "[partition]", "", false}, stub_line},
	{{"health", NULL, "", false}, stub_line},
	{{"interfaces", "[name]", "", false}, stub_interfaces},
	{{"join", "group [both|in|out]", "", false}, stub_join},
	{{"leave", "group", "", false}, stub_leave},
	{{"multicast", NULL, "", false}, stub_line},
	{{"reload", NULL, "", false}, stub_line},
	{{"role", "[partition] active|standby", "", false}, stub_line},
	{{"senders", "[N]", "", false}, stub_senders},
	{{"stats", "[--json]", "", false}, stub_line},
	{{"status", NULL, "", false}, stub_line},
	{{"takeover", "prepare|commit partition id", "", false}, stub_line},
	{{"tsi", "[filter]", "", false}, stub_line},
	{{"tuning", NULL, "", false}, stub_line},
	{{"workers", NULL, "", false}, stub_line},
	{{"zap", NULL, "", false}, stub_line},
	{{NULL, NULL, NULL, false}, NULL},
};

/* ---- The harness ---- */

static struct bridge br;
static struct ctl ctl;

/* The replies read so far, split at their terminators. */
struct replies {
	char text[CON_LINE_MAX + 4096];
	size_t len;
	unsigned n;
	char last; /* status of the last reply */
};

/* The model's verdict for each line the client ends: 'L' too long, 'C' control
 * character, 'R' run. */
static char expect[4096];
static unsigned nexpect;

static void model(const uint8_t *data, size_t size)
{
	size_t len = 0;
	bool binary = false;

	for (size_t i = 0; i < size; i++) {
		uint8_t ch = data[i];

		if (ch == '\n') {
			if (nexpect < sizeof(expect))
				expect[nexpect] = len >= CON_LINE_MAX ? 'L' : binary ? 'C' : 'R';
			nexpect++;
			len = 0;
			binary = false;
			continue;
		}
		if ((ch < 0x20 && ch != '\t' && ch != '\r') || ch == 0x7f)
			binary = true;
		len++;
	}
}

static const char too_long[] = "command line too long (max 1023 bytes)\n";
static const char control[] = "control characters in the command line\n";

static void got_reply(struct replies *r, char st)
{
	unsigned i = r->n;

	REQUIRE(st == '0' || st == '1');
	REQUIRE(i < nexpect);
	if (i < sizeof(expect)) {
		if (expect[i] == 'L')
			REQUIRE(st == '1' && r->len == sizeof(too_long) - 1 &&
				!memcmp(r->text, too_long, r->len));
		else if (expect[i] == 'C')
			REQUIRE(st == '1' && r->len == sizeof(control) - 1 &&
				!memcmp(r->text, control, r->len));
		else
			REQUIRE(!(r->len == sizeof(too_long) - 1 &&
				  !memcmp(r->text, too_long, r->len)));
	}
	r->n++;
	r->last = st;
	r->len = 0;
}

/* Read what the console wrote, checking the framing: text, NUL, status, newline. */
static void drain(int fd, struct replies *r, int *state)
{
	char buf[8192];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			char ch = buf[i];

			if (*state == 0) { /* text */
				if (ch == 0) {
					*state = 1;
					continue;
				}
				REQUIRE(r->len < sizeof(r->text));
				r->text[r->len++] = ch;
			} else if (*state == 1) { /* status */
				got_reply(r, ch);
				*state = 2;
			} else { /* newline */
				REQUIRE(ch == '\n');
				*state = 0;
			}
		}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fixture_setup();
	ctl.br = &br;
	ctl.def_port = 4711;
	ctl.def_qkey = BR_UDP_QKEY;
	REQUIRE(console_init(&ctl) == 0 && console_cmd_register(module_cmds) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct replies r;
	struct conserver con;
	struct client *k;
	size_t chunk, off = 1;
	int sv[2], state = 0;
	bool gone = false;

	if (size < 1 || size > 64 * 1024)
		return -1;
	chunk = (size_t)data[0] % 64 * 64 + 1; /* 1 .. 4033 bytes per send */
	nexpect = 0;
	njoined = 0;
	model(data + 1, size - 1);
	memset(&r, 0, sizeof(r));
	memset(&con, 0, sizeof(con));
	con.ep = -1; /* no epoll: the events are made up below */
	con.cfg.exec = console_run;
	con.cfg.exec_arg = &ctl;
	stopped = false;
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	k = calloc(1, sizeof(*k));
	REQUIRE(k != NULL);
	k->fd = sv[0];
	k->watching = EPOLLIN;
	k->last_ms = mono_ms();
	con.cl[0] = k;

	/* The client sends a chunk when the console reads, and reads every reply. */
	while (!gone && (off < size || k->outlen)) {
		if (k->outlen) {
			drain(sv[1], &r, &state);
			client_event(&con, k, EPOLLOUT);
		} else {
			size_t n = size - off < chunk ? size - off : chunk;

			REQUIRE(send(sv[1], data + off, n, MSG_DONTWAIT) == (ssize_t)n);
			off += n;
			client_event(&con, k, EPOLLIN);
			/* Bytes the console did not take in one read wait in the socket. */
			while (con.cl[0] && !k->outlen) {
				int avail = 0;

				REQUIRE(ioctl(sv[0], FIONREAD, &avail) == 0);
				if (!avail)
					break;
				client_event(&con, k, EPOLLIN);
			}
		}
		gone = con.cl[0] == NULL;
	}
	drain(sv[1], &r, &state);
	REQUIRE(state == 0 && r.n <= nexpect);
	if (gone) {
		/* Closed by the console only after a command that succeeded: quit (exit). */
		REQUIRE(r.n >= 1 && r.last == '0');
	} else {
		/* Otherwise every line got its reply; hanging up frees the client. */
		REQUIRE(r.n == nexpect);
		shutdown(sv[1], SHUT_WR);
		client_event(&con, k, EPOLLIN);
		REQUIRE(con.cl[0] == NULL);
	}
	close(sv[1]);
	return 0;
}
