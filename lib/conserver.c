// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The console server (conserver.h): the Unix socket, admission, clients, line framing,
 * the reply queue, time-outs. The commands are the caller's (the exec callback).
 *
 * Every client is a small state machine on the server's epoll: bytes come in without
 * blocking, a complete line runs one command into a memory stream, the reply is queued
 * and written as the socket takes it. What a client can cost is bounded: a line is at
 * most CON_LINE_MAX bytes (longer ones are answered with an error once their newline
 * comes), it must end within CON_LINE_MS, unread output may reach CON_OUT_MAX before the
 * client is dropped, and at most CON_CLIENTS_MAX are connected. While a client has
 * unread output we stop reading from it, so a client that sends commands but never
 * reads cannot make us queue without bound.
 *
 * Slow or idle clients cannot lock others out: a client without a command for idle_s
 * seconds (console_idle of ib2roce, 300 by default) is closed, and when all slots are
 * taken a new client takes the place of the least recently active one. What clients
 * cause in the log (refusals, time-outs, evictions) is rate-limited: CON_WARN_BURST
 * lines per CON_WARN_WINDOW_MS, then one line with the number left out.
 *
 * Admission: the socket file is 0660 (owner and group), and SO_PEERCRED of every
 * connection is checked: root, our own uid and the admitted group (else our gid) get
 * in; anyone else gets a refusal and we log it.
 *
 * Why one file of about 1 000 lines: its sections (lines, clients, the terminal,
 * time-outs, the socket) are one state machine over one struct conserver and one epoll
 * set: a client's read, its reply queue, its time-outs and its eviction all change the
 * same slot and the same epoll registration, in an order that matters (a slot's fd is
 * unwatched before it is closed, the epoll interest follows the reply queue: no reading
 * while a reply is unread). Split into files, each part would need the client struct
 * and the watch/unwatch helpers in a shared private header, and the invariants would be
 * spread over several files; kept here they stand next to each other, with a section
 * marker at each seam.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "clock.h"
#include "conserver.h"
#include "err.h"
#include "paths.h"
#include "sysgroup.h"

/* A command line being put together from bytes (a socket client's, or the terminal's). */
struct con_line {
	char buf[CON_LINE_MAX];
	size_t len;
	bool overlong; /* passed CON_LINE_MAX - 1 bytes: refused at its end */
	bool binary;   /* holds a control character: refused at its end */
};

struct client {
	int fd;
	struct con_line in;
	char raw[4096]; /* bytes received, not yet looked at (pipelined commands) */
	size_t rawlen, rawoff;
	uint64_t line_ms; /* when the current line started, 0 = no partial line */
	char *out;	  /* reply bytes not yet written */
	size_t outlen, outoff;
	bool close_after; /* close once out is written (refusal, quit) */
	uint64_t pending; /* a command's reply comes later (conserver_complete): its token */
	bool evicted;	  /* closed in the middle of an event batch: freed after it */
	struct client *next_evicted;
	unsigned watching; /* epoll events registered */
	uint64_t last_ms;  /* connected, or ran its last command (idle time-out, eviction) */
	pid_t pid;
	uid_t uid;
};

/*
 * The terminal console's replies (issue 21 D11: a stdout pipe nobody read stalled the
 * control thread 7 s in fflush). They go through a buffer of CON_TTY_OUT_MAX bytes to a
 * descriptor of their own that never blocks: standard output opened again (/proc/self/
 * fd/1) with O_NONBLOCK for a pipe, FIFO or terminal (its own open file description, so
 * stderr, which may share stdout's, is left as it is); send(MSG_DONTWAIT) for a socket;
 * a regular file as is (its writes do not wait for a reader). What the descriptor does
 * not take waits for EPOLLOUT; a reply that does not fit in the buffer is dropped whole
 * and counted (conserver_tty_dropped), with a warning.
 */
struct con_tty_out {
	int fd;	       /* -1: none */
	bool sock;     /* send(MSG_DONTWAIT) instead of write */
	bool watching; /* EPOLLOUT registered */
	char *buf;
	size_t len, off;
	uint64_t dropped; /* replies dropped */
};

/* Log lines that clients cause: a burst per window, then a count of the rest. */
struct con_ratelimit {
	uint64_t start_ms; /* the window began */
	unsigned logged;   /* lines logged in this window */
	uint64_t left_out; /* lines not logged in this window */
};

struct conserver {
	struct conserver_cfg cfg; /* prog, peer, callbacks */
	int ep;			  /* our epoll: the listener, the clients, stdin */
	int lfd;
	bool own_path; /* we created the socket file: unlink it at close */
	char path[CONTROL_PATH_MAX];
	gid_t admit_gid;
	struct client *cl[CON_CLIENTS_MAX];
	struct client *evicted; /* closed, still named by events of the current batch */
	struct con_ratelimit warn;
	/* The terminal: commands from stdin, replies to stdout. */
	bool tty;
	struct con_line tin;
	struct con_tty_out tout;
	/* The socket client whose command runs now (NULL: none, or the terminal's), and
	 * what conserver_reply_confirm asked of its reply. */
	struct client *running;
	void (*undo)(void *arg);
	void *undo_arg;
	/* Deferred replies (conserver_defer): the last token given, the one the running
	 * command asked for, the terminal's pending one; inside an event batch (clients
	 * then go through the evicted list, not freed at once). */
	uint64_t next_token, deferred, tty_pending;
	bool tty_running, in_poll;
};

static void srv_log(struct conserver *srv, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void srv_log(struct conserver *srv, int prio, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!srv->cfg.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	srv->cfg.log(srv->cfg.log_arg, prio, msg);
}

static int watch(struct conserver *srv, int op, int fd, unsigned events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	return epoll_ctl(srv->ep, op, fd, &ev) ? -errno : 0;
}

static void unwatch(struct conserver *srv, int fd)
{
	epoll_ctl(srv->ep, EPOLL_CTL_DEL, fd, NULL);
}

/* ---- Lines ---- */

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

/*
 * Run a line into a freshly allocated reply with the protocol's terminator; *quit tells
 * that the command asked to close the client after the reply.
 */
static char *run_line(struct conserver *srv, const char *line, size_t *len, bool *quit, int *rc)
{
	char *buf = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);
	int r;

	*rc = CONSERVER_OK;
	if (!f)
		return NULL;
	r = srv->cfg.exec(srv->cfg.exec_arg, line, f);
	*rc = r;
	*quit = r == CONSERVER_CLOSE;
	fputc(0, f);
	fputc(r < 0 ? '1' : '0', f);
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
static void warn_window(struct conserver *srv, uint64_t now)
{
	struct con_ratelimit *r = &srv->warn;

	if (now - r->start_ms < CON_WARN_WINDOW_MS)
		return;
	if (r->left_out)
		srv_log(srv, LOG_WARNING,
			"console: %" PRIu64 " more client warning%s in %d s not logged "
			"(rate limit: %d per %d s)",
			r->left_out, r->left_out == 1 ? "" : "s", CON_WARN_WINDOW_MS / 1000,
			CON_WARN_BURST, CON_WARN_WINDOW_MS / 1000);
	r->start_ms = now;
	r->logged = 0;
	r->left_out = 0;
}

/* A warning caused by a client, within the rate limit. */
static void con_warn(struct conserver *srv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void con_warn(struct conserver *srv, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	warn_window(srv, mono_ms());
	if (srv->warn.logged >= CON_WARN_BURST) {
		srv->warn.left_out++;
		return;
	}
	srv->warn.logged++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	srv_log(srv, LOG_WARNING, "%s", msg);
}

static void client_free(struct conserver *srv, int slot)
{
	struct client *k = srv->cl[slot];

	unwatch(srv, k->fd);
	close(k->fd);
	free(k->out);
	free(k);
	srv->cl[slot] = NULL;
}

static int client_slot(struct conserver *srv, struct client *k)
{
	for (int i = 0; i < CON_CLIENTS_MAX; i++)
		if (srv->cl[i] == k)
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

static void client_reply(struct client *k, const char *text, bool ok)
{
	char tail[3] = {0, ok ? '0' : '1', '\n'};

	if (!client_queue(k, text, strlen(text)) || !client_queue(k, tail, 3))
		k->close_after = true;
}

/* Write what the socket takes; update epoll interest. false: the client is gone. */
static bool client_flush(struct conserver *srv, struct client *k)
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
		watch(srv, EPOLL_CTL_MOD, k->fd, want, k);
		k->watching = want;
	}
	return true;
}

/*
 * A reply under conserver_reply_confirm: out to the socket now, all of it, or the
 * command undone and the client closed (what was not sent is dropped). Nothing else is
 * queued for the client (a command runs only when its earlier replies are out).
 */
static void client_reply_confirmed(struct conserver *srv, struct client *k, const char *reply,
				   size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = send(k->fd, reply + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (off == len)
		return;
	srv_log(srv, LOG_DEBUG, "console: pid %d: reply not taken (%zu of %zu bytes): undone",
		(int)k->pid, off, len);
	srv->undo(srv->undo_arg);
	k->close_after = true;
}

int conserver_reply_confirm(struct conserver *srv, void (*undo)(void *arg), void *arg)
{
	struct pollfd pfd;

	if (!srv->running)
		return -ENOTCONN;
	pfd = (struct pollfd){.fd = srv->running->fd, .events = POLLOUT | POLLRDHUP};
	if (poll(&pfd, 1, 0) < 0 || pfd.revents & (POLLHUP | POLLERR | POLLRDHUP))
		return -EPIPE;
	srv->undo = undo;
	srv->undo_arg = arg;
	return 0;
}

static void client_line(struct conserver *srv, struct client *k)
{
	const char *refused = line_refused(&k->in);
	bool quit = false;
	char *reply;
	size_t len;

	if (refused) {
		client_reply(k, refused, false);
	} else {
		int rc;

		srv->running = k;
		srv->undo = NULL;
		srv->deferred = 0;
		reply = run_line(srv, k->in.buf, &len, &quit, &rc);
		srv->running = NULL;
		k->close_after |= quit;
		if (rc == CONSERVER_PENDING && srv->deferred) {
			/* The reply comes with conserver_complete; until then nothing more is
			 * read from this client (only a hang-up is reported). */
			free(reply);
			k->pending = srv->deferred;
			srv->deferred = 0;
			watch(srv, EPOLL_CTL_MOD, k->fd, 0, k);
			k->watching = 0;
		} else if (reply && srv->undo) {
			client_reply_confirmed(srv, k, reply, len);
			srv->undo = NULL;
			free(reply);
		} else if (!reply) {
			if (srv->undo) /* no answer can go out: nothing may stay done */
				srv->undo(srv->undo_arg);
			srv->undo = NULL;
			client_reply(k, "out of memory\n", false);
		} else {
			if (!client_queue(k, reply, len)) {
				con_warn(srv,
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
static bool client_process(struct conserver *srv, struct client *k)
{
	for (;;) {
		while (k->rawoff < k->rawlen) {
			unsigned char ch = (unsigned char)k->raw[k->rawoff++];

			if (!k->line_ms)
				k->line_ms = mono_ms();
			if (!line_put(&k->in, ch))
				continue;
			client_line(srv, k);
			if (k->close_after || k->outlen || k->pending)
				break;
		}
		if (k->rawoff == k->rawlen)
			k->rawoff = k->rawlen = 0;
		if (k->pending)
			return true;
		if (!client_flush(srv, k))
			return false;
		/* The reply went out at once: go on with the next pipelined command. */
		if (k->outlen || !k->rawlen)
			return true;
	}
}

static void client_read(struct conserver *srv, struct client *k)
{
	ssize_t n = recv(k->fd, k->raw, sizeof(k->raw), MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_free(srv, client_slot(srv, k));
		return;
	}
	if (n < 0)
		return;
	k->rawoff = 0;
	k->rawlen = (size_t)n;
	if (!client_process(srv, k))
		client_free(srv, client_slot(srv, k));
}

/* An epoll event of a connected client. */
static void client_event(struct conserver *srv, struct client *k, unsigned events)
{
	if (k->evicted)
		return;
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
		client_free(srv, client_slot(srv, k));
		return;
	}
	if (k->pending)
		return;
	if (k->outlen) {
		/* Reply written out: go on with commands already received. */
		if (!client_flush(srv, k) || (!k->outlen && !client_process(srv, k)))
			client_free(srv, client_slot(srv, k));
		return;
	}
	client_read(srv, k);
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
static int client_evict(struct conserver *srv, pid_t pid)
{
	static const char msg[] = "console full: disconnected to admit a new client (this one "
				  "was the least recently active)\n\0"
				  "1\n";
	uint64_t now = mono_ms();
	struct client *k;
	int old = 0;

	/* A client waiting for a deferred reply goes last. */
	for (int i = 1; i < CON_CLIENTS_MAX; i++)
		if ((srv->cl[old]->pending && !srv->cl[i]->pending) ||
		    (!srv->cl[i]->pending == !srv->cl[old]->pending &&
		     srv->cl[i]->last_ms < srv->cl[old]->last_ms))
			old = i;
	con_warn(srv,
		 "console: %d clients connected: pid %d (no command for %.1f s) disconnected "
		 "to admit pid %d",
		 CON_CLIENTS_MAX, (int)srv->cl[old]->pid,
		 (double)(now - srv->cl[old]->last_ms) / 1000, (int)pid);
	k = srv->cl[old];
	if (!k->outlen && send(k->fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		srv_log(srv, LOG_DEBUG, "console: notice not sent: %s", strerror(errno));
	/*
	 * We run inside an event batch, which may still hold an event of this client:
	 * close it now, free it after the batch (evicted_free).
	 */
	unwatch(srv, k->fd);
	close(k->fd);
	k->evicted = true;
	k->next_evicted = srv->evicted;
	srv->evicted = k;
	srv->cl[old] = NULL;
	return old;
}

static void on_accept(struct conserver *srv)
{
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct client *k;
	int fd, slot;

	fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen)) {
		close(fd);
		return;
	}
	if (cr.uid != 0 && cr.uid != geteuid() && cr.gid != srv->admit_gid &&
	    !peer_in_group(cr.pid, srv->admit_gid)) {
		char msg[128];
		int len =
			snprintf(msg, sizeof(msg), "%s: permission denied (uid %u, gid %u)\n%c1\n",
				 srv->cfg.prog, (unsigned)cr.uid, (unsigned)cr.gid, 0);

		con_warn(srv,
			 "console: refused pid %d uid %u gid %u (admitted: root, uid %u, gid %u)",
			 (int)cr.pid, (unsigned)cr.uid, (unsigned)cr.gid, (unsigned)geteuid(),
			 (unsigned)srv->admit_gid);
		if (len > 0 && (size_t)len < sizeof(msg) &&
		    send(fd, msg, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			srv_log(srv, LOG_DEBUG, "console: refusal not sent: %s", strerror(errno));
		close(fd);
		return;
	}
	for (slot = 0; slot < CON_CLIENTS_MAX && srv->cl[slot]; slot++)
		;
	if (slot == CON_CLIENTS_MAX)
		slot = client_evict(srv, cr.pid);
	k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return;
	}
	k->fd = fd;
	k->pid = cr.pid;
	k->uid = cr.uid;
	k->last_ms = mono_ms();
	k->watching = EPOLLIN;
	if (watch(srv, EPOLL_CTL_ADD, fd, EPOLLIN, k)) {
		close(fd);
		free(k);
		return;
	}
	srv->cl[slot] = k;
	srv_log(srv, LOG_DEBUG, "console: client pid %d uid %u", (int)cr.pid, (unsigned)cr.uid);
}

/* ---- The terminal ---- */

/* A descriptor for stdout that never blocks (struct con_tty_out); -1 if none. */
static int tty_out_open(bool *sock)
{
	struct stat st;
	int fd;

	*sock = false;
	if (fstat(STDOUT_FILENO, &st))
		return -1;
	if (S_ISREG(st.st_mode))
		return fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (S_ISSOCK(st.st_mode)) {
		*sock = true;
		return fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	}
	/* A FIFO without a reader refuses O_NONBLOCK opens (ENXIO): no terminal output. */
	fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	return fd;
}

static void tty_watch_out(struct conserver *srv, bool on)
{
	struct con_tty_out *t = &srv->tout;

	if (on == t->watching)
		return;
	if (on)
		t->watching = !watch(srv, EPOLL_CTL_ADD, t->fd, EPOLLOUT, t);
	else {
		unwatch(srv, t->fd);
		t->watching = false;
	}
}

/* Write what the descriptor takes; wait for EPOLLOUT for the rest. */
static void tty_flush(struct conserver *srv)
{
	struct con_tty_out *t = &srv->tout;

	while (t->off < t->len) {
		ssize_t n = t->sock ? send(t->fd, t->buf + t->off, t->len - t->off,
					   MSG_DONTWAIT | MSG_NOSIGNAL)
				    : write(t->fd, t->buf + t->off, t->len - t->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			tty_watch_out(srv, true);
			return;
		}
		if (n <= 0) {
			/* The reader is gone (EPIPE) or the file failed: what waits is lost. */
			t->dropped++;
			break;
		}
		t->off += (size_t)n;
	}
	t->len = t->off = 0;
	tty_watch_out(srv, false);
}

/* Queue one reply for stdout, whole or not at all. */
static void tty_reply(struct conserver *srv, const char *text, size_t len)
{
	struct con_tty_out *t = &srv->tout;

	if (!len)
		return;
	if (t->fd < 0) { /* stdout could not be opened without blocking (tty_out_open) */
		t->dropped++;
		return;
	}
	if (t->off) { /* make room at the front */
		memmove(t->buf, t->buf + t->off, t->len - t->off);
		t->len -= t->off;
		t->off = 0;
	}
	if (len > CON_TTY_OUT_MAX - t->len) {
		t->dropped++;
		con_warn(srv,
			 "console: the terminal's output is blocked (%zu bytes unread): "
			 "reply dropped (%" PRIu64 " so far)",
			 t->len, t->dropped);
		return;
	}
	memcpy(t->buf + t->len, text, len);
	t->len += len;
	if (!t->watching)
		tty_flush(srv);
}

uint64_t conserver_tty_dropped(const struct conserver *srv)
{
	return srv ? srv->tout.dropped : 0;
}

static void tty_read(struct conserver *srv)
{
	char buf[4096];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* End of input: the program goes on, the terminal console stops. */
		unwatch(srv, STDIN_FILENO);
		srv->tty = false;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		const char *refused;
		char *out = NULL;
		size_t olen = 0;
		FILE *f;

		if (!line_put(&srv->tin, (unsigned char)buf[i]))
			continue;
		refused = line_refused(&srv->tin);
		f = open_memstream(&out, &olen);
		if (f) {
			if (refused) {
				fputs(refused, f);
			} else {
				srv->tty_running = true;
				srv->deferred = 0;
				if (srv->cfg.exec(srv->cfg.exec_arg, srv->tin.buf, f) ==
					    CONSERVER_PENDING &&
				    srv->deferred)
					srv->tty_pending = srv->deferred;
				srv->deferred = 0;
				srv->tty_running = false;
			}
			if (!fclose(f))
				tty_reply(srv, out, olen);
			free(out);
		}
		line_reset(&srv->tin);
	}
}

/* ---- Time-outs ---- */

/* Close a client without a command for idle_s seconds (unread output or not). */
static void client_idle(struct conserver *srv, int i, uint64_t now)
{
	uint64_t idle_s =
		srv->cfg.idle_s ? (uint64_t)atomic_load(srv->cfg.idle_s) : CON_IDLE_DEFAULT_S;
	uint64_t idle_ms = idle_s * 1000;
	struct client *k = srv->cl[i];

	if (k->line_ms || k->pending || now - k->last_ms < idle_ms)
		return;
	if (k->outlen || k->close_after) {
		/* It does not read what it was sent (or its last words) either. */
		con_warn(srv,
			 "console: pid %d: no command and unread output for %" PRIu64
			 " s: disconnected",
			 (int)k->pid, idle_ms / 1000);
		client_free(srv, i);
		return;
	}
	con_warn(srv, "console: pid %d: no command for %" PRIu64 " s: disconnected", (int)k->pid,
		 idle_ms / 1000);
	client_reply(k, "no command for too long: disconnected\n", false);
	k->close_after = true;
	if (!client_flush(srv, k))
		client_free(srv, i);
}

/* Free the clients evicted during the event batch that just ended. */
static void evicted_free(struct conserver *srv)
{
	while (srv->evicted) {
		struct client *k = srv->evicted;

		srv->evicted = k->next_evicted;
		free(k->out);
		free(k);
	}
}

static void tick(struct conserver *srv, uint64_t now)
{
	evicted_free(srv);
	warn_window(srv, now);
	for (int i = 0; i < CON_CLIENTS_MAX; i++) {
		struct client *k = srv->cl[i];

		if (k)
			client_idle(srv, i, now);
		k = srv->cl[i];
		if (!k || !k->line_ms || now - k->line_ms < CON_LINE_MS)
			continue;
		con_warn(srv, "console: pid %d: command line not finished in %d s: disconnected",
			 (int)k->pid, CON_LINE_MS / 1000);
		client_reply(k, "command line not finished in time\n", false);
		k->close_after = true;
		k->line_ms = 0;
		line_reset(&k->in);
		if (!client_flush(srv, k))
			client_free(srv, i);
	}
}

int conserver_poll(struct conserver *srv, int timeout_ms)
{
	struct epoll_event ev[CON_CLIENTS_MAX + 2];
	int n = epoll_wait(srv->ep, ev, CON_CLIENTS_MAX + 2, timeout_ms);

	if (n < 0) {
		if (errno != EINTR)
			return -errno;
		n = 0;
	}
	srv->in_poll = true;
	for (int i = 0; i < n; i++) {
		void *p = ev[i].data.ptr;

		if (p == srv)
			on_accept(srv);
		else if (p == &srv->tin)
			tty_read(srv);
		else if (p == &srv->tout)
			tty_flush(srv);
		else
			client_event(srv, p, ev[i].events);
	}
	srv->in_poll = false;
	/* After the batch: it may have closed clients whose events were in it. */
	tick(srv, mono_ms());
	return n;
}

uint64_t conserver_defer(struct conserver *srv)
{
	if (!srv->running && !srv->tty_running)
		return 0;
	srv->deferred = ++srv->next_token;
	return srv->deferred;
}

/*
 * A client that must go now: freed, or, inside an event batch that may still hold an
 * event of it, closed and freed after the batch (as an evicted one).
 */
static void client_drop(struct conserver *srv, int slot)
{
	struct client *k = srv->cl[slot];

	if (!srv->in_poll) {
		client_free(srv, slot);
		return;
	}
	unwatch(srv, k->fd);
	close(k->fd);
	k->evicted = true;
	k->next_evicted = srv->evicted;
	srv->evicted = k;
	srv->cl[slot] = NULL;
}

int conserver_complete(struct conserver *srv, uint64_t token, const char *text, bool ok)
{
	if (token && token == srv->tty_pending) {
		tty_reply(srv, text, strlen(text));
		srv->tty_pending = 0;
		return 0;
	}
	for (int i = 0; token && i < CON_CLIENTS_MAX; i++) {
		struct client *k = srv->cl[i];

		if (!k || k->pending != token)
			continue;
		k->pending = 0;
		client_reply(k, text, ok);
		k->last_ms = mono_ms();
		/* Sent as the socket takes it; then the commands it sent meanwhile. */
		if (!client_flush(srv, k) || (!k->outlen && k->rawlen && !client_process(srv, k)))
			client_drop(srv, i);
		return 0;
	}
	return -ENOENT;
}

int conserver_fd(const struct conserver *srv)
{
	return srv->ep;
}

/* ---- The socket ---- */

/* Is someone listening at path? (connect succeeds) */
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

static int listen_path(struct conserver *srv, const char *path, bool set_group, char *err,
		       size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int fd, r;

	if (!path)
		return errf(err, errlen, -EINVAL, "no control socket path");
	if (strlen(path) >= sizeof(sa.sun_path))
		return errf(err, errlen, -ENAMETOOLONG, "control socket path too long: %s", path);
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
			    (chown(dir, (uid_t)-1, srv->admit_gid) ||
			     chmod(dir, (st.st_mode & 07777) | 0010)))
				return errf(err, errlen, -errno, "%s: %s", dir, strerror(errno));
		}
	}
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return errf(err, errlen, -EEXIST, "%s exists and is not a socket", path);
		if (path_live(&sa))
			return errf(err, errlen, -EADDRINUSE, "another %s is listening on %s",
				    srv->cfg.peer, path);
		unlink(path); /* stale: its program is gone */
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errf(err, errlen, -errno, "control socket: %s", strerror(errno));
	/* Never world-accessible, not even between bind and chmod. */
	old = umask(0117);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r || chmod(path, 0660) || (set_group && chown(path, (uid_t)-1, srv->admit_gid)) ||
	    listen(fd, CON_CLIENTS_MAX)) {
		r = -errno;
		errf(err, errlen, r, "control socket %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return r;
	}
	srv->lfd = fd;
	srv->own_path = true;
	snprintf(srv->path, sizeof(srv->path), "%s", path);
	return 0;
}

struct conserver *conserver_open(const struct conserver_cfg *cfg, char *err, size_t errlen)
{
	struct conserver *srv = calloc(1, sizeof(*srv));
	int r;

	if (!srv) {
		errf(err, errlen, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	srv->cfg = *cfg;
	srv->tout.fd = -1; /* before any path to conserver_close */
	if (!srv->cfg.prog)
		srv->cfg.prog = "console";
	if (!srv->cfg.peer)
		srv->cfg.peer = "program";
	srv->lfd = -1;
	srv->admit_gid = cfg->admit_gid == (gid_t)-1 ? getegid() : cfg->admit_gid;
	srv->ep = epoll_create1(EPOLL_CLOEXEC);
	if (srv->ep < 0) {
		r = errno;
		errf(err, errlen, -r, "control socket: epoll: %s", strerror(r));
		free(srv);
		errno = r;
		return NULL;
	}
	if (cfg->listen_fd >= 0) {
		srv->lfd = cfg->listen_fd;
		fcntl(srv->lfd, F_SETFL, fcntl(srv->lfd, F_GETFL) | O_NONBLOCK);
		if (cfg->path)
			snprintf(srv->path, sizeof(srv->path), "%s", cfg->path);
	} else if ((r = listen_path(srv, cfg->path, cfg->set_group, err, errlen))) {
		close(srv->ep);
		free(srv);
		errno = -r;
		return NULL;
	}
	if ((r = watch(srv, EPOLL_CTL_ADD, srv->lfd, EPOLLIN, srv))) {
		errf(err, errlen, r, "control socket: epoll: %s", strerror(-r));
		conserver_close(srv);
		errno = -r;
		return NULL;
	}
	if (cfg->tty) {
		fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
		srv->tty = !watch(srv, EPOLL_CTL_ADD, STDIN_FILENO, EPOLLIN, &srv->tin);
		srv->tout.buf = malloc(CON_TTY_OUT_MAX);
		if (srv->tout.buf)
			srv->tout.fd = tty_out_open(&srv->tout.sock);
	}
	return srv;
}

void conserver_close(struct conserver *srv)
{
	if (!srv)
		return;
	for (int i = 0; i < CON_CLIENTS_MAX; i++)
		if (srv->cl[i])
			client_free(srv, i);
	evicted_free(srv);
	if (srv->tty)
		unwatch(srv, STDIN_FILENO);
	if (srv->tout.fd >= 0) {
		tty_watch_out(srv, false);
		close(srv->tout.fd);
	}
	free(srv->tout.buf);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->own_path)
		unlink(srv->path);
	close(srv->ep);
	free(srv);
}
