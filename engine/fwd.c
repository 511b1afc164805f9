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
 */
#include <errno.h>
#include <arpa/inet.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "fwd.h"
#include "pgm.h"
#include "pool.h"
#include "senders.h"
#include "stream.h"

#define TX_TAG (1ull << 63)

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
	pool_set_state(w->br->pool, buf, POOL_CACHED);
	fl->idx[fl->n++] = buf;
}

static inline void fl_flush(struct worker *w, struct freelist *fl)
{
	if (fl->n) {
		pool_put_burst(w->pc, fl->idx, fl->n);
		fl->n = 0;
	}
}

static inline uint32_t sq_used(const struct channel *ch)
{
	return (uint32_t)(ch->tx_head - ch->tx_tail) + ch->nwr;
}

/* Post the chained sends of a channel. */
void chan_flush(struct worker *w, struct channel *ch, struct freelist *fl)
{
	struct ibv_send_wr *bad = NULL;
	uint32_t n = ch->nwr;
	int r;

	if (!n)
		return;
	for (uint32_t i = 0; i + 1 < n; i++)
		ch->wr[i].next = &ch->wr[i + 1];
	ch->wr[n - 1].next = NULL;
	ch->nwr = 0;
	r = ibv_post_send(ch->qp, ch->wr, &bad);
	if (r) {
		/* WRs from `bad` on were not posted: their buffers are ours again. */
		uint32_t first = bad ? (uint32_t)(bad - ch->wr) : 0;
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
		ch->broken = r != ENOMEM;
	}
}

/* Chain a send of buffer `buf` on `out`, which has send-queue room. */
static inline __attribute__((always_inline)) void
chan_post(struct worker *w, struct channel *out, struct freelist *fl, uint32_t buf, uint32_t len,
	  bool has_imm, uint32_t imm, struct ibv_ah *ah, uint32_t qkey)
{
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;

	if (out->nwr == BR_BURST)
		chan_flush(w, out, fl);
	wr = &out->wr[out->nwr];
	sge = &out->sge[out->nwr];
	out->nwr++;
	sge->addr = (uintptr_t)pool_data(w->br->pool, buf) + BR_GRH_LEN;
	sge->length = len;
	sge->lkey = out->lkey;
	wr->wr_id = TX_TAG | out->tx_head;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = has_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr->imm_data = imm;
	wr->send_flags = 0;
	if (++out->unsignaled >= out->sig_every) {
		wr->send_flags = IBV_SEND_SIGNALED;
		out->unsignaled = 0;
	}
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = BR_MCAST_QPN;
	wr->wr.ud.remote_qkey = qkey;
	out->tx_buf[out->tx_head++ & out->tx_mask] = buf;
	pool_set_state(w->br->pool, buf, POOL_TX);
	out->st.tx_pkts++;
	out->st.tx_bytes += len;
}

/*
 * Send buffer `buf` on `out`: chained now, or queued in the bounded backlog when the send
 * queue is full or older packets already wait (order is kept); dropped and counted when
 * the backlog is full too.
 */
static inline __attribute__((always_inline)) void
chan_send(struct worker *w, struct channel *out, struct freelist *fl, uint32_t buf, uint32_t len,
	  bool has_imm, uint32_t imm, struct ibv_ah *ah, uint32_t qkey)
{
	struct backlog_ent *b;

	if (sq_used(out) < out->sq_depth && out->bl_tail == out->bl_head) {
		chan_post(w, out, fl, buf, len, has_imm, imm, ah, qkey);
		return;
	}
	if (out->bl_tail - out->bl_head > out->bl_mask) {
		out->st.drops[DROP_TX_FULL]++;
		fl_put(w, fl, buf);
		return;
	}
	b = &out->bl[out->bl_tail++ & out->bl_mask];
	b->buf = buf;
	b->len = len;
	b->has_imm = has_imm;
	b->imm = imm;
	b->ah = ah;
	b->qkey = qkey;
	pool_set_state(w->br->pool, buf, POOL_BACKLOG);
	out->st.backlog = out->bl_tail - out->bl_head;
	if (out->st.backlog > out->st.backlog_max)
		out->st.backlog_max = out->st.backlog;
}

/* Move waiting packets into the send queue while there is room. */
static void chan_backlog_drain(struct worker *w, struct channel *ch, struct freelist *fl)
{
	while (ch->bl_head != ch->bl_tail && sq_used(ch) < ch->sq_depth) {
		struct backlog_ent b = ch->bl[ch->bl_head++ & ch->bl_mask];

		chan_post(w, ch, fl, b.buf, b.len, b.has_imm, b.imm, b.ah, b.qkey);
	}
	ch->st.backlog = ch->bl_tail - ch->bl_head;
}

/* A signaled send completed: everything posted up to it is done. */
static void chan_tx_done(struct worker *w, struct channel *ch, const struct ibv_wc *wc,
			 struct freelist *fl)
{
	uint64_t pos = wc->wr_id & ~TX_TAG;

	if (wc->status != IBV_WC_SUCCESS) {
		/* Errors complete even unsignaled WRs: this one packet is lost. */
		ch->st.drops[DROP_TX_ERROR]++;
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			ch->broken = true;
	}
	while (ch->tx_tail <= pos && ch->tx_tail < ch->tx_head)
		fl_put(w, fl, ch->tx_buf[ch->tx_tail++ & ch->tx_mask]);
	ch->st.tx_completions++;
}

static inline bool ipv4_multicast(const uint8_t *a)
{
	return (a[0] & 0xf0) == 0xe0;
}

/*
 * The group of MGID (hi, lo) (its two halves as stored in memory) on the channel's side,
 * through the channel's cache.
 */
static inline struct group *chan_group(struct channel *ch, uint64_t hi, uint64_t lo)
{
	struct gcache_ent *e;
	union ibv_gid gid;
	struct group *g;

	e = &ch->gcache[(uint32_t)((lo * 0x9e3779b97f4a7c15ull) >> 56) & (CH_GCACHE - 1)];
	if (e->g && e->mgid_hi == hi && e->mgid_lo == lo)
		return e->g;
	memcpy(gid.raw, &hi, 8);
	memcpy(gid.raw + 8, &lo, 8);
	g = group_lookup(ch->sd, &gid);
	if (g) {
		e->mgid_hi = hi;
		e->mgid_lo = lo;
		e->g = g;
	}
	return g;
}

/* The verdict on a received packet: the group to forward to, or a drop reason. */
static inline struct group *rx_classify(struct worker *w, struct channel *ch,
					const struct ibv_wc *wc, const uint8_t *p,
					struct sender_key *sk, enum drop_reason *why)
{
	struct bridge *br = w->br;
	struct side_ctx *sd = ch->sd;
	uint64_t hi, lo;
	struct group *g;

	if (!(wc->wc_flags & IBV_WC_GRH)) {
		*why = DROP_NO_GRH;
		return NULL;
	}
	if (ch->side == SIDE_IB) {
		const struct ibv_grh *grh = (const struct ibv_grh *)p;

		if (grh->dgid.raw[0] != 0xff) {
			*why = DROP_UNICAST;
			return NULL;
		}
		memcpy(sk->addr, grh->sgid.raw, 16);
		if (!sd->block_lb && !memcmp(grh->sgid.raw, sd->gid.raw, 16) &&
		    fwd_own_qpn(sd, wc->src_qp)) {
			*why = DROP_OWN;
			return NULL;
		}
		if (grh->hop_limit) {
			*why = DROP_LOOP;
			return NULL;
		}
		memcpy(&hi, grh->dgid.raw, 8);
		memcpy(&lo, grh->dgid.raw + 8, 8);
		g = chan_group(ch, hi, lo);
		if (!g) {
			uint32_t low;

			/* The same group address in another MGID format? */
			memcpy(&low, &grh->dgid.raw[12], 4);
			*why = group_lookup_addr(br, low) ||
					       group_lookup_addr(br, low | htonl(0xe0000000))
				       ? DROP_MGID_FORMAT
				       : DROP_UNKNOWN_GROUP;
			return NULL;
		}
	} else {
		const uint8_t *ip = p + BR_IPV4_OFF;
		uint32_t saddr;

		if (ip[0] != 0x45) {
			*why = DROP_BAD_HEADER;
			return NULL;
		}
		if (!ipv4_multicast(ip + 16)) {
			*why = DROP_UNICAST;
			return NULL;
		}
		memcpy(&saddr, ip + 12, 4);
		memset(sk->addr, 0, 10);
		sk->addr[10] = sk->addr[11] = 0xff;
		memcpy(sk->addr + 12, &saddr, 4);
		if (saddr == sd->ipv4 && !sd->block_lb && fwd_own_qpn(sd, wc->src_qp)) {
			*why = DROP_OWN;
			return NULL;
		}
		for (uint32_t i = 0; i < br->cfg.npeers; i++) {
			if (br->cfg.peers[i] == saddr) {
				*why = DROP_PEER;
				return NULL;
			}
		}
		if (sd->netmask && !br->cfg.allow_foreign && ((saddr ^ sd->ipv4) & sd->netmask)) {
			*why = DROP_FOREIGN;
			return NULL;
		}
		/* ::ffff:a.b.c.d */
		hi = 0;
		lo = 0xffff0000ull;
		{
			uint32_t daddr;

			memcpy(&daddr, ip + 16, 4);
			lo |= (uint64_t)daddr << 32;
		}
		g = chan_group(ch, hi, lo);
		if (!g) {
			*why = DROP_UNKNOWN_GROUP;
			return NULL;
		}
	}
	if (!group_dir_rx(g->dir, ch->side)) {
		*why = DROP_SENDONLY_SIDE;
		return NULL;
	}
	if (!(atomic_load_explicit(&g->ready, memory_order_acquire) & (1u << ch->side))) {
		*why = DROP_NOT_JOINED;
		return NULL;
	}
	if (!atomic_load_explicit(&br->bridging, memory_order_relaxed)) {
		*why = DROP_BRIDGING_OFF;
		return NULL;
	}
	return g;
}

static inline void rx_sender(struct worker *w, struct channel *ch, struct sender_key *sk,
			     uint32_t qpn, uint32_t len, uint64_t now)
{
	struct sender_table *t = w->br->senders;
	struct sender **set, *s;
	unsigned long h;

	sk->chan = (uint32_t)ch->side << 16 | ch->index;
	sk->qpn = qpn;
	/* Streams come in runs: the previous packet's sender, without hashing. */
	s = ch->prev_sender;
	if (s && s->key.qpn == qpn && !memcmp(s->key.addr, sk->addr, sizeof(sk->addr)))
		goto count;
	h = sender_hash(sk);
	set = &ch->scache[(h & (CH_SCACHE / 2 - 1)) * 2];
	if (set[0] && !memcmp(&set[0]->key, sk, sizeof(*sk))) {
		s = set[0];
	} else if (set[1] && !memcmp(&set[1]->key, sk, sizeof(*sk))) {
		s = set[1];
		set[1] = set[0]; /* most recent first */
		set[0] = s;
	} else {
		s = sender_get(t, w->id, sk, h, now);
		if (!s)
			return;
		set[1] = set[0];
		set[0] = s;
	}
	ch->prev_sender = s;
count:
	s->pkts++;
	s->bytes += len;
	s->last_ns = now;
}

/* Drop the caches of a channel when the tables behind them changed. */
static inline void chan_caches_check(struct worker *w, struct channel *ch)
{
	uint64_t ge = atomic_load_explicit(&w->br->groups_epoch, memory_order_acquire);
	uint64_t se = atomic_load_explicit(&w->br->senders->epoch, memory_order_acquire);

	if (ge != ch->gcache_epoch) {
		memset(ch->gcache, 0, sizeof(ch->gcache));
		ch->gcache_epoch = ge;
	}
	if (se != ch->scache_epoch) {
		memset(ch->scache, 0, sizeof(*ch->scache) * CH_SCACHE);
		ch->prev_sender = NULL;
		ch->scache_epoch = se;
	}
}

/*
 * PGM inspection of a payload about to be forwarded: well-formed packets are accounted
 * to their stream (TSI + group; this worker owns both sides of the group, so it is the
 * stream's only writer). Returns true when the packet must be dropped: a loop (the
 * stream was first seen on the other side), an unknown option asking for discard, a
 * duplicate under pgm_dups=drop, or a bad checksum / malformed payload under the strict
 * policy. Never modifies the payload.
 */
static inline bool rx_pgm(struct worker *w, struct channel *ch, const struct group *g,
			  const uint8_t *payload, uint32_t len, uint64_t now)
{
	struct bridge *br = w->br;
	unsigned policy = (unsigned)atomic_load_explicit(&br->pgm_policy, memory_order_relaxed);
	struct pgm_stream_key key;
	struct pgm_packet pkt;
	enum pgm_verdict v;
	enum pgm_result r;

	r = pgm_parse(payload, len, 0, &pkt);
	if (pgm_result_malformed(r)) {
		ch->st.pgm_malformed++;
		return pgm_result_drop(r, policy);
	}
	ch->st.pgm_pkts++;
	if (r == PGM_BAD_CHECKSUM)
		ch->st.pgm_bad_csum++;
	pgm_stream_key_from_packet(&key, &pkt, ntohl(g->addr));
	if (!pgm_stream_update(br->pgm, &key, ch->side, &pkt, now, &v) &&
	    pgm_verdict_drop(v, (enum pgm_dup_policy)atomic_load_explicit(&br->pgm_dups,
									  memory_order_relaxed)))
		return true;
	return pgm_result_drop(r, policy);
}

/* One receive completion. */
static inline void chan_rx(struct worker *w, struct channel *ch, const struct ibv_wc *wc,
			   struct freelist *fl, uint64_t now)
{
	struct bridge *br = w->br;
	uint32_t buf = (uint32_t)wc->wr_id;
	const uint8_t *p = pool_data(br->pool, buf);
	enum drop_reason why = DROP_NREASONS;
	struct sender_key sk;
	struct channel *out;
	struct group *g;
	uint32_t len;
	int64_t nth;

	ch->rq_posted--;
	if (wc->status != IBV_WC_SUCCESS) {
		ch->st.drops[DROP_RX_ERROR]++;
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			ch->broken = true;
		fl_put(w, fl, buf);
		return;
	}
	len = wc->byte_len - BR_GRH_LEN;
	ch->st.rx_pkts++;
	ch->st.rx_bytes += len;
	g = rx_classify(w, ch, wc, p, &sk, &why);
	if (!g)
		goto drop;
	rx_sender(w, ch, &sk, wc->src_qp, len, now);
	if (atomic_load_explicit(&br->pgm_on, memory_order_relaxed) &&
	    rx_pgm(w, ch, g, p + BR_GRH_LEN, len, now)) {
		why = DROP_PGM;
		goto drop;
	}
	nth = atomic_load_explicit(&br->drop_every, memory_order_relaxed);
	if (nth > 0 && ++w->drop_nth % (uint64_t)nth == 0) {
		why = DROP_INJECTED;
		goto drop;
	}
	out = g->out_chan[!ch->side];
	g->fwd_pkts[ch->side]++;
	g->fwd_bytes[ch->side] += len;
	ch->st.fwd_pkts++;
	if (out->w != w) {
		fwd_handoff(w, out, buf, len, wc->wc_flags & IBV_WC_WITH_IMM, wc->imm_data,
			    g->ah_out[!ch->side], g->qkey_out[!ch->side], fl);
		ch->st.handoff_out++;
		return;
	}
	chan_send(w, out, fl, buf, len, wc->wc_flags & IBV_WC_WITH_IMM, wc->imm_data,
		  atomic_load_explicit(&g->ah_out[!ch->side], memory_order_relaxed),
		  g->qkey_out[!ch->side]);
	return;
drop:
	ch->st.drops[why]++;
	fl_put(w, fl, buf);
}

/* Post receives until the receive queue is full again, in chains. */
void chan_refill(struct worker *w, struct channel *ch)
{
	struct ibv_recv_wr wr[BR_BURST], *bad;
	struct ibv_sge sge[BR_BURST];
	uint32_t idx[BR_BURST];
	struct pool *pool = w->br->pool;
	uint32_t bsz = pool_buf_size(pool);

	while (ch->rq_posted < ch->rq_depth && !ch->broken) {
		uint32_t want = ch->rq_depth - ch->rq_posted, got;

		if (want > BR_BURST)
			want = BR_BURST;
		got = pool_get_burst(w->pc, idx, want);
		if (!got) {
			ch->st.rx_starved++;
			return;
		}
		for (uint32_t i = 0; i < got; i++) {
			sge[i].addr = (uintptr_t)pool_data(pool, idx[i]);
			sge[i].length = bsz;
			sge[i].lkey = ch->lkey;
			wr[i].wr_id = idx[i];
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].next = i + 1 < got ? &wr[i + 1] : NULL;
			pool_set_state(pool, idx[i], POOL_RX);
		}
		if (ibv_post_recv(ch->qp, wr, &bad)) {
			uint32_t first = (uint32_t)(bad - wr);

			for (uint32_t i = first; i < got; i++)
				pool_set_state(pool, idx[i], POOL_CACHED);
			pool_put_burst(w->pc, idx + first, got - first);
			ch->rq_posted += first;
			ch->broken = true;
			return;
		}
		ch->rq_posted += got;
		if (got < want) {
			ch->st.rx_starved++;
			return;
		}
	}
}

/*
 * Everything a non-empty burst of completions costs: forwarding, posting, retiring,
 * refilling. Kept out of line so that its cost can be measured on its own (callgrind
 * --toggle-collect=chan_burst in bench/bridge_bench.sh).
 */
__attribute__((noinline)) static unsigned chan_burst(struct worker *w, struct channel *ch,
						     struct ibv_wc *wc, int n)
{
	struct freelist fl;
	uint64_t t0, t1;
	unsigned nrx = 0;

	fl.n = 0;
	t0 = now_ns();
	chan_caches_check(w, ch);
	for (int i = 0; i < n; i++) {
		if (wc[i].wr_id & TX_TAG) {
			chan_tx_done(w, ch, &wc[i], &fl);
		} else {
			chan_rx(w, ch, &wc[i], &fl, t0);
			nrx++;
		}
	}
	chan_flush(w, ch->peer, &fl);
	chan_flush(w, ch, &fl);
	if (ch->bl_head != ch->bl_tail) {
		chan_backlog_drain(w, ch, &fl);
		chan_flush(w, ch, &fl);
	}
	if (nrx) {
		t1 = now_ns();
		hist_add(&w->lat, t1 - t0, nrx);
	}
	fl_flush(w, &fl);
	if (ch->rq_depth - ch->rq_posted >= BR_REFILL_MIN)
		chan_refill(w, ch);
	return (unsigned)n;
}

unsigned chan_poll(struct worker *w, struct channel *ch)
{
	struct ibv_wc wc[BR_BURST];
	int n = ibv_poll_cq(ch->cq, BR_BURST, wc);

	return n > 0 ? chan_burst(w, ch, wc, n) : 0;
}

/* ---- cross-worker hand-off ---- */

void fwd_handoff(struct worker *w, struct channel *out, uint32_t buf, uint32_t len, bool has_imm,
		 uint32_t imm, struct ibv_ah *ah, uint32_t qkey, struct freelist *fl)
{
	struct handoff_ring *r = out->w->in[w->id];
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct handoff_ent *e;

	/* Pairs with the release store of head by the consumer. */
	if (tail - atomic_load_explicit(&r->head, memory_order_acquire) > r->mask) {
		out->st.drops[DROP_TX_FULL]++;
		fl_put(w, fl, buf);
		return;
	}
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
}

unsigned fwd_handoff_drain(struct worker *w)
{
	struct freelist fl;
	unsigned n = 0;

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

			pool_set_owner(w->br->pool, e->buf, w->id);
			chan_send(w, e->out, &fl, e->buf, e->len, e->has_imm, e->imm, e->ah,
				  e->qkey);
		}
		atomic_store_explicit(&r->head, head, memory_order_release);
	}
	if (n)
		for (uint32_t i = 0; i < w->nchan; i++)
			chan_flush(w, w->chan[i], &fl);
	fl_flush(w, &fl);
	return n;
}
