/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The control thread (ctl.c). */
#ifndef CONTROL_CTL_H
#define CONTROL_CTL_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>

#include "bridge.h"

/* What an epoll registration of the control thread is for. */
struct ev_tag {
	int kind; /* enum ev_kind in ctl.c */
	int side;
	struct channel *ch;
};

struct ctl {
	struct bridge *br;
	int ep, sigfd, timerfd;
	bool stop;
	struct ev_tag tag_sig, tag_timer, tag_cm[NSIDES], tag_async[NSIDES];
	struct ev_tag *tag_comp;
	uint64_t last_stats_ms, last_age_ms;
	uint64_t last_rx[NSIDES];
	/* Runtime features owned by the control thread. */
	_Atomic int64_t statint;
	_Atomic int64_t hwrate;
	_Atomic int64_t sender_idle_s;
	_Atomic int64_t pgm_idle_s;
};

static inline void fcntl_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Set up epoll, signals, timers and the rdma_cm ids (bound, not joined). 0 or -errno. */
int ctl_init(struct ctl *c, struct bridge *br, char *err, size_t errlen);

/* Issue the joins of every group on both sides (answers arrive in ctl_run). */
void ctl_start_joins(struct ctl *c);

/* Run until SIGINT/SIGTERM/SIGHUP or a fatal device event. 0 or -errno. */
int ctl_run(struct ctl *c);

/* Leave every group on both sides (shutdown, workers stopped). */
void ctl_leave_all(struct ctl *c);

/* Final counters, one line per side plus latency, senders and groups. */
void ctl_print_final(struct ctl *c, FILE *out);

void ctl_fini(struct ctl *c);

#endif /* CONTROL_CTL_H */
