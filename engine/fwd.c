// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The data path: one pass over a channel's completion queue.
 *
 * For every receive: check the completion and the network header of its side, apply the
 * discard rules, account the sender, and chain a send of the same buffer (payload after
 * the 40-byte header, immediate data kept) on the group's channel of the other side.
 * The chain is posted once per pass with one signaled send in `sig_every`; a signaled
 * completion retires every buffer posted before it. When the send queue is full packets
 * wait in a bounded backlog, and are dropped (counted) when that is full too. Receives
 * are refilled in chains. Every packet ends forwarded or in a drop counter.
 *
 * Assumed: called by the channel's owner thread only, as a registered QSBR reader.
 *
 * Why one file of ~1 800 lines: a packet's walk (chan_burst_side -> rx_fast_run or
 * chan_rx -> rx_classify -> rx_sender -> chan_send / burst_peer_post -> chan_flush) is
 * one always_inline chain that gcc compiles into one function per side, with the burst's
 * state (struct burst) and the peer's chain position kept in registers. Split over
 * several files the chain crosses translation units (the build has no LTO), so the calls
 * stay calls and the burst's state goes through memory: a split was measured to make a
 * packet's walk worse (issue 27; engine instructions per forwarded packet, callgrind
 * inside chan_burst, bench/harness.py and docs/benchmarks.md). The file reads in
 * sections instead, each under a "----" marker, in the order a packet meets them:
 *   helpers, channel set-up, sending, send completions, the burst, classification and
 *   discard rules, sender records, PGM inspection, flows, the fast path, capture, the
 *   full path (chan_rx), receive refill, the burst loop and polling, hand-off.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "capring.h"
#include "fwd.h"
#include "pgm.h"
#include "pool.h"
#include "senders.h"
#include "stream.h"

#define TX_TAG (1ull << 63)
_Static_assert(IBV_WR_SEND + 1 == IBV_WR_SEND_WITH_IMM, "send_wr_fill computes the opcode");
_Static_assert(IBV_WC_SUCCESS == 0, "rx_fast_run tests the status with the flags");

/*
 * The header bytes the data path reads, named after the structures that define them
 * (<infiniband/verbs.h> struct ibv_grh, <netinet/ip.h> struct iphdr). A RoCEv2 receive
 * holds the IPv4 header at BR_IPV4_OFF of the 40-byte header area.
 */
#define GRH_HOP_LIMIT offsetof(struct ibv_grh, hop_limit) /* 7: the loop marker */
#define GRH_SGID      offsetof(struct ibv_grh, sgid)	  /* 8 */
#define GRH_DGID      offsetof(struct ibv_grh, dgid)	  /* 24 */
#define GID_LOW	      8	   /* the low half of a GID: the port GUID, or a group's bits */
#define IB_MGID_FIRST 0xff /* the first byte of every IB multicast GID (the IBA's multicast GID format) */
/* 0x45: version 4, header length 5 words (no options); anything else is not forwarded. */
#define IPV4_VER_IHL ((IPVERSION << 4) | (sizeof(struct iphdr) / 4))
#define IPV4_SADDR   offsetof(struct iphdr, saddr) /* 12; daddr follows it */
#define IPV4_DADDR   offsetof(struct iphdr, daddr) /* 16 */
/* Fibonacci hashing: 2^64 / the golden ratio, the caches' multiplier. */
#define FIB_HASH_MUL 0x9e3779b97f4a7c15ull
_Static_assert(IPV4_VER_IHL == 0x45, "IPv4 without options");
_Static_assert(GRH_HOP_LIMIT == 7 && GRH_SGID == 8 && GRH_DGID == 24, "the GRH's layout");
_Static_assert(IPV4_DADDR == IPV4_SADDR + 4, "flow keys read saddr and daddr as one word");
/* RoCEv2 over IPv6: the 40-byte header is the IPv6 header, laid out as the GRH. */
#define IPV6_VERSION 6
_Static_assert(sizeof(struct ip6_hdr) == BR_GRH_LEN &&
		       offsetof(struct ip6_hdr, ip6_src) == GRH_SGID &&
		       offsetof(struct ip6_hdr, ip6_dst) == GRH_DGID,
	       "the IPv6 header is the GRH's layout");

/* ---- helpers: sender cache, flows, clock, free list, pool region ---- */

/*
 * What prev_sender points to when there is no previous sender: a record no packet
 * matches (QPNs have 24 bits), so the hot path needs no NULL check. Never written.
 */
static struct sender no_sender = {.key.qpn = UINT32_MAX};

/* Drop a channel's sender cache (at start and when the table's epoch moves). */
static void scache_clear(struct channel *ch)
{
	for (uint32_t i = 0; i < ch->scache_n; i++)
		ch->scache[i] = &no_sender;
	ch->prev_sender = &no_sender;
}

/* Drop every flow of a channel (before a burst: none holds uncounted packets). */
static void flows_drop(struct channel *ch)
{
	for (uint32_t i = 0; i < CH_FLOWS; i++) {
		ch->flows[i].lim = 0;
		ch->flows[i].lim6 = 0;
	}
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void fl_put(struct worker *w, struct freelist *fl, uint32_t buf)
{
	if (fl->n == sizeof(fl->idx) / sizeof(fl->idx[0])) {
		pool_put_burst(w->pc, fl->idx, fl->n);
		fl->n = 0;
	}
	/* No state store here: pool_put_burst records POOL_CACHED before the pass ends. */
	fl->idx[fl->n++] = buf;
}

static inline void fl_flush(struct worker *w, struct freelist *fl)
{
	if (fl->n) {
		pool_put_burst(w->pc, fl->idx, fl->n);
		fl->n = 0;
	}
}

/*
 * The pool's data region held in registers: one contiguous region of fixed-size buffers
 * (pool.h), buffer idx at base + idx * size, as pool_data computes it. With
 * -fno-strict-aliasing the compiler would reload both fields after every store of the
 * data path.
 */
struct region {
	uint8_t *base;
	size_t buf_size;
};

static inline struct region region_of(const struct pool *pool)
{
	return (struct region){pool_data(pool, 0), pool_buf_size(pool)};
}

static inline uint8_t *region_data(const struct region *r, uint32_t idx)
{
	return r->base + (size_t)idx * r->buf_size;
}

static inline uint32_t sq_used(const struct channel *ch)
{
	return (uint32_t)(ch->tx_head - ch->tx_tail) + ch->nwr;
}

/* ---- channel set-up: the work-request templates ---- */

/*
 * Prepare a channel's data-path state, once, before its first receive is posted; the
 * first channel of a worker's side also writes the fields of the side's work requests
 * (struct wr_tmpl) that never change: the chaining (wr[i] -> wr[i + 1]; a post cuts the
 * chain after its last WR and mends it afterwards), the scatter entries with the side's
 * lkey, the multicast QPN, the opcode (IBV_WR_SEND; see wr_tmpl.dirty), the receive
 * length; the data path then writes only what differs per packet. Providers do not
 * modify a posted WR list (ibv_post_send/ibv_post_recv copy it into the queue). Point
 * the caches' "last entry" pointers at entries that match no packet.
 */
void chan_prepare(struct channel *ch)
{
	struct wr_tmpl *tt = ch->tt;

	/* The side's templates once, by the first channel prepared (bridge setup, before
	 * the worker runs): a channel added at run time finds them written and in use. */
	if (!tt->prepared) {
		uint32_t bsz = pool_buf_size(ch->br->pool);

		for (uint32_t i = 0; i < BR_BURST; i++) {
			bool last = i + 1 == BR_BURST;
			struct tx_slot *t = &tt->tx[i];

			memset(t, 0, sizeof(*t));
			t->wr.next = last ? NULL : &tt->tx[i + 1].wr;
			t->wr.sg_list = &t->sge;
			t->wr.num_sge = 1;
			t->wr.opcode = IBV_WR_SEND; /* send_flags 0: unsignaled (dirty) */
			t->wr.wr.ud.remote_qpn = BR_MCAST_QPN;
			t->sge.lkey = ch->lkey;
			memset(&tt->rwr[i], 0, sizeof(tt->rwr[i]));
			tt->rwr[i].next = last ? NULL : &tt->rwr[i + 1];
			tt->rwr[i].sg_list = &tt->rsge[i];
			tt->rwr[i].num_sge = 1;
			tt->rsge[i].length = bsz;
			tt->rsge[i].lkey = ch->lkey;
		}
		tt->dirty = 0;
		tt->owner = NULL;
		tt->prepared = true;
	}
	ch->nwr = 0;
	ch->glast = &ch->gcache[0];
	scache_clear(ch);
	flows_drop(ch);
	ch->prepared = true;
}

/* ---- sending: chains, the send queue, the backlog ---- */

/*
 * Give the dirty slots of the templates their opcode and flags back (what chan_prepare
 * wrote: IBV_WR_SEND, unsignaled), after the post copied them: the fast path
 * (rx_fast_run) writes neither field.
 */
static __attribute__((noinline)) void chan_tx_clean(struct wr_tmpl *tt)
{
	uint32_t d = tt->dirty;

	tt->dirty = 0;
	for (; d; d &= d - 1) {
		struct ibv_send_wr *wr = &tt->tx[__builtin_ctz(d)].wr;

		wr->opcode = IBV_WR_SEND;
		wr->send_flags = 0;
	}
}

/* Post the chained sends of a channel. */
void chan_flush(struct worker *w, struct channel *ch, struct freelist *fl)
{
	struct ibv_send_wr *bad = NULL;
	uint32_t n = ch->nwr;
	int r;

	if (!n)
		return;
	ch->tt->tx[n - 1].wr.next = NULL;
	ch->nwr = 0;
	r = ibv_post_send(ch->qp, &ch->tt->tx[0].wr, &bad);
	if (n < BR_BURST)
		ch->tt->tx[n - 1].wr.next = &ch->tt->tx[n].wr;
	if (ch->tt->dirty)
		chan_tx_clean(ch->tt);
	if (r) {
		/* WRs from `bad` on were not posted: their buffers are ours again. */
		uint32_t first = bad ? (uint32_t)((struct tx_slot *)bad - ch->tt->tx) : 0;
		uint64_t posted_head = ch->tx_head - (n - first);

		for (uint32_t i = first; i < n; i++) {
			uint32_t buf = ch->tx_buf[(posted_head + (i - first)) & ch->tx_mask];

			ch->st.drops[DROP_TX_ERROR]++;
			fl_put(w, fl, buf);
		}
		ch->tx_head = posted_head;
		/* The signaled WR may have been among the unposted: signal the next one so
		 * the posted ones are retired. */
		ch->unsignaled = ch->sig_every - 1;
		/* The QP itself is fine (the data path checks lengths before posting): only
		 * error completions mark a channel broken. */
	}
}

/*
 * Fill the per-packet fields of send WR tx[slot] of channel out, whose constant fields
 * (chain, QPN, lkey) and template opcode and flags (IBV_WR_SEND, unsignaled) the slot
 * already holds, and account the buffer as sent at slot `head` of the channel's ring of
 * posted buffers (ring, mask: its tx_buf and tx_mask; meta: the pool's metadata array),
 * all passed in so that callers can hold them in registers. A send with immediate data
 * or a signaled one changes the template: the slot is marked dirty (chan_flush restores
 * it after the post).
 */
static inline __attribute__((always_inline)) void
send_wr_fill(struct channel *out, uint32_t slot, uint32_t *ring, uint32_t mask,
	     struct pool_meta *meta, uint64_t head, uint32_t buf, uintptr_t addr, uint32_t len,
	     bool has_imm, uint32_t imm, unsigned int flags, struct ibv_ah *ah, uint32_t qkey)
{
	struct tx_slot *t = &out->tt->tx[slot];

	t->sge.addr = addr;
	t->sge.length = len;
	t->wr.wr_id = TX_TAG | head;
	if (has_imm | flags) {
		t->wr.opcode = (enum ibv_wr_opcode)(IBV_WR_SEND + has_imm); /* or SEND_WITH_IMM */
		t->wr.imm_data = imm;
		t->wr.send_flags = flags;
		out->tt->dirty |= 1u << slot;
	}
	t->wr.wr.ud.ah = ah;
	t->wr.wr.ud.remote_qkey = qkey;
	ring[head & mask] = buf;
	pool_meta_state(meta, buf, POOL_TX);
}

/* Post the chain open in a side's templates, if one is (its owner's). */
static inline void tmpl_flush(struct worker *w, struct wr_tmpl *tt, struct freelist *fl)
{
	struct channel *o = tt->owner;

	if (o && o->nwr)
		chan_flush(w, o, fl);
}

/*
 * Make out the owner of its side's templates (struct wr_tmpl): the chain of the channel
 * that held them is posted first. Chains are posted at the end of the burst, drain and
 * hand-off drain that made them, so this finds one open only where one of those sends on
 * several channels of a side in turn (a hand-off drain; a burst, burst_peer_yield).
 */
static inline void chan_tmpl_own(struct worker *w, struct channel *out, struct freelist *fl)
{
	struct wr_tmpl *tt = out->tt;

	if (__builtin_expect(tt->owner != out, 0)) {
		tmpl_flush(w, tt, fl);
		tt->owner = out;
	}
}

/*
 * Chain a send of buffer `buf` (payload at `addr`) on `out`, which has send-queue room.
 * Only the per-packet fields are written (chan_prepare wrote the others). Fields are read
 * into locals once: with -fno-strict-aliasing every store would force their reload.
 */
static inline __attribute__((always_inline)) void
chan_post(struct worker *w, struct pool *pool, struct channel *out, struct freelist *fl,
	  uint32_t buf, uintptr_t addr, uint32_t len, bool has_imm, uint32_t imm, struct ibv_ah *ah,
	  uint32_t qkey)
{
	uint32_t nwr, unsignaled;
	unsigned int flags = 0;
	uint64_t head;

	chan_tmpl_own(w, out, fl);
	nwr = out->nwr;
	if (nwr == BR_BURST) {
		chan_flush(w, out, fl);
		nwr = 0;
	}
	/* After the flush: a failed post rewinds the head and the signal count. */
	head = out->tx_head;
	unsignaled = out->unsignaled + 1;
	if (unsignaled >= out->sig_every) {
		flags = IBV_SEND_SIGNALED;
		unsignaled = 0;
	}
	out->nwr = nwr + 1;
	out->unsignaled = unsignaled;
	out->tx_head = head + 1;
	send_wr_fill(out, nwr, out->tx_buf, out->tx_mask, pool_meta_array(pool), head, buf, addr,
		     len, has_imm, imm, flags, ah, qkey);
	out->st.tx_pkts++;
	out->st.tx_bytes += len;
}

/*
 * A send found the queue and its backlog full: the packet is dropped (tx_full; the caller
 * frees its buffer). Busy or stuck? Busy: a send completed since the last look (tx_tail
 * moved) or nothing is outstanding: this look starts a new one. Stuck: the tail stood
 * still for BR_TX_STUCK_NS since the first look that found it there (so the oldest
 * outstanding send is older than that), and the channel's CQ was polled again after a
 * look past the bound (a worker that lost its CPU for a second looks first and polls
 * after: the completions that came meanwhile move the tail then). Counted once
 * (tx_stuck) and published (tx_stuck_ns) until a completion moves the tail (the next look
 * here, or chan_backlog_drain, which the first completion of a stuck queue runs: its
 * backlog is full). now: the caller's clock, read once per burst (CLOCK_MONOTONIC ns).
 * Cold: only a full queue comes here, so the fast path's code is unchanged.
 */
static __attribute__((noinline, cold)) void chan_tx_full(struct channel *ch, uint64_t now)
{
	uint64_t polls = ch->w->ws[ch->side].polls + 1;

	ch->st.drops[DROP_TX_FULL]++;
	if (!ch->stall_ns || ch->tx_tail != ch->stall_tail || ch->tx_head == ch->tx_tail) {
		ch->stall_tail = ch->tx_tail;
		ch->stall_ns = now;
		ch->stall_polls = 0;
		if (atomic_load_explicit(&ch->tx_stuck_ns, memory_order_relaxed))
			atomic_store_explicit(&ch->tx_stuck_ns, 0, memory_order_relaxed);
		return;
	}
	if (atomic_load_explicit(&ch->tx_stuck_ns, memory_order_relaxed) ||
	    now - ch->stall_ns < BR_TX_STUCK_NS)
		return;
	if (!ch->stall_polls) {
		ch->stall_polls = polls; /* past the bound: stuck if a poll brings nothing */
		return;
	}
	if (polls != ch->stall_polls) {
		ch->st.tx_stuck++;
		atomic_store_explicit(&ch->tx_stuck_ns, ch->stall_ns, memory_order_relaxed);
	}
}

/*
 * Send buffer `buf` on `out`: chained now, or queued in the bounded backlog when the send
 * queue is full or older packets already wait (order is kept); dropped and counted when
 * the backlog is full too (chan_tx_full, which reads now: the caller's clock).
 */
static inline __attribute__((always_inline)) void
chan_send(struct worker *w, struct pool *pool, struct channel *out, struct freelist *fl,
	  uint32_t buf, uintptr_t addr, uint32_t len, bool has_imm, uint32_t imm, struct ibv_ah *ah,
	  uint32_t qkey, uint64_t now)
{
	struct backlog_ent *b;

	if (__builtin_expect(sq_used(out) < out->sq_depth && out->bl_tail == out->bl_head, 1)) {
		chan_post(w, pool, out, fl, buf, addr, len, has_imm, imm, ah, qkey);
		return;
	}
	if (out->bl_tail - out->bl_head > out->bl_mask) {
		chan_tx_full(out, now);
		fl_put(w, fl, buf);
		return;
	}
	/* The first packet of the backlog: out is w's (a hand-off goes to the owner). */
	if (out->bl_tail == out->bl_head)
		w->backlogged++;
	b = &out->bl[out->bl_tail++ & out->bl_mask];
	b->buf = buf;
	b->len = len;
	b->has_imm = has_imm;
	b->imm = imm;
	b->ah = ah;
	b->qkey = qkey;
	pool_set_state(pool, buf, POOL_BACKLOG);
	out->st.backlog = out->bl_tail - out->bl_head;
	if (out->st.backlog > out->st.backlog_max)
		out->st.backlog_max = out->st.backlog;
}

/* Move waiting packets into the send queue while there is room, and post them. */
static void chan_backlog_drain(struct worker *w, struct channel *ch, struct freelist *fl)
{
	struct pool *pool = w->br->pool;
	bool waiting = ch->bl_head != ch->bl_tail;

	/* A stuck queue's first completion: it moves again (chan_tx_full). */
	if (__builtin_expect(atomic_load_explicit(&ch->tx_stuck_ns, memory_order_relaxed), 0) &&
	    ch->tx_tail != ch->stall_tail)
		atomic_store_explicit(&ch->tx_stuck_ns, 0, memory_order_relaxed);
	while (ch->bl_head != ch->bl_tail && sq_used(ch) < ch->sq_depth) {
		struct backlog_ent b = ch->bl[ch->bl_head++ & ch->bl_mask];

		chan_post(w, pool, ch, fl, b.buf, (uintptr_t)pool_data(pool, b.buf) + BR_GRH_LEN,
			  b.len, b.has_imm, b.imm, b.ah, b.qkey);
	}
	if (waiting && ch->bl_head == ch->bl_tail)
		w->backlogged--;
	ch->st.backlog = ch->bl_tail - ch->bl_head;
	chan_flush(w, ch, fl);
}

/* ---- send completions: buffers back to the peer's receives or the pool ---- */

/* Give the held buffers of ch (chan_tx_done) up to ring position upto back to the pool,
 * in at most two runs (the ring wraps). */
static void chan_tx_release(struct worker *w, struct channel *ch, uint64_t upto)
{
	uint64_t recl = ch->tx_recl;
	uint32_t ring = ch->tx_mask + 1;

	while (recl < upto) {
		uint32_t at = (uint32_t)recl & ch->tx_mask;
		uint32_t n = upto - recl < ring - at ? (uint32_t)(upto - recl) : ring - at;

		pool_put_burst(w->pc, &ch->tx_buf[at], n);
		recl += n;
	}
	ch->tx_recl = recl;
}

/*
 * A signaled send completed: everything posted up to it is done, the send queue has room
 * again. The buffers stay in the ring of posted buffers, held for the next refill of the
 * peer channel (chan_refill takes them before the pool's: no copy into the worker's cache
 * and out again), at most tx_hold of them; older ones go back to the pool. Nothing is
 * held for a peer of another worker or a broken one (it would never take them).
 */
static void chan_tx_done(struct worker *w, struct channel *ch, const struct ibv_wc *wc)
{
	uint64_t end = (wc->wr_id & ~TX_TAG) + 1;
	const struct channel *peer = ch->peer;
	uint32_t hold = peer->w == w && !peer->broken ? ch->tx_hold : 0;

	if (wc->status != IBV_WC_SUCCESS) {
		/* Errors complete even unsignaled WRs: this one packet is lost. */
		ch->st.drops[DROP_TX_ERROR]++;
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			ch->broken = true;
	}
	if (end > ch->tx_head)
		end = ch->tx_head;
	if (end > ch->tx_tail)
		ch->tx_tail = end;
	if (ch->tx_tail - ch->tx_recl > hold)
		chan_tx_release(w, ch, ch->tx_tail - hold);
	ch->st.tx_completions++;
}

/* ---- the burst: what one pass over a channel's completions holds ---- */

/*
 * What a burst reads once rather than once per packet: the runtime features (relaxed
 * loads; a change applies from the next burst on) and the time. A local whose address
 * never leaves the inlined data path, so the compiler keeps it in registers or its own
 * stack slots: with -fno-strict-aliasing every store of the loop would otherwise force
 * reloads through w->br.
 */
struct burst {
	struct worker *w;
	struct bridge *br;
	struct pool *pool;
	struct region region;
	uint64_t now;
	int64_t drop_every;
	bool bridging;
	bool pgm_on;
	bool inspect; /* pgm_on or drop_every: the per-packet extras */
	/* Flows may be set (flow_set): no drop=N, and a PGM policy that forwards what is not
	 * PGM (rx_fast_run forwards it without asking). */
	bool flows_ok;
	/* bridging, peer_fast and flows_ok: the burst's receives go through rx_fast_run */
	bool flows_live;
	uint32_t pgm_malformed; /* rx_fast_run's counts, added to the channel's at the end */
	uint32_t pgm_not_pgm;
	bool check_own; /* the channel's side cannot block our own multicast */
	/* A capture takes this burst's receives (burst_capture_begin): its ring, else NULL. */
	struct cap_ring *cap;
	uint32_t cap_gen, cap_snap;
	/* Added to the channel's counters at the end of the burst. */
	uint32_t rx_errors, fwd_pkts;
	uint64_t rx_bytes;
	/*
	 * The peer channel (where a pair's packets go) when its send queue has room for the
	 * whole burst, nothing waits in its backlog and its chain has room for the whole
	 * burst too (peer_fast): then every send on it is chained without the per-packet
	 * checks of chan_send, with its chain length, head and signal count held here and
	 * written back at the end of the loop (burst_peer_end). Nothing else touches the
	 * peer's send queue during a burst: its completions are polled in its own bursts,
	 * hand-offs are drained between bursts.
	 */
	struct channel *peer;
	bool peer_fast;
	struct tx_slot *peer_slot; /* the next WR to chain: &peer->tt->tx[peer->nwr] (in its side's
				      templates) */
	uint32_t peer_to_signal;   /* posts until the next signaled one: sig_every - unsignaled */
	uint32_t peer_mask;	   /* peer->tx_mask */
	uint32_t *peer_ring;	   /* peer->tx_buf */
	struct pool_meta *meta;	   /* the pool's metadata array */
	uint64_t peer_head;
};

/*
 * Whether the peer can take the whole burst of n packets without a check: chan_send
 * chains a packet while sq_used < sq_depth, and every chained packet adds 2 to sq_used
 * (head and chain length), so n packets fit when sq_used + 2n <= sq_depth. The signal
 * countdown needs unsignaled < sig_every (what chan_post leaves). A pair belongs to one
 * worker; checked anyway, a peer of another worker gets its packets by hand-off.
 */
static inline void burst_peer_begin(struct burst *b, struct channel *peer, uint32_t n)
{
	b->peer = peer;
	b->peer_fast = peer->w == b->w && peer->bl_head == peer->bl_tail &&
		       peer->nwr + n <= BR_BURST && sq_used(peer) + 2 * n <= peer->sq_depth &&
		       peer->unsignaled < peer->sig_every;
	/*
	 * With peer_fast the burst chains on the peer's side's templates without chan_post,
	 * and without taking them (wr_tmpl.owner): no other chain is open there, since every
	 * chain is posted by the end of the burst, drain or hand-off drain that made it. Only
	 * a send of this burst on another channel there (burst_peer_yield) needs the owner.
	 */
	b->peer_slot = &peer->tt->tx[peer->nwr];
	b->peer_head = peer->tx_head;
	b->peer_to_signal = peer->sig_every - peer->unsignaled;
	b->peer_mask = peer->tx_mask;
	b->peer_ring = peer->tx_buf;
}

static inline void burst_peer_end(struct burst *b)
{
	if (b->peer_fast) {
		b->peer->nwr = (uint32_t)(b->peer_slot - b->peer->tt->tx);
		b->peer->tx_head = b->peer_head;
		b->peer->unsignaled = b->peer->sig_every - b->peer_to_signal;
	}
}

/*
 * The burst is about to send on a channel of its peer's worker and side other than the
 * peer (a group whose pair differs on the two sides): the peer's chain, in the side's
 * templates, is handed back (its length written back; chan_post posts it before it
 * takes the templates), and the rest of the burst sends through chan_send.
 */
static __attribute__((noinline, cold)) void burst_peer_yield(struct burst *b)
{
	burst_peer_end(b);
	b->peer->tt->owner = b->peer;
	b->peer_fast = false;
	b->flows_live = false;
}

/* chan_post on the peer under burst_peer_begin's guarantee (no flush, no room check). */
static inline __attribute__((always_inline)) void burst_peer_post(struct burst *b, uint32_t buf,
								  uintptr_t addr, uint32_t len,
								  bool has_imm, uint32_t imm,
								  struct ibv_ah *ah, uint32_t qkey)
{
	struct channel *out = b->peer;
	uint32_t slot = (uint32_t)(b->peer_slot++ - out->tt->tx);
	uint64_t head = b->peer_head++;
	unsigned int flags = 0;

	if (--b->peer_to_signal == 0) {
		flags = IBV_SEND_SIGNALED;
		b->peer_to_signal = out->sig_every;
	}
	send_wr_fill(out, slot, b->peer_ring, b->peer_mask, b->meta, head, buf, addr, len, has_imm,
		     imm, flags, ah, qkey);
	out->st.tx_pkts++;
	out->st.tx_bytes += len;
}

/*
 * The PGM stream table's key of a group (pgm/stream.h: opaque to it): the IPv4 address
 * (host order) of an IPv4 group; an IPv6 group on RoCE (address 0) its RoCE address's
 * two halves folded, with bit 63 set so that no IPv4 key equals it.
 */
static inline uint64_t group_pgm_key(const struct group *g)
{
	uint64_t hi, lo;

	if (__builtin_expect(g->addr != 0, 1))
		return ntohl(g->addr);
	memcpy(&hi, g->mgid[SIDE_ROCE].raw, 8);
	memcpy(&lo, g->mgid[SIDE_ROCE].raw + 8, 8);
	return (hi ^ lo ^ (lo >> 32)) | 1ull << 63;
}

/* ---- classification and the discard rules ---- */

/*
 * Whether the IPv4 address at a (network order) is a multicast one: 224.0.0.0/4, the top
 * 4 bits of its first byte.
 */
static inline bool ipv4_multicast(const uint8_t *a)
{
	return (a[0] & 0xf0) == INADDR_UNSPEC_GROUP >> 24;
}

/*
 * The group of MGID (hi, lo) (its two halves as stored in memory) on the channel's side,
 * through the channel's cache.
 */
static inline struct group *chan_group(struct channel *ch, uint64_t hi, uint64_t lo)
{
	struct gcache_ent *e = ch->glast;
	union ibv_gid gid;
	struct group *g;

	/*
	 * A filled entry has a group; a cleared one (chan_caches_check) holds MGID 0, which
	 * no packet carries (IB MGIDs start with 0xff, RoCE ones hold ::ffff).
	 */
	if (__builtin_expect(((e->mgid_hi ^ hi) | (e->mgid_lo ^ lo)) == 0, 1))
		return e->g;
	e = &ch->gcache[(uint32_t)((lo * FIB_HASH_MUL) >> 56) & (CH_GCACHE - 1)];
	if (e->g && e->mgid_hi == hi && e->mgid_lo == lo) {
		ch->glast = e;
		return e->g;
	}
	memcpy(gid.raw, &hi, 8);
	memcpy(gid.raw + 8, &lo, 8);
	g = group_lookup(ch->sd, &gid);
	if (g) {
		e->mgid_hi = hi;
		e->mgid_lo = lo;
		e->g = g;
		ch->glast = e;
	}
	return g;
}

/* IB: the network header is the GRH at offset 0. */
static inline __attribute__((always_inline)) struct group *
rx_classify_ib(struct burst *b, struct channel *ch, const struct ibv_wc *wc, const uint8_t *p,
	       struct src_addr *src, enum drop_reason *why)
{
	const struct ibv_grh *grh = (const struct ibv_grh *)p;
	const struct side_ctx *sd = ch->sd;
	uint64_t hi, lo;
	struct group *g;

	if (grh->dgid.raw[0] != IB_MGID_FIRST) {
		*why = DROP_UNICAST;
		return NULL;
	}
	memcpy(&src->hi, grh->sgid.raw, 8);
	memcpy(&src->lo, grh->sgid.raw + GID_LOW, 8);
	if (b->check_own && !memcmp(grh->sgid.raw, sd->gid.raw, 16) &&
	    fwd_own_qpn(sd, wc->src_qp)) {
		*why = DROP_OWN;
		return NULL;
	}
	/*
	 * The loop rule: a bridge sends on IB with hop limit BR_IB_MARKER_HOP_LIMIT (1, as
	 * the reference does), a value native senders do not use: perftest's UD AH has 255
	 * (perftest_resources.c ctx_modify_qp_to_rtr), rdma_cm's AH (mckey, middleware) and
	 * IPoIB take the MCMemberRecord's hop limit, which OpenSM sets to 0 for link-local
	 * groups and 255 for wider scopes (osm_prtn.c osm_prtn_add_mcgroup). So only the
	 * marker is a loop: a native sender with 0 or 255 is forwarded (docs/architecture.md,
	 * data path step 4). The reference dropped every non-zero hop limit, 255 included.
	 */
	if (grh->hop_limit == BR_IB_MARKER_HOP_LIMIT) {
		*why = DROP_LOOP;
		return NULL;
	}
	memcpy(&hi, grh->dgid.raw, 8);
	memcpy(&lo, grh->dgid.raw + GID_LOW, 8);
	g = chan_group(ch, hi, lo);
	if (!g) {
		uint32_t low;

		/* The same group address in another MGID format? */
		memcpy(&low, &grh->dgid.raw[12], 4);
		*why = group_lookup_addr(b->br, low) ||
				       group_lookup_addr(b->br, low | htonl(INADDR_UNSPEC_GROUP))
			       ? DROP_MGID_FORMAT
			       : DROP_UNKNOWN_GROUP;
		return NULL;
	}
	return g;
}

/*
 * Whether the IPv4 header at ip (20 bytes) has a correct header checksum (RFC 791: the
 * 16-bit ones' complement sum of the header, checksum included, is 0xffff).
 */
static bool ipv4_csum_ok(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i < sizeof(struct iphdr); i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/*
 * Whether a RoCEv2 receive's 40-byte header area holds an IPv6 header (true) or an IPv4
 * one at offset 20 (false; one that is not 0x45 there is then a bad header). The NIC does
 * not say which (the completion's sl is mlx5's packet type, not a verbs field), so the
 * bytes decide, as rdma-core's ibv_init_ah_from_wc does (libibverbs/verbs.c,
 * get_grh_header_version): version 6 in the first nibble and no IPv4 header of 5 words
 * with a valid checksum at offset 20 (bytes 0-19 of an IPv4 receive are undefined, so
 * they may start with 6 too; an IPv6 header's source address may hold 0x45 at its byte
 * 12: the checksum tells them apart). Called only when the header is not plainly IPv4.
 */
static __attribute__((noinline)) bool roce_hdr_is_ipv6(const uint8_t *p)
{
	const uint8_t *ip = p + BR_IPV4_OFF;

	if (p[0] >> 4 != IPV6_VERSION)
		return false; /* bad_header, unless 0x45 (not called then) */
	return ip[0] != IPV4_VER_IHL || !ipv4_csum_ok(ip);
}

/*
 * RoCEv2 over IPv6 (docs/architecture.md "RoCEv2 over IPv6"): the IPv6 header at offset
 * 0, laid out as a GRH. The rules of IPv4 with IPv6 addresses: the destination must be a
 * multicast address (ff00::/8); the source address (16 bytes) is the sender's key; own
 * packets: our RoCEv2 IPv6 address (global or link-local) and one of our QPNs; a --peer
 * IPv6 address; foreign_source outside the interface's IPv6 prefix (link-local sources
 * are on the link); the group by the destination address (its RoCE MGID). No hop-limit
 * rule, as IPv4 has no TTL rule: the bridge sends with the hop limit of an IPv4 join, 64
 * (the --peer list prevents loops). Out of line: IPv4's instructions stay as they were.
 */
static __attribute__((noinline)) struct group *
rx_classify_roce6(struct burst *b, struct channel *ch, const struct ibv_wc *wc, const uint8_t *p,
		  struct src_addr *src, enum drop_reason *why)
{
	const struct ip6_hdr *ip6 = (const struct ip6_hdr *)p;
	const struct bridge_cfg *cfg = &b->br->cfg;
	const struct side_ctx *sd = ch->sd;
	const uint8_t *sa = ip6->ip6_src.s6_addr;
	uint64_t hi, lo;
	struct group *g;

	if (!IN6_IS_ADDR_MULTICAST(&ip6->ip6_dst)) {
		*why = DROP_UNICAST;
		return NULL;
	}
	memcpy(&src->hi, sa, 8);
	memcpy(&src->lo, sa + 8, 8);
	if (b->check_own &&
	    ((sd->gid6_index >= 0 && !memcmp(sa, sd->gid6.raw, 16)) ||
	     (sd->gid6ll_index >= 0 && !memcmp(sa, sd->gid6ll.raw, 16))) &&
	    fwd_own_qpn(sd, wc->src_qp)) {
		*why = DROP_OWN;
		return NULL;
	}
	for (uint32_t i = 0; i < cfg->npeers6; i++) {
		if (!memcmp(cfg->peers6[i].raw, sa, 16)) {
			*why = DROP_PEER;
			return NULL;
		}
	}
	if ((sd->mask6[0] | sd->mask6[1]) && !cfg->allow_foreign &&
	    !IN6_IS_ADDR_LINKLOCAL(&ip6->ip6_src) &&
	    (((src->hi ^ sd->net6[0]) & sd->mask6[0]) | ((src->lo ^ sd->net6[1]) & sd->mask6[1]))) {
		*why = DROP_FOREIGN;
		return NULL;
	}
	memcpy(&hi, ip6->ip6_dst.s6_addr, 8);
	memcpy(&lo, ip6->ip6_dst.s6_addr + 8, 8);
	g = chan_group(ch, hi, lo);
	if (!g) {
		*why = DROP_UNKNOWN_GROUP;
		return NULL;
	}
	return g;
}

/* RoCEv2: the IPv4 header at offset 20. */
static inline __attribute__((always_inline)) struct group *
rx_classify_roce(struct burst *b, struct channel *ch, const struct ibv_wc *wc, const uint8_t *p,
		 struct src_addr *src, enum drop_reason *why)
{
	const struct bridge_cfg *cfg = &b->br->cfg;
	const struct side_ctx *sd = ch->sd;
	const uint8_t *ip = p + BR_IPV4_OFF;
	uint8_t mapped[16] = {0};
	uint32_t saddr, daddr;
	uint64_t hi, lo;
	struct group *g;

	/* Not plainly IPv4 (rdma-core's rule, roce_hdr_is_ipv6): an IPv6 header, or bad. */
	if (__builtin_expect(ip[0] != IPV4_VER_IHL || (p[0] >> 4) == IPV6_VERSION, 0)) {
		if (roce_hdr_is_ipv6(p))
			return rx_classify_roce6(b, ch, wc, p, src, why);
		if (ip[0] != IPV4_VER_IHL) {
			*why = DROP_BAD_HEADER;
			return NULL;
		}
	}
	if (!ipv4_multicast(ip + IPV4_DADDR)) {
		*why = DROP_UNICAST;
		return NULL;
	}
	memcpy(&saddr, ip + IPV4_SADDR, 4);
	/* ::ffff:a.b.c.d, assembled in registers. */
	mapped[10] = mapped[11] = 0xff;
	memcpy(mapped + 12, &saddr, 4);
	memcpy(&src->hi, mapped, 8);
	memcpy(&src->lo, mapped + 8, 8);
	if (saddr == sd->ipv4 && b->check_own && fwd_own_qpn(sd, wc->src_qp)) {
		*why = DROP_OWN;
		return NULL;
	}
	for (uint32_t i = 0; i < cfg->npeers; i++) {
		if (cfg->peers[i] == saddr) {
			*why = DROP_PEER;
			return NULL;
		}
	}
	if (sd->netmask && !cfg->allow_foreign && ((saddr ^ sd->ipv4) & sd->netmask)) {
		*why = DROP_FOREIGN;
		return NULL;
	}
	/* The group's MGID ::ffff:a.b.c.d. */
	memcpy(&daddr, ip + IPV4_DADDR, 4);
	memcpy(mapped + 12, &daddr, 4);
	memcpy(&hi, mapped, 8);
	memcpy(&lo, mapped + 8, 8);
	g = chan_group(ch, hi, lo);
	if (!g) {
		*why = DROP_UNKNOWN_GROUP;
		return NULL;
	}
	return g;
}

/*
 * The verdict on a received packet of side `side` (a constant: each side has its own copy
 * of the burst loop): the group to forward to, or a drop reason. Fills src, the sender's
 * address.
 */
/*
 * Why a group that is not forwarding from this side drops a packet: a port of either
 * side is down or removed (the control thread cleared the ready bits when it went),
 * or the group is not joined yet. Only on that drop path: the state is the control
 * thread's, read relaxed (a packet racing with a port event may get either reason).
 */
static __attribute__((noinline, cold)) enum drop_reason rx_not_joined(const struct channel *ch)
{
	if (__atomic_load_n(&ch->sd->state, __ATOMIC_RELAXED) != SIDE_UP ||
	    __atomic_load_n(&ch->peer->sd->state, __ATOMIC_RELAXED) != SIDE_UP)
		return DROP_SIDE_DOWN;
	return DROP_NOT_JOINED;
}

static inline __attribute__((always_inline)) struct group *
rx_classify(struct burst *b, struct channel *ch, const enum side side, const struct ibv_wc *wc,
	    const uint8_t *p, struct src_addr *src, enum drop_reason *why)
{
	struct group *g;

	if (!(wc->wc_flags & IBV_WC_GRH)) {
		*why = DROP_NO_GRH;
		return NULL;
	}
	if (side == SIDE_IB)
		g = rx_classify_ib(b, ch, wc, p, src, why);
	else
		g = rx_classify_roce(b, ch, wc, p, src, why);
	if (!g)
		return NULL;
	if (!group_dir_rx(g->dir, side)) {
		*why = DROP_SENDONLY_SIDE;
		return NULL;
	}
	if (!(atomic_load_explicit(&g->ready, memory_order_acquire) & (1u << side))) {
		*why = rx_not_joined(ch);
		return NULL;
	}
	if (!b->bridging) {
		*why = DROP_BRIDGING_OFF;
		return NULL;
	}
	return g;
}

/* ---- sender records: the channel's caches, then the table ---- */

static inline bool sender_is(const struct sender *s, uint32_t qpn, const struct src_addr *src)
{
	uint64_t hi, lo;

	memcpy(&hi, s->key.addr, 8);
	memcpy(&lo, s->key.addr + 8, 8);
	/* The three compares folded into one test. */
	return ((hi ^ src->hi) | (lo ^ src->lo) | (s->key.qpn ^ qpn)) == 0;
}

/* What the sender cache hashes of a source address: its two words folded. */
static inline uint64_t src_mix(const struct src_addr *src)
{
	return src->hi ^ src->lo;
}

/*
 * The set of a channel's sender cache that holds the sender of QPN qpn at the source
 * address of src_mix `mix`: 2 ways, most recent first.
 */
static inline struct sender **scache_set(struct channel *ch, uint32_t qpn, uint64_t mix)
{
	/* Multiplicative hash: only its top bits depend on every input bit. */
	uint64_t x = (mix ^ qpn) * FIB_HASH_MUL;

	return &ch->scache[(x >> ch->scache_shift) * 2];
}

/*
 * Not in the channel's sender cache: from the table (inserted if new), then cached. NULL
 * when the worker's slab is full (counted by sender_get).
 */
static __attribute__((noinline)) struct sender *rx_sender_miss(struct worker *w, struct channel *ch,
							       struct sender **set, uint32_t qpn,
							       const struct src_addr *src,
							       uint64_t now)
{
	struct sender_key sk;
	struct sender *s;

	sk.chan = (uint32_t)ch->side << 16 | ch->index;
	sk.qpn = qpn;
	memcpy(sk.addr, &src->hi, 8);
	memcpy(sk.addr + 8, &src->lo, 8);
	s = sender_get(w->br->senders, w->id, &sk, sender_hash(&sk), now);
	if (s) {
		set[1] = set[0];
		set[0] = s;
	}
	return s;
}

/*
 * The sender (qpn, src) of a channel: the previous packet's (streams come in runs), else
 * through the channel's 2-way cache, else from the table. A cached record is of this
 * channel, so the key's channel field needs no compare, and the cache index is a cheap
 * hash of its own (sender_hash is computed for the table only). Empty cache ways and an
 * unset prev_sender hold no_sender, so no NULL checks.
 */
static inline __attribute__((always_inline)) struct sender *
rx_sender_find(struct burst *b, struct channel *ch, uint32_t qpn, const struct src_addr *src)
{
	struct sender *s = ch->prev_sender, **set;

	if (__builtin_expect(sender_is(s, qpn, src), 1))
		return s;
	set = scache_set(ch, qpn, src_mix(src));
	s = set[0];
	if (!sender_is(s, qpn, src)) {
		s = set[1];
		if (sender_is(s, qpn, src)) {
			set[1] = set[0]; /* most recent first */
			set[0] = s;
		} else {
			s = rx_sender_miss(b->w, ch, set, qpn, src, b->now);
			if (!s)
				return NULL;
		}
	}
	ch->prev_sender = s;
	return s;
}

/* Count a packet of `len` bytes to its sender; the sender, NULL when not recorded. */
static inline __attribute__((always_inline)) struct sender *
rx_sender(struct burst *b, struct channel *ch, uint32_t qpn, const struct src_addr *src,
	  uint32_t len)
{
	struct sender *s = rx_sender_find(b, ch, qpn, src);

	if (!s)
		return NULL;
	s->pkts++;
	s->bytes += len;
	s->last_ns = b->now;
	return s;
}

/* Drop the caches of a channel when the tables behind them changed. */
static inline void chan_caches_check(struct worker *w, struct channel *ch)
{
	uint64_t ge = atomic_load_explicit(&w->br->groups_epoch, memory_order_acquire);
	uint64_t se = atomic_load_explicit(&w->br->senders->epoch, memory_order_acquire);

	if (ge != ch->gcache_epoch) {
		memset(ch->gcache, 0, sizeof(ch->gcache));
		ch->gcache_epoch = ge;
		flows_drop(ch);
	}
	if (se != ch->scache_epoch) {
		scache_clear(ch);
		ch->scache_epoch = se;
		flows_drop(ch);
	}
	/* A group's ready bits, role or address handle changed (bridge_flows_stale). */
	uint64_t fe = atomic_load_explicit(&w->br->flows_epoch, memory_order_acquire);

	if (fe != ch->flows_epoch) {
		ch->flows_epoch = fe;
		flows_drop(ch);
	}
}

/* ---- PGM inspection ---- */

/*
 * PGM inspection of a payload about to be forwarded: well-formed packets are accounted
 * to their stream (TSI + group; this worker owns both sides of the group, so it is the
 * stream's only writer). Returns true when the packet must be dropped: a loop (the
 * stream was first seen on the other side), an unknown option asking for discard, a
 * duplicate under pgm_dups=drop, or a bad checksum / malformed payload under the strict
 * policy. Never modifies the payload. For a payload pgm_precheck passed (rx_pgm
 * checks that first).
 */
static __attribute__((noinline)) bool rx_pgm_inspect(struct bridge *br, struct channel *ch,
						     const struct group *g, const uint8_t *payload,
						     uint32_t len, uint64_t now)
{
	unsigned policy = (unsigned)atomic_load_explicit(&br->pgm_policy, memory_order_relaxed);
	struct pgm_stream_key key;
	struct pgm_packet pkt;
	enum pgm_verdict v;
	enum pgm_result r;

	/*
	 * Structure first: a payload that is not PGM is rejected without a pass over its
	 * bytes. The result for a malformed payload does not depend on the checksum (only
	 * pkt.csum does, unused here); a well-formed one then gets the verdict pgm_parse
	 * would have given with the checksum (pgm.h: enum pgm_csum_status, PGM_BAD_CHECKSUM).
	 */
	r = pgm_parse(payload, len, PGM_PARSE_NO_CSUM, &pkt);
	if (pgm_result_malformed(r)) {
		ch->st.pgm_malformed++;
		return pgm_result_drop(r, policy);
	}
	if (!pkt.checksum) {
		pkt.csum = PGM_CSUM_ABSENT;
	} else if (pgm_checksum_verify(payload, len)) {
		pkt.csum = PGM_CSUM_GOOD;
	} else {
		pkt.csum = PGM_CSUM_BAD;
		pkt.result = r = PGM_BAD_CHECKSUM;
	}
	ch->st.pgm_pkts++;
	if (r == PGM_BAD_CHECKSUM)
		ch->st.pgm_bad_csum++;
	pgm_stream_key_from_packet(&key, &pkt, group_pgm_key(g));
	if (!pgm_stream_update(br->pgm, &key, ch->side, &pkt, now, &v) &&
	    pgm_verdict_drop(v, (enum pgm_dup_policy)atomic_load_explicit(&br->pgm_dups,
									  memory_order_relaxed)))
		return true;
	return pgm_result_drop(r, policy);
}

/* rx_pgm_inspect behind the cheap test: what is surely not PGM is counted, not parsed. */
static inline bool rx_pgm(struct bridge *br, struct channel *ch, const struct group *g,
			  const uint8_t *payload, uint32_t len, uint64_t now)
{
	enum pgm_shape shape = pgm_precheck(payload, len);

	if (shape) {
		ch->st.pgm_not_pgm += shape == PGM_SHAPE_NOT_PGM;
		ch->st.pgm_malformed += shape == PGM_SHAPE_MALFORMED;
		/* pgm_result_drop of any malformed result */
		return (atomic_load_explicit(&br->pgm_policy, memory_order_relaxed) &
			PGM_DROP_MALFORMED) != 0;
	}
	return rx_pgm_inspect(br, ch, g, payload, len, now);
}

/* ---- flows: the fast path's memory of what passed the rules ---- */

/*
 * The flow set (CH_FLOW_WAYS flows) of a packet's addresses. IB: x the low half of the
 * source GID (the port GUID), y the low half of the MGID (the group bits); RoCE IPv6 the
 * same of its source and destination addresses; RoCE IPv4: x the source and destination
 * IPv4 addresses, y 0. x is turned by 32 bits before the two
 * are mixed, so that sources and groups numbered alike (port GUIDs and group addresses
 * that count up together) do not cancel out; the product's top bits pick the set
 * (Fibonacci hashing). One rotate, one xor and one multiply: every packet pays them.
 */
static inline __attribute__((always_inline)) struct chan_flow *
flow_slot(struct chan_flow *flows, uint64_t x, uint64_t y)
{
	uint64_t h = ((x << 32 | x >> 32) ^ y) * FIB_HASH_MUL;

	return &flows[(h >> (64 - CH_FLOWS_BITS)) * CH_FLOW_WAYS];
}

_Static_assert(CH_FLOW_WAYS == 2, "flow_find_ib, flow_find_roce and flow_pick look at two ways");

/*
 * The flow of set `set` that flow_set fills for the addresses key (IB and RoCE IPv6: 4
 * words, klen 32; RoCE IPv4: key[0], klen 8): the way holding these addresses already,
 * set or not, of any kind (so that the way a lookup of this packet matches first is the
 * one that gets its flow, and a key is in one way at most), else an empty one, else the
 * one set longer ago. IPv4 and IPv6 flows share a channel's sets; a lookup that matches
 * a flow of the other kind finds its limit 0 (lim, lim6) and goes to the full path,
 * which then sets the flow of the packet's kind in that way.
 */
static struct chan_flow *flow_pick(struct chan_flow *set, const uint64_t *key, size_t klen)
{
	for (unsigned k = 0; k < CH_FLOW_WAYS; k++)
		if (!memcmp(set[k].key, key, klen))
			return &set[k];
	if (!(set[0].lim | set[0].lim6))
		return &set[0];
	if (!(set[1].lim | set[1].lim6))
		return &set[1];
	return set[0].gen < set[1].gen ? &set[0] : &set[1];
}

/*
 * Whether a RoCE receive's header area is one rx_fast_run takes as IPv6: version 6 in
 * the first nibble and no 0x45 at byte 20. That is roce_hdr_is_ipv6's verdict without
 * its checksum: an area with both (an IPv6 source address whose byte 12 is 0x45, or an
 * IPv4 header after undefined bytes starting with 6) goes to the full path each time,
 * which decides by the checksum, and gets no flow.
 */
static inline __attribute__((always_inline)) bool roce_fast_ipv6(const uint8_t *p)
{
	return p[0] >> 4 == IPV6_VERSION && p[BR_IPV4_OFF] != IPV4_VER_IHL;
}

/*
 * Note the flow of a packet forwarded to the peer's fast path, in its set (replacing what
 * its way held; the flows of other addresses stay). Not for a packet that shares our own
 * source address (own-packet filtering looks at its QPN each time) or that has no sender
 * record.
 */
static inline __attribute__((always_inline)) void
flow_set(struct burst *b, struct channel *ch, const enum side side, const uint8_t *p,
	 const struct src_addr *src, struct group *g, struct sender *s, struct ibv_ah *ah,
	 uint32_t qkey, uint32_t mtu)
{
	const struct side_ctx *sd = ch->sd;
	struct chan_flow *f;
	uint64_t key[4] = {0};
	bool v6 = false;

	/* A sender record (the worker's slab may be full) and a burst whose features allow
	 * flows; an MTU of 2^32 - 1 would leave no room for lim's + 1 (no fabric has one). */
	if (!s || !b->flows_ok || mtu == UINT32_MAX)
		return;
	if (side == SIDE_IB) {
		if (b->check_own && !memcmp(p + GRH_SGID, sd->gid.raw, 16))
			return;
		memcpy(key, p + GRH_SGID, 32); /* the source GID and the MGID */
		f = flow_pick(flow_slot(ch->flows, key[1], key[3]), key, 32);
	} else if (p[0] >> 4 == IPV6_VERSION) {
		/* RoCEv2 over IPv6 (rx_classify_roce6 passed it): keyed as IB's flows, by the
		 * source and destination addresses, which the IPv6 header holds where the GRH
		 * holds SGID and DGID. An area rx_fast_run would not take as IPv6 (0x45 at
		 * byte 20: IPv6 or IPv4, by the checksum) gets no flow; nor one from our own
		 * IPv6 addresses (own-packet filtering looks at the QPN each time). */
		if (!roce_fast_ipv6(p))
			return;
		if (b->check_own &&
		    ((sd->gid6_index >= 0 && !memcmp(p + GRH_SGID, sd->gid6.raw, 16)) ||
		     (sd->gid6ll_index >= 0 && !memcmp(p + GRH_SGID, sd->gid6ll.raw, 16))))
			return;
		memcpy(key, p + GRH_SGID, 32);
		f = flow_pick(flow_slot(ch->flows, key[1], key[3]), key, 32);
		v6 = true;
	} else {
		uint32_t saddr;

		memcpy(&saddr, p + BR_IPV4_OFF + IPV4_SADDR, 4);
		if (b->check_own && saddr == sd->ipv4)
			return;
		memcpy(&key[0], p + BR_IPV4_OFF + IPV4_SADDR, 8);
		f = flow_pick(flow_slot(ch->flows, key[0], 0), key, 8);
	}
	/* All 32 bytes: an IPv4 flow's key[1..3] are 0, not what an earlier flow of the way
	 * left there. */
	memcpy(f->key, key, 32);
	f->src = *src;
	f->mix = src_mix(src);
	/* A new generation: the qcache entries of earlier flows no longer match. */
	if (++ch->flow_gen == 0) {
		memset(ch->qcache, 0, ((size_t)ch->qcache_mask + 1) * sizeof(*ch->qcache));
		ch->flow_gen = 1;
	}
	f->gen = (uint64_t)ch->flow_gen << 32;
	f->g = g;
	f->s = s;
	f->ah = ah;
	f->qkey = qkey;
	f->lim = v6 ? 0 : mtu + 1;
	f->lim6 = v6 ? mtu + 1 : 0;
}

/*
 * Whether the IB packet at p has flow f's source GID and MGID, 16 bytes at a time
 * (unaligned vector loads: memcpy into a vector goes through the stack with gcc 12). With
 * SSE2 (every x86-64) a byte compare and one movemask; elsewhere the lanes' differences
 * ORed.
 */
static inline __attribute__((always_inline)) bool ib_flow_match(const uint8_t *p,
								const struct chan_flow *f)
{
#ifdef __SSE2__
	typedef char i8x16 __attribute__((vector_size(16)));
	typedef char i8x16u __attribute__((vector_size(16), aligned(1)));
	i8x16 m = (i8x16)((*(const i8x16u *)(p + GRH_SGID) == (i8x16)f->kv[0]) &
			  (*(const i8x16u *)(p + GRH_DGID) == (i8x16)f->kv[1]));

	return __builtin_ia32_pmovmskb128(m) == 0xffff;
#else
	u64x2 e = (*(const u64x2u *)(p + GRH_SGID) ^ f->kv[0]) |
		  (*(const u64x2u *)(p + GRH_DGID) ^ f->kv[1]);

	return (e[0] | e[1]) == 0;
#endif
}

/* What the lookups return for addresses no flow holds: lim 0, every length fails. */
static struct chan_flow flow_none;

/*
 * The flow holding the IB packet's source GID and MGID (or a RoCEv2 over IPv6 packet's
 * source and destination addresses, at the same offsets): way 0 of their set, else way 1,
 * else flow_none. It may be one not set (lim 0): the caller's length check turns both
 * away. The addresses are read from the packet here (not passed in registers), so that
 * the caller's loop keeps nothing of them.
 */
static inline __attribute__((always_inline)) struct chan_flow *
flow_find_ib(struct chan_flow *flows, const uint8_t *p)
{
	struct chan_flow *e;
	uint64_t gx, dx;

	memcpy(&gx, p + GRH_SGID + GID_LOW, 8);
	memcpy(&dx, p + GRH_DGID + GID_LOW, 8);
	e = flow_slot(flows, gx, dx);
	if (__builtin_expect(!ib_flow_match(p, e), 0)) {
		/* Way 1 loads the addresses again (an empty asm "changes" p): kept in vector
		 * registers for it, the first compare would copy them first. */
		__asm__("" : "+r"(p));
		e++;
		if (!ib_flow_match(p, e))
			return &flow_none;
	}
	return e;
}

/* The same for a RoCE packet: its source and destination IPv4 addresses. */
static inline __attribute__((always_inline)) struct chan_flow *
flow_find_roce(struct chan_flow *flows, const uint8_t *p)
{
	struct chan_flow *e;
	uint64_t k;

	memcpy(&k, p + BR_IPV4_OFF + IPV4_SADDR, 8);
	e = flow_slot(flows, k, 0);
	if (__builtin_expect(e->key[0] != k, 0)) {
		e++;
		if (e->key[0] != k)
			return &flow_none;
	}
	return e;
}

/* ---- the fast path: runs of packets of known flows ---- */

/*
 * rx_fast_run's send of buffer buf (payload at p + BR_GRH_LEN, len bytes) of flow f into
 * WR t, the run's k-th (for imm_mask), counted to f's group (and to *bytes, the run's
 * total for the channels): send_wr_fill's fast half. Opcode (IBV_WR_SEND) and flags stay
 * the template's, but for immediate data (the slot goes into tt->dirty at the end of the
 * run).
 */
static inline __attribute__((always_inline)) void
fast_send(struct tx_slot *t, uint32_t k, uint32_t *imm_mask, const struct ibv_wc *c,
	  const uint8_t *p, uint32_t len, const struct chan_flow *f, const enum side side,
	  uint64_t *bytes, uint64_t wid, uint32_t *ring, uint32_t mask, struct pool_meta *meta,
	  uint32_t buf)
{
	struct group *g = f->g;

	g->fwd_pkts[side]++;
	g->fwd_bytes[side] += len;
	*bytes += len;
	if (__builtin_expect(c->wc_flags & IBV_WC_WITH_IMM, 0)) {
		t->wr.opcode = IBV_WR_SEND_WITH_IMM;
		t->wr.imm_data = c->imm_data;
		*imm_mask |= 1u << k;
	}
	t->sge.addr = (uintptr_t)p + BR_GRH_LEN;
	t->sge.length = len;
	t->wr.wr_id = wid;
	t->wr.wr.ud.ah = f->ah;
	t->wr.wr.ud.remote_qkey = f->qkey;
	ring[wid & mask] = buf;
	pool_meta_state(meta, buf, POOL_TX);
}

/* Why rx_fast_run's inner loop stopped at a completion. */
enum run_stop {
	RUN_END,   /* every completion done */
	RUN_OTHER, /* not the fast path's: the caller's (chan_tx_done, chan_rx) */
	RUN_ODATA, /* counted to its sender; may be the next ODATA of a stream */
	RUN_PGM,   /* counted to its sender; may be PGM: rx_pgm_inspect */
};

/*
 * Forward the receives wc[i], wc[i + 1], ... whose addresses are those of a flow of the
 * channel to the peer, without the table lookups and rule checks (the flow passed them),
 * in a loop of its own that holds the peer's chain position in registers. A packet that
 * may be PGM gets the PGM inspection here (rx_pgm_inspect), and is dropped here when its
 * verdict says so (into fl). Stops, having changed nothing for it, at the first
 * completion that is anything else (a send completion, an error, no flow, a sender not in
 * the caches, one too big): the caller hands that one to chan_tx_done or chan_rx.
 * Returns its index (n: all done). pgm_on: the burst's PGM inspection, a constant (the
 * caller has a copy of the loop for each value). The sends are chained without their
 * signal flag; the run's signaled ones are flagged after the loop. The inner loop calls
 * no function: a packet that needs one (the PGM stream shortcut, the full inspection, a
 * drop into fl) leaves it and is finished in the outer loop, so that the inner one can
 * keep its values in the registers a call would clobber.
 */
static inline __attribute__((always_inline)) int
rx_fast_run(struct burst *b, struct channel *ch, const enum side side, const bool pgm_on,
	    const struct ibv_wc *wc, int i, int n, struct freelist *fl)
{
	const struct region r = b->region;
	const struct ibv_wc *c = &wc[i], *const end = &wc[n];
	struct chan_flow *const flows = ch->flows, *f = &flow_none;
	struct tx_slot *t = b->peer_slot, *const t0 = t;
	/* The WR id of the next send: the tag and the ring position (mask < TX_TAG). */
	uint64_t wid = TX_TAG | b->peer_head;
	uint32_t *ring = b->peer_ring, mask = b->peer_mask, pgm_next = 0;
	/* Counts by enum pgm_shape (what pgm_precheck refused), one add per packet. */
	uint32_t shapes[3] = {0, 0, 0};
	uint32_t imm_mask = 0; /* sends with immediate data, bit k for t0[k] */
	uint64_t bytes = 0;    /* of the run's sends */
	struct pool_meta *meta = b->meta;
	const uint64_t now = b->now;

	for (;;) {
		enum run_stop why = RUN_END;
		uint32_t buf = 0, len = 0, qpn;
		const uint8_t *p = NULL;
		struct sender *s;
		enum pgm_shape shape;

		for (; c < end; c++) {
			buf = (uint32_t)c->wr_id;
			why = RUN_OTHER;
			/* A send completion, an error, or no GRH: one test for the last two. */
			if (__builtin_expect((c->wr_id & TX_TAG) ||
						     (c->status | (~c->wc_flags & IBV_WC_GRH)) != 0,
					     0))
				break;
			len = c->byte_len - BR_GRH_LEN;
			p = region_data(&r, buf);
			if (side == SIDE_IB) {
				if (p[GRH_HOP_LIMIT] == BR_IB_MARKER_HOP_LIMIT) /* the loop marker */
					break;
				f = flow_find_ib(flows, p);
			} else if (__builtin_expect(p[BR_IPV4_OFF] != IPV4_VER_IHL ||
							    p[0] >> 4 == IPV6_VERSION,
						    0)) {
				/*
				 * Not plainly IPv4: RoCEv2 over IPv6 (roce_fast_ipv6) looked up
				 * as IB's flows are, by the 32 address bytes at 8-39, with the
				 * IPv6 flows' limit; anything else to chan_rx. Out of the IPv4
				 * packet's way: its instructions stay as they were.
				 */
				if (!roce_fast_ipv6(p))
					break;
				f = flow_find_ib(flows, p);
				if (len >= f->lim6)
					break;
				goto flow_found;
			} else {
				f = flow_find_roce(flows, p);
			}
			/* No flow (lim 0: none set, or an IPv6 flow), or too big for the other
			 * side; a byte_len under the 40-byte header area wraps around and fails
			 * too. */
			if (len >= f->lim)
				break;
flow_found:
			qpn = c->src_qp;
			s = f->s;
			if (s->key.qpn != qpn) {
				/* Another sender of the flow's source: by QPN, else the 2-way
				 * cache. */
				struct qcache_ent *q = &ch->qcache[qpn & ch->qcache_mask];

				if (q->tag == (f->gen | qpn)) {
					s = q->s;
				} else {
					struct sender **set = scache_set(ch, qpn, f->mix),
						      *x = set[0];

					if (!sender_is(x, qpn, &f->src)) {
						x = set[1];
						if (!sender_is(x, qpn, &f->src))
							break; /* chan_rx looks it up */
						set[1] = set[0];
						set[0] = x;
					}
					q->tag = f->gen | qpn;
					q->s = x;
					s = x;
				}
				/* The flow's sender from here on: a run of this sender's packets
				 * finds it at the first compare. */
				f->s = s;
			}
			/* No way back to chan_rx from here: the packet is counted to its sender. */
			s->pkts++;
			s->bytes += len;
			s->last_ns = now;
			/*
			 * PGM inspection on: what pgm_precheck refuses is counted (not PGM, or
			 * malformed) and forwarded, as rx_pgm would (flows_ok: the policy
			 * forwards it); the rest goes to the outer loop. The type and options
			 * are tested first, whatever len says (the buffer holds POOL_BUF_MIN
			 * bytes): the usual payload is turned away in one test.
			 */
			if (pgm_on) {
				if (pgm_get16(p + BR_GRH_LEN + PGM_OFF_TYPE) == PGM_TYPE_ODATA
											<< 8 &&
				    pgm_stream_odata_plain(p + BR_GRH_LEN, len)) {
					why = RUN_ODATA;
					break;
				}
				shape = pgm_precheck(p + BR_GRH_LEN, len);
				if (shape == PGM_SHAPE_MAYBE) {
					why = RUN_PGM;
					break;
				}
				shapes[shape]++;
			}
			fast_send(t, (uint32_t)(t - t0), &imm_mask, c, p, len, f, side, &bytes, wid,
				  ring, mask, meta, buf);
			t++;
			wid++;
			why = RUN_END;
		}
		if (why <= RUN_OTHER)
			break;
		/*
		 * Packet c of flow f, counted to its sender, needs a call: the next ODATA of
		 * its stream (the shortcut updates the stream), else what pgm_precheck says,
		 * else the full inspection (it updates the packet's stream), which may drop it.
		 */
		if (why == RUN_ODATA) {
			if (pgm_stream_odata_next(b->br->pgm, &f->pgm, p + BR_GRH_LEN, len,
						  group_pgm_key(f->g), side, now)) {
				pgm_next++; /* PGM_OK, passed */
				goto send;
			}
			shape = pgm_precheck(p + BR_GRH_LEN, len);
			if (shape != PGM_SHAPE_MAYBE) {
				shapes[shape]++;
				goto send;
			}
		}
		if (rx_pgm_inspect(b->br, ch, f->g, p + BR_GRH_LEN, len, now)) {
			b->rx_bytes += len;
			ch->st.drops[DROP_PGM]++;
			fl_put(b->w, fl, buf);
			c++;
			continue;
		}
send:
		fast_send(t, (uint32_t)(t - t0), &imm_mask, c, p, len, f, side, &bytes, wid, ring,
			  mask, meta, buf);
		t++;
		wid++;
		c++;
	}
	/*
	 * Signal one send in sig_every, counting on from where the peer's count stood: the
	 * run's sends to_signal - 1, + sig_every, ... get the flag (and tt->dirty).
	 */
	{
		struct channel *out = b->peer;
		uint32_t cnt = (uint32_t)(t - t0), to_signal = b->peer_to_signal;

		if (__builtin_expect(imm_mask != 0, 0))
			out->tt->dirty |= imm_mask << (t0 - out->tt->tx);

		if (cnt >= to_signal) {
			uint32_t every = out->sig_every, k;

			for (k = to_signal - 1; k < cnt; k += every) {
				uint32_t slot = (uint32_t)(t0 + k - out->tt->tx);

				t0[k].wr.send_flags = IBV_SEND_SIGNALED;
				out->tt->dirty |= 1u << slot;
			}
			to_signal = every - (cnt - to_signal) % every;
		} else {
			to_signal -= cnt;
		}
		b->peer_to_signal = to_signal;
		/* The channels' counts of the run's sends (the groups' are counted per send). */
		b->rx_bytes += bytes;
		b->fwd_pkts += cnt;
		out->st.tx_pkts += cnt;
		out->st.tx_bytes += bytes;
	}
	b->peer_slot = t;
	b->peer_head = wid & ~TX_TAG;
	b->pgm_malformed += shapes[PGM_SHAPE_MALFORMED];
	b->pgm_not_pgm += shapes[PGM_SHAPE_NOT_PGM];
	ch->st.pgm_pkts += pgm_next;
	return (int)(c - wc);
}

/* ---- capture ---- */

/*
 * A capture is running (bridge->cap_gen): take this burst's receives if the capture
 * wants the channel's side. The flow fast path is off for the burst (flows_ok): every
 * packet goes through chan_rx, where its verdict is known. So a capture costs the full
 * path; no capture costs one test per burst and one per chan_rx.
 */
static __attribute__((noinline)) void burst_capture_begin(struct burst *b, struct worker *w,
							  enum side side, uint32_t gen)
{
	/* Pairs with the control thread's rcu_assign_pointer (control/capture.c); a ring
	 * unpublished at a stop is freed after a grace period, so the burst may use it. */
	struct cap_ring *ring = rcu_dereference(w->cap);

	if (!ring ||
	    !(atomic_load_explicit(&b->br->cap_sides, memory_order_relaxed) & (1u << side)))
		return;
	b->cap = ring;
	b->cap_gen = gen;
	b->cap_snap = atomic_load_explicit(&b->br->cap_snap, memory_order_relaxed);
	b->flows_ok = false;
}

/* Copy a received packet into the capture ring; the record, NULL when the ring is full. */
static __attribute__((noinline)) struct cap_rec *
rx_capture(struct burst *b, struct channel *ch, const struct ibv_wc *wc, const uint8_t *p)
{
	struct cap_rec *r = cap_ring_reserve(b->cap);
	uint32_t n = wc->byte_len, max = BR_GRH_LEN + b->cap_snap;

	if (!r)
		return NULL;
	if (n > max)
		n = max;
	if (n > b->cap->data_max)
		n = b->cap->data_max;
	r->ts_ns = b->now;
	r->gen = b->cap_gen;
	r->src_qp = wc->src_qp;
	r->byte_len = wc->byte_len;
	r->caplen = n;
	r->imm = wc->imm_data;
	r->has_imm = (wc->wc_flags & IBV_WC_WITH_IMM) != 0;
	r->slid = wc->slid;
	r->side = (uint8_t)ch->side;
	r->chan = ch->index;
	memcpy(r->data, p, n);
	return r;
}

/* Publish a captured packet's record with its verdict, if the capture's group filter
 * wants its group g (NULL: none found). */
static __attribute__((noinline)) void rx_capture_done(struct burst *b, struct cap_rec *r,
						      const struct group *g, enum drop_reason why)
{
	uint32_t want = atomic_load_explicit(&b->br->cap_group, memory_order_relaxed);
	const struct group *wg = atomic_load_explicit(&b->br->cap_gptr, memory_order_relaxed);

	if ((want && (!g || g->addr != want)) || (wg && g != wg))
		return; /* not taken: the record is written over by the next one */
	r->group = g ? g->addr : 0;
	r->verdict = (uint8_t)why;
	cap_ring_commit(b->cap);
}

/* ---- the full path: one receive through every rule ---- */

/* Whether chan_send will drop (DROP_TX_FULL) a packet on `out` now. */
static inline bool chan_send_drops(const struct channel *out)
{
	return !(sq_used(out) < out->sq_depth && out->bl_tail == out->bl_head) &&
	       out->bl_tail - out->bl_head > out->bl_mask;
}

/* One receive completion on a channel of side `side`. */
static inline __attribute__((always_inline)) void
chan_rx(struct burst *b, struct channel *ch, const enum side side, const struct ibv_wc *wc,
	struct freelist *fl)
{
	struct worker *w = b->w;
	uint32_t buf = (uint32_t)wc->wr_id;
	const uint8_t *p = region_data(&b->region, buf);
	enum drop_reason why = DROP_NREASONS;
	struct cap_rec *cr = NULL;
	struct src_addr src;
	struct channel *out;
	struct sender *s;
	struct ibv_ah *ah;
	struct group *g;
	uint32_t len;

	if (__builtin_expect(wc->status != IBV_WC_SUCCESS, 0)) {
		b->rx_errors++;
		ch->st.drops[DROP_RX_ERROR]++;
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			ch->broken = true;
		fl_put(w, fl, buf);
		return;
	}
	len = wc->byte_len - BR_GRH_LEN;
	b->rx_bytes += len;
	if (__builtin_expect(b->cap != NULL, 0))
		cr = rx_capture(b, ch, wc, p);
	g = rx_classify(b, ch, side, wc, p, &src, &why);
	if (!g)
		goto drop;
	s = rx_sender(b, ch, wc->src_qp, &src, len);
	if (__builtin_expect(b->inspect, 0)) {
		if (b->pgm_on && rx_pgm(b->br, ch, g, p + BR_GRH_LEN, len, b->now)) {
			why = DROP_PGM;
			goto drop;
		}
		if (b->drop_every > 0 && ++w->drop_nth % (uint64_t)b->drop_every == 0) {
			why = DROP_INJECTED;
			goto drop;
		}
	}
	out = g->out_chan[!side];
	if (__builtin_expect(len > out->sd->mtu, 0)) {
		/* The other fabric's MTU is smaller: a UD message cannot be fragmented. */
		why = DROP_TOO_BIG;
		goto drop;
	}
	if (__builtin_expect(atomic_load_explicit(&g->ready, memory_order_relaxed) & GROUP_STANDBY,
			     0)) {
		/* A standby partition: what this bridge would have forwarded, counted (not
		 * captured: a capture record's verdict is forwarded or a drop reason). */
		ch->st.standby++;
		fl_put(w, fl, buf);
		return;
	}
	/* The control thread clears the ready bit before the AH when a side leaves: a
	 * packet classified just before may find no AH (retired AHs stay valid until a
	 * grace period has passed, so one loaded here is safe to post). */
	ah = atomic_load_explicit(&g->ah_out[!side], memory_order_relaxed);
	if (__builtin_expect(!ah, 0)) {
		why = rx_not_joined(ch);
		goto drop;
	}
	if (__builtin_expect(out->w != w, 0)) {
		if (!fwd_handoff(w, out, buf, len, wc->wc_flags & IBV_WC_WITH_IMM, wc->imm_data, ah,
				 g->qkey_out[!side])) {
			why = DROP_TX_FULL; /* the other worker's hand-off ring is full */
			goto drop;
		}
		ch->st.handoff_out++;
		g->fwd_pkts[side]++;
		g->fwd_bytes[side] += len;
		b->fwd_pkts++;
		goto forwarded;
	}
	g->fwd_pkts[side]++;
	g->fwd_bytes[side] += len;
	b->fwd_pkts++;
	if (__builtin_expect(out == b->peer && b->peer_fast, 1)) {
		burst_peer_post(b, buf, (uintptr_t)p + BR_GRH_LEN, len,
				wc->wc_flags & IBV_WC_WITH_IMM, wc->imm_data, ah,
				g->qkey_out[!side]);
		flow_set(b, ch, side, p, &src, g, s, ah, g->qkey_out[!side], out->sd->mtu);
		goto forwarded;
	}
	/* out is not the peer here (or the peer is not fast), and is of this worker and of
	 * the peer's side: with a fast peer, the templates are the peer's. */
	if (__builtin_expect(b->peer_fast, 0))
		burst_peer_yield(b);
	if (__builtin_expect(cr != NULL, 0) && chan_send_drops(out))
		why = DROP_TX_FULL; /* counted by chan_send */
	chan_send(w, b->pool, out, fl, buf, (uintptr_t)p + BR_GRH_LEN, len,
		  wc->wc_flags & IBV_WC_WITH_IMM, wc->imm_data, ah, g->qkey_out[!side], b->now);
forwarded:
	if (__builtin_expect(cr != NULL, 0))
		rx_capture_done(b, cr, g, why);
	return;
drop:
	if (__builtin_expect(cr != NULL, 0))
		rx_capture_done(b, cr, g, why);
	ch->st.drops[why]++;
	fl_put(w, fl, buf);
}

/* ---- receive refill ---- */

/* Point receive WRs 0..n-1 at buffers idx[] and record them as posted. */
static inline void chan_rwr_fill(struct channel *ch, struct pool *pool, const uint32_t *idx,
				 uint32_t n)
{
	struct region r = region_of(pool);
	struct pool_meta *meta = pool_meta_array(pool);
	struct ibv_recv_wr *wr = ch->tt->rwr;
	struct ibv_sge *sge = ch->tt->rsge;
	const uint32_t *end = idx + n;

	/* Unrolled: the loop's own instructions are a third of its cost otherwise. */
#pragma GCC unroll 4
	for (; idx < end; idx++, wr++, sge++) {
		uint32_t buf = *idx;

		sge->addr = (uintptr_t)region_data(&r, buf);
		wr->wr_id = buf;
		pool_meta_state(meta, buf, POOL_RX);
	}
}

/*
 * Post receives until the receive queue is full again, in chains: first the buffers the
 * peer channel holds (its sends' buffers, chan_tx_done), then the pool's. The first call
 * on a channel also writes its WR templates (chan_prepare): bridge setup refills every
 * channel before any packet flows.
 */
void chan_refill(struct worker *w, struct channel *ch)
{
	struct ibv_recv_wr *bad;
	uint32_t tmp[BR_BURST];
	struct pool *pool = w->br->pool;
	struct channel *src = ch->peer;
	struct rxq *rq = ch->rq;
	struct ibv_recv_wr *rwr;

	if (__builtin_expect(!ch->prepared, 0))
		chan_prepare(ch);
	rwr = ch->tt->rwr;
	while (rq->posted < rq->depth && !ch->broken) {
		uint32_t want = rq->depth - rq->posted, got;
		/* Only a peer of this worker holds buffers for us (chan_tx_done); another
		 * worker's ring positions are that worker's to read. */
		uint64_t held = src->w == w ? src->tx_tail - src->tx_recl : 0;
		const uint32_t *idx;
		bool pooled = false;

		if (want > BR_BURST)
			want = BR_BURST;
		if (held) {
			/* From the peer's ring, up to its end (the next pass takes the rest). */
			uint32_t at = (uint32_t)src->tx_recl & src->tx_mask,
				 run = src->tx_mask + 1 - at;

			got = held < want ? (uint32_t)held : want;
			if (got > run)
				got = run;
			idx = &src->tx_buf[at];
			src->tx_recl += got;
		} else {
			got = pool_take_burst(w->pc, tmp, want, &idx);
			pooled = true;
			if (!got) {
				ch->st.rx_starved++;
				return;
			}
		}
		chan_rwr_fill(ch, pool, idx, got);
		rwr[got - 1].next = NULL;
		if (rq->srq ? ibv_post_srq_recv(rq->srq, rwr, &bad)
			    : ibv_post_recv(rq->qp, rwr, &bad)) {
			uint32_t first = (uint32_t)(bad - rwr);

			if (got < BR_BURST)
				rwr[got - 1].next = &rwr[got];
			/* idx may point into the cache's slots, which the put writes. */
			memmove(tmp, idx, got * sizeof(*idx));
			for (uint32_t i = first; i < got; i++)
				pool_set_state(pool, tmp[i], POOL_CACHED);
			pool_put_burst(w->pc, tmp + first, got - first);
			rq->posted += first;
			ch->st.rx_starved++; /* retried on the next pass */
			return;
		}
		if (got < BR_BURST)
			rwr[got - 1].next = &rwr[got];
		rq->posted += got;
		if (pooled && got < want) {
			ch->st.rx_starved++;
			return;
		}
	}
}

/* ---- the burst loop and the CQ polls ---- */

/* chan_burst for the channels of one side (a constant after inlining). */
static inline __attribute__((always_inline)) void chan_burst_side(struct worker *w,
								  struct channel *ch,
								  const enum side side,
								  struct ibv_wc *wc, int n,
								  uint64_t now)
{
	struct burst b;
	struct freelist fl;
	unsigned ntx = 0, nrx;
	uint32_t cap_gen;

	fl.n = 0;
	b.w = w;
	b.br = w->br;
	b.pool = b.br->pool;
	b.region = region_of(b.pool);
	b.meta = pool_meta_array(b.pool);
	b.now = now ? now : now_ns();
	b.bridging = atomic_load_explicit(&b.br->bridging, memory_order_relaxed) != 0;
	b.pgm_on = atomic_load_explicit(&b.br->pgm_on, memory_order_relaxed) != 0;
	b.drop_every = atomic_load_explicit(&b.br->drop_every, memory_order_relaxed);
	b.inspect = b.pgm_on || b.drop_every > 0;
	b.flows_ok = b.drop_every <= 0 &&
		     (!b.pgm_on ||
		      !((unsigned)atomic_load_explicit(&b.br->pgm_policy, memory_order_relaxed) &
			PGM_DROP_MALFORMED));
	b.cap = NULL;
	cap_gen = atomic_load_explicit(&b.br->cap_gen, memory_order_acquire);
	if (__builtin_expect(cap_gen != 0, 0))
		burst_capture_begin(&b, w, side, cap_gen);
	b.pgm_malformed = 0;
	b.pgm_not_pgm = 0;
	b.check_own = !ch->sd->block_lb;
	b.rx_errors = b.fwd_pkts = 0;
	b.rx_bytes = 0;
	burst_peer_begin(&b, ch->peer, (uint32_t)n);
	b.flows_live = b.bridging && b.peer_fast && b.flows_ok;
	chan_caches_check(w, ch);
	for (int i = 0; i < n; i++) {
		if (b.flows_live) {
			/* Two copies of the loop: PGM inspection is a constant in each. */
			if (b.pgm_on)
				i = rx_fast_run(&b, ch, side, true, wc, i, n, &fl);
			else
				i = rx_fast_run(&b, ch, side, false, wc, i, n, &fl);
			if (i == n)
				break;
		}
		if (wc[i].wr_id & TX_TAG) {
			chan_tx_done(w, ch, &wc[i]);
			ntx++;
		} else {
			chan_rx(&b, ch, side, &wc[i], &fl);
		}
	}
	nrx = (unsigned)n - ntx;
	ch->st.pgm_malformed += b.pgm_malformed;
	ch->st.pgm_not_pgm += b.pgm_not_pgm;
	burst_peer_end(&b);
	ch->rq->posted -= nrx;
	ch->st.rx_pkts += nrx; /* error completions included: they are drop_rx_error */
	ch->st.rx_bytes += b.rx_bytes;
	ch->st.fwd_pkts += b.fwd_pkts;
	chan_flush(w, ch->peer, &fl);
	/* Sends on another channel than the peer (chan_rx: a group whose pair differs on the
	 * two sides) chained in the templates of the other side: posted now too. Before, such
	 * a chain waited for the next burst to that channel, and the last packets of a run
	 * for ever (console-splitpair). */
	tmpl_flush(w, &w->ws[!side].tt, &fl);
	chan_flush(w, ch, &fl);
	if (ch->bl_head != ch->bl_tail)
		chan_backlog_drain(w, ch, &fl);
	if (nrx && !now)
		hist_add(&w->lat, now_ns() - b.now, nrx);
	fl_flush(w, &fl);
	if (ch->rq->depth - ch->rq->posted >= BR_REFILL_MIN)
		chan_refill(w, ch);
}

/*
 * Everything a non-empty burst of completions costs: forwarding, posting, retiring,
 * refilling. now: 0 (the burst reads the clock), or the time of a poll whose bursts the
 * caller times (chan_burst_mixed).
 */
static inline __attribute__((always_inline)) unsigned chan_burst_any(struct worker *w,
								     struct channel *ch,
								     struct ibv_wc *wc, int n,
								     uint64_t now)
{
	/*
	 * A lone signaled send completion, the usual burst of a channel that only sends:
	 * retire, and move what waits in the backlog; none of a receive burst's set-up.
	 */
	if (n == 1 && (wc[0].wr_id & TX_TAG)) {
		chan_tx_done(w, ch, &wc[0]);
		if (ch->bl_head != ch->bl_tail) {
			struct freelist fl = {.n = 0};

			chan_backlog_drain(w, ch, &fl);
			fl_flush(w, &fl);
		}
		return 1;
	}
	if (ch->side == SIDE_IB)
		chan_burst_side(w, ch, SIDE_IB, wc, n, now);
	else
		chan_burst_side(w, ch, SIDE_ROCE, wc, n, now);
	return (unsigned)n;
}

/*
 * A burst of a poll of one QP (worker_side_poll). Kept out of line so that its cost can
 * be measured on its own (callgrind --toggle-collect=chan_burst, with chan_burst_mixed,
 * in bench/bridge_bench.sh and bench/harness.py), and not cloned: called from
 * worker_side_poll, GCC made it chan_burst.isra.0, which the toggle does not name (the
 * measurement read 0). Its code is the one-flow path's as before chan_burst_mixed: the
 * clock read inside (now 0, folded).
 */
__attribute__((noinline, noclone)) static unsigned chan_burst(struct worker *w, struct channel *ch,
							      struct ibv_wc *wc, int n)
{
	return chan_burst_any(w, ch, wc, n, 0);
}

/*
 * A burst of a poll of several QPs (wside_poll_mixed), at the poll's time now: the clock
 * is read once a poll, not twice a burst. A function of its own so that chan_burst, the
 * path of one flow, keeps its instructions (passing now to it cost that path 0.3
 * instructions a packet, callgrind, bench/harness.py -s single).
 */
__attribute__((noinline, noclone)) static unsigned chan_burst_mixed(struct worker *w,
								    struct channel *ch,
								    struct ibv_wc *wc, int n,
								    uint64_t now)
{
	return chan_burst_any(w, ch, wc, n, now);
}

/*
 * The flow a receive at p of channel ch would look up first (way 0 of its set): IB and
 * RoCEv2 over IPv6 by their addresses at 8-39, IPv4 by its source and destination; the
 * same hash as flow_find_ib and flow_find_roce.
 */
static inline const struct chan_flow *flow_guess(const struct channel *ch, const uint8_t *p)
{
	uint64_t x, y;

	if (ch->side == SIDE_IB || p[BR_IPV4_OFF] != IPV4_VER_IHL) {
		memcpy(&x, p + GRH_SGID + GID_LOW, 8);
		memcpy(&y, p + GRH_DGID + GID_LOW, 8);
	} else {
		memcpy(&x, p + BR_IPV4_OFF + IPV4_SADDR, 8);
		y = 0;
	}
	return flow_slot(ch->flows, x, y);
}

/*
 * What the bursts of a mixed poll will read of each receive's flow, group and sender,
 * fetched ahead: at thousands of groups each packet's flow, group counters and sender
 * record are lines no recent packet touched (a perf profile of groups4096 put most of
 * chan_burst's time on those three loads and on the header's). Two passes, each over
 * the whole poll, so that the misses of one pass overlap: the flows (their headers were
 * fetched as the poll was sorted), then what their first way names (a guess: a way that
 * does not hold the packet's flow fetches lines that are not needed, and changes
 * nothing). Only the mixed path pays it (about 40 instructions a receive, outside
 * chan_burst): the completions of one QP (at most mcqp groups, 240) go to chan_burst as
 * they are, their headers fetched ahead by worker_side_poll, and the path of one flow
 * keeps its instructions. Inline: as a function of its own GCC found it free of side
 * effects (prefetches only) and dropped the call.
 */
static inline __attribute__((always_inline)) void
mixed_prefetch(const struct wside_view *ws, const struct ibv_wc *by, const uint32_t *at,
	       const uint32_t *start, uint32_t k, const struct region *r)
{
	const struct chan_flow *f[BR_POLL];

	for (uint32_t c = 0; c < k; c++) {
		const struct channel *ch = ws->map[at[c]];

		for (uint32_t i = start[c]; i < start[c + 1]; i++) {
			f[i] = NULL;
			if (by[i].wr_id & TX_TAG)
				continue;
			f[i] = flow_guess(ch, region_data(r, (uint32_t)by[i].wr_id));
			__builtin_prefetch(f[i]);
		}
	}
	for (uint32_t i = 0; i < start[k]; i++) {
		if (!f[i])
			continue;
		if (f[i]->g)
			__builtin_prefetch(&f[i]->g->fwd_pkts[0], 1);
		__builtin_prefetch(f[i]->s, 1);
	}
}

/*
 * A poll that returned completions of several QPs: grouped by channel (a counting sort on
 * the QPN map's index, order kept within a channel) so that each channel handles all of
 * its completions of the poll in bursts of up to 32, and its peer's chain is posted once
 * per burst, as when each channel had a CQ of its own. ws->slot (one entry per map
 * entry, UINT16_MAX when free) numbers the channels met in this poll: the view's, which
 * only this worker writes.
 */
static __attribute__((noinline)) void wside_poll_mixed(struct worker *w, struct wside_view *ws,
						       const struct ibv_wc *wc, int n)
{
	const struct region r = region_of(w->br->pool);
	struct ibv_wc by[BR_POLL];
	uint16_t of[BR_POLL];	     /* wc[i]'s channel number in this poll */
	uint32_t at[BR_POLL];	     /* channel k's map index */
	uint32_t start[BR_POLL + 1]; /* channel k's completions: by[start[k]..start[k+1]) */
	uint32_t k = 0, nrx = 0;
	/* One clock read for the poll's bursts (their senders' last_ns, captures, the
	 * latency histogram): at thousands of groups a poll's completions are spread over
	 * tens of channels, bursts of a few packets, and two reads a burst took 13 ns a
	 * packet at 16 000 groups (perf, the drain scenario). */
	const uint64_t now = now_ns();

	for (int i = 0; i < n; i++) {
		uint32_t m = (uint32_t)(wc[i].qp_num * ws->map_mul) >> ws->map_shift;
		uint16_t c = ws->slot[m];

		/* A receive's headers, on their way while the poll is sorted. */
		if (!(wc[i].wr_id & TX_TAG)) {
			__builtin_prefetch(region_data(&r, (uint32_t)wc[i].wr_id));
			nrx++;
		}

		if (c == UINT16_MAX) {
			c = (uint16_t)k;
			ws->slot[m] = c;
			at[k] = m;
			start[++k] = 0;
		}
		of[i] = c;
		start[c + 1]++;
	}
	start[0] = 0;
	for (uint32_t c = 0; c < k; c++)
		start[c + 1] += start[c];
	{
		uint32_t pos[BR_POLL];

		memcpy(pos, start, k * sizeof(*pos));
		for (int i = 0; i < n; i++)
			by[pos[of[i]]++] = wc[i];
	}
	mixed_prefetch(ws, by, at, start, k, &r);
	for (uint32_t c = 0; c < k; c++) {
		struct channel *ch = ws->map[at[c]];

		ws->slot[at[c]] = UINT16_MAX;
		for (uint32_t i = start[c]; i < start[c + 1]; i += BR_BURST) {
			uint32_t len = start[c + 1] - i;

			chan_burst_mixed(w, ch, by + i, (int)(len < BR_BURST ? len : BR_BURST), now);
		}
	}
	/* Poll to post, for every receive of the poll: until its last burst was posted. */
	if (nrx)
		hist_add(&w->lat, now_ns() - now, nrx);
}

/*
 * One poll of the worker's CQ of a side: up to 32 completions. Those of one QP (one flow,
 * or one group) are a burst of its channel, found through the side's QPN map, as its own
 * CQ gave them. A full poll of several QPs takes up to BR_POLL - 32 more in a second
 * poll (so at most 4 polls a pass), and the lot is grouped by channel
 * (wside_poll_mixed), so that interleaved groups still make bursts per channel. (One
 * poll of BR_POLL for every case cost one flow 10 instructions a packet: 8 bursts of
 * receives before any send completion of the other side retired buffers for the refill,
 * which then took the pool's.) ws->empty counts the polls that found the CQ drained.
 */
unsigned worker_side_poll(struct worker *w, enum side side)
{
	struct wside *ws = &w->ws[side];
	struct ibv_wc wc[BR_POLL];
	int n = ibv_poll_cq(ws->cq, BR_BURST, wc), i;
	struct wside_view *v;
	uint32_t qpn;

	ws->polls++;
	if (n < BR_BURST)
		ws->empty++;
	if (n <= 0)
		return 0;
	/*
	 * After the poll: a completion of a QP added at run time exists only after the
	 * control thread published the view that holds it (bridge_pair_add).
	 */
	v = rcu_dereference(ws->view);
	qpn = wc[0].qp_num;
	{
		/* The receives' headers, on their way before the burst reads the first: its
		 * misses overlap (the written buffer is in another core's cache or, on
		 * hardware, where the NIC's DMA left it). */
		const struct region r = region_of(w->br->pool);

		for (i = 0; i < n && wc[i].qp_num == qpn; i++)
			if (!(wc[i].wr_id & TX_TAG))
				__builtin_prefetch(region_data(&r, (uint32_t)wc[i].wr_id));
	}
	if (i == n) {
		ws->wcs += (unsigned)n;
		chan_burst(w, wside_chan(v, qpn), wc, n);
		return (unsigned)n;
	}
	if (n == BR_BURST) {
		int m = ibv_poll_cq(ws->cq, BR_POLL - BR_BURST, wc + BR_BURST);

		ws->polls++;
		if (m < BR_POLL - BR_BURST)
			ws->empty++;
		if (m > 0)
			n += m;
	}
	ws->wcs += (unsigned)n;
	wside_poll_mixed(w, v, wc, n);
	return (unsigned)n;
}

/* ---- cross-worker hand-off ---- */

bool fwd_handoff(struct worker *w, struct channel *out, uint32_t buf, uint32_t len, bool has_imm,
		 uint32_t imm, struct ibv_ah *ah, uint32_t qkey)
{
	struct handoff_ring *r = out->w->in[w->id];
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct handoff_ent *e;

	/* Pairs with the release store of head by the consumer. */
	if (tail - atomic_load_explicit(&r->head, memory_order_acquire) > r->mask)
		return false;
	e = &r->ent[tail & r->mask];
	e->buf = buf;
	e->len = len;
	e->has_imm = has_imm;
	e->imm = imm;
	e->out = out;
	e->ah = ah;
	e->qkey = qkey;
	pool_set_state(w->br->pool, buf, POOL_HANDOFF);
	/* Pairs with the acquire load of tail by the consumer. */
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
	return true;
}

/*
 * The channels a drain sent on, to post their chains after it: the first
 * HANDOFF_FLUSH_MAX distinct ones; a drain that met more flushes every channel of the
 * worker (a walk of the views, which reads a cache line of each: at thousands of groups
 * dozens of channels, for a drain that usually names one or two).
 */
#define HANDOFF_FLUSH_MAX 8

unsigned fwd_handoff_drain(struct worker *w)
{
	struct pool *pool = w->br->pool;
	struct channel *sent[HANDOFF_FLUSH_MAX];
	struct freelist fl;
	uint64_t now = 0; /* read once, when a send will find its queue full (chan_tx_full) */
	unsigned n = 0, nsent = 0;
	bool all = false;

	fl.n = 0;
	for (uint32_t from = 0; from < w->br->nworkers; from++) {
		struct handoff_ring *r = w->in[from];
		uint64_t head, tail;

		if (!r)
			continue;
		head = atomic_load_explicit(&r->head, memory_order_relaxed);
		tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		for (; head != tail; head++, n++) {
			struct handoff_ent *e = &r->ent[head & r->mask];
			struct channel *out = e->out;

			pool_set_owner(pool, e->buf, w->id);
			if (__builtin_expect(!now && chan_send_drops(out), 0))
				now = now_ns();
			chan_send(w, pool, out, &fl, e->buf,
				  (uintptr_t)pool_data(pool, e->buf) + BR_GRH_LEN, e->len,
				  e->has_imm, e->imm, e->ah, e->qkey, now);
			if (!all) {
				unsigned k = 0;

				while (k < nsent && sent[k] != out)
					k++;
				if (k == HANDOFF_FLUSH_MAX)
					all = true;
				else if (k == nsent)
					sent[nsent++] = out;
			}
		}
		atomic_store_explicit(&r->head, head, memory_order_release);
	}
	if (all) {
		/* After the rings' acquire loads: a channel added at run time that an entry
		 * names is in its side's view. */
		for (int s = 0; s < NSIDES; s++) {
			const struct wside_view *v = rcu_dereference(w->ws[s].view);

			for (uint32_t i = 0; i < v->nchan; i++)
				chan_flush(w, v->chan[i], &fl);
		}
	} else {
		for (unsigned k = 0; k < nsent; k++)
			chan_flush(w, sent[k], &fl);
	}
	fl_flush(w, &fl);
	return n;
}
