// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mcsender - a UD multicast test sender (docs/mcsender.1), the companion of ib2roce
 * that the reference bridge shipped under this name: same options for the port and the
 * groups, PGM (RFC 3208) or plain payloads, open-loop at a fixed packet rate.
 *
 * Streams: --streams N per group (default 1), numbered i = 0 .. groups*N-1 (group
 * i / N); stream i sends from QP i % --qps, with stream id BASE + i (--stream-id) in
 * plain payloads and, with --pgm, TSI = GSI (BASE in bytes 0-3, "MC" in 4-5) + source
 * port PGM_SPORT_BASE + i. Packets go round-robin over the streams; a burst of --burst
 * packets leaves every burst/rate seconds (CLOCK_MONOTONIC absolute deadlines; a late
 * burst is sent at once, the schedule does not slip). Every packet carries struct
 * mct_hdr (sequence number from 0 and the send time in ns of --clock), at the start of
 * the payload, or of the ODATA data with --pgm.
 *
 * PGM (RFC 3208 6.1): an SPM per stream before its first ODATA, ambient SPMs for every
 * stream every --spm-interval ms, heartbeat SPMs when a stream's data pauses (the first
 * --spm-heartbeat ms after its last ODATA, the interval doubling until it reaches the
 * ambient one), ODATA with OPT_SYN on the first packet and OPT_FIN on the last (with
 * --count), and a final SPM per stream announcing its last SQN. Checksums are filled
 * (pgm/).
 *
 * Sends: one WR per packet, chained per QP and posted once per burst, one signaled send
 * in SIG_EVERY (and the last of each chain); a QP never has more than its send queue
 * outstanding (the sender waits for completions, counted in sq_waits).
 *
 * Console (--control, mccon.h): served on this thread between bursts, every
 * MCCON_POLL_MS at most while sending; a sleep until the next deadline waits on the
 * console's fd as well (mccon_wait), so a command is answered at once and the deadlines
 * stay absolute.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "mccon.h"
#include "mctool.h"
#include "options.h"
#include "pgm.h"

#define SIG_EVERY	   16
#define SQ_DEPTH	   512
#define MAX_BURST	   4096
#define PGM_SPORT_BASE	   0x8000u
#define PGM_GSI_TAG0	   'M'
#define PGM_GSI_TAG1	   'C'
#define DEF_RATE	   1000
#define DEF_SIZE	   128
#define DEF_SPM_MS	   1000
#define DEF_HB_MS	   100
#define MAX_SIZES	   64
#define DRAIN_TIMEOUT_NS   5000000000ull
#define PGM_ODATA_FIXED	   24u /* common header 16 + DATA_SQN/DATA_TRAIL 8 */
#define PGM_OPT_HDR	   4u  /* OPT_LENGTH, and each flag-only option (OPT_SYN, OPT_FIN) */
#define PGM_ODATA_OVERHEAD (PGM_ODATA_FIXED + 3u * PGM_OPT_HDR) /* with SYN and FIN */
#define PPS_INTERVAL_NS	   1000000000ull			/* ppsdisplay: a line a second */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct sopts {
	_Atomic int64_t rate;	    /* feature sendrate: pps, 0 = as fast as possible */
	_Atomic int64_t len;	    /* feature sendlen: the size when no --size list */
	_Atomic int64_t ppsdisplay; /* feature: a line of rates every second */
	uint32_t sizes[MAX_SIZES];
	uint32_t nsizes;
	uint32_t size_lo, size_hi; /* --size A-B: uniform in [A, B] */
	uint32_t burst;
	uint64_t count;	      /* per stream, 0 = until --duration / signal */
	uint64_t duration_ms; /* 0 = until --count / signal */
	uint32_t nqps;
	uint32_t streams; /* per group */
	bool pgm;
	bool json;
	uint32_t stream_base;
	bool stream_base_set;
	enum mct_clock clock;
	uint64_t first_seq;  /* sequence number of every stream's first packet */
	uint64_t skip_every; /* 0, or every n-th sequence number is not sent (a gap) */
	uint64_t stop_every; /* 0, or SIGSTOP self after every n data packets (all streams) */
	uint64_t spm_ms;     /* ambient SPM interval */
	uint64_t hb_ms;	     /* first heartbeat SPM after data */
};

struct stream {
	uint32_t id;
	uint32_t group;
	uint32_t qp;
	uint64_t seq; /* next */
	uint32_t spm_sqn;
	struct pgm_tsi tsi;
	bool done;
	uint64_t hb_next; /* CLOCK_MONOTONIC ns of the next heartbeat SPM, 0 = none */
	uint64_t hb_ivl;  /* the current heartbeat interval (doubles up to the ambient one) */
};

struct sqp {
	struct ibv_qp *qp;
	uint8_t *slots; /* SQ_DEPTH * slot bytes */
	uint64_t posted, done;
	struct ibv_send_wr wr[MAX_BURST];
	struct ibv_sge sge[MAX_BURST];
	uint32_t nwr;
};

struct sender {
	struct sopts *o;
	struct mct_cfg *c;
	struct mct_port port;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;
	uint32_t slot;
	struct sqp *q;
	struct stream *s;
	uint32_t ns;
	uint32_t next_stream, next_size;
	uint64_t rng;
	struct pgm_nla nla;  /* SPM path NLA of IPv4 groups: the port's IPv4 address */
	struct pgm_nla nla6; /* of IPv6 groups (RoCE): the address the AH sends from */
	struct mccon *con;   /* --control: the console, NULL without */
	uint64_t rate;	     /* the packet rate in effect (feature sendrate at the start) */
	uint64_t pps_next, pps_t, pps_sent; /* ppsdisplay: next line, last line and sent then */
	/* Results. */
	uint64_t sent, bytes, errors, spm, sq_waits, late_bursts;
	uint64_t t_start, t_end;
	uint64_t stops, stopped_ns; /* --stop-every: times stopped, and for how long in all */
};

/* ---- Options ---- */

static int opt_rate(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 0, 100000000, &v, err, len);

	if (!r)
		atomic_store(&((struct sopts *)ctx)->rate, (int64_t)v);
	return r;
}

static int opt_size(void *ctx, const char *arg, char *err, size_t len)
{
	struct sopts *o = ctx;
	char buf[512], *save = NULL, *tok;
	uint64_t a, b;
	const char *dash = strchr(arg, '-');
	int r;

	if (dash && !strchr(arg, ',')) {
		char lo[32];

		if ((size_t)(dash - arg) >= sizeof(lo))
			return opt_errf(err, len, -EINVAL, "'%s' is not a size range A-B", arg);
		memcpy(lo, arg, (size_t)(dash - arg));
		lo[dash - arg] = 0;
		if ((r = opt_parse_uint(lo, 1, 65536, &a, err, len)) ||
		    (r = opt_parse_uint(dash + 1, 1, 65536, &b, err, len)))
			return r;
		if (a > b)
			return opt_errf(err, len, -EINVAL, "size range '%s' is empty", arg);
		o->size_lo = (uint32_t)a;
		o->size_hi = (uint32_t)b;
		o->nsizes = 0;
		return 0;
	}
	if (strlen(arg) >= sizeof(buf))
		return opt_errf(err, len, -EINVAL, "size list too long");
	strcpy(buf, arg);
	o->nsizes = 0;
	o->size_lo = o->size_hi = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == MAX_SIZES)
			return opt_errf(err, len, -EINVAL, "more than %d sizes", MAX_SIZES);
		if ((r = opt_parse_uint(tok, 1, 65536, &a, err, len)))
			return r;
		o->sizes[o->nsizes++] = (uint32_t)a;
	}
	if (!o->nsizes)
		return opt_errf(err, len, -EINVAL, "'%s' names no size", arg);
	return 0;
}

static int opt_u32(const char *arg, uint64_t lo, uint64_t hi, uint32_t *out, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, lo, hi, &v, err, len);

	if (!r)
		*out = (uint32_t)v;
	return r;
}

static int opt_burst(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_u32(arg, 1, MAX_BURST, &((struct sopts *)ctx)->burst, err, len);
}

static int opt_qps(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_u32(arg, 1, 1024, &((struct sopts *)ctx)->nqps, err, len);
}

static int opt_streams(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_u32(arg, 1, 4096, &((struct sopts *)ctx)->streams, err, len);
}

static int opt_count(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 1, UINT32_MAX, &((struct sopts *)ctx)->count, err, len);
}

static int opt_duration(void *ctx, const char *arg, char *err, size_t len)
{
	uint64_t v;
	int r = opt_parse_uint(arg, 1, 86400 * 365, &v, err, len);

	if (!r)
		((struct sopts *)ctx)->duration_ms = v * 1000;
	return r;
}

static int opt_spm(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 10, 3600000, &((struct sopts *)ctx)->spm_ms, err, len);
}

static int opt_first_seq(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 0, UINT64_MAX >> 1, &((struct sopts *)ctx)->first_seq, err, len);
}

static int opt_skip_every(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 2, UINT32_MAX, &((struct sopts *)ctx)->skip_every, err, len);
}

static int opt_stop_every(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 1, UINT64_MAX >> 1, &((struct sopts *)ctx)->stop_every, err,
			      len);
}

static int opt_hb(void *ctx, const char *arg, char *err, size_t len)
{
	return opt_parse_uint(arg, 1, 3600000, &((struct sopts *)ctx)->hb_ms, err, len);
}

static int opt_stream_id(void *ctx, const char *arg, char *err, size_t len)
{
	struct sopts *o = ctx;
	int r = opt_u32(arg, 0, UINT32_MAX, &o->stream_base, err, len);

	if (!r)
		o->stream_base_set = true;
	return r;
}

static int opt_clock(void *ctx, const char *arg, char *err, size_t len)
{
	struct sopts *o = ctx;

	if (!strcmp(arg, "realtime"))
		o->clock = MCT_CLOCK_REALTIME;
	else if (!strcmp(arg, "monotonic"))
		o->clock = MCT_CLOCK_MONOTONIC;
	else
		return opt_errf(err, len, -EINVAL, "'%s': expected realtime or monotonic", arg);
	return 0;
}

static int opt_flag(void *ctx, const char *arg, char *err, size_t len)
{
	(void)arg;
	(void)err;
	(void)len;
	*(bool *)ctx = true;
	return 0;
}

static int register_options(struct sopts *o)
{
	const struct opt_def defs[] = {
		{"rate", 'R', "pps", false,
		 "packets per second over all streams, 0 = as fast as possible (1000)", opt_rate, o,
		 false},
		{"burst", 'b', "n", false, "packets sent back to back every burst/rate s (1)",
		 opt_burst, o, false},
		{"size", 'S', "n[,n...]|min-max", false,
		 "payload bytes: one size, a list used in turn, or uniform in a range (128)",
		 opt_size, o, false},
		{"count", 'n', "n", false, "packets per stream, then stop", opt_count, o, false},
		{"duration", 'D', "secs", false, "stop after this many seconds", opt_duration, o,
		 false},
		{"qps", 'Q', "n", false, "sender QPs (distinct source QPNs) (1)", opt_qps, o,
		 false},
		{"streams", 'N', "n", false, "streams per group (1)", opt_streams, o, false},
		{"pgm", 'P', NULL, false,
		 "send PGM ODATA and SPMs (RFC 3208) instead of plain payloads", opt_flag, &o->pgm,
		 false},
		{"stream-id", 0, "n", false,
		 "id of the first stream (PGM: GSI bytes 0-3) (default: random)", opt_stream_id, o,
		 false},
		{"clock", 0, "realtime|monotonic", false, "clock of the send timestamps (realtime)",
		 opt_clock, o, false},
		{"spm-interval", 0, "ms", false, "ambient SPM interval with --pgm (1000)", opt_spm,
		 o, false},
		{"first-seq", 0, "n", false,
		 "sequence number of each stream's first packet (0); PGM SQNs are its low 32 bits",
		 opt_first_seq, o, false},
		{"skip-every", 0, "n", false,
		 "every n-th sequence number of a stream is not sent: a gap (never the first or "
		 "the last)",
		 opt_skip_every, o, false},
		{"stop-every", 0, "n", false,
		 "after every n data packets (all streams), once completed, stop the process "
		 "(SIGSTOP) until it is continued (SIGCONT)",
		 opt_stop_every, o, false},
		{"spm-heartbeat", 0, "ms", false,
		 "first heartbeat SPM after data with --pgm, doubling up to --spm-interval (100)",
		 opt_hb, o, false},
		{"json", 'j', NULL, false, "print the summary as JSON", opt_flag, &o->json, false},
	};
	const struct feat_def feats[] = {
		{.name = "sendrate",
		 .type = FEAT_INT,
		 .help = "packets per second (the same as --rate)",
		 .def = DEF_RATE,
		 .min = 0,
		 .max = 100000000,
		 .value = &o->rate},
		{.name = "sendlen",
		 .type = FEAT_INT,
		 .help = "payload bytes when --size is not given",
		 .def = DEF_SIZE,
		 .min = 1,
		 .max = 65536,
		 .value = &o->len},
		{.name = "ppsdisplay",
		 .type = FEAT_BOOL,
		 .help = "print a line of the send rate every second",
		 .def = 0,
		 .value = &o->ppsdisplay,
		 .runtime = true},
	};
	int r;

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if ((r = opt_register(&defs[i])))
			return r;
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++)
		if ((r = feat_register(&feats[i])))
			return r;
	return 0;
}

/* ---- Sending ---- */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: deterministic for a seed, good enough for a size mix. */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t next_size(struct sender *sd)
{
	const struct sopts *o = sd->o;

	if (o->nsizes)
		return o->sizes[sd->next_size++ % o->nsizes];
	if (o->size_hi)
		return o->size_lo + (uint32_t)(rng_next(&sd->rng) % (o->size_hi - o->size_lo + 1));
	return (uint32_t)atomic_load(&o->len);
}

static uint32_t min_size(const struct sopts *o)
{
	return o->pgm ? PGM_ODATA_OVERHEAD + MCT_HDR_LEN : MCT_HDR_LEN;
}

static uint32_t max_size(const struct sopts *o)
{
	uint32_t m = 0;

	if (o->nsizes)
		for (uint32_t i = 0; i < o->nsizes; i++)
			m = o->sizes[i] > m ? o->sizes[i] : m;
	else
		m = o->size_hi ? o->size_hi : (uint32_t)atomic_load(&o->len);
	return m;
}

static uint32_t smallest_size(const struct sopts *o)
{
	uint32_t m = UINT32_MAX;

	if (o->nsizes)
		for (uint32_t i = 0; i < o->nsizes; i++)
			m = o->sizes[i] < m ? o->sizes[i] : m;
	else
		m = o->size_hi ? o->size_lo : (uint32_t)atomic_load(&o->len);
	return m;
}

/* Retire completions; spin until QP qi has room when wait. */
static void reap(struct sender *sd, int qi_wait)
{
	struct ibv_wc wc[32];
	uint64_t t0 = 0;

	for (;;) {
		int n = ibv_poll_cq(sd->cq, 32, wc);

		for (int i = 0; i < n; i++) {
			struct sqp *q = &sd->q[wc[i].wr_id >> 40];

			if (wc[i].status != IBV_WC_SUCCESS)
				sd->errors++;
			q->done = wc[i].wr_id & ((1ull << 40) - 1);
		}
		if (qi_wait < 0 || sd->q[qi_wait].posted - sd->q[qi_wait].done < SQ_DEPTH)
			return;
		if (!t0) {
			t0 = mono_ns();
			sd->sq_waits++;
		} else if (mono_ns() - t0 > DRAIN_TIMEOUT_NS) {
			/* No completion for seconds: count the outstanding sends as failed. */
			sd->errors += sd->q[qi_wait].posted - sd->q[qi_wait].done;
			sd->q[qi_wait].done = sd->q[qi_wait].posted;
			return;
		}
	}
}

static void post_chain(struct sender *sd, struct sqp *q)
{
	struct ibv_send_wr *bad;
	int r;

	if (!q->nwr)
		return;
	q->wr[q->nwr - 1].next = NULL;
	q->wr[q->nwr - 1].send_flags |= IBV_SEND_SIGNALED;
	r = ibv_post_send(q->qp, q->wr, &bad);
	if (r) {
		/* The WRs from bad on were not posted: failed sends (their slots are free). */
		uint32_t first = (uint32_t)(bad - q->wr);

		sd->errors += q->nwr - first;
		q->posted -= q->nwr - first;
	}
	q->nwr = 0;
}

/* Queue one WR of len bytes in the next slot of QP qi to group gi. */
static uint8_t *wr_add(struct sender *sd, uint32_t qi, uint32_t gi, uint32_t len)
{
	struct sqp *q = &sd->q[qi];
	struct mct_group *g = &sd->c->groups[gi];
	struct ibv_send_wr *wr;
	uint8_t *buf;

	if (q->posted - q->done >= SQ_DEPTH || q->nwr == MAX_BURST) {
		post_chain(sd, q);
		reap(sd, (int)qi);
	}
	buf = q->slots + (q->posted % SQ_DEPTH) * sd->slot;
	q->posted++;
	wr = &q->wr[q->nwr];
	q->sge[q->nwr] =
		(struct ibv_sge){.addr = (uintptr_t)buf, .length = len, .lkey = sd->mr->lkey};
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = (uint64_t)qi << 40 | q->posted;
	wr->sg_list = &q->sge[q->nwr];
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = q->posted % SIG_EVERY ? 0 : IBV_SEND_SIGNALED;
	wr->wr.ud.ah = g->ah;
	wr->wr.ud.remote_qpn = MCT_MCAST_QPN;
	wr->wr.ud.remote_qkey = g->qkey;
	if (q->nwr)
		q->wr[q->nwr - 1].next = wr;
	q->nwr++;
	return buf;
}

static void send_spm(struct sender *sd, struct stream *s)
{
	uint8_t *buf;
	ssize_t n;
	uint32_t lead = (uint32_t)s->seq - 1; /* nothing sent yet: trail = lead + 1 */
	bool empty = s->seq == sd->o->first_seq;

	buf = wr_add(sd, s->qp, s->group, 0);
	n = pgm_build_spm(buf, sd->slot, &s->tsi, sd->c->groups[s->group].spec->port, s->spm_sqn++,
			  empty ? lead + 1 : lead, lead,
			  sd->c->groups[s->group].spec->roce_v6 && sd->port.fabric == MCT_ROCE
				  ? &sd->nla6
				  : &sd->nla);
	if (n < 0) {
		/* Cannot happen with a valid NLA and a slot of the MTU; counted if it did. */
		sd->errors++;
		n = 0;
	}
	sd->q[s->qp].sge[sd->q[s->qp].nwr - 1].length = (uint32_t)n;
	sd->spm++;
	sd->bytes += (uint64_t)n;
}

/*
 * The stream length a header announces: --first-seq + --count (sequence numbers 0 ..
 * total - 1 make the stream), 0 when open-ended or beyond 32 bits.
 */
static uint32_t stream_total(const struct sopts *o)
{
	uint64_t t = o->first_seq + o->count;

	return o->count && t <= UINT32_MAX ? (uint32_t)t : 0;
}

static void send_data(struct sender *sd, struct stream *s, uint64_t now_ns)
{
	const struct sopts *o = sd->o;
	uint32_t len = next_size(sd);
	uint8_t *buf = wr_add(sd, s->qp, s->group, len);
	struct mct_hdr h = {
		.stream = s->id,
		.seq = s->seq,
		.tx_ns = now_ns,
		.total = stream_total(o),
		.clock = (uint8_t)o->clock,
		.flags = o->count && s->seq + 1 == o->first_seq + o->count ? MCT_F_LAST : 0,
	};

	if (o->pgm) {
		uint8_t data[65536];
		unsigned opts = (s->seq == o->first_seq ? PGM_BUILD_SYN : 0) |
				(h.flags & MCT_F_LAST ? PGM_BUILD_FIN : 0);
		unsigned nflags = !!(opts & PGM_BUILD_SYN) + !!(opts & PGM_BUILD_FIN);
		uint32_t over = PGM_ODATA_FIXED + (nflags ? PGM_OPT_HDR * (1u + nflags) : 0u);
		ssize_t n;

		mct_hdr_put(data, &h);
		memset(data + MCT_HDR_LEN, 0, len - over - MCT_HDR_LEN);
		n = pgm_build_odata(buf, sd->slot, &s->tsi, sd->c->groups[s->group].spec->port,
				    (uint32_t)s->seq, (uint32_t)s->seq, opts, data, len - over);
		if (n != (ssize_t)len)
			sd->errors++;
	} else {
		mct_hdr_put(buf, &h);
		memset(buf + MCT_HDR_LEN, (int)(s->seq & 0xff), len - MCT_HDR_LEN);
	}
	s->seq++;
	/* --skip-every: the sequence number n-1, 2n-1, ... after the first is skipped, never
	 * the last of a counted stream (its FIN / MCT_F_LAST must go out). */
	if (o->skip_every && (s->seq - o->first_seq) % o->skip_every == o->skip_every - 1 &&
	    (!o->count || s->seq + 1 < o->first_seq + o->count))
		s->seq++;
	if (o->count && s->seq == o->first_seq + o->count)
		s->done = true;
	sd->sent++;
	sd->bytes += len;
}

static int setup(struct sender *sd, char *err, size_t errlen)
{
	struct sopts *o = sd->o;
	struct mct_cfg *c = sd->c;
	size_t memlen;
	int r;

	if ((r = mct_port_open(&sd->port, c, err, errlen)))
		return r;
	if (max_size(o) > sd->port.mtu)
		return snprintf(err, errlen, "size %u exceeds the MTU %u of %s", max_size(o),
				sd->port.mtu, sd->port.dev),
		       -EMSGSIZE;
	/* Each work request carries its group's Q_Key (mct_group_qkey); one with the high bit
	 * set means "the QP's Q_Key" instead (IBTA, as simfabric's SF_QKEY_USE_QP). */
	for (uint32_t i = 0; i < c->ngroups; i++)
		if (mct_group_qkey(&sd->port, &c->groups[i]) & 0x80000000u)
			return snprintf(err, errlen,
					"%s: Q_Key 0x%08x is a controlled Q_Key (high bit set): a "
					"send work request cannot carry it (mcsender sends no "
					"controlled Q_Keys)",
					c->groups[i].spec->spec,
					mct_group_qkey(&sd->port, &c->groups[i])),
			       -EINVAL;
	if ((r = mct_groups_join(&sd->port, c->groups, c->ngroups, true, err, errlen)))
		return r;
	sd->cq = ibv_create_cq(sd->port.ctx, (int)(o->nqps * SQ_DEPTH), NULL, NULL, 0);
	if (!sd->cq)
		return snprintf(err, errlen, "ibv_create_cq: %s", strerror(errno)), -errno;
	sd->slot = (sd->port.mtu + 63u) & ~63u;
	memlen = (size_t)o->nqps * SQ_DEPTH * sd->slot;
	memlen = (memlen + 4095) & ~(size_t)4095; /* aligned_alloc wants a multiple of 4096 */
	sd->mem = aligned_alloc(4096, memlen);
	sd->q = calloc(o->nqps, sizeof(*sd->q));
	if (!sd->mem || !sd->q)
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	memset(sd->mem, 0, memlen);
	sd->mr = ibv_reg_mr(sd->port.pd, sd->mem, memlen, IBV_ACCESS_LOCAL_WRITE);
	if (!sd->mr)
		return snprintf(err, errlen, "ibv_reg_mr: %s", strerror(errno)), -errno;
	for (uint32_t i = 0; i < o->nqps; i++) {
		sd->q[i].slots = sd->mem + (size_t)i * SQ_DEPTH * sd->slot;
		sd->q[i].qp = mct_qp_create(&sd->port, sd->cq, SQ_DEPTH, 1, c->groups[0].qkey);
		if (!sd->q[i].qp)
			return snprintf(err, errlen, "create QP: %s", strerror(errno)), -errno;
	}
	sd->ns = c->ngroups * o->streams;
	sd->s = calloc(sd->ns, sizeof(*sd->s));
	if (!sd->s)
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	for (uint32_t i = 0; i < sd->ns; i++) {
		struct stream *s = &sd->s[i];
		uint32_t base = htonl(o->stream_base);

		s->id = o->stream_base + i;
		s->seq = o->first_seq;
		s->group = i / o->streams;
		s->qp = i % o->nqps;
		memcpy(s->tsi.gsi, &base, 4);
		s->tsi.gsi[4] = PGM_GSI_TAG0;
		s->tsi.gsi[5] = PGM_GSI_TAG1;
		s->tsi.sport = (uint16_t)(PGM_SPORT_BASE + (i & 0x7fff));
	}
	pgm_nla_ipv4(&sd->nla, ntohl(sd->port.ipv4));
	/* An IPv6 group's SPMs name the source address its AH sends from (mct_groups_join:
	 * the global address; a link-local group is sent from the link-local one, but one
	 * NLA serves all: the global one when the port has it). */
	if (sd->port.fabric == MCT_ROCE)
		pgm_nla_ipv6(&sd->nla6,
			     sd->port.gid6_index >= 0 ? sd->port.gid6.raw : sd->port.gid6ll.raw);
	return 0;
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000u),
			      .tv_nsec = (long)(t_ns % 1000000000u)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
		;
}

static void post_all(struct sender *sd)
{
	for (uint32_t i = 0; i < sd->o->nqps; i++)
		post_chain(sd, &sd->q[i]);
	reap(sd, -1);
}

/* The earliest heartbeat SPM due over all streams, UINT64_MAX when none. */
static uint64_t heartbeat_next(const struct sender *sd)
{
	uint64_t t = UINT64_MAX;

	for (uint32_t i = 0; i < sd->ns; i++)
		if (sd->s[i].hb_next && sd->s[i].hb_next < t)
			t = sd->s[i].hb_next;
	return t;
}

/* Ambient SPMs for every stream when due; heartbeats of streams whose data paused. */
static void spm_tick(struct sender *sd, uint64_t now, uint64_t *next_ambient)
{
	const struct sopts *o = sd->o;
	uint64_t ambient_ns = o->spm_ms * 1000000ull;

	if (now >= *next_ambient) {
		for (uint32_t i = 0; i < sd->ns; i++)
			send_spm(sd, &sd->s[i]);
		*next_ambient += ambient_ns;
		if (*next_ambient <= now)
			*next_ambient = now + ambient_ns;
	}
	for (uint32_t i = 0; i < sd->ns; i++) {
		struct stream *s = &sd->s[i];

		if (!s->hb_next || now < s->hb_next)
			continue;
		send_spm(sd, s);
		s->hb_ivl *= 2;
		/* Decayed to the ambient rate: the ambient SPMs take over. */
		s->hb_next = s->hb_ivl < ambient_ns ? now + s->hb_ivl : 0;
	}
}

/* Once a second: with ppsdisplay on, a line of the rate since the last one. */
static void pps_tick(struct sender *sd, uint64_t now)
{
	if (now < sd->pps_next)
		return;
	if (atomic_load(&sd->o->ppsdisplay)) {
		FILE *out = sd->o->json ? stderr : stdout;

		fprintf(out,
			"mcsender: %8.1fs pps=%.0f sent=%" PRIu64 " errors=%" PRIu64
			" late_bursts=%" PRIu64 "\n",
			(double)(now - sd->t_start) / 1e9,
			(double)(sd->sent - sd->pps_sent) * 1e9 / (double)(now - sd->pps_t),
			sd->sent, sd->errors, sd->late_bursts);
		fflush(out);
	}
	sd->pps_sent = sd->sent;
	sd->pps_t = now;
	sd->pps_next = now + PPS_INTERVAL_NS;
}

/* Waits for the completion of every send posted (DRAIN_TIMEOUT_NS at most; what did not
 * complete by then is counted in errors and no longer waited for). */
static void complete_all(struct sender *sd)
{
	uint64_t t0 = mono_ns();

	for (uint32_t i = 0; i < sd->o->nqps; i++) {
		struct sqp *q = &sd->q[i];

		while (q->done < q->posted && mono_ns() - t0 < DRAIN_TIMEOUT_NS)
			reap(sd, -1);
		if (q->done < q->posted) {
			sd->errors += q->posted - q->done;
			q->done = q->posted;
		}
	}
}

/*
 * --stop-every: every packet so far sent and completed (delivered: the simulated NIC
 * delivers in ibv_post_send, a real one by the send completion of a UD QP), the process
 * stops itself as a terminal's ^Z would until a SIGCONT; the rate's schedule and
 * --duration resume where they were (the time stopped is added to both).
 */
static void stop_self(struct sender *sd, uint64_t *end)
{
	uint64_t t0;

	post_all(sd);
	complete_all(sd);
	t0 = mono_ns();
	raise(SIGSTOP);
	t0 = mono_ns() - t0;
	sd->stops++;
	sd->stopped_ns += t0;
	if (*end != UINT64_MAX)
		*end += t0;
}

static void run(struct sender *sd)
{
	const struct sopts *o = sd->o;
	clockid_t clk = mct_clock_id(o->clock);
	uint64_t rate = sd->rate = (uint64_t)atomic_load(&o->rate);
	uint64_t burst_ns = rate ? (uint64_t)o->burst * 1000000000ull / rate : 0;
	uint64_t k = 0, next_ambient, end, now;
	uint32_t active = sd->ns;

	sd->t_start = mono_ns();
	end = o->duration_ms ? sd->t_start + o->duration_ms * 1000000ull : UINT64_MAX;
	next_ambient = sd->t_start + o->spm_ms * 1000000ull;
	sd->pps_t = sd->t_start;
	sd->pps_next = sd->t_start + PPS_INTERVAL_NS;
	if (o->pgm) {
		for (uint32_t i = 0; i < sd->ns; i++)
			send_spm(sd, &sd->s[i]);
		post_all(sd);
	}
	while (!stop && active) {
		uint64_t due, wake;

		now = mono_ns();
		if (now >= end)
			break;
		mccon_serve(sd->con, now);
		pps_tick(sd, now);
		if (stop)
			break;
		due = burst_ns ? sd->t_start + sd->stopped_ns + k * burst_ns : now;
		wake = due;
		if (o->pgm) {
			uint64_t hb = heartbeat_next(sd);

			wake = next_ambient < wake ? next_ambient : wake;
			wake = hb < wake ? hb : wake;
		}
		if (atomic_load(&o->ppsdisplay) && sd->pps_next < wake)
			wake = sd->pps_next;
		if (wake > now) {
			uint64_t until = wake < end ? wake : end;

			/* With a console, a command wakes the sleep (the schedule stays put). */
			if (sd->con)
				mccon_wait(sd->con, until);
			else
				sleep_until(until);
			now = mono_ns();
			if (now >= end || stop)
				break;
		}
		if (now >= due) {
			if (burst_ns && now - due > burst_ns)
				sd->late_bursts++;
			k++;
			for (uint32_t j = 0; j < o->burst && active; j++) {
				struct stream *s;

				do
					s = &sd->s[sd->next_stream++ % sd->ns];
				while (s->done);
				send_data(sd, s, clock_ns(clk));
				if (o->pgm) {
					s->hb_ivl = o->hb_ms * 1000000ull;
					s->hb_next = now + s->hb_ivl;
				}
				if (s->done)
					active--;
				if (o->stop_every && sd->sent % o->stop_every == 0 && active)
					break;
			}
			if (o->stop_every && sd->sent % o->stop_every == 0 && active) {
				stop_self(sd, &end);
				continue;
			}
		}
		if (o->pgm)
			spm_tick(sd, now, &next_ambient);
		post_all(sd);
	}
	if (o->pgm) {
		/* Heartbeat: the final lead of every stream. */
		for (uint32_t i = 0; i < sd->ns; i++)
			send_spm(sd, &sd->s[i]);
	}
	post_all(sd);
	sd->t_end = mono_ns();
	complete_all(sd);
}

/* The summary as of t_end (CLOCK_MONOTONIC ns): --json's object, or the text line. */
static void summary_print(const struct sender *sd, FILE *out, bool json, uint64_t t_end)
{
	const struct sopts *o = sd->o;
	uint64_t ran = t_end > sd->t_start ? t_end - sd->t_start : 0;
	double secs = ran > sd->stopped_ns ? (double)(ran - sd->stopped_ns) / 1e9 : 0;
	double pps = secs > 0 ? (double)sd->sent / secs : 0;

	if (json) {
		fprintf(out,
			"{\"sent\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"errors\": %" PRIu64
			", \"spm\": %" PRIu64 ", \"duration_s\": %.3f, \"rate_pps\": %.1f, "
			"\"streams\": %u, \"groups\": %u, \"qps\": %u, \"pgm\": %s, "
			"\"stream_id\": %u, \"sq_waits\": %" PRIu64 ", \"late_bursts\": %" PRIu64
			", \"stops\": %" PRIu64 ", \"device\": \"%s\", \"port\": %u, "
			"\"fabric\": \"%s\"}\n",
			sd->sent, sd->bytes, sd->errors, sd->spm, secs, pps, sd->ns, sd->c->ngroups,
			o->nqps, o->pgm ? "true" : "false", o->stream_base, sd->sq_waits,
			sd->late_bursts, sd->stops, sd->port.dev, sd->port.port,
			mct_fabric_name(sd->port.fabric));
	} else {
		fprintf(out,
			"mcsender: sent=%" PRIu64 " bytes=%" PRIu64 " errors=%" PRIu64
			" spm=%" PRIu64 " duration=%.3f rate=%.1f streams=%u groups=%u qps=%u"
			" stream_id=%u sq_waits=%" PRIu64 " late_bursts=%" PRIu64 "%s",
			sd->sent, sd->bytes, sd->errors, sd->spm, secs, pps, sd->ns, sd->c->ngroups,
			o->nqps, o->stream_base, sd->sq_waits, sd->late_bursts,
			o->stop_every ? "" : "\n");
		if (o->stop_every)
			fprintf(out, " stops=%" PRIu64 "\n", sd->stops);
	}
}

static void summary(const struct sender *sd)
{
	summary_print(sd, stdout, sd->o->json, sd->t_end);
	fflush(stdout);
}

/* ---- The console (mccon.h) ---- */

static void con_status(void *arg, FILE *out)
{
	const struct sender *sd = arg;
	const struct sopts *o = sd->o;
	uint64_t now = mono_ns();
	double secs = (double)(now - sd->t_start) / 1e9;
	/* The rate over the time sending, as the summary's: --stop-every's stops left out
	 * (the console answers between stops only: a stopped process reads nothing). */
	uint64_t stopped = sd->stopped_ns;
	double busy = now - sd->t_start > stopped ? (double)(now - sd->t_start - stopped) / 1e9 : 0;

	fprintf(out, "mcsender: sending %s on %s:%u (%s) for %.1f s\n",
		o->pgm ? "PGM" : "plain payloads", sd->port.dev, sd->port.port,
		mct_fabric_name(sd->port.fabric), secs);
	fprintf(out, "groups:");
	for (uint32_t i = 0; i < sd->c->ngroups; i++)
		fprintf(out, " %s", sd->c->groups[i].spec->spec);
	fprintf(out, "\nstreams: %u (%u per group), stream ids %u-%u, %u QP%s\n", sd->ns,
		o->streams, o->stream_base, o->stream_base + sd->ns - 1, o->nqps,
		o->nqps == 1 ? "" : "s");
	if (sd->rate)
		fprintf(out, "rate: %" PRIu64 " pps in bursts of %u, %.1f pps so far\n", sd->rate,
			o->burst, busy > 0 ? (double)sd->sent / busy : 0);
	else
		fprintf(out, "rate: as fast as possible, %.1f pps so far\n",
			busy > 0 ? (double)sd->sent / busy : 0);
	fprintf(out,
		"sent: %" PRIu64 " packets, %" PRIu64 " bytes, %" PRIu64 " errors, %" PRIu64
		" SPMs, %" PRIu64 " late bursts, %" PRIu64 " send queue waits\n",
		sd->sent, sd->bytes, sd->errors, sd->spm, sd->late_bursts, sd->sq_waits);
	fprintf(out, "stops: ");
	if (o->count)
		fprintf(out, "after %" PRIu64 " packets per stream, ", o->count);
	if (o->duration_ms)
		fprintf(out, "after %" PRIu64 " s, ", o->duration_ms / 1000);
	fprintf(out, "on shutdown or a signal\n");
	if (o->stop_every)
		fprintf(out, "stopped: every %" PRIu64 " packets, %" PRIu64 " times, %.1f s in all\n",
			o->stop_every, sd->stops, (double)stopped / 1e9);
	fprintf(out, "ppsdisplay: %s\n", atomic_load(&o->ppsdisplay) ? "on" : "off");
}

static void con_stats(void *arg, FILE *out, bool json)
{
	summary_print(arg, out, json, mono_ns());
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

static void teardown(struct sender *sd)
{
	if (sd->q)
		for (uint32_t i = 0; i < sd->o->nqps; i++)
			if (sd->q[i].qp)
				ibv_destroy_qp(sd->q[i].qp);
	if (sd->mr)
		ibv_dereg_mr(sd->mr);
	if (sd->cq)
		ibv_destroy_cq(sd->cq);
	mct_port_close(&sd->port, sd->c->groups, sd->c->ngroups);
	free(sd->mem);
	free(sd->q);
	free(sd->s);
}

int main(int argc, char **argv)
{
	static struct sopts o = {
		.burst = 1, .nqps = 1, .streams = 1, .spm_ms = DEF_SPM_MS, .hb_ms = DEF_HB_MS};
	static struct sender sd;
	struct mct_cfg c = {.prog = "mcsender"};
	char err[OPT_ERR_LEN];
	struct sigaction sa = {.sa_handler = on_signal};
	int r;

	if (opt_register_builtin(stdout, "mcsender") || mct_options_register(&c) ||
	    register_options(&o)) {
		fprintf(stderr, "mcsender: option registry: %s\n", strerror(ENOMEM));
		return 1;
	}
	r = opt_parse_argv(argc, argv, err, sizeof(err));
	if (r >= 0)
		r = mct_options_check(&c, r == OPT_EXIT, err, sizeof(err));
	if (r == 0 && (smallest_size(&o) < min_size(&o)))
		r = opt_errf(err, sizeof(err), -EINVAL, "size %u is below the minimum %u%s",
			     smallest_size(&o), min_size(&o), o.pgm ? " with --pgm" : "");
	if (r) {
		if (r < 0)
			fprintf(stderr, "mcsender: %s\n", err);
		mct_cfg_free(&c);
		opt_registry_clear();
		feat_registry_clear();
		return r < 0 ? 2 : 0;
	}
	if (!o.stream_base_set)
		o.stream_base = (uint32_t)(getpid() ^ clock_ns(CLOCK_REALTIME));
	sd.o = &o;
	sd.c = &c;
	sd.rng = o.stream_base;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (c.control[0] &&
	    !(sd.con = mccon_open("mcsender", c.control, &con_ops, &sd, err, sizeof(err)))) {
		fprintf(stderr, "mcsender: %s\n", err);
		mct_cfg_free(&c);
		opt_registry_clear();
		feat_registry_clear();
		return 1;
	}
	r = setup(&sd, err, sizeof(err));
	if (r) {
		fprintf(stderr, "mcsender: %s\n", err);
	} else {
		fprintf(o.json ? stderr : stdout,
			"mcsender: joined %u group%s on %s:%u (%s), %u stream%s, %u QP%s\n",
			c.ngroups, c.ngroups == 1 ? "" : "s", sd.port.dev, sd.port.port,
			mct_fabric_name(sd.port.fabric), sd.ns, sd.ns == 1 ? "" : "s", o.nqps,
			o.nqps == 1 ? "" : "s");
		fflush(stdout);
		run(&sd);
		summary(&sd);
	}
	mccon_close(sd.con);
	teardown(&sd);
	mct_cfg_free(&c);
	opt_registry_clear();
	feat_registry_clear();
	if (r)
		return r == -EMSGSIZE ? 2 : 1;
	return sd.errors ? 1 : 0;
}
