// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Attaching to the shared-memory fabric, its lock, the process table and the
 * reclamation of objects left behind by processes that died.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sf.h"
#include "sf_priv.h"

#define SF_SHM_DIR	  "/dev/shm"
#define SF_ATTACH_WAIT_MS 2000

static struct sf_fabric *_Atomic g_fab;
static uint32_t g_proc_slot = UINT32_MAX;
static int32_t g_self_pid;
static char g_name[SF_NAME_MAX];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_err;
static _Atomic uint32_t g_serial;
static int32_t g_pid;
static int g_attach_reclaimed;
static dev_t g_fab_dev;
static ino_t g_fab_ino;
static bool g_group_set; /* SIMFABRIC_GROUP given: files are shared with g_group */
static gid_t g_group;

static void sf_atfork_child(void)
{
	g_self_pid = getpid();
}

int32_t sf_self_pid(void)
{
	if (!g_self_pid) {
		g_self_pid = getpid();
		pthread_atfork(NULL, NULL, sf_atfork_child);
	}
	return g_self_pid;
}

struct sf_counters *sf_ctr_mine(struct sf_fabric *fab, uint32_t dev)
{
	if (g_proc_slot == UINT32_MAX || sf_self_pid() != g_pid)
		return &fab->devs[dev].ctr; /* a forked child: shared, still atomic */
	return &fab->pctr[g_proc_slot][dev];
}

#define SF_NCTR (sizeof(struct sf_counters) / sizeof(_Atomic uint64_t))

static void sf_counters_fold(struct sf_counters *dst, struct sf_counters *src)
{
	_Atomic uint64_t *d = (_Atomic uint64_t *)dst, *s = (_Atomic uint64_t *)src;

	for (size_t i = 0; i < SF_NCTR; i++)
		atomic_fetch_add(&d[i], atomic_exchange(&s[i], 0));
}

void sf_counters_read(struct sf_fabric *fab, uint32_t dev, struct sf_counters *out)
{
	_Atomic uint64_t *o = (_Atomic uint64_t *)out;
	const _Atomic uint64_t *b = (const _Atomic uint64_t *)&fab->devs[dev].ctr;

	for (size_t i = 0; i < SF_NCTR; i++)
		atomic_store_explicit(&o[i], atomic_load(&b[i]), memory_order_relaxed);
	for (uint32_t p = 0; p < SF_MAX_PROCS; p++) {
		const _Atomic uint64_t *c = (const _Atomic uint64_t *)&fab->pctr[p][dev];

		for (size_t i = 0; i < SF_NCTR; i++)
			atomic_fetch_add_explicit(&o[i],
						  atomic_load_explicit(&c[i], memory_order_relaxed),
						  memory_order_relaxed);
	}
}

const char *sf_name(void)
{
	return g_name;
}

uint32_t sf_serial_next(void)
{
	return atomic_fetch_add_explicit(&g_serial, 1, memory_order_relaxed) + 1;
}

static bool sf_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= SF_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

static void sf_fabric_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, SF_SHM_DIR "/simfabric.%s", name);
}

/*
 * SIMFABRIC_GROUP: a group name or number whose members share the fabric's files. A
 * name that does not resolve is an error (the fabric is not attached): files readable
 * by a group nobody meant would be worse than a refusal.
 */
static int sf_group_resolve(void)
{
	const char *s = getenv("SIMFABRIC_GROUP");
	struct group gr, *res = NULL;
	char buf[4096], *end;
	unsigned long n;

	if (!s || !*s)
		return 0;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (!*end && !errno && n < (gid_t)-1) {
		g_group = (gid_t)n;
	} else {
		if (getgrnam_r(s, &gr, buf, sizeof(buf), &res) || !res) {
			fprintf(stderr, "simfabric: SIMFABRIC_GROUP '%s': no such group\n", s);
			return -EINVAL;
		}
		g_group = res->gr_gid;
	}
	g_group_set = true;
	return 0;
}

int sf_file_share(int fd, mode_t mode)
{
	if (g_group_set) {
		if (fchown(fd, (uid_t)-1, g_group))
			return -errno;
		mode |= (mode & 0700) >> 3;
	}
	return fchmod(fd, mode) ? -errno : 0;
}

void sf_obj_path(char *buf, size_t len, const char *kind, int32_t pid, uint32_t serial)
{
	snprintf(buf, len, SF_SHM_DIR "/simfabric.%s.%s.%d.%u", g_name, kind, pid, serial);
}

/*
 * Objects the simulated NIC reads or writes (rings, registered memory) are mapped with
 * MAP_POPULATE, in their owner (sf_obj_create) and in every process that delivers into
 * them (sf_obj_map): a NIC's DMA never takes a page fault (ibv_reg_mr pins the pages,
 * rdma-core's ibv_cmd_reg_mr and the kernel's ib_umem_get), and here each first touch
 * of a 4 KiB page of a peer's memory took one in the sending thread: at 4 096 groups a
 * listener's 18 receive queues of 8 192 buffers of 4 KiB (600 MB) cost the bridge's
 * worker a fault a forwarded packet (docs/benchmarks.md, "page faults"). The pages are
 * the owner's already (it wrote them or ftruncate made them); populating maps them
 * into the page table at once. Where the kernel cannot populate (memory pressure, a
 * locked-memory limit does not apply: nothing is locked), mmap still succeeds and the
 * pages fault in on first touch as before. Another process's mapping is populated only
 * up to SF_MAP_POPULATE_MAX: populating happens in the delivering thread at its first
 * packet into the region, and a bridge's pool of hundreds of MB stalled a sender for
 * tens of ms (a stall no NIC has; its catch-up burst then overflowed a small receive
 * queue: tests/bridge/mtu.sh); a larger region faults a page at a time, spread out.
 */
void *sf_obj_create(const char *kind, uint32_t serial, size_t len, int *fdp)
{
	char path[256];
	void *p;
	int fd;

	sf_obj_path(path, sizeof(path), kind, getpid(), serial);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (sf_file_share(fd, 0600) < 0 || ftruncate(fd, (off_t)len) < 0)
		goto fail;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	if (fdp)
		*fdp = fd;
	else
		close(fd);
	return p;
fail : {
	int e = errno;

	close(fd);
	unlink(path);
	errno = e;
	return NULL;
}
}

#define SF_MAP_POPULATE_MAX (64u << 20)

void *sf_obj_map(const char *kind, int32_t pid, uint32_t serial, size_t len)
{
	char path[256];
	void *p;
	int fd;

	sf_obj_path(path, sizeof(path), kind, pid, serial);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | (len <= SF_MAP_POPULATE_MAX ? MAP_POPULATE : 0), fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * From /proc/<pid>/stat: the state (field 3) and the start time in clock ticks since boot
 * (field 22). Returns false if the process does not exist.
 */
static bool sf_pid_stat(int32_t pid, char *state, uint64_t *start)
{
	char path[64], buf[1024];
	ssize_t n;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* The command name may contain spaces and parentheses: skip to the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return false;
	p += 2; /* field 3 */
	*state = *p;
	for (int field = 3; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	*start = p ? strtoull(p + 1, NULL, 10) : 0;
	return true;
}

static uint64_t sf_pid_start_time(int32_t pid)
{
	uint64_t start = 0;
	char state;

	return sf_pid_stat(pid, &state, &start) ? start : 0;
}

bool sf_pid_alive(int32_t pid, uint64_t start_time)
{
	uint64_t start;
	char state;

	if (pid <= 0)
		return false;
	if (!sf_pid_stat(pid, &state, &start))
		return kill(pid, 0) == 0 || errno == EPERM; /* /proc not mounted: best effort */
	/* A zombie has released its memory and will never touch the fabric again. */
	if (state == 'Z' || state == 'X')
		return false;
	return !start_time || start == start_time;
}

void sf_owner_claim(struct sf_owner *own)
{
	own->pid = getpid();
	own->serial = sf_serial_next();
	own->gen++;
}

void sf_owner_release(struct sf_owner *own)
{
	own->pid = 0;
	own->serial = 0;
	own->gen++;
}

static void sf_lock_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

void sf_lock(struct sf_fabric *fab)
{
	int r = pthread_mutex_lock(&fab->lock);

	if (r == EOWNERDEAD) {
		/* The holder died inside a table change: tables are consistent at slot
		 * granularity (every change is a few stores), so mark the lock usable and
		 * drop whatever the dead process owned. */
		pthread_mutex_consistent(&fab->lock);
		/* A group change it was making (groups.c) ends here for the readers. */
		if (atomic_load(&fab->groups_gen) & 1)
			atomic_fetch_add(&fab->groups_gen, 1);
		/* ... and any membership change it made is seen by the AHs' snapshots. */
		atomic_fetch_add(&fab->members_gen, 1);
		sf_reclaim_locked(fab);
	}
}

void sf_unlock(struct sf_fabric *fab)
{
	pthread_mutex_unlock(&fab->lock);
}

/* Remove every object file of `pid` (or of all pids when pid is 0). */
static void sf_unlink_files(const char *name, int32_t pid)
{
	char prefix[128], path[512];
	size_t plen;
	struct dirent *de;
	DIR *d;

	snprintf(prefix, sizeof(prefix), "simfabric.%s.", name);
	plen = strlen(prefix);
	d = opendir(SF_SHM_DIR);
	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *rest;
		int32_t fpid;
		char kind[16];
		uint32_t serial;

		if (strncmp(de->d_name, prefix, plen))
			continue;
		rest = de->d_name + plen;
		if (sscanf(rest, "%15[a-z].%d.%u", kind, &fpid, &serial) != 3)
			continue;
		if (pid && fpid != pid)
			continue;
		snprintf(path, sizeof(path), SF_SHM_DIR "/%s", de->d_name);
		unlink(path);
	}
	closedir(d);
}

/* Release everything `pid` owns. Caller holds the lock. */
static void sf_release_pid_locked(struct sf_fabric *fab, int32_t pid)
{
	for (uint32_t i = 0; i < SF_MAX_LISTENS; i++)
		if (fab->listens[i].own.pid == pid)
			sf_owner_release(&fab->listens[i].own);
	for (uint32_t i = 0; i < SF_MAX_JOINS; i++) {
		struct sf_join *j = &fab->joins[i];

		if (j->own.pid == pid)
			sf_join_del_locked(fab, j);
	}
	for (uint32_t i = 0; i < SF_MAX_QPS; i++) {
		struct sf_qp *qp = &fab->qps[i];

		if (qp->own.pid != pid)
			continue;
		sf_qp_detach_all_locked(fab, i);
		sf_qp_lock(qp);
		atomic_store(&qp->state, IBV_QPS_RESET);
		sf_owner_release(&qp->own);
		sf_qp_unlock(qp);
	}
	for (uint32_t i = 0; i < SF_MAX_SRQS; i++) {
		struct sf_srq *srq = &fab->srqs[i];

		if (srq->own.pid != pid)
			continue;
		sf_srq_lock(srq);
		srq->nqps = 0;
		sf_owner_release(&srq->own);
		sf_srq_unlock(srq);
	}
	for (uint32_t i = 0; i < SF_MAX_CQS; i++)
		if (fab->cqs[i].own.pid == pid)
			sf_owner_release(&fab->cqs[i].own);
	for (uint32_t i = 0; i < SF_MAX_MRS; i++)
		if (fab->mrs[i].own.pid == pid)
			sf_owner_release(&fab->mrs[i].own);
	for (uint32_t i = 0; i < SF_MAX_CTXS; i++)
		if (fab->ctxs[i].own.pid == pid)
			sf_owner_release(&fab->ctxs[i].own);
	sf_unlink_files(fab->name, pid);
}

int sf_reclaim_locked(struct sf_fabric *fab)
{
	int n = 0;

	for (uint32_t i = 0; i < SF_MAX_PROCS; i++) {
		struct sf_proc *p = &fab->procs[i];

		if (!p->pid || sf_pid_alive(p->pid, p->start_time))
			continue;
		sf_release_pid_locked(fab, p->pid);
		for (uint32_t d = 0; d < fab->ndevs; d++)
			sf_counters_fold(&fab->devs[d].ctr, &fab->pctr[i][d]);
		p->pid = 0;
		p->start_time = 0;
		n++;
	}
	return n;
}

int sf_reset(const char *name)
{
	char path[256];

	if (!sf_name_valid(name))
		return -EINVAL;
	sf_fabric_path(path, sizeof(path), name);
	sf_unlink_files(name, 0);
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return sf_sysfs_remove(name);
}

/* Enter the calling process in the process table. Caller holds the lock. */
static int sf_proc_register_locked(struct sf_fabric *fab)
{
	int32_t pid = getpid();
	struct sf_proc *free_slot = NULL;

	g_attach_reclaimed = sf_reclaim_locked(fab);
	for (uint32_t i = 0; i < SF_MAX_PROCS; i++) {
		struct sf_proc *p = &fab->procs[i];

		if (p->pid == pid) {
			/* A pid reused by a new process: the old owner's objects are gone
			 * (reclaim above checked the start time). */
			p->start_time = sf_pid_start_time(pid);
			g_proc_slot = i;
			return 0;
		}
		if (!p->pid && !free_slot)
			free_slot = p;
	}
	if (!free_slot)
		return -EMFILE;
	free_slot->pid = pid;
	free_slot->start_time = sf_pid_start_time(pid);
	g_proc_slot = (uint32_t)(free_slot - fab->procs);
	return 0;
}

static int sf_fabric_init(struct sf_fabric *fab, const char *name)
{
	char err[256] = "";
	const char *topo = getenv("SIMFABRIC_TOPOLOGY");
	int r;

	memset(fab, 0, sizeof(*fab));
	fab->version = SF_VERSION;
	fab->size = sizeof(*fab);
	snprintf(fab->name, sizeof(fab->name), "%s", name);
	sf_lock_init(&fab->lock);
	if (topo && *topo) {
		r = sf_topology_load(fab, topo, err, sizeof(err));
		if (r) {
			fprintf(stderr, "simfabric: %s\n", err);
			return r;
		}
	} else {
		sf_topology_default(fab);
	}
	atomic_thread_fence(memory_order_release);
	fab->magic = SF_MAGIC;
	return 0;
}

static void sf_attach_once(void)
{
	const char *name = getenv("SIMFABRIC");
	char path[256];
	struct stat st;
	void *p;
	int fd, r;

	if (!name || !*name)
		name = "default";
	if (!sf_name_valid(name)) {
		fprintf(stderr, "simfabric: invalid fabric name '%s' (letters, digits, '-', '_')\n",
			name);
		g_err = EINVAL;
		return;
	}
	snprintf(g_name, sizeof(g_name), "%s", name);
	sf_fabric_path(path, sizeof(path), name);
	r = sf_group_resolve();
	if (r) {
		g_err = -r;
		return;
	}

	/* Private to the user (0600), or to SIMFABRIC_GROUP too (0660): the fabric holds
	 * every process's packets. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		g_err = errno;
		fprintf(stderr, "simfabric: cannot open %s: %s\n", path, strerror(errno));
		return;
	}
	/* The first process to take the file lock on an empty file creates the fabric;
	 * flock is dropped by the kernel if the creator dies half-way. */
	flock(fd, LOCK_EX);
	if (fstat(fd, &st) < 0) {
		g_err = errno;
		goto out;
	}
	g_fab_dev = st.st_dev;
	g_fab_ino = st.st_ino;
	if (st.st_size == 0) {
		r = st.st_uid == geteuid() ? sf_file_share(fd, 0600) : 0;
		if (r) {
			fprintf(stderr, "simfabric: %s: cannot give it to SIMFABRIC_GROUP: %s\n",
				path, strerror(-r));
			g_err = -r;
			goto out;
		}
		if (ftruncate(fd, sizeof(struct sf_fabric)) < 0) {
			g_err = errno;
			goto out;
		}
	} else if ((size_t)st.st_size != sizeof(struct sf_fabric)) {
		fprintf(stderr,
			"simfabric: fabric '%s' has an incompatible layout (another simfabric "
			"version?); run 'simfab reset' with SIMFABRIC=%s\n",
			name, name);
		g_err = EPROTO;
		goto out;
	}
	p = mmap(NULL, sizeof(struct sf_fabric), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		g_err = errno;
		goto out;
	}
	if (((struct sf_fabric *)p)->magic != SF_MAGIC) {
		r = sf_fabric_init(p, name);
		if (r) {
			munmap(p, sizeof(struct sf_fabric));
			if (ftruncate(fd, 0) < 0)
				r = -errno;
			g_err = -r;
			goto out;
		}
	} else if (((struct sf_fabric *)p)->version != SF_VERSION) {
		fprintf(stderr,
			"simfabric: fabric '%s' has version %u, expected %u; run 'simfab reset'\n",
			name, ((struct sf_fabric *)p)->version, SF_VERSION);
		munmap(p, sizeof(struct sf_fabric));
		g_err = EPROTO;
		goto out;
	}
	g_pid = getpid();
	sf_lock(p);
	r = sf_proc_register_locked(p);
	sf_unlock(p);
	if (r) {
		fprintf(stderr, "simfabric: fabric '%s' has too many processes\n", name);
		munmap(p, sizeof(struct sf_fabric));
		g_err = -r;
		goto out;
	}
	/* Pairs with the acquire load in sf_get's fast path. */
	atomic_store_explicit(&g_fab, (struct sf_fabric *)p, memory_order_release);
out:
	flock(fd, LOCK_UN);
	close(fd);
}

bool sf_fabric_current(void)
{
	char path[256];
	struct stat st;

	sf_fabric_path(path, sizeof(path), g_name);
	return !stat(path, &st) && st.st_dev == g_fab_dev && st.st_ino == g_fab_ino;
}

int sf_attach_reclaimed(void)
{
	return g_attach_reclaimed;
}

struct sf_fabric *sf_get(void)
{
	struct sf_fabric *fab = atomic_load_explicit(&g_fab, memory_order_acquire);

	/* Every verb calls this: no pthread_once once attached. */
	if (fab)
		return fab;
	pthread_once(&g_once, sf_attach_once);
	if (!g_fab) {
		errno = g_err ? g_err : ENODEV;
		return NULL;
	}
	return g_fab;
}

/*
 * At exit a process gives back what it still owns, as the kernel does when a process
 * closes its uverbs file. Skipped in a forked child (its parent owns the objects).
 */
__attribute__((destructor)) static void sf_process_exit(void)
{
	struct sf_fabric *fab = g_fab;

	if (!fab || getpid() != g_pid)
		return;
	sf_sysfs_stop();
	sf_lock(fab);
	sf_release_pid_locked(fab, g_pid);
	for (uint32_t i = 0; i < SF_MAX_PROCS; i++) {
		if (fab->procs[i].pid != g_pid)
			continue;
		for (uint32_t d = 0; d < fab->ndevs; d++)
			sf_counters_fold(&fab->devs[d].ctr, &fab->pctr[i][d]);
		fab->procs[i].pid = 0;
	}
	sf_unlock(fab);
}
