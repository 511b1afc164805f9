/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IB joins through the subnet administrator (sajoin.c), for groups whose IB Q_Key is not
 * rdma_cm's: an SA MCMemberRecord Set/Delete sent with libibumad, as perftest joins
 * (perftest multicast_resources.c). Control thread.
 */
#ifndef CONTROL_SAJOIN_H
#define CONTROL_SAJOIN_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

struct group;
struct side_ctx;

/* Does g's IB join go through the SA (its IB Q_Key is not rdma_cm's RDMA_UDP_QKEY)? */
bool sajoin_wanted(const struct group *g);

/*
 * Open the IB port's umad agent for the SA (once; later calls do nothing): 0 or -errno.
 * The caller watches sajoin_fd() in the loop and reads the answers with sajoin_recv.
 */
int sajoin_open(const struct side_ctx *sd);

/* The umad descriptor (readable when an answer waits), -1 while not open. */
int sajoin_fd(void);

/*
 * Send g's IB MCMemberRecord request to the SA of port sd: with join, a Set (full member,
 * or send-only full member when g does not receive on IB) with the group's MGID, the
 * port's GID and P_Key, g's IB Q_Key, SL 0, flow label 0 and TClass "#tos" (what creating
 * a group needs); without, a Delete (leave; its answer is read and dropped). Opens the
 * agent on first use. *tid: the request's transaction id. 0 or -errno.
 */
int sajoin_send(const struct side_ctx *sd, const struct group *g, bool join, uint32_t *tid);

/* The answer to a join request (sajoin_recv). */
struct sajoin_answer {
	uint32_t tid;	       /* of the request */
	int err;	       /* umad's: ETIMEDOUT when the SA did not answer */
	uint16_t status;       /* the MAD status: non-zero when the SA refused */
	uint32_t qkey;	       /* the group's record (err and status 0) */
	struct ibv_ah_attr aa; /* the AH to the group, as ib_init_ah_from_mcmember makes it */
};

/* The next answer to a join: 1 and *a, or 0 when none waits. Control thread. */
int sajoin_recv(const struct side_ctx *sd, struct sajoin_answer *a);

/* What an SA status means, for the log. */
const char *sajoin_status_str(uint16_t status);

#endif /* CONTROL_SAJOIN_H */
