/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IB multicast joins through the subnet administrator (samcm.c): an SA MCMemberRecord
 * Set (join) or Delete (leave) sent with libibumad, as perftest joins
 * (multicast_resources.c), for groups whose Q_Key is not rdma_cm's RDMA_UDP_QKEY: the
 * kernel's rdma_cm join always asks for that one, and the SA refuses it where the group
 * exists with another (control/sajoin.c says why at length). Shared by the bridge's
 * control thread (control/sajoin.c, answers read from its loop) and mcsender/mclisten
 * (tools/mctool.c, which wait for theirs). Nothing here logs.
 */
#ifndef LIB_SAMCM_H
#define LIB_SAMCM_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* One IB port's umad agent for the SA. Zeroed memory is not open: samcm_init first. */
struct samcm {
	int port;  /* umad port id, -1 when not open */
	int agent; /* SA agent */
	int fd;	   /* umad descriptor, readable when an answer waits */
	uint32_t tid;
};

/* A membership request: what an MCMemberRecord Set that may create the group carries. */
struct samcm_req {
	union ibv_gid mgid;
	union ibv_gid port_gid; /* the joining port's GID */
	uint32_t qkey;		/* the group's Q_Key */
	uint16_t pkey;		/* the port's P_Key (full membership bit set on the wire) */
	uint8_t tclass;
	bool send_only;	 /* send-only full member (else full member) */
	uint16_t sm_lid; /* where the SA is (ibv_port_attr) */
	uint8_t sm_sl;
};

/* The SA's answer to a join (samcm_recv). */
struct samcm_answer {
	uint32_t tid;	 /* of the request */
	int err;	 /* umad's: ETIMEDOUT when the SA did not answer */
	uint16_t status; /* the MAD status: non-zero when the SA refused */
	/* The group's record (err and status 0). */
	uint32_t qkey;
	uint16_t mlid;
	uint8_t sl, hop_limit, tclass, rate;
	uint32_t flow_label;
	union ibv_gid mgid;
};

/* Not open. */
void samcm_init(struct samcm *s);

/* Open the umad agent of device dev's port (once; later calls do nothing): 0 or -errno. */
int samcm_open(struct samcm *s, const char *dev, int port);

/* Close the agent (nothing when not open). */
void samcm_close(struct samcm *s);

/*
 * Send the request to the SA: with join a Set (MGID, port GID, Q_Key, P_Key, TClass, SL 0,
 * flow label 0 and JoinState in the component mask: enough to create the group), without
 * a Delete (MGID, port GID, JoinState; its answer is read and dropped by samcm_recv).
 * *tid: the request's transaction id. The agent must be open. 0 or -errno.
 */
int samcm_send(struct samcm *s, const struct samcm_req *r, bool join, uint32_t *tid);

/* The next answer to a join: 1 and *a, or 0 when none waits (never blocks). */
int samcm_recv(struct samcm *s, struct samcm_answer *a);

/* The AH to the group of answer a, as the kernel makes rdma_cm's (ib_init_ah_from_mcmember). */
void samcm_ah_attr(const struct samcm_answer *a, uint8_t port_num, uint8_t sgid_index,
		   struct ibv_ah_attr *aa);

/* What an SA status means, for a message. */
const char *samcm_status_str(uint16_t status);

#endif /* LIB_SAMCM_H */
