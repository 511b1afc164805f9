/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_console.c - libFuzzer target for the console's command path (control/console.c
 * served by lib/conserver.c): the bytes of one client go through the real client
 * state machine (receive, line
 * assembly, command dispatch with abbreviations, argument parsing, reply queueing and
 * writing, pipelining) over a socket pair, in chunks whose size the input's first byte
 * chooses. The runtime features are the test fixture's (tests/control/fixture.h), group
 * specs of join are parsed by the engine's parser (engine/mgid.c); what the commands
 * would show of a running bridge (show_*, the tuning report) is replaced by one line
 * each, and the packet capture by a model of its state, since there is no bridge here.
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

/* The fuzzed bridge has no configuration to reload (c->reload is NULL there). */
int ctl_reload(struct ctl *c, FILE *out)
{
	(void)c;
	(void)out;
	return -ENOSYS;
}

int ctl_watch(struct ctl *c, int fd, unsigned events, struct ev_tag *tag)
{
	(void)c, (void)fd, (void)events, (void)tag;
	return 0;
}

void ctl_unwatch(struct ctl *c, int fd)
{
	(void)c, (void)fd;
}

/* join: the engine's group spec parser, then a small table of the groups joined. */
int ctl_group_add(struct ctl *c, const char *spec, enum group_dir dir, char *err, size_t errlen)
{
	struct group g;
	int r;

	REQUIRE(dir <= DIR_OUT);
	memset(&g, 0, sizeof(g));
	r = group_spec_parse(&g, spec, (enum mgid_fmt)c->def_fmt, c->def_port, c->def_tos, err,
			     errlen);
	if (r) {
		REQUIRE(r < 0 && memchr(err, 0, errlen) && err[0]);
		return r;
	}
	for (unsigned i = 0; i < njoined; i++)
		if (!strcmp(joined[i], spec))
			return opt_errf(err, errlen, -EEXIST, "%s is already bridged", spec);
	if (njoined == JOINED_MAX)
		return opt_errf(err, errlen, -ENOSPC, "too many groups");
	REQUIRE(strlen(spec) < CON_LINE_MAX);
	strcpy(joined[njoined++], spec);
	return 0;
}

int ctl_group_remove(struct ctl *c, const char *name, char *err, size_t errlen)
{
	(void)c;
	for (unsigned i = 0; i < njoined; i++)
		if (!strcmp(joined[i], name)) {
			memmove(joined[i], joined[i + 1], (njoined - i - 1) * sizeof(joined[0]));
			njoined--;
			return 0;
		}
	return opt_errf(err, errlen, -ENOENT, "%s is not bridged", name);
}

void ctl_events(struct ctl *c, FILE *out)
{
	(void)c;
	fprintf(out, "events\n");
}

#define SHOW(name)                                                                                 \
	void name(struct ctl *c, FILE *out)                                                        \
	{                                                                                          \
		(void)c;                                                                           \
		fprintf(out, #name "\n");                                                          \
	}
SHOW(show_final)
SHOW(show_multicast)
SHOW(show_channels)
SHOW(show_buffers)
SHOW(show_workers)
SHOW(report_json)

bool show_status(struct ctl *c, FILE *out)
{
	(void)c;
	fprintf(out, "show_status\n");
	return true;
}

bool health_print(struct ctl *c, FILE *out)
{
	(void)c;
	fprintf(out, "health ok\n");
	return true;
}

void show_counters(struct ctl *c, FILE *out, bool final)
{
	(void)c;
	fprintf(out, "counters%s\n", final ? " (final)" : "");
}

void show_zap(struct ctl *c)
{
	(void)c;
}

int show_interfaces(struct ctl *c, const char *name, FILE *out)
{
	(void)c;
	fprintf(out, "interfaces %s\n", name ? name : "");
	return name && strcmp(name, "sim_ib0") ? -ENOENT : 0;
}

int show_senders(struct ctl *c, const char *arg, FILE *out)
{
	uint64_t n;
	char err[OPT_ERR_LEN];

	(void)c;
	if (arg && opt_parse_uint(arg, 1, 1000000, &n, err, sizeof(err))) {
		fprintf(out, "senders: %s\n", err);
		return -EINVAL;
	}
	fprintf(out, "senders\n");
	return 0;
}

void show_tsi(struct ctl *c, const char *filter, FILE *out)
{
	(void)c;
	fprintf(out, "tsi %s\n", filter ? filter : "");
}

void tune_input_init(struct tune_input *in)
{
	memset(in, 0, sizeof(*in));
}

int tune_input_add_nic(struct tune_input *in, const char *name, const char *ibdev_path,
		       const char *irq_root)
{
	(void)in, (void)name, (void)ibdev_path, (void)irq_root;
	return 0;
}

int tune_report_build(const struct tune_input *in, struct tune_report *r)
{
	(void)in;
	memset(r, 0, sizeof(*r));
	return 0;
}

void tune_report_print(const struct tune_report *r, FILE *out)
{
	(void)r;
	fprintf(out, "tuning\n");
}

void tune_report_free(struct tune_report *r)
{
	(void)r;
}

/* capture: a model that knows whether a capture runs (control/capture.c writes files). */
static bool capturing;

int capture_start(struct capture *cap, char *args, char *err, size_t errlen)
{
	(void)cap;
	if (capturing)
		return opt_errf(err, errlen, -EBUSY, "capture start: a capture is running");
	if (!args || !*args)
		return opt_errf(err, errlen, -EINVAL, "capture start: FILE expected");
	capturing = true;
	return 0;
}

int capture_stop(struct capture *cap, FILE *out)
{
	(void)cap;
	if (!capturing)
		return -ENOENT;
	capturing = false;
	fprintf(out, "capture stopped\n");
	return 0;
}

void capture_status(struct capture *cap, FILE *out)
{
	(void)cap;
	fprintf(out, "capture %s\n", capturing ? "running" : "idle");
}

/* ha (control/ha.c sets roles on real groups and talks to a peer): one partition,
 * "default", no peer; each answer is one line, as the real ones end. */
int ha_role_set(struct ha *ha, struct ctl *c, const char *name, bool standby, const char *reason,
		FILE *out)
{
	(void)ha;
	(void)c;
	(void)reason;
	if (name && strcmp(name, "default")) {
		fprintf(out, "role: no partition '%s'\n", name);
		return -ENOENT;
	}
	fprintf(out, "partition default: %s\n", standby ? "standby" : "active");
	return 0;
}

int ha_handover(struct ha *ha, struct ctl *c, const char *name, const char *why, bool stopping,
		ha_done_fn *done, void *arg, FILE *out)
{
	(void)done;
	(void)arg;
	(void)ha;
	(void)c;
	(void)name;
	(void)why;
	(void)stopping;
	fprintf(out, "handover: no peer (--ha-peer-control)\n");
	return -EINVAL;
}

int ha_takeover(struct ha *ha, struct ctl *c, char *args, FILE *out)
{
	(void)ha;
	(void)c;
	(void)args;
	fprintf(out, "takeover: partition default: refused: no peer here\n");
	return -1;
}

const char *ha_peer(const struct ha *ha)
{
	(void)ha;
	return NULL;
}

void ha_show(struct ha *ha, struct ctl *c, FILE *out)
{
	(void)ha;
	(void)c;
	fprintf(out, "partition default active\n");
}

/* ---- The harness ---- */

static struct pool pool;
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
	pool.nbufs = 1024;
	pool.buf_size = 4096;
	br.pool = &pool;
	ctl.br = &br;
	ctl.def_port = 4711;
	ctl.cap = (struct capture *)&capturing; /* only compared with NULL by console.c */
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
	capturing = false;
	model(data + 1, size - 1);
	memset(&r, 0, sizeof(r));
	memset(&con, 0, sizeof(con));
	con.ep = -1; /* no epoll: the events are made up below */
	con.cfg.exec = console_run;
	con.cfg.exec_arg = &ctl;
	ctl.stop = false;
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
