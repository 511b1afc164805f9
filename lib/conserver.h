/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The console server: a Unix stream socket on which operators' clients (bcom) send
 * command lines and read replies, with what keeps them from costing the program more
 * than a bounded amount (non-blocking sockets, bounded lines, bounded output, bounded
 * clients, idle and line time-outs, rate-limited warnings) and who may connect (uid/gid
 * admission). What the commands are is the caller's: each complete line is handed to an
 * exec callback that writes its reply into a stream. ib2roce (control/console.c) and the
 * tools mcsender and mclisten (tools/mccon.c) serve their own commands with it.
 *
 * The server has an epoll fd of its own (conserver_fd): a caller with an epoll or poll
 * loop watches it for input and calls conserver_poll(srv, 0) when it is readable and
 * from time to time (the time-outs); a loop that cannot wait on fds calls
 * conserver_poll(srv, 0) every few milliseconds. Everything runs on the thread that
 * calls conserver_poll; nothing in it blocks.
 *
 * Protocol (docs/console.md): the client sends a line ending in '\n' (at most
 * CON_LINE_MAX - 1 bytes before it); the reply is text, then a NUL byte, '0' (success)
 * or '1' (failure) and '\n'. The connection stays open for further commands. A command
 * may answer later (conserver_defer, conserver_complete: a wait the caller's loop
 * drives); that client's next commands wait for it, the other clients do not.
 */
#ifndef LIB_CONSERVER_H
#define LIB_CONSERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CON_LINE_MAX	   1024	       /* a command line, with its newline */
#define CON_CLIENTS_MAX	   16	       /* connected clients at a time */
#define CON_OUT_MAX	   (16u << 20) /* reply bytes a client may leave unread */
#define CON_LINE_MS	   10000       /* a started line must end within this time */
#define CON_WARN_BURST	   10	       /* client warnings logged per window, then counted */
#define CON_WARN_WINDOW_MS 10000       /* ... the window */
#define CON_IDLE_DEFAULT_S 300	       /* a client without a command is closed (no idle_s) */
#define CON_TTY_OUT_MAX	   (1u << 20)  /* terminal reply bytes waiting for stdout */

/* What an exec callback returns besides its reply. */
#define CONSERVER_FAIL	  -1 /* the command failed: status '1' */
#define CONSERVER_OK	  0  /* status '0' */
#define CONSERVER_CLOSE	  1  /* status '0', then close this client (quit); the terminal: OK */
#define CONSERVER_PENDING 2  /* the reply comes later: conserver_complete (out is dropped) */

/*
 * Run one command line (without its newline; never longer than CON_LINE_MAX - 1 bytes,
 * without control characters), writing the reply text to out. Called on the thread of
 * conserver_poll. Returns CONSERVER_OK, CONSERVER_FAIL or CONSERVER_CLOSE.
 */
typedef int conserver_exec_fn(void *arg, const char *line, FILE *out);

/*
 * A message about a client (a refusal, a time-out, an eviction: warnings, rate-limited)
 * or a detail (LOG_DEBUG). prio is a syslog priority; msg has no newline.
 */
typedef void conserver_log_fn(void *arg, int prio, const char *msg);

struct conserver_cfg {
	const char *path; /* socket path (NULL with listen_fd from systemd) */
	int listen_fd;	  /* a listening socket to adopt (systemd's), else -1 */
	gid_t admit_gid;  /* group admitted besides root and our uid; (gid_t)-1: our gid */
	bool set_group;	  /* chown the socket to admit_gid */
	bool tty;	  /* also run lines read from stdin, replies to stdout unframed (never
			   * blocking: a bounded buffer, replies dropped and counted when full) */
	const char *prog; /* names us in a refusal: "PROG: permission denied (uid U, gid G)" */
	const char *peer; /* what a live socket at path is: "another PEER is listening on" */
	conserver_exec_fn *exec;
	void *exec_arg;
	conserver_log_fn *log;
	void *log_arg;
	const _Atomic int64_t *idle_s; /* seconds without a command before a client is
					* closed, read at each poll; NULL: CON_IDLE_DEFAULT_S */
};

struct conserver;

/*
 * conserver_open - create (or adopt) the listening socket, mode 0660, and the server's
 * epoll. Creates the socket's directory (control_make_dir, lib/paths.h), refuses a
 * path where someone answers (-EADDRINUSE), removes a stale socket file. Any single
 * thread (the one that will poll). NULL + errno with a message in err.
 */
struct conserver *conserver_open(const struct conserver_cfg *cfg, char *err, size_t errlen);

/* conserver_fd - the server's epoll fd: readable when conserver_poll has work. */
int conserver_fd(const struct conserver *srv);

/*
 * conserver_poll - wait up to timeout_ms (0: not at all, -1: until something happens)
 * for clients, serve what they sent (accept, read, run complete lines through exec,
 * write replies as the sockets take them), then close clients whose line did not end in
 * CON_LINE_MS or that sent no command for idle_s, and log how many warnings the rate
 * limit left out. The polling thread. Returns the number of fd events served, or -errno
 * from epoll_wait.
 */
int conserver_poll(struct conserver *srv, int timeout_ms);

/*
 * conserver_tty_dropped - replies of the terminal console dropped because standard
 * output did not take them (CON_TTY_OUT_MAX bytes waiting) or failed. The polling thread.
 */
uint64_t conserver_tty_dropped(const struct conserver *srv);

/*
 * conserver_reply_confirm - from inside an exec callback serving a socket client: the
 * reply of the command now running must reach the client, or undo(arg) is called. The
 * server sends the reply as soon as exec returns; if the socket does not take all of it
 * at once (the client closed or shut its end down, an error, a full buffer), it calls
 * undo(arg), drops the rest and closes the client. A client that shuts its reading side
 * down (shutdown(SHUT_RD)) therefore either has the whole reply in its buffer or the
 * command is undone: the kernel serialises the two on the socket. Used by a commit that
 * must not take effect when the asker has given up (control/ha.c, takeover commit).
 * Returns 0; -EPIPE when the client has closed its end already (do not act: nobody
 * would read the answer); -ENOTCONN outside a socket client's command (the terminal).
 * The polling thread.
 */
int conserver_reply_confirm(struct conserver *srv, void (*undo)(void *arg), void *arg);

/*
 * conserver_defer - from inside an exec callback that will return CONSERVER_PENDING: a
 * token naming the command's reply, for conserver_complete. Until then the client's
 * further commands wait (its socket is not read) and it is not closed for being idle;
 * if it goes away meanwhile, the reply is dropped. The terminal's commands have tokens
 * too. Never 0. The polling thread.
 */
uint64_t conserver_defer(struct conserver *srv);

/*
 * conserver_complete - the reply of a command that returned CONSERVER_PENDING: text,
 * then the status ('0' when ok). Sent as the socket takes it, as any reply; then the
 * client's next commands run. The polling thread, inside or outside conserver_poll.
 * Returns 0, or -ENOENT when the client has gone (the reply is dropped).
 */
int conserver_complete(struct conserver *srv, uint64_t token, const char *text, bool ok);

/* conserver_close - close every client and the socket (unlink it unless adopted). NULL:
 * nothing. */
void conserver_close(struct conserver *srv);

#endif /* LIB_CONSERVER_H */
