// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated sysfs: for every device of the fabric a directory laid out like
 * /sys/class/infiniband/<dev> of a real mlx5 host (kernel
 * Documentation/ABI/stable/sysfs-class-infiniband), under
 * /dev/shm/simfabric.<fabric>.sys/class/infiniband/<dev>, which ibv_device.ibdev_path
 * points to. Programs read it with open/read as they read sysfs.
 *
 * Static files (GUIDs, NUMA node and CPUs of the "PCI device", GID and P_Key tables,
 * rate) are written once, when the first process lists the devices. Port state and the
 * counters are kept live: every process with a device open runs a thread that refreshes
 * them every SF_SYS_PERIOD_MS. A refresh runs under a file lock (flock on the tree's
 * .state file, whose mapping also holds what was published), skips when another process
 * refreshed less than half a period ago, and rewrites only the files whose value changed,
 * each through a temporary file and rename(2): a reader sees the old value or the new
 * one, never part of one. Published counters never go back (a process's counter block
 * is folded into the port's when it exits; a sum read during the fold can be short).
 *
 * Why files and a thread rather than FUSE: no FUSE here (no /dev/fuse in containers,
 * no extra package), and reads of the files need no process of ours to answer them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>

#include "sf.h"
#include "sf_priv.h"

#define SF_SYS_MAGIC	 0x5346535953465331ull /* "SFSYSFS1" */
#define SF_SYS_PERIOD_MS 100
#define SF_SYS_NODE_DIR	 "/sys/devices/system/node"
#define SF_SYS_CPU_DIR	 "/sys/devices/system/cpu"
#define SF_SYS_PORT	 1

/* The live counters: file under ports/1/, the simfab counter, right shift (÷4 for data). */
static const struct {
	const char *file;
	size_t off;
	unsigned int shift;
} sys_ctr[] = {
	{"counters/port_rcv_packets", offsetof(struct sf_counters, rcv_pkts), 0},
	{"counters/port_xmit_packets", offsetof(struct sf_counters, xmit_pkts), 0},
	{"counters/port_rcv_data", offsetof(struct sf_counters, rcv_bytes), 2},
	{"counters/port_xmit_data", offsetof(struct sf_counters, xmit_bytes), 2},
	{"hw_counters/out_of_buffer", offsetof(struct sf_counters, out_of_buffer), 0},
	{"hw_counters/resp_local_length_error", offsetof(struct sf_counters, len_err), 0},
};

#define SF_SYS_NCTR (sizeof(sys_ctr) / sizeof(sys_ctr[0]))

/* The tree's .state file, shared by the processes of a fabric (under its flock). */
struct sf_sys_state {
	uint64_t magic;				/* the static files are written */
	uint64_t last_ns;			/* CLOCK_MONOTONIC of the last refresh */
	uint32_t state[SF_MAX_DEVS];		/* published port state + 1, 0: none yet */
	uint32_t gone[SF_MAX_DEVS];		/* directory removed after a device removal */
	uint64_t pub[SF_MAX_DEVS][SF_SYS_NCTR]; /* published counter values */
};

/* This process's refresher. */
static pthread_mutex_t g_sys_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_sys_cv;
static pthread_t g_sys_thread;
static int32_t g_sys_pid; /* the process whose thread runs; 0: none */
static bool g_sys_stop;
static struct sf_fabric *g_sys_fab;

void sf_sysfs_root(char *buf, size_t len, const char *fabric)
{
	snprintf(buf, len, "/dev/shm/simfabric.%s.sys", fabric);
}

void sf_sysfs_dev_path(char *buf, size_t len, const char *fabric, const char *dev)
{
	snprintf(buf, len, "/dev/shm/simfabric.%s.sys/class/infiniband/%s", fabric, dev);
}

static int sys_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* rm -r path; a missing path is fine. */
static int sys_rm_tree(const char *path)
{
	if (access(path, F_OK) && errno == ENOENT)
		return 0;
	return nftw(path, sys_rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -errno : 0;
}

int sf_sysfs_remove(const char *fabric)
{
	char root[256];

	sf_sysfs_root(root, sizeof(root), fabric);
	return sys_rm_tree(root);
}

/*
 * mkdir of one directory of the tree, 0755 as in sysfs; with SIMFABRIC_GROUP also
 * writable by the group (its members' processes refresh the files too).
 */
static int sys_mkdir(const char *p)
{
	int fd, r;

	if (mkdir(p, 0755))
		return errno == EEXIST ? 0 : -errno;
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = sf_file_share(fd, 0755);
	close(fd);
	return r;
}

/* mkdir -p of `path` (under the tree: every component may be new). */
static int sys_mkdirs(const char *path)
{
	char p[512];
	int r;

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		r = sys_mkdir(p);
		if (r)
			return r;
		*s = '/';
	}
	return sys_mkdir(p);
}

/*
 * Write `text` as the file `dir`/`file` (0444, like sysfs attributes) through a
 * temporary file in the tree's root and rename(2). Missing directories are made.
 */
static int sys_write(const char *root, const char *dir, const char *file, const char *text)
{
	char tmp[512], path[512], sub[512];
	const char *slash = strrchr(file, '/');
	size_t len = strlen(text);
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), "%s/.tmp.%d", root, (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		r = errno ? -errno : -EIO;
	close(fd);
	if (!r && rename(tmp, path)) {
		r = -errno;
		if (r == -ENOENT) {
			snprintf(sub, sizeof(sub), "%s/%.*s", dir, slash ? (int)(slash - file) : 0,
				 file);
			r = sys_mkdirs(slash ? sub : dir);
			if (!r && rename(tmp, path))
				r = -errno;
		}
	}
	if (r)
		unlink(tmp);
	return r;
}

static __attribute__((format(printf, 4, 5))) int sys_printf(const char *root, const char *dir,
							    const char *file, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return sys_write(root, dir, file, text);
}

/* A whole small file (sysfs text), NUL-terminated; -errno when it cannot be read. */
static int sys_read_host(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = 0;
	return 0;
}

/*
 * The mask of a CPU list ("0-3,8") as the kernel prints a cpumask (%*pb): 32-bit words
 * in hex, most significant first, comma-separated; nbits bits wide (nr_cpu_ids).
 */
static void sys_list_to_mask(const char *list, unsigned int nbits, char *out, size_t len)
{
	unsigned int nwords = (nbits + 31) / 32, w;
	uint32_t words[64] = {0};
	const char *p = list;
	size_t off = 0;

	if (nwords == 0 || nwords > 64)
		nwords = nwords ? 64 : 1;
	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (unsigned long c = a; c <= b && c < nwords * 32u; c++)
			words[c / 32] |= 1u << (c % 32);
		p = *end == ',' ? end + 1 : end;
		if (*p == '\n')
			break;
	}
	for (w = nwords; w-- > 0;) {
		/* The first (highest) word is only as wide as its bits need. */
		unsigned int bits = w == nwords - 1 && nbits % 32 ? nbits % 32 : 32;

		off += (size_t)snprintf(out + off, len - off, "%s%0*x", w == nwords - 1 ? "" : ",",
					(int)((bits + 3) / 4), words[w]);
		if (off >= len)
			break;
	}
	snprintf(out + (off < len ? off : len - 1), len - (off < len ? off : len - 1), "\n");
}

/* nr_cpu_ids: the highest possible CPU + 1. */
static unsigned int sys_nr_cpus(void)
{
	char buf[256], *p;
	unsigned long n;

	if (sys_read_host(SF_SYS_CPU_DIR "/possible", buf, sizeof(buf)))
		return (unsigned int)sysconf(_SC_NPROCESSORS_CONF);
	p = strrchr(buf, '-');
	n = strtoul(p ? p + 1 : buf, NULL, 10);
	return (unsigned int)n + 1;
}

/* device/: the "PCI function" of the port: NUMA node, its CPUs, vendor and device ids. */
static void sys_write_pci(const char *root, const char *dir, const struct sf_dev *d)
{
	char path[128], list[1024], mask[1024];
	bool node = false;

	snprintf(path, sizeof(path), SF_SYS_NODE_DIR "/node%u/cpulist", d->numa_node);
	if (!sys_read_host(path, list, sizeof(list)))
		node = true;
	else if (sys_read_host(SF_SYS_CPU_DIR "/online", list, sizeof(list)))
		snprintf(list, sizeof(list), "0-%ld\n", sysconf(_SC_NPROCESSORS_ONLN) - 1);
	/* The node's cpumap is the kernel's own text of that mask. */
	snprintf(path, sizeof(path), SF_SYS_NODE_DIR "/node%u/cpumap", d->numa_node);
	if (!node || sys_read_host(path, mask, sizeof(mask)))
		sys_list_to_mask(list, sys_nr_cpus(), mask, sizeof(mask));
	/* Without NUMA (no node directory at all) the kernel says -1. */
	if (node || access(SF_SYS_NODE_DIR, F_OK) == 0)
		sys_printf(root, dir, "device/numa_node", "%u\n", d->numa_node);
	else
		sys_printf(root, dir, "device/numa_node", "-1\n");
	sys_write(root, dir, "device/local_cpus", mask);
	sys_write(root, dir, "device/local_cpulist", list);
	sys_write(root, dir, "device/vendor", "0x15b3\n");
	sys_write(root, dir, "device/device", "0x101b\n");
}

static void sys_guid(char *buf, size_t len, uint64_t be)
{
	uint64_t g = be64toh(be);

	snprintf(buf, len, "%04x:%04x:%04x:%04x\n", (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
		 (unsigned int)g & 0xffff);
}

/* ports/1/rate as the kernel prints it: "200 Gb/sec (4X HDR)". */
static void sys_rate(const struct ibv_port_attr *a, char *buf, size_t len)
{
	static const struct {
		uint8_t speed;
		unsigned int tenths; /* Gb/s per lane x 10 */
		const char *name;
	} sp[] = {
		{1, 25, ""},	   {2, 50, " DDR"},   {4, 100, " QDR"},	 {8, 100, " FDR10"},
		{16, 140, " FDR"}, {32, 250, " EDR"}, {64, 500, " HDR"}, {128, 1000, " NDR"},
	};
	unsigned int lanes = a->active_width == 1   ? 1
			     : a->active_width == 2 ? 4
			     : a->active_width == 4 ? 8
						    : 12;
	unsigned int tenths = 25, rate;
	const char *name = "";

	for (size_t i = 0; i < sizeof(sp) / sizeof(sp[0]); i++) {
		if (sp[i].speed == a->active_speed) {
			tenths = sp[i].tenths;
			name = sp[i].name;
		}
	}
	rate = lanes * tenths;
	snprintf(buf, len, "%u%s Gb/sec (%uX%s)\n", rate / 10, rate % 10 ? ".5" : "", lanes, name);
}

/* The files that do not change while the fabric exists. */
static void sys_write_static(struct sf_fabric *fab, const char *root, uint32_t i)
{
	const struct sf_dev *d = &fab->devs[i];
	char dir[512], buf[128], name[32];
	struct ibv_port_attr a;

	sf_sysfs_dev_path(dir, sizeof(dir), fab->name, d->name);
	sf_port_attr_fill(fab, i, &a);
	sys_write(root, dir, "node_type", "1: CA\n");
	sys_guid(buf, sizeof(buf), d->node_guid);
	sys_write(root, dir, "node_guid", buf);
	sys_guid(buf, sizeof(buf), d->sys_image_guid);
	sys_write(root, dir, "sys_image_guid", buf);
	sys_write(root, dir, "fw_ver", SF_FW_VER "\n");
	sys_write(root, dir, "hca_type", SF_HCA_TYPE "\n");
	sys_write(root, dir, "hw_rev", "0\n"); /* mlx5 prints rev_id with %x; hw_ver 0 */
	sys_write(root, dir, "board_id", SF_BOARD_ID "\n");
	sys_printf(root, dir, "node_desc", "simfabric %s\n", d->name);
	sys_write_pci(root, dir, d);

	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/ports/%u", SF_SYS_PORT);
	sys_write(root, dir, "link_layer", d->link == SF_LINK_IB ? "InfiniBand\n" : "Ethernet\n");
	sys_printf(root, dir, "lid", "0x%x\n", a.lid);
	sys_printf(root, dir, "sm_lid", "0x%x\n", a.sm_lid);
	sys_printf(root, dir, "lid_mask_count", "%u\n", a.lmc);
	sys_printf(root, dir, "sm_sl", "%u\n", a.sm_sl);
	sys_printf(root, dir, "cap_mask", "0x%08x\n", a.port_cap_flags);
	sys_rate(&a, buf, sizeof(buf));
	sys_write(root, dir, "rate", buf);
	for (int g = 0; g < a.gid_tbl_len; g++) {
		const uint8_t *r = g < SF_GID_MAX && d->gids[g].valid ? d->gids[g].gid.raw : NULL;
		uint8_t zero[16] = {0};

		if (!r)
			r = zero;
		snprintf(name, sizeof(name), "gids/%d", g);
		sys_printf(
			root, dir, name,
			"%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
			r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
			r[12], r[13], r[14], r[15]);
		/* Reading the type of an empty entry fails in the kernel: no file here. */
		if (g < SF_GID_MAX && d->gids[g].valid) {
			snprintf(name, sizeof(name), "gid_attrs/types/%d", g);
			sys_write(root, dir, name,
				  d->gids[g].type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n"
									  : "IB/RoCE v1\n");
		}
	}
	for (int k = 0; k < a.pkey_tbl_len; k++) {
		snprintf(name, sizeof(name), "pkeys/%d", k);
		sys_printf(root, dir, name, "0x%04x\n", k ? 0 : d->pkey);
	}
	sys_printf(root, dir, "hw_counters/lifespan", "%u\n", SF_SYS_PERIOD_MS);

	/* The uverbs device that ibv_device.dev_path names. */
	snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs/uverbs%u", root, i);
	sys_printf(root, dir, "ibdev", "%s\n", d->name);
	sys_write(root, dir, "abi_version", "1\n");
}

static const char *sys_state_name(uint32_t s)
{
	static const char *const n[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "UNKNOWN";
}

/* Port state and counters of device i: the files whose value changed, or all of them. */
static void sys_write_live(struct sf_fabric *fab, const char *root, struct sf_sys_state *st,
			   uint32_t i, bool all)
{
	const struct sf_dev *d = &fab->devs[i];
	uint32_t state = atomic_load_explicit(&d->port_state, memory_order_relaxed);
	struct sf_counters c;
	char dir[256];

	sf_sysfs_dev_path(dir, sizeof(dir), fab->name, d->name);
	if (d->removed) {
		/* A removed device's directory goes away, as with hot unplug. */
		if (!st->gone[i] && !sys_rm_tree(dir))
			st->gone[i] = 1;
		return;
	}
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/ports/%u", SF_SYS_PORT);
	if (all || st->state[i] != state + 1) {
		if (!sys_printf(root, dir, "state", "%u: %s\n", state, sys_state_name(state)) &&
		    !sys_write(root, dir, "phys_state",
			       state == IBV_PORT_ACTIVE ? "5: LinkUp\n" : "3: Disabled\n"))
			st->state[i] = state + 1;
	}
	sf_counters_read(fab, i, &c);
	for (size_t k = 0; k < SF_SYS_NCTR; k++) {
		const _Atomic uint64_t *p =
			(const _Atomic uint64_t *)((const char *)&c + sys_ctr[k].off);
		uint64_t v = atomic_load_explicit(p, memory_order_relaxed) >> sys_ctr[k].shift;

		/* A sum short by a fold in progress is not published: counters never go back. */
		if (!all && v <= st->pub[i][k])
			continue;
		if (v < st->pub[i][k])
			v = st->pub[i][k];
		if (!sys_printf(root, dir, sys_ctr[k].file, "%llu\n", (unsigned long long)v))
			st->pub[i][k] = v;
	}
}

static uint64_t sys_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sf_sysfs_refresh(struct sf_fabric *fab, bool force)
{
	struct sf_sys_state *st;
	char root[256], path[300];
	struct stat sb;
	bool built;
	int fd, r = 0;

	/* A process left on a fabric that was reset must not write the new one's tree. */
	if (!sf_fabric_current())
		return -ESTALE;
	sf_sysfs_root(root, sizeof(root), fab->name);
	snprintf(path, sizeof(path), "%s/class/infiniband", root);
	r = sys_mkdirs(path);
	if (r)
		return r;
	snprintf(path, sizeof(path), "%s/.state", root);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	flock(fd, LOCK_EX);
	if (fstat(fd, &sb)) {
		r = -errno;
		goto out;
	}
	if (sb.st_size != sizeof(*st)) {
		/* New: private like the fabric (0600, or 0660 with SIMFABRIC_GROUP). */
		r = sb.st_uid == geteuid() ? sf_file_share(fd, 0600) : 0;
		if (!r && ftruncate(fd, sizeof(*st)))
			r = -errno;
		if (r)
			goto out;
	}
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (st == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	built = st->magic == SF_SYS_MAGIC;
	if (built && !force && sys_now_ns() - st->last_ns < SF_SYS_PERIOD_MS * 500000ull)
		goto unmap;
	for (uint32_t i = 0; i < fab->ndevs; i++) {
		if (!built)
			sys_write_static(fab, root, i);
		sys_write_live(fab, root, st, i, !built);
	}
	if (!built)
		sys_write(root, root, "class/infiniband_verbs/abi_version", "6\n");
	st->magic = SF_SYS_MAGIC;
	st->last_ns = sys_now_ns();
unmap:
	munmap(st, sizeof(*st));
out:
	flock(fd, LOCK_UN);
	close(fd);
	return r;
}

static void *sys_thread(void *arg)
{
	struct sf_fabric *fab = arg;
	struct timespec ts;

	pthread_mutex_lock(&g_sys_mu);
	while (!g_sys_stop) {
		pthread_mutex_unlock(&g_sys_mu);
		if (sf_sysfs_refresh(fab, false) == -ESTALE) {
			pthread_mutex_lock(&g_sys_mu);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SF_SYS_PERIOD_MS * 1000000l;
		if (ts.tv_nsec >= 1000000000l) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000l;
		}
		pthread_mutex_lock(&g_sys_mu);
		while (!g_sys_stop &&
		       pthread_cond_timedwait(&g_sys_cv, &g_sys_mu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&g_sys_mu);
	return NULL;
}

static void sys_atfork_child(void)
{
	/* The thread did not follow: the next ibv_open_device starts one. */
	g_sys_pid = 0;
	g_sys_stop = false;
	pthread_mutex_init(&g_sys_mu, NULL);
}

/*
 * Starts this process's refresh thread (once per process; again after fork). Every
 * signal is blocked from before g_sys_mu is taken until after it is released: the
 * thread must be created with all signals blocked (the application's signals are never
 * delivered to it), and a signal that arrived meanwhile is delivered when the old mask
 * comes back. That happens with no lock held, so a handler may call exit(), whose
 * destructor (sf_sysfs_stop) takes g_sys_mu.
 */
void sf_sysfs_start(struct sf_fabric *fab)
{
	static bool atfork;
	pthread_condattr_t ca;
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&g_sys_mu);
	if (g_sys_pid == sf_self_pid())
		goto out;
	if (!atfork) {
		pthread_atfork(NULL, NULL, sys_atfork_child);
		atfork = true;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g_sys_cv, &ca);
	pthread_condattr_destroy(&ca);
	g_sys_stop = false;
	g_sys_fab = fab;
	if (!pthread_create(&g_sys_thread, NULL, sys_thread, fab)) {
		pthread_setname_np(g_sys_thread, "simfabric-sys");
		g_sys_pid = sf_self_pid();
	}
out:
	pthread_mutex_unlock(&g_sys_mu);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void sf_sysfs_stop(void)
{
	struct sf_fabric *fab;

	pthread_mutex_lock(&g_sys_mu);
	if (!g_sys_pid || g_sys_pid != getpid()) {
		pthread_mutex_unlock(&g_sys_mu);
		return;
	}
	g_sys_stop = true;
	pthread_cond_signal(&g_sys_cv);
	pthread_mutex_unlock(&g_sys_mu);
	pthread_join(g_sys_thread, NULL);
	fab = g_sys_fab;
	g_sys_pid = 0;
	/* What this process counted since the last refresh. */
	sf_sysfs_refresh(fab, true);
}
