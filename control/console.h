/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The console: the bridge's commands for operators (help, status, multicast, join,
 * leave, stats --json, ...), served by the console server (conserver.h) on a Unix
 * stream socket (bcom is the client) and, with --debug, on the terminal. Everything runs
 * on the control thread, inside its epoll loop, where the server's epoll fd is one fd;
 * no client can block it (conserver.h: non-blocking sockets, bounded lines, bounded
 * output, bounded clients). Protocol and limits: conserver.h, docs/console.md.
 */
#ifndef CONTROL_CONSOLE_H
#define CONTROL_CONSOLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "concmd.h"
#include "conserver.h"

struct ctl;
struct console;

/*
 * A console command: its entry (name, synopsis, help) and what runs it, on the control
 * thread. The function returns 0 done, -1 failed (the reason written to out), or
 * CONSOLE_PENDING: the reply comes later (console_defer, console_complete).
 */
typedef int console_cmd_fn(struct ctl *c, char *args, FILE *out);
#define CONSOLE_PENDING 2

struct console_cmd {
	struct concmd c;
	console_cmd_fn *fn;
};

/*
 * Add a module's commands (a table ending with a NULL name) to the console's: a module
 * registers its commands in its init, before the loop runs. help lists them all by name.
 * 0, -EEXIST (a name is taken: nothing added) or -ENOMEM.
 */
int console_cmd_register(const struct console_cmd *table);

/* The console's own commands (help, quit, shutdown, config, enable, disable) and its
 * pass after every batch of events (loop.h). Before the loop runs. 0 or -errno. */
int console_init(struct ctl *c);

/*
 * The configuration's groups (v[0..n), copied): what unbridged compares with the groups
 * bridged now. console_init takes the groups bridged at start; a reload gives the file's.
 */
struct group;
void console_conf_groups(struct group *const *v, uint32_t n);

/* A deferred reply for the command running now (console_complete), 0: none possible
 * (no console, or the terminal). */
uint64_t console_defer(struct ctl *c);

/* The deferred reply of token: report, the command failed unless ok. */
void console_complete(struct ctl *c, uint64_t token, const char *report, bool ok);

/*
 * shutdown as SIGTERM: a module above the console (HA: the peer takes the active
 * partitions first) may hold it. fn returns 1 when it holds the stop (the reply comes
 * later: it calls console_shutdown_done with the token of console_defer as arg), -EBUSY
 * when the command fails (the reason written to out), else 0: stop now. One holder; NULL
 * takes it back. Before the loop runs.
 */
typedef int console_hold_fn(struct ctl *c, FILE *out);
void console_on_shutdown(console_hold_fn *fn);

/* A held shutdown is over (the signature of ha_done_fn): report and "stopping the
 * bridge" are the reply of the token arg, then the loop stops. */
void console_shutdown_done(struct ctl *c, void *arg, int rc, const char *report);

struct console_cfg {
	const char *path; /* socket path (NULL with listen_fd from systemd) */
	int listen_fd;	  /* a listening socket from systemd (sd_listen_fds), else -1 */
	gid_t admit_gid;  /* group admitted besides root and our uid; (gid_t)-1: our gid */
	bool set_group;	  /* chown the socket to admit_gid (--control-group given) */
	bool tty;	  /* also read commands from stdin (--debug) */
};

/*
 * Open the console: create (or adopt) the listening socket, 0660 (conserver_open), and
 * register the server's epoll fd with the loop (served when readable and after every
 * batch: pending replies, clients whose line did not end in time or that sent no command
 * for console_idle seconds, the rate limit's count of client warnings). Refuses a path
 * where another bridge listens. NULL + errno with a message.
 */
struct console *console_open(struct ctl *c, const struct console_cfg *cfg, char *err,
			     size_t errlen);

/* Close every client and the socket (and unlink it unless it came from systemd). */
void console_close(struct console *con);

/* Replies of the terminal console (--debug) dropped because stdout did not take them
 * (conserver_tty_dropped); NULL: 0. Control thread. */
uint64_t console_tty_dropped(const struct console *con);

/*
 * Run one command line, output to out. Returns 0 on success, -1 when the command failed
 * (its message was written to out). A command whose reply comes later (handover,
 * shutdown with an HA peer) needs a console client for it: here it returns 0 and the
 * reply is dropped. Also used by tests through the socket only.
 */
int console_exec(struct ctl *c, const char *line, FILE *out);

/*
 * From inside a command run for a socket client: conserver_reply_confirm on the
 * console's server (the reply must reach the client, or undo(arg) is called). 0,
 * -EPIPE (the client has gone), -ENOTCONN (no console, or the terminal). Control thread.
 */
int console_reply_confirm(struct ctl *c, void (*undo)(void *arg), void *arg);

#endif /* CONTROL_CONSOLE_H */
