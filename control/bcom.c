/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bcom.c - the console client of ib2roce (docs/bcom.1).
 *
 * It connects to the bridge's control socket and sends command lines; the bridge
 * answers each with text, a NUL byte, a status byte ('0' success, '1' failure) and a
 * newline, on a connection that stays open. Three ways to run:
 *
 *   bcom COMMAND [ARG]...   one command, its reply on stdout, exit status from the reply
 *   bcom  (stdin a tty)     an interactive prompt with line editing and history
 *   bcom  (stdin not a tty) commands read line by line from stdin
 *
 * Exit status: 0 success, 1 a command failed, 2 usage error, 3 no (more) connection.
 *
 * The interactive mode keeps the terminal in raw mode only while a line is edited, so
 * that ^C while waiting for a slow reply is an ordinary SIGINT. Signals are blocked
 * outside of the waits (ppoll), which makes the checks of the flags below race-free;
 * every way out restores the terminal and saves the history.
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
#include <termios.h>
#include <unistd.h>

#include "lineedit.h"
#include "paths.h"

#ifdef IB2ROCE_VERSION
#define BCOM_VERSION IB2ROCE_VERSION
#else
#define BCOM_VERSION "0.1"
#endif

#define BCOM_PROMPT	  "ib2roce> "
#define BCOM_HISTORY_FILE ".bcom_history"
#define BCOM_EXIT_WORD	  "exit"
#define BCOM_QUIT_WORD	  "quit"

/* The console protocol: a command line is at most this long before its newline... */
#define CMD_MAX LE_LINE_MAX
/* ...and a reply ends with NUL, a status byte and a newline. */
#define REPLY_END	 '\0'
#define REPLY_STATUS_OK	 '0'
#define REPLY_STATUS_ERR '1'

/*
 * How long the bytes of an escape sequence may straggle: past this a lone ESC key was
 * meant, and the next key is taken on its own rather than as Alt-key.
 */
#define ESC_TIMEOUT_MS 200

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
 * blocked except inside ppoll(), with wait_mask.
 */
static volatile sig_atomic_t stop_sig; /* SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE */
static volatile sig_atomic_t redraw;   /* SIGWINCH, or back from a stop */
static volatile sig_atomic_t tty_raw;  /* the terminal is in raw mode */
static struct termios tty_orig, tty_rawmode;
static sigset_t wait_mask;

static void usage(FILE *f)
{
	char path[CONTROL_PATH_MAX];

	if (control_default_path(path, sizeof(path)) < 0)
		strcpy(path, "(too long)");
	fprintf(f,
		"Usage: bcom [--control PATH] [COMMAND [ARG]...]\n"
		"Send COMMAND to a running ib2roce bridge and print its reply. Without a\n"
		"command, read commands from the terminal (with line editing and history)\n"
		"or, when standard input is not a terminal, one per line from it.\n"
		"\n"
		"      --control PATH  the bridge's control socket\n"
		"                      (default: %s)\n"
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

/*
 * Read one reply, writing its text to out as it arrives (a reply may be long and come
 * in many pieces). *nl tells whether the text written ended with a newline (true when
 * there was none). Bytes after the terminator stay in the buffer for the next reply.
 */
static enum reply conn_reply(struct conn *c, int out, bool *nl)
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
					int ret = write_all(out, p, text);

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

/* Send a command and print its reply on stdout. */
static enum reply run_command(struct conn *c, const char *line, bool *nl)
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
	return conn_reply(c, STDOUT_FILENO, nl);
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

/* The command's word is quit, or an abbreviation of it (the bridge takes prefixes). */
static bool is_quit(const char *line)
{
	size_t n = strcspn(line, " \t");

	return n > 0 && n <= strlen(BCOM_QUIT_WORD) && !strncmp(line, BCOM_QUIT_WORD, n);
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
		if (!strcmp(line, BCOM_EXIT_WORD))
			break;
		if (strlen(line) > CMD_MAX) {
			fprintf(stderr, "bcom: line %zu: command too long (at most %d bytes)\n",
				lineno, CMD_MAX);
			status = EXIT_FAILED;
			continue;
		}
		r = run_command(c, line, &nl);
		if (r == REPLY_FAILED) {
			status = EXIT_FAILED;
			continue;
		}
		if (r != REPLY_OK) {
			status = reply_exit(c, r);
			break;
		}
		if (is_quit(line)) /* the bridge is gone: nothing more to send */
			break;
	}
	free(buf);
	return status;
}

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	redraw = 1;
}

static void on_tstp(int sig);

static void set_handler(int sig, void (*fn)(int))
{
	struct sigaction sa = {.sa_handler = fn};

	/* No SA_RESTART: a wait must end so that the flags are looked at. */
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/*
 * Stop ourselves like a job should, with the terminal as we found it, and take it back
 * when continued. Called from the SIGTSTP handler and for ^Z; async-signal-safe.
 */
static void suspend_self(void)
{
	bool was_raw = tty_raw;
	sigset_t tstp;

	if (was_raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &tty_orig);
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	set_handler(SIGTSTP, SIG_DFL);
	raise(SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &tstp, NULL); /* stops here until SIGCONT */
	sigprocmask(SIG_BLOCK, &tstp, NULL);
	set_handler(SIGTSTP, on_tstp);
	if (was_raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &tty_rawmode);
	redraw = 1;
}

static void on_tstp(int sig)
{
	int saved = errno;

	(void)sig;
	suspend_self();
	errno = saved;
}

static void tty_set_raw(bool raw)
{
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, raw ? &tty_rawmode : &tty_orig) == 0)
		tty_raw = raw;
}

/* The interactive session. */
struct session {
	struct conn *conn;
	struct le *le;
	int out;	 /* where the editor draws: the terminal */
	char ahead[256]; /* bytes read but not yet fed (typed ahead, pasted lines) */
	size_t ahead_n;
};

/* Results of edit() besides the le_event values. */
#define EDIT_SOCKET (-1) /* the bridge sent something (a refusal) or closed */
#define EDIT_STOP   (-2) /* a signal asks us to leave */
#define EDIT_TTY    (-3) /* the terminal is gone */

static size_t tty_cols(int fd)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0)
		return 80;
	return ws.ws_col;
}

static void draw(struct session *s, unsigned flags)
{
	char out[LE_RENDER_MAX];
	size_t n = le_render(s->le, out, sizeof(out), flags);

	write_all(s->out, out, n); /* a failing terminal shows up as EOF on input */
}

/* Edit a line in raw mode until something ends it. */
static int edit(struct session *s)
{
	struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
			      {.fd = s->conn->fd, .events = POLLIN}};
	bool dirty = true;
	enum le_event ev;
	size_t used;
	ssize_t r;

	tty_set_raw(true);
	redraw = 1;
	for (;;) {
		if (s->ahead_n) {
			ev = le_feed(s->le, s->ahead, s->ahead_n, &used);
			memmove(s->ahead, s->ahead + used, s->ahead_n - used);
			s->ahead_n -= used;
			if (ev != LE_CONTINUE)
				return ev;
			dirty = true;
			continue;
		}
		if (stop_sig)
			return EDIT_STOP;
		if (redraw) {
			redraw = 0;
			le_set_cols(s->le, tty_cols(s->out));
			dirty = true;
		}
		if (dirty) {
			draw(s, 0);
			dirty = false;
		}
		r = wait_fds(p, 2, le_escape_pending(s->le) ? ESC_TIMEOUT_MS : -1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return EDIT_TTY;
		}
		if (r == 0) {
			le_escape_timeout(s->le);
			continue;
		}
		if (p[1].revents)
			return EDIT_SOCKET;
		if (!p[0].revents)
			continue;
		r = read(STDIN_FILENO, s->ahead, sizeof(s->ahead));
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return EDIT_TTY;
		s->ahead_n = (size_t)r;
	}
}

/* Ends the row of the line just edited; mark is what follows the line ("^C"). */
static void end_line(struct session *s, const char *mark)
{
	draw(s, LE_RENDER_FINAL);
	write_str(s->out, mark);
	write_str(s->out, "\r\n");
	tty_set_raw(false);
}

/* The bridge spoke unasked: print it (a refusal) and see whether it hung up. */
static int socket_news(struct session *s)
{
	struct pollfd p = {.fd = s->conn->fd, .events = POLLIN};
	enum reply r;
	bool nl;

	write_str(s->out, "\r\x1b[K");
	tty_set_raw(false);
	r = conn_reply(s->conn, STDOUT_FILENO, &nl);
	if (!nl)
		write_str(STDOUT_FILENO, "\n");
	/* A refusal is followed by the hang-up: report it now rather than after a prompt. */
	if ((r == REPLY_OK || r == REPLY_FAILED) && s->conn->head == s->conn->tail &&
	    poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
		return REPLY_CLOSED;
	return r;
}

static int session_loop(struct session *s)
{
	char *line;
	enum reply r;
	bool nl;
	int ev;

	for (;;) {
		ev = edit(s);
		switch (ev) {
		case LE_DONE:
			end_line(s, "");
			break;
		case LE_CANCEL:
			end_line(s, "^C");
			le_reset(s->le);
			continue;
		case LE_EOF:
			end_line(s, "");
			return EXIT_OK;
		case LE_SUSPEND:
			end_line(s, "");
			suspend_self();
			continue;
		case EDIT_SOCKET:
			r = socket_news(s);
			if (r == REPLY_OK || r == REPLY_FAILED)
				continue; /* the line being typed is kept */
			return reply_exit(s->conn, r);
		case EDIT_TTY:
			tty_set_raw(false);
			return EXIT_OK;
		default: /* EDIT_STOP */
			tty_set_raw(false);
			write_str(s->out, "\n");
			return EXIT_OK;
		}

		line = trim(s->le->buf);
		if (*line)
			le_history_add(s->le, line);
		if (!strcmp(line, BCOM_EXIT_WORD))
			return EXIT_OK;
		if (*line) {
			r = run_command(s->conn, line, &nl);
			if (!nl)
				write_str(STDOUT_FILENO, "\n");
			if (r == REPLY_OK && is_quit(line))
				return EXIT_OK; /* the bridge stops: nothing more to talk to */
			if (r != REPLY_OK && r != REPLY_FAILED)
				return r == REPLY_STOPPED ? EXIT_OK : reply_exit(s->conn, r);
		}
		le_reset(s->le);
	}
}

static int run_interactive(struct conn *c)
{
	static const int stops[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
	struct session s = {.conn = c};
	char hist[PATH_MAX];
	const char *home = getenv("HOME");
	bool have_hist = home && *home &&
			 (size_t)snprintf(hist, sizeof(hist), "%s/%s", home, BCOM_HISTORY_FILE) <
				 sizeof(hist);
	sigset_t block;
	int status;

	if (tcgetattr(STDIN_FILENO, &tty_orig) < 0) {
		fprintf(stderr, "bcom: terminal: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	tty_rawmode = tty_orig;
	/* Keys as bytes, no echo, no signals from ^C/^Z; output processing stays on. */
	tty_rawmode.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
	tty_rawmode.c_cflag |= CS8;
	tty_rawmode.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
	tty_rawmode.c_cc[VMIN] = 1;
	tty_rawmode.c_cc[VTIME] = 0;

	s.le = malloc(sizeof(*s.le));
	if (!s.le) {
		fprintf(stderr, "bcom: %s\n", strerror(ENOMEM));
		return EXIT_FAILED;
	}
	le_init(s.le);
	le_set_prompt(s.le, BCOM_PROMPT);
	if (have_hist)
		le_history_load(s.le, hist); /* no history yet is fine, a bad one too */
	/* The editor draws on the terminal even when the replies go to a pipe. */
	s.out = isatty(STDOUT_FILENO) ? STDOUT_FILENO : STDERR_FILENO;

	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		sigaddset(&block, stops[i]);
		set_handler(stops[i], on_stop);
	}
	sigaddset(&block, SIGWINCH);
	sigaddset(&block, SIGTSTP);
	set_handler(SIGWINCH, on_winch);
	set_handler(SIGTSTP, on_tstp);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);

	status = session_loop(&s);

	tty_set_raw(false);
	if (have_hist)
		le_history_save(s.le, hist);
	le_done(s.le);
	free(s.le);
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
		{NULL, 0, NULL, 0},
	};
	char path[CONTROL_PATH_MAX], cmd[CMD_MAX + 1];
	const char *control = NULL;
	struct conn conn;
	int opt, status;
	bool nl;

	sigprocmask(SIG_BLOCK, NULL, &wait_mask);
	opterr = 0;
	/* '+': options end at the command, whose own arguments may start with '-'. */
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			control = optarg;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("bcom %s\n", BCOM_VERSION);
			return EXIT_OK;
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
	if (conn_open(&conn, control, control == path) < 0)
		return EXIT_CONN;
	if (optind < argc)
		status = reply_exit(&conn, run_command(&conn, cmd, &nl));
	else if (isatty(STDIN_FILENO))
		status = run_interactive(&conn);
	else
		status = run_batch(&conn);
	close(conn.fd);
	return status;
}
