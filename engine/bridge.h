/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The forwarding engine: two sides (the InfiniBand port and the RoCEv2 port), the
 * multicast groups bridged between them, channels (a UD QP + CQ on one side) grouped in
 * pairs (IB channel k and RoCE channel k hold the same groups and belong to one worker),
 * and the workers that poll them.
 *
 * Ownership (what makes it lock-free):
 * - The control thread creates and destroys everything, joins groups, and publishes a
 *   group to the workers by inserting it in the RCU tables and setting its ready bits.
 * - A channel (its QP, CQ, rings, counters) belongs to one worker; only that thread posts
 *   to it or polls it. With --workers 0 the control thread is that worker.
 * - Groups and senders are read by workers under QSBR (quiescent state once per pass);
 *   the control thread retires them with call_rcu.
 */
#ifndef ENGINE_BRIDGE_H
#define ENGINE_BRIDGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include "stats.h"
#include "stream.h"

struct pool;
struct pool_cache;
struct pgm_stream_table;
struct cap_ring;

/* The fixed header space of a UD receive (GRH, or IPv4 at offset 20 on RoCEv2). */
#define BR_GRH_LEN	       40
#define BR_IPV4_OFF	       20
#define BR_MCAST_QPN	       0xffffffu
#define BR_UDP_QKEY	       0x01234567u /* RDMA_UDP_QKEY of rdma_cm's UDP port space */
#define BR_BURST	       32 /* completions polled / WRs chained at a time (<= 32: wr_tmpl.dirty) */
#define BR_REFILL_MIN	       (BR_BURST / 2) /* refill receives when this many are missing */
#define BR_POLL		       (8 * BR_BURST) /* completions one poll of a worker's CQ takes */
#define BR_IB_MARKER_HOP_LIMIT 1 /* hop limit the bridge sets on IB: "already bridged" */
#define BR_QKEY_CONTROLLED     0x80000000u /* a controlled Q_Key (IBA 10.2.4): needs privilege */
/* A full send queue with no send completion for this long is stuck (fwd.c, chan_tx_full). */
#define BR_TX_STUCK_NS 1000000000ull

/* The Q_Key of group g on side s (rdma_cm's when none was given). */
#define group_qkey(g, s) ((g)->qkey[s] ? (g)->qkey[s] : BR_UDP_QKEY)
/*
 * A bit of group->ready beside the two side bits: the group's HA partition is standby on
 * this bridge (control/ha.c). Packets of the group are received and counted as standby
 * on their side, not forwarded (not a drop: another bridge forwards them).
 */
#define GROUP_STANDBY (1u << 2) /* after the side bits 1 << SIDE_IB, 1 << SIDE_ROCE */
#define CH_GCACHE     256	/* group cache entries per channel (direct-mapped) */
/* The channel caches' least sizes; both grow with the `senders` feature (chan_cache_sizes). */
#define CH_SCACHE     65536 /* sender cache entries per channel (2-way) */
#define CH_QCACHE     16384 /* flow sender cache entries per channel (by QPN) */
#define CH_FLOWS_BITS 10    /* log2 of the flow sets per channel */
#define CH_FLOW_WAYS  2	    /* flows per set: the set is chosen by a hash of the addresses */
#define CH_FLOWS      ((1u << CH_FLOWS_BITS) * CH_FLOW_WAYS) /* flows per channel */

enum side {
	SIDE_IB = 0,
	SIDE_ROCE = 1,
	NSIDES = 2,
};

extern const char *const side_name[NSIDES];

/* How a group's IB MGID is built (the reference's -l formats). */
enum mgid_fmt {
	MGID_RDMA, /* rdma_cm's mapping: ff12:4001:<pkey>::<28 bits> (the default) */
	MGID_IPV4, /* ff15:401b:<pkey>::<28 bits> */
	MGID_IPV6, /* ff15:601b:<pkey>::<28 bits> */
	MGID_PORT, /* ff15:a01b:<pkey>::<port>:<32 bits> */
	MGID_IB,   /* ff15:4001:<pkey>::<28 bits> */
	MGID_NFMT,
};

extern const char *const mgid_fmt_name[MGID_NFMT];

enum group_dir {
	DIR_BOTH, /* -m: both ways */
	DIR_IN,	  /* -i: IB -> RoCE only; RoCE side joins send-only */
	DIR_OUT,  /* -o: RoCE -> IB only; IB side joins send-only */
};

/* Does a group of direction `dir` receive on side s (full member there)? */
static inline bool group_dir_rx(enum group_dir dir, enum side s)
{
	return dir == DIR_BOTH || (dir == DIR_IN && s == SIDE_IB) ||
	       (dir == DIR_OUT && s == SIDE_ROCE);
}

enum join_state {
	JOIN_IDLE,    /* not joined, waiting for the next try */
	JOIN_PENDING, /* rdma_join_multicast issued */
	JOIN_DONE,    /* joined, AH created, attached if full member */
	JOIN_LEAVING,
};

struct group_side {
	enum join_state state;
	uint32_t tries;
	uint64_t next_try_ms;
	uint32_t mlid;
	bool attached;
	struct ibv_ah *ah; /* sends to the group on this side */
	uint32_t qkey;
	int last_error;
	/* IB joins through the SA (control/sajoin.c): a Q_Key that is not rdma_cm's. */
	bool sa;	 /* this join (pending or done) is an SA MCMemberRecord join */
	uint32_t sa_tid; /* the pending request's transaction id (low 32 bits) */
	int sa_status;	 /* the SA's last refusal (MAD status), 0 if none */
	/* RoCE side of an IPv6 group (control/joins.c join_roce_v6): the socket holding its
	 * MLD membership on the port's netdev, when mld. */
	bool mld;
	int mld_fd;
};

struct group {
	struct cds_lfht_node node[NSIDES]; /* side->groups, keyed by mgid[side] */
	struct cds_lfht_node addr_node;	   /* bridge->groups_by_addr, keyed by ib_addr */
	char spec[128];			   /* as given (IPv6 specs are long) */
	/*
	 * The group model (issue 25, docs/ib2roce.7 "Group model"); group_spec_parse sets:
	 * - addr: the RoCE side's IPv4 group, network order; 0 when roce_v6.
	 * - roce_v6: the RoCE side is an IPv6 multicast group; mgid[SIDE_ROCE] holds its
	 *   address (its GID on RoCEv2), set at parse time.
	 * - ib_native: the IB MGID was given in the spec (an IPv6 multicast address or
	 *   "MGID=..."); mgid[SIDE_IB] holds it from parse time and group_mgid_ib returns
	 *   it. Else the MGID is made from ib_addr, fmt (and port for PORT) and the P_Key.
	 * - ib_addr: the IPv4 address the IB MGID is made from; 0 when ib_native. Equal to
	 *   addr for a plain IPv4 spec; groups_by_addr is keyed by it (DROP_MGID_FORMAT).
	 * - qkey[s]: the Q_Key on side s: the QP that receives the group on side s uses
	 *   qkey[s], and the bridge sends onto side s with qkey[s]. Default BR_UDP_QKEY.
	 * mgid[s] is the per-side key everywhere (tables, joins): ::ffff:a.b.c.d on RoCE
	 * for IPv4, the IPv6 address for roce_v6; the made or given MGID on IB.
	 */
	uint32_t addr;
	uint32_t ib_addr;
	uint32_t qkey[NSIDES];
	uint16_t port; /* UDP port: the PORT MGID format, pid file names */
	uint8_t fmt;   /* enum mgid_fmt of an IPv4 IB side (MGID_RDMA when ib_native) */
	uint8_t tos;
	bool tos_set;
	bool roce_v6;
	bool ib_native;
	enum group_dir dir;
	union ibv_gid mgid[NSIDES];
	uint32_t pair;			  /* channel pair */
	struct channel *out_chan[NSIDES]; /* the pair's channel on each side */
	struct group_side js[NSIDES];	  /* join state: control thread only */
	/* Published to the pair's worker. */
	struct ibv_ah *_Atomic ah_out[NSIDES];
	uint32_t qkey_out[NSIDES];
	_Atomic uint32_t ready; /* bit s: forwarding from side s is on; GROUP_STANDBY */
	/* Written by the pair's worker only: packets forwarded from side s. The four
	 * counters in one cache line (aligned to their 32 bytes): a packet writes one. */
	uint64_t fwd_pkts[NSIDES] __attribute__((aligned(32)));
	uint64_t fwd_bytes[NSIDES];
	/* Control thread only: fwd_pkts at the last console "zap", when each side joined. */
	uint64_t fwd_zap[NSIDES];
	uint64_t joined_ms[NSIDES]; /* CLOCK_MONOTONIC ms of the last JOIN_DONE, 0 = never */
	bool retired;
	/* Control thread only: the HA partition (control/ha.c) and whether it is standby
	 * here (mirrored in ready's GROUP_STANDBY bit). */
	uint32_t part;
	bool standby;
	uint32_t weight; /* control thread: "#w=N", its share of a worker's load (1..) */
	struct rcu_head rcu;
} __attribute__((aligned(64)));

/* The data path's per-packet write to a group: one cache line (thousands of groups
 * interleaved miss it per packet; docs/benchmarks.md, issue 28). */
_Static_assert(offsetof(struct group, fwd_pkts) / 64 ==
		       (offsetof(struct group, fwd_bytes) + sizeof(uint64_t) * NSIDES - 1) / 64,
	       "a group's forwarding counters share one cache line");

/* A packet waiting for send-queue space. */
struct backlog_ent {
	uint32_t buf;
	uint32_t len;
	uint32_t imm; /* network order */
	bool has_imm;
	struct ibv_ah *ah;
	uint32_t qkey;
};

/*
 * The source address of a sender key as two words (bytes 0-7 and 8-15 of
 * sender_key.addr): the source GID, or ::ffff:a.b.c.d on RoCE.
 */
struct src_addr {
	uint64_t hi, lo;
};

/* Two 64-bit lanes (SSE2 on x86-64, NEON on arm64; plain code elsewhere). */
typedef uint64_t u64x2 __attribute__((vector_size(16)));
/* The same at any address, for loads from packets (the build has -fno-strict-aliasing). */
typedef uint64_t u64x2u __attribute__((vector_size(16), aligned(1)));

/*
 * A flow of a channel (fwd.c, owner thread only): the network addresses of a packet the
 * data path forwarded to the peer channel's fast path, with everything its
 * classification found (group, sender, address handle, the other side's MTU). A packet
 * whose addresses match a flow needs none of the table lookups and rule checks again
 * (rx_fast_run). A channel has CH_FLOWS of them in sets of CH_FLOW_WAYS, the set chosen
 * by a hash of the address bytes (source and group): every packet is looked up in its
 * set, so that a run of one flow and traffic interleaving groups and sources packet by
 * packet cost the same (two flows whose hashes collide both keep their place). What a
 * flow caches stays true until the bridge's flows_epoch moves (a group's ready bits,
 * role or address handle changed) or a table's epoch does: the channel then drops all
 * its flows before its next burst.
 *
 * The fields every packet reads come first, in one cache line; the rest (the sender
 * cache's tags, the PGM stream) only when the sender or the packet asks for them.
 */
struct chan_flow {
	union {
		/* IB: source GID, then MGID; RoCE IPv4: key[0] = saddr, daddr (key[1..3] 0);
		 * RoCE IPv6: source address, then destination (the IPv6 header's bytes 8-39,
		 * where the GRH holds SGID and DGID) */
		uint64_t key[4];
		u64x2 kv[2];
	};
	struct group *g;
	struct sender *s;
	struct ibv_ah *ah;
	uint32_t qkey;
	/* IB and IPv4 RoCE flows: the other side's MTU + 1; 0 while no flow is set and in an
	 * IPv6 flow: nothing matches (an IPv4 packet whose addresses equal an IPv6 flow's
	 * first key word goes to the full path). */
	uint32_t lim;
	/* The second cache line. */
	uint64_t gen; /* this flow's generation << 32: the tag of its qcache entries, and its age */
	/* RoCEv2 over IPv6 flows: lim's value (0 in the flows of the other kinds, so that an
	 * IPv6 packet never matches an IPv4 flow). Read by IPv6 packets only: IB and IPv4
	 * packets read one cache line of their flow as before. */
	uint32_t lim6;
	struct src_addr src;
	uint64_t mix; /* src_mix(&src) */
	/* The PGM stream of the flow's last in-order ODATA (pgm_stream_odata_next). */
	struct pgm_stream_ref pgm;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct chan_flow, lim) + sizeof(uint32_t) <= 64,
	       "what every IB and IPv4 packet reads of its flow is in one cache line");
_Static_assert(sizeof(struct chan_flow) == 192, "CH_FLOWS flows take 384 KiB per channel");

/*
 * An entry of a channel's flow sender cache (direct-mapped by QPN): (flow generation << 32
 * | QPN, sender), valid while the flow is the one of that generation, whose source address
 * is fixed: so a QPN compare finds the sender.
 */
struct qcache_ent {
	uint64_t tag;
	struct sender *s;
};

/*
 * Where a channel's receives are posted: its worker's shared receive queue on its side
 * (one per worker and side, shared by that worker's channels there), or the channel's
 * own QP receive queue where the device has no SRQ (max_srq 0). Owner thread only.
 */
struct rxq {
	struct ibv_srq *srq; /* NULL: post to qp */
	struct ibv_qp *qp;
	uint32_t depth;
	uint32_t posted;
};

/* A send work request and its scatter entry (struct wr_tmpl). */
struct tx_slot {
	struct ibv_send_wr wr; /* first: a WR pointer converts back to its slot */
	struct ibv_sge sge;    /* wr.sg_list */
};

/*
 * The work-request templates of a worker's side: the chain of sends of one channel at a
 * time and the receive chain of a refill. Their constant fields (chaining, scatter lists,
 * the side's lkey, the multicast QPN, the opcode) are written once (chan_prepare, fwd.c),
 * the data path fills in only what changes per packet. One set a worker and side, not
 * one a channel: at thousands of groups a poll's completions are spread over dozens of
 * channels, whose own templates (6 KiB each) no longer stayed in the L1 cache; these do.
 * A channel chains its sends here only as the owner: the one before it is posted first
 * (chan_tmpl_own, fwd.c). Owner thread only (the control thread with --workers 0).
 */
struct wr_tmpl {
	struct tx_slot tx[BR_BURST];
	/*
	 * Slots of tx[] whose opcode or send_flags differ from the template's (IBV_WR_SEND,
	 * unsignaled): a send with immediate data or a signaled one, bit i for tx[i]. The
	 * post resets them (chan_flush), so that the fast path writes neither field.
	 */
	uint32_t dirty;
	bool prepared;	       /* the constant fields are written */
	struct channel *owner; /* the channel whose chain tx holds (its nwr), or NULL */
	struct ibv_recv_wr rwr[BR_BURST];
	struct ibv_sge rsge[BR_BURST];
};

struct channel {
	enum side side;
	uint32_t index;
	struct bridge *br;
	struct side_ctx *sd;
	struct worker *w;
	struct channel *peer; /* same pair, other side */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_comp_channel *cc; /* event-driven mode */
	uint32_t qpn;
	uint32_t lkey;
	uint32_t qkey;	  /* control thread: the QP's Q_Key (channel_set_qkey) */
	uint32_t ngroups; /* groups attached */
	/* Receive queue: &own_rq, or the worker's SRQ on this side (struct wside). */
	struct rxq *rq;
	struct rxq own_rq;
	/* Send queue: buffers of posted sends in order, retired by signaled completions. */
	uint32_t sq_depth;
	uint32_t *tx_buf;
	uint32_t tx_mask;
	uint64_t tx_head, tx_tail;
	/* [tx_recl, tx_tail): buffers of completed sends held for the peer's refill. */
	uint64_t tx_recl;
	uint32_t tx_hold; /* at most this many (fwd.c, chan_tx_done) */
	uint32_t sig_every;
	uint32_t unsignaled;
	/*
	 * Sends chained during a pass, posted at its end, and the receive chain of a refill:
	 * in the work-request templates of the channel's worker and side (struct wr_tmpl),
	 * which hold the chain of one channel at a time (tt->owner).
	 */
	struct wr_tmpl *tt;
	uint32_t nwr;  /* sends chained in tx (only while tt->owner is this channel) */
	bool prepared; /* chan_prepare ran */
	/* Bounded backlog when the send queue is full. */
	struct backlog_ent *bl;
	uint32_t bl_mask;
	uint64_t bl_head, bl_tail;
	bool broken;	      /* QP went to the error state (flushed completions) */
	bool broken_reported; /* control thread: logged */
	/*
	 * Caches in front of the RCU tables (owner thread only). An entry is valid while
	 * the table's epoch is the one the cache was filled under: the control thread bumps
	 * the epoch before a retired entry's grace period starts.
	 */
	uint64_t gcache_epoch;
	struct gcache_ent {
		uint64_t mgid_hi, mgid_lo;
		struct group *g;
	} gcache[CH_GCACHE];
	struct gcache_ent *glast; /* the last packet's entry (packets come in runs) */
	uint64_t scache_epoch;
	struct sender **scache;	    /* scache_n entries, 2-way: sets of two */
	uint32_t scache_n;	    /* a power of two, >= CH_SCACHE */
	uint32_t scache_shift;	    /* 64 - log2(scache_n / 2): a hash's top bits pick the set */
	uint32_t qcache_mask;	    /* qcache entries - 1 (a power of two, >= CH_QCACHE) */
	struct sender *prev_sender; /* the last packet's sender */
	/* The flows' senders by QPN (struct qcache_ent). flow_gen counts flow_set. */
	struct qcache_ent *qcache;
	uint32_t flow_gen;
	struct chan_flow *flows; /* CH_FLOWS flows: the data path's fast path (fwd.c) */
	uint64_t flows_epoch;	 /* the bridge's flows_epoch the flows were set under */
	struct chan_stats st;
	/* Control thread only: counters at the last console "zap" (shown values are st - zap;
	 * stats --json and the metrics file show st), and the rates of the last second. */
	struct chan_stats zap;
	uint64_t rate_rx_prev, rate_fwd_prev;
	uint64_t pps_rx, pps_fwd;
	/*
	 * A send queue that stopped completing (fwd.c, chan_tx_full): sends outstanding, the
	 * queue and its backlog full, and the oldest outstanding send not completed for
	 * BR_TX_STUCK_NS. At the end of the struct, off the data path's cache lines. Owner
	 * thread: stall_tail, the tx_tail at the first look that found the queue full;
	 * stall_ns, that look's time (CLOCK_MONOTONIC ns, the burst's clock; 0: no look
	 * yet); stall_polls, 1 + the polls of the channel's side CQ (struct wside) at the
	 * first look past the bound (0: none yet). tx_stuck_ns: stall_ns while the queue is
	 * stuck, 0 otherwise; the owner stores it relaxed (a value, it publishes nothing
	 * else), the control thread reads it (control/ctl.c logs an episode, ops/health.c's
	 * tx_stuck).
	 */
	uint64_t stall_tail;
	uint64_t stall_ns;
	uint64_t stall_polls;
	_Atomic uint64_t tx_stuck_ns;
	uint64_t tx_stuck_logged; /* control thread: the tx_stuck_ns it logged, 0: none */
} __attribute__((aligned(64)));

/* A worker-to-worker single-producer single-consumer ring of packets. */
struct handoff_ent {
	uint32_t buf;
	uint32_t len;
	uint32_t imm;
	bool has_imm;
	struct channel *out;
	struct ibv_ah *ah;
	uint32_t qkey;
};

struct handoff_ring {
	_Atomic uint64_t head; /* written by the consumer */
	char pad1[56];
	_Atomic uint64_t tail; /* written by the producer */
	char pad2[56];
	uint32_t mask;
	struct handoff_ent *ent;
} __attribute__((aligned(64)));

enum idle_policy {
	IDLE_SPIN,    /* busy-poll forever */
	IDLE_BACKOFF, /* spin, then yield and sleep increasingly (up to idle_max_us) */
};

/*
 * What a worker's side has, as its worker reads it (struct wside): its channels there and
 * the map from a completion's QP number to its channel, a table of 2^(32 - map_shift)
 * entries indexed by (qpn * map_mul) >> map_shift, built so that the side's QPNs land in
 * distinct entries (QPNs are 24-bit and not consecutive when other processes create QPs:
 * a direct table would be 16 M entries, a search costs a compare per channel). slot is
 * the worker's scratch of one poll (fwd.c, wside_poll_mixed): one entry per map entry,
 * UINT16_MAX between polls.
 *
 * Published by the control thread (rcu_assign_pointer) when it adds a channel pair at
 * run time (bridge_pair_add), the old view freed after a grace period; the worker loads
 * it (rcu_dereference) after each poll of its CQ, so that a completion of a new QP, which
 * exists only after its view was published, always finds its channel.
 */
struct wside_view {
	struct channel **map;
	uint16_t *slot;
	uint32_t map_mul, map_shift;
	uint32_t nchan;
	struct rcu_head rcu;
	struct channel *chan[]; /* the worker's channels on this side */
};

/*
 * A worker's share of one side: one completion queue for the sends and receives of all
 * its channels on that side, one shared receive queue (rq.srq, NULL without SRQ
 * support), and the view of its channels (struct wside_view). The worker polls ws[IB]
 * and ws[RoCE] per pass. The CQ is sized at start for cq_pairs channel pairs (the
 * worker's at start, or as many as the IB multicast LID space can need: bridge_build),
 * so that pairs added at run time fit in it without a resize.
 */
struct wside {
	struct ibv_cq *cq;
	struct ibv_comp_channel *cc; /* --workers 0: the control thread's event source */
	struct rxq rq;
	struct wside_view *view; /* RCU: written by the control thread */
	uint32_t cq_pairs;	 /* control thread: the pairs the CQ is sized for */
	uint64_t polls; /* ibv_poll_cq calls (one per pass, two when a full one was mixed) */
	uint64_t wcs;	/* completions they returned */
	uint64_t empty; /* polls that returned fewer than they asked: the CQ was drained */
	struct wr_tmpl tt; /* the side's work-request templates (its channels' tt) */
};

/* The channel whose QP is `qpn`, one of v's (no check: only our QPs complete here). */
static inline struct channel *wside_chan(const struct wside_view *v, uint32_t qpn)
{
	return v->map[(uint32_t)(qpn * v->map_mul) >> v->map_shift];
}

/* Each worker on pages of its own, so that they can be bound to its NUMA node. */
#define BR_WORKER_ALIGN 4096

struct worker {
	uint32_t id;
	int cpu; /* -1: not pinned */
	pthread_t thread;
	struct bridge *br;
	uint32_t nchan;	 /* control thread: channels owned (the views hold them) */
	uint32_t npairs; /* control thread: pairs owned */
	struct wside ws[NSIDES];
	struct pool_cache *pc;
	struct handoff_ring **in;   /* in[from]: rings from other workers */
	_Atomic uint64_t heartbeat; /* passes, read by the control thread */
	_Atomic bool stop;
	uint64_t passes;
	/* Worker only: its channels whose backlog holds packets (chan_send counts a backlog
	 * that fills, chan_backlog_drain one it empties), so that a pass learns whether it
	 * may report a quiescent state without reading every channel (worker_backlogged). */
	uint32_t backlogged;
	uint64_t drop_nth; /* fault injection counter */
	struct hist lat;   /* poll -> post, ns */
	/* Packet capture (capring.h): published by the control thread (rcu_assign_pointer)
	 * before a capture starts (bridge->cap_gen), NULL again at its stop and freed after
	 * a grace period. Read with rcu_dereference. */
	struct cap_ring *cap;
	uint64_t idle_sleeps;
	/* Control thread only: latency histogram at the last "zap"; heartbeat bookkeeping. */
	struct hist lat_zap;
	uint64_t hb_prev;	/* heartbeat at the last check */
	uint64_t hb_changed_ms; /* CLOCK_MONOTONIC ms when it last advanced */
	uint64_t loop_rate;	/* passes per second over the last second */
	uint64_t rate_passes_prev;
} __attribute__((aligned(BR_WORKER_ALIGN)));

/* What the control thread knows of a side's port. */
enum side_state {
	SIDE_UP,      /* port active: groups joined or joining */
	SIDE_DOWN,    /* port not active (PORT_ERR): joins dropped, re-joined on PORT_ACTIVE */
	SIDE_REMOVED, /* device removed or fatal error: the side is stopped */
};

/* One side of the bridge: a device port. */
struct side_ctx {
	enum side side;
	enum side_state state; /* control thread */
	uint64_t port_events;  /* async port events seen (control thread) */
	uint64_t rejoins;      /* groups re-joined after port events (control thread) */
	char dev[64];
	uint8_t port;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	union ibv_gid gid;
	int gid_index;
	uint32_t ipv4;	  /* RoCE: our address (network order); IB: 0 */
	uint32_t netmask; /* RoCE: interface netmask (network order), 0 = unknown: no check */
	/*
	 * RoCE, IPv6 groups (docs/architecture.md "RoCEv2 over IPv6"): the RoCEv2 GID entries
	 * of the port's global IPv6 address and of its link-local one (index -1: none), the
	 * netdev's ifindex (GID table, 0: unknown), and the interface's IPv6 prefix as two
	 * words each (net6, mask6: what foreign_source compares; mask6 0: unknown, no check).
	 */
	union ibv_gid gid6;
	int gid6_index;
	union ibv_gid gid6ll;
	int gid6ll_index;
	uint32_t ifindex;
	uint64_t net6[2], mask6[2];
	uint16_t pkey;
	uint32_t mtu;
	uint32_t lkey; /* pool's MR on this side */
	bool block_lb; /* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB works here */
	bool srq;      /* its channels receive from one SRQ per worker (max_srq > 0) */
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *cm_id;
	struct cds_lfht *groups; /* MGID -> group */
	struct channel **chan;	 /* control thread: channel k of pair k */
	uint32_t nchan;
	/* QPNs of our channels (the own packet filter, fwd_own_qpn): RCU, replaced by the
	 * control thread when it adds a pair, read by any worker. */
	struct qpn_set *own;
};

/* A side's own QPNs (struct side_ctx). */
struct qpn_set {
	uint32_t n;
	struct rcu_head rcu;
	uint32_t qpn[];
};

/* Options and runtime features the engine reads (set by control/). */
struct bridge_cfg {
	char ib_dev[64];
	char roce_dev[64];
	uint8_t ib_port, roce_port;
	uint32_t nworkers; /* 0: event-driven on the control thread */
	int cpus[256];	   /* --cpus list, -1 terminated; empty: automatic */
	uint32_t ncpus;
	/* The placement plan (host/placement.c), when placed: each worker's CPU (-1: not
	 * pinned) and NUMA node (-1: none), the pool's node; SCHED_FIFO priority (0: off). */
	bool placed;
	int wcpu[64];
	int wnode[64];
	int node;
	int rt_prio;
	enum idle_policy idle;
	uint32_t idle_max_us;
	uint32_t mcqp; /* groups per channel, 0: device max_mcast_qp_attach */
	uint32_t nbufs;
	bool huge;
	uint32_t rq_depth;
	uint32_t sq_depth;
	uint32_t backlog; /* per channel */
	uint32_t sig_every;
	uint32_t peers[64]; /* RoCE addresses of other bridges (network order) */
	uint32_t npeers;
	union ibv_gid peers6[64]; /* their IPv6 RoCE addresses (--peer with an IPv6 address) */
	uint32_t npeers6;
	bool allow_foreign; /* accept RoCE sources outside the interface subnet */
	uint32_t max_senders;
};

struct sender;

struct bridge {
	struct bridge_cfg cfg;
	struct side_ctx sd[NSIDES];
	struct pool *pool;
	struct worker *workers;
	uint32_t nworkers; /* at least 1: worker 0 is the control thread with cfg.nworkers 0 */
	uint32_t npairs;
	uint32_t rq_asked;   /* cfg.rq_depth before bridge_build fitted it to the pool */
	uint32_t pool_min;   /* the smallest pool this configuration accepts (bridge_fit_rq) */
	uint64_t pool_need;  /* control thread: what the queues and holds made so far take */
	struct cds_lfht *groups_by_addr;
	struct group **groups; /* all groups, control thread */
	uint32_t ngroups, groups_cap;
	struct sender_table *senders;
	_Atomic uint64_t groups_epoch; /* bumped before a group leaves the tables */
	/* Bumped after a group's ready bits, role or address handles change: the workers'
	 * flows (struct chan_flow) cached them (bridge_flows_stale). */
	_Atomic uint64_t flows_epoch;
	struct pgm_stream_table *pgm;  /* PGM streams (TSI + group) */
	/* Runtime features, read by workers with relaxed loads. */
	_Atomic int64_t bridging;
	_Atomic int64_t drop_every;
	_Atomic int64_t loopback_prev;
	_Atomic int64_t pgm_on;	    /* inspect PGM */
	_Atomic int64_t pgm_dups;   /* enum pgm_dup_policy */
	_Atomic int64_t pgm_policy; /* PGM_DROP_* bits: drop bad checksums / malformed */
	_Atomic int64_t stall;	    /* fault injection: worker stall-1 stops its loop (0 off) */
	/*
	 * Packet capture (control/capture.c): the running capture's generation, 0: none.
	 * The control thread writes the workers' rings and the filters below, then the
	 * generation (release); a worker reads the generation once per burst (acquire).
	 */
	_Atomic uint32_t cap_gen;
	_Atomic uint32_t cap_sides; /* bit s: capture what side s receives */
	_Atomic uint32_t cap_group; /* only this group address (network order), 0: all */
	/* only this group, for groups without an IPv4 address (IPv6 on RoCE); NULL: all */
	const struct group *_Atomic cap_gptr;
	_Atomic uint32_t cap_snap;  /* payload bytes to copy at most */
	/* Packets forwarded by groups no longer bridged (left at run time), per input side. */
	_Atomic uint64_t left_fwd_pkts[NSIDES];
	_Atomic uint64_t left_fwd_bytes[NSIDES];
	_Atomic uint32_t left_groups;
};

/* ---- mgid.c: group specs and MGIDs ---- */

/*
 * Parse a group specification into g (the group model fields above, spec, port, fmt,
 * tos, weight, qkey); the other fields are not touched. The forms:
 * - "A[:port][/fmt][#opts]": A an IPv4 multicast address (not 224.0.0.0/24), both
 *   sides from it (the reference's syntax).
 * - "G[#opts]": G an IPv6 multicast address (ff00::/8): the IB MGID and the RoCE IPv6
 *   group are these same 128 bits (perftest's case).
 * - "L=R[#opts]": L the IB side, an MGID in IPv6 notation (first byte ff) or
 *   "A[:port][/fmt]"; R the RoCE side, an IPv4 or IPv6 multicast address only.
 * opts, comma-separated, each at most once: the traffic class (the reference's "#tos"),
 * "w=N" the weight when the groups are spread over the workers (1..GROUP_WEIGHT_MAX,
 * default 1), "qkey=Q" (both sides), "ibqkey=Q", "roceqkey=Q" (one side; not with
 * qkey=), Q decimal or 0x hex, 32 bits. Defaults from the arguments (def_tos -1: none).
 * Returns 0 or -EINVAL with a one-line message naming the spec in err. Any thread.
 */
#define GROUP_WEIGHT_MAX 1000000u
int group_spec_parse(struct group *g, const char *spec, enum mgid_fmt def_fmt, uint16_t def_port,
		     int def_tos, uint32_t def_qkey, char *err, size_t errlen);

/* A Q_Key: decimal or 0x hex digits, 32 bits. 0 or -EINVAL. */
int group_qkey_parse(const char *s, uint32_t *qkey);

/* The IB MGID of a group: the given one (ib_native), else made in its format with P_Key
 * pkey (host order). mgid may be &g->mgid[SIDE_IB]. */
void group_mgid_ib(const struct group *g, uint16_t pkey, union ibv_gid *mgid);

/* The RoCEv2 MGID: the IPv6 group (roce_v6), else ::ffff:a.b.c.d. mgid may be
 * &g->mgid[SIDE_ROCE]. */
void group_mgid_roce(const struct group *g, union ibv_gid *mgid);

/*
 * A hash of a GID for tables of groups (salt: keys of several kinds in one table). Every
 * bit of the GID reaches the low bits: MGIDs of IPv4 groups (::ffff:a.b.c.d, the IB
 * formats) differ only in a few bytes. Any thread.
 */
uint32_t group_gid_hash(const union ibv_gid *k, uint8_t salt);

/*
 * Do a and b (parsed, mgid[] not yet made for a P_Key) bridge the same group: the same
 * IB MGID or the same RoCE group? The reason in why ("IB MGID", "RoCE group"), if
 * true. Any thread.
 */
bool group_spec_same(const struct group *a, const struct group *b, const char **why);

/*
 * An index of a list of groups by what group_spec_same compares (thousands of groups):
 * the lists a start or a reload builds from the command line and the files, the running
 * groups (the control thread's, for joins). Entries are only added, as the list grows;
 * whoever removes a group from the list drops the index (group_index_free), and the next
 * group_index_sync builds it again. A zeroed struct is an empty index.
 */
struct group_index {
	struct group_index_ent *e; /* mask + 1 slots, NULL: none yet */
	uint32_t mask;
	uint32_t used;	  /* slots taken (two a group) */
	uint32_t ngroups; /* groups added: v[0..ngroups) of the list it indexes */
};

/* Make x the index of v[0..n) unless it already is (its count is n: an indexed list only
 * grows). 0 or -ENOMEM (x is then empty and must be built again). */
int group_index_sync(struct group_index *x, struct group *const *v, uint32_t n);

/* The indexed group that bridges the same group as g, or NULL: what
 * group_array_find_same answers over the list in the order it was added (with why). */
struct group *group_index_same(const struct group_index *x, const struct group *g,
			       const char **why);

/* Add g, the list's next group. 0 or -ENOMEM (x is then empty). */
int group_index_add(struct group_index *x, struct group *g);

void group_index_free(struct group_index *x);

/* Format name lookup; -1 if unknown. */
int mgid_fmt_parse(const char *name);

/* ---- tables.c: RCU group tables ---- */

/* Hash of an MGID (also used as the table's key compare). */
unsigned long mgid_hash(const union ibv_gid *gid);

/*
 * Find the group with MGID `gid` on side s. Caller is a registered QSBR reader (worker or
 * control thread); the pointer is valid until the caller's next quiescent state.
 */
struct group *group_lookup(struct side_ctx *sd, const union ibv_gid *gid);

/* Find by the IPv4 address an IB MGID is made from (ib_addr; groups with a native MGID
 * are not in this table): for the "MGID format mismatch" verdict. */
struct group *group_lookup_addr(struct bridge *br, uint32_t addr);

/* Arrays of groups of the control thread (bridge->groups, a reload's wanted groups). */

/* The group among v[0..n) that bridges the same group as g (group_spec_same: the same
 * IB MGID or RoCE group), or NULL; why as group_spec_same's. g itself is skipped. */
struct group *group_array_find_same(struct group *const *v, uint32_t n, const struct group *g,
				    const char **why);

/* The group among v[0..n) with IPv4 address addr (the RoCE side's), or NULL. */
struct group *group_array_find(struct group *const *v, uint32_t n, uint32_t addr);

/* Append g to *v (n entries, room for *cap; grown as needed). 0 or -ENOMEM. */
int group_array_push(struct group ***v, uint32_t *n, uint32_t *cap, struct group *g);

/* Insert / remove a group in the tables (control thread). */
int group_publish(struct bridge *br, struct group *g);
void group_unpublish(struct bridge *br, struct group *g);

/*
 * After a group's ready bits, role or address handles changed (control thread): the
 * workers' flows cached them, so every channel drops its flows before its next burst.
 * Release: a worker that loads the new epoch (acquire) sees the change too.
 */
static inline void bridge_flows_stale(struct bridge *br)
{
	atomic_fetch_add_explicit(&br->flows_epoch, 1, memory_order_release);
}

#endif /* ENGINE_BRIDGE_H */
