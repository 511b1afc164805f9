/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mccon.h - the console of mcsender and mclisten: ib2roce's console server
 * (lib/conserver.h: socket, admission, limits, protocol; bcom is the client) with
 * the tools' commands: help, status, stats [--json], enable/disable (the runtime
 * features of the option registry, ppsdisplay among them), shutdown, quit/exit.
 *
 * Threading: the tools are single-threaded and so is their console. The program's loop
 * serves it between sends or receives (mccon_serve every MCCON_POLL_MS, mccon_wait and
 * mccon_fd where the loop sleeps), so that the commands read the counters that only
 * that thread writes, with no lock or atomic on the send/receive path. Every function
 * accepts NULL (no --control): it then does nothing.
 */
#ifndef TOOLS_MCCON_H
#define TOOLS_MCCON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MCCON_POLL_MS 10 /* the loop looks at the console at least this often */

/* What the commands ask of the program (called on its thread, from mccon_*). */
struct mccon_ops {
	/* status: what the program does, one item per line. */
	void (*status)(void *arg, FILE *out);
	/* stats: the end-of-run summary so far; json: the same object as --json. */
	void (*stats)(void *arg, FILE *out, bool json);
	/* shutdown: stop as at the end of --duration (the loop ends, the summary follows). */
	void (*shutdown)(void *arg);
};

struct mccon;

/*
 * mccon_open - serve the console on the socket path (created as ib2roce creates its
 * own: control_make_dir, mode 0660, a live socket there is refused). prog names the
 * program in messages. NULL + errno with a message in err.
 */
struct mccon *mccon_open(const char *prog, const char *path, const struct mccon_ops *ops, void *arg,
			 char *err, size_t errlen);

/*
 * mccon_serve - serve what clients sent, without waiting, when MCCON_POLL_MS passed since
 * the last time (now_ns: CLOCK_MONOTONIC ns, the loop's own reading). One comparison
 * when it is not yet time; an epoll_wait otherwise.
 */
void mccon_serve(struct mccon *con, uint64_t now_ns);

/* mccon_poll - serve what clients sent now, without waiting. */
void mccon_poll(struct mccon *con);

/* mccon_fd - the fd that is readable when mccon_poll has work (-1 for NULL). */
int mccon_fd(const struct mccon *con);

/*
 * mccon_wait - sleep until until_ns (CLOCK_MONOTONIC) or until a client sends
 * something, which is then served. Returns early also on a signal; the caller looks at
 * the time again.
 */
void mccon_wait(struct mccon *con, uint64_t until_ns);

/* mccon_close - close the clients and the socket (and remove the socket file). */
void mccon_close(struct mccon *con);

#endif /* TOOLS_MCCON_H */
