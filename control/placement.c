// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Worker placement (placement.h): hwloc for the machine, the NICs' locality and CPU
 * sets; the kernel's files for the isolated CPUs and RT throttling. No topology code of
 * our own: every object and set comes from hwloc. CPU lists are read here (item_parse:
 * hwloc's list parser checks no range), into hwloc sets.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include <hwloc/linux.h>
#include <hwloc/openfabrics-verbs.h>

#include "placement.h"

static const char *const side_label[PLACE_SIDES] = {"IB", "RoCE"};

static int errf(char *err, size_t len, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t len, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return r;
}

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
	int nnodes;
	bool node_is_nic; /* pl->node is a NIC's (not merely the only node) */
	const struct place_in *in;
	struct placement *pl;
};

/* IB2ROCE_SYSFS_ROOT: for tests, a directory standing in for / (docs/tuning.md). */
static void root_path(char *buf, size_t len, const char *path)
{
	const char *root = getenv("IB2ROCE_SYSFS_ROOT");

	snprintf(buf, len, "%s%s", root ? root : "", path);
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

/* Check a CPU given by an option: it exists and (unless oversubscribe) is allowed. */
static int check_given(struct plan_ctx *c, const char *opt, int cpu, char *err, size_t len)
{
	char l[128];

	if (!pu_obj(c, cpu)) {
		set_str(l, sizeof(l), c->all);
		return errf(err, len, -EINVAL, "%s: CPU %d does not exist (CPUs %s)", opt, cpu, l);
	}
	if (hwloc_bitmap_isset(c->allowed, (unsigned)cpu))
		return 0;
	set_str(l, sizeof(l), c->allowed);
	if (!c->in->oversubscribe)
		return errf(err, len, -EINVAL,
			    "%s: CPU %d is outside the allowed CPUs %s (taskset, cgroup cpuset); "
			    "--enable oversubscribe to try anyway",
			    opt, cpu, l);
	add_line(&c->pl->warn, &c->pl->nwarn,
		 "%s: CPU %d is outside the allowed CPUs %s: pinning may fail", opt, cpu, l);
	return 0;
}

/*
 * The control thread's CPU when not given: an allowed CPU no worker uses, best first:
 * not a worker's SMT sibling, not isolated (isolated CPUs are for workers), off the
 * workers' node (its cores are for workers); lowest number. With no workers the control
 * thread runs the data path: on the workers' node instead. -1 if none is free.
 */
static int control_auto(struct plan_ctx *c, uint32_t nplaced, char *why, size_t len)
{
	int best = -1, best_key = 1 << 30, cpu;
	bool multi = c->nnodes > 1 && c->pl->node >= 0;

	hwloc_bitmap_foreach_begin(cpu, c->allowed)
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
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->local != y->local)
		return x->local ? -1 : 1;
	if (x->iso != y->iso)
		return x->iso ? -1 : 1;
	return x->core->logical_index < y->core->logical_index ? -1 : 1;
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
		if (!cv[i].iso && hwloc_bitmap_intersects(c->isolated, c->allowed))
			add_line(&pl->warn, &pl->nwarn,
				 "worker %u on CPU %d: not isolated, no isolated core is left", i,
				 cv[i].cpu);
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
	char l[96], src[64];

	c->all = hwloc_topology_get_topology_cpuset(c->t);
	c->nnodes = hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_NUMANODE);
	snprintf(pl->topo, sizeof(pl->topo), "%d NUMA node%s, %d package%s, %d cores, %d CPUs",
		 c->nnodes, c->nnodes == 1 ? "" : "s",
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_PACKAGE),
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_PACKAGE) == 1 ? "" : "s",
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_CORE),
		 hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_PU));
	if (in->allowed) {
		char why[160];

		if (list_to_set(in->allowed, c->allowed, why, sizeof(why)))
			return errf(err, len, -EINVAL, "--allowed-cpus '%s': %s", in->allowed, why);
		snprintf(src, sizeof(src), "--allowed-cpus");
	} else {
		cpu_set_t set;

		if (sched_getaffinity(0, sizeof(set), &set))
			return errf(err, len, -errno, "sched_getaffinity: %s", strerror(errno));
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set))
				hwloc_bitmap_set(c->allowed, (unsigned)cpu);
		snprintf(src, sizeof(src), "process affinity");
	}
	hwloc_bitmap_and(c->allowed, c->allowed, c->all);
	if (hwloc_bitmap_iszero(c->allowed)) {
		set_str(l, sizeof(l), c->all);
		return errf(err, len, -EINVAL, "no allowed CPU is in the topology (CPUs %s)%s", l,
			    in->allowed ? "" : ": give --allowed-cpus with --show-placement");
	}
	set_str(l, sizeof(l), c->allowed);
	snprintf(pl->allowed, sizeof(pl->allowed), "%s (%s)", l, src);
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
	if (!c.allowed || !c.isolated || !c.taken) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	/* I/O objects too: an XML topology gives the NICs' locality as OS devices. */
	if (hwloc_topology_init(&c.t)) {
		r = errf(err, errlen, -errno, "hwloc: %s", strerror(errno));
		goto out;
	}
	hwloc_topology_set_io_types_filter(c.t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(c.t)) {
		r = errf(err, errlen, -errno, "hwloc: loading the topology: %s", strerror(errno));
		goto out;
	}
	if ((r = plan_machine(&c, err, errlen)))
		goto out;
	for (int s = 0; s < PLACE_SIDES; s++)
		nic_locality(&c, s);
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
	if (!in->ncpus && in->nworkers && (r = place_auto(&c, err, errlen)))
		goto out;
	note_idle(&c);
	r = 0;
out:
	if (c.t)
		hwloc_topology_destroy(c.t);
	hwloc_bitmap_free(c.allowed);
	hwloc_bitmap_free(c.isolated);
	hwloc_bitmap_free(c.taken);
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
