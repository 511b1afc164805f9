// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pgmreplay: replay the PGM packets of a capture as UD multicast datagrams, receive them
 * on the other fabric, and write what a receiver must get, for the bridge's PGM
 * end-to-end tests. Written against the real rdma-core API (it runs on simfabric through
 * LD_LIBRARY_PATH, or on hardware); it does not use pgm/, so that the bridge's PGM code
 * is checked against an independent reading of the packets.
 *
 *   pgmreplay send   -b ADDR -g GROUP --pcap FILE [SELECT] [--gap-us N]
 *   pgmreplay recv   -b ADDR -g GROUP -n COUNT -o FILE [--timeout s] [--linger ms]
 *   pgmreplay expect --pcap FILE [SELECT] -o FILE
 *   pgmreplay filter --pcap FILE [SELECT] -o FILE.pcap
 *
 *   SELECT: [--skip-sqn N]... [--type T]...
 *
 * The capture is a classic pcap (microsecond or nanosecond, either byte order) with
 * Ethernet (optionally 802.1Q tagged), Linux cooked or raw IPv4 frames. Every unfragmented
 * IPv4/UDP packet is one PGM packet: its UDP payload is the UD payload. The selection
 * drops ODATA packets (type byte 0x04 at offset 4) whose data SQN (32-bit big-endian
 * word at offset 16) is given with --skip-sqn (a gap injected on purpose), and with
 * --type keeps only packets of the given PGM types (e.g. --type 8: the NAKs).
 *
 * send: binds ADDR through rdma_cm (the device whose IPoIB or RoCE address it is), joins
 * GROUP as a send-only full member, creates a UD QP (rdma_create_qp) and sends each
 * selected payload once, in capture order, as one datagram to the group (QPN 0xffffff,
 * the join's Q_Key), waiting for each send's completion and pausing --gap-us (default
 * 2000) between packets. One line per packet sent, then a summary; exit 0 when every
 * send completed successfully.
 *
 * recv: joins GROUP as a full member (rdma_cm attaches the QP), with receives posted
 * before the join; prints "pgmreplay: joined ..." and appends every datagram's payload
 * (wc.byte_len minus the 40-byte GRH area) to FILE as a record: 4-byte little-endian
 * length, then the bytes. After COUNT datagrams it keeps listening --linger ms (default
 * 300) for datagrams that must not come. Exit 0 when exactly COUNT arrived; 1 on a
 * timeout (--timeout s from the start, default 10) or an extra datagram; the file holds
 * whatever arrived either way.
 *
 * expect: writes the selected payloads of the capture as the same records: the file a
 * receiver must write, byte for byte. filter: writes the selected packets as a pcap
 * (global header and records copied verbatim), for tools that read captures.
 *
 * Exit status 2 for usage errors and setup failures.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define GRH_LEN	       40 /* UD receive header area (IB GRH, or RoCEv2 IPv4 at 20) */
#define MCAST_QPN      0xffffffu
#define MAX_PAYLOAD    4096u /* the path MTU of the simulated fabric and most HCAs */
#define RECV_DEPTH     256u  /* receives posted: more than a replay ever sends */
#define SEND_DEPTH     16u
#define JOIN_TIMEOUT_S 20
#define SEND_TIMEOUT_S 5
#define DEF_TIMEOUT_S  10
#define DEF_LINGER_MS  300
#define DEF_GAP_US     2000
#define MAX_SELECT     64
#define MAX_PCAP       (64u << 20)

/* PGM: just what the selection needs (RFC 3208 section 8). */
#define PGM_TYPE_OFF   4u
#define PGM_SQN_OFF    16u /* SPM SQN, ODATA/RDATA data SQN, NAK/NCF SQN, POLL/POLR SQN */
#define PGM_MIN_LEN    (PGM_SQN_OFF + 4u)
#define PGM_TYPE_ODATA 0x04u

/* Classic pcap. */
#define PCAP_MAGIC_US	0xa1b2c3d4u
#define PCAP_MAGIC_NS	0xa1b23c4du
#define PCAP_GLOBAL_LEN 24u
#define PCAP_LINK_OFF	20u
#define PCAP_RECORD_LEN 16u
#define LINK_ETHERNET	1u
#define LINK_RAW	101u
#define LINK_LINUX_SLL	113u
#define LINK_IPV4	228u
#define ETH_LEN		14u
#define ETH_TYPE_OFF	12u
#define VLAN_LEN	4u
#define SLL_LEN		16u
#define SLL_PROTO_OFF	14u
#define ETHERTYPE_IPV4	0x0800u
#define ETHERTYPE_VLAN	0x8100u
#define ETHERTYPE_QINQ	0x88a8u
#define IPV4_MIN_LEN	20u
#define IPV4_TOTAL_OFF	2u
#define IPV4_FRAG_OFF	6u
#define IPV4_FRAG_MASK	0x3fffu /* MF bit and fragment offset */
#define IPV4_PROTO_OFF	9u
#define IPV4_PROTO_UDP	17u
#define UDP_LEN		8u
#define UDP_LENGTH_OFF	4u

enum mode { MODE_SEND, MODE_RECV, MODE_EXPECT, MODE_FILTER };

struct opts {
	enum mode mode;
	const char *bind, *group, *pcap, *out;
	uint32_t skip_sqn[MAX_SELECT];
	unsigned nskip;
	uint8_t types[MAX_SELECT];
	unsigned ntypes;
	long count; /* recv: -1 until given */
	unsigned gap_us, timeout_s, linger_ms;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("pgmreplay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)be16(p) << 16 | be16(p + 2);
}

static uint32_t rd32(const uint8_t *p, bool swapped)
{
	if (swapped)
		return be32(p);
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static const char *pgm_type_str(uint8_t t)
{
	static const char *const names[] = {
		[0x00] = "SPM",	  [0x01] = "POLL", [0x02] = "POLR", [0x04] = "ODATA",
		[0x05] = "RDATA", [0x08] = "NAK",  [0x09] = "NNAK", [0x0a] = "NCF",
		[0x0c] = "SPMR",  [0x0d] = "ACK",
	};

	if (t < sizeof(names) / sizeof(names[0]) && names[t])
		return names[t];
	return "?";
}

/* ---- capture ---- */

struct pcap {
	uint8_t *buf;
	size_t len, off;
	bool swapped;
	uint32_t link;
	unsigned frame; /* records read so far */
};

/* One record: the whole record (header included) and its UDP payload, if any. */
struct rec {
	unsigned frame;
	const uint8_t *raw;
	size_t raw_len;
	const uint8_t *payload; /* NULL: not an unfragmented IPv4/UDP packet */
	size_t len;
};

static void pcap_open(struct pcap *pc, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1u << 16;
	uint32_t magic;
	size_t n;

	if (!f)
		die("%s: %s", path, strerror(errno));
	memset(pc, 0, sizeof(*pc));
	for (;;) {
		uint8_t *nb = realloc(pc->buf, cap);

		if (!nb)
			die("out of memory");
		pc->buf = nb;
		n = fread(pc->buf + pc->len, 1, cap - pc->len, f);
		pc->len += n;
		if (pc->len < cap)
			break;
		if (cap >= MAX_PCAP)
			die("%s: larger than %u bytes", path, MAX_PCAP);
		cap *= 2;
	}
	if (ferror(f))
		die("%s: read error", path);
	fclose(f);
	if (pc->len < PCAP_GLOBAL_LEN)
		die("%s: not a pcap file (too short)", path);
	magic = rd32(pc->buf, false);
	if (magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS)
		pc->swapped = false;
	else if (rd32(pc->buf, true) == PCAP_MAGIC_US || rd32(pc->buf, true) == PCAP_MAGIC_NS)
		pc->swapped = true;
	else
		die("%s: not a classic pcap file (magic 0x%08x)", path, magic);
	pc->link = rd32(pc->buf + PCAP_LINK_OFF, pc->swapped) & 0xffffu;
	if (pc->link != LINK_ETHERNET && pc->link != LINK_RAW && pc->link != LINK_LINUX_SLL &&
	    pc->link != LINK_IPV4)
		die("%s: link type %u not supported", path, pc->link);
	pc->off = PCAP_GLOBAL_LEN;
}

/* The IPv4/UDP payload of one frame; false when it is something else. */
static bool frame_udp(const struct pcap *pc, const uint8_t *p, size_t len, struct rec *r)
{
	size_t ihl, total, ulen;
	uint16_t et;

	if (pc->link == LINK_ETHERNET) {
		if (len < ETH_LEN)
			return false;
		et = be16(p + ETH_TYPE_OFF);
		p += ETH_LEN;
		len -= ETH_LEN;
		while (et == ETHERTYPE_VLAN || et == ETHERTYPE_QINQ) {
			if (len < VLAN_LEN)
				return false;
			et = be16(p + 2);
			p += VLAN_LEN;
			len -= VLAN_LEN;
		}
		if (et != ETHERTYPE_IPV4)
			return false;
	} else if (pc->link == LINK_LINUX_SLL) {
		if (len < SLL_LEN || be16(p + SLL_PROTO_OFF) != ETHERTYPE_IPV4)
			return false;
		p += SLL_LEN;
		len -= SLL_LEN;
	}
	if (len < IPV4_MIN_LEN || (p[0] >> 4) != 4)
		return false;
	ihl = (size_t)(p[0] & 0xfu) * 4u;
	total = be16(p + IPV4_TOTAL_OFF);
	if (ihl < IPV4_MIN_LEN || total > len || total < ihl + UDP_LEN ||
	    p[IPV4_PROTO_OFF] != IPV4_PROTO_UDP || (be16(p + IPV4_FRAG_OFF) & IPV4_FRAG_MASK))
		return false;
	ulen = be16(p + ihl + UDP_LENGTH_OFF);
	if (ulen < UDP_LEN || ulen > total - ihl)
		return false;
	r->payload = p + ihl + UDP_LEN;
	r->len = ulen - UDP_LEN;
	return true;
}

/* The next record; false at the end. Dies on a truncated file or a cut packet. */
static bool pcap_next(struct pcap *pc, struct rec *r)
{
	uint32_t incl, orig;
	const uint8_t *h;

	if (pc->off == pc->len)
		return false;
	if (pc->len - pc->off < PCAP_RECORD_LEN)
		die("pcap: record %u: truncated header", pc->frame + 1);
	h = pc->buf + pc->off;
	incl = rd32(h + 8, pc->swapped);
	orig = rd32(h + 12, pc->swapped);
	if (incl > pc->len - pc->off - PCAP_RECORD_LEN)
		die("pcap: record %u: truncated data", pc->frame + 1);
	if (incl < orig)
		die("pcap: record %u: captured %u of %u bytes; cannot replay a cut packet",
		    pc->frame + 1, incl, orig);
	memset(r, 0, sizeof(*r));
	r->frame = ++pc->frame;
	r->raw = h;
	r->raw_len = PCAP_RECORD_LEN + incl;
	if (!frame_udp(pc, h + PCAP_RECORD_LEN, incl, r))
		r->payload = NULL;
	pc->off += r->raw_len;
	return true;
}

static bool has_pgm_fields(const struct rec *r)
{
	return r->len >= PGM_MIN_LEN;
}

/* Whether the selection (--skip-sqn, --type) keeps this UDP payload. */
static bool selected(const struct opts *o, const struct rec *r)
{
	uint8_t type;
	bool ok;

	if (o->ntypes) {
		if (r->len <= PGM_TYPE_OFF)
			return false;
		ok = false;
		for (unsigned i = 0; i < o->ntypes; i++)
			ok |= r->payload[PGM_TYPE_OFF] == o->types[i];
		if (!ok)
			return false;
	}
	if (!has_pgm_fields(r))
		return true;
	type = r->payload[PGM_TYPE_OFF];
	if (type != PGM_TYPE_ODATA)
		return true;
	for (unsigned i = 0; i < o->nskip; i++)
		if (be32(r->payload + PGM_SQN_OFF) == o->skip_sqn[i])
			return false;
	return true;
}

/* "frame=N type=ODATA sqn=S len=L" for the log lines (frame: record or arrival number). */
static void describe_payload(char *s, size_t n, unsigned frame, const uint8_t *p, size_t len)
{
	if (len >= PGM_MIN_LEN)
		snprintf(s, n, "frame=%u type=%s sqn=%" PRIu32 " len=%zu", frame,
			 pgm_type_str(p[PGM_TYPE_OFF]), be32(p + PGM_SQN_OFF), len);
	else
		snprintf(s, n, "frame=%u type=- len=%zu", frame, len);
}

/* ---- record files ---- */

static void record_write(FILE *f, const char *path, const uint8_t *p, size_t len)
{
	uint8_t h[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
			(uint8_t)(len >> 24)};

	if (fwrite(h, sizeof(h), 1, f) != 1 || (len && fwrite(p, len, 1, f) != 1))
		die("%s: write: %s", path, strerror(errno));
}

static FILE *out_open(const char *path)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		die("%s: %s", path, strerror(errno));
	return f;
}

static void out_close(FILE *f, const char *path)
{
	if (fflush(f) || ferror(f) || fclose(f))
		die("%s: write error", path);
}

/* ---- expect, filter ---- */

static int cmd_expect(const struct opts *o, bool as_pcap)
{
	unsigned kept = 0, skipped = 0, other = 0;
	struct pcap pc;
	struct rec r;
	FILE *f;

	pcap_open(&pc, o->pcap);
	f = out_open(o->out);
	if (as_pcap && fwrite(pc.buf, PCAP_GLOBAL_LEN, 1, f) != 1)
		die("%s: write: %s", o->out, strerror(errno));
	while (pcap_next(&pc, &r)) {
		if (!r.payload) {
			other++;
			continue;
		}
		if (!selected(o, &r)) {
			skipped++;
			continue;
		}
		if (as_pcap) {
			if (fwrite(r.raw, r.raw_len, 1, f) != 1)
				die("%s: write: %s", o->out, strerror(errno));
		} else {
			record_write(f, o->out, r.payload, r.len);
		}
		kept++;
	}
	out_close(f, o->out);
	printf("pgmreplay: %s records=%u kept=%u skipped=%u not_udp=%u\n",
	       as_pcap ? "filter" : "expect", pc.frame, kept, skipped, other);
	free(pc.buf);
	return 0;
}

/* ---- rdma_cm ---- */

struct ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct sockaddr_in grp;
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
	bool joined;
};

static struct rdma_cm_event *ep_wait_event(struct ep *e, uint64_t deadline_ms)
{
	struct pollfd pfd = {.fd = e->ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	for (;;) {
		uint64_t now;

		if (!rdma_get_cm_event(e->ch, &ev))
			return ev;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			die("rdma_get_cm_event: %s", strerror(errno));
		now = now_ms();
		if (now >= deadline_ms)
			return NULL;
		if (poll(&pfd, 1, (int)(deadline_ms - now)) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
	}
}

/*
 * Bind, and create the PD, CQ (with a completion channel when want_cc), the UD QP
 * (rdma_create_qp: RTS with rdma_cm's Q_Key) and a buffer of bufsz bytes registered
 * with access.
 */
static void ep_open(struct ep *e, const struct opts *o, bool want_cc, uint32_t sq, uint32_t rq,
		    size_t bufsz, int access)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct ibv_qp_init_attr qa;
	int fl;

	memset(e, 0, sizeof(*e));
	if (inet_pton(AF_INET, o->bind, &sin.sin_addr) != 1)
		die("-b %s: not an IPv4 address", o->bind);
	e->grp.sin_family = AF_INET;
	if (inet_pton(AF_INET, o->group, &e->grp.sin_addr) != 1 ||
	    (ntohl(e->grp.sin_addr.s_addr) >> 28) != 0xe)
		die("-g %s: not an IPv4 multicast address", o->group);
	e->ch = rdma_create_event_channel();
	if (!e->ch)
		die("rdma_create_event_channel: %s", strerror(errno));
	fl = fcntl(e->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(e->ch->fd, F_SETFL, fl | O_NONBLOCK))
		die("fcntl: %s", strerror(errno));
	if (rdma_create_id(e->ch, &e->id, NULL, RDMA_PS_UDP))
		die("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(e->id, (struct sockaddr *)&sin))
		die("rdma_bind_addr %s: %s", o->bind, strerror(errno));
	if (!e->id->verbs)
		die("rdma_bind_addr %s: no RDMA device has this address", o->bind);
	e->pd = ibv_alloc_pd(e->id->verbs);
	if (!e->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	if (want_cc) {
		e->cc = ibv_create_comp_channel(e->id->verbs);
		if (!e->cc)
			die("ibv_create_comp_channel: %s", strerror(errno));
	}
	e->cq = ibv_create_cq(e->id->verbs, (int)(sq + rq), NULL, e->cc, 0);
	if (!e->cq)
		die("ibv_create_cq: %s", strerror(errno));
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = sq;
	qa.cap.max_recv_wr = rq;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(e->id, e->pd, &qa))
		die("rdma_create_qp: %s", strerror(errno));
	e->buf = calloc(1, bufsz);
	if (!e->buf)
		die("out of memory");
	e->mr = ibv_reg_mr(e->pd, e->buf, bufsz, access);
	if (!e->mr)
		die("ibv_reg_mr: %s", strerror(errno));
}

/* Join the group (send-only or full member) and wait for the join event. */
static void ep_join(struct ep *e, bool send_only)
{
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					: RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&e->grp,
	};
	uint64_t deadline = now_ms() + JOIN_TIMEOUT_S * 1000u;
	struct rdma_cm_event *ev;

	if (rdma_join_multicast_ex(e->id, &ja, NULL))
		die("rdma_join_multicast_ex: %s", strerror(errno));
	for (;;) {
		ev = ep_wait_event(e, deadline);
		if (!ev)
			die("no join event within %d s", JOIN_TIMEOUT_S);
		if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN)
			break;
		if (ev->event == RDMA_CM_EVENT_MULTICAST_ERROR)
			die("join failed: %s (status %d)", rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
	}
	e->qpn = ev->param.ud.qp_num;
	e->qkey = ev->param.ud.qkey;
	e->ah = ibv_create_ah(e->pd, &ev->param.ud.ah_attr);
	if (!e->ah)
		die("ibv_create_ah: %s", strerror(errno));
	e->joined = true;
	rdma_ack_cm_event(ev);
	if (e->qpn != MCAST_QPN)
		die("join event: remote QPN 0x%x, expected 0x%x", e->qpn, MCAST_QPN);
	printf("pgmreplay: joined %s (%s) on %s qkey=0x%x\n", inet_ntoa(e->grp.sin_addr),
	       send_only ? "send-only" : "full member", ibv_get_device_name(e->id->verbs->device),
	       e->qkey);
	fflush(stdout);
}

static void ep_close(struct ep *e)
{
	if (e->joined)
		rdma_leave_multicast(e->id, (struct sockaddr *)&e->grp);
	if (e->ah)
		ibv_destroy_ah(e->ah);
	rdma_destroy_qp(e->id);
	ibv_dereg_mr(e->mr);
	free(e->buf);
	ibv_destroy_cq(e->cq);
	if (e->cc)
		ibv_destroy_comp_channel(e->cc);
	ibv_dealloc_pd(e->pd);
	rdma_destroy_id(e->id);
	rdma_destroy_event_channel(e->ch);
}

/* ---- send ---- */

static void send_one(struct ep *e, const struct rec *r)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf,
		.length = (uint32_t)r->len,
		.lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr =
				   {
					   .wr_id = r->frame,
					   .sg_list = &sge,
					   .num_sge = 1,
					   .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_SIGNALED,
				   },
			   *bad;
	uint64_t deadline = now_ms() + SEND_TIMEOUT_S * 1000u;
	struct ibv_wc wc;
	int n, err;

	memcpy(e->buf, r->payload, r->len);
	wr.wr.ud.ah = e->ah;
	wr.wr.ud.remote_qpn = e->qpn;
	wr.wr.ud.remote_qkey = e->qkey;
	err = ibv_post_send(e->id->qp, &wr, &bad);
	if (err)
		die("frame %u: ibv_post_send: %s", r->frame, strerror(err));
	/* One send at a time: wait for its completion (a few microseconds). */
	while ((n = ibv_poll_cq(e->cq, 1, &wc)) == 0) {
		if (now_ms() >= deadline)
			die("frame %u: no send completion within %d s", r->frame, SEND_TIMEOUT_S);
		usleep(50);
	}
	if (n < 0)
		die("ibv_poll_cq failed");
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != r->frame)
		die("frame %u: send completion %s (wr_id %" PRIu64 ")", r->frame,
		    ibv_wc_status_str(wc.status), (uint64_t)wc.wr_id);
}

static int cmd_send(const struct opts *o)
{
	unsigned sent = 0, skipped = 0, other = 0;
	char what[128];
	struct pcap pc;
	struct ep e;
	struct rec r;

	pcap_open(&pc, o->pcap);
	/* Check the whole capture before joining: no partial replay of a bad file. */
	while (pcap_next(&pc, &r))
		if (r.payload && r.len > MAX_PAYLOAD)
			die("frame %u: %zu bytes, more than a UD datagram of %u", r.frame, r.len,
			    MAX_PAYLOAD);
	pc.off = PCAP_GLOBAL_LEN;
	pc.frame = 0;

	ep_open(&e, o, false, SEND_DEPTH, 1, MAX_PAYLOAD, 0);
	ep_join(&e, true);
	while (pcap_next(&pc, &r)) {
		if (!r.payload) {
			other++;
			continue;
		}
		describe_payload(what, sizeof(what), r.frame, r.payload, r.len);
		if (!selected(o, &r)) {
			printf("pgmreplay: skip %s\n", what);
			skipped++;
			continue;
		}
		if (sent && o->gap_us)
			usleep(o->gap_us);
		send_one(&e, &r);
		printf("pgmreplay: sent %s\n", what);
		sent++;
	}
	printf("pgmreplay: sent=%u skipped=%u not_udp=%u records=%u\n", sent, skipped, other,
	       pc.frame);
	fflush(stdout);
	ep_close(&e);
	free(pc.buf);
	return 0;
}

/* ---- recv ---- */

static void post_recv(struct ep *e, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(e->buf + (size_t)slot * (GRH_LEN + MAX_PAYLOAD)),
		.length = GRH_LEN + MAX_PAYLOAD,
		.lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;
	int err = ibv_post_recv(e->id->qp, &wr, &bad);

	if (err)
		die("ibv_post_recv: %s", strerror(err));
}

/* Wait for the CQ's next completion event until deadline; false on timeout. */
static bool wait_cq(struct ep *e, uint64_t deadline)
{
	struct pollfd pfd = {.fd = e->cc->fd, .events = POLLIN};
	struct ibv_cq *cq;
	void *ctx;
	uint64_t now;

	for (;;) {
		now = now_ms();
		if (now >= deadline)
			return false;
		if (poll(&pfd, 1, (int)(deadline - now)) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		if (!(pfd.revents & POLLIN))
			continue;
		if (ibv_get_cq_event(e->cc, &cq, &ctx)) {
			if (errno == EAGAIN)
				continue;
			die("ibv_get_cq_event: %s", strerror(errno));
		}
		ibv_ack_cq_events(cq, 1);
		return true;
	}
}

static int cmd_recv(const struct opts *o)
{
	uint64_t deadline = now_ms() + (uint64_t)o->timeout_s * 1000u;
	uint64_t got = 0, want = (uint64_t)o->count;
	bool armed = false, lingering = false;
	struct ibv_wc wc[16];
	char what[128];
	struct ep e;
	FILE *f;
	int fl, rc;

	f = out_open(o->out);
	ep_open(&e, o, true, 1, RECV_DEPTH, (size_t)RECV_DEPTH * (GRH_LEN + MAX_PAYLOAD),
		IBV_ACCESS_LOCAL_WRITE);
	fl = fcntl(e.cc->fd, F_GETFL);
	if (fl < 0 || fcntl(e.cc->fd, F_SETFL, fl | O_NONBLOCK))
		die("fcntl: %s", strerror(errno));
	for (uint32_t i = 0; i < RECV_DEPTH; i++)
		post_recv(&e, i);
	ep_join(&e, false);
	if (!want) {
		lingering = true;
		deadline = now_ms() + o->linger_ms;
	}

	for (;;) {
		int n = ibv_poll_cq(e.cq, (int)(sizeof(wc) / sizeof(wc[0])), wc);

		if (n < 0)
			die("ibv_poll_cq failed");
		if (n == 0) {
			if (!armed) {
				if (ibv_req_notify_cq(e.cq, 0))
					die("ibv_req_notify_cq failed");
				armed = true;
				continue; /* poll again: a completion may have raced the arm */
			}
			if (!wait_cq(&e, deadline))
				break;
			armed = false;
			continue;
		}
		for (int i = 0; i < n; i++) {
			const uint8_t *p = e.buf + (size_t)wc[i].wr_id * (GRH_LEN + MAX_PAYLOAD);

			if (wc[i].status != IBV_WC_SUCCESS)
				die("receive completion %s", ibv_wc_status_str(wc[i].status));
			if (wc[i].opcode != IBV_WC_RECV || wc[i].byte_len < GRH_LEN ||
			    !(wc[i].wc_flags & IBV_WC_GRH))
				die("receive completion: opcode %d, byte_len %u, flags 0x%x",
				    wc[i].opcode, wc[i].byte_len, wc[i].wc_flags);
			record_write(f, o->out, p + GRH_LEN, wc[i].byte_len - GRH_LEN);
			got++;
			describe_payload(what, sizeof(what), (unsigned)got, p + GRH_LEN,
					 wc[i].byte_len - GRH_LEN);
			printf("pgmreplay: got %s\n", what);
			post_recv(&e, (uint32_t)wc[i].wr_id);
			if (got == want && !lingering) {
				lingering = true;
				deadline = now_ms() + o->linger_ms;
			}
		}
	}
	out_close(f, o->out);
	if (got == want)
		rc = 0;
	else
		rc = 1;
	printf("pgmreplay: received=%" PRIu64 " expected=%" PRIu64 " %s\n", got, want,
	       got == want  ? "ok"
	       : got < want ? "timeout"
			    : "too many");
	fflush(stdout);
	ep_close(&e);
	return rc;
}

/* ---- options ---- */

static void usage(void) __attribute__((noreturn));

static void usage(void)
{
	fprintf(stderr, "usage: pgmreplay send -b ADDR -g GROUP --pcap FILE [SELECT] [--gap-us N]\n"
			"       pgmreplay recv -b ADDR -g GROUP -n COUNT -o FILE [--timeout s] "
			"[--linger ms]\n"
			"       pgmreplay expect --pcap FILE [SELECT] -o FILE\n"
			"       pgmreplay filter --pcap FILE [SELECT] -o FILE.pcap\n"
			"SELECT: [--skip-sqn N]... [--type T]...\n");
	exit(2);
}

static unsigned long num(const char *s, unsigned long max, const char *what)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > max)
		die("%s %s: not a number up to %lu", what, s, max);
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"bind", required_argument, NULL, 'b'},
		{"group", required_argument, NULL, 'g'},
		{"count", required_argument, NULL, 'n'},
		{"output", required_argument, NULL, 'o'},
		{"pcap", required_argument, NULL, 'p'},
		{"skip-sqn", required_argument, NULL, 's'},
		{"type", required_argument, NULL, 't'},
		{"gap-us", required_argument, NULL, 'G'},
		{"timeout", required_argument, NULL, 'T'},
		{"linger", required_argument, NULL, 'L'},
		{NULL, 0, NULL, 0},
	};
	const char *m;
	int c;

	if (argc < 2)
		usage();
	m = argv[1];
	if (!strcmp(m, "send"))
		o->mode = MODE_SEND;
	else if (!strcmp(m, "recv"))
		o->mode = MODE_RECV;
	else if (!strcmp(m, "expect"))
		o->mode = MODE_EXPECT;
	else if (!strcmp(m, "filter"))
		o->mode = MODE_FILTER;
	else
		usage();
	o->count = -1;
	o->gap_us = DEF_GAP_US;
	o->timeout_s = DEF_TIMEOUT_S;
	o->linger_ms = DEF_LINGER_MS;
	optind = 2;
	while ((c = getopt_long(argc, argv, "b:g:n:o:", lo, NULL)) != -1) {
		switch (c) {
		case 'b':
			o->bind = optarg;
			break;
		case 'g':
			o->group = optarg;
			break;
		case 'n':
			o->count = (long)num(optarg, 1000000, "-n");
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'p':
			o->pcap = optarg;
			break;
		case 's':
			if (o->nskip == MAX_SELECT)
				die("more than %d --skip-sqn", MAX_SELECT);
			o->skip_sqn[o->nskip++] = (uint32_t)num(optarg, UINT32_MAX, "--skip-sqn");
			break;
		case 't':
			if (o->ntypes == MAX_SELECT)
				die("more than %d --type", MAX_SELECT);
			o->types[o->ntypes++] = (uint8_t)num(optarg, 0xff, "--type");
			break;
		case 'G':
			o->gap_us = (unsigned)num(optarg, 10000000, "--gap-us");
			break;
		case 'T':
			o->timeout_s = (unsigned)num(optarg, 3600, "--timeout");
			break;
		case 'L':
			o->linger_ms = (unsigned)num(optarg, 600000, "--linger");
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	switch (o->mode) {
	case MODE_SEND:
		if (!o->bind || !o->group || !o->pcap)
			usage();
		break;
	case MODE_RECV:
		if (!o->bind || !o->group || o->count < 0 || !o->out)
			usage();
		break;
	case MODE_EXPECT:
	case MODE_FILTER:
		if (!o->pcap || !o->out)
			usage();
		break;
	}
}

int main(int argc, char **argv)
{
	struct opts o;

	memset(&o, 0, sizeof(o));
	parse(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	switch (o.mode) {
	case MODE_SEND:
		return cmd_send(&o);
	case MODE_RECV:
		return cmd_recv(&o);
	case MODE_EXPECT:
		return cmd_expect(&o, false);
	case MODE_FILTER:
		return cmd_expect(&o, true);
	}
	return 2;
}
