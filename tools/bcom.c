/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bcom.c - the console client of ib2roce (docs/bcom.1).
 *
 * It connects to the bridge's control socket and sends command lines; the bridge
 * answers each with text, a NUL byte, a status byte ('0' success, '1' failure) and a
 * newline, on a connection that stays open. Three ways to run:
 *
 *   bcom COMMAND [ARG]...   one command, its reply on stdout, exit status from the reply
 *   bcom  (stdin a tty)     an interactive prompt: libedit (line editing, UTF-8, history
 *                           in ~/.bcom_history, Tab completes commands, features, groups)
 *   bcom  (stdin not a tty) commands read line by line from stdin
 *
 * quit and exit (and EOF) leave bcom: they are never sent, the bridge keeps running.
 * shutdown stops the bridge: on a terminal bcom asks first, unless -y/--yes.
 *
 * Exit status: 0 success, 1 a command failed, 2 usage error, 3 no (more) connection.
 *
 * Signals are blocked outside the waits (ppoll) and readline, which makes the checks of
 * the flags below race-free. ^C at the prompt drops the line being typed; ^C while
 * waiting for a reply leaves, as the shell expects of any command.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <editline/readline.h>
#include <locale.h>
#include <wchar.h>

#include "paths.h"
#include "version_line.h"

#define BCOM_PROMPT	   "ib2roce> "
#define BCOM_HISTORY_FILE  ".bcom_history"
#define BCOM_HISTORY_MAX   500
#define BCOM_EXIT_WORD	   "exit"
#define BCOM_QUIT_WORD	   "quit"
#define BCOM_SHUTDOWN_WORD "shutdown"

/* The console protocol: a command line is at most this long before its newline... */
#define CMD_MAX 1023
/* ...and a reply ends with NUL, a status byte and a newline. */
#define REPLY_END	 '\0'
#define REPLY_STATUS_OK	 '0'
#define REPLY_STATUS_ERR '1'

/* The bridge that a system service creates: hinted at when the default path is empty. */
#define SYSTEM_SOCK "/run/ib2roce/ib2roce.sock"

enum bcom_exit {
	EXIT_OK = 0,
	EXIT_FAILED = 1, /* a command failed, or its reply could not be written */
	EXIT_USAGE = 2,
	EXIT_CONN = 3, /* no bridge, or the connection was lost */
};

/* What reading a reply came to. */
enum reply {
	REPLY_OK,      /* status '0' */
	REPLY_FAILED,  /* status '1' */
	REPLY_CLOSED,  /* the bridge closed the connection before the terminator */
	REPLY_BAD,     /* not the protocol */
	REPLY_ERROR,   /* a socket error (conn.err) */
	REPLY_OUTPUT,  /* stdout could not be written (errno in conn.err) */
	REPLY_STOPPED, /* a signal asked us to leave */
};

struct conn {
	int fd;
	const char *path;
	int err;
	char buf[4096];
	size_t head, tail; /* received bytes not yet consumed: buf[head..tail) */
};

/*
 * Signal state, shared with the handlers (and so file-static). The handled signals are
 * blocked except inside ppoll() and readline(), with wait_mask.
 */
static volatile sig_atomic_t stop_sig;	  /* SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE */
static volatile sig_atomic_t in_readline; /* SIGINT drops the line rather than leaving */
static volatile sig_atomic_t line_cancel; /* SIGINT came while in readline */
static volatile sig_atomic_t winch;	  /* SIGWINCH: the terminal's size changed */
static sigset_t wait_mask;

static void usage(FILE *f)
{
	char path[CONTROL_PATH_MAX];

	if (control_default_path(path, sizeof(path)) < 0)
		strcpy(path, "(too long)");
	fprintf(f,
		"Usage: bcom [--control PATH] [-y] [COMMAND [ARG]...]\n"
		"Send COMMAND to a running ib2roce bridge and print its reply. Without a\n"
		"command, read commands from the terminal (with line editing, history and\n"
		"Tab completion) or, when standard input is not a terminal, one per line.\n"
		"quit, exit or end of input leave bcom; the bridge keeps running.\n"
		"\"bcom shutdown\" stops the bridge: on a terminal it asks first.\n"
		"\n"
		"      --control PATH  the bridge's control socket\n"
		"                      (default: %s)\n"
		"  -y, --yes           do not ask before shutdown (also: shutdown --yes)\n"
		"  -h, --help          show this help\n"
		"      --version       show the version\n"
		"\n"
		"Exit status: 0 success, 1 a command failed, 2 usage error,\n"
		"3 no connection to the bridge. \"bcom help\" lists the bridge's commands.\n",
		path);
}

/* Write everything; 0 or -errno. A signal that asks us to leave ends it (-EINTR). */
static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);

		if (r < 0) {
			if (errno == EINTR && !stop_sig)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_str(int fd, const char *s)
{
	return write_all(fd, s, strlen(s));
}

/* Connect to path; the socket or -errno. */
static int conn_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* An interrupted AF_UNIX connect (full backlog) has queued nothing: try again. */
	do
		ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	while (ret < 0 && errno == EINTR && !stop_sig);
	if (ret < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

/* Connect, or explain on stderr why not. 0 or -errno. */
static int conn_open(struct conn *c, const char *path, bool is_default)
{
	struct stat st;
	int fd = conn_connect(path);

	memset(c, 0, sizeof(*c));
	c->path = path;
	c->fd = fd;
	if (fd >= 0)
		return 0;
	if (fd == -EACCES || fd == -EPERM)
		fprintf(stderr, "bcom: %s: permission denied\n", path);
	else if (fd == -ECONNREFUSED && stat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		/* connect(2) on a file that is not a socket fails with ECONNREFUSED. */
		fprintf(stderr,
			"bcom: no bridge at %s: not a socket (--control names the "
			"bridge's socket)\n",
			path);
	else
		fprintf(stderr, "bcom: no bridge at %s: %s\n", path, strerror(-fd));
	/* A user's default is not where a system service listens: say so. */
	if (is_default && strcmp(path, SYSTEM_SOCK) && stat(SYSTEM_SOCK, &st) == 0 &&
	    S_ISSOCK(st.st_mode))
		fprintf(stderr, "bcom: a bridge listens at %s: try --control %s\n", SYSTEM_SOCK,
			SYSTEM_SOCK);
	return fd;
}

/* Send one command and its newline. 0 or -errno (-EPIPE: the bridge closed). */
static int conn_send(struct conn *c, const char *line)
{
	char msg[CMD_MAX + 2];
	size_t n = strlen(line), off = 0;

	memcpy(msg, line, n);
	msg[n++] = '\n';
	while (off < n) {
		/* MSG_NOSIGNAL: a closed bridge is an error to report, not a SIGPIPE. */
		ssize_t r = send(c->fd, msg + off, n - off, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR && !stop_sig)
				continue;
			return -errno;
		}
		off += (size_t)r;
	}
	return 0;
}

/* Wait for fds (signals let in meanwhile). poll's result, or -1 with errno. */
static int wait_fds(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct timespec ts = {.tv_sec = timeout_ms / 1000,
			      .tv_nsec = (long)(timeout_ms % 1000) * 1000000};

	return ppoll(fds, n, timeout_ms < 0 ? NULL : &ts, &wait_mask);
}

/* Receive more bytes into the empty buffer: >0, 0 when closed, or -errno. */
static ssize_t conn_fill(struct conn *c)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	ssize_t r;

	c->head = c->tail = 0;
	for (;;) {
		if (stop_sig)
			return -EINTR;
		if (wait_fds(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		r = read(c->fd, c->buf, sizeof(c->buf));
		if (r >= 0)
			return r;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

/* Where a reply's text goes: a file descriptor, or (fd < 0) a buffer that grows. */
struct sink {
	int fd;
	char *buf;
	size_t len, cap;
};

/* Add n bytes to the sink; 0 or -errno. */
static int sink_put(struct sink *k, const char *p, size_t n)
{
	if (k->fd >= 0)
		return write_all(k->fd, p, n);
	if (k->len + n + 1 > k->cap) {
		size_t cap = (k->len + n + 1) * 2;
		char *b = realloc(k->buf, cap);

		if (!b)
			return -ENOMEM;
		k->buf = b;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, p, n);
	k->len += n;
	k->buf[k->len] = '\0';
	return 0;
}

/*
 * Read one reply, writing its text to out as it arrives (a reply may be long and come
 * in many pieces). *nl tells whether the text written ended with a newline (true when
 * there was none). Bytes after the terminator stay in the buffer for the next reply.
 */
static enum reply conn_reply(struct conn *c, struct sink *out, bool *nl)
{
	enum { IN_TEXT, IN_STATUS, IN_END } st = IN_TEXT;
	char status = 0;
	ssize_t r;

	*nl = true;
	for (;;) {
		while (c->head < c->tail) {
			char *p = c->buf + c->head;
			size_t n = c->tail - c->head, text;
			char *end;

			if (st == IN_TEXT) {
				end = memchr(p, REPLY_END, n);
				text = end ? (size_t)(end - p) : n;
				if (text) {
					int ret = sink_put(out, p, text);

					if (ret < 0) {
						c->err = -ret;
						return ret == -EINTR ? REPLY_STOPPED : REPLY_OUTPUT;
					}
					*nl = p[text - 1] == '\n';
				}
				c->head += text;
				if (end) {
					c->head++;
					st = IN_STATUS;
				}
			} else if (st == IN_STATUS) {
				status = *p;
				c->head++;
				if (status != REPLY_STATUS_OK && status != REPLY_STATUS_ERR)
					return REPLY_BAD;
				st = IN_END;
			} else {
				c->head++;
				if (*p != '\n')
					return REPLY_BAD;
				return status == REPLY_STATUS_OK ? REPLY_OK : REPLY_FAILED;
			}
		}
		r = conn_fill(c);
		if (r == 0 || r == -ECONNRESET)
			return REPLY_CLOSED;
		if (r == -EINTR)
			return REPLY_STOPPED;
		if (r < 0) {
			c->err = (int)-r;
			return REPLY_ERROR;
		}
		c->tail = (size_t)r;
	}
}

/* Send a command and write its reply to out. */
static enum reply run_command_to(struct conn *c, const char *line, struct sink *out, bool *nl)
{
	int ret = conn_send(c, line);

	*nl = true;
	if (ret == -EINTR)
		return REPLY_STOPPED;
	/* Even when the send failed, the bridge may have said why before closing. */
	if (ret < 0 && ret != -EPIPE && ret != -ECONNRESET) {
		c->err = -ret;
		return REPLY_ERROR;
	}
	return conn_reply(c, out, nl);
}

/* Send a command and print its reply on stdout. */
static enum reply run_command(struct conn *c, const char *line, bool *nl)
{
	struct sink out = {.fd = STDOUT_FILENO};

	return run_command_to(c, line, &out, nl);
}

/* Explain a reply that did not come; the exit status it calls for. */
static int reply_exit(const struct conn *c, enum reply r)
{
	switch (r) {
	case REPLY_OK:
		return EXIT_OK;
	case REPLY_FAILED:
		return EXIT_FAILED;
	case REPLY_CLOSED:
		fprintf(stderr, "bcom: connection closed by the bridge\n");
		return EXIT_CONN;
	case REPLY_BAD:
		fprintf(stderr, "bcom: bad reply from the bridge at %s\n", c->path);
		return EXIT_CONN;
	case REPLY_ERROR:
		fprintf(stderr, "bcom: %s: %s\n", c->path, strerror(c->err));
		return EXIT_CONN;
	case REPLY_OUTPUT:
		fprintf(stderr, "bcom: standard output: %s\n", strerror(c->err));
		return EXIT_FAILED;
	case REPLY_STOPPED:
		break;
	}
	return EXIT_CONN;
}

/* A line without its leading and trailing blanks (changes line in place). */
static char *trim(char *line)
{
	size_t n;

	while (*line == ' ' || *line == '\t')
		line++;
	n = strlen(line);
	while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
		line[--n] = '\0';
	return line;
}

/* The length of the line's first word. */
static size_t first_word(const char *line)
{
	return strcspn(line, " \t");
}

/*
 * The line leaves bcom: exit, quit or an abbreviation of quit (the bridge takes
 * prefixes, and q has always meant quit). Never sent to the bridge.
 */
static bool is_leave(const char *line)
{
	size_t n = first_word(line);

	if (n == strlen(BCOM_EXIT_WORD) && !strncmp(line, BCOM_EXIT_WORD, n))
		return true;
	return n > 0 && n <= strlen(BCOM_QUIT_WORD) && !strncmp(line, BCOM_QUIT_WORD, n);
}

/* The line is the shutdown command (which the bridge takes only in full). */
static bool is_shutdown(const char *line)
{
	size_t n = first_word(line);

	return n == strlen(BCOM_SHUTDOWN_WORD) && !strncmp(line, BCOM_SHUTDOWN_WORD, n);
}

/*
 * shutdown's own option: "shutdown --yes" / "shutdown -y" means the same as bcom -y.
 * Removes it from line (in place); true when it was there.
 */
static bool take_yes(char *line)
{
	char *arg = line + first_word(line);
	char *w = arg + strspn(arg, " \t");

	if (strcmp(trim(w), "--yes") && strcmp(w, "-y"))
		return false;
	*arg = '\0';
	return true;
}

/* bcom COMMAND [ARG]...: the words joined with single spaces into line. 0 or EXIT_USAGE. */
static int join_args(char **argv, int argc, char *line)
{
	size_t n = 0;

	for (int i = 0; i < argc; i++) {
		size_t len = strlen(argv[i]);

		if (strchr(argv[i], '\n')) {
			fprintf(stderr, "bcom: a command cannot hold a newline\n");
			return EXIT_USAGE;
		}
		if (n + (i > 0) + len > CMD_MAX) {
			fprintf(stderr, "bcom: command too long (at most %d bytes)\n", CMD_MAX);
			return EXIT_USAGE;
		}
		if (i > 0)
			line[n++] = ' ';
		memcpy(line + n, argv[i], len);
		n += len;
	}
	line[n] = '\0';
	return 0;
}

/*
 * Ask on the terminal whether to stop the bridge; true for an answer starting with y.
 * use_readline: in the interactive session (^C there means no); else a line of stdin.
 */
static bool confirm_shutdown(const struct conn *c, bool use_readline)
{
	char prompt[CONTROL_PATH_MAX + 64], *ans, buf[64];
	bool yes;

	snprintf(prompt, sizeof(prompt), "Stop the bridge at %s? [y/N] ", c->path);
	if (use_readline) {
		line_cancel = 0;
		in_readline = 1;
		ans = readline(prompt);
		in_readline = 0;
		yes = ans && !line_cancel && (ans[0] == 'y' || ans[0] == 'Y');
		free(ans);
		return yes;
	}
	fputs(prompt, stderr);
	fflush(stderr);
	if (!fgets(buf, sizeof(buf), stdin))
		return false;
	return buf[0] == 'y' || buf[0] == 'Y';
}

/* Commands from a pipe or file, one a line. */
static int run_batch(struct conn *c)
{
	char *buf = NULL, *line;
	size_t cap = 0, lineno = 0;
	ssize_t got;
	int status = EXIT_OK;
	enum reply r;
	bool nl;

	while ((got = getline(&buf, &cap, stdin)) > 0) {
		lineno++;
		if (buf[got - 1] == '\n')
			buf[--got] = '\0';
		if ((size_t)got != strlen(buf)) {
			fprintf(stderr, "bcom: line %zu: holds a NUL byte\n", lineno);
			status = EXIT_FAILED;
			continue;
		}
		line = trim(buf);
		if (!*line || *line == '#')
			continue;
		if (is_leave(line))
			break;
		if (strlen(line) > CMD_MAX) {
			fprintf(stderr, "bcom: line %zu: command too long (at most %d bytes)\n",
				lineno, CMD_MAX);
			status = EXIT_FAILED;
			continue;
		}
		/* Not a terminal: nobody to ask. A script that sends shutdown means it. */
		if (is_shutdown(line))
			take_yes(line);
		r = run_command(c, line, &nl);
		if (r == REPLY_FAILED) {
			status = EXIT_FAILED;
			continue;
		}
		if (r != REPLY_OK) {
			status = reply_exit(c, r);
			break;
		}
		if (is_shutdown(line)) /* the bridge is gone: nothing more to send */
			break;
	}
	free(buf);
	return status;
}

static void on_stop(int sig)
{
	if (sig == SIGINT && in_readline)
		line_cancel = 1;
	else
		stop_sig = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

/*
 * readline's input: one character of the terminal (libedit takes it as a wide
 * character: the locale's multibyte sequence is decoded here), read when ppoll says it
 * is there, with the signals let in only during ppoll (so none is missed between a check
 * and the wait). A signal that asks to drop the line (^C) or to leave ends the line at
 * once: Enter is handed to readline, and the caller discards what it returns.
 */
static int tty_getc(FILE *in)
{
	struct pollfd p = {.fd = fileno(in), .events = POLLIN};
	mbstate_t mb;
	unsigned char ch;
	wchar_t wc;

	memset(&mb, 0, sizeof(mb));
	for (;;) {
		if (line_cancel || stop_sig)
			return '\n';
		if (winch) {
			winch = 0;
			rl_resize_terminal();
		}
		if (wait_fds(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return EOF;
		}
		switch (read(p.fd, &ch, 1)) {
		case 1:
			switch (mbrtowc(&wc, (const char *)&ch, 1, &mb)) {
			case (size_t)-2: /* more bytes of the character to come */
				continue;
			case (size_t)-1: /* not the locale's encoding: the byte as it is */
				memset(&mb, 0, sizeof(mb));
				return ch;
			default:
				return (int)wc;
			}
		case 0:
			return EOF;
		default:
			if (errno != EINTR && errno != EAGAIN)
				return EOF;
		}
	}
}

static void set_handler(int sig, void (*fn)(int))
{
	struct sigaction sa = {.sa_handler = fn};

	/* No SA_RESTART: a wait must end so that the flags are looked at. */
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/* ---- the interactive session: libedit's readline interface ---- */

/*
 * What Tab completes, asked of the bridge when first needed (readline's callbacks take
 * no context, hence file-static): the commands (help), the features (enable), the
 * groups (multicast) and the configured groups not bridged now (unbridged), the last two
 * asked again every time (they change). The directions of a join and the options of a
 * group spec are bcom's own (WORDS_DIRS, WORDS_OPTS).
 */
enum word_kind {
	WORDS_COMMANDS,
	WORDS_FEATURES,
	WORDS_GROUPS,
	WORDS_UNBRIDGED,
	WORDS_N,
	WORDS_DIRS = WORDS_N,
	WORDS_OPTS
};

static const char *const words_cmd[WORDS_N] = {"help", "enable", "multicast", "unbridged"};
static const char *const words_dirs[] = {"both", "in", "out", NULL};
/* The options after a spec's '#' or ',' (engine/mgid.c parse_opts; the TOS is a number). */
static const char *const words_opts[] = {"qkey=", "ibqkey=", "roceqkey=", "w=", NULL};
static char word_breaks[] = " \t\n"; /* what separates the words Tab completes */

static struct {
	struct conn *conn;
	char **w[WORDS_N]; /* NULL-terminated lists */
	enum word_kind kind;
	size_t next;   /* the generator's position */
	size_t opt_at; /* WORDS_OPTS: the text up to here ("spec#" or "spec#...,") is kept */
} compl ;

static void words_free(enum word_kind k)
{
	for (size_t i = 0; compl .w[k] && compl .w[k][i]; i++)
		free(compl .w[k][i]);
	free(compl .w[k]);
	compl .w[k] = NULL;
}

/*
 * The first words of the reply's lines that name something: help's command lines (not
 * its closing sentence), enable's table rows (indented, not the NAME header), the
 * multicast table's rows (not its header).
 */
static char **words_parse(enum word_kind k, char *text)
{
	char **list = NULL, *save = NULL;
	size_t n = 0;
	bool head = k != WORDS_COMMANDS;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		size_t len;
		char **nl;

		if (k == WORDS_FEATURES && l[0] != ' ')
			continue;
		l += strspn(l, " ");
		len = first_word(l);
		if (!len || (k == WORDS_COMMANDS && l[len] == ' ' && l[0] >= 'A' && l[0] <= 'Z'))
			continue;
		if (head) {
			head = false;
			continue;
		}
		if (k == WORDS_GROUPS && !strncmp(l, "no multicast groups", 19))
			break;
		if (k == WORDS_UNBRIDGED && !strncmp(l, "every configured group", 23))
			break;
		nl = realloc(list, (n + 2) * sizeof(*list));
		if (!nl)
			break;
		list = nl;
		list[n] = strndup(l, len);
		if (!list[n])
			break;
		list[++n] = NULL;
	}
	return list;
}

/* Fetch a list from the bridge (on the session's connection, idle at the prompt). */
static void words_fetch(enum word_kind k)
{
	struct sink out = {.fd = -1};
	bool nl;

	if (compl .w[k] && k != WORDS_GROUPS && k != WORDS_UNBRIDGED)
		return;
	words_free(k);
	if (run_command_to(compl .conn, words_cmd[k], &out, &nl) == REPLY_OK && out.buf)
		compl .w[k] = words_parse(k, out.buf);
	free(out.buf);
}

/*
 * The option name opt (words_opts) may follow in the options already in the spec
 * (text[hash..at), "#" and the options up to the last ","): not one given already, and
 * qkey= not with ibqkey= or roceqkey= (parse_opts refuses both).
 */
static bool opt_fits(const char *text, size_t hash, size_t at, const char *opt)
{
	bool both = !strcmp(opt, "qkey="), side = !both && strstr(opt, "qkey=");

	for (size_t i = hash + 1; i < at;) {
		size_t len = strcspn(text + i, ",");
		const char *o = text + i;

		if (i + len > at)
			len = at - i;
		if (!strncmp(o, opt, strlen(opt)) && len >= strlen(opt))
			return false;
		if ((both && (!strncmp(o, "ibqkey=", 7) || !strncmp(o, "roceqkey=", 9))) ||
		    (side && !strncmp(o, "qkey=", 5)))
			return false;
		i += len + 1;
	}
	return true;
}

static char *words_next(const char *text, int state)
{
	size_t n = strlen(text);
	char **w = compl .kind < WORDS_N ? compl .w[compl .kind] : NULL;

	if (!state)
		compl .next = 0;
	if (compl .kind == WORDS_DIRS || compl .kind == WORDS_OPTS) {
		const char *const *fixed = compl .kind == WORDS_DIRS ? words_dirs : words_opts;
		size_t at = compl .kind == WORDS_OPTS ? compl .opt_at : 0;
		size_t hash = strcspn(text, "#");

		while (fixed[compl .next]) {
			const char *cand = fixed[compl .next++];
			char *full;

			if (strncmp(cand, text + at, n - at) ||
			    (at && !opt_fits(text, hash, at, cand)))
				continue;
			full = malloc(at + strlen(cand) + 1);
			if (full) {
				memcpy(full, text, at);
				strcpy(full + at, cand);
			}
			return full;
		}
		return NULL;
	}
	while (w && w[compl .next]) {
		const char *cand = w[compl .next++];

		if (!strncmp(cand, text, n))
			return strdup(cand);
	}
	return NULL;
}

/* How many words come before the one that starts at start (the command is word 0). */
static unsigned word_index(const char *buf, int start)
{
	unsigned n = 0;

	for (int i = 0; i < start; i++)
		if (buf[i] != ' ' && buf[i] != '\t' &&
		    (!i || buf[i - 1] == ' ' || buf[i - 1] == '\t'))
			n++;
	return n;
}

/*
 * Tab: the first word is a command; after enable/disable a feature; after leave a group;
 * after join a configured group that is not bridged now (unbridged), then its direction,
 * and within a spec after its '#' or a ',' the option names (no blank after those: the
 * value follows).
 */
static char **complete(const char *text, int start, int end)
{
	const char *line = rl_line_buffer + strspn(rl_line_buffer, " \t");
	size_t cmd = first_word(line);

	(void)end;
	rl_attempted_completion_over = 1; /* never file names */
	rl_completion_append_character = ' ';
	if (line + cmd >= rl_line_buffer + start)
		compl .kind = WORDS_COMMANDS;
	else if ((cmd == 6 && !strncmp(line, "enable", 6)) ||
		 (cmd == 7 && !strncmp(line, "disable", 7)))
		compl .kind = WORDS_FEATURES;
	else if (cmd == 5 && !strncmp(line, "leave", 5))
		compl .kind = WORDS_GROUPS;
	else if (cmd == 4 && !strncmp(line, "join", 4)) {
		unsigned word = word_index(rl_line_buffer, start);
		const char *hash = strchr(text, '#');

		if (word == 2)
			compl .kind = WORDS_DIRS;
		else if (word != 1)
			return NULL;
		else if (hash) {
			const char *comma = strrchr(hash, ',');

			compl .kind = WORDS_OPTS;
			compl .opt_at = (size_t)((comma ? comma : hash) - text) + 1;
			rl_completion_append_character = '\0';
		} else
			compl .kind = WORDS_UNBRIDGED;
	} else
		return NULL;
	if (compl .kind < WORDS_N)
		words_fetch(compl .kind);
	return rl_completion_matches(text, words_next);
}

/*
 * One line from the prompt (signals come in through tty_getc): NULL at EOF or when a
 * signal asks us to leave. ^C drops the line and prompts again.
 */
static char *prompt_line(void)
{
	char *line;

	for (;;) {
		line_cancel = 0;
		in_readline = 1;
		line = readline(BCOM_PROMPT);
		in_readline = 0;
		if (stop_sig) {
			free(line);
			return NULL;
		}
		if (!line_cancel)
			return line;
		free(line);
		fputs("^C\n", rl_outstream);
	}
}

static int session_loop(struct conn *c)
{
	enum reply r;
	char *buf, *line;
	bool nl;

	for (;;) {
		buf = prompt_line();
		if (!buf) {
			if (!stop_sig)
				fputc('\n', rl_outstream); /* EOF (^D): end the prompt's row */
			return EXIT_OK;
		}
		line = trim(buf);
		if (*line)
			add_history(line);
		if (is_leave(line)) {
			free(buf);
			return EXIT_OK;
		}
		if (is_shutdown(line) && !take_yes(line) && !confirm_shutdown(c, true)) {
			printf("not stopped\n");
			free(buf);
			continue;
		}
		if (*line) {
			r = run_command(c, line, &nl);
			if (!nl)
				write_str(STDOUT_FILENO, "\n");
			if (r == REPLY_OK && is_shutdown(line)) {
				free(buf);
				return EXIT_OK; /* the bridge stops: nothing more to talk to */
			}
			if (r != REPLY_OK && r != REPLY_FAILED) {
				free(buf);
				return r == REPLY_STOPPED ? EXIT_OK : reply_exit(c, r);
			}
		}
		free(buf);
	}
}

static int run_interactive(struct conn *c)
{
	static const int stops[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
	char hist[PATH_MAX];
	const char *home = getenv("HOME");
	bool have_hist = home && *home &&
			 (size_t)snprintf(hist, sizeof(hist), "%s/%s", home, BCOM_HISTORY_FILE) <
				 sizeof(hist);
	sigset_t block;
	int status;

	/* UTF-8 (any multibyte locale) is edited and drawn by characters, not bytes. */
	setlocale(LC_CTYPE, "");
	compl .conn = c;
	rl_readline_name = "bcom";
	rl_attempted_completion_function = complete;
	/*
	 * Words are separated by blanks only: a group is one word with its '=', ':' and '#'
	 * ("ff12::99=239.1.2.7#qkey=5"), which readline's default breaks ("=" among them)
	 * would cut, completing only what follows. libedit's rl_complete takes
	 * rl_basic_word_break_characters; GNU readline the completer's (set both).
	 */
	rl_basic_word_break_characters = word_breaks;
	rl_completer_word_break_characters = word_breaks;
	/* Our signal handling (blocked but in ppoll), not libedit's: see tty_getc. */
	rl_catch_signals = 0;
	rl_getc_function = tty_getc;
	/* The prompt goes to the terminal even when the replies go to a pipe. */
	rl_outstream = isatty(STDOUT_FILENO) ? stdout : stderr;
	using_history();
	stifle_history(BCOM_HISTORY_MAX);
	if (have_hist)
		read_history(hist); /* no history yet is fine, a bad one too */

	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		sigaddset(&block, stops[i]);
		set_handler(stops[i], on_stop);
	}
	sigaddset(&block, SIGWINCH);
	set_handler(SIGWINCH, on_winch);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);

	status = session_loop(c);

	if (have_hist) {
		write_history(hist);
		history_truncate_file(hist, BCOM_HISTORY_MAX);
	}
	for (int k = 0; k < WORDS_N; k++)
		words_free((enum word_kind)k);
	if (stop_sig) {
		/* Die of the signal, as the shell expects. */
		sigset_t sig;

		set_handler(stop_sig, SIG_DFL);
		sigemptyset(&sig);
		sigaddset(&sig, stop_sig);
		raise(stop_sig);
		sigprocmask(SIG_UNBLOCK, &sig, NULL);
	}
	return status;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"control", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"yes", no_argument, NULL, 'y'},
		{NULL, 0, NULL, 0},
	};
	char path[CONTROL_PATH_MAX], cmd[CMD_MAX + 1];
	const char *control = NULL;
	struct conn conn;
	int opt, status;
	bool nl, yes = false;

	sigprocmask(SIG_BLOCK, NULL, &wait_mask);
	opterr = 0;
	/* '+': options end at the command, whose own arguments may start with '-'. */
	while ((opt = getopt_long(argc, argv, "+:hy", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			control = optarg;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("bcom %s (git %s)\n", version_string, version_describe);
			return EXIT_OK;
		case 'y':
			yes = true;
			break;
		case ':':
			fprintf(stderr, "bcom: option '%s' needs an argument\n", argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		default:
			if (optopt)
				fprintf(stderr, "bcom: unknown option '-%c'\n", optopt);
			else
				fprintf(stderr, "bcom: unknown option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}

	if (control) {
		if (strlen(control) >= CONTROL_PATH_MAX) {
			fprintf(stderr, "bcom: %s: path too long (at most %d bytes)\n", control,
				CONTROL_PATH_MAX - 1);
			return EXIT_USAGE;
		}
		if (!*control) {
			fprintf(stderr, "bcom: --control needs a path\n");
			return EXIT_USAGE;
		}
	} else if (control_default_path(path, sizeof(path)) < 0) {
		fprintf(stderr, "bcom: the default control path is too long: use --control\n");
		return EXIT_USAGE;
	} else {
		control = path;
	}

	/* A bad command is a usage error, whether or not a bridge runs. */
	if (optind < argc && join_args(argv + optind, argc - optind, cmd))
		return EXIT_USAGE;
	if (optind < argc && is_leave(cmd)) {
		fprintf(stderr,
			"bcom: '%s' leaves an interactive bcom; the bridge keeps running "
			"(to stop it: bcom shutdown)\n",
			cmd);
		return EXIT_USAGE;
	}
	if (optind < argc && is_shutdown(cmd))
		yes |= take_yes(cmd);
	if (conn_open(&conn, control, control == path) < 0)
		return EXIT_CONN;
	if (optind < argc) {
		/* shutdown from a terminal: ask; from a script (stdin not a tty): do it. */
		if (is_shutdown(cmd) && !yes && isatty(STDIN_FILENO) &&
		    !confirm_shutdown(&conn, false)) {
			printf("not stopped\n");
			close(conn.fd);
			return EXIT_FAILED;
		}
		status = reply_exit(&conn, run_command(&conn, cmd, &nl));
	} else if (isatty(STDIN_FILENO)) {
		status = run_interactive(&conn);
	} else {
		status = run_batch(&conn);
	}
	close(conn.fd);
	return status;
}
