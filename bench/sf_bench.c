// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sf_bench: one-hop rate and one-way latency of UD multicast between two processes.
 *
 * An ordinary verbs program (built against rdma-core's headers and libibverbs): run it
 * with LD_LIBRARY_PATH=build/simfabric to measure the simulated fabric, or on real RoCE
 * hardware to compare. The parent process is the receiver, a forked child the sender;
 * each is pinned to its own CPU. The receiver attaches a UD QP to a RoCEv2 group
 * (::ffff:a.b.c.d; RoCE needs no SA join, attaching is what the NIC needs), the sender
 * sends to the group from another device of the same Ethernet segment.
 *
 *   rate: the sender posts `count` datagrams in chained batches, one signaled send in N,
 *         as fast as the send queue allows; the receiver busy-polls its CQ (burst 32) and
 *         reposts receives in chains. Reports packets/s at the sender (posting) and at
 *         the receiver (first to last completion) and the packets that did not arrive.
 *   ping: the sender sends one datagram every `interval` microseconds carrying its
 *         CLOCK_MONOTONIC send time; the receiver takes the difference to its own clock
 *         when it polls the completion. Reports percentiles of that one-way latency.
 *
 * -P: every datagram is a valid PGM ODATA packet (RFC 3208) of exactly the payload size,
 * one stream (TSI 02:00:00:00:00:01.7000, destination port 7500): data SQN 0, 1, 2, ...
 * in posting order, TRAIL equal to the SQN, a filler TSDU (ping: the send time first),
 * checksum valid. Each packet lives in its own slot of a ring as deep as the send queue
 * (so no slot is rewritten before its send has retired), formatted once at setup; just
 * before a post only the SQN, TRAIL (and ping time) are written and the checksum is
 * updated from the template's sum, a few instructions whatever the size. Without -P the
 * payload is as it always was (zeros; ping: the send time in the first 8 bytes).
 *
 * Output: a human-readable summary, or with -j one JSON object per run (bench/run.sh).
 */
#include <errno.h>
#include <getopt.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>

#include "pgm.h"

#define BENCH_PORT	  1
#define BENCH_QKEY	  0x11000000u /* the Q_Key both QPs use (any, but the same) */
#define BENCH_MCAST_QPN	  0xffffffu
#define BENCH_GRH_LEN	  40 /* reserved in front of every UD receive */
#define BENCH_HOP_LIMIT	  64
#define BENCH_POLL_BURST  32
#define BENCH_SLOT_ALIGN  64
#define BENCH_IDLE_NS	  200000000ull	 /* receiver gives up this long after the last packet */
#define BENCH_READY_NS	  10000000000ull /* the other side must be ready within 10 s */
#define BENCH_SPIN_NS	  30000ull	 /* ping: the sender spins the last 30 us before a send */
#define BENCH_PIPE_CHECK  4096		 /* empty polls between checks of the control pipe */
#define NSEC_PER_SEC	  1000000000ull
#define BENCH_MAX_PAYLOAD 4096
#define BENCH_MAX_BATCH	  1024

/* -P: the one PGM stream the sender emits (its GSI is in bench_pgm_format()). */
#define BENCH_PGM_SPORT	   7000
#define BENCH_PGM_DPORT	   7500
#define BENCH_PGM_SQN_OFF  PGM_HDR_LEN /* ODATA's DATA_SQN, then DATA_TRAIL */
#define BENCH_PGM_TSDU_OFF (PGM_HDR_LEN + PGM_DATA_LEN)
#define BENCH_PGM_FILL	   0xa5 /* TSDU filler byte */

enum bench_mode {
	BENCH_RATE,
	BENCH_PING,
};

struct bench_opts {
	enum bench_mode mode;
	const char *sdev; /* sender device */
	const char *rdev; /* receiver device */
	struct in_addr group;
	uint64_t count;	      /* rate: packets to send; ping: samples */
	uint32_t size;	      /* payload bytes */
	uint32_t batch;	      /* WRs per chained post (send and receive reposts) */
	uint32_t signal;      /* one signaled send in `signal` */
	uint32_t sq_depth;    /* send queue */
	uint32_t rq_depth;    /* receive queue */
	uint32_t interval_us; /* ping: send interval */
	uint64_t rate;	      /* rate: offered packets/s, 0: as fast as possible */
	int scpu;
	int rcpu;
	bool inline_send;
	bool json;
	bool join; /* -J: join through rdma_cm (any link layer; the path through a bridge) */
	bool pgm;  /* -P: payloads are PGM ODATA packets of one stream */
};

/* What the sender reports to the receiver (parent) at the end. */
struct bench_tx_result {
	uint64_t sent;
	uint64_t t_start; /* ns, CLOCK_MONOTONIC: first post */
	uint64_t t_end;	  /* after the last post */
};

/* One side's verbs objects. */
struct bench_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *buf;
	size_t slot; /* bytes per buffer slot */
	uint32_t nslots;
	uint32_t gid_index;
	union ibv_gid mgid;
	uint32_t qkey;
	struct ibv_ah_attr join_ah; /* -J: the address from the join event */
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *cm_id;
	bool ib;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	fputs("sf_bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void pin_cpu(int cpu, const char *who)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("%s: cannot pin to CPU %d: %s", who, cpu, strerror(errno));
}

/* Write all of buf or die: the control pipes carry small fixed-size records. */
static void pipe_write(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("control pipe write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* Read exactly len bytes within timeout_ns. Returns 0, or -1 on EOF or timeout. */
static int pipe_read(int fd, void *buf, size_t len, uint64_t timeout_ns)
{
	uint64_t deadline = now_ns() + timeout_ns;
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = now_ns();
		ssize_t n;

		if (now >= deadline)
			return -1;
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n;

	list = ibv_get_device_list(&n);
	if (!list)
		die("no RDMA devices: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			if (!ctx)
				die("%s: open: %s", name, strerror(errno));
			break;
		}
	}
	ibv_free_device_list(list);
	if (!ctx)
		die("%s: no such device (LD_LIBRARY_PATH=build/simfabric?)", name);
	return ctx;
}

/*
 * Open the device, check it is an active RoCE port and find its RoCEv2 IPv4 GID, the
 * one the kernel would use for an IPv4 address. The MGID is the IPv4-mapped group.
 */
static void side_open(struct bench_side *s, const char *name, struct in_addr group, bool join)
{
	struct ibv_port_attr pa;

	memset(s, 0, sizeof(*s));
	s->qkey = join ? RDMA_UDP_QKEY : BENCH_QKEY;
	s->ctx = open_device(name);
	if (ibv_query_port(s->ctx, BENCH_PORT, &pa))
		die("%s: query_port failed", name);
	s->ib = pa.link_layer == IBV_LINK_LAYER_INFINIBAND;
	if (s->ib && !join)
		die("%s: an IB device needs an SA join: use -J", name);
	if (pa.state != IBV_PORT_ACTIVE)
		die("%s: port not active", name);
	s->gid_index = UINT32_MAX;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(s->ctx, BENCH_PORT, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    IN6_IS_ADDR_V4MAPPED((struct in6_addr *)e.gid.raw)) {
			s->gid_index = (uint32_t)i;
			break;
		}
	}
	if (s->ib)
		s->gid_index = 0;
	if (s->gid_index == UINT32_MAX)
		die("%s: no RoCEv2 IPv4 GID", name);
	memset(&s->mgid, 0, sizeof(s->mgid));
	s->mgid.raw[10] = 0xff;
	s->mgid.raw[11] = 0xff;
	memcpy(&s->mgid.raw[12], &group.s_addr, 4);
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		die("%s: alloc_pd: %s", name, strerror(errno));
}

static void side_qp(struct bench_side *s, const char *name, uint32_t sq, uint32_t rq, uint32_t cqe,
		    uint32_t max_inline)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = sq,
			.max_recv_wr = rq,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = max_inline},
	};
	struct ibv_qp_attr a;

	s->cq = ibv_create_cq(s->ctx, (int)cqe, NULL, NULL, 0);
	if (!s->cq)
		die("%s: create_cq(%u): %s", name, cqe, strerror(errno));
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->qp)
		die("%s: create_qp: %s", name, strerror(errno));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = BENCH_PORT;
	a.qkey = s->qkey;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("%s: modify_qp INIT failed", name);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE))
		die("%s: modify_qp RTR failed", name);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("%s: modify_qp RTS failed", name);
}

static void side_buffers(struct bench_side *s, const char *name, uint32_t nslots, size_t bytes)
{
	s->slot = (bytes + BENCH_SLOT_ALIGN - 1) & ~(size_t)(BENCH_SLOT_ALIGN - 1);
	s->nslots = nslots;
	if (posix_memalign((void **)&s->buf, 4096, s->slot * nslots))
		die("out of memory");
	memset(s->buf, 0, s->slot * nslots);
	s->mr = ibv_reg_mr(s->pd, s->buf, s->slot * nslots, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		die("%s: reg_mr: %s", name, strerror(errno));
}

/*
 * -J: join the group through rdma_cm, as any rdma_cm application (and the bridge) does:
 * bound to the port GID on IB (AF_IB), to the RoCEv2 IPv4 address on RoCE; the sender
 * joins send-only. The join event gives the MGID and the address to send to; a
 * receiver attaches its own QP (rdma_cm only attaches the id's QP).
 */
static void side_join(struct bench_side *s, const char *name, struct in_addr group, bool send_only)
{
	struct rdma_cm_join_mc_attr_ex ja = {0};
	struct sockaddr_storage bind_ss = {0};
	struct sockaddr_in gaddr = {.sin_family = AF_INET, .sin_addr = group};
	struct rdma_cm_event *ev;
	union ibv_gid gid;

	if (ibv_query_gid(s->ctx, BENCH_PORT, (int)s->gid_index, &gid))
		die("%s: query_gid failed", name);
	if (s->ib) {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)&bind_ss;

		sib->sib_family = AF_IB;
		sib->sib_pkey = htons(0xffff);
		memcpy(&sib->sib_addr, gid.raw, 16);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&bind_ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, &gid.raw[12], 4);
	}
	s->cm_ch = rdma_create_event_channel();
	if (!s->cm_ch || rdma_create_id(s->cm_ch, &s->cm_id, NULL, RDMA_PS_UDP))
		die("%s: rdma_cm: %s", name, strerror(errno));
	if (rdma_bind_addr(s->cm_id, (struct sockaddr *)&bind_ss))
		die("%s: rdma_bind_addr: %s", name, strerror(errno));
	ja.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ja.addr = (struct sockaddr *)&gaddr;
	ja.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
				  : RDMA_MC_JOIN_FLAG_FULLMEMBER;
	if (rdma_join_multicast_ex(s->cm_id, &ja, NULL))
		die("%s: rdma_join_multicast: %s", name, strerror(errno));
	if (rdma_get_cm_event(s->cm_ch, &ev))
		die("%s: rdma_get_cm_event: %s", name, strerror(errno));
	if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN)
		die("%s: join failed: %s %d", name, rdma_event_str(ev->event), ev->status);
	s->join_ah = ev->param.ud.ah_attr;
	s->mgid = ev->param.ud.ah_attr.grh.dgid;
	rdma_ack_cm_event(ev);
	if (!send_only && ibv_attach_mcast(s->qp, &s->mgid, s->join_ah.dlid))
		die("%s: attach_mcast failed", name);
}

static void side_close(struct bench_side *s)
{
	if (s->ah)
		ibv_destroy_ah(s->ah);
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	if (s->cm_id)
		rdma_destroy_id(s->cm_id); /* leaves the group */
	if (s->cm_ch)
		rdma_destroy_event_channel(s->cm_ch);
	free(s->buf);
}

/* ---- sender (child process) ---- */

/*
 * -P: format each of the nslots slots as an ODATA packet of size bytes (size >=
 * BENCH_PGM_TSDU_OFF, checked in main()) with the filler TSDU, then zero the checksum field
 * and the stamp_len bytes from BENCH_PGM_SQN_OFF that bench_pgm_stamp() writes per packet.
 * Returns the ones' complement sum of that template, the same for every slot.
 */
static uint16_t bench_pgm_format(struct bench_side *s, uint32_t size, size_t stamp_len)
{
	static const struct pgm_tsi tsi = {
		.gsi = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01},
		.sport = BENCH_PGM_SPORT,
	};
	uint8_t tsdu[BENCH_MAX_PAYLOAD];
	size_t tsdu_len = size - BENCH_PGM_TSDU_OFF;

	memset(tsdu, BENCH_PGM_FILL, tsdu_len);
	for (uint32_t i = 0; i < s->nslots; i++) {
		uint8_t *pkt = s->buf + (size_t)i * s->slot;

		if (pgm_build_odata(pkt, size, &tsi, BENCH_PGM_DPORT, 0, 0, 0, tsdu, tsdu_len) !=
		    (ssize_t)size)
			die("sender: cannot build a %u-byte ODATA packet", size);
		memset(pkt + PGM_OFF_CHECKSUM, 0, 2);
		memset(pkt + BENCH_PGM_SQN_OFF, 0, stamp_len);
	}
	return pgm_csum_sum(s->buf, size);
}

/*
 * -P, hot path: give the packet at pkt (a bench_pgm_format() template) data SQN and TRAIL
 * sqn and its checksum. The stamp_len bytes from BENCH_PGM_SQN_OFF (SQN, TRAIL, and for
 * ping the send time the caller wrote after them) are summed onto base, the template's
 * sum: RFC 1624 incremental update, the cost independent of the packet size.
 */
static inline void bench_pgm_stamp(uint8_t *pkt, uint16_t base, uint32_t sqn, size_t stamp_len)
{
	uint32_t be = htonl(sqn), sum;
	uint16_t csum;

	memcpy(pkt + BENCH_PGM_SQN_OFF, &be, sizeof(be));
	memcpy(pkt + BENCH_PGM_SQN_OFF + sizeof(be), &be, sizeof(be)); /* TRAIL */
	sum = (uint32_t)base + pgm_csum_sum(pkt + BENCH_PGM_SQN_OFF, stamp_len);
	sum = (sum & 0xffff) + (sum >> 16);
	csum = (uint16_t)~sum;
	csum = htons(csum ? csum : 0xffff); /* 0 would mean "no checksum" */
	memcpy(pkt + PGM_OFF_CHECKSUM, &csum, sizeof(csum));
}

/* Retire signaled sends: returns how many WRs the polled completions retired up to. */
static uint64_t tx_retire(struct bench_side *s, uint64_t retired)
{
	struct ibv_wc wc[BENCH_POLL_BURST];
	int n = ibv_poll_cq(s->cq, BENCH_POLL_BURST, wc);

	if (n < 0)
		die("sender: poll_cq failed");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			die("sender: send completion %s", ibv_wc_status_str(wc[i].status));
		/* wr_id is the sequence number; in-order completion retires all before it. */
		retired = wc[i].wr_id + 1;
	}
	return retired;
}

static void tx_run(const struct bench_opts *o, int ready_fd, int result_fd)
{
	struct ibv_send_wr wrs[BENCH_MAX_BATCH], *bad;
	struct ibv_sge sges[BENCH_MAX_BATCH];
	struct bench_tx_result res = {0};
	struct ibv_ah_attr aa;
	struct bench_side s;
	uint64_t posted = 0, retired = 0;
	uint32_t batch = o->mode == BENCH_PING ? 1 : o->batch;
	/* -P: bytes bench_pgm_stamp() rewrites: SQN and TRAIL, then the ping send time. */
	size_t stamp_len = PGM_DATA_LEN + (o->mode == BENCH_PING ? sizeof(uint64_t) : 0);
	uint16_t pgm_base = 0;
	char ready;

	pin_cpu(o->scpu, "sender");
	side_open(&s, o->sdev, o->group, o->join);
	side_qp(&s, o->sdev, o->sq_depth, 1, o->sq_depth, o->inline_send ? o->size : 0);
	/*
	 * Rate: the payload is never rewritten, one slot per WR of a batch. Ping and -P: every
	 * send carries a new timestamp or SQN; a ring as deep as the send queue keeps a buffer
	 * untouched until its send has retired (hardware reads it after ibv_post_send returns).
	 */
	side_buffers(&s, o->sdev, o->mode == BENCH_PING || o->pgm ? o->sq_depth : batch, o->size);
	if (o->pgm)
		pgm_base = bench_pgm_format(&s, o->size, stamp_len);

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = BENCH_PORT;
	aa.grh.dgid = s.mgid;
	aa.grh.sgid_index = (uint8_t)s.gid_index;
	aa.grh.hop_limit = BENCH_HOP_LIMIT;
	if (o->join) {
		side_join(&s, o->sdev, o->group, true);
		aa = s.join_ah;
	}
	s.ah = ibv_create_ah(s.pd, &aa);
	if (!s.ah)
		die("sender: create_ah: %s", strerror(errno));

	for (uint32_t i = 0; i < batch; i++) {
		sges[i].addr = (uintptr_t)(s.buf + (size_t)i * s.slot);
		sges[i].length = o->size;
		sges[i].lkey = s.mr->lkey;
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].opcode = IBV_WR_SEND;
		wrs[i].next = i + 1 < batch ? &wrs[i + 1] : NULL;
		wrs[i].wr.ud.ah = s.ah;
		wrs[i].wr.ud.remote_qpn = BENCH_MCAST_QPN;
		wrs[i].wr.ud.remote_qkey = s.qkey;
	}

	if (pipe_read(ready_fd, &ready, 1, BENCH_READY_NS))
		die("sender: receiver not ready");

	res.t_start = now_ns();
	if (o->mode == BENCH_RATE) {
		while (posted < o->count) {
			uint32_t n =
				o->count - posted < batch ? (uint32_t)(o->count - posted) : batch;
			int ret;

			/* Room for a whole batch: retire signaled sends first. */
			while (posted - retired + n > o->sq_depth)
				retired = tx_retire(&s, retired);
			/* Paced: a batch leaves when the offered rate says it is due. */
			if (o->rate) {
				uint64_t due = res.t_start +
					       (uint64_t)((double)posted * 1e9 / (double)o->rate);

				while (now_ns() < due)
					retired = tx_retire(&s, retired);
			}
			for (uint32_t i = 0; i < n; i++) {
				uint64_t seq = posted + i;

				/*
				 * -P: slot seq % sq_depth; the room check above keeps fewer than
				 * sq_depth sends in flight, none of them in this slot.
				 */
				if (o->pgm) {
					uint8_t *pkt = s.buf + (seq % s.nslots) * s.slot;

					bench_pgm_stamp(pkt, pgm_base, (uint32_t)seq, stamp_len);
					sges[i].addr = (uintptr_t)pkt;
				}
				wrs[i].wr_id = seq;
				wrs[i].send_flags =
					((seq + 1) % o->signal == 0 || seq + 1 == o->count
						 ? IBV_SEND_SIGNALED
						 : 0) |
					(o->inline_send ? IBV_SEND_INLINE : 0);
			}
			wrs[n - 1].next = NULL;
			ret = ibv_post_send(s.qp, wrs, &bad);
			if (ret)
				die("sender: post_send: %s", strerror(ret));
			wrs[n - 1].next = n < batch ? &wrs[n] : NULL;
			posted += n;
		}
	} else {
		uint64_t next = res.t_start;

		for (posted = 0; posted < o->count; posted++) {
			uint64_t ts;
			int ret;

			while (posted - retired + 1 > o->sq_depth)
				retired = tx_retire(&s, retired);
			/*
			 * Sleep until shortly before the send is due, then spin: the sender's CPU
			 * stays mostly idle, so only the receiver busy-polls (a virtual machine
			 * whose vCPUs are all busy gets preempted by its host, which would then
			 * dominate the latency tail).
			 */
			while ((ts = now_ns()) < next) {
				if (next - ts > BENCH_SPIN_NS) {
					struct timespec until = {
						.tv_sec = (time_t)((next - BENCH_SPIN_NS) /
								   NSEC_PER_SEC),
						.tv_nsec = (long)((next - BENCH_SPIN_NS) %
								  NSEC_PER_SEC),
					};

					clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until,
							NULL);
					continue;
				}
				retired = tx_retire(&s, retired);
			}
			next += (uint64_t)o->interval_us * 1000;
			wrs[0].wr_id = posted;
			wrs[0].send_flags =
				((posted + 1) % o->signal == 0 ? IBV_SEND_SIGNALED : 0) |
				(o->inline_send ? IBV_SEND_INLINE : 0);
			sges[0].addr = (uintptr_t)(s.buf + (posted % s.nslots) * s.slot);
			ts = now_ns();
			if (o->pgm) {
				uint8_t *pkt = (uint8_t *)(uintptr_t)sges[0].addr;

				memcpy(pkt + BENCH_PGM_TSDU_OFF, &ts, sizeof(ts));
				bench_pgm_stamp(pkt, pgm_base, (uint32_t)posted, stamp_len);
			} else {
				memcpy((void *)(uintptr_t)sges[0].addr, &ts, sizeof(ts));
			}
			ret = ibv_post_send(s.qp, wrs, &bad);
			if (ret)
				die("sender: post_send: %s", strerror(ret));
		}
	}
	res.t_end = now_ns();
	res.sent = posted;
	side_close(&s);
	pipe_write(result_fd, &res, sizeof(res));
	exit(0);
}

/* ---- receiver (parent process) ---- */

struct bench_rx {
	uint64_t received;
	uint64_t errors;
	uint64_t rq_full; /* post_recv refused with ENOMEM although slots were free */
	uint64_t t_first;
	uint64_t t_last;
	uint64_t *lat; /* ping: one-way latencies, ns */
	uint64_t nlat;
};

/*
 * Post receives for `n` buffer slots as one chain. Returns how many were posted: all,
 * or fewer when the receive queue is full (ENOMEM), which a correct provider reports
 * only if more receives are outstanding than the queue holds; the caller keeps the rest
 * and counts the event.
 */
static uint32_t rx_post(struct bench_side *s, struct ibv_recv_wr *wrs, struct ibv_sge *sges,
			const uint32_t *slots, uint32_t n)
{
	struct ibv_recv_wr *bad = NULL;
	int ret;

	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		sges[i].addr = (uintptr_t)(s->buf + (size_t)slots[i] * s->slot);
		sges[i].length = (uint32_t)s->slot;
		sges[i].lkey = s->mr->lkey;
		wrs[i].wr_id = slots[i];
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	ret = ibv_post_recv(s->qp, wrs, &bad);
	if (!ret)
		return n;
	if (ret != ENOMEM || !bad)
		die("receiver: post_recv: %s", strerror(ret));
	return (uint32_t)(bad - wrs);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static uint64_t percentile(const uint64_t *v, uint64_t n, double p)
{
	uint64_t rank;

	if (!n)
		return 0;
	rank = (uint64_t)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static void report(const struct bench_opts *o, const struct bench_tx_result *tx,
		   const struct bench_rx *rx)
{
	double tx_s = (double)(tx->t_end - tx->t_start) / 1e9;
	double rx_s = (double)(rx->t_last - rx->t_first) / 1e9;
	const char *mode = o->mode == BENCH_RATE ? "rate" : "ping";
	uint64_t min, p50, p90, p99, p999, max;

	if (o->mode == BENCH_RATE) {
		double tx_pps = tx_s > 0 ? (double)tx->sent / tx_s : 0;
		/* The first completion opens the window: it counts as packet zero. */
		double rx_pps =
			rx_s > 0 && rx->received > 1 ? (double)(rx->received - 1) / rx_s : 0;

		if (o->json) {
			printf("{\"mode\": \"%s\", \"sender\": \"%s\", \"receiver\": \"%s\", "
			       "\"payload\": %u, \"batch\": %u, \"signal\": %u, "
			       "\"offered_pps\": %" PRIu64 ", \"inline\": %s, \"pgm\": %s, "
			       "\"sent\": %" PRIu64 ", \"received\": %" PRIu64
			       ", \"lost\": %" PRIu64 ", \"errors\": %" PRIu64
			       ", \"rq_full\": %" PRIu64 ", \"tx_pps\": %.0f, \"rx_pps\": %.0f}\n",
			       mode, o->sdev, o->rdev, o->size, o->batch, o->signal, o->rate,
			       o->inline_send ? "true" : "false", o->pgm ? "true" : "false",
			       tx->sent, rx->received, tx->sent - rx->received, rx->errors,
			       rx->rq_full, tx_pps, rx_pps);
		} else {
			printf("rate: %s -> %s, %u-byte payload%s, batch %u, signal 1/%u%s",
			       o->sdev, o->rdev, o->size, o->pgm ? " (PGM ODATA)" : "", o->batch,
			       o->signal, o->inline_send ? ", inline" : "");
			if (o->rate)
				printf(", offered %.3f Mpps", (double)o->rate / 1e6);
			printf("\n");
			printf("  sent     %" PRIu64 " in %.3f s: %.3f Mpps\n", tx->sent, tx_s,
			       tx_pps / 1e6);
			printf("  received %" PRIu64 " in %.3f s: %.3f Mpps (lost %" PRIu64
			       ", errors %" PRIu64 ")\n",
			       rx->received, rx_s, rx_pps / 1e6, tx->sent - rx->received,
			       rx->errors);
			if (rx->rq_full)
				printf("  post_recv refused %" PRIu64
				       " times with ENOMEM although receives were free\n",
				       rx->rq_full);
		}
		return;
	}

	qsort(rx->lat, rx->nlat, sizeof(rx->lat[0]), cmp_u64);
	min = rx->nlat ? rx->lat[0] : 0;
	p50 = percentile(rx->lat, rx->nlat, 50);
	p90 = percentile(rx->lat, rx->nlat, 90);
	p99 = percentile(rx->lat, rx->nlat, 99);
	p999 = percentile(rx->lat, rx->nlat, 99.9);
	max = rx->nlat ? rx->lat[rx->nlat - 1] : 0;

	if (o->json) {
		printf("{\"mode\": \"%s\", \"sender\": \"%s\", \"receiver\": \"%s\", "
		       "\"payload\": %u, \"interval_us\": %u, \"inline\": %s, \"pgm\": %s, "
		       "\"sent\": %" PRIu64 ", \"received\": %" PRIu64 ", \"errors\": %" PRIu64
		       ", \"min_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64 ", \"p90_ns\": %" PRIu64
		       ", \"p99_ns\": %" PRIu64 ", \"p999_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
		       "}\n",
		       mode, o->sdev, o->rdev, o->size, o->interval_us,
		       o->inline_send ? "true" : "false", o->pgm ? "true" : "false", tx->sent,
		       rx->received, rx->errors, min, p50, p90, p99, p999, max);
	} else {
		printf("ping: %s -> %s, %u-byte payload%s, one every %u us%s\n", o->sdev, o->rdev,
		       o->size, o->pgm ? " (PGM ODATA)" : "", o->interval_us,
		       o->inline_send ? ", inline" : "");
		printf("  sent %" PRIu64 ", received %" PRIu64 ", errors %" PRIu64 "\n", tx->sent,
		       rx->received, rx->errors);
		printf("  one-way latency ns: min %" PRIu64 " p50 %" PRIu64 " p90 %" PRIu64
		       " p99 %" PRIu64 " p99.9 %" PRIu64 " max %" PRIu64 "\n",
		       min, p50, p90, p99, p999, max);
	}
}

static int rx_run(const struct bench_opts *o, pid_t child, int ready_fd, int result_fd)
{
	struct ibv_recv_wr *wrs;
	struct ibv_sge *sges;
	struct bench_tx_result tx = {0};
	struct bench_rx rx = {0};
	struct bench_side s;
	uint32_t *pending, npending = 0;
	uint64_t idle_polls = 0, last_activity;
	bool tx_done = false;
	int status;
	char ready = 'r';

	pin_cpu(o->rcpu, "receiver");
	side_open(&s, o->rdev, o->group, o->join);
	side_qp(&s, o->rdev, 1, o->rq_depth, o->rq_depth, 0);
	side_buffers(&s, o->rdev, o->rq_depth, BENCH_GRH_LEN + (size_t)o->size);
	if (o->join)
		side_join(&s, o->rdev, o->group, false);
	else if (ibv_attach_mcast(s.qp, &s.mgid, 0))
		die("receiver: attach_mcast failed");

	wrs = calloc(o->rq_depth, sizeof(*wrs));
	sges = calloc(o->rq_depth, sizeof(*sges));
	pending = calloc(o->rq_depth, sizeof(*pending));
	if (o->mode == BENCH_PING)
		rx.lat = calloc(o->count ? o->count : 1, sizeof(*rx.lat));
	if (!wrs || !sges || !pending || (o->mode == BENCH_PING && !rx.lat))
		die("out of memory");
	for (uint32_t i = 0; i < o->rq_depth; i++)
		pending[i] = i;
	if (rx_post(&s, wrs, sges, pending, o->rq_depth) != o->rq_depth)
		die("receiver: cannot post %u receives", o->rq_depth);

	pipe_write(ready_fd, &ready, 1);
	last_activity = now_ns();
	for (;;) {
		struct ibv_wc wc[BENCH_POLL_BURST];
		int n = ibv_poll_cq(s.cq, BENCH_POLL_BURST, wc);
		uint64_t t;

		if (n < 0)
			die("receiver: poll_cq failed");
		if (n == 0) {
			if (++idle_polls % BENCH_PIPE_CHECK)
				continue;
			t = now_ns();
			if (!tx_done) {
				struct pollfd pfd = {.fd = result_fd, .events = POLLIN};

				if (poll(&pfd, 1, 0) > 0) {
					if (pipe_read(result_fd, &tx, sizeof(tx), BENCH_READY_NS))
						die("receiver: sender failed");
					tx_done = true;
					last_activity = t;
				} else if (t - last_activity > BENCH_READY_NS) {
					die("receiver: no traffic and no word from the sender");
				}
				continue;
			}
			if (rx.received + rx.errors >= tx.sent || t - last_activity > BENCH_IDLE_NS)
				break;
			continue;
		}
		t = now_ns();
		last_activity = t;
		if (!rx.received)
			rx.t_first = t;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				rx.errors++;
				continue;
			}
			if (o->mode == BENCH_PING && rx.nlat < o->count) {
				uint64_t ts;

				memcpy(&ts,
				       s.buf + wc[i].wr_id * s.slot + BENCH_GRH_LEN +
					       (o->pgm ? BENCH_PGM_TSDU_OFF : 0),
				       sizeof(ts));
				rx.lat[rx.nlat++] = t - ts;
			}
			pending[npending++] = (uint32_t)wc[i].wr_id;
			rx.received++;
		}
		rx.t_last = t;
		if (npending >= o->batch) {
			uint32_t done = rx_post(&s, wrs, sges, pending, npending);

			if (done < npending) {
				rx.rq_full++;
				memmove(pending, pending + done,
					(npending - done) * sizeof(*pending));
			}
			npending -= done;
		}
	}
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		die("sender process failed");
	report(o, &tx, &rx);
	side_close(&s);
	free(wrs);
	free(sges);
	free(pending);
	free(rx.lat);
	return rx.errors || (o->mode == BENCH_PING && rx.received < tx.sent) ? 1 : 0;
}

static void usage(FILE *f)
{
	fputs("Usage: sf_bench [options]\n"
	      "One-hop UD multicast rate and latency between two processes (RoCEv2 devices).\n"
	      "  -m MODE       rate (default) or ping\n"
	      "  -s DEV        sender device (sim_roce1)\n"
	      "  -r DEV        receiver device (sim_roce2)\n"
	      "  -g GROUP      IPv4 multicast group (239.255.1.1)\n"
	      "  -n COUNT      packets (rate: 5000000) or samples (ping: 20000)\n"
	      "  -S BYTES      payload size (64)\n"
	      "  -b N          WRs per chained post (32)\n"
	      "  -N N          signal one send in N (rate: 256, ping: 64)\n"
	      "  -q N          send queue depth (1024)\n"
	      "  -Q N          receive queue depth (32768)\n"
	      "  -i USEC       ping: send interval (100)\n"
	      "  -R PPS        rate: offer this many packets/s (default: as fast as possible)\n"
	      "  -c CPU        sender CPU (0)\n"
	      "  -C CPU        receiver CPU (1)\n"
	      "  -I            inline sends\n"
	      "  -J            join through rdma_cm (IB or RoCE devices; the path through a bridge)\n"
	      "  -P            payloads are PGM ODATA packets of one stream: TSI\n"
	      "                02:00:00:00:00:01.7000, dport 7500, SQN 0, 1, 2, ..., checksum\n"
	      "                valid (-S at least 24 bytes; ping: 32, the send time in the TSDU)\n"
	      "  -j            one JSON object instead of text\n",
	      f);
}

static uint64_t parse_num(const char *s, const char *what, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || v < min || v > max)
		die("bad %s '%s' (%" PRIu64 "..%" PRIu64 ")", what, s, min, max);
	return v;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.mode = BENCH_RATE,
		.sdev = "sim_roce1",
		.rdev = "sim_roce2",
		.size = 64,
		.batch = 32,
		.sq_depth = 1024,
		/*
		 * Deep enough to ride out a stall of the receiving CPU for ~15 ms at 2 Mpps
		 * (virtual machines preempt busy vCPUs); 32768 is mlx5's max_qp_wr.
		 */
		.rq_depth = 32768,
		.interval_us = 100,
		.scpu = 0,
		.rcpu = 1,
	};
	int ready_pipe[2], result_pipe[2], opt;
	bool count_set = false, signal_set = false;
	const char *group = "239.255.1.1";
	pid_t pid;

	while ((opt = getopt(argc, argv, "m:s:r:g:n:S:b:N:q:Q:i:R:c:C:IJPjh")) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "rate"))
				o.mode = BENCH_RATE;
			else if (!strcmp(optarg, "ping"))
				o.mode = BENCH_PING;
			else
				die("bad mode '%s' (rate or ping)", optarg);
			break;
		case 's':
			o.sdev = optarg;
			break;
		case 'r':
			o.rdev = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 'n':
			o.count = parse_num(optarg, "count", 1, UINT64_MAX / 2);
			count_set = true;
			break;
		case 'S':
			o.size = (uint32_t)parse_num(optarg, "payload size", 8, BENCH_MAX_PAYLOAD);
			break;
		case 'b':
			o.batch = (uint32_t)parse_num(optarg, "batch", 1, BENCH_MAX_BATCH);
			break;
		case 'N':
			o.signal = (uint32_t)parse_num(optarg, "signal interval", 1, 1u << 20);
			signal_set = true;
			break;
		case 'q':
			o.sq_depth = (uint32_t)parse_num(optarg, "send queue depth", 2, 1u << 15);
			break;
		case 'Q':
			o.rq_depth =
				(uint32_t)parse_num(optarg, "receive queue depth", 2, 1u << 15);
			break;
		case 'i':
			o.interval_us = (uint32_t)parse_num(optarg, "interval", 1, 1000000);
			break;
		case 'R':
			o.rate = parse_num(optarg, "rate", 1, 1000000000);
			break;
		case 'c':
			o.scpu = (int)parse_num(optarg, "CPU", 0, CPU_SETSIZE - 1);
			break;
		case 'C':
			o.rcpu = (int)parse_num(optarg, "CPU", 0, CPU_SETSIZE - 1);
			break;
		case 'I':
			o.inline_send = true;
			break;
		case 'J':
			o.join = true;
			break;
		case 'P':
			o.pgm = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (inet_pton(AF_INET, group, &o.group) != 1 || !IN_MULTICAST(ntohl(o.group.s_addr)))
		die("bad IPv4 multicast group '%s'", group);
	if (!count_set)
		o.count = o.mode == BENCH_RATE ? 5000000 : 20000;
	if (!signal_set)
		o.signal = o.mode == BENCH_RATE ? 256 : 64;
	if (o.mode == BENCH_RATE && o.batch + o.signal > o.sq_depth)
		die("batch + signal interval must fit the send queue (%u)", o.sq_depth);
	if (o.mode == BENCH_PING && o.signal >= o.sq_depth)
		die("signal interval must be below the send queue depth (%u)", o.sq_depth);
	if (o.batch > o.rq_depth / 2)
		die("batch must be at most half the receive queue depth");
	if (o.pgm) {
		/* ODATA header and fields; ping also carries its 8-byte send time in the TSDU. */
		uint32_t min = BENCH_PGM_TSDU_OFF + (o.mode == BENCH_PING ? sizeof(uint64_t) : 0);

		if (o.size < min) {
			fprintf(stderr,
				"sf_bench: -P: a %u-byte payload cannot hold a PGM ODATA packet "
				"(%s needs -S %u or more: %u-byte header + %u-byte SQN/TRAIL%s)\n",
				o.size, o.mode == BENCH_PING ? "ping" : "rate", min, PGM_HDR_LEN,
				PGM_DATA_LEN, o.mode == BENCH_PING ? " + 8-byte send time" : "");
			return 2;
		}
	}

	/* A side that dies closes its pipe ends: the other side reports it, not SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (pipe(ready_pipe) || pipe(result_pipe))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(ready_pipe[1]);
		close(result_pipe[0]);
		tx_run(&o, ready_pipe[0], result_pipe[1]);
	}
	close(ready_pipe[0]);
	close(result_pipe[1]);
	return rx_run(&o, pid, ready_pipe[1], result_pipe[0]);
}
