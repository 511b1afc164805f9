// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mcpkt: UD multicast traffic for the bridge's end-to-end tests, written against the
 * real rdma-core API (it runs on simfabric through LD_LIBRARY_PATH, or on hardware).
 *
 *   mcpkt send -b ADDR -g GROUP [-n count] [-s size] [--groups N] [--qps N] [--imm]
 *              [--rate pps] [--sendonly | --full] [--delay ms] [--timeout s]
 *              [--warmup pps [--warmup-pause ms]] [--trace FILE] [--no-catchup]
 *   mcpkt recv -b ADDR -g GROUP [-n expected] [--groups N] [--timeout s] [--verify]
 *              [--imm] [--linger ms] [--rq depth] [--size max] [--any-source]
 *              [--trace FILE]
 *
 * ADDR is the local IPv4 address (IPoIB on InfiniBand) that selects the device; GROUP
 * the first IPv4 multicast group, --groups N uses GROUP, GROUP+1, ... GROUP+N-1.
 *
 * The sender joins every group (send-only full member unless --full), creates --qps UD
 * QPs sharing one CQ (each QP is a distinct source QPN: a distinct sender for the
 * bridge) and sends `count` packets from every QP to every group: for seq in 0..count-1,
 * for each group, for each QP. A packet's payload is a header (magic, run id, sender =
 * QP index, group index, seq, length, flags, checksum) followed by bytes generated from
 * (run, sender, group, seq). With --imm the immediate data is seq in network order.
 * --rate paces all QPs together (packets per second): a sender held up sends what it is
 * late by at once, in a burst above the rate, unless --no-catchup, with which a send
 * more than 1 ms late moves the schedule instead (the stream never goes above the rate;
 * it ends later). --delay waits after the joins. One
 * send in SIG_EVERY is signaled (and the last of each QP); a QP never has more than its
 * send queue depth outstanding; completions missing --timeout seconds after the start
 * are an error. It prints "mcpkt: joined ..." when ready and, at the end,
 * "mcpkt: sent=N completed=N errors=E qps=Q groups=G size=S imm=0|1 duration_s=T" (T:
 * from the pass's first post to its last completion); exit 0 when every send completed
 * successfully. --warmup PPS first sends one packet from every QP to every group at PPS
 * under another run id, prints "mcpkt: warm sent=N" and waits --warmup-pause ms (default
 * 1000) before the counted pass (bench/harness.py: every sender is known to the bridge
 * before the pass whose instructions are counted).
 *
 * The receiver joins every group as a full member, attaches its QPs (up to
 * GROUPS_PER_QP groups each), prints "mcpkt: joined ..." once every group is joined and
 * the receive queues are filled, then counts packets. Every packet's header is checked
 * (magic, length, checksum, and that the group in the header is the group the packet was
 * addressed to); --verify also compares every payload byte with the pattern; the
 * immediate data must be present exactly when the sender used --imm and equal the seq
 * (--imm on the receiver: every packet must carry it). A packet is a duplicate when the
 * same (source address, source QPN, run, sender, group, seq) was seen before; with
 * --any-source when the same (run, sender, group, seq) was, whoever forwarded it (the
 * bridges of an HA pair are distinct sources: each packet once across them). It stops
 * `--linger` ms after `expected` packets arrived (with -n 0: at the timeout, so that it
 * watches for packets that must not come), after --timeout seconds, or on SIGINT/SIGTERM,
 * and prints one summary line:
 *
 *   mcpkt: received=N bad=B dup=D imm_bad=I senders=K sources=S groups=G expected=E
 *
 * senders counts distinct (source address, source QPN, run, sender) (with --any-source:
 * (run, sender)), sources distinct
 * (source address, source QPN) on the wire, groups the groups that got a packet. Exit 0
 * when bad, dup and imm_bad are 0 and received equals expected (when -n was given), else
 * 1; 2 for usage or setup errors. Receives are reposted as soon as their completion is
 * polled; one that finds its queue still full is posted again later and counted in a
 * note on stderr (simfabric releases the slot just after publishing the completion).
 *
 * --trace FILE writes where a stream's loss lies in time (tests/ha/twohost.sh: the
 * structure of a failover's loss). Times are CLOCK_REALTIME in seconds (microseconds),
 * comparable with `date +%s.%N` of the test; at most TRACE_MAX lines, then a line
 * "trace_truncated". The sender writes "start T RUN" (the due time of the pass's first
 * packet: packet k is due at T + k / rate; its run id in hex) and, per episode of sends
 * posted more than LAG_US late (descheduled: the sender then sends its backlog in a
 * burst), "lag FIRST LAST MAX_US T" (the episode's packet indexes, its largest
 * lateness, the time of its first late post). The receiver follows each sender
 * record's packet index (seq * groups + group, the order they are sent in) and writes,
 * each line with the record's run id in hex after its first word (RUN below left out),
 * "gap FIRST COUNT T_BEFORE
 * T_AFTER SRC_BEFORE SRC_AFTER" when an index skips COUNT (FIRST: the first missing;
 * the times and sources, IPv4 on RoCE, GID on IB, of the packets around it, T_BEFORE 0
 * for a gap at the start), "late INDEX T SRC" when a missing one comes after all
 * (it fills a gap), "switch INDEX T SRC_FROM SRC_TO" when the forwarding source changes
 * (an HA pair's failover), and at the end "last INDEX T SRC" (the highest index seen:
 * what is missing after it is the stream's tail). Lost = the gaps' counts + the tail -
 * the late ones, for the sender's run; a record of another run (a packet a bridge held
 * from an earlier stream) received LAST + 1 - its gaps + its late ones.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define GRH_LEN	       40 /* UD receive header space (GRH, or IPv4 at offset 20) */
#define IPV4_OFF       20 /* RoCEv2: the IPv4 header inside the 40 bytes */
#define IPV4_DST_OFF   (IPV4_OFF + 16)
#define IPV4_SRC_OFF   (IPV4_OFF + 12)
#define MCAST_QPN      0xffffffu
#define MCPKT_MAGIC    0x4d43504bu /* "MCPK" */
#define MCPKT_F_IMM    0x1u	   /* the sender set the immediate data (= seq) */
#define GROUPS_PER_QP  200	   /* below max_mcast_qp_attach (240 on ConnectX) */
#define SIG_EVERY      16	   /* one signaled send in SIG_EVERY */
#define CQ_BURST       64
#define JOIN_TIMEOUT_S 20
#define DEF_SIZE       100
#define DEF_TIMEOUT_S  10
#define DEF_LINGER_MS  300
#define DEF_RQ	       4096
#define MAX_MTU	       4096
#define TRACE_MAX      100000 /* --trace lines at most */
#define LAG_US	       1000   /* --trace: a send this late opens a "lag" episode */

/* The start of every payload; all fields in network order. */
struct mcpkt_hdr {
	uint32_t magic;
	uint32_t run;	 /* random per sender process */
	uint32_t sender; /* QP index in the sender */
	uint32_t group;	 /* group index (0 = the -g address) */
	uint32_t seq;
	uint32_t len; /* payload length including this header */
	uint32_t flags;
	uint32_t csum; /* FNV-1a of the payload with this field zero */
};

_Static_assert(sizeof(struct mcpkt_hdr) == 32, "mcpkt header is 32 bytes on the wire");

struct mc_group {
	uint32_t addr; /* network order */
	bool joined;
	union ibv_gid mgid; /* from the join event */
	uint32_t mlid;
	uint32_t qkey;
	struct ibv_ah *ah;
	uint64_t rx; /* receiver: packets addressed to this group */
};

struct opts {
	bool send;
	const char *bind;
	const char *group;
	int64_t count; /* send: per QP per group; recv: expected total, -1 unknown */
	uint32_t size;
	uint32_t ngroups;
	uint32_t nqps;
	bool imm;
	uint64_t rate;
	bool full;
	uint32_t delay_ms;
	uint64_t warmup; /* pps of the warm-up pass; 0: none */
	uint32_t warmup_pause_ms;
	uint32_t timeout_s;
	bool verify;
	bool any_source; /* --any-source: a duplicate regardless of who forwarded it */
	uint32_t linger_ms;
	uint32_t rq;
	const char *trace; /* --trace FILE */
	bool no_catchup;   /* --no-catchup: a late sender does not burst to catch up */
};

/* The rdma_cm side shared by both modes. */
struct cm {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	bool roce;
	struct mc_group *groups;
	uint32_t ngroups;
	uint32_t qkey;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mcpkt: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --trace: the file (NULL: none) and the lines written. */
static FILE *trace_f;
static uint64_t trace_lines;

static void trace_open(const char *path)
{
	if (!path)
		return;
	trace_f = fopen(path, "w");
	if (!trace_f)
		die("--trace %s: %s", path, strerror(errno));
}

static void trace_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void trace_line(const char *fmt, ...)
{
	va_list ap;

	if (!trace_f || trace_lines > TRACE_MAX)
		return;
	if (trace_lines++ == TRACE_MAX) {
		fprintf(trace_f, "trace_truncated\n");
		return;
	}
	va_start(ap, fmt);
	vfprintf(trace_f, fmt, ap);
	va_end(ap);
}

static void trace_close(void)
{
	if (trace_f && fclose(trace_f))
		die("--trace: %s", strerror(errno));
	trace_f = NULL;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};

	while (nanosleep(&ts, &ts) && errno == EINTR && !stop_flag)
		;
}

/* ---- payload ---- */

static uint32_t fnv1a(uint32_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return h;
}

#define FNV_SEED 2166136261u

static uint32_t pattern_seed(uint32_t run, uint32_t sender, uint32_t group, uint32_t seq)
{
	uint32_t k[4] = {run, sender, group, seq};

	return fnv1a(FNV_SEED, k, sizeof(k)) | 1;
}

/* The body after the header: a xorshift32 stream seeded by the packet's identity. */
static void pattern_fill(uint8_t *body, size_t n, uint32_t seed)
{
	uint32_t x = seed;

	for (size_t i = 0; i < n; i++) {
		if (!(i & 3)) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
		}
		body[i] = (uint8_t)(x >> (8 * (i & 3)));
	}
}

static bool pattern_check(const uint8_t *body, size_t n, uint32_t seed)
{
	uint32_t x = seed;

	for (size_t i = 0; i < n; i++) {
		if (!(i & 3)) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
		}
		if (body[i] != (uint8_t)(x >> (8 * (i & 3))))
			return false;
	}
	return true;
}

static uint32_t payload_csum(const uint8_t *p, size_t len)
{
	static const uint8_t zero[4];
	size_t off = offsetof(struct mcpkt_hdr, csum);
	uint32_t h;

	h = fnv1a(FNV_SEED, p, off);
	h = fnv1a(h, zero, sizeof(zero));
	return fnv1a(h, p + off + 4, len - off - 4);
}

static void payload_build(uint8_t *p, uint32_t len, uint32_t run, uint32_t sender, uint32_t group,
			  uint32_t seq, uint32_t flags)
{
	struct mcpkt_hdr h = {
		.magic = htonl(MCPKT_MAGIC),
		.run = htonl(run),
		.sender = htonl(sender),
		.group = htonl(group),
		.seq = htonl(seq),
		.len = htonl(len),
		.flags = htonl(flags),
		.csum = 0,
	};

	memcpy(p, &h, sizeof(h));
	pattern_fill(p + sizeof(h), len - sizeof(h), pattern_seed(run, sender, group, seq));
	h.csum = htonl(payload_csum(p, len));
	memcpy(p + offsetof(struct mcpkt_hdr, csum), &h.csum, sizeof(h.csum));
}

/* ---- rdma_cm ---- */

static struct rdma_cm_event *cm_wait_event(struct cm *c, int timeout_ms)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = {.fd = c->ch->fd, .events = POLLIN};
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		if (!rdma_get_cm_event(c->ch, &ev))
			return ev;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			die("rdma_get_cm_event: %s", strerror(errno));
		uint64_t now = now_ns();

		if (now >= end || stop_flag)
			return NULL;
		if (poll(&pfd, 1, (int)((end - now) / 1000000ull) + 1) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
	}
}

static void cm_open(struct cm *c, const struct opts *o)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct ibv_port_attr pa;
	struct in_addr g;
	int fl;

	if (inet_pton(AF_INET, o->bind, &sin.sin_addr) != 1)
		die("-b %s: not an IPv4 address", o->bind);
	if (inet_pton(AF_INET, o->group, &g) != 1 || (ntohl(g.s_addr) >> 28) != 0xe)
		die("-g %s: not an IPv4 multicast address", o->group);
	if ((uint64_t)(ntohl(g.s_addr) & 0x0fffffff) + o->ngroups > 0x10000000)
		die("--groups %u: the range leaves 224.0.0.0/4", o->ngroups);
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		die("rdma_create_event_channel: %s", strerror(errno));
	fl = fcntl(c->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(c->ch->fd, F_SETFL, fl | O_NONBLOCK))
		die("fcntl: %s", strerror(errno));
	if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_UDP))
		die("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(c->id, (struct sockaddr *)&sin))
		die("rdma_bind_addr %s: %s", o->bind, strerror(errno));
	if (!c->id->verbs)
		die("rdma_bind_addr %s: no device", o->bind);
	c->ctx = c->id->verbs;
	if (ibv_query_port(c->ctx, c->id->port_num, &pa))
		die("ibv_query_port: %s", strerror(errno));
	c->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	c->ngroups = o->ngroups;
	c->groups = calloc(o->ngroups, sizeof(*c->groups));
	if (!c->groups)
		die("out of memory");
	for (uint32_t i = 0; i < o->ngroups; i++)
		c->groups[i].addr = htonl(ntohl(g.s_addr) + i);
}

/*
 * Join every group (full member, or send-only full member) and wait for the events.
 * on_join(g) runs for each group as its MULTICAST_JOIN arrives (the receiver attaches
 * its QP there). Dies on MULTICAST_ERROR, a failed join or after JOIN_TIMEOUT_S.
 */
static void cm_join_all(struct cm *c, bool send_only, void (*on_join)(void *, uint32_t), void *arg)
{
	uint32_t pending = 0;

	for (uint32_t i = 0; i < c->ngroups; i++) {
		struct sockaddr_in sin = {.sin_family = AF_INET,
					  .sin_addr.s_addr = c->groups[i].addr};
		struct rdma_cm_join_mc_attr_ex ja = {
			.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
			.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
						: RDMA_MC_JOIN_FLAG_FULLMEMBER,
			.addr = (struct sockaddr *)&sin,
		};

		if (rdma_join_multicast_ex(c->id, &ja, (void *)(uintptr_t)(i + 1)))
			die("rdma_join_multicast %s: %s", inet_ntoa(sin.sin_addr), strerror(errno));
		pending++;
	}
	while (pending) {
		struct rdma_cm_event *ev = cm_wait_event(c, JOIN_TIMEOUT_S * 1000);
		uintptr_t ctx;
		struct mc_group *g;

		if (!ev)
			die("%u of %u joins did not complete within %d s", pending, c->ngroups,
			    JOIN_TIMEOUT_S);
		ctx = (uintptr_t)ev->param.ud.private_data;
		if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN) {
			if (ev->event == RDMA_CM_EVENT_MULTICAST_ERROR)
				die("join of group %" PRIuPTR ": %s (status %d)", ctx - 1,
				    rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			continue;
		}
		if (ctx < 1 || ctx > c->ngroups || c->groups[ctx - 1].joined)
			die("join event with an unknown context %" PRIuPTR, ctx);
		g = &c->groups[ctx - 1];
		g->mgid = ev->param.ud.ah_attr.grh.dgid;
		g->mlid = ev->param.ud.ah_attr.dlid;
		g->qkey = ev->param.ud.qkey;
		c->qkey = g->qkey;
		g->ah = ibv_create_ah(c->pd, &ev->param.ud.ah_attr);
		if (!g->ah)
			die("ibv_create_ah: %s", strerror(errno));
		g->joined = true;
		rdma_ack_cm_event(ev);
		if (on_join)
			on_join(arg, (uint32_t)(ctx - 1));
		pending--;
	}
}

static void cm_close(struct cm *c)
{
	for (uint32_t i = 0; i < c->ngroups; i++) {
		struct mc_group *g = &c->groups[i];
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = g->addr};

		if (g->ah)
			ibv_destroy_ah(g->ah);
		if (g->joined)
			rdma_leave_multicast(c->id, (struct sockaddr *)&sin);
	}
	free(c->groups);
	ibv_dealloc_pd(c->pd);
	rdma_destroy_id(c->id);
	rdma_destroy_event_channel(c->ch);
}

/* Create a UD QP on the CQ and move it to RTS (what rdma_create_qp does for UD). */
static struct ibv_qp *ud_qp_create(struct cm *c, struct ibv_cq *cq, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr a;
	struct ibv_qp *qp;

	qp = ibv_create_qp(c->pd, &ia);
	if (!qp)
		die("ibv_create_qp: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = c->id->port_num;
	a.qkey = c->qkey;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("ibv_modify_qp INIT: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("ibv_modify_qp RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("ibv_modify_qp RTS: %s", strerror(errno));
	return qp;
}

static void print_joined(const struct cm *c, const struct opts *o)
{
	printf("mcpkt: joined %u group%s from %s on %s (%s)\n", c->ngroups,
	       c->ngroups == 1 ? "" : "s", o->group, ibv_get_device_name(c->ctx->device),
	       c->roce ? "RoCE" : "IB");
	fflush(stdout);
}

/* ---- send ---- */

struct sqp {
	struct ibv_qp *qp;
	uint64_t posted; /* sends posted */
	uint64_t done;	 /* sends retired by signaled completions */
	uint32_t unsig;	 /* unsignaled sends since the last signaled one */
};

struct sender {
	struct sqp *q;
	uint32_t nq;
	uint32_t sq_depth;
	uint32_t sig_every;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint64_t errors;
	uint64_t completed;
};

/* wr_id: QP index above this bit (24 bits: --qps up to 131072), sends posted below. */
#define WR_QP_SHIFT 40

/* Retire signaled send completions; returns how many completions were polled. */
static int send_reap(struct sender *s)
{
	struct ibv_wc wc[CQ_BURST];
	int n = ibv_poll_cq(s->cq, CQ_BURST, wc);

	if (n < 0)
		die("ibv_poll_cq: %d", n);
	for (int i = 0; i < n; i++) {
		uint32_t qi = (uint32_t)(wc[i].wr_id >> WR_QP_SHIFT);
		uint64_t pos = wc[i].wr_id & ((1ull << WR_QP_SHIFT) - 1);

		if (qi >= s->nq)
			die("send completion for an unknown QP index %u", qi);
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "mcpkt: send completion error on QP %u: %s\n", qi,
				ibv_wc_status_str(wc[i].status));
			s->errors++;
		}
		s->completed += pos + 1 - s->q[qi].done;
		s->q[qi].done = pos + 1;
	}
	return n;
}

/* Wait until fewer than `limit` sends of QP qi are outstanding. */
static void send_wait(struct sender *s, uint32_t qi, uint64_t limit, uint64_t deadline)
{
	while (s->q[qi].posted - s->q[qi].done > limit) {
		if (send_reap(s))
			continue;
		if (now_ns() > deadline)
			die("send completions of QP %u missing (%" PRIu64 " outstanding)", qi,
			    s->q[qi].posted - s->q[qi].done);
		sched_yield();
	}
}

/* --trace: an episode of sends posted more than LAG_US late. */
struct lag {
	bool on;
	uint64_t first, max_ns;
	double t;
};

static void lag_end(struct lag *l, uint64_t k)
{
	if (l->on)
		trace_line("lag %" PRIu64 " %" PRIu64 " %" PRIu64 " %.6f\n", l->first, k - 1,
			   l->max_ns / 1000, l->t);
	l->on = false;
}

/*
 * Wait until `due` (ns, now_ns()) to send packet k; --trace: follow its lateness.
 * Returns how late the send is (0: on time).
 */
static uint64_t pace(uint64_t due, uint64_t k, struct lag *l)
{
	uint64_t now = now_ns();

	if (now < due) {
		sleep_ns(due - now);
		lag_end(l, k);
	} else if (trace_f && now - due > LAG_US * 1000ull) {
		if (!l->on)
			*l = (struct lag){.on = true, .first = k, .t = real_s()};
		if (now - due > l->max_ns)
			l->max_ns = now - due;
	} else {
		lag_end(l, k);
	}
	return now > due ? now - due : 0;
}

/*
 * One pass: `count` packets from every QP to every group (for seq, for group, for QP),
 * paced at `rate` pps when it is not 0, under run id `run`; returns the sends posted.
 * Waits for the completion of every send of the pass.
 */
static uint64_t send_pass(struct sender *s, const struct cm *c, const struct opts *o, uint32_t run,
			  uint32_t count, uint64_t rate, uint64_t deadline)
{
	uint32_t flags = o->imm ? MCPKT_F_IMM : 0;
	uint64_t k = 0, t0 = now_ns(), shift = 0;
	struct lag lag = {0};

	trace_line("start %.6f %08x\n", real_s(), run);

	for (uint32_t seq = 0; seq < count && !stop_flag; seq++) {
		for (uint32_t gi = 0; gi < o->ngroups && !stop_flag; gi++) {
			for (uint32_t qi = 0; qi < o->nqps; qi++, k++) {
				struct sqp *q = &s->q[qi];
				uint8_t *p =
					s->buf + ((size_t)qi * s->sq_depth + q->posted % s->sq_depth) *
							 o->size;
				struct ibv_sge sge = {.addr = (uintptr_t)p,
						      .length = o->size,
						      .lkey = s->mr->lkey};
				struct ibv_send_wr wr = {0}, *bad;
				bool last = seq + 1 == count && gi + 1 == o->ngroups;
				int r;

				if (rate) {
					uint64_t due = t0 + shift + k * 1000000000ull / rate;
					uint64_t late = pace(due, k, &lag);

					/* --no-catchup: a send more than LAG_US late moves the
					 * schedule: what follows goes at the rate from now. */
					if (o->no_catchup && late > LAG_US * 1000ull)
						shift += late;
				}
				/* The slot is free once the send that used it was retired. */
				send_wait(s, qi, s->sq_depth - 1, deadline);
				payload_build(p, o->size, run, qi, gi, seq, flags);
				wr.wr_id = (uint64_t)qi << WR_QP_SHIFT | q->posted;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.opcode = o->imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
				wr.imm_data = htonl(seq);
				if (++q->unsig >= s->sig_every || last) {
					wr.send_flags = IBV_SEND_SIGNALED;
					q->unsig = 0;
				}
				wr.wr.ud.ah = c->groups[gi].ah;
				wr.wr.ud.remote_qpn = MCAST_QPN;
				wr.wr.ud.remote_qkey = c->groups[gi].qkey;
				r = ibv_post_send(q->qp, &wr, &bad);
				if (r)
					die("ibv_post_send QP %u seq %u: %s", qi, seq, strerror(r));
				q->posted++;
			}
			send_reap(s);
		}
	}
	lag_end(&lag, k);
	for (uint32_t qi = 0; qi < o->nqps; qi++)
		send_wait(s, qi, 0, deadline);
	return k;
}

static int run_send(const struct opts *o)
{
	uint32_t run;
	uint64_t k, t0, pass_ns, deadline;
	struct sender s = {.nq = o->nqps};
	struct cm c = {0};
	size_t bufsz;
	int cqe;

	cm_open(&c, o);
	cm_join_all(&c, !o->full, NULL, NULL);
	s.sq_depth = o->nqps > 256 ? 8 : 128;
	s.sig_every = s.sq_depth / 2 < SIG_EVERY ? s.sq_depth / 2 : SIG_EVERY;
	cqe = (int)(o->nqps * (s.sq_depth / s.sig_every + 2));
	s.cq = ibv_create_cq(c.ctx, cqe, NULL, NULL, 0);
	if (!s.cq)
		die("ibv_create_cq %d: %s", cqe, strerror(errno));
	s.q = calloc(o->nqps, sizeof(*s.q));
	bufsz = (size_t)o->nqps * s.sq_depth * o->size;
	s.buf = aligned_alloc(4096, (bufsz + 4095) & ~(size_t)4095);
	if (!s.q || !s.buf)
		die("out of memory");
	memset(s.buf, 0, bufsz);
	s.mr = ibv_reg_mr(c.pd, s.buf, bufsz, 0);
	if (!s.mr)
		die("ibv_reg_mr: %s", strerror(errno));
	for (uint32_t i = 0; i < o->nqps; i++)
		s.q[i].qp = ud_qp_create(&c, s.cq, s.sq_depth, 0); /* send only: no receive queue */
	print_joined(&c, o);
	if (o->delay_ms)
		sleep_ns((uint64_t)o->delay_ms * 1000000ull);

	/*
	 * The run's first byte is the payload's byte 4, where a PGM header has its type:
	 * a version nibble other than 0 makes every mcpkt payload one that pgm_precheck()
	 * calls "not PGM" (pgm_not_pgm), never "malformed", whatever the random part is.
	 */
	run = ((uint32_t)getpid() ^ (uint32_t)now_ns()) | 0x80000000u;
	deadline = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
	if (o->warmup) {
		/*
		 * Every sender seen once, at a rate its receiver keeps up with, before the
		 * counted pass (a benchmark measures that pass without the receiver's first
		 * sightings). Its own run id: a receiver counts no warm-up packet as a
		 * duplicate of the counted pass's seq 0.
		 */
		k = send_pass(&s, &c, o, run ^ 0x40000000u, 1, o->warmup, deadline);
		printf("mcpkt: warm sent=%" PRIu64 "\n", k);
		s.completed = 0;
		fflush(stdout);
		if (o->warmup_pause_ms)
			sleep_ns((uint64_t)o->warmup_pause_ms * 1000000ull);
	}
	trace_open(o->trace); /* the counted pass only */
	t0 = now_ns();
	k = send_pass(&s, &c, o, run, (uint32_t)o->count, o->rate, deadline);
	pass_ns = now_ns() - t0;
	trace_close();

	printf("mcpkt: sent=%" PRIu64 " completed=%" PRIu64 " errors=%" PRIu64
	       " qps=%u groups=%u size=%u imm=%d duration_s=%.6f\n",
	       k, s.completed, s.errors, o->nqps, o->ngroups, o->size, o->imm, (double)pass_ns / 1e9);
	fflush(stdout);
	for (uint32_t i = 0; i < o->nqps; i++)
		ibv_destroy_qp(s.q[i].qp);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	cm_close(&c);
	free(s.q);
	free(s.buf);
	return s.errors || k != (uint64_t)o->count * o->ngroups * o->nqps ? 1 : 0;
}

/* ---- receive ---- */

struct src_key {
	uint8_t addr[16]; /* IB: source GID; RoCE: ::ffff:source IPv4 */
	uint32_t qpn;
	uint32_t run;
	uint32_t sender;
};

struct src_rec {
	struct src_key key;
	bool used;
	uint64_t *seen; /* bit seq * ngroups + group */
	uint64_t nwords;
	/* --trace: the next index expected, when and from where the last in order came */
	uint64_t next;
	double t_last;
	char src_last[48];
};

struct src_table {
	struct src_rec *r;
	uint64_t cap; /* power of two */
	uint64_t n;
};

static uint64_t key_hash(const struct src_key *k)
{
	return fnv1a(FNV_SEED, k, sizeof(*k)) * 0x9e3779b97f4a7c15ull;
}

/* The record of key k, created if new; *created tells. */
static struct src_rec *src_get(struct src_table *t, const struct src_key *k, bool *created)
{
	uint64_t i;

	if (2 * (t->n + 1) > t->cap) {
		struct src_table nt = {.cap = t->cap ? 2 * t->cap : 1024};

		nt.r = calloc(nt.cap, sizeof(*nt.r));
		if (!nt.r)
			die("out of memory");
		for (uint64_t j = 0; j < t->cap; j++) {
			if (!t->r[j].used)
				continue;
			for (i = key_hash(&t->r[j].key) & (nt.cap - 1); nt.r[i].used;
			     i = (i + 1) & (nt.cap - 1))
				;
			nt.r[i] = t->r[j];
		}
		nt.n = t->n;
		free(t->r);
		*t = nt;
	}
	for (i = key_hash(k) & (t->cap - 1); t->r[i].used; i = (i + 1) & (t->cap - 1)) {
		if (!memcmp(&t->r[i].key, k, sizeof(*k))) {
			*created = false;
			return &t->r[i];
		}
	}
	t->r[i].used = true;
	t->r[i].key = *k;
	t->n++;
	*created = true;
	return &t->r[i];
}

/* Mark bit b of a record; returns true when it was already set (a duplicate). */
static bool src_mark(struct src_rec *r, uint64_t b)
{
	uint64_t w = b / 64;

	if (w >= r->nwords) {
		uint64_t n = r->nwords ? r->nwords : 4;
		uint64_t *s;

		while (n <= w)
			n *= 2;
		s = realloc(r->seen, n * sizeof(*s));
		if (!s)
			die("out of memory");
		memset(s + r->nwords, 0, (n - r->nwords) * sizeof(*s));
		r->seen = s;
		r->nwords = n;
	}
	if (r->seen[w] & (1ull << (b % 64)))
		return true;
	r->seen[w] |= 1ull << (b % 64);
	return false;
}

struct rqp {
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
};

struct receiver {
	const struct opts *o;
	struct cm *c;
	struct rqp *q;
	uint32_t nq;
	uint32_t bufsz; /* per receive: GRH + largest payload */
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct src_table senders;
	struct src_table sources;
	uint64_t *retry; /* receives to post again (wr_id) */
	uint32_t nretry;
	uint64_t reposts_deferred;
	uint64_t received, bad, dup, imm_bad;
	uint32_t bad_reported;
};

/*
 * Post receive `slot` of QP qi. When the receive queue is still full (simfabric frees a
 * receive's slot just after publishing its completion, so a repost right after polling
 * can find it taken) the receive waits in rv->retry and recv_retry() posts it later.
 */
static void recv_post(struct receiver *rv, uint32_t qi, uint32_t slot, bool first)
{
	struct rqp *q = &rv->q[qi];
	struct ibv_sge sge = {.addr = (uintptr_t)(q->buf + (size_t)slot * rv->bufsz),
			      .length = rv->bufsz,
			      .lkey = q->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)qi << 32 | slot, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int r = ibv_post_recv(q->qp, &wr, &bad);

	if (r == ENOMEM) {
		rv->retry[rv->nretry++] = wr.wr_id;
		rv->reposts_deferred += first;
	} else if (r) {
		die("ibv_post_recv: %s", strerror(r));
	}
}

/* Post the receives that found their queue full. */
static void recv_retry(struct receiver *rv)
{
	uint32_t n = rv->nretry;

	rv->nretry = 0;
	for (uint32_t i = 0; i < n; i++)
		recv_post(rv, (uint32_t)(rv->retry[i] >> 32), (uint32_t)rv->retry[i], false);
}

static void recv_attach(void *arg, uint32_t gi)
{
	struct receiver *rv = arg;
	struct mc_group *g = &rv->c->groups[gi];
	int r = ibv_attach_mcast(rv->q[gi / GROUPS_PER_QP].qp, &g->mgid, (uint16_t)g->mlid);

	if (r)
		die("ibv_attach_mcast group %u: %s", gi, strerror(r));
}

static void recv_bad(struct receiver *rv, const char *what, const struct mcpkt_hdr *h)
{
	rv->bad++;
	if (rv->bad_reported++ < 10)
		fprintf(stderr, "mcpkt: bad packet (%s): sender %u group %u seq %u len %u\n", what,
			ntohl(h->sender), ntohl(h->group), ntohl(h->seq), ntohl(h->len));
}

/* --trace: the source of a packet (k.addr before --any-source clears it) as text. */
static void src_text(const struct cm *c, const struct src_key *k, char *out, size_t n)
{
	if (c->roce)
		snprintf(out, n, "%u.%u.%u.%u", k->addr[12], k->addr[13], k->addr[14], k->addr[15]);
	else
		inet_ntop(AF_INET6, k->addr, out, (socklen_t)n);
}

/* --trace: a new (not duplicate) packet of index b of record rec from source src. */
static void trace_rx(struct src_rec *rec, uint64_t b, const char *src)
{
	double t = real_s();

	if (b < rec->next) {
		trace_line("late %08x %" PRIu64 " %.6f %s\n", rec->key.run, b, t, src);
		return;
	}
	if (b > rec->next)
		trace_line("gap %08x %" PRIu64 " %" PRIu64 " %.6f %.6f %s %s\n", rec->key.run, rec->next,
			   b - rec->next, rec->t_last, t, rec->src_last[0] ? rec->src_last : "-",
			   src);
	else if (rec->src_last[0] && strcmp(rec->src_last, src))
		trace_line("switch %08x %" PRIu64 " %.6f %s %s\n", rec->key.run, b, t, rec->src_last,
			   src);
	rec->next = b + 1;
	rec->t_last = t;
	snprintf(rec->src_last, sizeof(rec->src_last), "%s", src);
}

/* Check and count one receive completion. */
static void recv_one(struct receiver *rv, const struct ibv_wc *wc)
{
	const struct opts *o = rv->o;
	uint32_t qi = (uint32_t)(wc->wr_id >> 32), slot = (uint32_t)wc->wr_id;
	const uint8_t *p = rv->q[qi].buf + (size_t)slot * rv->bufsz, *pl = p + GRH_LEN;
	struct mcpkt_hdr h = {0};
	struct src_key k;
	struct src_rec *rec;
	struct mc_group *g;
	uint32_t len, gi, seq, flags;
	char src[INET6_ADDRSTRLEN];
	bool created;

	if (wc->status != IBV_WC_SUCCESS) {
		rv->bad++;
		fprintf(stderr, "mcpkt: receive completion error: %s\n",
			ibv_wc_status_str(wc->status));
		return;
	}
	rv->received++;
	if (!(wc->wc_flags & IBV_WC_GRH) || wc->byte_len < GRH_LEN + sizeof(h)) {
		recv_bad(rv, "no GRH or short", &h);
		return;
	}
	len = wc->byte_len - GRH_LEN;
	memcpy(&h, pl, sizeof(h));
	gi = ntohl(h.group);
	seq = ntohl(h.seq);
	flags = ntohl(h.flags);
	if (ntohl(h.magic) != MCPKT_MAGIC || ntohl(h.len) != len) {
		recv_bad(rv, "magic or length", &h);
		return;
	}
	if (gi >= rv->c->ngroups) {
		recv_bad(rv, "group index", &h);
		return;
	}
	g = &rv->c->groups[gi];
	memset(&k, 0, sizeof(k));
	if (rv->c->roce) {
		uint32_t dst;

		memcpy(&dst, p + IPV4_DST_OFF, 4);
		if (p[IPV4_OFF] != 0x45 || dst != g->addr) {
			recv_bad(rv, "IPv4 destination is not the header's group", &h);
			return;
		}
		k.addr[10] = k.addr[11] = 0xff;
		memcpy(k.addr + 12, p + IPV4_SRC_OFF, 4);
	} else {
		/* Copied out: receive buffers of odd sizes leave the GRH unaligned. */
		struct ibv_grh grh;

		memcpy(&grh, p, sizeof(grh));
		if (memcmp(grh.dgid.raw, g->mgid.raw, 16)) {
			recv_bad(rv, "GRH destination is not the header's group", &h);
			return;
		}
		memcpy(k.addr, grh.sgid.raw, 16);
	}
	if (ntohl(h.csum) != payload_csum(pl, len)) {
		recv_bad(rv, "checksum", &h);
		return;
	}
	if (o->verify && !pattern_check(pl + sizeof(h), len - sizeof(h),
					pattern_seed(ntohl(h.run), ntohl(h.sender), gi, seq))) {
		recv_bad(rv, "payload bytes", &h);
		return;
	}
	if (flags & MCPKT_F_IMM) {
		if (!(wc->wc_flags & IBV_WC_WITH_IMM) || ntohl(wc->imm_data) != seq)
			rv->imm_bad++;
	} else if ((wc->wc_flags & IBV_WC_WITH_IMM) || o->imm) {
		rv->imm_bad++;
	}
	g->rx++;
	k.qpn = wc->src_qp;
	src_get(&rv->sources, &k, &created);
	if (trace_f)
		src_text(rv->c, &k, src, sizeof(src));
	k.run = ntohl(h.run);
	k.sender = ntohl(h.sender);
	if (o->any_source) {
		memset(k.addr, 0, sizeof(k.addr));
		k.qpn = 0;
	}
	rec = src_get(&rv->senders, &k, &created);
	if (src_mark(rec, (uint64_t)seq * rv->c->ngroups + gi))
		rv->dup++;
	else if (trace_f)
		trace_rx(rec, (uint64_t)seq * rv->c->ngroups + gi, src);
}

static void recv_drain(struct receiver *rv, int *npolled)
{
	struct ibv_wc wc[CQ_BURST];
	int n = ibv_poll_cq(rv->cq, CQ_BURST, wc);

	if (rv->nretry)
		recv_retry(rv);
	if (n < 0)
		die("ibv_poll_cq: %d", n);
	for (int i = 0; i < n; i++) {
		recv_one(rv, &wc[i]);
		recv_post(rv, (uint32_t)(wc[i].wr_id >> 32), (uint32_t)wc[i].wr_id, true);
	}
	*npolled = n;
}

static int run_recv(const struct opts *o)
{
	struct receiver rv = {.o = o};
	struct cm c = {0};
	uint64_t deadline, groups_hit = 0;
	int fl, cqe, status;

	rv.c = &c;
	trace_open(o->trace);
	cm_open(&c, o);
	rv.bufsz = GRH_LEN + o->size;
	rv.nq = (o->ngroups + GROUPS_PER_QP - 1) / GROUPS_PER_QP;
	rv.q = calloc(rv.nq, sizeof(*rv.q));
	rv.retry = calloc((size_t)rv.nq * o->rq, sizeof(*rv.retry));
	if (!rv.q || !rv.retry)
		die("out of memory");
	rv.cc = ibv_create_comp_channel(c.ctx);
	if (!rv.cc)
		die("ibv_create_comp_channel: %s", strerror(errno));
	fl = fcntl(rv.cc->fd, F_GETFL);
	if (fl < 0 || fcntl(rv.cc->fd, F_SETFL, fl | O_NONBLOCK))
		die("fcntl: %s", strerror(errno));
	cqe = (int)(rv.nq * o->rq + 16);
	rv.cq = ibv_create_cq(c.ctx, cqe, NULL, rv.cc, 0);
	if (!rv.cq)
		die("ibv_create_cq %d: %s", cqe, strerror(errno));
	/* The Q_Key of rdma_cm's UDP port space until a join tells (it is the same). */
	c.qkey = RDMA_UDP_QKEY;
	for (uint32_t qi = 0; qi < rv.nq; qi++) {
		size_t sz = (size_t)o->rq * rv.bufsz;
		struct rqp *q = &rv.q[qi];

		q->buf = aligned_alloc(4096, (sz + 4095) & ~(size_t)4095);
		if (!q->buf)
			die("out of memory");
		memset(q->buf, 0, sz);
		q->mr = ibv_reg_mr(c.pd, q->buf, sz, IBV_ACCESS_LOCAL_WRITE);
		if (!q->mr)
			die("ibv_reg_mr: %s", strerror(errno));
		q->qp = ud_qp_create(&c, rv.cq, 1, o->rq);
		for (uint32_t i = 0; i < o->rq; i++)
			recv_post(&rv, qi, i, true);
	}
	cm_join_all(&c, false, recv_attach, &rv);
	if (ibv_req_notify_cq(rv.cq, 0))
		die("ibv_req_notify_cq failed");
	print_joined(&c, o);

	deadline = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
	while (!stop_flag) {
		uint64_t now;
		int n;

		recv_drain(&rv, &n);
		if (n)
			continue;
		now = now_ns();
		if (o->count > 0 && rv.received >= (uint64_t)o->count) {
			uint64_t end = now + (uint64_t)o->linger_ms * 1000000ull;

			if (end < deadline)
				deadline = end;
		}
		if (now >= deadline)
			break;
		/* Nothing queued: arm, look once more (no lost wake-up), then sleep. */
		if (ibv_req_notify_cq(rv.cq, 0))
			die("ibv_req_notify_cq failed");
		recv_drain(&rv, &n);
		if (n)
			continue;
		{
			struct pollfd pfd = {.fd = rv.cc->fd, .events = POLLIN};
			uint64_t wait_ms = (deadline - now) / 1000000ull + 1;
			struct ibv_cq *ecq;
			void *ectx;

			if (rv.nretry)
				wait_ms = 1;
			if (poll(&pfd, 1, wait_ms > 100 ? 100 : (int)wait_ms) < 0 && errno != EINTR)
				die("poll: %s", strerror(errno));
			if (!ibv_get_cq_event(rv.cc, &ecq, &ectx))
				ibv_ack_cq_events(ecq, 1);
		}
	}
	for (uint64_t i = 0; trace_f && i < rv.senders.cap; i++) {
		const struct src_rec *r = &rv.senders.r[i];

		if (r->used && r->next)
			trace_line("last %08x %" PRIu64 " %.6f %s\n", r->key.run, r->next - 1, r->t_last,
				   r->src_last);
	}
	trace_close();
	for (uint32_t i = 0; i < c.ngroups; i++)
		groups_hit += c.groups[i].rx != 0;
	printf("mcpkt: received=%" PRIu64 " bad=%" PRIu64 " dup=%" PRIu64 " imm_bad=%" PRIu64
	       " senders=%" PRIu64 " sources=%" PRIu64 " groups=%" PRIu64 " expected=%" PRId64 "\n",
	       rv.received, rv.bad, rv.dup, rv.imm_bad, rv.senders.n, rv.sources.n, groups_hit,
	       o->count);
	fflush(stdout);
	if (rv.reposts_deferred)
		fprintf(stderr,
			"mcpkt: %" PRIu64
			" receives found the receive queue full and were posted late\n",
			rv.reposts_deferred);
	status = rv.bad || rv.dup || rv.imm_bad ||
		 (o->count >= 0 && rv.received != (uint64_t)o->count);

	for (uint32_t i = 0; i < c.ngroups; i++)
		if (c.groups[i].joined)
			ibv_detach_mcast(rv.q[i / GROUPS_PER_QP].qp, &c.groups[i].mgid,
					 (uint16_t)c.groups[i].mlid);
	for (uint32_t qi = 0; qi < rv.nq; qi++) {
		ibv_destroy_qp(rv.q[qi].qp);
		ibv_dereg_mr(rv.q[qi].mr);
		free(rv.q[qi].buf);
	}
	ibv_destroy_cq(rv.cq);
	ibv_destroy_comp_channel(rv.cc);
	cm_close(&c);
	for (uint64_t i = 0; i < rv.senders.cap; i++)
		free(rv.senders.r[i].seen);
	free(rv.senders.r);
	free(rv.sources.r);
	free(rv.retry);
	free(rv.q);
	return status;
}

/* ---- command line ---- */

static void usage(void)
{
	fprintf(stderr,
		"usage: mcpkt send -b ADDR -g GROUP [-n count] [-s size] [--groups N] [--qps N]\n"
		"                  [--imm] [--rate pps] [--sendonly | --full] [--delay ms]\n"
		"                  [--timeout s] [--warmup pps [--warmup-pause ms]]\n"
		"                  [--trace FILE] [--no-catchup]\n"
		"       mcpkt recv -b ADDR -g GROUP [-n expected] [--groups N] [--timeout s]\n"
		"                  [--verify] [--imm] [--linger ms] [--rq depth] [--size max]\n"
		"                  [--any-source] [--trace FILE]\n");
	exit(2);
}

static uint64_t parse_num(const char *name, const char *s, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		die("%s %s: expected a number from %" PRIu64 " to %" PRIu64, name, s, lo, hi);
	return v;
}

enum {
	OPT_GROUPS = 256,
	OPT_QPS,
	OPT_IMM,
	OPT_RATE,
	OPT_SENDONLY,
	OPT_FULL,
	OPT_DELAY,
	OPT_TIMEOUT,
	OPT_VERIFY,
	OPT_ANY_SOURCE,
	OPT_LINGER,
	OPT_RQ,
	OPT_SIZE,
	OPT_WARMUP,
	OPT_WARMUP_PAUSE,
	OPT_TRACE,
	OPT_NO_CATCHUP,
};

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"bind", required_argument, NULL, 'b'},
		{"group", required_argument, NULL, 'g'},
		{"count", required_argument, NULL, 'n'},
		{"groups", required_argument, NULL, OPT_GROUPS},
		{"qps", required_argument, NULL, OPT_QPS},
		{"imm", no_argument, NULL, OPT_IMM},
		{"rate", required_argument, NULL, OPT_RATE},
		{"sendonly", no_argument, NULL, OPT_SENDONLY},
		{"full", no_argument, NULL, OPT_FULL},
		{"delay", required_argument, NULL, OPT_DELAY},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"verify", no_argument, NULL, OPT_VERIFY},
		{"any-source", no_argument, NULL, OPT_ANY_SOURCE},
		{"linger", required_argument, NULL, OPT_LINGER},
		{"rq", required_argument, NULL, OPT_RQ},
		{"size", required_argument, NULL, OPT_SIZE},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"warmup-pause", required_argument, NULL, OPT_WARMUP_PAUSE},
		{"trace", required_argument, NULL, OPT_TRACE},
		{"no-catchup", no_argument, NULL, OPT_NO_CATCHUP},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {
		.count = -1,
		.size = DEF_SIZE,
		.ngroups = 1,
		.nqps = 1,
		.timeout_s = DEF_TIMEOUT_S,
		.linger_ms = DEF_LINGER_MS,
		.rq = DEF_RQ,
		.warmup_pause_ms = 1000,
	};
	struct sigaction sa = {.sa_handler = on_signal};
	bool size_set = false, pause_set = false;
	int c;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "send"))
		o.send = true;
	else if (strcmp(argv[1], "recv"))
		usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "b:g:n:s:", lopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			o.bind = optarg;
			break;
		case 'g':
			o.group = optarg;
			break;
		case 'n':
			o.count = (int64_t)parse_num("-n", optarg, 0, UINT32_MAX);
			break;
		case 's':
		case OPT_SIZE:
			o.size = (uint32_t)parse_num("-s", optarg, sizeof(struct mcpkt_hdr),
						     MAX_MTU);
			size_set = true;
			break;
		case OPT_GROUPS:
			o.ngroups = (uint32_t)parse_num("--groups", optarg, 1, 4096);
			break;
		case OPT_QPS:
			o.nqps = (uint32_t)parse_num("--qps", optarg, 1, 131072);
			break;
		case OPT_IMM:
			o.imm = true;
			break;
		case OPT_RATE:
			o.rate = parse_num("--rate", optarg, 1, 100000000);
			break;
		case OPT_SENDONLY:
			o.full = false;
			break;
		case OPT_FULL:
			o.full = true;
			break;
		case OPT_DELAY:
			o.delay_ms = (uint32_t)parse_num("--delay", optarg, 0, 600000);
			break;
		case OPT_TIMEOUT:
			o.timeout_s = (uint32_t)parse_num("--timeout", optarg, 1, 3600);
			break;
		case OPT_VERIFY:
			o.verify = true;
			break;
		case OPT_ANY_SOURCE:
			o.any_source = true;
			break;
		case OPT_LINGER:
			o.linger_ms = (uint32_t)parse_num("--linger", optarg, 0, 600000);
			break;
		case OPT_WARMUP:
			o.warmup = parse_num("--warmup", optarg, 1, 100000000);
			break;
		case OPT_WARMUP_PAUSE:
			o.warmup_pause_ms = (uint32_t)parse_num("--warmup-pause", optarg, 0, 600000);
			pause_set = true;
			break;
		case OPT_RQ:
			o.rq = (uint32_t)parse_num("--rq", optarg, 1, 32768);
			break;
		case OPT_TRACE:
			o.trace = optarg;
			break;
		case OPT_NO_CATCHUP:
			o.no_catchup = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !o.bind || !o.group)
		usage();
	if (o.send) {
		if (o.count < 0)
			o.count = 1;
		if (o.verify || o.any_source || o.linger_ms != DEF_LINGER_MS || o.rq != DEF_RQ)
			die("--verify, --any-source, --linger and --rq are receiver options");
		if (pause_set && !o.warmup)
			die("--warmup-pause goes with --warmup");
	} else {
		if (o.nqps != 1 || o.rate || o.full || o.delay_ms || o.warmup || pause_set ||
		    o.no_catchup)
			die("--qps, --rate, --full, --delay, --warmup and --no-catchup are sender "
			    "options");
		if (!size_set)
			o.size = MAX_MTU;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return o.send ? run_send(&o) : run_recv(&o);
}
