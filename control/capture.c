// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Packet capture (capture.h): the console commands' work, the drain of the workers'
 * capture rings and the pcapng file.
 *
 * A capture has a generation (bridge->cap_gen, never 0 while it runs). Workers stamp
 * their records with the generation they read at the start of a burst; records of an
 * earlier capture still in a ring when the next one starts are skipped. The rings are
 * made at the first capture and kept until the bridge stops (a worker may still be in a
 * burst that read the generation when a capture stops).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include "bridge.h"
#include "capring.h"
#include "capture.h"
#include "concmd.h"
#include "ctl.h"
#include "log.h"
#include "options.h"
#include "pcapng.h"
#include "pool.h"

#define CAP_TICK_MS   10	   /* drain period while a capture runs */
#define CAP_TICK_RECS 4096	   /* records written per tick at most */
#define CAP_BUF_SIZE  (256u << 10) /* file bytes gathered before a write */
#define CAP_IF_IB     0
#define CAP_IF_ROCE   1

struct capture {
	struct ctl *c;
	struct capture_cfg cfg; /* a copy: a reload does not change it */
	int tfd;
	struct ev_tag tag;
	bool rings_made;
	/* The current (or last) capture. */
	bool active;
	int fd;
	char name[256];
	uint32_t gen;
	uint32_t sides, group, snaplen;
	uint64_t count; /* stop after this many packets, 0: no limit */
	uint64_t written, bytes, full_base, dropped;
	int64_t real_off_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at the start */
	uint8_t *buf;
	size_t buflen;
	int werr; /* a write failed: the capture stopped */
};


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

struct capture *capture_new(struct ctl *c, const struct capture_cfg *cfg)
{
	struct capture *cap = calloc(1, sizeof(*cap));

	if (!cap)
		return NULL;
	cap->c = c;
	cap->cfg = *cfg;
	cap->fd = -1;
	cap->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	cap->buf = malloc(CAP_BUF_SIZE);
	if (cap->tfd < 0 || !cap->buf) {
		int e = errno;

		capture_free(cap);
		errno = e;
		return NULL;
	}
	cap->tag.kind = EV_CAPTURE;
	cap->tag.ptr = cap;
	if (ctl_watch(c, cap->tfd, EPOLLIN, &cap->tag)) {
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
	int r;

	if (!cap->buflen || cap->fd < 0)
		return;
	r = pcapng_write_all(cap->fd, cap->buf, cap->buflen);
	if (r && !cap->werr) {
		cap->werr = r;
		log_err("capture %s: write: %s", cap->name, strerror(-r));
	}
	cap->bytes += cap->buflen;
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
	char comment[96], ga[INET_ADDRSTRLEN] = "";
	size_t need;

	memcpy(hdr, r->data, hl);
	memset(&p, 0, sizeof(p));
	p.ib = s == SIDE_IB;
	p.hdr = hdr;
	p.payload = r->data + hl;
	p.len = r->byte_len > BR_GRH_LEN ? r->byte_len - BR_GRH_LEN : 0;
	p.caplen = r->caplen - hl;
	p.src_qpn = r->src_qp;
	if (p.ib ? hdr[24] == 0xff : (hdr[BR_IPV4_OFF + 16] & 0xf0) == 0xe0)
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

static void capture_end(struct capture *cap, const char *why)
{
	struct bridge *br = cap->c->br;

	atomic_store_explicit(&br->cap_gen, 0, memory_order_release);
	/* What the rings hold now; records a worker commits later carry this generation
	 * and are skipped by the next capture. */
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
	log_info("capture %s stopped (%s): %lu packets written, %lu captures dropped", cap->name,
		 why, (unsigned long)cap->written, (unsigned long)cap->dropped);
}

void capture_tick(struct capture *cap)
{
	uint64_t exp;

	while (read(cap->tfd, &exp, sizeof(exp)) == sizeof(exp))
		;
	if (!cap->active)
		return;
	rings_drain(cap, CAP_TICK_RECS);
	buf_flush(cap);
	if (cap->werr)
		capture_end(cap, "write error");
	else if (cap->count && cap->written >= cap->count)
		capture_end(cap, "count reached");
}

/* Make the rings (first capture). */
static int rings_make(struct capture *cap, char *err, size_t errlen)
{
	struct bridge *br = cap->c->br;
	uint32_t data = pool_buf_size(br->pool);

	if (cap->rings_made)
		return 0;
	for (uint32_t i = 0; i < br->nworkers; i++) {
		struct cap_ring *r = cap_ring_new(cap->cfg.ring, data);

		if (!r) {
			int e = errno;

			for (uint32_t k = 0; k < i; k++) {
				cap_ring_free(br->workers[k].cap);
				br->workers[k].cap = NULL;
			}
			return opt_errf(err, errlen, -e, "capture: rings: %s", strerror(e));
		}
		br->workers[i].cap = r;
	}
	cap->rings_made = true;
	return 0;
}

/* Open FILE new in capture_dir: never an existing file, never through a link. */
static int file_open(struct capture *cap, const char *name, char *err, size_t errlen)
{
	const char *dir = cap->cfg.dir, *why = name_refused(name);
	int dfd, fd, e;

	if (why)
		return opt_errf(err, errlen, -EINVAL, "capture: '%s': %s", name, why);
	if (mkdir(dir, 0750) && errno != EEXIST)
		return opt_errf(err, errlen, -errno, "capture: capture_dir %s: %s", dir,
				strerror(errno));
	dfd = open(dir, O_DIRECTORY | O_PATH | O_CLOEXEC);
	if (dfd < 0)
		return opt_errf(err, errlen, -errno, "capture: capture_dir %s: %s", dir,
				strerror(errno));
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

static int64_t clock_off_ns(void)
{
	struct timespec m, r;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return ((int64_t)r.tv_sec - m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
}

int capture_start(struct capture *cap, char *args, char *err, size_t errlen)
{
	struct bridge *br = cap->c->br;
	uint32_t sides = 3, group = 0, snap = CAPTURE_SNAP_DEFAULT;
	uint64_t count = 0, v;
	char *file = concmd_word(&args), *w;
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
			const struct group *g;

			if (inet_pton(AF_INET, a, &in) != 1 || !(g = group_of(br, in.s_addr)))
				return opt_errf(err, errlen, -EINVAL,
						"capture start: '%s' is not a bridged group", a);
			group = g->addr;
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
		} else if (!strcmp(w, "count")) {
			if ((r = opt_parse_uint(a, 1, UINT64_MAX, &v, err, errlen)))
				return r;
			count = v;
		} else if (!strcmp(w, "snaplen")) {
			if ((r = opt_parse_uint(a, 64, CAPTURE_SNAP_DEFAULT, &v, err, errlen)))
				return r;
			snap = (uint32_t)v;
		} else {
			return opt_errf(err, errlen, -EINVAL,
					"capture start: unknown '%s' (group, side, count, snaplen)",
					w);
		}
	}
	if (cap->active)
		return opt_errf(err, errlen, -EBUSY, "capture: %s is running (capture stop first)",
				cap->name);
	if ((r = rings_make(cap, err, errlen)))
		return r;
	fd = file_open(cap, file, err, errlen);
	if (fd < 0)
		return fd;
	snprintf(cap->name, sizeof(cap->name), "%s", file);
	cap->fd = fd;
	cap->werr = 0;
	cap->sides = sides;
	cap->group = group;
	cap->snaplen = snap;
	cap->count = count;
	cap->written = cap->bytes = cap->dropped = 0;
	cap->buflen = 0;
	file_head(cap);
	cap->real_off_ns = clock_off_ns();
	cap->full_base = rings_full(br);
	/* Skip generation 0 (off) when the counter wraps. */
	if (++cap->gen == 0)
		cap->gen = 1;
	cap->active = true;
	atomic_store_explicit(&br->cap_sides, sides, memory_order_relaxed);
	atomic_store_explicit(&br->cap_group, group, memory_order_relaxed);
	/* Payload bytes to copy: what snaplen keeps of the frame, at least. */
	atomic_store_explicit(&br->cap_snap, snap, memory_order_relaxed);
	/* Pairs with the workers' acquire load: rings and filters are set. */
	atomic_store_explicit(&br->cap_gen, cap->gen, memory_order_release);
	timer_arm(cap, true);
	log_info("capture %s/%s started", cap->cfg.dir, file);
	return 0;
}

int capture_stop(struct capture *cap, FILE *out)
{
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
	n->written = cap->written;
	n->bytes = cap->bytes + cap->buflen;
	n->dropped = cap->active ? rings_full(cap->c->br) - cap->full_base : cap->dropped;
}

void capture_status(struct capture *cap, FILE *out)
{
	struct capture_counts n;
	char ga[INET_ADDRSTRLEN] = "all";

	capture_counts_get(cap, &n);
	if (!cap->name[0]) {
		fprintf(out, "capture: none (capture_dir %s, ring %u records per worker)\n",
			cap->cfg.dir, cap->cfg.ring);
		return;
	}
	if (cap->group)
		inet_ntop(AF_INET, &cap->group, ga, sizeof(ga));
	fprintf(out, "capture: %s %s/%s\n", cap->active ? "running" : "stopped", cap->cfg.dir,
		cap->name);
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
	if (cap->active)
		capture_end(cap, "bridge stopping");
	if (cap->tfd >= 0) {
		ctl_unwatch(cap->c, cap->tfd);
		close(cap->tfd);
	}
	if (cap->rings_made)
		for (uint32_t i = 0; i < br->nworkers; i++) {
			cap_ring_free(br->workers[i].cap);
			br->workers[i].cap = NULL;
		}
	free(cap->buf);
	free(cap);
}
