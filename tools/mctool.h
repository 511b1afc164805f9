/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mctool.h - what the diagnostic programs mcsender and mclisten share: the options they
 * have in common with ib2roce (-d, -r, -m, -l, -p, -t and groups as arguments, through
 * the option registry of lib/options.h, and --control), the choice of one port on one fabric,
 * the rdma_cm joins, UD QPs, and the header every test packet carries.
 *
 * Threading: both programs are single-threaded; everything here runs on the main thread.
 * Errors: 0 / negative errno with a one-line message in err (no trailing newline).
 */
#ifndef TOOLS_MCTOOL_H
#define TOOLS_MCTOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "bridge.h"    /* struct group, group_spec_parse(), MGID formats */
#include "clock.h"     /* clock_ns(), mono_ns(): the tools' times */
#include "groupopts.h" /* struct groupopts_defaults */
#include "paths.h"     /* CONTROL_PATH_MAX */
#include "samcm.h"     /* struct samcm: IB joins through the SA */

#define MCT_GRH_LEN	 40	     /* UD receive header space (GRH, or IPv4 at offset 20) */
#define MCT_IPV4_OFF	 20	     /* RoCEv2: the IPv4 header inside those 40 bytes */
#define MCT_MCAST_QPN	 0xffffffu   /* remote QPN of a multicast send */
#define MCT_DEFAULT_PORT 4711	     /* -p default, as ib2roce */
#define MCT_JOIN_TIMEOUT 20000	     /* ms for all joins to complete */
#define MCT_MAGIC	 0x4d435432u /* "MCT2": a test packet header follows */
/*
 * Byte 4 of the header, where a PGM header has its type: a version nibble PGM does not
 * have, so that a PGM-inspecting receiver (the bridge) counts a plain payload as not PGM
 * at its first test. ("MCT1" had the stream id there, whose top byte 0 looked like an SPM
 * and let the bridge count every packet as malformed PGM.)
 */
#define MCT_NOT_PGM 0xffu
#define MCT_HDR_LEN 32u

/* mct_hdr.flags */
#define MCT_F_LAST 0x01u /* the last packet of its stream */

/*
 * The header at the start of every plain payload, and at the start of the data (TSDU)
 * of every PGM ODATA mcsender sends. Network byte order on the wire; mct_hdr_put() and
 * mct_hdr_get() convert.
 */
struct mct_hdr {
	uint32_t magic;	 /* MCT_MAGIC */
	uint32_t stream; /* stream id (plain payloads; PGM streams are told apart by TSI) */
	uint64_t seq;	 /* per stream, from 0 */
	uint64_t tx_ns;	 /* send time in ns of clock `clock` */
	uint32_t total;	 /* packets the stream will have (--count), 0 = open-ended */
	uint8_t clock;	 /* enum mct_clock */
	uint8_t flags;	 /* MCT_F_* */
	uint16_t reserved;
};

enum mct_clock {
	MCT_CLOCK_REALTIME = 0,	 /* comparable across hosts whose clocks are synchronised */
	MCT_CLOCK_MONOTONIC = 1, /* comparable on one host only */
};

enum mct_fabric {
	MCT_IB,
	MCT_ROCE,
};

/* A group from the command line and its join on the port's fabric. */
struct mct_group {
	struct group *spec;    /* addr, port, fmt, tos as group_spec_parse() filled them */
	union ibv_gid mgid;    /* the MGID the fabric uses (from the join) */
	uint32_t mlid;	       /* IB: the multicast LID */
	uint32_t qkey;	       /* the group's on this fabric (mct_group_qkey) */
	uint32_t join_qkey;    /* the Q_Key of rdma_cm's join (its record's: 0x01234567) */
	uint32_t qp;	       /* mclisten: the index of the QP it is attached to */
	struct ibv_ah *ah;     /* sends to the group */
	struct ibv_ah_attr aa; /* what the join answered (for attaching) */
	bool joined;
	bool sa_joined;	   /* IB: joined through the SA (lib/samcm.h), left with a Delete */
	bool sa_send_only; /* ... as a send-only full member */
};

/* The options both programs share (filled by the handlers mct_options_register adds). */
struct mct_cfg {
	const char *prog;
	char ib_dev[64];
	uint8_t ib_port;
	char roce_dev[64];
	uint8_t roce_port;
	struct groupopts_defaults gd;	/* -l, -p, -t: defaults of the groups that follow */
	char control[CONTROL_PATH_MAX]; /* --control: the console socket, "" = none */
	struct mct_group *groups;
	uint32_t ngroups, cap;
	struct group_index gidx; /* the groups' specs, for the duplicate check (add_group) */
};

/* One port of one fabric, with its rdma_cm id for the joins. */
struct mct_port {
	enum mct_fabric fabric;
	char dev[64];
	uint8_t port;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dattr;
	union ibv_gid gid;
	int gid_index;
	uint16_t pkey;
	uint32_t ipv4; /* RoCE: our address (network order) */
	/* RoCE: the RoCEv2 GID entries of the port's IPv6 addresses (index -1: none), the
	 * netdev's ifindex, and the socket holding the MLD memberships of IPv6 groups (-1:
	 * none yet): portprobe.h, mct_groups_join. */
	union ibv_gid gid6, gid6ll;
	int gid6_index, gid6ll_index;
	uint32_t ifindex;
	int mld_fd;
	uint32_t mtu;
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *cm_id;
	/* IB: the umad agent of joins through the SA, for groups with their own Q_Key where
	 * rdma_cm's join is refused (mct_groups_join); not open until then. */
	struct samcm sa;
};

/*
 * mct_options_register - register -d/--device, -r/--roce, -m/--multicast, -l/--mgid,
 * -p/--port, -t/--tos, --control and groups as positional arguments into the option
 * registry, with ib2roce's meanings (--control: the console socket; none by default). Call after
 * opt_register_builtin(). Returns 0 or opt_register's error.
 */
int mct_options_register(struct mct_cfg *c);

/*
 * mct_options_check - after parsing (exiting: the parser returned OPT_EXIT): print the
 * MGID formats when -l was given without one; then return 1 (exit 0) when exiting, else
 * require at least one group and at most one of -d / -r.
 * Returns 0, 1, or -EINVAL with a message.
 */
int mct_options_check(struct mct_cfg *c, bool exiting, char *err, size_t errlen);

/*
 * mct_port_open - open the port: -d names an InfiniBand device, -r a RoCE device; with
 * neither, the first active InfiniBand port, else the first active Ethernet port with a
 * RoCEv2 IPv4 GID (ib2roce's rules for each side). Allocates the PD, creates the
 * rdma_cm id bound to the port (AF_IB to the port GID on IB, the IPv4 address on RoCE).
 * Returns 0 or -errno with a message.
 */
int mct_port_open(struct mct_port *p, const struct mct_cfg *c, char *err, size_t errlen);

/*
 * mct_groups_join - join every group (send-only full member when send_only, else full member)
 * and wait up to MCT_JOIN_TIMEOUT ms for all; creates each group's AH (traffic class
 * from #tos / -t when given). Attaching QPs is the caller's business (mct_group.aa).
 * Returns 0 or -errno with a message naming the group.
 */
int mct_groups_join(struct mct_port *p, struct mct_group *g, uint32_t n, bool send_only, char *err,
		    size_t errlen);

/*
 * mct_roce_hdr_is_ipv6 - whether the 40-byte header area of a RoCEv2 receive holds an
 * IPv6 header (else IPv4 at offset 20): rdma-core's rule (libibverbs/verbs.c
 * get_grh_header_version): version 6 first, and no IPv4 header with a valid checksum at
 * offset 20. The bridge's engine decides the same way.
 */
bool mct_roce_hdr_is_ipv6(const uint8_t *hdr);

/* mct_port_close - leave the groups, destroy AHs, the rdma_cm id, the PD, the context. */
void mct_port_close(struct mct_port *p, struct mct_group *g, uint32_t n);

/* mct_cfg_free - free the groups of the configuration. */
void mct_cfg_free(struct mct_cfg *c);

/*
 * mct_group_qkey - the Q_Key of group g on the port's fabric: the spec's for that side
 * (#qkey=, #ibqkey=, #roceqkey=, --qkey; rdma_cm's 0x01234567 by default). The QP that
 * receives the group has it, and every send work request to the group carries it.
 */
uint32_t mct_group_qkey(const struct mct_port *p, const struct mct_group *g);

/*
 * mct_qp_create - a UD QP on the port using cq for both queues, moved to RTS with the
 * Q_Key qkey. NULL + errno.
 */
struct ibv_qp *mct_qp_create(struct mct_port *p, struct ibv_cq *cq, uint32_t sq, uint32_t rq,
			     uint32_t qkey);

/* mct_fabric_name - "IB" or "RoCE". */
const char *mct_fabric_name(enum mct_fabric f);

/* mct_clock_id - the clockid_t of an mct_clock. */
clockid_t mct_clock_id(enum mct_clock c);

/* mct_hdr_put - write h in network order to p (MCT_HDR_LEN bytes). */
void mct_hdr_put(void *p, const struct mct_hdr *h);

/* mct_hdr_get - read a header from p (len bytes available); false when len is short or
 * the magic is not there. */
bool mct_hdr_get(const void *p, size_t len, struct mct_hdr *h);

#endif /* TOOLS_MCTOOL_H */
