/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The control thread's event loop (loop.c): one epoll, one 250 ms tick, the signals.
 * Modules register with it in their init what they need, and the loop knows none of them
 * by name (the reference's design: "modules register file handles and functions to run
 * when data becomes available, and events to be run at certain times"):
 *   loop_watch       a file descriptor and the function that serves it;
 *   loop_every       a named timer (listed by the events console command);
 *   loop_on_pass     a function run after every batch of events (deadlines, cleanup);
 *   loop_on_stop     a say in a stop asked for by SIGINT/SIGTERM (hold it: HA handover);
 *   loop_on_exit     a function run when the loop ends (before the workers stop);
 *   loop_on_reload   SIGHUP;
 *   loop_on_group    a group is added to or removed from the bridge at run time.
 * One loop per process, run by the control thread; every function here is for that
 * thread only (registrations may also come from main before loop_run).
 */
#ifndef CONTROL_LOOP_H
#define CONTROL_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct group;

/* The loop's tick: timers run on it (a timer's period is rounded up to ticks). */
#define LOOP_TICK_MS 250

/* Set up epoll, the signal descriptor (SIGINT, SIGTERM, SIGHUP blocked) and the tick.
 * 0 or -errno with a message. */
int loop_init(char *err, size_t errlen);

/*
 * Run until loop_stop: wait (QSBR-offline), serve the ready descriptors, the timers due
 * at a tick, then the pass hooks. At the end the exit hooks, then a second SIGINT/SIGTERM
 * forces the exit (_exit(1)). 0 or -errno (epoll failed).
 */
int loop_run(void);

/* Stop the loop after the current batch (any module: shutdown, a fatal event). */
void loop_stop(void);

/* loop_stop was called. */
bool loop_stopped(void);

/* Close what loop_init opened and forget every registration. */
void loop_fini(void);

/* ---- File descriptors ---- */

/* fd has events (EPOLLIN, EPOLLOUT, EPOLLERR, ... as epoll reports them). */
typedef void loop_fd_fn(void *arg, unsigned events);

/* Serve fd's events (EPOLLIN...) with fn(arg, events). 0 or -1 with errno. */
int loop_watch(int fd, unsigned events, loop_fd_fn *fn, void *arg);

/* Change the events of a watched fd (same fn and arg). 0 or -1 with errno. */
int loop_rewatch(int fd, unsigned events);

/* Stop serving fd (before it is closed). Events of fd still in this batch are dropped. */
void loop_unwatch(int fd);

/* ---- Timers ---- */

struct loop_timer;

/* A timer is due: now_ms is CLOCK_MONOTONIC ms. */
typedef void loop_timer_fn(void *arg, uint64_t now_ms);

/* The period of a timer that follows a setting (ms, 0: off for now). */
typedef uint64_t loop_period_fn(void *arg);

/*
 * Run fn(arg, now) every ms milliseconds (0: at every tick), first one period from now.
 * name (copied) names it in the events listing. Timers due at the same tick run in the
 * order of registration. NULL on out of memory.
 */
struct loop_timer *loop_every(uint64_t ms, loop_timer_fn *fn, void *arg, const char *name);

/* What the timer does, for the events listing (copied). */
void loop_timer_what(struct loop_timer *t, const char *what);

/* The period follows period(arg), asked at every tick (0: off, not listed). */
void loop_timer_follow(struct loop_timer *t, loop_period_fn *period);

/* Due at the next tick (once), then every period. */
void loop_timer_soon(struct loop_timer *t);

/* The registered timers, one line each: name, next run, what ("events" command). */
void loop_timers_print(FILE *out);

/* ---- Hooks ---- */

/* After every batch of events: returns the longest wait (ms) it can afford before the
 * next pass, or -1 for the tick's. */
typedef int loop_pass_fn(void *arg, uint64_t now_ms);
int loop_on_pass(loop_pass_fn *fn, void *arg);

/*
 * A stop asked for by a signal. LOOP_STOP_ASK: the first SIGINT/SIGTERM (sig): return
 * true to hold the stop (the module calls loop_stop when it is done). LOOP_STOP_HELD:
 * return whether this module holds a stop now (it may hold one started elsewhere: the
 * console's shutdown). LOOP_STOP_AGAIN: another signal came while a stop was held: let
 * go now (stop waiting; the module calls loop_stop).
 */
enum loop_stop_q { LOOP_STOP_ASK, LOOP_STOP_HELD, LOOP_STOP_AGAIN };
typedef bool loop_stop_fn(void *arg, int sig, enum loop_stop_q q);
int loop_on_stop(loop_stop_fn *fn, void *arg);

/* Whether a stop hook holds a stop (LOOP_STOP_HELD), or loop_stop was called. */
bool loop_stopping(void);

/* The loop ended (hooks run in the order of registration). */
typedef void loop_hook_fn(void *arg);
int loop_on_exit(loop_hook_fn *fn, void *arg);

/* SIGHUP. */
int loop_on_reload(loop_hook_fn *fn, void *arg);

/* A group is being added (added: before it is published to the workers) or was removed
 * (after it was unpublished). */
typedef void loop_group_fn(void *arg, struct group *g, bool added);
int loop_on_group(loop_group_fn *fn, void *arg);

/* Tell the group hooks (run-time groups, groups.c). */
void loop_group_event(struct group *g, bool added);

#endif /* CONTROL_LOOP_H */
