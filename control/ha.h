/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * High availability (docs/operations.md, "An HA pair"): the groups are split into
 * partitions, and for each partition this bridge is active (forwards) or standby (joined
 * on both sides, receiving, counting what it would have forwarded as `standby`). The
 * role is a bit of each group's ready word (GROUP_STANDBY, engine/bridge.h) that the
 * workers read on every packet of the slow path and once per burst on the flow fast
 * path: a switch needs no leave, no re-join. Without --partition every group is in the
 * implicit partition "default", active unless --role says otherwise.
 *
 * Everything here runs on the control thread.
 */
#ifndef CONTROL_HA_H
#define CONTROL_HA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl;
struct group;

#define HA_NAME_MAX 32
#define HA_DEFAULT  "default" /* the partition of groups no --partition names */
#define HA_ID_MAX   48	      /* an exchange's identity: "PID.START.SEQ" */

struct ha_part {
	char name[HA_NAME_MAX];
	bool standby;
	uint32_t ngroups;     /* groups of the bridge in the partition now */
	uint64_t since_ms;    /* CLOCK_MONOTONIC ms of the last role change (or the start) */
	int64_t since_wall;   /* the same as time(NULL) */
	uint64_t transitions; /* role changes since the start */
	char reason[96];      /* why the role is what it is */
	/* The peer's side of a handover (takeover prepare/commit): the exchange prepared
	 * for this partition, and until when (CLOCK_MONOTONIC ms) its commit is taken. */
	char prep_id[HA_ID_MAX];
	uint64_t prep_until_ms;
};

struct ha;

/*
 * Register the options --partition, --role and --ha-peer-control (config keywords
 * partition, role, ha-peer-control), and hanet.h's (--ha-peer, --ha-listen, --ha-psk,
 * --ha-psk-identity). Returns the HA state (freed by ha_free) or NULL
 * with errno.
 */
struct ha *ha_opts_register(void);

/* Free the state; NULL is a no-op. */
void ha_free(struct ha *ha);

/*
 * Does every group --partition lists have a group among groups[n] (the bridge's, after
 * the options are parsed)? 0, or -EINVAL with "partition P: group G is not bridged (-m,
 * -i, -o)" (-ENOMEM). From the parse (app/start.c), before the devices are opened, so
 * that --check refuses it too.
 */
int ha_check_groups(struct ha *ha, struct group *const *groups, uint32_t n, char *err,
		    size_t errlen);

/*
 * After the options are parsed and the groups created, before the first join: put
 * every group of the bridge in its partition with its partition's role, and register
 * HA's console commands (ha, handover, role, takeover) and its hooks with the loop
 * (loop.h: a SIGTERM's handover, groups added at run time). ha_check_groups has passed
 * (the parse). Returns 0, or -errno with a message (both --ha-peer-control and
 * --ha-peer given, out of memory, the TLS transport's start: hanet_start).
 */
int ha_start(struct ha *ha, struct ctl *c, char *err, size_t errlen);

/* A group added at run time (console join, reload): its partition and role. */
void ha_group_assign(struct ha *ha, struct group *g);

/* The partitions, index 0 being "default". */
uint32_t ha_nparts(const struct ha *ha);
const struct ha_part *ha_part_get(const struct ha *ha, uint32_t i);

/* The peer: --ha-peer-control's path or --ha-peer's HOST:PORT, NULL when neither is set. */
const char *ha_peer(const struct ha *ha);

/*
 * Set the role of partition `name` (NULL: every partition) and publish it to the
 * workers. `reason` is kept for `ha`. Returns 0 (a message on out), or -ENOENT / -EINVAL
 * with a message on out and nothing changed.
 */
int ha_role_set(struct ha *ha, struct ctl *c, const char *name, bool standby, const char *reason,
		FILE *out);

/*
 * What a handover calls when it is over: rc 0 when every partition tried went over, else
 * the negative errno of the last failure; report is its text for people, one line per
 * partition and a summary (the same outcomes are logged). Control thread.
 */
typedef void ha_done_fn(struct ctl *c, void *arg, int rc, const char *report);

/*
 * Make-before-break (docs/operations.md, "Handover"): hand partition `name` (NULL: every
 * partition active here that has groups) to the peer (--ha-peer-control), one at a time
 * over one connection, each in two phases with an identity of its own:
 *   takeover prepare P ID   the peer checks that it can forward P (sides up, P's groups
 *                           joined on both sides, their worker alive) and remembers ID;
 *   takeover commit P ID    the peer checks again, makes P active and answers; only then
 *                           does P go standby here.
 * Over TCP (--ha-peer, hanet.h) a third step: after the commit's answer we send
 *   takeover done P ID      the peer keeps P only once it reads this (it undoes a commit
 *                           not confirmed within HA_HANDOVER_MS, or whose connection
 *                           ends); P goes standby here on the peer's answer to it.
 * Every partition is tried, whatever happened to the one before. With `stopping` the
 * bridge is about to exit: a partition not handed over is logged as going dark, with
 * the reason, and this bridge refuses takeovers meanwhile.
 *
 * Asynchronous: the handover is driven by the control loop (the socket's events, and a
 * pass after every batch), which goes on serving the console, timers, joins, the
 * watchdog and the data path meanwhile. One at a time. The connect is non-blocking (a
 * peer whose listen backlog is full is tried again until the deadline), and one
 * deadline, HA_HANDOVER_MS after the start, covers the connect and every request and
 * answer; the time this bridge spends draining its own queues (ctl_data_drain, at most
 * CTL_DRAIN_MS per partition, on the control thread) is added to it, so that only the
 * peer's time counts.
 *
 * A peer that does not answer a commit in time is settled, not guessed: the connection's
 * reading side is shut down, so that the peer's answer is either already here (the peer
 * took over: the partition goes standby here) or can no longer be sent, which makes the
 * peer undo it (conserver_reply_confirm): exactly one bridge stays active. A peer's reply
 * is read into a fixed buffer of HA_REPLY_MAX bytes; a longer one ends the handover.
 *
 * Control thread. Returns 1 when the handover started: done(c, arg, rc, report) is
 * called when it is over, from the control loop, never from inside this call. 0 when
 * there is nothing to hand over, -EINVAL (no peer), -ENOENT (no such partition) or
 * -EBUSY (a handover is in progress): a message on out (NULL: none), done not called.
 */
int ha_handover(struct ha *ha, struct ctl *c, const char *name, const char *why, bool stopping,
		ha_done_fn *done, void *arg, FILE *out);

/* A handover is in progress; one for a stop is (or a stop waits for the one that is). */
bool ha_busy(const struct ha *ha);
bool ha_stopping(const struct ha *ha);

/*
 * A stop (SIGTERM) while a handover of the console is in progress: when it is over, hand
 * over what is still active here (stopping), then call done. Control thread.
 */
void ha_stop_after(struct ha *ha, const char *why, ha_done_fn *done, void *arg);

/*
 * End the wait of the handover in progress now (a second stop signal, the loop ending):
 * a commit whose answer is outstanding is settled as at the deadline, the partitions not
 * handed over stay here (reported "interrupted"), done is called; a stop waiting for the
 * handover (ha_stop_after) no longer hands anything over. Control thread.
 */
void ha_cancel(struct ha *ha, struct ctl *c);

/* While a handover is in progress the control loop waits at most this long for events
 * (HA's pass: the deadline and connect retries). */
#define HA_POLL_MS 20

/*
 * The console's `takeover prepare|commit PARTITION ID`: the peer's side of ha_handover.
 * prepare refuses (with the reason on out) when this bridge cannot forward the partition
 * or is stopping; commit refuses an ID that was not prepared here within HA_HANDOVER_MS
 * (stale, cancelled, replaced), then makes the partition active, under
 * conserver_reply_confirm: undone when the asking bridge can no longer read the answer.
 * Control thread. 0, or -1 with the reason on out.
 */
int ha_takeover(struct ha *ha, struct ctl *c, char *args, FILE *out);

/*
 * How a takeover commit's answer is made sure of: confirm(ctx, c, undo, arg) returns 0
 * when the answer will reach the asker or the takeover will be undone (the console:
 * conserver_reply_confirm; TLS: the asker's `takeover done`, hanet.c), -EPIPE when the
 * asker has gone (the commit is refused), -ENOTCONN when nobody can give up (a terminal).
 */
typedef int ha_confirm_fn(void *ctx, struct ctl *c, void (*undo)(void *arg), void *arg);

/* ha_takeover with the confirmation of the channel the request came on (hanet.c). */
int ha_takeover_confirm(struct ha *ha, struct ctl *c, char *args, FILE *out, ha_confirm_fn *confirm,
			void *ctx);

/* The network side of HA (--ha-peer, --ha-listen: hanet.h). */
struct hanet *ha_net(const struct ha *ha);

/* Groups in partition i now (recounted: groups come and go at run time). */
uint32_t ha_part_ngroups(struct ha *ha, struct ctl *c, uint32_t i);

/* The console's `ha`: partitions, roles, since when, transitions, reasons. */
void ha_show(struct ha *ha, struct ctl *c, FILE *out);

/* A handover's time for the peer: connect, every request and every reply (ha_handover). */
#define HA_HANDOVER_MS 2000
/* The largest reply of the peer's console read during a handover (a bridge's takeover
 * answers are a few lines): a longer one is not a bridge's answer and ends the handover. */
#define HA_REPLY_MAX 4096

#endif /* CONTROL_HA_H */
