/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The console: commands for operators (help, status, multicast, join, leave, stats
 * --json, ...), served on a Unix stream socket (bcom is the client) and, with --debug,
 * on the terminal. Everything runs on the control thread, inside its epoll loop; no
 * client can block it (non-blocking sockets, bounded lines, bounded output, bounded
 * clients).
 *
 * Protocol (docs/console.md): the client sends a line ending in '\n' (at most
 * CON_LINE_MAX - 1 bytes before it); the reply is text, then a NUL byte, '0' (success)
 * or '1' (failure) and '\n'. The connection stays open for further commands.
 */
#ifndef CONTROL_CONSOLE_H
#define CONTROL_CONSOLE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define CON_LINE_MAX	   1024	       /* a command line, with its newline */
#define CON_CLIENTS_MAX	   16	       /* connected clients at a time */
#define CON_OUT_MAX	   (16u << 20) /* reply bytes a client may leave unread */
#define CON_LINE_MS	   10000       /* a started line must end within this time */
#define CON_WARN_BURST	   10	       /* client warnings logged per window, then counted */
#define CON_WARN_WINDOW_MS 10000       /* ... the window */

struct ctl;
struct console;

struct console_cfg {
	const char *path; /* socket path (NULL with listen_fd from systemd) */
	int listen_fd;	  /* a listening socket from systemd (sd_listen_fds), else -1 */
	gid_t admit_gid;  /* group admitted besides root and our uid; (gid_t)-1: our gid */
	bool set_group;	  /* chown the socket to admit_gid (--control-group given) */
	bool tty;	  /* also read commands from stdin (--debug) */
};

/*
 * Open the console: create (or adopt) the listening socket, 0660, and register it with
 * the control thread's epoll. Refuses a path where another bridge listens. NULL + errno
 * with a message.
 */
struct console *console_open(struct ctl *c, const struct console_cfg *cfg, char *err,
			     size_t errlen);

/* An epoll event for one of the console's fds (tag from ctl's dispatch). */
void console_event(struct console *con, void *tag, unsigned events);

/*
 * After each batch of events (control thread): free the clients evicted during the batch
 * (a new client took their place; the batch may still have named them), close clients
 * whose line did not end in time or that sent no command for console_idle seconds, and
 * log how many client warnings the rate limit left out.
 */
void console_tick(struct console *con, uint64_t now_ms);

/* Close every client and the socket (and unlink it unless it came from systemd). */
void console_close(struct console *con);

/*
 * Run one command line, output to out. Returns 0 on success, -1 when the command failed
 * (its message was written to out). Also used by tests through the socket only.
 */
int console_exec(struct ctl *c, const char *line, FILE *out);

#endif /* CONTROL_CONSOLE_H */
