// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Packet capture (capture.h): the console commands' work, the drain of the workers'
 * capture rings and the pcapng file.
 *
 * A capture has a generation (bridge->cap_gen, never 0 while it runs). Workers stamp
 * their records with the generation they read at the start of a burst; records of an
 * earlier capture are skipped.
 *
 * The rings live as long as one capture (issue 21 D13: they were made at the first
 * capture and kept until exit, locked under -e mlock). A thread of its own ("ib2roce-cap")
 * allocates and touches them, so that the control thread does not stall while hundreds
 * of MiB are faulted in and locked: capture_start waits CAP_ALLOC_WAIT_MS for it, and a
 * capture whose rings take longer starts when the thread is done (its eventfd). At the
 * stop the rings are unpublished (workers[i].cap = NULL) and freed after a grace period
 * by a thread of their own (a worker still in a burst that took the ring goes on using
 * it until its next quiescent state). Their size is bounded before anything is allocated
 * (rings_budget: RLIMIT_MEMLOCK under mlock, CAP_RINGS_MAX and MemAvailable).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/timerfd.h>

#include "bridge.h"
#include "capring.h"
#include "capture.h"
#include "concmd.h"
#include "console.h"
#include "ctl.h"
#include "log.h"
#include "loop.h"
#include "options.h"
#include "paths.h"
#include "pcapng.h"
#include "pool.h"

#define CAP_TICK_MS   10	   /* drain period while a capture runs */
#define CAP_TICK_RECS 4096	   /* records written per tick at most */
#define CAP_BUF_SIZE  (256u << 10) /* file bytes gathered before a write */
#define CAP_IF_IB     0
#define CAP_IF_ROCE   1
/* The stack of the threads that make and free the rings (mmap, memset, a grace period). */
#define CAP_ALLOC_STACK (64u << 10)
/* How long capture_start waits for the rings before it answers "starting". */
#define CAP_ALLOC_WAIT_MS 50
/* Rings in all, without mlock (and at most half of MemAvailable). */
#define CAP_RINGS_MAX	 (1ull << 30)
#define CAP_IPC_LOCK_BIT 14 /* CAP_IPC_LOCK in /proc/self/status CapEff (linux/capability.h) */

/* The rings of one capture, made by the allocation thread; freed after a grace period. */
struct cap_rings {
	struct rcu_head rcu;
	uint32_t n; /* workers */
	uint32_t recs, data;
	int err; /* 0, or the errno of a failed allocation */
	int efd; /* written when done */
	struct cap_ring *ring[];
};

struct capture {
	struct ctl *c;
	struct capture_cfg cfg; /* a copy: a reload does not change it */
	int tfd, efd;
	/* The rings being made (allocating) or in use (active). */
	struct cap_rings *rings;
	pthread_t alloc;
	bool allocating; /* the thread runs: the capture starts when it is done */
	bool cancel;	 /* capture stop while allocating */
	bool exiting;	 /* capture_free: the workers stopped, rings are freed at once */
	char why[128];	 /* why the last capture stopped ("" while none did) */
	/* The current (or last) capture. */
	bool active;
	int fd;
	char name[256];
	uint32_t gen;
	uint32_t sides, group, snaplen;
	/* The filter's group when it has no IPv4 address (compared, never read: it may be
	 * removed meanwhile), and its text. */
	const struct group *gptr;
	char gtext[INET6_ADDRSTRLEN];
	uint64_t count; /* stop after this many packets, 0: no limit */
	uint64_t written, bytes, full_base, dropped;
	int64_t real_off_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at the start */
	uint8_t *buf;
	size_t buflen;
	int werr; /* a write failed: the capture stopped */
};

/*
 * The set of rings is mapped, not malloc'd: the threads that make and free the rings
 * then never call malloc or free, whose first call in a thread sets up a malloc arena
 * (64 MiB reserved, locked under mlockall) that outlives the thread.
 */
static size_t rings_size(uint32_t n)
{
	return sizeof(struct cap_rings) + n * sizeof(struct cap_ring *);
}

static struct cap_rings *rings_new(uint32_t n)
{
	void *p = mmap(NULL, rings_size(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	return p == MAP_FAILED ? NULL : p; /* zero-filled */
}

static void rings_free_rcu(struct rcu_head *h)
{
	struct cap_rings *rs = caa_container_of(h, struct cap_rings, rcu);

	for (uint32_t i = 0; i < rs->n; i++)
		cap_ring_free(rs->ring[i]);
	munmap(rs, rings_size(rs->n));
}

/* The allocation thread: every worker's ring, touched (faulted in, locked under mlock). */
static void *rings_alloc(void *arg)
{
	struct cap_rings *rs = arg;
	uint64_t one = 1;

	for (uint32_t i = 0; i < rs->n && !rs->err; i++) {
		rs->ring[i] = cap_ring_new(rs->recs, rs->data);
		if (!rs->ring[i])
			rs->err = errno;
		else
			cap_ring_touch(rs->ring[i]);
	}
	if (write(rs->efd, &one, sizeof(one)) < 0) {
		/* An eventfd counter does not overflow at 1; nothing to do. */
	}
	return NULL;
}

/* A value of /proc/self/status ("VmLck:" in kB, "CapEff:" hex) or /proc/meminfo. */
static bool proc_field(const char *path, const char *key, int base, uint64_t *v)
{
	char line[256];
	size_t kl = strlen(key);
	bool found = false;
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl)) {
			*v = strtoull(line + kl, NULL, base);
			found = true;
		}
	fclose(f);
	return found;
}

/*
 * May rings of `need` bytes in all be made? Under mlock without CAP_IPC_LOCK the kernel
 * locks at most RLIMIT_MEMLOCK (setrlimit(2)): what is left of it after what is locked
 * (VmLck) bounds them. Otherwise CAP_RINGS_MAX. Always at most half of MemAvailable.
 * 0, or -ENOMEM with the limit named in err.
 */
static int rings_budget(struct capture *cap, uint64_t need, char *err, size_t errlen)
{
	uint64_t avail = 0, locked = 0, capeff = 0;
	struct rlimit rl;

	if (cap->cfg.mlock && !getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    proc_field("/proc/self/status", "CapEff:", 16, &capeff) &&
	    !(capeff & (1ull << CAP_IPC_LOCK_BIT))) {
		uint64_t lim = rl.rlim_cur, left;

		proc_field("/proc/self/status", "VmLck:", 10, &locked);
		locked *= 1024;
		left = lim > locked ? lim - locked : 0;
		if (need > left)
			return opt_errf(
				err, errlen, -ENOMEM,
				"capture: rings of %" PRIu64 " MiB (capture-ring %u x %u "
				"workers) do not fit in what may still be locked: "
				"RLIMIT_MEMLOCK %" PRIu64 " MiB, %" PRIu64 " MiB locked "
				"(-e mlock); use a smaller --capture-ring or raise the limit",
				need >> 20, cap->cfg.ring, cap->c->br->nworkers, lim >> 20,
				locked >> 20);
	} else if (need > CAP_RINGS_MAX) {
		return opt_errf(err, errlen, -ENOMEM,
				"capture: rings of %" PRIu64 " MiB (capture-ring %u x %u workers) "
				"exceed the %llu MiB allowed; use a smaller --capture-ring",
				need >> 20, cap->cfg.ring, cap->c->br->nworkers,
				CAP_RINGS_MAX >> 20);
	}
	if (proc_field("/proc/meminfo", "MemAvailable:", 10, &avail) && need > avail * 1024 / 2)
		return opt_errf(err, errlen, -ENOMEM,
				"capture: rings of %" PRIu64 " MiB (capture-ring %u x %u workers) "
				"exceed half of the memory available (%" PRIu64 " MiB)",
				need >> 20, cap->cfg.ring, cap->c->br->nworkers, avail >> 10);
	return 0;
}

static int opt_capture_dir(void *ctx, const char *arg, char *err, size_t len)
{
	struct capture_cfg *cfg = ctx;

	if (!*arg || arg[0] != '/' || strlen(arg) >= sizeof(cfg->dir))
		return opt_errf(err, len, -EINVAL,
				"capture-dir: '%s' is not an absolute path "
				"(max %zu bytes)",
				arg, sizeof(cfg->dir) - 1);
	snprintf(cfg->dir, sizeof(cfg->dir), "%s", arg);
	return 0;
}

static int opt_capture_ring(void *ctx, const char *arg, char *err, size_t len)
{
	struct capture_cfg *cfg = ctx;
	uint64_t v;
	int r = opt_parse_uint(arg, 2, 1u << 20, &v, err, len);

	if (r)
		return r;
	cfg->ring = (uint32_t)v;
	return 0;
}

/* A capture file name: a plain name inside capture_dir. */
static const char *name_refused(const char *name)
{
	if (!*name)
		return "empty file name";
	if (strchr(name, '/'))
		return "the file name must not contain '/' (it is a name in capture_dir)";
	if (strstr(name, ".."))
		return "the file name must not contain '..'";
	if (strlen(name) >= 256)
		return "file name too long";
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "control characters in the file name";
	return NULL;
}

static int opt_capture(void *ctx, const char *arg, char *err, size_t len)
{
	struct capture_cfg *cfg = ctx;
	const char *why = name_refused(arg);

	if (why)
		return opt_errf(err, len, -EINVAL, "capture: '%s': %s", arg, why);
	snprintf(cfg->file, sizeof(cfg->file), "%s", arg);
	return 0;
}

int capture_opts_register(struct capture_cfg *cfg)
{
	const struct opt_def defs[] = {
		{"capture", 0, "FILE", false,
		 "capture packets into FILE (pcapng, in capture-dir) from the start", opt_capture,
		 cfg, false},
		{"capture-dir", 0, "DIR", false,
		 "directory of capture files (default " CAPTURE_DIR_DEFAULT ")", opt_capture_dir,
		 cfg, false},
		{"capture-ring", 0, "N", false, "capture records per worker ring (default 1024)",
		 opt_capture_ring, cfg, false},
	};
	int r;

	snprintf(cfg->dir, sizeof(cfg->dir), "%s", CAPTURE_DIR_DEFAULT);
	cfg->file[0] = 0;
	cfg->ring = CAPTURE_RING_DEFAULT;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if ((r = opt_register(&defs[i])))
			return r;
	return 0;
}

/* The drain timer fired, or the ring allocation is done (eventfd). */
static void capture_fd(void *arg, unsigned events)
{
	(void)events;
	capture_tick(arg);
}

static int cmd_capture(struct ctl *c, char *args, FILE *out)
{
	char *sub = concmd_word(&args), err[OPT_ERR_LEN];
	int r;

	if (!c->cap) {
		fprintf(out, "capture: not available\n");
		return -1;
	}
	if (!sub || !strcmp(sub, "status")) {
		if (sub && concmd_no_args("capture status", args, out))
			return -1;
		capture_status(c->cap, out);
		return 0;
	}
	if (!strcmp(sub, "stop")) {
		if (concmd_no_args("capture stop", args, out))
			return -1;
		if (capture_stop(c->cap, out)) {
			fprintf(out, "capture stop: no capture running\n");
			return -1;
		}
		log_info("console: capture stop");
		return 0;
	}
	if (strcmp(sub, "start")) {
		fprintf(out, "capture: unknown '%s' (start, stop, status)\n", sub);
		return -1;
	}
	r = capture_start(c->cap, args, err, sizeof(err));
	if (r < 0) {
		fprintf(out, "%s\n", err);
		return -1;
	}
	fprintf(out, r ? "capture starting: allocating the rings (capture status shows when it "
			 "runs)\n"
		       : "capture started\n");
	return 0;
}

static const struct console_cmd capture_cmds[] = {
	{{"capture",
	  "start FILE [group G] [side ib|roce|both] [count N] [snaplen N] | stop | status",
	  "packet capture to a pcapng file in capture_dir", false},
	 cmd_capture},
	{{NULL, NULL, NULL, false}, NULL},
};

struct capture *capture_new(struct ctl *c, const struct capture_cfg *cfg)
{
	struct capture *cap = calloc(1, sizeof(*cap));

	if (!cap)
		return NULL;
	cap->c = c;
	cap->cfg = *cfg;
	cap->fd = -1;
	cap->efd = -1;
	cap->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	cap->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cap->buf = malloc(CAP_BUF_SIZE);
	if (cap->tfd < 0 || cap->efd < 0 || !cap->buf) {
		int e = errno;

		capture_free(cap);
		errno = e;
		return NULL;
	}
	if (loop_watch(cap->tfd, EPOLLIN, capture_fd, cap) ||
	    loop_watch(cap->efd, EPOLLIN, capture_fd, cap) || console_cmd_register(capture_cmds)) {
		capture_free(cap);
		errno = EIO;
		return NULL;
	}
	return cap;
}

static void timer_arm(struct capture *cap, bool on)
{
	long ns = on ? CAP_TICK_MS * 1000000L : 0;
	struct itimerspec its = {{0, ns}, {0, ns}};

	timerfd_settime(cap->tfd, 0, &its, NULL);
}

/* Write what buf holds. */
static void buf_flush(struct capture *cap)
{
	size_t done = 0;
	int r;

	if (cap->werr)
		cap->buflen = 0; /* the capture stopped: what is gathered goes nowhere */
	if (!cap->buflen || cap->fd < 0)
		return;
	r = pcapng_write_part(cap->fd, cap->buf, cap->buflen, &done);
	if (r) {
		cap->werr = r;
		log_err("capture %s: write: %s", cap->name, strerror(-r));
	}
	/* What the file holds: not the bytes a failed write left behind (issue 21 D10). */
	cap->bytes += done;
	cap->buflen = 0;
}

/* Room for n bytes in buf (flushing it if needed). */
static uint8_t *buf_room(struct capture *cap, size_t n)
{
	if (cap->buflen + n > CAP_BUF_SIZE)
		buf_flush(cap);
	return cap->buf + cap->buflen;
}

static uint64_t rings_full(struct bridge *br)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < br->nworkers; i++)
		if (br->workers[i].cap)
			n += br->workers[i].cap->full;
	return n;
}

/* The group of address addr (control thread), or NULL. */
static const struct group *group_of(struct bridge *br, uint32_t addr)
{
	return addr ? group_array_find(br->groups, br->ngroups, addr) : NULL;
}

/*
 * The group of a record that names none by IPv4 address (an IPv6 group on RoCE): the
 * group whose MGID on side s is the header's destination (IB: the GRH's DGID; RoCE over
 * IPv6: the IPv6 destination, at the same place), or NULL.
 */
static const struct group *group_of_hdr(struct bridge *br, enum side s, const uint8_t *hdr)
{
	if (s == SIDE_ROCE && hdr[0] >> 4 != 6)
		return NULL; /* IPv4: r->group said it */
	for (uint32_t i = 0; i < br->ngroups; i++)
		if (!memcmp(br->groups[i]->mgid[s].raw, hdr + 24, 16))
			return br->groups[i];
	return NULL;
}

/* The text of a group in comments: its IPv4 address, else its RoCE (IPv6) address. */
static void group_text(const struct group *g, char *b, size_t n)
{
	b[0] = 0;
	if (g && g->addr)
		inet_ntop(AF_INET, &g->addr, b, (socklen_t)n);
	else if (g)
		inet_ntop(AF_INET6, g->mgid[SIDE_ROCE].raw, b, (socklen_t)n);
}

/* Write one record as an Enhanced Packet Block. */
static void rec_write(struct capture *cap, const struct cap_rec *r)
{
	struct bridge *br = cap->c->br;
	enum side s = r->side == SIDE_IB ? SIDE_IB : SIDE_ROCE;
	const struct side_ctx *sd = &br->sd[s];
	const struct group *g = group_of(br, r->group);
	uint8_t hdr[BR_GRH_LEN] = {0}, *out;
	uint32_t hl = r->caplen < BR_GRH_LEN ? r->caplen : BR_GRH_LEN, wire, n;
	struct cap_pkt p;
	char comment[96], ga[INET6_ADDRSTRLEN] = "";
	bool v6;
	size_t need;

	memcpy(hdr, r->data, hl);
	/* RoCEv2 over IPv6: the IPv6 header at 0 (the encoder's and the engine's rule). */
	v6 = s == SIDE_ROCE && hdr[0] >> 4 == 6;
	if (!g && r->verdict >= DROP_NREASONS)
		g = group_of_hdr(br, s, hdr); /* forwarded: its group is bridged */
	memset(&p, 0, sizeof(p));
	p.ib = s == SIDE_IB;
	p.hdr = hdr;
	p.payload = r->data + hl;
	p.len = r->byte_len > BR_GRH_LEN ? r->byte_len - BR_GRH_LEN : 0;
	p.caplen = r->caplen - hl;
	p.src_qpn = r->src_qp;
	if (p.ib || v6 ? hdr[24] == 0xff : (hdr[BR_IPV4_OFF + 16] & 0xf0) == 0xe0)
		p.dst_qpn = BR_MCAST_QPN;
	else
		p.dst_qpn = r->chan < sd->nchan ? sd->chan[r->chan]->qpn : 0;
	p.qkey = g && g->js[s].qkey ? g->js[s].qkey : BR_UDP_QKEY;
	p.pkey = sd->pkey;
	p.slid = r->slid;
	p.dlid = p.ib && g ? (uint16_t)g->js[SIDE_IB].mlid : 0;
	p.has_imm = r->has_imm;
	p.imm = r->imm;
	p.ts_ns = (uint64_t)((int64_t)r->ts_ns + cap->real_off_ns);
	if (r->group)
		inet_ntop(AF_INET, &r->group, ga, sizeof(ga));
	else if (g)
		group_text(g, ga, sizeof(ga));
	if (r->verdict >= DROP_NREASONS)
		snprintf(comment, sizeof(comment), "forwarded%s%s", *ga ? " group " : "", ga);
	else
		snprintf(comment, sizeof(comment), "drop %s%s%s", drop_reason_name[r->verdict],
			 *ga ? " group " : "", ga);
	need = pcapng_epb_size(CAP_FRAME_HDR_MAX + p.caplen + CAP_FRAME_TRAILER_MAX, comment);
	out = buf_room(cap, need);
	/* The frame is built in place after the block's 28-byte head. */
	n = cap_frame_encode(&p, out + 28, cap->snaplen, &wire);
	cap->buflen += pcapng_epb(out, s == SIDE_IB ? CAP_IF_IB : CAP_IF_ROCE,
				  (uint64_t)((int64_t)r->ts_ns + cap->real_off_ns), out + 28, n,
				  wire, comment);
	cap->written++;
}

/* Write up to max records of the current capture from the rings; how many were read. */
static uint32_t rings_drain(struct capture *cap, uint32_t max)
{
	struct bridge *br = cap->c->br;
	uint32_t done = 0;

	for (uint32_t i = 0; i < br->nworkers && done < max; i++) {
		struct cap_ring *ring = br->workers[i].cap;
		uint64_t head, tail;

		if (!ring)
			continue;
		head = atomic_load_explicit(&ring->head, memory_order_relaxed);
		/* Pairs with the worker's release store in cap_ring_commit. */
		tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
		for (; head != tail && done < max; head++, done++) {
			const struct cap_rec *r = cap_ring_at(ring, head);

			if (r->gen != cap->gen || !cap->active || cap->werr)
				continue; /* an earlier capture's, or this one stopped */
			if (cap->count && cap->written >= cap->count)
				continue;
			rec_write(cap, r);
		}
		/* Pairs with the worker's acquire load in cap_ring_reserve. */
		atomic_store_explicit(&ring->head, head, memory_order_release);
	}
	return done;
}

static int64_t clock_off_ns(void)
{
	uint64_t m = mono_ns();

	return (int64_t)(clock_ns(CLOCK_REALTIME) - m);
}

/* A thread of its own waits for the grace period and frees the rings. */
static void *rings_free_thread(void *arg)
{
	struct cap_rings *rs = arg;

	urcu_qsbr_synchronize_rcu();
	rings_free_rcu(&rs->rcu);
	return NULL;
}

/*
 * Unpublish the rings and free them after a grace period (workers may be in a burst).
 * Not with urcu_qsbr_call_rcu: its default thread, made at the first call, keeps a
 * stack and a malloc arena (locked under mlockall) for the rest of the run; the thread
 * here has a small stack and allocates nothing. Control thread; never waits.
 */
static void rings_retire(struct capture *cap)
{
	struct bridge *br = cap->c->br;
	struct cap_rings *rs = cap->rings;
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!rs)
		return;
	for (uint32_t i = 0; i < br->nworkers && i < rs->n; i++)
		rcu_assign_pointer(br->workers[i].cap, NULL);
	cap->rings = NULL;
	if (cap->exiting) {
		rings_free_rcu(&rs->rcu);
		return;
	}
	r = pthread_attr_init(&attr);
	if (!r) {
		pthread_attr_setstacksize(&attr, CAP_ALLOC_STACK);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		r = pthread_create(&t, &attr, rings_free_thread, rs);
		pthread_attr_destroy(&attr);
	}
	if (r)
		urcu_qsbr_call_rcu(&rs->rcu, rings_free_rcu);
}

static void capture_end(struct capture *cap, const char *why)
{
	struct bridge *br = cap->c->br;

	atomic_store_explicit(&br->cap_gen, 0, memory_order_release);
	/* What the rings hold now; records a worker commits later are freed unread. */
	while (rings_drain(cap, UINT32_MAX))
		;
	buf_flush(cap);
	cap->dropped = rings_full(br) - cap->full_base;
	if (cap->fd >= 0 && fsync(cap->fd) && errno != EINVAL)
		log_warn("capture %s: fsync: %s", cap->name, strerror(errno));
	if (cap->fd >= 0)
		close(cap->fd);
	cap->fd = -1;
	cap->active = false;
	timer_arm(cap, false);
	rings_retire(cap);
	if (cap->werr)
		snprintf(cap->why, sizeof(cap->why), "write error: %s", strerror(-cap->werr));
	else
		snprintf(cap->why, sizeof(cap->why), "%s", why);
	log_info("capture %s stopped (%s): %lu packets written, %lu captures dropped", cap->name,
		 cap->why, (unsigned long)cap->written, (unsigned long)cap->dropped);
}

/* The rings are made: publish them and start (control thread). */
static void capture_go(struct capture *cap)
{
	struct bridge *br = cap->c->br;
	struct cap_rings *rs = cap->rings;

	for (uint32_t i = 0; i < br->nworkers && i < rs->n; i++)
		rcu_assign_pointer(br->workers[i].cap, rs->ring[i]);
	cap->real_off_ns = clock_off_ns();
	cap->full_base = rings_full(br);
	/* Skip generation 0 (off) when the counter wraps. */
	if (++cap->gen == 0)
		cap->gen = 1;
	cap->active = true;
	atomic_store_explicit(&br->cap_sides, cap->sides, memory_order_relaxed);
	atomic_store_explicit(&br->cap_group, cap->group, memory_order_relaxed);
	atomic_store_explicit(&br->cap_gptr, cap->gptr, memory_order_relaxed);
	/* Payload bytes to copy: what snaplen keeps of the frame, at least. */
	atomic_store_explicit(&br->cap_snap, cap->snaplen, memory_order_relaxed);
	/* Pairs with the workers' acquire load: rings and filters are set. */
	atomic_store_explicit(&br->cap_gen, cap->gen, memory_order_release);
	timer_arm(cap, true);
	log_info("capture %s/%s started", cap->cfg.dir, cap->name);
}

/* The allocation thread is done (joined): start, or give up. Control thread. */
static void alloc_done(struct capture *cap)
{
	struct cap_rings *rs = cap->rings;

	pthread_join(cap->alloc, NULL);
	cap->allocating = false;
	if (!rs->err && !cap->cancel) {
		capture_go(cap);
		return;
	}
	if (rs->err)
		snprintf(cap->why, sizeof(cap->why), "rings: %s", strerror(rs->err));
	else
		snprintf(cap->why, sizeof(cap->why), "stop");
	cap->rings = NULL;
	rings_free_rcu(&rs->rcu); /* never published */
	close(cap->fd);
	cap->fd = -1;
	log_info("capture %s stopped (%s) before it started", cap->name, cap->why);
}

void capture_tick(struct capture *cap)
{
	uint64_t exp;

	while (read(cap->tfd, &exp, sizeof(exp)) == sizeof(exp))
		;
	if (cap->allocating && read(cap->efd, &exp, sizeof(exp)) == sizeof(exp))
		alloc_done(cap);
	if (!cap->active)
		return;
	rings_drain(cap, CAP_TICK_RECS);
	buf_flush(cap);
	if (cap->werr)
		capture_end(cap, "write error");
	else if (cap->count && cap->written >= cap->count)
		capture_end(cap, "count reached");
}

/* Start the allocation of the rings; wait CAP_ALLOC_WAIT_MS for it. 0: done, 1: later. */
static int rings_make(struct capture *cap, char *err, size_t errlen)
{
	struct bridge *br = cap->c->br;
	uint32_t data = pool_buf_size(br->pool);
	struct cap_rings *rs;
	pthread_attr_t attr;
	struct timespec dl;
	uint64_t one;
	int r;

	rs = rings_new(br->nworkers);
	if (!rs)
		return opt_errf(err, errlen, -ENOMEM, "capture: rings: %s", strerror(ENOMEM));
	rs->n = br->nworkers;
	rs->recs = cap->cfg.ring;
	rs->data = data;
	rs->efd = cap->efd;
	/* A small stack: under mlockall it is locked, and glibc keeps it for the next. */
	r = pthread_attr_init(&attr);
	if (!r) {
		pthread_attr_setstacksize(&attr, CAP_ALLOC_STACK);
		r = pthread_create(&cap->alloc, &attr, rings_alloc, rs);
		pthread_attr_destroy(&attr);
	}
	if (r) {
		rings_free_rcu(&rs->rcu);
		return opt_errf(err, errlen, -r, "capture: rings: thread: %s", strerror(r));
	}
	pthread_setname_np(cap->alloc, "ib2roce-cap");
	cap->rings = rs;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += CAP_ALLOC_WAIT_MS * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(cap->alloc, NULL, &dl)) {
		cap->allocating = true;
		return 1;
	}
	if (read(cap->efd, &one, sizeof(one)) < 0) {
		/* Already joined: the counter is all that is left to clear. */
	}
	if (rs->err) {
		r = rs->err;
		cap->rings = NULL;
		rings_free_rcu(&rs->rcu);
		return opt_errf(err, errlen, -r, "capture: rings: %s", strerror(r));
	}
	return 0;
}

/* Open FILE new in capture_dir: never an existing file, never through a link. */
static int file_open(struct capture *cap, const char *name, char *err, size_t errlen)
{
	const char *dir = cap->cfg.dir, *why = name_refused(name);
	int dfd, fd, e;

	char path[sizeof(cap->cfg.dir) + 2], why2[300];
	struct stat st;
	int r;

	if (why)
		return opt_errf(err, errlen, -EINVAL, "capture: '%s': %s", name, why);
	/*
	 * The rules of the control socket's and the pid file's directory (paths.h,
	 * issue 21 D9): made one level, 0750 (0700 where others may create entries); an
	 * existing one must be root's or ours and not writable by others, and in a shared
	 * place a real directory, not a symbolic link.
	 */
	snprintf(path, sizeof(path), "%s/x", dir);
	r = control_make_dir(path, why2, sizeof(why2));
	if (r)
		return opt_errf(err, errlen, r, "capture: capture_dir %s", why2);
	dfd = open(dir, O_DIRECTORY | O_PATH | O_CLOEXEC);
	if (dfd < 0)
		return opt_errf(err, errlen, -errno, "capture: capture_dir %s: %s", dir,
				strerror(errno));
	/* The directory opened is the one checked (not one swapped in since). */
	r = fstat(dfd, &st) ? -errno : control_dir_check(dir, &st, why2, sizeof(why2));
	if (r) {
		close(dfd);
		return opt_errf(err, errlen, r, "capture: capture_dir %s", why2);
	}
	/* O_EXCL with O_CREAT also refuses an existing symbolic link; O_NOFOLLOW says so. */
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	e = errno;
	close(dfd);
	if (fd < 0)
		return opt_errf(err, errlen, -e, "capture: %s/%s: %s%s", dir, name, strerror(e),
				e == EEXIST ? " (captures never replace a file)" : "");
	return fd;
}

/* The section header and one interface per side. */
static void file_head(struct capture *cap)
{
	struct bridge *br = cap->c->br;
	uint32_t snap = cap->snaplen;
	char name[96];

	cap->buflen += pcapng_shb(buf_room(cap, pcapng_shb_size("ib2roce")), "ib2roce");
	for (int s = 0; s < NSIDES; s++) {
		snprintf(name, sizeof(name), "%s:%u %s", br->sd[s].dev, br->sd[s].port,
			 s == SIDE_IB ? "ib" : "roce");
		cap->buflen += pcapng_idb(buf_room(cap, pcapng_idb_size(name)),
					  cap_frame_linktype(s == SIDE_IB), snap, name);
	}
	buf_flush(cap);
}

int capture_start(struct capture *cap, char *args, char *err, size_t errlen)
{
	struct bridge *br = cap->c->br;
	uint32_t sides = 3, group = 0, snap = CAPTURE_SNAP_DEFAULT;
	const struct group *gptr = NULL;
	uint64_t count = 0, v, need;
	char *file = concmd_word(&args), *w, path[sizeof(cap->cfg.dir) + 256];
	int fd, r;

	if (!file)
		return opt_errf(err, errlen, -EINVAL, "capture start: FILE missing");
	if (name_refused(file))
		return opt_errf(err, errlen, -EINVAL, "capture: '%s': %s", file,
				name_refused(file));
	while ((w = concmd_word(&args))) {
		char *a = concmd_word(&args);

		if (!a)
			return opt_errf(err, errlen, -EINVAL, "capture start: '%s' needs a value",
					w);
		if (!strcmp(w, "group")) {
			struct in_addr in;
			union ibv_gid in6;
			const struct group *g = NULL;

			if (inet_pton(AF_INET, a, &in) == 1)
				g = group_of(br, in.s_addr);
			else if (inet_pton(AF_INET6, a, in6.raw) == 1)
				for (uint32_t i = 0; i < br->ngroups && !g; i++)
					if (!br->groups[i]->addr &&
					    !memcmp(br->groups[i]->mgid[SIDE_ROCE].raw, in6.raw,
						    16))
						g = br->groups[i];
			if (!g)
				return opt_errf(err, errlen, -EINVAL,
						"capture start: '%s' is not a bridged group", a);
			group = g->addr;
			gptr = g->addr ? NULL : g;
		} else if (!strcmp(w, "side")) {
			if (!strcmp(a, "ib"))
				sides = 1u << SIDE_IB;
			else if (!strcmp(a, "roce"))
				sides = 1u << SIDE_ROCE;
			else if (!strcmp(a, "both"))
				sides = 3;
			else
				return opt_errf(err, errlen, -EINVAL,
						"capture start: side '%s': ib, roce or both", a);
		} else if (!strcmp(w, "count") || !strcmp(w, "snaplen")) {
			bool is_count = !strcmp(w, "count");
			char why[128];

			/* The message names the item: "capture start: count 'x' is not a
			 * number", not the bare "'x' is not a number". */
			if ((r = opt_parse_uint(a, is_count ? 1 : 64,
						is_count ? UINT64_MAX : CAPTURE_SNAP_DEFAULT, &v,
						why, sizeof(why))))
				return opt_errf(err, errlen, r, "capture start: %s %s", w, why);
			if (is_count)
				count = v;
			else
				snap = (uint32_t)v;
		} else {
			return opt_errf(err, errlen, -EINVAL,
					"capture start: unknown '%s' (group, side, count, snaplen)",
					w);
		}
	}
	if (cap->allocating && cap->cancel)
		return opt_errf(err, errlen, -EBUSY,
				"capture: %s was stopped while its rings were being made; they "
				"still are: try again in a moment",
				cap->name);
	if (cap->active || cap->allocating)
		return opt_errf(err, errlen, -EBUSY, "capture: %s is %s (capture stop first)",
				cap->name, cap->active ? "running" : "starting");
	need = (uint64_t)br->nworkers * cap_ring_footprint(cap->cfg.ring, pool_buf_size(br->pool));
	if ((r = rings_budget(cap, need, err, errlen)))
		return r;
	fd = file_open(cap, file, err, errlen);
	if (fd < 0)
		return fd;
	snprintf(cap->name, sizeof(cap->name), "%s", file);
	cap->fd = fd;
	cap->werr = 0;
	cap->cancel = false;
	cap->why[0] = 0;
	cap->sides = sides;
	cap->group = group;
	cap->gptr = gptr;
	group_text(gptr, cap->gtext, sizeof(cap->gtext));
	cap->snaplen = snap;
	cap->count = count;
	cap->written = cap->bytes = cap->dropped = cap->full_base = 0;
	cap->buflen = 0;
	file_head(cap);
	r = rings_make(cap, err, errlen);
	if (r < 0) {
		close(cap->fd);
		cap->fd = -1;
		snprintf(path, sizeof(path), "%s/%s", cap->cfg.dir, cap->name);
		unlink(path); /* created by us just now, empty but for the header */
		snprintf(cap->why, sizeof(cap->why), "not started");
		return r;
	}
	if (r > 0) {
		log_info("capture %s/%s: allocating the rings, starts when they are made",
			 cap->cfg.dir, file);
		return 1;
	}
	capture_go(cap);
	return 0;
}

int capture_stop(struct capture *cap, FILE *out)
{
	if (cap->allocating) {
		/* The thread cannot be stopped in the middle of a page: it finishes, then
		 * alloc_done frees what it made. */
		cap->cancel = true;
		fprintf(out, "capture %s stopped before it started: 0 packets written\n",
			cap->name);
		return 0;
	}
	if (!cap->active)
		return -ENOENT;
	capture_end(cap, "stop");
	fprintf(out, "capture %s stopped: %lu packets written, %lu captures dropped\n", cap->name,
		(unsigned long)cap->written, (unsigned long)cap->dropped);
	return 0;
}

void capture_counts_get(struct capture *cap, struct capture_counts *n)
{
	memset(n, 0, sizeof(*n));
	if (!cap)
		return;
	n->active = cap->active;
	n->starting = cap->allocating; /* also when stopped meanwhile: the rings are made */
	snprintf(n->stop_reason, sizeof(n->stop_reason), "%s", cap->why);
	n->written = cap->written;
	n->bytes = cap->bytes + cap->buflen;
	n->dropped = cap->active ? rings_full(cap->c->br) - cap->full_base : cap->dropped;
	n->dropped_total = rings_full(cap->c->br);
}

void capture_status(struct capture *cap, FILE *out)
{
	struct capture_counts n;
	char ga[INET6_ADDRSTRLEN] = "all";

	capture_counts_get(cap, &n);
	if (!cap->name[0]) {
		fprintf(out, "capture: none (capture_dir %s, ring %u records per worker)\n",
			cap->cfg.dir, cap->cfg.ring);
		return;
	}
	if (cap->group)
		inet_ntop(AF_INET, &cap->group, ga, sizeof(ga));
	else if (cap->gptr)
		snprintf(ga, sizeof(ga), "%s", cap->gtext);
	if (cap->active || (n.starting && !cap->cancel) || !cap->why[0])
		fprintf(out, "capture: %s %s/%s\n",
			cap->active		     ? "running"
			: n.starting && !cap->cancel ? "starting (allocating the rings)"
						     : "stopped",
			cap->cfg.dir, cap->name);
	else
		fprintf(out, "capture: stopped (%s) %s/%s\n", cap->why, cap->cfg.dir, cap->name);
	fprintf(out, "  side %s, group %s, snaplen %u, count %lu\n",
		cap->sides == 3		      ? "both"
		: cap->sides == 1u << SIDE_IB ? "ib"
					      : "roce",
		ga, cap->snaplen, (unsigned long)cap->count);
	fprintf(out, "  written %lu packets, %lu bytes; dropped %lu captures (ring full)\n",
		(unsigned long)n.written, (unsigned long)n.bytes, (unsigned long)n.dropped);
}

void capture_free(struct capture *cap)
{
	struct bridge *br;

	if (!cap)
		return;
	br = cap->c->br;
	(void)br;
	cap->exiting = true;
	if (cap->allocating) {
		cap->cancel = true;
		alloc_done(cap); /* joins the thread: at exit, waiting is what is left */
	}
	if (cap->active)
		capture_end(cap, "bridge stopping");
	if (cap->tfd >= 0) {
		loop_unwatch(cap->tfd);
		close(cap->tfd);
	}
	if (cap->efd >= 0) {
		loop_unwatch(cap->efd);
		close(cap->efd);
	}
	free(cap->buf);
	free(cap);
}
