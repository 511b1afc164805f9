/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * simfabric: the shared-memory fabric behind the simulated libibverbs.so.1 and
 * librdmacm.so.1.
 *
 * A fabric is one shared-memory file, /dev/shm/simfabric.<name>, holding fixed tables:
 * segments (an IB subnet, an Ethernet/IP network), devices with one port each, the
 * processes that use the fabric, and the objects they created (contexts, CQs, QPs, MRs,
 * multicast groups and rdma_cm joins). Per-object rings live in their own files beside
 * it: /dev/shm/simfabric.<name>.<kind>.<pid>.<n>.
 *
 * Data path (no fabric lock): ibv_post_send in the sender's process walks the members
 * of the destination group, takes the receiving QP's delivery lock, pops a receive WQE
 * from the receiver's shared receive ring, writes the 40-byte network header and the
 * payload straight into the receiver's posted buffer (receive MRs are backed by shared
 * files, see mem.c: one copy per receiver) and publishes a completion in the receiver's
 * shared CQ ring. No posted receive: the packet is dropped and counted (out_of_buffer).
 *
 * Control path: every table change happens under fab->lock, a robust process-shared
 * mutex, so a process killed while holding it does not wedge the fabric. Objects record
 * the pid (and start time) of their owner; objects of dead processes are reclaimed by
 * the next process that attaches, by `simfab` and by the join path.
 *
 * Events cross processes through abstract-namespace AF_UNIX datagram sockets: every
 * completion channel, device context (async fd) and rdma_cm event channel is such a
 * socket, named from the fabric, the owner pid and a per-process serial number.
 */
#ifndef SIMFABRIC_SF_H
#define SIMFABRIC_SF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

/*
 * The simulated libraries are built with -fvisibility=hidden; the version scripts decide
 * what is exported. SF_EXPORT marks the public verbs/rdma_cm entry points, SF_PRIVATE the
 * fabric API shared by libibverbs, librdmacm and simfab (node SIMFABRIC_PRIVATE_1).
 */
#define SF_EXPORT  __attribute__((visibility("default")))
#define SF_PRIVATE __attribute__((visibility("default")))

#pragma GCC visibility push(default)

#define SF_MAGIC   0x53494d4641425231ull /* "SIMFABR1" */
#define SF_VERSION 16u

#define SF_NAME_MAX    32
#define SF_MAX_SEGS    8
#define SF_MAX_DEVS    32
#define SF_MAX_PROCS   512
#define SF_MAX_CTXS    2048
#define SF_MAX_CQS     16384
#define SF_MAX_QPS     131072 /* 100 000 senders in one benchmark (bench/) */
#define SF_MAX_SRQS    4096
#define SF_MAX_MRS     16384
#define SF_MAX_GROUPS  32768 /* two segments of SF_SEG_MAX_GROUPS, with room */
#define SF_MAX_JOINS   65536
#define SF_MAX_LISTENS 1024 /* rdma_cm UD listeners (SIDR services) */
#define SF_GROUP_SLOTS 256  /* attached QPs per group, all devices of a segment */
#define SF_GID_MAX     6    /* GID table entries per port (RoCE: link-local, IPv4, IPv6) */

/* The fixed header space in front of every UD receive buffer. */
#define SF_GRH_LEN 40
/* Where RoCEv2 puts the IPv4 header inside those 40 bytes. */
#define SF_IPV4_OFF 20

/* Packet header sizes used for lengths in the GRH/IPv4 header and counters. */
#define SF_BTH_LEN	 12
#define SF_DETH_LEN	 8
#define SF_IMM_LEN	 4
#define SF_ICRC_LEN	 4
#define SF_UDP_LEN	 8
#define SF_IPV4_LEN	 20
#define SF_IB_LRH_LEN	 8
#define SF_IB_VCRC_LEN	 2
#define SF_ROCE_UDP_PORT 4791

#define SF_MCAST_QPN	   0xffffffu
#define SF_RDMA_UDP_QKEY   0x01234567u
#define SF_IB_DEFAULT_PKEY 0xffffu
#define SF_IB_MLID_BASE	   0xc000u
#define SF_IB_MLID_LAST	   0xfffeu /* 0xffff is the permissive LID */
/* Groups a segment holds: the IB multicast LID space (0xc000-0xfffe), on RoCE too. */
#define SF_SEG_MAX_GROUPS (SF_IB_MLID_LAST - SF_IB_MLID_BASE + 1)
#define SF_GROUP_HASH	  65536 /* buckets of each group index (power of two) */
#define SF_QKEY_USE_QP	   0x80000000u /* remote_qkey with the high bit: use the QP's Q_Key */

enum sf_link {
	SF_LINK_IB = 1,
	SF_LINK_ETH = 2,
};

/* Per-port counters. Written with relaxed atomic adds by any process that delivers. */
struct sf_counters {
	_Atomic uint64_t xmit_pkts;
	_Atomic uint64_t xmit_bytes;
	_Atomic uint64_t rcv_pkts;
	_Atomic uint64_t rcv_bytes;
	_Atomic uint64_t out_of_buffer; /* no receive posted: dropped */
	_Atomic uint64_t qkey_viol;	/* Q_Key mismatch: dropped */
	_Atomic uint64_t sim_loss;	/* dropped by injected random loss */
	_Atomic uint64_t port_down;	/* dropped because a port on the path was down */
	_Atomic uint64_t no_member;	/* IB: dropped by the switch, port not a member */
	_Atomic uint64_t cq_overrun;	/* receive completion did not fit in the CQ */
	_Atomic uint64_t len_err;	/* receive buffer too small */
	_Atomic uint64_t prot_err;	/* bad lkey in a posted receive */
	_Atomic uint64_t mtu_drop;	/* larger than the receiving port's MTU: dropped */
	_Atomic uint64_t qp_not_ready;	/* the receiving QP not in RTR/RTS (or going away) */
};

struct sf_segment {
	char name[SF_NAME_MAX];
	uint32_t link;		   /* enum sf_link */
	_Atomic uint32_t loss_ppm; /* random loss per delivered copy, parts per million */
	uint32_t next_mlid;	   /* IB: where the "SA" looks for a free multicast LID */
	uint32_t ngroups;	   /* groups in use on the segment, at most SF_SEG_MAX_GROUPS */
	uint64_t subnet_prefix; /* IB: GID prefix (network order), fe80::/64 by default */
	uint64_t mlid_used[(SF_SEG_MAX_GROUPS + 63) / 64]; /* IB: bit l - SF_IB_MLID_BASE */
};

struct sf_gid {
	union ibv_gid gid;
	uint32_t type; /* enum ibv_gid_type */
	uint32_t valid;
};

struct sf_dev {
	char name[SF_NAME_MAX];
	uint32_t seg;  /* index into segments */
	uint32_t link; /* enum sf_link, copy of the segment's */
	uint32_t numa_node;
	uint32_t removed;   /* device removal injected */
	uint64_t node_guid; /* network order */
	uint64_t sys_image_guid;
	/* The port (one per device). */
	_Atomic uint32_t port_state; /* enum ibv_port_state */
	uint32_t lid;
	uint32_t sm_lid;
	uint32_t active_mtu; /* enum ibv_mtu */
	uint32_t pkey;
	uint32_t ipv4;	      /* network order: IPoIB address (IB) or interface address (Eth) */
	uint32_t ipv4_prefix; /* prefix length */
	uint8_t ipv6[16];     /* Eth: the netdev's global IPv6 address, all zero: none */
	uint32_t ipv6_prefix; /* its prefix length */
	uint8_t mac[6];
	uint8_t pad[2];
	struct sf_gid gids[SF_GID_MAX];
	_Atomic uint32_t next_qpn;
	_Atomic uint32_t ip_id; /* IPv4 identification counter (RoCE) */
	struct sf_counters ctr;
};

/* A process that has attached to the fabric. */
struct sf_proc {
	int32_t pid; /* 0: free */
	uint32_t pad;
	uint64_t start_time; /* from /proc/<pid>/stat, guards against pid reuse */
};

/* Who owns an object: a process and the per-process serial of the object. */
struct sf_owner {
	int32_t pid; /* 0: slot free */
	uint32_t serial;
	uint64_t gen; /* bumped on every (re)use of the slot */
};

/* An opened device context: where its async events go. */
struct sf_ctx {
	struct sf_owner own;
	uint32_t dev;
	uint32_t pad;
};

/*
 * A completion queue. The ring (file kind "cq") holds `size` (a power of two) entries of
 * struct sf_cqe. Producers (any process) reserve a slot with a CAS on prod; the owner
 * consumes. Notification: if `armed` is set when a producer publishes, it clears it and
 * sends an event datagram to the completion channel (chan_pid, chan_serial).
 */
struct sf_cq {
	struct sf_owner own;
	uint32_t size;	  /* ring entries */
	uint32_t cqe;	  /* capacity reported to the application */
	int32_t chan_pid; /* 0: no completion channel */
	uint32_t chan_serial;
	uint32_t ctx;		/* owning context (async events) */
	_Atomic uint32_t error; /* overrun happened: CQ in error */
	uint64_t cookie;	/* the owner's struct ibv_cq pointer */
	/* Written by producers (any process), under `plock` (a pid lock, wire.c): the
	 * index of the next CQE, advanced only once that CQE is published (sf_cq_push). */
	_Atomic uint64_t prod __attribute__((aligned(64)));
	_Atomic int32_t plock;
	/* Written by the owner: the consumer index and the notification request. */
	_Atomic uint64_t cons __attribute__((aligned(64)));
	_Atomic uint32_t armed; /* 0 no, 1 any completion, 2 solicited only */
} __attribute__((aligned(64)));

/* A completion as stored in a CQ ring: the ibv_wc the owner will copy out. */
struct sf_cqe {
	struct ibv_wc wc;
	uint64_t sq_index;    /* send completions: index of the WR in its send queue */
	_Atomic uint64_t seq; /* ring index + 1 once published */
};

/* One posted receive in a receive ring (file kind "rq"). */
#define SF_MAX_RECV_SGE 8
#define SF_MAX_SRQ_SGE	31 /* max_srq_sge of a ConnectX-6 (device.c) */
struct sf_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
	struct ibv_sge sge[SF_MAX_RECV_SGE];
};

/*
 * A UD queue pair. The receive ring is written by the owner (post_recv: tail) and
 * consumed by senders under `lock` (head). Delivery and state changes that stop
 * delivery take `lock`, a spinlock holding the pid of its holder so a waiter can break
 * it when the holder died.
 */
struct sf_qp {
	struct sf_owner own;
	uint32_t dev;
	uint32_t qpn;
	_Atomic uint32_t state; /* enum ibv_qp_state */
	uint32_t qkey;
	uint32_t pkey_index;
	uint32_t block_self_mcast; /* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB */
	uint32_t recv_cq;	   /* index into cqs */
	uint32_t send_cq;
	uint32_t rq_size; /* ring entries, power of two; 0: no receive queue */
	uint32_t max_recv_sge;
	uint32_t ctx;
	uint32_t nattached; /* groups the QP is attached to (fabric lock) */
	uint32_t srq;	    /* its shared receive queue: index into srqs + 1; 0 none */
	/* Fault injection (simfab qp DEV QPN sq-hang on|off, sf_sq_hang_set): 1 while the
	 * send queue hangs; read by the owner's ibv_post_send and ibv_poll_cq (qp.c). */
	_Atomic uint32_t sq_hang;
	uint64_t cookie; /* the owner's struct ibv_qp pointer */
	/* Written by deliveries (any process): the lock and the consumer index. */
	_Atomic int32_t lock __attribute__((aligned(64)));
	_Atomic uint64_t rq_head;
	/* Written by the owner: the producer index. */
	_Atomic uint64_t rq_tail __attribute__((aligned(64)));
} __attribute__((aligned(64)));

/*
 * A shared receive queue (ibv_create_srq). Its ring (file kind "srq") holds `size` (a
 * power of two) receive WQEs of `stride` bytes, at most size - 1 outstanding (as mlx5,
 * which keeps one spare WQE). The owner posts (tail); a delivery to any QP created with
 * the SRQ pops one WQE under `lock` (head), in any process. `limit` is the armed SRQ
 * limit (0: not armed): the delivery that leaves fewer WQEs than it disarms it and
 * posts IBV_EVENT_SRQ_LIMIT_REACHED to the owning context.
 */
struct sf_srq {
	struct sf_owner own;
	uint32_t dev;
	uint32_t ctx;	 /* owning context (async events) */
	uint32_t size;	 /* ring entries */
	uint32_t stride; /* bytes per WQE */
	uint32_t max_sge;
	uint32_t nqps;	 /* QPs created with it (fabric lock) */
	uint64_t cookie; /* the owner's struct ibv_srq pointer */
	/* Written by deliveries (any process): the lock, the consumer index, the limit. */
	_Atomic int32_t lock __attribute__((aligned(64)));
	_Atomic uint32_t limit;
	_Atomic uint64_t head;
	/* Written by the owner: the producer index. */
	_Atomic uint64_t tail __attribute__((aligned(64)));
} __attribute__((aligned(64)));

/*
 * A memory region. Regions with local write access are backed by a shared file (kind
 * "mem", serial = backing) so that senders can write receives into them: `base` is the
 * virtual address in the owner where the backing file starts, `blen` its length.
 */
struct sf_mr {
	struct sf_owner own;
	uint32_t dev;
	uint32_t access;
	uint32_t lkey;
	uint32_t backing; /* 0: not backed (no local write) */
	uint64_t addr;
	uint64_t length;
	uint64_t base;
	uint64_t blen;
};

/* Join states, per rdma_cm join record. */
enum sf_join_state {
	SF_JOIN_FREE = 0,
	SF_JOIN_ACTIVE = 1, /* member of the group */
	SF_JOIN_ERROR = 2,  /* membership lost (port error, re-register): app must leave */
};

/*
 * A multicast group on a segment, keyed by MGID. `slots` are the QPs attached
 * (ibv_attach_mcast), index + 1, 0 = empty; readers scan up to `nslots` without the
 * lock, writers never move an entry (a detach only clears its slot).
 */
struct sf_group {
	_Atomic uint32_t in_use;
	uint32_t seg;
	union ibv_gid mgid;
	uint32_t mlid;
	_Atomic uint32_t nslots;
	uint64_t gen;
	uint32_t njoins; /* join records referring to the group (any state) */
	/* Membership per device, from active joins (what the SA / IGMP knows). */
	_Atomic uint32_t full_mask; /* bit d: device d has a full-member join */
	_Atomic uint32_t any_mask;  /* bit d: device d has a full or send-only join */
	uint16_t nfull[SF_MAX_DEVS];
	uint16_t nsend[SF_MAX_DEVS];
	uint32_t mlid_owned; /* the "SA" handed out mlid (its bit is set in mlid_used) */
	/*
	 * The group's MCMemberRecord as the SA keeps it (OpenSM osm_sa_mcmember_record.c,
	 * mcmr_rcv_create_new_mgrp): set by the join that creates the group (SA or rdma_cm),
	 * checked against every later join (validate_other_comp_fields), forgotten when the
	 * last join leaves (the SA deletes the group). rec_set 0: no join made it yet.
	 */
	uint32_t rec_qkey;
	uint32_t rec_sl_flow_hop; /* SL 31-28, FlowLabel 27-8, HopLimit 7-0 (host order) */
	uint8_t rec_tclass;
	uint8_t rec_set;
	/* Hash chains (index + 1, 0 ends), changed under the fabric lock; see groups.c. */
	_Atomic uint32_t next_by_mgid, next_by_mlid;
	_Atomic uint32_t slots[SF_GROUP_SLOTS];
};

/* An rdma_cm multicast join (the SA / IGMP membership of a port). */
struct sf_join {
	struct sf_owner own;
	_Atomic uint32_t state; /* enum sf_join_state */
	uint32_t dev;
	uint32_t group;
	uint32_t send_only;
	int32_t chan_pid; /* the rdma_cm event channel to notify */
	uint32_t chan_serial;
	uint64_t id_cookie; /* the owner's struct rdma_cm_id pointer */
	uint64_t mc_cookie; /* the owner's join record pointer */
};

/*
 * An rdma_cm listener of a UD port space (rdmacm_sidr.c, SIDR): the service the kernel's IB CM
 * would register (service ID = port space << 16 | port) on one device (`dev`) or on all
 * (-1, a wildcard bind), for one IPv4 address or any (0). A SIDR request for the service
 * is sent to the event channel (own.pid, chan_serial); id_cookie names the listening id.
 */
struct sf_listen {
	struct sf_owner own;
	uint32_t ps;
	uint16_t port; /* host order */
	uint16_t family;
	int32_t dev;
	uint32_t ipv4; /* network order, 0: any */
	uint32_t chan_serial;
	uint32_t pad;
	uint64_t id_cookie;
};

struct sf_fabric {
	uint64_t magic;
	uint32_t version;
	uint32_t size;
	pthread_mutex_t lock; /* robust, process-shared: every table change */
	char name[SF_NAME_MAX];
	uint32_t nsegs;
	uint32_t ndevs;
	/*
	 * Bumped twice when a group is created or freed: before (odd while the tables
	 * change) and after, so that lock-free lookups can tell they raced (groups.c).
	 */
	_Atomic uint64_t groups_gen;
	/*
	 * Bumped (release) after any change of what a multicast send delivers to: a group
	 * made or freed, a QP attached or detached, a port's membership (groups.c). An AH
	 * keeps its group's delivery while this does not change (wire.c).
	 */
	_Atomic uint64_t members_gen;
	uint32_t group_hint, join_hint, qp_hint;       /* where to look for a free slot first */
	_Atomic uint32_t group_by_mgid[SF_GROUP_HASH]; /* chain heads, index + 1 */
	_Atomic uint32_t group_by_mlid[SF_GROUP_HASH];
	struct sf_segment segs[SF_MAX_SEGS];
	struct sf_dev devs[SF_MAX_DEVS];
	struct sf_proc procs[SF_MAX_PROCS];
	struct sf_ctx ctxs[SF_MAX_CTXS];
	struct sf_cq cqs[SF_MAX_CQS];
	struct sf_qp qps[SF_MAX_QPS];
	struct sf_srq srqs[SF_MAX_SRQS];
	struct sf_mr mrs[SF_MAX_MRS];
	struct sf_group groups[SF_MAX_GROUPS];
	struct sf_join joins[SF_MAX_JOINS];
	struct sf_listen listens[SF_MAX_LISTENS];
	/*
	 * Packet capture (capture.c, `simfab capture`): while cap_gen is not 0, every
	 * datagram that reaches a port in cap_devs is recorded, once per port, in the
	 * capture ring of process cap_pid (object file "capture", serial cap_serial, of
	 * cap_slots records). Written under the lock; cap_gen last (release).
	 */
	_Atomic uint64_t cap_gen;
	int32_t cap_pid;
	uint32_t cap_serial;
	uint32_t cap_slots;
	uint32_t cap_devs;
	/*
	 * Per-process, per-port counters: each process adds to its own block (no cache line
	 * shared between processes on the data path). A block is folded into the port's
	 * `ctr` when its process is reclaimed. Read them with sf_counters_read.
	 */
	struct sf_counters pctr[SF_MAX_PROCS][SF_MAX_DEVS];
};

/* ---- fabric.c: attaching, locking, processes, reclamation ---- */

/*
 * sf_get - the fabric of this process (SIMFABRIC, default "default"), attaching and
 * creating it from the topology on first use. Any thread. Returns NULL with errno on
 * failure (reported once on stderr: the application would otherwise see no devices).
 */
struct sf_fabric *sf_get(void);

/* How many dead processes this process reclaimed when it attached. */
int sf_attach_reclaimed(void);

/* The fabric name in use (after sf_get). */
const char *sf_name(void);

/* Take / drop the fabric lock. Recovers the lock (and reclaims) if its holder died. */
void sf_lock(struct sf_fabric *fab);
void sf_unlock(struct sf_fabric *fab);

/* Per-process serial numbers for owned objects and event endpoints. */
uint32_t sf_serial_next(void);

/* Claim an owner record for the calling process. Caller holds the lock. */
void sf_owner_claim(struct sf_owner *own);
void sf_owner_release(struct sf_owner *own);

/*
 * sf_reclaim_locked - release every object whose owner process is gone: detach its QPs,
 * drop its joins, free its slots and unlink its files. Caller holds the lock. Returns
 * the number of dead processes reclaimed.
 */
int sf_reclaim_locked(struct sf_fabric *fab);

/* Is this pid (with this start time, 0 = don't check) alive? */
bool sf_pid_alive(int32_t pid, uint64_t start_time);

/*
 * sf_reset - unlink the fabric and every per-object file of the named fabric. Processes
 * still attached keep their (now orphaned) mappings. Returns 0 or -errno.
 */
int sf_reset(const char *name);

/*
 * sf_file_share - give a file or directory this process created the fabric's mode:
 * `mode` (e.g. 0600) for the user alone, or with the user's bits for SIMFABRIC_GROUP too
 * (0660) and that group. 0 or -errno.
 */
int sf_file_share(int fd, mode_t mode);

/* Path of an object file: /dev/shm/simfabric.<fabric>.<kind>.<pid>.<serial>. */
void sf_obj_path(char *buf, size_t len, const char *kind, int32_t pid, uint32_t serial);

/*
 * sf_obj_create / sf_obj_map - create (owner) or map (peer) an object file of `len`
 * bytes, MAP_SHARED. Return the mapping or NULL with errno.
 */
void *sf_obj_create(const char *kind, uint32_t serial, size_t len, int *fdp);
void *sf_obj_map(const char *kind, int32_t pid, uint32_t serial, size_t len);

/* ---- capture.c: the capture ring (simfab capture) ---- */

#define SF_CAP_DATA_MAX 4096 /* payload bytes a record holds: the largest IB MTU */

/* One datagram as it reached a port. */
struct sf_cap_rec {
	_Atomic uint64_t seq; /* ring sequence: = position + 1 once written */
	uint64_t ts_ns;	      /* CLOCK_REALTIME */
	uint32_t dev;	      /* receiving port (device index) */
	uint32_t src_qpn, dst_qpn, qkey;
	uint32_t len;	 /* payload bytes */
	uint32_t caplen; /* payload bytes in data */
	uint32_t imm;	 /* network order */
	uint16_t pkey, slid, dlid;
	uint8_t ib, has_imm, has_grh;
	uint8_t pad[7];
	uint8_t hdr[SF_GRH_LEN]; /* the 40 bytes a receiver finds in front of the payload */
	uint8_t data[SF_CAP_DATA_MAX];
};

/* A multi-producer (every delivering process) single-consumer ring of records. */
struct sf_cap_ring {
	_Atomic uint64_t tail; /* producers: next position to claim */
	char pad1[56];
	_Atomic uint64_t head; /* consumer: next position to read */
	char pad2[56];
	_Atomic uint64_t lost; /* records not taken: the ring was full */
	uint32_t mask;
	uint32_t pad3;
	struct sf_cap_rec rec[];
};

/* Bytes of a capture ring of n records (a power of two). */
size_t sf_cap_ring_size(uint32_t n);

/*
 * sf_cap_start - create a capture ring of n records (power of two) owned by this
 * process and point the fabric at it for the devices in devs. -EBUSY when a live
 * process captures already. Returns the ring, or NULL with errno.
 */
struct sf_cap_ring *sf_cap_start(struct sf_fabric *fab, uint32_t n, uint32_t devs);

/* sf_cap_stop - stop recording (the ring stays mapped for a last read) and unlink it. */
void sf_cap_stop(struct sf_fabric *fab, struct sf_cap_ring *ring);

/* sf_cap_next - the next record of the ring, or NULL; sf_cap_done releases it. */
struct sf_cap_rec *sf_cap_next(struct sf_cap_ring *ring);
void sf_cap_done(struct sf_cap_ring *ring, struct sf_cap_rec *r);

/*
 * sf_counters_read - the counters of port `dev`: those of exited processes plus every
 * live process's block. Any thread; a consistent sum only when no traffic flows.
 */
void sf_counters_read(struct sf_fabric *fab, uint32_t dev, struct sf_counters *out);

/* ---- sysfs.c: the simulated /sys/class/infiniband ---- */

/* The tree's root, /dev/shm/simfabric.<fabric>.sys, and a device's directory in it. */
void sf_sysfs_root(char *buf, size_t len, const char *fabric);
void sf_sysfs_dev_path(char *buf, size_t len, const char *fabric, const char *dev);

/*
 * sf_sysfs_refresh - write the tree of the fabric (first time: every file) and publish
 * port states and counters that changed. Skipped when another process refreshed less
 * than 50 ms ago, unless `force`. Any thread; takes the tree's file lock, never the
 * fabric lock. Returns 0 or -errno (-ESTALE: this process's fabric was reset).
 */
int sf_sysfs_refresh(struct sf_fabric *fab, bool force);

/* Remove the tree of the named fabric (sf_reset). 0 or -errno. */
int sf_sysfs_remove(const char *fabric);

/* ---- topology.c ---- */

/*
 * sf_topology_load - fill segments and devices of a new fabric from the file named by
 * SIMFABRIC_TOPOLOGY, or the default topology. Returns 0 or -errno with a message in
 * err (file:line: reason).
 */
int sf_topology_load(struct sf_fabric *fab, const char *path, char *err, size_t errlen);

/* Fill the default topology: sim_ib0..3 on subnet "ib0", sim_roce0..3 on "eth0". */
void sf_topology_default(struct sf_fabric *fab);

/* ---- groups.c: multicast groups and joins (fabric lock held unless noted) ---- */

/* Find the group (seg, mgid); NULL if none. Lock-free read is allowed (control paths). */
struct sf_group *sf_group_find(struct sf_fabric *fab, uint32_t seg, const union ibv_gid *mgid);

/* Find by multicast LID on an IB segment. */
struct sf_group *sf_group_find_mlid(struct sf_fabric *fab, uint32_t seg, uint32_t mlid);

/* Find or create the group; a new IB group gets an MLID (or `mlid` if non-zero). */
struct sf_group *sf_group_get_locked(struct sf_fabric *fab, uint32_t seg, const union ibv_gid *mgid,
				     uint32_t mlid);

/* Attach / detach a QP (index) to a group. 0 or -errno. */
int sf_group_attach_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t qp_index);
int sf_group_detach_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t qp_index);

/* Free the group if nothing is attached and nobody has joined. */
void sf_group_put_locked(struct sf_fabric *fab, struct sf_group *g);

/* MCMemberRecord component mask bits the group record checks (IBA 15.2.5.17). */
#define SF_MCR_QKEY   (1ull << 2)
#define SF_MCR_TCLASS (1ull << 6)
#define SF_MCR_SL     (1ull << 12)
#define SF_MCR_FLOW   (1ull << 13)
#define SF_MCR_HOP    (1ull << 14)

/*
 * A join's record against the group's (under the fabric lock): the first join sets the
 * group's record from (qkey, tclass, sl_flow_hop); a later one must match every field
 * its component mask names, as OpenSM's validate_other_comp_fields checks (the default
 * mcgroup_join_validation TRUE). 0, or -EINVAL on a mismatch (the SA answers
 * ERR_REQ_INVALID; the kernel turns it into MULTICAST_ERROR -EINVAL for rdma_cm).
 */
int sf_group_rec_join_locked(struct sf_group *g, uint64_t mask, uint32_t qkey, uint8_t tclass,
			     uint32_t sl_flow_hop);

/*
 * rdma_cm joins (the membership the SA / IGMP would record). sf_join_add_locked claims a
 * join record owned by the calling process, takes a group reference and counts device
 * `dev` as a member (full or send-only). sf_join_del_locked drops the membership (if it
 * is still active), frees the record and puts the group. Returns NULL with errno.
 */
struct sf_join *sf_join_add_locked(struct sf_fabric *fab, struct sf_group *g, uint32_t dev,
				   bool send_only, int32_t chan_pid, uint32_t chan_serial,
				   uint64_t id_cookie, uint64_t mc_cookie);
void sf_join_del_locked(struct sf_fabric *fab, struct sf_join *j);

/* ---- notify.c: event datagrams between processes ---- */

enum sf_msg_kind {
	SF_MSG_CQ = 1,		/* completion event: cookie = struct ibv_cq * */
	SF_MSG_ASYNC = 2,	/* async event: type, cookie (cq/qp pointer) or port */
	SF_MSG_CM = 3,		/* rdma_cm: wake up for a local event */
	SF_MSG_CM_MCERR = 4,	/* rdma_cm: multicast error on a join, status */
	SF_MSG_CM_DEVRM = 5,	/* rdma_cm: device removal */
	SF_MSG_CM_SIDR_REQ = 6, /* rdma_cm: SIDR request to a listener (struct sf_sidr_msg) */
	SF_MSG_CM_SIDR_REP = 7, /* rdma_cm: SIDR reply to a connecting id (struct sf_sidr_msg) */
};

struct sf_msg {
	uint32_t kind;
	int32_t status;
	uint32_t type; /* async: enum ibv_event_type */
	uint32_t port;
	uint64_t cookie;
	uint64_t cookie2;
};

/* IB CM SIDR private data sizes (IBTA 12.11; include/rdma/ib_cm.h). */
#define SF_SIDR_REQ_PRIV 216
#define SF_SIDR_REP_PRIV 136

/*
 * A SIDR message between rdma_cm event channels (rdmacm_sidr.c). REQ: hdr.cookie = the
 * listening id, hdr.cookie2 = the connecting id, reply_pid/reply_serial = its channel,
 * seq = its connect attempt; the rest describes the requester as the SIDR REQ MAD and
 * its path carry it (private data with the rdma_cm header first). REP: hdr.cookie = the
 * connecting id, seq echoed, status (enum ib_cm_sidr_status), qpn, qkey, private data.
 */
struct sf_sidr_msg {
	struct sf_msg hdr;
	int32_t reply_pid;
	uint32_t reply_serial;
	uint32_t seq;
	uint32_t status;
	uint32_t ps;
	uint32_t src_dev; /* requester's device */
	uint32_t dst_dev; /* device the request was sent to */
	uint32_t qpn;
	uint32_t qkey;
	uint16_t pkey;
	uint16_t family;		/* of the requester's addresses */
	union ibv_gid sgid, dgid;	/* requester's and responder's GIDs */
	uint8_t src_sa[48], dst_sa[48]; /* its id's addresses (up to a sockaddr_ib) */
	uint8_t priv_len;
	uint8_t priv[SF_SIDR_REQ_PRIV];
};

/* Create a datagram socket bound to the endpoint (own pid, serial). Returns fd or -errno. */
int sf_endpoint_open(uint32_t serial);

/* Send a message to the endpoint (pid, serial). 0, or -errno (endpoint gone, full). */
int sf_endpoint_send(int32_t pid, uint32_t serial, const struct sf_msg *msg);

/* Send `len` bytes starting with an sf_msg header (a SIDR message) likewise. */
int sf_endpoint_send_buf(int32_t pid, uint32_t serial, const void *buf, size_t len);

/* Post an async event to every context of device `dev`. Fabric lock not needed. */
void sf_async_post_dev(struct sf_fabric *fab, uint32_t dev, enum ibv_event_type type);

/* ---- fault.c: fault injection (used by simfab, lock taken inside) ---- */

int sf_port_set(struct sf_fabric *fab, uint32_t dev, bool up);
int sf_client_reregister(struct sf_fabric *fab, uint32_t dev);
int sf_device_remove(struct sf_fabric *fab, uint32_t dev);
int sf_loss_set(struct sf_fabric *fab, uint32_t seg, uint32_t ppm);
/* Make the send queue of QP `qpn` of device `dev` hang (on) or move again: 0, -ENODEV,
 * -ENOENT (no such QP on the device). */
int sf_sq_hang_set(struct sf_fabric *fab, uint32_t dev, uint32_t qpn, bool on);

/* Mark every join of device `dev` in error and send MULTICAST_ERROR status to its id. */
void sf_joins_error_dev_locked(struct sf_fabric *fab, uint32_t dev, int status);

/* ---- helpers shared by the libraries ---- */

/* Find a device by name, by IPv4 address (network order) or by GID. -1 if none. */
int sf_dev_by_name(struct sf_fabric *fab, const char *name);
int sf_dev_by_ipv4(struct sf_fabric *fab, uint32_t ipv4);
int sf_dev_by_gid(struct sf_fabric *fab, const union ibv_gid *gid, uint32_t *index);
int sf_dev_by_lid(struct sf_fabric *fab, uint32_t seg, uint32_t lid);

/* The GID index the kernel would bind an IPv4 address to (RoCEv2 IPv4 on Ethernet). */
uint32_t sf_dev_ipv4_gid_index(const struct sf_dev *d);
/* The RoCE v2 entry of `gid` in the device's table (IPv6 binds, link-local or global). */
int sf_dev_v2_gid_index(const struct sf_dev *d, const union ibv_gid *gid);

/* IPv4-mapped GID ::ffff:a.b.c.d (addr in network order). */
void sf_gid_from_ipv4(union ibv_gid *gid, uint32_t addr);
bool sf_gid_is_ipv4(const union ibv_gid *gid);

/* ---- verbs (device.c): what librdmacm needs to know about a context ---- */

/* Device index of a context opened by the simulated libibverbs, or -1. */
int sf_context_dev(struct ibv_context *ctx);

/* Index of a QP in fab->qps (QPs created by the simulated libibverbs). */
uint32_t sf_qp_index(struct ibv_qp *qp);

/* MTU enum to bytes. */
static inline uint32_t sf_mtu_bytes(uint32_t mtu)
{
	return 128u << mtu;
}

static inline uint64_t sf_roundup_pow2(uint64_t v)
{
	uint64_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

#pragma GCC visibility pop

#endif /* SIMFABRIC_SF_H */
