// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Worker placement (placement.h): hwloc for the machine, the NICs' locality and CPU
 * sets; the kernel's files for the isolated CPUs and RT throttling. No topology code of
 * our own: every object and set comes from hwloc. CPU lists are read here (item_parse:
 * hwloc's list parser checks no range), into hwloc sets.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hwloc.h>
#include <hwloc/linux.h>
#include <hwloc/openfabrics-verbs.h>

#include "err.h"
#include "placement.h"

static const char *const side_label[PLACE_SIDES] = {"IB", "RoCE"};

static void add_line(char ***v, uint32_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Append a formatted line to a list (out of memory: the line is lost, nothing else). */
static void add_line(char ***v, uint32_t *n, const char *fmt, ...)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));
	va_list ap;
	int r;

	if (!nv)
		return;
	*v = nv;
	va_start(ap, fmt);
	r = vasprintf(&nv[*n], fmt, ap);
	va_end(ap);
	if (r >= 0)
		(*n)++;
}

struct plan_ctx;
static void worker_warn(struct plan_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * One item of a CPU list, "N" or "N-M" (decimal, as the kernel's cpulist files), into
 * *lo..*hi. Own code, not hwloc_bitmap_list_sscanf: that parser (hwloc 2.x src/bitmap.c)
 * reads numbers with strtoul base 0 ("010" is CPU 8, "-1" is ULONG_MAX) and hands them
 * to hwloc_bitmap_set as unsigned int without a range check, so "4294967297" became
 * CPU 1; it also reads a prefix of "3x". hwloc still builds the set (set_range).
 * Returns 0, or -EINVAL with why in err ("CPU 4294967297 is out of range (0-8191)").
 */
static int item_parse(const char *item, unsigned *lo, unsigned *hi, char *err, size_t len)
{
	const char *p = item;
	unsigned long v[2];
	int nv = 0;

	for (;;) {
		char *end;

		if (*p < '0' || *p > '9')
			return errf(err, len, -EINVAL, "'%s' is not a CPU or a range like 4-7",
				    item);
		errno = 0;
		v[nv] = strtoul(p, &end, 10);
		if (errno == ERANGE || v[nv] > PLACE_CPU_MAX) {
			int digits = (int)strspn(p, "0123456789");

			return errf(err, len, -EINVAL, "'%s': CPU %.*s is out of range (0-%d)",
				    item, digits, p, PLACE_CPU_MAX);
		}
		nv++;
		p = end;
		if (!*p)
			break;
		if (*p != '-' || nv == 2)
			return errf(err, len, -EINVAL, "'%s' is not a CPU or a range like 4-7",
				    item);
		p++;
	}
	if (nv == 2 && v[0] > v[1])
		return errf(err, len, -EINVAL, "'%s': a range goes up, like 4-7", item);
	*lo = (unsigned)v[0];
	*hi = (unsigned)v[nv - 1];
	return 0;
}

/*
 * A finite, non-empty CPU set from a list "0-3,8" (hwloc's list syntax), every item read
 * by item_parse. Returns 0, or -EINVAL with the item at fault in err.
 */
static int list_to_set(const char *s, hwloc_bitmap_t set, char *err, size_t len)
{
	char item[64];
	const char *p = s;

	if (!*s)
		return errf(err, len, -EINVAL, "empty CPU list");
	hwloc_bitmap_zero(set);
	for (;;) {
		size_t n = strcspn(p, ",");
		unsigned lo = 0, hi = 0;

		if (n >= sizeof(item))
			return errf(err, len, -EINVAL, "'%.*s...' is not a CPU or a range like 4-7",
				    20, p);
		memcpy(item, p, n);
		item[n] = 0;
		if (item_parse(item, &lo, &hi, err, len))
			return -EINVAL;
		if (hwloc_bitmap_set_range(set, lo, (int)hi) < 0)
			return errf(err, len, -ENOMEM, "out of memory");
		if (!p[n])
			break;
		p += n + 1;
	}
	return 0;
}

int placement_cpulist_parse(const char *list, int *cpus, uint32_t max, uint32_t *n, char *err,
			    size_t errlen)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	char *buf = strdup(list), *save = NULL, *tok;
	int r = 0;

	*n = 0;
	if (!set || !buf) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	/* Items in the order given: "3,2" puts worker 0 on CPU 3, "1,1" is a duplicate. */
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int cpu;

		char why[160];

		if (list_to_set(tok, set, why, sizeof(why))) {
			r = errf(err, errlen, -EINVAL, "CPU list '%s': %s", list, why);
			goto out;
		}
		hwloc_bitmap_foreach_begin(cpu, set)
		{
			if (*n == max) {
				r = errf(err, errlen, -EINVAL, "CPU list '%s': more than %u CPUs",
					 list, max);
				goto out;
			}
			cpus[(*n)++] = cpu;
		}
		hwloc_bitmap_foreach_end();
	}
	if (!*n)
		r = errf(err, errlen, -EINVAL, "empty CPU list");
out:
	hwloc_bitmap_free(set);
	free(buf);
	return r;
}

/* ---- the machine ---- */

struct plan_ctx {
	hwloc_topology_t t;
	hwloc_const_bitmap_t all; /* the topology's CPUs */
	hwloc_bitmap_t allowed, isolated, taken;
	hwloc_bitmap_t hk;     /* housekeeping: the inherited affinity within allowed */
	hwloc_bitmap_t online; /* the online CPUs (the topology's when the file is absent) */
	hwloc_bitmap_t irq[PLACE_SIDES]; /* per NIC: the CPUs that may take its IRQs */
	char cpuset_src[600];		 /* the cpuset's file, or what stood for it */
	int nnodes;
	bool node_is_nic; /* pl->node is a NIC's (not merely the only node) */
	const struct place_in *in;
	struct placement *pl;
};

/* IB2ROCE_SYSFS_ROOT: for tests, a directory standing in for / (docs/tuning.md). */
static void root_path(char *buf, size_t len, const char *path)
{
	const char *root = getenv("IB2ROCE_SYSFS_ROOT");

	/* A path too long to hold names no file: it opens nothing. */
	if (snprintf(buf, len, "%s%s", root ? root : "", path) >= (int)len)
		buf[0] = 0;
}

/* The first line of a small file, newline removed; false if it cannot be read. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return true;
}

/* Add the CPUs of a kernel CPU list file (isolated, nohz_full; empty or missing: none). */
static void read_cpu_list_file(const char *sys_path, hwloc_bitmap_t set)
{
	char path[512], line[1024];
	hwloc_bitmap_t b;

	root_path(path, sizeof(path), sys_path);
	if (!read_line(path, line, sizeof(line)) || !line[0])
		return;
	b = hwloc_bitmap_alloc();
	if (b && !list_to_set(line, b, path, sizeof(path)))
		hwloc_bitmap_or(set, set, b);
	hwloc_bitmap_free(b);
}

/* The fix printed with every cpuset problem (docs/tuning.md, "cgroup cpuset"). */
#define CPUSET_FIX                                                                                 \
	"fix: give the service's cgroup the worker CPUs (systemd: AllowedCPUs= in the unit or "    \
	"its slice; cgroup v1: cpuset.cpus), or plan with --check --show-placement "               \
	"--allowed-cpus CPUSET:AFFINITY"

/*
 * The cgroup cpuset file of this process: /proc/self/cgroup names its cgroup; a cgroup
 * v1 line whose controllers include cpuset gives /sys/fs/cgroup/cpuset<path>/cpuset.cpus,
 * else the v2 line "0::<path>" gives <path>/cpuset.cpus.effective under /sys/fs/cgroup,
 * or that of the nearest ancestor that has one (a cgroup without the cpuset controller
 * enabled uses its parent's CPUs: Documentation/admin-guide/cgroup-v2.rst, "Cpuset").
 * The standard mount points only. Returns 1 with the file's path, 0 when there is no
 * /proc/self/cgroup (no cgroups: every CPU), -ENOENT with the path that was looked for.
 */
static int cpuset_file(char *file, size_t len)
{
	char path[512], line[1024], v2[512] = "";
	bool have_v2 = false;
	FILE *f;

	root_path(path, sizeof(path), "/proc/self/cgroup");
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *cg, *save = NULL, *tok;

		line[strcspn(line, "\n")] = 0;
		if (!ctrl || !(cg = strchr(ctrl + 1, ':')))
			continue;
		*ctrl++ = 0;
		*cg++ = 0;
		if (!strcmp(line, "0") && !*ctrl) {
			snprintf(v2, sizeof(v2), "%s", cg);
			have_v2 = true;
			continue;
		}
		for (tok = strtok_r(ctrl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, "cpuset")) {
				char rel[600];

				fclose(f);
				if (snprintf(rel, sizeof(rel),
					     "/sys/fs/cgroup/cpuset%.512s%scpuset.cpus", cg,
					     cg[0] && cg[strlen(cg) - 1] == '/' ? "" : "/") >=
				    (int)sizeof(rel))
					rel[0] = 0;
				root_path(file, len, rel);
				return access(file, R_OK) ? -ENOENT : 1;
			}
	}
	fclose(f);
	if (!have_v2) {
		root_path(file, len, "/proc/self/cgroup");
		return -ENOENT;
	}
	for (;;) {
		char rel[600], *slash;

		snprintf(rel, sizeof(rel), "/sys/fs/cgroup%s%scpuset.cpus.effective", v2,
			 v2[0] && v2[strlen(v2) - 1] == '/' ? "" : "/");
		root_path(file, len, rel);
		if (!access(file, R_OK))
			return 1;
		slash = strrchr(v2, '/');
		if (!slash || !v2[1]) {
			root_path(file, len, "/sys/fs/cgroup/cpuset.cpus.effective");
			return -ENOENT;
		}
		*slash = 0;
	}
}

/*
 * The CPUs workers may use: the cgroup cpuset (or --allowed-cpus) within the online
 * CPUs. A cpuset file that cannot be found leaves the inherited affinity as the limit,
 * warned (never a silent wrong placement); an empty or unreadable one is an error.
 */
static int read_cpuset(struct plan_ctx *c, char *err, size_t len)
{
	char file[512], line[1024], why[160];
	int r;

	if (c->in->allowed) {
		if (list_to_set(c->in->allowed, c->allowed, why, sizeof(why)))
			return errf(err, len, -EINVAL, "--allowed-cpus '%s': %s", c->in->allowed,
				    why);
		snprintf(c->cpuset_src, sizeof(c->cpuset_src), "--allowed-cpus");
		return 0;
	}
	r = cpuset_file(file, sizeof(file));
	if (r == 0) {
		hwloc_bitmap_copy(c->allowed, c->all);
		snprintf(c->cpuset_src, sizeof(c->cpuset_src), "no cgroup: every CPU");
		return 0;
	}
	if (r < 0) {
		hwloc_bitmap_copy(c->allowed, c->hk);
		snprintf(c->cpuset_src, sizeof(c->cpuset_src), "process affinity: no cpuset");
		add_line(&c->pl->warn, &c->pl->nwarn,
			 "cgroup cpuset: %s missing: workers limited to the process affinity; "
			 "%s",
			 file, CPUSET_FIX);
		return 0;
	}
	if (!read_line(file, line, sizeof(line)))
		return errf(err, len, -EINVAL, "cgroup cpuset %s: %s; %s", file, strerror(errno),
			    CPUSET_FIX);
	if (!line[0])
		return errf(err, len, -EINVAL, "cgroup cpuset %s is empty: no CPU to run on; %s",
			    file, CPUSET_FIX);
	if (list_to_set(line, c->allowed, why, sizeof(why)))
		return errf(err, len, -EINVAL, "cgroup cpuset %s: %s; %s", file, why, CPUSET_FIX);
	snprintf(c->cpuset_src, sizeof(c->cpuset_src), "cgroup cpuset %s", file);
	return 0;
}

/* The housekeeping CPUs: --allowed-cpus' AFFINITY (or its CPUSET), else the affinity. */
static int read_affinity(struct plan_ctx *c, char *err, size_t len)
{
	char why[160];
	cpu_set_t set;

	if (c->in->affinity) {
		if (list_to_set(c->in->affinity, c->hk, why, sizeof(why)))
			return errf(err, len, -EINVAL, "--allowed-cpus: affinity '%s': %s",
				    c->in->affinity, why);
		return 0;
	}
	if (c->in->allowed) {
		if (list_to_set(c->in->allowed, c->hk, why, sizeof(why)))
			return errf(err, len, -EINVAL, "--allowed-cpus '%s': %s", c->in->allowed,
				    why);
		return 0;
	}
	if (sched_getaffinity(0, sizeof(set), &set))
		return errf(err, len, -errno, "sched_getaffinity: %s", strerror(errno));
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			hwloc_bitmap_set(c->hk, (unsigned)cpu);
	return 0;
}

/*
 * The CPUs that may take a NIC's IRQs: <ibdev_path>/device/msi_irqs/N names its IRQs,
 * /proc/irq/N/smp_affinity_list where each may run (the kernel's PCI MSI sysfs and
 * procfs files; tune.c reads the same for --tune-check). A NIC without those files
 * (a virtual device, a dry run on an XML topology) adds nothing.
 */
static void nic_irqs(struct plan_ctx *c, int s)
{
	const char *dev = c->in->ibdev_path[s];
	char path[600], line[512];
	hwloc_bitmap_t b;
	struct dirent *e;
	DIR *d;

	if (!dev || !dev[0])
		return;
	snprintf(path, sizeof(path), "%s/device/msi_irqs", dev);
	if (!(d = opendir(path)) || !(b = hwloc_bitmap_alloc())) {
		if (d)
			closedir(d);
		return;
	}
	while ((e = readdir(d))) {
		char rel[320];

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(rel, sizeof(rel), "/proc/irq/%s/smp_affinity_list", e->d_name);
		root_path(path, sizeof(path), rel);
		if (!read_line(path, line, sizeof(line)) || list_to_set(line, b, rel, sizeof(rel)))
			continue;
		hwloc_bitmap_or(c->irq[s], c->irq[s], b);
	}
	closedir(d);
	hwloc_bitmap_free(b);
}

/* A warning about a worker's CPU (isolation, IRQs): listed, counted for health. */
static void worker_warn(struct plan_ctx *c, const char *fmt, ...)
{
	struct placement *pl = c->pl;
	char line[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!pl->nworker_warn++)
		snprintf(pl->worker_warn, sizeof(pl->worker_warn), "%.190s", line);
	add_line(&pl->warn, &pl->nwarn, "%s", line);
}

static hwloc_obj_t pu_obj(struct plan_ctx *c, int cpu)
{
	return cpu < 0 ? NULL : hwloc_get_pu_obj_by_os_index(c->t, (unsigned)cpu);
}

/* The physical core of a PU (the PU itself when the topology has no cores). */
static hwloc_obj_t core_of(struct plan_ctx *c, hwloc_obj_t pu)
{
	hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(c->t, HWLOC_OBJ_CORE, pu);

	return core ? core : pu;
}

static int node_of(hwloc_obj_t o)
{
	return o->nodeset ? hwloc_bitmap_first(o->nodeset) : -1;
}

static void thread_fill(struct plan_ctx *c, struct place_thread *th, int cpu, const char *why)
{
	hwloc_obj_t pu = pu_obj(c, cpu);

	th->cpu = cpu;
	th->core = pu ? (int)core_of(c, pu)->logical_index : -1;
	th->node = pu ? node_of(pu) : -1;
	th->isolated = cpu >= 0 && hwloc_bitmap_isset(c->isolated, (unsigned)cpu);
	snprintf(th->why, sizeof(th->why), "%s", why);
}

static void set_str(char *buf, size_t len, hwloc_const_bitmap_t set)
{
	if (hwloc_bitmap_iszero(set))
		snprintf(buf, len, "none");
	else
		hwloc_bitmap_list_snprintf(buf, len, set);
}

/*
 * A NIC's local CPUs: from the topology's OpenFabrics OS device of that name (an XML
 * file), else from the device's sysfs directory: ibdev_path/device/local_cpus, else
 * ibdev_path/device/numa_node. Not hwloc_ibv_get_device_cpuset: hwloc 2.9 builds the
 * path from the device name under /sys/class/infiniband, and only for this system.
 * Unknown (no file, all zero, every CPU of a multi-node machine): every CPU, node -1.
 */
static void nic_locality(struct plan_ctx *c, int s)
{
	const struct place_in *in = c->in;
	struct placement *pl = c->pl;
	hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
	hwloc_obj_t os = in->nic[s] && in->nic[s][0]
				 ? hwloc_ibv_get_device_osdev_by_name(c->t, in->nic[s])
				 : NULL;
	const char *from = "topology";
	char list[96];

	pl->nic_node[s] = -1;
	if (!cpus || !nodes) {
		snprintf(pl->nic[s], sizeof(pl->nic[s]), "locality unknown (out of memory)");
		goto out;
	}
	if (os) {
		hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(c->t, os);

		if (anc && anc->cpuset)
			hwloc_bitmap_copy(cpus, anc->cpuset);
	} else if (in->ibdev_path[s] && in->ibdev_path[s][0]) {
		char path[512], line[32];

		from = "sysfs";
		snprintf(path, sizeof(path), "%s/device/local_cpus", in->ibdev_path[s]);
		if (hwloc_linux_read_path_as_cpumask(path, cpus) < 0)
			hwloc_bitmap_zero(cpus);
		snprintf(path, sizeof(path), "%s/device/numa_node", in->ibdev_path[s]);
		if (hwloc_bitmap_iszero(cpus) && read_line(path, line, sizeof(line)) &&
		    atoi(line) >= 0) {
			hwloc_obj_t n =
				hwloc_get_numanode_obj_by_os_index(c->t, (unsigned)atoi(line));

			if (n && n->cpuset)
				hwloc_bitmap_copy(cpus, n->cpuset);
		}
	} else {
		from = NULL;
	}
	hwloc_bitmap_and(cpus, cpus, c->all);
	if (hwloc_bitmap_iszero(cpus) || (c->nnodes > 1 && hwloc_bitmap_isequal(cpus, c->all))) {
		snprintf(pl->nic[s], sizeof(pl->nic[s]),
			 "locality unknown (%s): treated as local to every node",
			 !from			     ? "not in the topology, device not opened"
			 : os			     ? "its topology object covers every CPU"
			 : hwloc_bitmap_iszero(cpus) ? "no local_cpus or numa_node in sysfs"
						     : "local_cpus covers every CPU");
		goto out;
	}
	hwloc_cpuset_to_nodeset(c->t, cpus, nodes);
	hwloc_bitmap_list_snprintf(list, sizeof(list), cpus);
	if (hwloc_bitmap_weight(nodes) == 1) {
		pl->nic_node[s] = hwloc_bitmap_first(nodes);
		snprintf(pl->nic[s], sizeof(pl->nic[s]), "node %d, local CPUs %s (%s)",
			 pl->nic_node[s], list, from);
	} else {
		char nl[64];

		hwloc_bitmap_list_snprintf(nl, sizeof(nl), nodes);
		snprintf(pl->nic[s], sizeof(pl->nic[s]), "nodes %s, local CPUs %s (%s)", nl, list,
			 from);
	}
out:
	hwloc_bitmap_free(cpus);
	hwloc_bitmap_free(nodes);
}

/*
 * The workers' (and pool's) node: that of the NIC on the side receiving the most
 * configured groups (-i: IB, -o: RoCE, -m: both); a tie goes to IB. A side whose
 * locality is unknown gives way to the other.
 */
static void choose_node(struct plan_ctx *c)
{
	const struct place_in *in = c->in;
	struct placement *pl = c->pl;
	int s = in->rx_groups[1] > in->rx_groups[0] ? 1 : 0;
	const char *rule = in->rx_groups[0] == in->rx_groups[1] ? "ties go to IB"
								: "the side receiving most groups";

	if (pl->nic_node[s] < 0 && pl->nic_node[!s] >= 0) {
		s = !s;
		rule = "the other NIC's locality is unknown";
	}
	pl->node = pl->nic_node[s];
	if (pl->node < 0 && c->nnodes == 1) {
		pl->node = (int)hwloc_get_obj_by_type(c->t, HWLOC_OBJ_NUMANODE, 0)->os_index;
		snprintf(pl->node_why, sizeof(pl->node_why), "%d: the only NUMA node", pl->node);
		return;
	}
	if (pl->node < 0) {
		snprintf(pl->node_why, sizeof(pl->node_why),
			 "none: no NIC is local to a single node");
		return;
	}
	c->node_is_nic = true;
	snprintf(pl->node_why, sizeof(pl->node_why),
		 "%d: the %s NIC's (receives %u group%s, %s %u; %s)", pl->node, side_label[s],
		 in->rx_groups[s], in->rx_groups[s] == 1 ? "" : "s", side_label[!s],
		 in->rx_groups[!s], rule);
	if (pl->nic_node[!s] >= 0 && pl->nic_node[!s] != pl->node)
		add_line(&pl->warn, &pl->nwarn,
			 "%s NIC on node %d, %s NIC on node %d: workers and pool on node %d, the "
			 "%s NIC's traffic crosses the interconnect",
			 side_label[s], pl->node, side_label[!s], pl->nic_node[!s], pl->node,
			 side_label[!s]);
}

static bool on_node(struct plan_ctx *c, hwloc_obj_t o)
{
	return c->pl->node < 0 ||
	       (o->nodeset && hwloc_bitmap_isset(o->nodeset, (unsigned)c->pl->node));
}

/* Is cpu a worker's CPU (among the first n)? Its index, or -1. */
static int worker_on(const struct placement *pl, uint32_t n, int cpu)
{
	for (uint32_t i = 0; i < n; i++)
		if (pl->w[i].cpu == cpu)
			return (int)i;
	return -1;
}

/* Does cpu share a core with a worker's CPU (among the first n)? Its index, or -1. */
static int worker_sibling(struct plan_ctx *c, uint32_t n, int cpu)
{
	hwloc_obj_t core = core_of(c, pu_obj(c, cpu));

	for (uint32_t i = 0; i < n; i++)
		if (c->pl->w[i].cpu != cpu && c->pl->w[i].cpu >= 0 &&
		    hwloc_bitmap_isset(core->cpuset, (unsigned)c->pl->w[i].cpu))
			return (int)i;
	return -1;
}

/* Check a CPU given by an option: it exists, is online and (unless oversubscribe) is in
 * the cpuset. */
static int check_given(struct plan_ctx *c, const char *opt, int cpu, char *err, size_t len)
{
	char l[128];

	if (!pu_obj(c, cpu)) {
		set_str(l, sizeof(l), c->all);
		return errf(err, len, -EINVAL, "%s: CPU %d does not exist (CPUs %s)", opt, cpu, l);
	}
	if (!hwloc_bitmap_isset(c->online, (unsigned)cpu)) {
		set_str(l, sizeof(l), c->online);
		return errf(err, len, -EINVAL,
			    "%s: CPU %d is offline (/sys/devices/system/cpu/online: %s); fix: give "
			    "online CPUs, or bring it online (echo 1 > "
			    "/sys/devices/system/cpu/cpu%d/online)",
			    opt, cpu, l, cpu);
	}
	if (hwloc_bitmap_isset(c->allowed, (unsigned)cpu))
		return 0;
	set_str(l, sizeof(l), c->allowed);
	if (!c->in->oversubscribe)
		return errf(err, len, -EINVAL,
			    "%s: CPU %d is outside the CPUs workers may use, %s (%s); %s; or "
			    "--enable oversubscribe to try anyway",
			    opt, cpu, l, c->cpuset_src, CPUSET_FIX);
	add_line(&c->pl->warn, &c->pl->nwarn,
		 "%s: CPU %d is outside the CPUs workers may use, %s (%s): pinning may fail", opt,
		 cpu, l, c->cpuset_src);
	return 0;
}

/*
 * The control thread's CPU when not given: a housekeeping CPU (the inherited affinity
 * within the allowed CPUs) no worker uses, best first:
 * not a worker's SMT sibling, not isolated (isolated CPUs are for workers), off the
 * workers' node (its cores are for workers); lowest number. With no workers the control
 * thread runs the data path: on the workers' node instead. -1 if none is free.
 */
static int control_auto(struct plan_ctx *c, uint32_t nplaced, char *why, size_t len)
{
	int best = -1, best_key = 1 << 30, cpu;
	bool multi = c->nnodes > 1 && c->pl->node >= 0;

	hwloc_bitmap_foreach_begin(cpu, c->hk)
	{
		hwloc_obj_t pu = pu_obj(c, cpu);
		int key;

		if (!pu || worker_on(c->pl, nplaced, cpu) >= 0)
			continue;
		key = (worker_sibling(c, nplaced, cpu) >= 0) * 4 +
		      hwloc_bitmap_isset(c->isolated, (unsigned)cpu) * 2;
		if (multi)
			key += c->in->nworkers ? on_node(c, pu) : !on_node(c, pu);
		if (key < best_key) {
			best_key = key;
			best = cpu;
		}
	}
	hwloc_bitmap_foreach_end();
	if (best < 0)
		return -1;
	if (!c->in->nworkers)
		snprintf(why, len, "runs the event-driven data path: %s",
			 multi && !(best_key & 1) ? "on the NIC's node" : "first allowed CPU");
	else
		snprintf(why, len, "housekeeping: %s%s%s",
			 best_key & 2 ? "isolated (no other CPU free)" : "not isolated",
			 best_key & 4 ? ", a worker's SMT sibling (no other CPU free)" : "",
			 !multi		? ""
			 : best_key & 1 ? ", on the workers' node (no other CPU free)"
					: ", off the workers' node");
	return best;
}

/* A candidate core for a worker (automatic placement). */
struct cand {
	hwloc_obj_t core;
	int cpu; /* its chosen PU: the first isolated allowed one, else the first allowed */
	bool local, iso;
	bool hk; /* the chosen PU is a housekeeping CPU (the inherited affinity) */
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->local != y->local)
		return x->local ? -1 : 1;
	if (x->iso != y->iso)
		return x->iso ? -1 : 1;
	if (x->hk != y->hk)
		return x->hk ? 1 : -1;
	return x->core->logical_index < y->core->logical_index ? -1 : 1;
}

/* A worker on a non-isolated CPU while isolated CPUs exist: warned, and counted for
 * health's placement warning. */
static void warn_not_isolated(struct plan_ctx *c, uint32_t i)
{
	struct placement *pl = c->pl;
	hwloc_bitmap_t out = hwloc_bitmap_dup(c->isolated);
	char l[128], o[128];

	if (!out)
		return;
	set_str(l, sizeof(l), c->isolated);
	hwloc_bitmap_andnot(out, out, c->allowed);
	set_str(o, sizeof(o), out);
	if (hwloc_bitmap_iszero(out) && !c->in->ncpus)
		worker_warn(c, "worker %u on CPU %d: not isolated, no isolated core is left", i,
			    pl->w[i].cpu);
	else if (hwloc_bitmap_iszero(out))
		worker_warn(c, "worker %u on CPU %d: not isolated while CPUs %s are (--cpus)", i,
			    pl->w[i].cpu, l);
	else
		worker_warn(c,
			    "worker %u on CPU %d: not isolated while CPUs %s are (%s outside %s); "
			    "fix: let the cgroup cpuset include them (AllowedCPUs=)",
			    i, pl->w[i].cpu, l, o, c->cpuset_src);
	hwloc_bitmap_free(out);
}

/* Automatic workers on a host with isolated CPUs of which the cpuset allows none: the
 * cores meant for the workers are unreachable, an error rather than a quiet placement on
 * housekeeping CPUs (--cpus places them there knowingly). */
static int check_isolated_reachable(struct plan_ctx *c, char *err, size_t len)
{
	char l[128], a[128];

	if (hwloc_bitmap_iszero(c->isolated) || hwloc_bitmap_intersects(c->isolated, c->allowed))
		return 0;
	set_str(l, sizeof(l), c->isolated);
	set_str(a, sizeof(a), c->allowed);
	return errf(err, len, -EINVAL,
		    "the isolated CPUs %s are outside the CPUs workers may use, %s (%s); %s; or "
		    "give --cpus to run the workers on those CPUs anyway",
		    l, a, c->cpuset_src, CPUSET_FIX);
}

/* Warn of workers on CPUs that take a NIC's IRQs (its msi_irqs' affinity lists). */
static void check_irqs(struct plan_ctx *c)
{
	for (uint32_t i = 0; i < c->pl->nworkers; i++)
		for (int s = 0; s < PLACE_SIDES; s++) {
			int cpu = c->pl->w[i].cpu;

			if (cpu >= 0 && hwloc_bitmap_isset(c->irq[s], (unsigned)cpu))
				worker_warn(c,
					    "worker %u on CPU %d: the %s NIC %s's IRQs may run "
					    "there; fix: set /proc/irq/N/smp_affinity_list of its "
					    "IRQs to housekeeping CPUs (ib2roce --tune-check)",
					    i, cpu, side_label[s], c->in->nic[s]);
		}
}

/* Workers inside an affinity narrower than the cpuset: the operator set CPUAffinity= (or
 * taskset) for housekeeping and it covers worker CPUs, which the control, log and helper
 * threads may then share. An affinity equal to the cpuset restricts nothing: no warning. */
static void check_affinity(struct plan_ctx *c)
{
	char l[128];

	if (hwloc_bitmap_isequal(c->hk, c->allowed))
		return;
	set_str(l, sizeof(l), c->hk);
	for (uint32_t i = 0; i < c->pl->nworkers; i++) {
		int cpu = c->pl->w[i].cpu;

		if (cpu >= 0 && hwloc_bitmap_isset(c->hk, (unsigned)cpu))
			worker_warn(
				c,
				"worker %u on CPU %d: inside the process affinity %s where the "
				"control, log and helper threads run (CPUAffinity=, taskset); "
				"fix: CPUAffinity= only the housekeeping CPUs, without the worker "
				"CPUs",
				i, cpu, l);
	}
}

/* More workers than free cores, with oversubscribe: the rest share, least harm first. */
static void place_extra(struct plan_ctx *c, uint32_t from, struct cand *cv, uint32_t ncand)
{
	struct placement *pl = c->pl;
	uint32_t rr = 0;

	for (uint32_t i = from; i < c->in->nworkers; i++) {
		int cpu = -1, k;
		char why[192];

		/* Free siblings of the workers' cores and of the control thread's core. */
		for (uint32_t j = 0; j < ncand && cpu < 0; j++) {
			hwloc_bitmap_t f = hwloc_bitmap_dup(cv[j].core->cpuset);

			if (!f)
				break;
			hwloc_bitmap_and(f, f, c->allowed);
			hwloc_bitmap_andnot(f, f, c->taken);
			cpu = hwloc_bitmap_first(f);
			hwloc_bitmap_free(f);
		}
		if (cpu < 0) {
			hwloc_bitmap_t f = hwloc_bitmap_dup(c->allowed);

			if (f) {
				hwloc_bitmap_andnot(f, f, c->taken);
				cpu = hwloc_bitmap_first(f);
				hwloc_bitmap_free(f);
			}
		}
		if (cpu >= 0) {
			k = worker_sibling(c, i, cpu);
			if (k >= 0)
				snprintf(why, sizeof(why),
					 "oversubscribed: SMT sibling of worker %d (CPU %d)", k,
					 pl->w[k].cpu);
			else
				snprintf(why, sizeof(why), "oversubscribed: %s",
					 cpu == pl->control.cpu
						 ? "shares the control thread's CPU"
						 : "SMT sibling of the control thread");
		} else if (pl->control.cpu >= 0 && rr == 0 &&
			   worker_on(pl, i, pl->control.cpu) < 0) {
			cpu = pl->control.cpu;
			snprintf(why, sizeof(why),
				 "oversubscribed: shares the control thread's CPU");
			rr++;
		} else {
			k = (int)(rr++ % (from ? from : 1));
			cpu = pl->w[k].cpu;
			snprintf(why, sizeof(why), "oversubscribed: shares CPU %d with worker %d",
				 cpu, k);
		}
		thread_fill(c, &pl->w[i], cpu, why);
		if (cpu >= 0)
			hwloc_bitmap_set(c->taken, (unsigned)cpu);
		add_line(&pl->warn, &pl->nwarn, "worker %u on CPU %d: %s", i, cpu, why);
	}
}

static int place_auto(struct plan_ctx *c, char *err, size_t len)
{
	struct placement *pl = c->pl;
	uint32_t n = c->in->nworkers, ncand = 0, nlocal = 0, take;
	struct cand *cv;
	hwloc_obj_t core = NULL;
	hwloc_obj_type_t ct =
		hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
	char why[192];
	int ctl_core = pl->control.cpu >= 0 ? pl->control.core : -1;

	cv = calloc((size_t)hwloc_get_nbobjs_by_type(c->t, ct) + 1, sizeof(*cv));
	if (!cv)
		return errf(err, len, -ENOMEM, "out of memory");
	while ((core = hwloc_get_next_obj_by_type(c->t, ct, core))) {
		hwloc_bitmap_t f = hwloc_bitmap_dup(core->cpuset), fi = hwloc_bitmap_alloc();

		if ((int)core->logical_index != ctl_core && f && fi) {
			hwloc_bitmap_and(f, f, c->allowed);
			hwloc_bitmap_and(fi, f, c->isolated);
			if (!hwloc_bitmap_iszero(f)) {
				cv[ncand].core = core;
				cv[ncand].iso = !hwloc_bitmap_iszero(fi);
				cv[ncand].cpu = hwloc_bitmap_first(cv[ncand].iso ? fi : f);
				cv[ncand].hk = hwloc_bitmap_isset(c->hk, (unsigned)cv[ncand].cpu);
				cv[ncand].local = on_node(c, core);
				nlocal += cv[ncand].local;
				ncand++;
			}
		}
		hwloc_bitmap_free(f);
		hwloc_bitmap_free(fi);
	}
	qsort(cv, ncand, sizeof(*cv), cand_cmp);
	take = ncand < n ? ncand : n;
	for (uint32_t i = 0; i < take; i++) {
		if (pl->node < 0)
			snprintf(why, sizeof(why), "no node preferred");
		else if (cv[i].local)
			snprintf(why, sizeof(why), "%s %d",
				 c->node_is_nic ? "local to the NIC's node" : "on the only node",
				 pl->node);
		else
			snprintf(why, sizeof(why),
				 "remote: node %d has %u free core%s for %u workers", pl->node,
				 nlocal, nlocal == 1 ? "" : "s", n);
		thread_fill(c, &pl->w[i], cv[i].cpu, why);
		hwloc_bitmap_set(c->taken, (unsigned)cv[i].cpu);
		if (!cv[i].local)
			add_line(&pl->warn, &pl->nwarn, "worker %u on CPU %d (node %d): %s", i,
				 cv[i].cpu, pl->w[i].node, why);
		if (!cv[i].iso && !hwloc_bitmap_iszero(c->isolated))
			warn_not_isolated(c, i);
	}
	if (take < n && !c->in->oversubscribe) {
		char l[128];

		set_str(l, sizeof(l), c->allowed);
		free(cv);
		return errf(err, len, -EINVAL,
			    "%u workers need %u physical cores, %u are free (allowed CPUs %s, the "
			    "control thread on CPU %d): use fewer --workers, or --enable "
			    "oversubscribe",
			    n, n, ncand, l, pl->control.cpu);
	}
	place_extra(c, take, cv, ncand);
	free(cv);
	return 0;
}

static int place_given(struct plan_ctx *c, char *err, size_t len)
{
	struct placement *pl = c->pl;
	const struct place_in *in = c->in;

	for (uint32_t i = 0; i < in->nworkers; i++) {
		int cpu = in->cpus[i % in->ncpus], k, r;

		if ((r = check_given(c, "--cpus", cpu, err, len)))
			return r;
		k = worker_on(pl, i, cpu);
		if (k >= 0 && !in->oversubscribe)
			return errf(err, len, -EINVAL,
				    "--cpus: workers %d and %u on CPU %d%s: give distinct CPUs, or "
				    "--enable oversubscribe",
				    k, i, cpu,
				    in->ncpus < in->nworkers ? " (fewer CPUs than workers)" : "");
		thread_fill(c, &pl->w[i], cpu, k >= 0 ? "--cpus (oversubscribed)" : "--cpus");
		if (k >= 0)
			add_line(&pl->warn, &pl->nwarn,
				 "workers %d and %u share CPU %d (oversubscribe)", k, i, cpu);
		else if ((k = worker_sibling(c, i, cpu)) >= 0)
			add_line(&pl->warn, &pl->nwarn,
				 "workers %d and %u share core %d (SMT siblings CPU %d and %d)", k,
				 i, pl->w[i].core, pl->w[k].cpu, cpu);
		if (pl->node >= 0 && pl->w[i].node >= 0 && pl->w[i].node != pl->node)
			add_line(&pl->warn, &pl->nwarn,
				 "worker %u on CPU %d: node %d, not the NIC's node %d", i, cpu,
				 pl->w[i].node, pl->node);
		if (!pl->w[i].isolated && !hwloc_bitmap_iszero(c->isolated))
			warn_not_isolated(c, i);
		hwloc_bitmap_set(c->taken, (unsigned)cpu);
	}
	return 0;
}

/* Refuse SCHED_FIFO workers that RT throttling would stop (docs/tuning.md). */
static int check_rt(struct plan_ctx *c, char *err, size_t len)
{
	char path[512], line[64], pline[64];
	long runtime, period = 1000000;

	if (!c->in->rt_prio || !c->in->nworkers)
		return 0;
	root_path(path, sizeof(path), "/proc/sys/kernel/sched_rt_runtime_us");
	if (!read_line(path, line, sizeof(line))) {
		add_line(&c->pl->warn, &c->pl->nwarn,
			 "rt=%d: %s unreadable, RT throttling not checked", c->in->rt_prio, path);
		return 0;
	}
	runtime = atol(line);
	if (runtime == -1)
		return 0;
	root_path(path, sizeof(path), "/proc/sys/kernel/sched_rt_period_us");
	if (read_line(path, pline, sizeof(pline)) && atol(pline) > 0)
		period = atol(pline);
	return errf(err, len, -EPERM,
		    "rt=%d refused: kernel.sched_rt_runtime_us is %ld of a %ld us period: RT "
		    "throttling would stop every busy SCHED_FIFO worker for %ld us each period; "
		    "fix: sysctl kernel.sched_rt_runtime_us=-1",
		    c->in->rt_prio, runtime, period, period - runtime);
}

/* Report the free SMT siblings of the workers' cores: left idle on purpose. */
static void note_idle(struct plan_ctx *c)
{
	struct placement *pl = c->pl;

	for (uint32_t i = 0; i < pl->nworkers; i++) {
		hwloc_obj_t pu = pu_obj(c, pl->w[i].cpu);
		hwloc_bitmap_t f;
		int cpu;

		if (!pu || !(f = hwloc_bitmap_dup(core_of(c, pu)->cpuset)))
			continue;
		hwloc_bitmap_and(f, f, c->allowed);
		hwloc_bitmap_andnot(f, f, c->taken);
		hwloc_bitmap_foreach_begin(cpu, f)
		{
			add_line(&pl->idle, &pl->nidle, "CPU %d: SMT sibling of worker %u (CPU %d)",
				 cpu, i, pl->w[i].cpu);
		}
		hwloc_bitmap_foreach_end();
		hwloc_bitmap_free(f);
	}
}

static int plan_machine(struct plan_ctx *c, char *err, size_t len)
{
	struct placement *pl = c->pl;
	const struct place_in *in = c->in;
	char l[96];
	int r;

	c->all = hwloc_topology_get_topology_cpuset(c->t);
	c->nnodes = hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_NUMANODE);
	snprintf(pl->topo, sizeof(pl->topo), "%d NUMA node%s, %d package%s, %d cores, %d CPUs",
		 c->nnodes, c->nnodes == 1 ? "" : "s",
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_PACKAGE),
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_PACKAGE) == 1 ? "" : "s",
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_CORE),
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_PU));
	/* No online file (a dry run's fake root): the topology's CPUs. */
	read_cpu_list_file("/sys/devices/system/cpu/online", c->online);
	hwloc_bitmap_and(c->online, c->online, c->all);
	if (hwloc_bitmap_iszero(c->online))
		hwloc_bitmap_copy(c->online, c->all);
	if ((r = read_affinity(c, err, len)) || (r = read_cpuset(c, err, len)))
		return r;
	hwloc_bitmap_and(c->allowed, c->allowed, c->online);
	if (hwloc_bitmap_iszero(c->allowed)) {
		set_str(l, sizeof(l), c->online);
		return errf(err, len, -EINVAL,
			    "no CPU of the %s is online or in the topology "
			    "(CPUs %s)%s",
			    c->cpuset_src, l,
			    in->allowed ? "" : ": give --allowed-cpus with --show-placement");
	}
	set_str(l, sizeof(l), c->allowed);
	snprintf(pl->allowed, sizeof(pl->allowed), "%s (%s)", l, c->cpuset_src);
	hwloc_bitmap_and(c->hk, c->hk, c->allowed);
	set_str(l, sizeof(l), c->hk);
	snprintf(pl->housekeeping, sizeof(pl->housekeeping), "%s (%s)", l,
		 in->affinity  ? "--allowed-cpus AFFINITY"
		 : in->allowed ? "--allowed-cpus"
			       : "process affinity");
	if (hwloc_bitmap_iszero(c->hk)) {
		hwloc_bitmap_copy(c->hk, c->allowed);
		snprintf(pl->housekeeping, sizeof(pl->housekeeping),
			 "none: the process affinity has no allowed CPU, any allowed CPU");
	}
	read_cpu_list_file("/sys/devices/system/cpu/isolated", c->isolated);
	read_cpu_list_file("/sys/devices/system/cpu/nohz_full", c->isolated);
	hwloc_bitmap_and(c->isolated, c->isolated, c->all);
	set_str(pl->isolated, sizeof(pl->isolated), c->isolated);
	return 0;
}

int placement_plan(const struct place_in *in, struct placement *pl, char *err, size_t errlen)
{
	struct plan_ctx c = {.in = in, .pl = pl};
	char why[192] = "--control-cpu";
	int r;

	memset(pl, 0, sizeof(*pl));
	pl->node = pl->nic_node[0] = pl->nic_node[1] = -1;
	pl->control.cpu = -1;
	pl->nworkers = in->nworkers;
	pl->rt_prio = in->rt_prio;
	if (in->nworkers > PLACE_MAX_WORKERS)
		return errf(err, errlen, -EINVAL, "more than %d workers", PLACE_MAX_WORKERS);
	for (uint32_t i = 0; i < in->nworkers; i++)
		pl->w[i].cpu = -1;
	c.allowed = hwloc_bitmap_alloc();
	c.isolated = hwloc_bitmap_alloc();
	c.taken = hwloc_bitmap_alloc();
	c.hk = hwloc_bitmap_alloc();
	c.online = hwloc_bitmap_alloc();
	c.irq[0] = hwloc_bitmap_alloc();
	c.irq[1] = hwloc_bitmap_alloc();
	if (!c.allowed || !c.isolated || !c.taken || !c.hk || !c.online || !c.irq[0] || !c.irq[1]) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	/* I/O objects too: an XML topology gives the NICs' locality as OS devices. */
	if (hwloc_topology_init(&c.t)) {
		r = errf(err, errlen, -errno, "hwloc: %s", strerror(errno));
		goto out;
	}
	hwloc_topology_set_io_types_filter(c.t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/* Every CPU of the machine, also those the cgroup cpuset leaves out (hwloc drops
	 * them by default): the cpuset is read and judged here (read_cpuset), so that a
	 * CPU outside it is named as such, not as a CPU that does not exist. */
	hwloc_topology_set_flags(c.t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	if (hwloc_topology_load(c.t)) {
		r = errf(err, errlen, -errno, "hwloc: loading the topology: %s", strerror(errno));
		goto out;
	}
	if ((r = plan_machine(&c, err, errlen)))
		goto out;
	for (int s = 0; s < PLACE_SIDES; s++) {
		nic_locality(&c, s);
		nic_irqs(&c, s);
	}
	choose_node(&c);
	if ((r = check_rt(&c, err, errlen)))
		goto out;
	if (in->ncpus && in->nworkers) {
		if ((r = place_given(&c, err, errlen)))
			goto out;
	}
	/* The control thread: given, or chosen before automatic workers (they avoid its
	 * core), or after given ones (it avoids theirs). */
	if (in->control_cpu >= 0) {
		int k;

		if ((r = check_given(&c, "--control-cpu", in->control_cpu, err, errlen)))
			goto out;
		k = worker_on(pl, in->ncpus ? in->nworkers : 0, in->control_cpu);
		if (k >= 0 && !in->oversubscribe) {
			r = errf(err, errlen, -EINVAL,
				 "--control-cpu %d is worker %d's CPU: give another, or --enable "
				 "oversubscribe",
				 in->control_cpu, k);
			goto out;
		}
		if (k >= 0)
			add_line(&pl->warn, &pl->nwarn,
				 "the control thread shares CPU %d with worker %d (oversubscribe)",
				 in->control_cpu, k);
		thread_fill(&c, &pl->control, in->control_cpu, why);
	} else {
		int cpu = control_auto(&c, in->ncpus ? in->nworkers : 0, why, sizeof(why));

		if (cpu < 0 && !in->oversubscribe) {
			char l[96];

			set_str(l, sizeof(l), c.allowed);
			r = errf(
				err, errlen, -EINVAL,
				"no allowed CPU is left for the control thread (allowed CPUs %s, "
				"all running workers): give it one with --control-cpu or a shorter "
				"--cpus, or --enable oversubscribe",
				l);
			goto out;
		}
		if (cpu < 0) {
			snprintf(why, sizeof(why), "not pinned: every allowed CPU runs a worker");
			add_line(&pl->warn, &pl->nwarn, "the control thread is not pinned: %s",
				 "every allowed CPU runs a worker");
		}
		thread_fill(&c, &pl->control, cpu, why);
	}
	if (pl->control.cpu >= 0)
		hwloc_bitmap_set(c.taken, (unsigned)pl->control.cpu);
	if (!in->ncpus && in->nworkers &&
	    ((r = check_isolated_reachable(&c, err, errlen)) || (r = place_auto(&c, err, errlen))))
		goto out;
	check_irqs(&c);
	check_affinity(&c);
	note_idle(&c);
	r = 0;
out:
	if (c.t)
		hwloc_topology_destroy(c.t);
	hwloc_bitmap_free(c.allowed);
	hwloc_bitmap_free(c.isolated);
	hwloc_bitmap_free(c.taken);
	hwloc_bitmap_free(c.hk);
	hwloc_bitmap_free(c.online);
	hwloc_bitmap_free(c.irq[0]);
	hwloc_bitmap_free(c.irq[1]);
	return r;
}

bool placement_topology_has_nic(const char *name)
{
	hwloc_topology_t t;
	bool has = false;

	if (hwloc_topology_init(&t))
		return false;
	hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (!hwloc_topology_load(t))
		has = hwloc_ibv_get_device_osdev_by_name(t, name) != NULL;
	hwloc_topology_destroy(t);
	return has;
}

void placement_fini(struct placement *pl)
{
	if (!pl)
		return;
	for (uint32_t i = 0; i < pl->nidle; i++)
		free(pl->idle[i]);
	for (uint32_t i = 0; i < pl->nwarn; i++)
		free(pl->warn[i]);
	free(pl->idle);
	free(pl->warn);
	pl->idle = pl->warn = NULL;
	pl->nidle = pl->nwarn = 0;
}

void placement_thread_line(const struct place_thread *t, char *buf, size_t len)
{
	if (t->cpu < 0)
		snprintf(buf, len, "not pinned: %s", t->why);
	else
		snprintf(buf, len, "CPU %d, core %d, node %d, isolated %s: %s", t->cpu, t->core,
			 t->node, t->isolated ? "yes" : "no", t->why);
}

void placement_print(const struct placement *pl, FILE *out)
{
	char line[256];

	fprintf(out, "topology: %s\n", pl->topo);
	fprintf(out, "allowed CPUs: %s\n", pl->allowed);
	fprintf(out, "housekeeping CPUs: %s\n", pl->housekeeping);
	fprintf(out, "isolated CPUs: %s\n", pl->isolated);
	for (int s = 0; s < PLACE_SIDES; s++)
		fprintf(out, "%s NIC: %s\n", side_label[s], pl->nic[s]);
	fprintf(out, "node: %s\n", pl->node_why);
	if (pl->rt_prio)
		fprintf(out, "workers: SCHED_FIFO priority %d\n", pl->rt_prio);
	if (pl->nworkers) {
		fprintf(out, "%-6s %4s %4s %4s %-8s %s\n", "worker", "cpu", "core", "node",
			"isolated", "why");
		for (uint32_t i = 0; i < pl->nworkers; i++)
			fprintf(out, "%-6u %4d %4d %4d %-8s %s\n", i, pl->w[i].cpu, pl->w[i].core,
				pl->w[i].node, pl->w[i].isolated ? "yes" : "no", pl->w[i].why);
	}
	placement_thread_line(&pl->control, line, sizeof(line));
	fprintf(out, "control: %s\n", line);
	for (uint32_t i = 0; i < pl->nidle; i++)
		fprintf(out, "idle: %s\n", pl->idle[i]);
	for (uint32_t i = 0; i < pl->nwarn; i++)
		fprintf(out, "warning: %s\n", pl->warn[i]);
}

int placement_pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}
