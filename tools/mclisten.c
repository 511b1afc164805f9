// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mclisten - a UD multicast test listener (docs/mclisten.1), the companion of ib2roce
 * that the reference bridge shipped under this name: joins groups on one fabric as a
 * full member and reports, per group and per stream, what arrived: rate, loss, gaps,
 * duplicates, reordering and one-way latency percentiles.
 *
 * A stream is (group, stream id) for plain payloads carrying struct mct_hdr, and (group,
 * TSI) for PGM: ODATA/RDATA carrying the header are counted by its 64-bit sequence
 * number and timed by its send timestamp; PGM data without it by the 32-bit data SQN
 * (no latency); SPMs are counted per stream. Payloads that are neither count as "other"
 * of their group; PGM that pgm_parse() rejects (bad checksum, malformed) as "pgm_bad".
 *
 * Sequence accounting per stream (the first packet starts it):
 * - a sequence number above the highest seen opens a gap when it skips some (gaps);
 * - one at or below the highest is a duplicate when it was seen (dup), a late arrival
 *   that fills a gap when not (reordered), or, more than SEEN_WINDOW behind, "late"
 *   (neither counted as received nor as a duplicate: the window no longer knows);
 * - lost = expected - unique, expected being the stream's packet count announced by the
 *   sender (mcsender --count) or else highest - first + 1.
 * Latency = receive time - send time on the clock the sender names (REALTIME or
 * MONOTONIC), read when the completion is polled; meaningful when both ends share the
 * clock (one host, or PTP-synchronised REALTIME). Negative values are counted
 * (lat_negative), not recorded.
 *
 * Receives: one CQ with a completion channel (the program sleeps until packets come,
 * or spins with --busy); receive buffers of 40 + MTU bytes, reposted in chains. The
 * console (--control, mccon.h) is polled with the completion channel, and every
 * MCCON_POLL_MS at most while packets keep the loop busy.
 *
 * What the port itself dropped (no receive posted: out_of_buffer, lib/nic.h) is read
 * from sysfs at the start, for each live line and console command, and at the end, and
 * shown as nic_rx_dropped: the port's drops since the start, every QP of the port.
 *
 * One file (about 1 100 lines): options, receive loop, per-stream accounting, the three
 * reports (table, JSON, live line) and what the console shows of them are one
 * program's parts that share the listener's tables; what another program could use
 * lives in mctool.c, mccon.c, lhist.c and pcapdump.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "lhist.h"
#include "mccon.h"
#include "mctool.h"
#include "nic.h"
#include "options.h"
#include "pcapdump.h"
#include "pgm.h"

#define DEF_RQ		4096
#define CQ_BURST	64
#define SEEN_WINDOW	65536u /* sequence numbers remembered per stream (bits) */
#define SEEN_WORDS	(SEEN_WINDOW / 64u)
#define DEF_INTERVAL_MS 1000
#define GROUP_NONE	UINT32_MAX
#define STREAM_KIND_MCT 0
#define STREAM_KIND_PGM 1

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct lopts {
	_Atomic int64_t ppsdisplay; /* feature: a line per interval */
	bool json;
	bool busy;
	uint64_t count;	      /* stop after this many data packets, 0 = no */
	uint64_t duration_ms; /* stop after this long, 0 = no */
	uint64_t interval_ms;
	uint32_t rq;
	const char *dump; /* --dump: pcap file of the payloads received */
};

struct lgroup {
	uint64_t pkts, bytes, other, pgm_bad, pgm_other, spm, iv_pkts;
};

struct lstream {
	uint32_t group;
	uint8_t kind; /* STREAM_KIND_* */
	uint64_t id;  /* stream id, or the TSI (GSI << 16 | sport) */
	uint8_t src[16];
	uint32_t src_qpn;
	uint8_t clock;
	bool have, last_seen;
	uint64_t first, max;
	uint64_t rx, unique, dup, reorder, gaps, late, bytes, spm, rdata, total, lat_neg;
	uint64_t t_first, t_last, iv_rx;
	uint64_t *seen; /* SEEN_WORDS words, bit (seq % SEEN_WINDOW) */
	struct lhist *h;
};

struct listener {
	struct lopts *o;
	struct mct_cfg *c;
	struct mct_port port;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;
	uint32_t slot, nbuf;
	struct ibv_qp **qp;
	uint32_t nqp;
	struct ibv_recv_wr *rwr;
	struct ibv_sge *rsge;
	uint32_t *deferred; /* buffers waiting for room in their receive queue */
	uint32_t ndeferred;
	/* Groups by MGID (open addressing, index + 1, 0 = empty). */
	uint32_t *gtab, gmask;
	struct lgroup *g;
	/* Streams (open addressing over index + 1). */
	struct lstream *s;
	uint32_t ns, scap;
	uint32_t *stab, smask;
	/* Totals. */
	uint64_t data_rx, unknown_group, rx_errors, lat_neg;
	struct lhist *iv_hist;
	uint64_t iv_rx, iv_lost_base;
	uint64_t t_start, t_end;
	struct nic_ctr nic; /* the port's out_of_buffer (nic.h) */
	bool nic_base;	    /* its baseline was read at the start: nic_rx_dropped is known */
	FILE *dump;
	bool dump_failed;  /* a write to the --dump file failed: exit 1 */
	struct mccon *con; /* --control: the console, NULL without */
};

/* ---- Options ---- */

static int opt_flag(void *ctx, const char *arg, char *err, size_t len)
{
	(void)arg;
	(void)err;
	(void)len;
	*(bool *)ctx = true;
	return 0;
}

static int opt_count(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 1, UINT64_MAX >> 1, &((struct lopts *)ctx)->count, err, len);
}

static int opt_duration(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 1, 86400 * 365, &v, err, len);

	if (!r)
		((struct lopts *)ctx)->duration_ms = v * 1000;
	return r;
}

static int opt_interval(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 10, 3600000, &((struct lopts *)ctx)->interval_ms, err, len);
}

static int opt_rq(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 16, 65536, &v, err, len);

	if (!r)
		((struct lopts *)ctx)->rq = (uint32_t)v;
	return r;
}

static int opt_dump(void *ctx, const char *arg, char *err, size_t len)
{
	if (!*arg)
		return opt_errf(err, len, -EINVAL, "empty file name");
	((struct lopts *)ctx)->dump = arg;
	return 0;
}

static int register_options(struct lopts *o)
{
	const struct opt_def defs[] = {
		{"count", 'n', "n", false, "stop after n data packets (exit 1 if they do not come)",
		 opt_count, o, false},
		{"duration", 'D', "secs", false, "stop after this many seconds", opt_duration, o,
		 false},
		{"json", 'j', NULL, false, "print the report as JSON", opt_flag, &o->json, false},
		{"busy", 'B', NULL, false, "busy-poll the completion queue instead of sleeping",
		 opt_flag, &o->busy, false},
		{"interval", 'I', "ms", false, "live display interval (1000)", opt_interval, o,
		 false},
		{"rq", 0, "n", false, "receive queue depth per QP (4096)", opt_rq, o, false},
		{"dump", 'w', "file", false,
		 "write the payloads received to a pcap file, in UDP to the group's port", opt_dump,
		 o, false},
	};
	const struct feat_def pps = {
		.name = "ppsdisplay",
		.type = FEAT_BOOL,
		.help = "print a line of rates, loss and latency every interval (on for a "
			"terminal)",
		.def = isatty(STDOUT_FILENO) ? 1 : 0,
		.value = &o->ppsdisplay,
		.runtime = true,
	};
	int r;

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if ((r = opt_register(&defs[i])))
			return r;
	return feat_register(&pps);
}

/* ---- Tables ---- */

static uint32_t gid_hash(const uint8_t *gid)
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ gid[i]) * 16777619u;
	return h;
}

static uint32_t group_find(const struct listener *l, const uint8_t *mgid)
{
	for (uint32_t i = gid_hash(mgid) & l->gmask;; i = (i + 1) & l->gmask) {
		uint32_t v = l->gtab[i];

		if (!v)
			return GROUP_NONE;
		if (!memcmp(l->c->groups[v - 1].mgid.raw, mgid, 16))
			return v - 1;
	}
}

static int group_table_build(struct listener *l)
{
	uint32_t size = 16;

	while (size < 2 * l->c->ngroups)
		size *= 2;
	l->gtab = calloc(size, sizeof(*l->gtab));
	l->g = calloc(l->c->ngroups, sizeof(*l->g));
	if (!l->gtab || !l->g)
		return -ENOMEM;
	l->gmask = size - 1;
	for (uint32_t gi = 0; gi < l->c->ngroups; gi++) {
		uint32_t i = gid_hash(l->c->groups[gi].mgid.raw) & l->gmask;

		while (l->gtab[i])
			i = (i + 1) & l->gmask;
		l->gtab[i] = gi + 1;
	}
	return 0;
}

static uint64_t stream_hash(uint32_t group, uint8_t kind, uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull ^ ((uint64_t)group << 1 | kind);

	return h ^ (h >> 29);
}

static int stream_table_grow(struct listener *l)
{
	uint32_t size = l->smask ? 2 * (l->smask + 1) : 64;
	uint32_t *t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (uint32_t k = 0; k < l->ns; k++) {
		struct lstream *s = &l->s[k];
		uint32_t i = (uint32_t)stream_hash(s->group, s->kind, s->id) & (size - 1);

		while (t[i])
			i = (i + 1) & (size - 1);
		t[i] = k + 1;
	}
	free(l->stab);
	l->stab = t;
	l->smask = size - 1;
	return 0;
}

/* The stream (group, kind, id), created on first sight; NULL when out of memory. */
static struct lstream *stream_get(struct listener *l, uint32_t group, uint8_t kind, uint64_t id,
				  const uint8_t *src, uint32_t src_qpn)
{
	uint32_t i;
	struct lstream *s;

	if (l->stab) {
		for (i = (uint32_t)stream_hash(group, kind, id) & l->smask;;
		     i = (i + 1) & l->smask) {
			uint32_t v = l->stab[i];

			if (!v)
				break;
			s = &l->s[v - 1];
			if (s->group == group && s->kind == kind && s->id == id)
				return s;
		}
	}
	if (2 * (l->ns + 1) > (l->stab ? l->smask + 1 : 0) && stream_table_grow(l))
		return NULL;
	if (l->ns == l->scap) {
		uint32_t cap = l->scap ? 2 * l->scap : 16;
		struct lstream *v = realloc(l->s, cap * sizeof(*v));

		if (!v)
			return NULL;
		l->s = v;
		l->scap = cap;
	}
	s = &l->s[l->ns];
	memset(s, 0, sizeof(*s));
	s->seen = calloc(SEEN_WORDS, sizeof(uint64_t));
	s->h = lhist_new(); /* its header only: chunks come with the values (lhist.h) */
	if (!s->seen || !s->h) {
		free(s->seen);
		lhist_free(s->h);
		return NULL;
	}
	s->group = group;
	s->kind = kind;
	s->id = id;
	memcpy(s->src, src, 16);
	s->src_qpn = src_qpn;
	for (i = (uint32_t)stream_hash(group, kind, id) & l->smask; l->stab[i];
	     i = (i + 1) & l->smask)
		;
	l->stab[i] = ++l->ns;
	return s;
}

/* ---- Accounting ---- */

static bool seen_test_set(struct lstream *s, uint64_t seq)
{
	uint64_t *w = &s->seen[(seq % SEEN_WINDOW) / 64];
	uint64_t bit = 1ull << (seq % 64);
	bool was = *w & bit;

	*w |= bit;
	return was;
}

static void seen_clear_range(struct lstream *s, uint64_t from, uint64_t to)
{
	if (to - from >= SEEN_WINDOW) {
		memset(s->seen, 0, SEEN_WORDS * sizeof(uint64_t));
		return;
	}
	for (uint64_t q = from; q <= to; q++)
		s->seen[(q % SEEN_WINDOW) / 64] &= ~(1ull << (q % 64));
}

static void stream_data(struct listener *l, struct lstream *s, uint64_t seq, uint32_t len,
			const struct mct_hdr *h, uint64_t now_mono)
{
	s->rx++;
	s->iv_rx++;
	s->bytes += len;
	l->data_rx++;
	l->iv_rx++;
	if (!s->t_first)
		s->t_first = now_mono;
	s->t_last = now_mono;
	if (!s->have) {
		s->have = true;
		s->first = s->max = seq;
		seen_test_set(s, seq);
		s->unique++;
	} else if (seq > s->max) {
		if (seq > s->max + 1)
			s->gaps++;
		seen_clear_range(s, s->max + 1, seq);
		seen_test_set(s, seq);
		s->max = seq;
		s->unique++;
	} else if (s->max - seq >= SEEN_WINDOW) {
		s->late++;
	} else if (seen_test_set(s, seq)) {
		s->dup++;
	} else {
		s->unique++;
		s->reorder++;
		if (seq < s->first)
			s->first = seq;
	}
	if (h) {
		uint64_t rx = clock_ns(mct_clock_id((enum mct_clock)h->clock));

		s->clock = h->clock;
		if (h->total > s->total)
			s->total = h->total; /* a stream resumed with --first-seq grows */
		if (h->flags & MCT_F_LAST)
			s->last_seen = true;
		if (rx >= h->tx_ns) {
			lhist_record(s->h, rx - h->tx_ns);
			lhist_record(l->iv_hist, rx - h->tx_ns);
		} else {
			s->lat_neg++;
			l->lat_neg++;
		}
	}
}

static uint64_t stream_expected(const struct lstream *s)
{
	if (!s->have)
		return 0;
	return s->total ? s->total : s->max - s->first + 1;
}

/*
 * Gaps, with a missing start and end of a stream whose length the sender announced
 * (its sequence numbers are then 0 .. total - 1).
 */
static uint64_t stream_gaps(const struct lstream *s)
{
	if (!s->have || !s->total)
		return s->gaps;
	return s->gaps + (s->first > 0) + (s->max + 1 < s->total);
}

static uint64_t stream_lost(const struct lstream *s)
{
	uint64_t e = stream_expected(s);

	return e > s->unique ? e - s->unique : 0;
}

/* One received payload of group gi (src: the source GID or ::ffff:IPv4). */
static void on_payload(struct listener *l, uint32_t gi, const uint8_t *p, uint32_t len,
		       const uint8_t *src, uint32_t src_qpn, uint64_t now)
{
	struct lgroup *g = &l->g[gi];
	struct pgm_packet pkt;
	struct mct_hdr h;
	struct lstream *s;

	g->pkts++;
	g->iv_pkts++;
	g->bytes += len;
	if (mct_hdr_get(p, len, &h)) {
		s = stream_get(l, gi, STREAM_KIND_MCT, h.stream, src, src_qpn);
		if (s)
			stream_data(l, s, h.seq, len, &h, now);
		return;
	}
	if (pgm_surely_malformed(p, len)) {
		g->other++;
		return;
	}
	if (pgm_parse(p, len, 0, &pkt) != PGM_OK) {
		g->pgm_bad++;
		return;
	}
	if (pkt.type != PGM_TYPE_SPM && pkt.type != PGM_TYPE_ODATA && pkt.type != PGM_TYPE_RDATA) {
		g->pgm_other++;
		return;
	}
	{
		uint64_t tsi = 0;

		for (unsigned i = 0; i < PGM_GSI_LEN; i++)
			tsi = tsi << 8 | pkt.gsi[i];
		tsi = tsi << 16 | pgm_packet_tsi_port(&pkt);
		s = stream_get(l, gi, STREAM_KIND_PGM, tsi, src, src_qpn);
	}
	if (!s)
		return;
	if (pkt.type == PGM_TYPE_SPM) {
		s->spm++;
		g->spm++;
		return;
	}
	if (pkt.type == PGM_TYPE_RDATA)
		s->rdata++;
	if (mct_hdr_get(p + pkt.data_offset, pkt.tsdu_len, &h))
		stream_data(l, s, h.seq, len, &h, now);
	else
		stream_data(l, s, pkt.u.data.sqn, len, NULL, now);
}

static void on_recv(struct listener *l, const struct ibv_wc *wc, uint64_t now)
{
	const uint8_t *b = l->mem + (size_t)wc->wr_id * l->slot;
	uint8_t mgid[16], src[16];
	uint32_t gi;

	if (wc->status != IBV_WC_SUCCESS || wc->byte_len < MCT_GRH_LEN) {
		l->rx_errors++;
		return;
	}
	if (l->port.fabric == MCT_IB || mct_roce_hdr_is_ipv6(b)) {
		/* The GRH, or on RoCE the IPv6 header (the same layout): source, group. */
		memcpy(src, b + 8, 16);
		memcpy(mgid, b + 24, 16);
	} else {
		memset(mgid, 0, 10);
		mgid[10] = mgid[11] = 0xff;
		memcpy(src, mgid, 12);
		memcpy(mgid + 12, b + MCT_IPV4_OFF + 16, 4);
		memcpy(src + 12, b + MCT_IPV4_OFF + 12, 4);
	}
	gi = group_find(l, mgid);
	if (gi == GROUP_NONE) {
		l->unknown_group++;
		return;
	}
	if (l->dump) {
		const struct group *g = l->c->groups[gi].spec;
		uint32_t sip = 0;

		if (l->port.fabric == MCT_ROCE)
			memcpy(&sip, src + 12, 4);
		pcapdump_write(l->dump, clock_ns(CLOCK_REALTIME), sip, g->addr, g->port,
			       b + MCT_GRH_LEN, wc->byte_len - MCT_GRH_LEN);
	}
	on_payload(l, gi, b + MCT_GRH_LEN, wc->byte_len - MCT_GRH_LEN, src, wc->src_qp, now);
}

/* ---- Receive queue ---- */

/*
 * Post receive buffers bufs[0..n) on QP qi as one chain. Those a full receive queue
 * refuses (ENOMEM: a device may free a receive's slot just after its completion shows,
 * simfabric does) wait in l->deferred for post_deferred(); other failures are counted
 * in rx_errors (the buffers are lost to the queue). Returns 0 or the verbs error.
 */
static int post_recvs(struct listener *l, uint32_t qi, const uint32_t *bufs, uint32_t n)
{
	struct ibv_recv_wr *bad = NULL;
	int r;

	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		l->rsge[i] =
			(struct ibv_sge){.addr = (uintptr_t)(l->mem + (size_t)bufs[i] * l->slot),
					 .length = l->slot,
					 .lkey = l->mr->lkey};
		l->rwr[i] = (struct ibv_recv_wr){.wr_id = bufs[i],
						 .sg_list = &l->rsge[i],
						 .num_sge = 1,
						 .next = i + 1 < n ? &l->rwr[i + 1] : NULL};
	}
	r = ibv_post_recv(l->qp[qi], l->rwr, &bad);
	if (r) {
		uint32_t first = bad ? (uint32_t)(bad - l->rwr) : 0;

		for (uint32_t i = first; i < n; i++) {
			if (r == ENOMEM)
				l->deferred[l->ndeferred++] = bufs[i];
			else
				l->rx_errors++;
		}
	}
	return r;
}

/* Post the receives a full queue refused before, one at a time (rare). */
static void post_deferred(struct listener *l)
{
	uint32_t n = l->ndeferred;

	l->ndeferred = 0;
	for (uint32_t i = 0; i < n; i++)
		post_recvs(l, l->deferred[i] / l->o->rq, &l->deferred[i], 1);
}

static int setup(struct listener *l, char *err, size_t errlen)
{
	struct lopts *o = l->o;
	struct mct_cfg *c = l->c;
	uint32_t gpq, *bufs;
	size_t memlen;
	int r;

	for (uint32_t i = 0; o->dump && i < c->ngroups; i++)
		if (c->groups[i].spec->roce_v6)
			return snprintf(err, errlen,
					"--dump: %s: an IPv6 group (the pcap file holds IPv4 UDP)",
					c->groups[i].spec->spec),
			       -EINVAL;
	if (o->dump && !(l->dump = pcapdump_open(o->dump)))
		return snprintf(err, errlen, "%s: %s", o->dump, strerror(errno)), -errno;
	if ((r = mct_port_open(&l->port, c, err, errlen)))
		return r;
	nic_ctr_init(&l->nic, l->port.ctx->device->ibdev_path, l->port.port);
	l->nic_base = l->nic.avail;
	gpq = l->port.dattr.max_mcast_qp_attach > 0 ? (uint32_t)l->port.dattr.max_mcast_qp_attach
						    : 1;
	l->nqp = (c->ngroups + gpq - 1) / gpq;
	if (o->rq > (uint32_t)l->port.dattr.max_qp_wr)
		o->rq = (uint32_t)l->port.dattr.max_qp_wr;
	l->slot = (MCT_GRH_LEN + l->port.mtu + 63u) & ~63u;
	l->nbuf = l->nqp * o->rq;
	memlen = (size_t)l->nbuf * l->slot;
	memlen = (memlen + 4095) & ~(size_t)4095; /* aligned_alloc wants a multiple of 4096 */
	l->mem = aligned_alloc(4096, memlen);
	l->qp = calloc(l->nqp, sizeof(*l->qp));
	l->rwr = calloc(o->rq, sizeof(*l->rwr));
	l->rsge = calloc(o->rq, sizeof(*l->rsge));
	bufs = calloc(o->rq, sizeof(*bufs));
	l->deferred = calloc(l->nbuf, sizeof(*l->deferred));
	l->iv_hist = lhist_new();
	if (!l->mem || !l->qp || !l->rwr || !l->rsge || !bufs || !l->deferred || !l->iv_hist) {
		free(bufs);
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	}
	l->mr = ibv_reg_mr(l->port.pd, l->mem, memlen, IBV_ACCESS_LOCAL_WRITE);
	l->cch = o->busy ? NULL : ibv_create_comp_channel(l->port.ctx);
	l->cq = ibv_create_cq(l->port.ctx, (int)l->nbuf, NULL, l->cch, 0);
	if (!l->mr || (!o->busy && !l->cch) || !l->cq) {
		free(bufs);
		return snprintf(err, errlen, "%s: verbs resources: %s", l->port.dev,
				strerror(errno)),
		       -errno;
	}
	for (uint32_t q = 0; q < l->nqp; q++) {
		l->qp[q] = mct_qp_create(&l->port, l->cq, 1, o->rq, BR_UDP_QKEY);
		if (!l->qp[q]) {
			free(bufs);
			return snprintf(err, errlen, "create QP: %s", strerror(errno)), -errno;
		}
		for (uint32_t i = 0; i < o->rq; i++)
			bufs[i] = q * o->rq + i;
		if ((r = post_recvs(l, q, bufs, o->rq))) {
			free(bufs);
			return snprintf(err, errlen, "ibv_post_recv: %s", strerror(r)), -r;
		}
	}
	free(bufs);
	if ((r = mct_groups_join(&l->port, c->groups, c->ngroups, false, err, errlen)))
		return r;
	for (uint32_t gi = 0; gi < c->ngroups; gi++) {
		struct mct_group *g = &c->groups[gi];

		if ((r = ibv_attach_mcast(l->qp[gi / gpq], &g->mgid, (uint16_t)g->mlid)))
			return snprintf(err, errlen, "%s: ibv_attach_mcast: %s", g->spec->spec,
					strerror(r)),
			       -r;
	}
	if (group_table_build(l))
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	if (!o->busy && ibv_req_notify_cq(l->cq, 0))
		return snprintf(err, errlen, "ibv_req_notify_cq failed"), -EIO;
	return 0;
}

/* Poll the CQ empty, account, and repost the buffers (a chain per QP and poll). */
static int drain(struct listener *l)
{
	struct ibv_wc wc[CQ_BURST];
	int total = 0;

	for (;;) {
		int n;
		uint32_t bufs[CQ_BURST];

		if (l->ndeferred)
			post_deferred(l);
		n = ibv_poll_cq(l->cq, CQ_BURST, wc);
		if (n <= 0)
			return total;
		total += n;
		uint64_t now = mono_ns();

		for (int i = 0; i < n; i++)
			on_recv(l, &wc[i], now);
		/* Repost per QP (a buffer goes back to the QP that owns it). */
		for (uint32_t q = 0; q < l->nqp; q++) {
			uint32_t k = 0;

			for (int i = 0; i < n; i++)
				if (wc[i].wr_id / l->o->rq == q)
					bufs[k++] = (uint32_t)wc[i].wr_id;
			post_recvs(l, q, bufs, k);
		}
	}
}

static void fmt_us(char *b, size_t n, uint64_t ns)
{
	snprintf(b, n, "%.2f", (double)ns / 1000.0);
}

static uint64_t total_lost(const struct listener *l)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < l->ns; i++)
		v += stream_lost(&l->s[i]);
	return v;
}

static uint64_t total_dup(const struct listener *l)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < l->ns; i++)
		v += l->s[i].dup;
	return v;
}

/*
 * nic_dropped - the port's drops since the start as of the last nic_ctr_read(), as text
 * into b: "-" when unknown (the counter file was missing or unreadable at the start or
 * at the last read), never 0. Returns false then.
 */
static bool nic_dropped(const struct listener *l, char *b, size_t n)
{
	uint64_t v;

	if (!l->nic_base || !nic_ctr_get(&l->nic, false, &v)) {
		snprintf(b, n, "-");
		return false;
	}
	snprintf(b, n, "%" PRIu64, v);
	return true;
}

static void live_line(struct listener *l, uint64_t now, uint64_t iv_ns)
{
	char p50[32], p99[32], mx[32], nic[24];
	double secs = (double)(now - l->t_start) / 1e9;

	fmt_us(p50, sizeof(p50), lhist_percentile(l->iv_hist, 50));
	fmt_us(p99, sizeof(p99), lhist_percentile(l->iv_hist, 99));
	fmt_us(mx, sizeof(mx), l->iv_hist->max);
	nic_ctr_read(&l->nic);
	nic_dropped(l, nic, sizeof(nic));
	fprintf(l->o->json ? stderr : stdout,
		"mclisten: %8.1fs pps=%.0f rx=%" PRIu64 " lost=%" PRIu64 " dup=%" PRIu64
		" nic_rx_dropped=%s streams=%u p50=%sus p99=%sus max=%sus\n",
		secs, (double)l->iv_rx * 1e9 / (double)iv_ns, l->data_rx, total_lost(l),
		total_dup(l), nic, l->ns, p50, p99, mx);
	fflush(stdout);
}

static void run(struct listener *l)
{
	const struct lopts *o = l->o;
	uint64_t iv_ns = o->interval_ms * 1000000ull;
	uint64_t now, next_tick, end;

	l->t_start = mono_ns();
	next_tick = l->t_start + iv_ns;
	end = o->duration_ms ? l->t_start + o->duration_ms * 1000000ull : UINT64_MAX;
	while (!stop) {
		drain(l);
		now = mono_ns();
		if (o->count && l->data_rx >= o->count)
			break;
		if (now >= end)
			break;
		mccon_serve(l->con, now);
		if (stop)
			break;
		if (now >= next_tick) {
			/* Each line covers one interval (also the first after enable). */
			if (atomic_load(&o->ppsdisplay))
				live_line(l, now, iv_ns);
			l->iv_rx = 0;
			lhist_reset(l->iv_hist);
			next_tick += iv_ns;
			if (next_tick <= now)
				next_tick = now + iv_ns;
			continue;
		}
		if (!o->busy) {
			uint64_t until = next_tick < end ? next_tick : end;
			/* The console's fd beside the completions: a command wakes us. */
			struct pollfd pfd[2] = {{.fd = l->cch->fd, .events = POLLIN},
						{.fd = mccon_fd(l->con), .events = POLLIN}};
			int ms = (int)((until - now + 999999) / 1000000);

			if (poll(pfd, l->con ? 2 : 1, ms) > 0 && pfd[1].revents)
				mccon_poll(l->con);
			if (pfd[0].revents) {
				struct ibv_cq *cq;
				void *ctx;

				if (!ibv_get_cq_event(l->cch, &cq, &ctx)) {
					ibv_ack_cq_events(cq, 1);
					ibv_req_notify_cq(cq, 0);
				}
			}
		}
	}
	drain(l);
	l->t_end = mono_ns();
	nic_ctr_read(&l->nic);
}

/* ---- Reports ---- */

static void stream_name(const struct lstream *s, char *b, size_t n)
{
	if (s->kind == STREAM_KIND_MCT)
		snprintf(b, n, "id:%u", (uint32_t)s->id);
	else
		snprintf(b, n, "tsi:%012" PRIx64 ".%u", s->id >> 16, (unsigned)(s->id & 0xffff));
}

static void src_name(const struct listener *l, const struct lstream *s, char *b, size_t n)
{
	char a[INET6_ADDRSTRLEN];

	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

	/* RoCE over IPv4: ::ffff:a.b.c.d, written as a.b.c.d; IPv6 sources as they are. */
	if (l->port.fabric == MCT_ROCE && !memcmp(s->src, mapped, 12))
		inet_ntop(AF_INET, s->src + 12, a, sizeof(a));
	else
		inet_ntop(AF_INET6, s->src, a, sizeof(a));
	snprintf(b, n, "%s/%#x", a, s->src_qpn);
}

static double stream_pps(const struct lstream *s)
{
	return s->t_last > s->t_first ? (double)(s->rx - 1) * 1e9 / (double)(s->t_last - s->t_first)
				      : 0;
}

static const double pcts[] = {50, 90, 99, 99.9, 99.99};
static const char *const pct_names[] = {"p50", "p90", "p99", "p99.9", "p99.99"};
#define NPCTS (sizeof(pcts) / sizeof(pcts[0]))

struct totals {
	uint64_t rx, unique, lost, gaps, dup, reorder, late, spm, other, pgm_bad, pgm_other;
	uint64_t lat_unrecorded; /* latency values in no histogram bucket (lhist.h: lost) */
	uint64_t lat_hist_bytes; /* the memory of the latency histograms (lhist_bytes) */
	uint32_t groups;
};

static void totals_get(const struct listener *l, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < l->ns; i++) {
		const struct lstream *s = &l->s[i];

		t->rx += s->rx;
		t->unique += s->unique;
		t->lost += stream_lost(s);
		t->gaps += stream_gaps(s);
		t->dup += s->dup;
		t->reorder += s->reorder;
		t->late += s->late;
		t->lat_unrecorded += s->h->lost;
		t->lat_hist_bytes += lhist_bytes(s->h);
	}
	t->lat_hist_bytes += lhist_bytes(l->iv_hist);
	for (uint32_t i = 0; i < l->c->ngroups; i++) {
		t->spm += l->g[i].spm;
		t->other += l->g[i].other;
		t->pgm_bad += l->g[i].pgm_bad;
		t->pgm_other += l->g[i].pgm_other;
		t->groups += l->g[i].pkts ? 1 : 0;
	}
}

/* The text report as of t_end (CLOCK_MONOTONIC ns). */
static void report_text(const struct listener *l, FILE *out, uint64_t t_end)
{
	double secs = t_end > l->t_start ? (double)(t_end - l->t_start) / 1e9 : 0;
	struct totals t;
	char nic[24];

	fprintf(out, "mclisten: %.3f s on %s:%u (%s)\n", secs, l->port.dev, l->port.port,
		mct_fabric_name(l->port.fabric));
	fprintf(out, "%-22s %10s %12s %8s %8s %8s %6s\n", "group", "packets", "pps", "other",
		"pgm_bad", "pgm_oth", "spm");
	for (uint32_t i = 0; i < l->c->ngroups; i++) {
		const struct lgroup *g = &l->g[i];

		fprintf(out,
			"%-22s %10" PRIu64 " %12.1f %8" PRIu64 " %8" PRIu64 " %8" PRIu64
			" %6" PRIu64 "\n",
			l->c->groups[i].spec->spec, g->pkts, secs > 0 ? (double)g->pkts / secs : 0,
			g->other, g->pgm_bad, g->pgm_other, g->spm);
	}
	if (l->ns) {
		fprintf(out, "%-24s %-16s %-30s %9s %7s %6s %6s %6s %6s %11s %5s", "stream",
			"group", "source/qpn", "rx", "lost", "gaps", "dup", "reord", "late", "pps",
			"clock");
		for (size_t k = 0; k < NPCTS; k++)
			fprintf(out, " %9s", pct_names[k]);
		fprintf(out, " %9s  (latency in us)\n", "max");
	}
	for (uint32_t i = 0; i < l->ns; i++) {
		const struct lstream *s = &l->s[i];
		char name[48], src[80], v[32];

		stream_name(s, name, sizeof(name));
		src_name(l, s, src, sizeof(src));
		fprintf(out,
			"%-24s %-16s %-30s %9" PRIu64 " %7" PRIu64 " %6" PRIu64 " %6" PRIu64
			" %6" PRIu64 " %6" PRIu64 " %11.1f %5s",
			name, l->c->groups[s->group].spec->spec, src, s->rx, stream_lost(s),
			stream_gaps(s), s->dup, s->reorder, s->late, stream_pps(s),
			!s->h->count			  ? "-"
			: s->clock == MCT_CLOCK_MONOTONIC ? "mono"
							  : "real");
		for (size_t k = 0; k < NPCTS; k++) {
			fmt_us(v, sizeof(v), lhist_percentile(s->h, pcts[k]));
			fprintf(out, " %9s", s->h->count ? v : "-");
		}
		fmt_us(v, sizeof(v), s->h->max);
		fprintf(out, " %9s\n", s->h->count ? v : "-");
	}
	totals_get(l, &t);
	nic_dropped(l, nic, sizeof(nic));
	fprintf(out,
		"mclisten: received=%" PRIu64 " unique=%" PRIu64 " lost=%" PRIu64 " gaps=%" PRIu64
		" dup=%" PRIu64 " reordered=%" PRIu64 " late=%" PRIu64 " streams=%u groups=%u"
		" spm=%" PRIu64 " other=%" PRIu64 " pgm_bad=%" PRIu64 " unknown_group=%" PRIu64
		" rx_errors=%" PRIu64 " lat_negative=%" PRIu64 " nic_rx_dropped=%s\n",
		t.rx, t.unique, t.lost, t.gaps, t.dup, t.reorder, t.late, l->ns, t.groups, t.spm,
		t.other, t.pgm_bad, l->unknown_group, l->rx_errors, l->lat_neg, nic);
	if (t.lat_unrecorded)
		fprintf(out,
			"mclisten: lat_unrecorded=%" PRIu64
			" (out of memory: latency values left out of the percentiles)\n",
			t.lat_unrecorded);
}

/* The --json report as of t_end (CLOCK_MONOTONIC ns). */
static void report_json(const struct listener *l, FILE *out, uint64_t t_end)
{
	double secs = t_end > l->t_start ? (double)(t_end - l->t_start) / 1e9 : 0;
	struct totals t;
	char nic[24];

	totals_get(l, &t);
	/* null: the port has no readable hw_counters/out_of_buffer (unknown, not 0). */
	if (!nic_dropped(l, nic, sizeof(nic)))
		snprintf(nic, sizeof(nic), "null");
	fprintf(out,
		"{\"duration_s\": %.3f, \"device\": \"%s\", \"port\": %u, \"fabric\": \"%s\",\n",
		secs, l->port.dev, l->port.port, mct_fabric_name(l->port.fabric));
	fprintf(out,
		" \"totals\": {\"received\": %" PRIu64 ", \"unique\": %" PRIu64
		", \"lost\": %" PRIu64 ", \"gaps\": %" PRIu64 ", \"dup\": %" PRIu64
		", \"reordered\": %" PRIu64 ", \"late\": %" PRIu64
		", \"streams\": %u, \"groups\": %u, \"spm\": %" PRIu64 ", \"other\": %" PRIu64
		", \"pgm_bad\": %" PRIu64 ", \"unknown_group\": %" PRIu64
		", \"rx_errors\": %" PRIu64 ", \"lat_negative\": %" PRIu64
		", \"lat_unrecorded\": %" PRIu64 ", \"lat_hist_bytes\": %" PRIu64
		", \"nic_rx_dropped\": %s},\n",
		t.rx, t.unique, t.lost, t.gaps, t.dup, t.reorder, t.late, l->ns, t.groups, t.spm,
		t.other, t.pgm_bad, l->unknown_group, l->rx_errors, l->lat_neg, t.lat_unrecorded,
		t.lat_hist_bytes, nic);
	fprintf(out, " \"groups\": [");
	for (uint32_t i = 0; i < l->c->ngroups; i++) {
		const struct lgroup *g = &l->g[i];

		fprintf(out,
			"%s\n  {\"group\": \"%s\", \"packets\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"other\": %" PRIu64 ", \"pgm_bad\": %" PRIu64
			", \"pgm_other\": %" PRIu64 ", \"spm\": %" PRIu64 "}",
			i ? "," : "", l->c->groups[i].spec->spec, g->pkts, g->bytes, g->other,
			g->pgm_bad, g->pgm_other, g->spm);
	}
	fprintf(out, "],\n \"streams\": [");
	for (uint32_t i = 0; i < l->ns; i++) {
		const struct lstream *s = &l->s[i];
		char name[48], src[80];

		stream_name(s, name, sizeof(name));
		src_name(l, s, src, sizeof(src));
		fprintf(out,
			"%s\n  {\"stream\": \"%s\", \"group\": \"%s\", \"source\": \"%s\", "
			"\"pgm\": "
			"%s"
			", \"received\": %" PRIu64 ", \"unique\": %" PRIu64
			", \"expected\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"gaps\": %" PRIu64
			", \"dup\": %" PRIu64 ", \"reordered\": %" PRIu64 ", \"late\": %" PRIu64
			", \"first_seq\": %" PRIu64 ", \"last_seq\": %" PRIu64 ", \"spm\": %" PRIu64
			", \"rdata\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"rate_pps\": %.1f, \"complete\": %s",
			i ? "," : "", name, l->c->groups[s->group].spec->spec, src,
			s->kind == STREAM_KIND_PGM ? "true" : "false", s->rx, s->unique,
			stream_expected(s), stream_lost(s), stream_gaps(s), s->dup, s->reorder,
			s->late, s->first, s->max, s->spm, s->rdata, s->bytes, stream_pps(s),
			s->last_seen ? "true" : "false");
		if (s->h->count) {
			fprintf(out,
				", \"latency_ns\": {\"clock\": \"%s\", \"count\": %" PRIu64
				", \"unrecorded\": %" PRIu64 ", \"min\": %" PRIu64,
				s->clock == MCT_CLOCK_MONOTONIC ? "monotonic" : "realtime",
				s->h->count, s->h->lost, s->h->min);
			for (size_t k = 0; k < NPCTS; k++)
				fprintf(out, ", \"%s\": %" PRIu64, pct_names[k],
					lhist_percentile(s->h, pcts[k]));
			fprintf(out, ", \"max\": %" PRIu64 "}", s->h->max);
		}
		fprintf(out, "}");
	}
	fprintf(out, "]}\n");
}

/* ---- The console (mccon.h) ---- */

static void con_status(void *arg, FILE *out)
{
	struct listener *l = arg;
	const struct lopts *o = l->o;
	uint64_t now = mono_ns();
	double secs = (double)(now - l->t_start) / 1e9;
	struct totals t;
	char nic[24];

	totals_get(l, &t);
	nic_ctr_read(&l->nic);
	nic_dropped(l, nic, sizeof(nic));
	fprintf(out, "mclisten: listening on %s:%u (%s) for %.1f s%s\n", l->port.dev, l->port.port,
		mct_fabric_name(l->port.fabric), secs, o->busy ? ", busy-polling" : "");
	fprintf(out, "groups:");
	for (uint32_t i = 0; i < l->c->ngroups; i++)
		fprintf(out, " %s", l->c->groups[i].spec->spec);
	fprintf(out, "\nreceived: %" PRIu64 " data packets, %.1f pps so far, %u stream%s\n",
		l->data_rx, secs > 0 ? (double)l->data_rx / secs : 0, l->ns, l->ns == 1 ? "" : "s");
	fprintf(out,
		"loss: unique=%" PRIu64 " lost=%" PRIu64 " gaps=%" PRIu64 " dup=%" PRIu64
		" reordered=%" PRIu64 " late=%" PRIu64 " nic_rx_dropped=%s\n",
		t.unique, t.lost, t.gaps, t.dup, t.reorder, t.late, nic);
	fprintf(out,
		"other: spm=%" PRIu64 " other=%" PRIu64 " pgm_bad=%" PRIu64
		" unknown_group=%" PRIu64 " rx_errors=%" PRIu64 "\n",
		t.spm, t.other, t.pgm_bad, l->unknown_group, l->rx_errors);
	fprintf(out, "stops: ");
	if (o->count)
		fprintf(out, "after %" PRIu64 " data packets, ", o->count);
	if (o->duration_ms)
		fprintf(out, "after %" PRIu64 " s, ", o->duration_ms / 1000);
	fprintf(out, "on shutdown or a signal\n");
	fprintf(out, "ppsdisplay: %s (every %" PRIu64 " ms)\n",
		atomic_load(&o->ppsdisplay) ? "on" : "off", o->interval_ms);
}

static void con_stats(void *arg, FILE *out, bool json)
{
	struct listener *l = arg;

	nic_ctr_read(&l->nic);
	if (json)
		report_json(l, out, mono_ns());
	else
		report_text(l, out, mono_ns());
}

static void con_shutdown(void *arg)
{
	(void)arg;
	stop = 1;
}

static const struct mccon_ops con_ops = {
	.status = con_status,
	.stats = con_stats,
	.shutdown = con_shutdown,
};

static void teardown(struct listener *l)
{
	if (l->qp) {
		for (uint32_t gi = 0; gi < l->c->ngroups; gi++) {
			struct mct_group *g = &l->c->groups[gi];
			uint32_t gpq = (uint32_t)l->port.dattr.max_mcast_qp_attach;

			if (g->joined && gpq && l->qp[gi / gpq])
				ibv_detach_mcast(l->qp[gi / gpq], &g->mgid, (uint16_t)g->mlid);
		}
		for (uint32_t q = 0; q < l->nqp; q++)
			if (l->qp[q])
				ibv_destroy_qp(l->qp[q]);
	}
	if (l->cq)
		ibv_destroy_cq(l->cq);
	if (l->cch)
		ibv_destroy_comp_channel(l->cch);
	if (l->mr)
		ibv_dereg_mr(l->mr);
	mct_port_close(&l->port, l->c->groups, l->c->ngroups);
	if (pcapdump_close(l->dump)) {
		fprintf(stderr, "mclisten: %s: write error\n", l->o->dump);
		l->dump_failed = true;
	}
	for (uint32_t i = 0; i < l->ns; i++) {
		free(l->s[i].seen);
		lhist_free(l->s[i].h);
	}
	free(l->s);
	free(l->stab);
	free(l->gtab);
	free(l->g);
	free(l->qp);
	free(l->rwr);
	free(l->rsge);
	free(l->deferred);
	free(l->mem);
	lhist_free(l->iv_hist);
}

int main(int argc, char **argv)
{
	static struct lopts o = {.interval_ms = DEF_INTERVAL_MS, .rq = DEF_RQ};
	static struct listener l;
	struct mct_cfg c = {.prog = "mclisten"};
	char err[OPT_ERR_LEN];
	struct sigaction sa = {.sa_handler = on_signal};
	int r;

	if (opt_register_builtin(stdout, "mclisten") || mct_options_register(&c) ||
	    register_options(&o)) {
		fprintf(stderr, "mclisten: option registry: %s\n", strerror(ENOMEM));
		return 1;
	}
	r = opt_parse_argv(argc, argv, err, sizeof(err));
	if (r >= 0)
		r = mct_options_check(&c, r == OPT_EXIT, err, sizeof(err));
	if (r) {
		if (r < 0)
			fprintf(stderr, "mclisten: %s\n", err);
		mct_cfg_free(&c);
		opt_registry_clear();
		feat_registry_clear();
		return r < 0 ? 2 : 0;
	}
	l.o = &o;
	l.c = &c;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (c.control[0] &&
	    !(l.con = mccon_open("mclisten", c.control, &con_ops, &l, err, sizeof(err)))) {
		fprintf(stderr, "mclisten: %s\n", err);
		mct_cfg_free(&c);
		opt_registry_clear();
		feat_registry_clear();
		return 1;
	}
	r = setup(&l, err, sizeof(err));
	if (r) {
		fprintf(stderr, "mclisten: %s\n", err);
	} else {
		/* With --json, stdout holds the report only. */
		fprintf(o.json ? stderr : stdout, "mclisten: joined %u group%s on %s:%u (%s)\n",
			c.ngroups, c.ngroups == 1 ? "" : "s", l.port.dev, l.port.port,
			mct_fabric_name(l.port.fabric));
		fflush(stdout);
		run(&l);
		if (o.json)
			report_json(&l, stdout, l.t_end);
		else
			report_text(&l, stdout, l.t_end);
		fflush(stdout);
	}
	mccon_close(l.con);
	teardown(&l);
	mct_cfg_free(&c);
	opt_registry_clear();
	feat_registry_clear();
	if (r)
		return 1;
	if (l.dump_failed)
		return 1;
	return o.count && l.data_rx < o.count ? 1 : 0;
}
