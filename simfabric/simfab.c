// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * simfab: inspect a simulated fabric and inject faults into it.
 *
 * Linked against the simulated libibverbs.so.1, whose private API (sf.h) it uses: the
 * fabric is attached with sf_get() (created from the topology on first use), tables are
 * read directly, faults go through fault.c. Tables that change at run time are copied
 * under the fabric lock and printed after it is dropped, so a blocked stdout never holds
 * the fabric. Exit status: 0 success, 1 failure (unknown device or segment, operation
 * refused, fabric unusable), 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>

#include "devns.h"
#include <rdma/rdma_cma.h>

#include "netns.h"
#include "pcapng.h"
#include "sf.h"

#define SIMFAB_OK    0
#define SIMFAB_FAIL  1
#define SIMFAB_USAGE 2

#define SIMFAB_DEFAULT_FABRIC "default"
#define SIMFAB_PPM	      1000000u

static const char simfab_usage[] =
	"Usage: simfab [-f FABRIC] COMMAND [ARGS]\n"
	"\n"
	"Inspect the simulated RDMA fabric and inject faults. The fabric is named by -f or\n"
	"SIMFABRIC (default \"default\"); it is created on first use from the file named by\n"
	"SIMFABRIC_TOPOLOGY, or from the default topology.\n"
	"\n"
	"Commands:\n"
	"  devices                  devices, ports, addresses, GID tables, QP counts\n"
	"  groups                   multicast groups with their attached QPs and joins\n"
	"  listeners                rdma_cm UD listeners (SIDR services): port space, port,\n"
	"                           address, device, pid\n"
	"  counters [DEV] [--json]  per-port counters\n"
	"  port DEV down|up         take a port down (PORT_ERR; on IB MULTICAST_ERROR to\n"
	"                           every join) or up again (PORT_ACTIVE)\n"
	"  reregister DEV           SM client re-register on an IB port\n"
	"  remove DEV               remove a device (DEVICE_FATAL, rdma_cm DEVICE_REMOVAL)\n"
	"  loss SEGMENT P           drop each delivered copy on SEGMENT with probability P\n"
	"                           (0..1, resolution 1e-6; 0 turns loss off)\n"
	"  qp DEV QPN sq-hang on|off\n"
	"                           make the send queue of queue pair QPN on DEV hang: its\n"
	"                           sends are accepted, not sent, not completed; off: sent\n"
	"                           and completed in order\n"
	"  capture FILE [-c N] [DEV...]\n"
	"                           record every datagram reaching the ports DEV (default\n"
	"                           all) into FILE (pcapng) until SIGINT/SIGTERM or N packets\n"
	"  reclaim                  reclaim the objects of dead processes\n"
	"  reset                    unlink the fabric; the next user creates it afresh\n"
	"  netns NS [--delete]      make network namespace NS with a netdev per device (ib<k>,\n"
	"                           eth<k>: ifindex, MAC, IPv4 address, MTU as the device);\n"
	"                           run the fabric's programs in it (ip netns exec NS ...)\n"
	"  exec [-n NS] CMD [ARG...]\n"
	"                           run CMD where /dev/infiniband holds umad<N>, issm<N>,\n"
	"                           uverbs<N> of the devices (a private mount namespace, as\n"
	"                           root); with -n, in network namespace NS and its sysfs\n"
	"  topology [FILE]          print the fabric's topology in SIMFABRIC_TOPOLOGY format,\n"
	"                           or check FILE and print it as it would be loaded\n"
	"  help                     this text\n"
	"\n"
	"Options:\n"
	"  -f, --fabric FABRIC      use this fabric instead of $SIMFABRIC\n"
	"  -h, --help               this text\n";

/* What a command works on. */
struct simfab {
	const char *name;      /* fabric name */
	struct sf_fabric *fab; /* attached on demand by simfab_attach */
};

struct simfab_cmd {
	const char *name;
	int (*run)(struct simfab *sf, int argc, char **argv); /* argv[0]: command name */
};

static __attribute__((format(printf, 1, 2))) void simfab_err(const char *fmt, ...)
{
	va_list ap;

	fputs("simfab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Report bad usage and return the usage exit status. */
static __attribute__((format(printf, 1, 2))) int simfab_bad_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("simfab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'simfab help'.\n", stderr);
	return SIMFAB_USAGE;
}

/* Allocation failure ends the command: the fabric lock is never held when we allocate. */
static void *simfab_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		simfab_err("out of memory");
		exit(SIMFAB_FAIL);
	}
	return p;
}

static char *simfab_strdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		simfab_err("out of memory");
		exit(SIMFAB_FAIL);
	}
	return p;
}

/* ---- aligned tables ---- */

/*
 * A table of text cells printed with columns padded to their widest cell, two spaces
 * apart. Rows are added with table_add (ncols strings, NULL or "" for empty); columns in
 * the `right` bitmask are right-aligned. Trailing empty cells print nothing.
 */
#define TABLE_MAX_COLS (SF_MAX_DEVS + 1)

struct table {
	unsigned int ncols;
	uint64_t right;
	size_t nrows;
	size_t cap;
	char **cell;
};

static void table_init(struct table *t, unsigned int ncols, uint64_t right)
{
	if (ncols > TABLE_MAX_COLS)
		ncols = TABLE_MAX_COLS;
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->right = right;
}

/* Append a row of t->ncols cells (NULL: empty), copied. */
static void table_add_row(struct table *t, const char *const *cells)
{
	unsigned int c;

	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **cell = realloc(t->cell, cap * t->ncols * sizeof(*cell));

		if (!cell) {
			simfab_err("out of memory");
			exit(SIMFAB_FAIL);
		}
		t->cell = cell;
		t->cap = cap;
	}
	for (c = 0; c < t->ncols; c++)
		t->cell[t->nrows * t->ncols + c] = simfab_strdup(cells[c] ? cells[c] : "");
	t->nrows++;
}

/* Append a row given as t->ncols string (const char *) arguments. */
static void table_add(struct table *t, ...)
{
	const char *cells[TABLE_MAX_COLS];
	unsigned int c;
	va_list ap;

	va_start(ap, t);
	for (c = 0; c < t->ncols; c++)
		cells[c] = va_arg(ap, const char *);
	va_end(ap);
	table_add_row(t, cells);
}

/* Print the rows, each column padded to its widest cell. */
static void table_print(const struct table *t, FILE *out)
{
	size_t w[TABLE_MAX_COLS] = {0};
	unsigned int c, last;
	size_t r;

	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			size_t n = strlen(t->cell[r * t->ncols + c]);

			if (n > w[c])
				w[c] = n;
		}
	}
	for (r = 0; r < t->nrows; r++) {
		char **row = &t->cell[r * t->ncols];

		for (last = t->ncols; last > 0 && !row[last - 1][0]; last--)
			;
		for (c = 0; c < last; c++) {
			const char *sep = c + 1 < last ? "  " : "";

			if (t->right & (1ull << c))
				fprintf(out, "%*s%s", (int)w[c], row[c], sep);
			else if (c + 1 < last)
				fprintf(out, "%-*s%s", (int)w[c], row[c], sep);
			else
				fputs(row[c], out);
		}
		fputc('\n', out);
	}
}

/* Free the cells; the table can be initialized again. */
static void table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cell[i]);
	free(t->cell);
	memset(t, 0, sizeof(*t));
}

/* ---- fabric access ---- */

/* Fabric names end up in /dev/shm file names: 1-31 characters of [A-Za-z0-9_-]. */
static bool simfab_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= SF_NAME_MAX)
		return false;
	for (; *s; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	}
	return true;
}

/*
 * simfab_attach - attach the fabric (creating it if needed). Called by every command
 * that reads or changes a fabric, after it checked its arguments. Returns the fabric, or
 * NULL after printing why.
 */
static struct sf_fabric *simfab_attach(struct simfab *sf)
{
	if (sf->fab)
		return sf->fab;
	sf->fab = sf_get();
	if (!sf->fab) {
		int err = errno;

		simfab_err("cannot attach fabric '%s': %s%s", sf->name, strerror(err),
			   err == EPROTO ? " ('simfab reset' recreates it)" : "");
		return NULL;
	}
	return sf->fab;
}

/* Device index by name, or -1 after printing that there is none. */
static int simfab_dev(struct simfab *sf, const char *name)
{
	int dev = sf_dev_by_name(sf->fab, name);

	if (dev < 0)
		simfab_err("fabric '%s' has no device '%s' (see 'simfab devices')", sf->name, name);
	return dev;
}

/* Snapshot of the tables that change at run time, copied under the fabric lock. */
struct simfab_snap {
	struct sf_proc *procs;
	struct sf_qp *qps;
	struct sf_group *groups;
	struct sf_join *joins;
};

/*
 * simfab_snap_take - copy the process, QP, group and join tables under the lock, so
 * that printing (and /proc lookups) happen without holding it. Exits on ENOMEM.
 */
static void simfab_snap_take(struct sf_fabric *fab, struct simfab_snap *s)
{
	s->procs = simfab_alloc(sizeof(fab->procs));
	s->qps = simfab_alloc(sizeof(fab->qps));
	s->groups = simfab_alloc(sizeof(fab->groups));
	s->joins = simfab_alloc(sizeof(fab->joins));
	sf_lock(fab);
	memcpy(s->procs, (const void *)fab->procs, sizeof(fab->procs));
	memcpy(s->qps, (const void *)fab->qps, sizeof(fab->qps));
	memcpy(s->groups, (const void *)fab->groups, sizeof(fab->groups));
	memcpy(s->joins, (const void *)fab->joins, sizeof(fab->joins));
	sf_unlock(fab);
}

static void simfab_snap_free(struct simfab_snap *s)
{
	free(s->procs);
	free(s->qps);
	free(s->groups);
	free(s->joins);
}

/* "1234", or "1234 (dead)" when that process is gone (objects awaiting reclamation). */
static void simfab_pid_str(const struct simfab_snap *s, int32_t pid, char *buf, size_t len)
{
	uint64_t start = 0;
	unsigned int i;

	for (i = 0; i < SF_MAX_PROCS; i++) {
		if (s->procs[i].pid == pid) {
			start = s->procs[i].start_time;
			break;
		}
	}
	snprintf(buf, len, "%d%s", pid, sf_pid_alive(pid, start) ? "" : " (dead)");
}

/* ---- names of enumerations ---- */

static const char *simfab_link_str(uint32_t link)
{
	return link == SF_LINK_IB ? "InfiniBand" : link == SF_LINK_ETH ? "Ethernet" : "?";
}

static const char *simfab_port_state_str(uint32_t state)
{
	static const char *const names[] = {
		[IBV_PORT_NOP] = "NOP",	      [IBV_PORT_DOWN] = "DOWN",
		[IBV_PORT_INIT] = "INIT",     [IBV_PORT_ARMED] = "ARMED",
		[IBV_PORT_ACTIVE] = "ACTIVE", [IBV_PORT_ACTIVE_DEFER] = "ACTIVE_DEFER",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

static const char *simfab_qp_state_str(uint32_t state)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",	   [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return state < sizeof(names) / sizeof(names[0]) && names[state] ? names[state] : "?";
}

static const char *simfab_gid_type_str(uint32_t type)
{
	switch (type) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	}
	return "?";
}

static const char *simfab_gid_str(const union ibv_gid *gid, char *buf)
{
	return inet_ntop(AF_INET6, gid->raw, buf, INET6_ADDRSTRLEN);
}

/* "a.b.c.d/len", or "-" without an address. */
static const char *simfab_ipv4_str(const struct sf_dev *d, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN];

	if (!d->ipv4)
		return "-";
	inet_ntop(AF_INET, &d->ipv4, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, d->ipv4_prefix);
	return buf;
}

/* ---- commands ---- */

/*
 * simfab devices - one row per device: segment, link layer, port state (REMOVED after
 * an injected removal), LID, IPv4, MTU, NUMA node, QPs, then the GID table one entry per
 * line.
 */
static int cmd_devices(struct simfab *sf, int argc, char **argv)
{
	struct sf_fabric *fab;
	struct simfab_snap snap;
	struct table t;
	uint32_t i, q, g;

	(void)argv;
	if (argc != 1)
		return simfab_bad_usage("devices takes no arguments");
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	if (!fab->ndevs) {
		printf("no devices on fabric '%s'\n", sf->name);
		return SIMFAB_OK;
	}
	simfab_snap_take(fab, &snap);

	table_init(&t, 10, 1ull << 4 | 1ull << 6 | 1ull << 7 | 1ull << 8);
	table_add(&t, "DEVICE", "SEGMENT", "LINK", "STATE", "LID", "IPV4", "MTU", "NUMA", "QPS",
		  "GIDS");
	for (i = 0; i < fab->ndevs; i++) {
		const struct sf_dev *d = &fab->devs[i];
		char lid[16], ip[32], mtu[16], numa[16], nqp[16], gid[80], a[INET6_ADDRSTRLEN];
		uint32_t state = atomic_load_explicit(&d->port_state, memory_order_relaxed);
		unsigned int qps = 0;
		bool first = true;

		for (q = 0; q < SF_MAX_QPS; q++) {
			if (snap.qps[q].own.pid && snap.qps[q].dev == i)
				qps++;
		}
		if (d->link == SF_LINK_IB)
			snprintf(lid, sizeof(lid), "%u", d->lid);
		else
			snprintf(lid, sizeof(lid), "-");
		snprintf(mtu, sizeof(mtu), "%u", sf_mtu_bytes(d->active_mtu));
		snprintf(numa, sizeof(numa), "%u", d->numa_node);
		snprintf(nqp, sizeof(nqp), "%u", qps);
		for (g = 0; g < SF_GID_MAX; g++) {
			if (!d->gids[g].valid)
				continue;
			snprintf(gid, sizeof(gid), "%u: %s %s", g,
				 simfab_gid_str(&d->gids[g].gid, a),
				 simfab_gid_type_str(d->gids[g].type));
			if (first)
				table_add(&t, d->name, fab->segs[d->seg].name,
					  simfab_link_str(d->link),
					  d->removed ? "REMOVED" : simfab_port_state_str(state),
					  lid, simfab_ipv4_str(d, ip, sizeof(ip)), mtu, numa, nqp,
					  gid);
			else
				table_add(&t, "", "", "", "", "", "", "", "", "", gid);
			first = false;
		}
		if (first)
			table_add(&t, d->name, fab->segs[d->seg].name, simfab_link_str(d->link),
				  d->removed ? "REMOVED" : simfab_port_state_str(state), lid,
				  simfab_ipv4_str(d, ip, sizeof(ip)), mtu, numa, nqp, "-");
	}
	table_print(&t, stdout);
	table_free(&t);
	simfab_snap_free(&snap);
	return SIMFAB_OK;
}

/* One member row of `simfab groups`: an attached QP or an rdma_cm join. */
struct simfab_member {
	uint32_t join; /* 0: attached QP, 1: join */
	uint32_t dev;
	uint32_t key; /* QPN, or 0 full / 1 send-only */
	int32_t pid;
	uint32_t index; /* into the snapshot's qps or joins */
};

/* Members in order: attached QPs, then joins; each by device, QPN or type, pid. */
static int simfab_member_cmp(const void *a, const void *b)
{
	const struct simfab_member *x = a, *y = b;

	if (x->join != y->join)
		return x->join < y->join ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Groups in order of segment, then MGID bytes. `arg` is the snapshot's group table. */
static int simfab_group_cmp(const void *a, const void *b, void *arg)
{
	const struct sf_group *groups = arg;
	const struct sf_group *x = &groups[*(const uint32_t *)a];
	const struct sf_group *y = &groups[*(const uint32_t *)b];

	if (x->seg != y->seg)
		return x->seg < y->seg ? -1 : 1;
	return memcmp(x->mgid.raw, y->mgid.raw, sizeof(x->mgid.raw));
}

/*
 * simfab_group_members - the attached QPs and the live joins of snapshot group `gi`,
 * sorted, into `m` (room for SF_GROUP_SLOTS + SF_MAX_JOINS). Returns how many.
 */
static size_t simfab_group_members(const struct simfab_snap *snap, uint32_t gi,
				   struct simfab_member *m)
{
	const struct sf_group *g = &snap->groups[gi];
	uint32_t nslots = atomic_load_explicit(&g->nslots, memory_order_relaxed);
	size_t n = 0;
	uint32_t s, j;

	for (s = 0; s < nslots && s < SF_GROUP_SLOTS; s++) {
		uint32_t slot = atomic_load_explicit(&g->slots[s], memory_order_relaxed);
		const struct sf_qp *qp;

		if (!slot || slot > SF_MAX_QPS)
			continue;
		qp = &snap->qps[slot - 1];
		m[n++] = (struct simfab_member){0, qp->dev, qp->qpn, qp->own.pid, slot - 1};
	}
	for (j = 0; j < SF_MAX_JOINS; j++) {
		const struct sf_join *jn = &snap->joins[j];
		uint32_t state = atomic_load_explicit(&jn->state, memory_order_relaxed);

		if (!jn->own.pid || state == SF_JOIN_FREE || jn->group != gi)
			continue;
		m[n++] = (struct simfab_member){1, jn->dev, jn->send_only ? 1 : 0, jn->own.pid, j};
	}
	qsort(m, n, sizeof(*m), simfab_member_cmp);
	return n;
}

/*
 * simfab groups - the multicast groups by segment and MGID: segment, MGID and MLID (IB)
 * on the first row of each, then one row per attached QP (device, QPN, QP state, owner
 * pid) and per rdma_cm join (device, full or send-only, active or error, owner pid).
 */
static int cmd_groups(struct simfab *sf, int argc, char **argv)
{
	struct simfab_member *members;
	struct sf_fabric *fab;
	struct simfab_snap snap;
	uint32_t *order, gi;
	size_t ngroups = 0, i, k, n;
	struct table t;

	(void)argv;
	if (argc != 1)
		return simfab_bad_usage("groups takes no arguments");
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	simfab_snap_take(fab, &snap);
	members = simfab_alloc((SF_GROUP_SLOTS + SF_MAX_JOINS) * sizeof(*members));
	order = simfab_alloc(SF_MAX_GROUPS * sizeof(*order));
	for (gi = 0; gi < SF_MAX_GROUPS; gi++) {
		if (atomic_load_explicit(&snap.groups[gi].in_use, memory_order_relaxed))
			order[ngroups++] = gi;
	}
	qsort_r(order, ngroups, sizeof(*order), simfab_group_cmp, snap.groups);

	table_init(&t, 9, 0);
	table_add(&t, "SEGMENT", "MGID", "MLID", "MEMBER", "DEVICE", "QPN", "TYPE", "STATE", "PID");
	for (i = 0; i < ngroups; i++) {
		const struct sf_group *g = &snap.groups[order[i]];
		char mgid[INET6_ADDRSTRLEN], mlid[16], qpn[16], pid[32];
		const char *seg = g->seg < fab->nsegs ? fab->segs[g->seg].name : "?";

		simfab_gid_str(&g->mgid, mgid);
		if (g->seg < fab->nsegs && fab->segs[g->seg].link == SF_LINK_IB)
			snprintf(mlid, sizeof(mlid), "0x%04x", g->mlid);
		else
			snprintf(mlid, sizeof(mlid), "-");
		n = simfab_group_members(&snap, order[i], members);
		if (!n)
			table_add(&t, seg, mgid, mlid, "-", "", "", "", "", "");
		for (k = 0; k < n; k++) {
			const struct simfab_member *m = &members[k];
			const char *dev = m->dev < fab->ndevs ? fab->devs[m->dev].name : "?";
			const char *gseg = k ? "" : seg, *gmgid = k ? "" : mgid,
				   *gmlid = k ? "" : mlid;

			simfab_pid_str(&snap, m->pid, pid, sizeof(pid));
			if (!m->join) {
				uint32_t st = atomic_load_explicit(&snap.qps[m->index].state,
								   memory_order_relaxed);

				snprintf(qpn, sizeof(qpn), "0x%06x", m->key);
				table_add(&t, gseg, gmgid, gmlid, "qp", dev, qpn, "-",
					  simfab_qp_state_str(st), pid);
			} else {
				uint32_t st = atomic_load_explicit(&snap.joins[m->index].state,
								   memory_order_relaxed);

				table_add(&t, gseg, gmgid, gmlid, "join", dev, "-",
					  m->key ? "send-only" : "full",
					  st == SF_JOIN_ACTIVE ? "active" : "error", pid);
			}
		}
	}
	if (ngroups)
		table_print(&t, stdout);
	else
		printf("no multicast groups on fabric '%s'\n", sf->name);
	table_free(&t);
	free(order);
	free(members);
	simfab_snap_free(&snap);
	return SIMFAB_OK;
}

/* The counters of struct sf_counters, in struct order. */
/* clang-format off */
#define SIMFAB_CTR(f) { #f, offsetof(struct sf_counters, f) }
/* clang-format on */
static const struct {
	const char *name;
	size_t off;
} simfab_counters[] = {
	SIMFAB_CTR(xmit_pkts),	SIMFAB_CTR(xmit_bytes),	   SIMFAB_CTR(rcv_pkts),
	SIMFAB_CTR(rcv_bytes),	SIMFAB_CTR(out_of_buffer), SIMFAB_CTR(qkey_viol),
	SIMFAB_CTR(sim_loss),	SIMFAB_CTR(port_down),	   SIMFAB_CTR(no_member),
	SIMFAB_CTR(cq_overrun), SIMFAB_CTR(len_err),	   SIMFAB_CTR(prot_err),
	SIMFAB_CTR(mtu_drop),	SIMFAB_CTR(qp_not_ready),
};
#undef SIMFAB_CTR

#define SIMFAB_NCOUNTERS (sizeof(simfab_counters) / sizeof(simfab_counters[0]))

/* Counter c of port `dev`: exited processes' plus every live process's block. */
static uint64_t simfab_counter(struct sf_fabric *fab, uint32_t dev, unsigned int c)
{
	struct sf_counters sum;
	const _Atomic uint64_t *p;

	sf_counters_read(fab, dev, &sum);
	p = (const _Atomic uint64_t *)((const char *)&sum + simfab_counters[c].off);
	return atomic_load_explicit(p, memory_order_relaxed);
}

/* Print s as a JSON string. */
static void simfab_json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

/*
 * simfab counters [DEV] [--json] - per-port counters. Text: one row per counter, one
 * column per device. JSON: an object keyed by device name, each an object of counters.
 */
static int cmd_counters(struct simfab *sf, int argc, char **argv)
{
	const char *cells[TABLE_MAX_COLS];
	char val[SF_MAX_DEVS][24];
	const char *dev_name = NULL;
	struct table t;
	bool json = false;
	uint32_t first = 0, end, i;
	struct sf_fabric *fab;
	unsigned int c;
	int k, dev;

	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (argv[k][0] == '-')
			return simfab_bad_usage("counters: unknown option '%s'", argv[k]);
		else if (!dev_name)
			dev_name = argv[k];
		else
			return simfab_bad_usage("counters takes at most one device");
	}
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	if (!fab->ndevs && !json) {
		printf("no devices on fabric '%s'\n", sf->name);
		return SIMFAB_OK;
	}
	end = fab->ndevs;
	if (dev_name) {
		dev = simfab_dev(sf, dev_name);
		if (dev < 0)
			return SIMFAB_FAIL;
		first = (uint32_t)dev;
		end = first + 1;
	}

	if (json) {
		fputs("{\n", stdout);
		for (i = first; i < end; i++) {
			fputs("  ", stdout);
			simfab_json_str(stdout, fab->devs[i].name);
			fputs(": {", stdout);
			for (c = 0; c < SIMFAB_NCOUNTERS; c++)
				printf("%s\"%s\": %llu", c ? ", " : "", simfab_counters[c].name,
				       (unsigned long long)simfab_counter(fab, i, c));
			printf("}%s\n", i + 1 < end ? "," : "");
		}
		fputs("}\n", stdout);
		return SIMFAB_OK;
	}

	table_init(&t, end - first + 1, ~1ull);
	cells[0] = "COUNTER";
	for (i = first; i < end; i++)
		cells[1 + i - first] = fab->devs[i].name;
	table_add_row(&t, cells);
	for (c = 0; c < SIMFAB_NCOUNTERS; c++) {
		cells[0] = simfab_counters[c].name;
		for (i = first; i < end; i++) {
			snprintf(val[i - first], sizeof(val[0]), "%llu",
				 (unsigned long long)simfab_counter(fab, i, c));
			cells[1 + i - first] = val[i - first];
		}
		table_add_row(&t, cells);
	}
	table_print(&t, stdout);
	table_free(&t);
	return SIMFAB_OK;
}

/*
 * simfab_dev_arg - the device named by argv[1] of port/reregister/remove, after checking
 * the argument count (nargs after the command) and that the device was not removed.
 * Returns the index, or -1 with the exit status in *ret.
 */
static int simfab_dev_arg(struct simfab *sf, int argc, char **argv, int nargs, int *ret)
{
	int dev;

	if (argc != nargs + 1) {
		*ret = simfab_bad_usage("usage: simfab %s DEV%s", argv[0],
					nargs == 2 ? " down|up" : "");
		return -1;
	}
	*ret = SIMFAB_FAIL;
	if (!simfab_attach(sf))
		return -1;
	dev = simfab_dev(sf, argv[1]);
	if (dev < 0)
		return -1;
	if (sf->fab->devs[dev].removed) {
		simfab_err("%s %s: the device was removed ('simfab reset' recreates the fabric)",
			   argv[0], argv[1]);
		return -1;
	}
	*ret = SIMFAB_OK;
	return dev;
}

/* Report a failed fault injection: 0 → OK, -errno → message and failure status. */
static int simfab_result(const char *what, const char *obj, int err)
{
	if (err >= 0)
		return SIMFAB_OK;
	simfab_err("%s %s: %s", what, obj, strerror(-err));
	return SIMFAB_FAIL;
}

/* simfab port DEV down|up */
static int cmd_port(struct simfab *sf, int argc, char **argv)
{
	bool up;
	int dev, ret;

	if (argc == 3 && strcmp(argv[2], "down") && strcmp(argv[2], "up"))
		return simfab_bad_usage("port: state must be 'down' or 'up', not '%s'", argv[2]);
	dev = simfab_dev_arg(sf, argc, argv, 2, &ret);
	if (dev < 0)
		return ret;
	up = !strcmp(argv[2], "up");
	ret = simfab_result(up ? "port up" : "port down", argv[1],
			    sf_port_set(sf->fab, (uint32_t)dev, up));
	/* ports/1/state in the simulated sysfs follows at once. */
	sf_sysfs_refresh(sf->fab, true);
	return ret;
}

/* simfab reregister DEV */
static int cmd_reregister(struct simfab *sf, int argc, char **argv)
{
	int dev, ret;

	dev = simfab_dev_arg(sf, argc, argv, 1, &ret);
	if (dev < 0)
		return ret;
	if (sf->fab->devs[dev].link != SF_LINK_IB) {
		simfab_err("reregister %s: client re-register is an IB subnet manager event; %s "
			   "is an Ethernet device",
			   argv[1], argv[1]);
		return SIMFAB_FAIL;
	}
	return simfab_result("reregister", argv[1], sf_client_reregister(sf->fab, (uint32_t)dev));
}

/* simfab remove DEV */
static int cmd_remove(struct simfab *sf, int argc, char **argv)
{
	int dev, ret;

	dev = simfab_dev_arg(sf, argc, argv, 1, &ret);
	if (dev < 0)
		return ret;
	ret = simfab_result("remove", argv[1], sf_device_remove(sf->fab, (uint32_t)dev));
	sf_sysfs_refresh(sf->fab, true);
	return ret;
}

/* simfab loss SEGMENT P: P in [0, 1], stored in parts per million. */
static int cmd_loss(struct simfab *sf, int argc, char **argv)
{
	struct sf_fabric *fab;
	uint32_t s, ppm;
	char *end;
	double p;

	if (argc != 3)
		return simfab_bad_usage("usage: simfab loss SEGMENT PROBABILITY");
	errno = 0;
	p = strtod(argv[2], &end);
	if (errno || end == argv[2] || *end || !(p >= 0.0 && p <= 1.0))
		return simfab_bad_usage("loss: '%s' is not a probability between 0 and 1", argv[2]);
	ppm = (uint32_t)(p * SIMFAB_PPM + 0.5);
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	for (s = 0; s < fab->nsegs; s++) {
		if (!strcmp(fab->segs[s].name, argv[1]))
			break;
	}
	if (s == fab->nsegs) {
		simfab_err("fabric '%s' has no segment '%s' (see 'simfab topology')", sf->name,
			   argv[1]);
		return SIMFAB_FAIL;
	}
	return simfab_result("loss", argv[1], sf_loss_set(fab, s, ppm));
}

/* simfab qp DEV QPN sq-hang on|off (QPN decimal or 0x hex, as `bcom channels` prints it) */
static int cmd_qp(struct simfab *sf, int argc, char **argv)
{
	unsigned long qpn;
	char *end;
	int dev, ret;

	if (argc != 5)
		return simfab_bad_usage("usage: simfab qp DEV QPN sq-hang on|off");
	errno = 0;
	qpn = strtoul(argv[2], &end, 0);
	if (errno || end == argv[2] || *end || qpn > 0xffffff)
		return simfab_bad_usage("qp: '%s' is not a queue pair number (24 bits)", argv[2]);
	if (strcmp(argv[3], "sq-hang"))
		return simfab_bad_usage("qp: unknown fault '%s' (sq-hang)", argv[3]);
	if (strcmp(argv[4], "on") && strcmp(argv[4], "off"))
		return simfab_bad_usage("qp: sq-hang must be 'on' or 'off', not '%s'", argv[4]);
	if (!simfab_attach(sf))
		return SIMFAB_FAIL;
	dev = simfab_dev(sf, argv[1]);
	if (dev < 0)
		return SIMFAB_FAIL;
	ret = sf_sq_hang_set(sf->fab, (uint32_t)dev, (uint32_t)qpn, !strcmp(argv[4], "on"));
	if (ret == -ENOENT) {
		simfab_err("qp %s %s: no such queue pair on %s", argv[1], argv[2], argv[1]);
		return SIMFAB_FAIL;
	}
	return simfab_result("qp", argv[1], ret);
}

#define SIMFAB_CAP_SLOTS 1024
#define SIMFAB_CAP_SNAP	 65535

static volatile sig_atomic_t simfab_cap_stop;

static void simfab_cap_signal(int sig)
{
	(void)sig;
	simfab_cap_stop = 1;
}

/* Write one record as an Enhanced Packet Block on interface ifid. */
static int simfab_cap_write(int fd, uint32_t ifid, const struct sf_cap_rec *r)
{
	static uint8_t blk[64 + CAP_FRAME_HDR_MAX + SF_CAP_DATA_MAX + CAP_FRAME_TRAILER_MAX + 256];
	struct cap_pkt p = {0};
	uint32_t n, wire;

	p.ib = r->ib;
	p.hdr = r->hdr;
	p.payload = r->data;
	p.len = r->len;
	p.caplen = r->caplen;
	p.src_qpn = r->src_qpn;
	p.dst_qpn = r->dst_qpn;
	p.qkey = r->qkey;
	p.pkey = r->pkey;
	p.slid = r->slid;
	p.dlid = r->dlid;
	p.has_imm = r->has_imm;
	p.imm = r->imm;
	p.ts_ns = r->ts_ns;
	n = cap_frame_encode(&p, blk + 28, SIMFAB_CAP_SNAP, &wire);
	return pcapng_write_all(fd, blk, pcapng_epb(blk, ifid, r->ts_ns, blk + 28, n, wire, NULL));
}

/* simfab capture FILE [-c N] [DEV...] */
static int cmd_capture(struct simfab *sf, int argc, char **argv)
{
	uint32_t devs = 0, ifid[SF_MAX_DEVS];
	uint64_t count = 0, written = 0;
	struct sf_cap_ring *ring;
	struct sf_fabric *fab;
	const char *file;
	struct sigaction sa;
	uint8_t hb[1024];
	size_t hl;
	int fd, ret = SIMFAB_OK, i = 2, nif = 0;

	if (argc < 2 || argv[1][0] == '-')
		return simfab_bad_usage("usage: simfab capture FILE [-c N] [DEV...]");
	file = argv[1];
	if (argc > 2 && !strcmp(argv[2], "-c")) {
		char *end;

		if (argc < 4)
			return simfab_bad_usage("capture: -c needs a count");
		errno = 0;
		count = strtoull(argv[3], &end, 10);
		if (errno || end == argv[3] || *end || !count || argv[3][0] == '-')
			return simfab_bad_usage("capture: '%s' is not a count", argv[3]);
		i = 4;
	}
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	for (; i < argc; i++) {
		int d = simfab_dev(sf, argv[i]);

		if (d < 0)
			return SIMFAB_FAIL;
		devs |= 1u << d;
	}
	if (!devs)
		devs = fab->ndevs >= 32 ? UINT32_MAX : (1u << fab->ndevs) - 1;
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		simfab_err("capture: %s: %s", file, strerror(errno));
		return SIMFAB_FAIL;
	}
	/* The section header and one interface per captured port, each with its link. */
	hl = pcapng_shb(hb, "simfab");
	for (uint32_t d = 0; d < fab->ndevs; d++) {
		if (!(devs & (1u << d)))
			continue;
		ifid[d] = (uint32_t)nif++;
		hl += pcapng_idb(hb + hl, cap_frame_linktype(fab->devs[d].link == SF_LINK_IB),
				 SIMFAB_CAP_SNAP, fab->devs[d].name);
		if (hl > sizeof(hb) - 128) {
			if (pcapng_write_all(fd, hb, hl))
				goto werr;
			hl = 0;
		}
	}
	if (pcapng_write_all(fd, hb, hl))
		goto werr;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = simfab_cap_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ring = sf_cap_start(fab, SIMFAB_CAP_SLOTS, devs);
	if (!ring) {
		simfab_err("capture: %s",
			   errno == EBUSY ? "another simfab capture is running" : strerror(errno));
		close(fd);
		return SIMFAB_FAIL;
	}
	fprintf(stderr, "simfab: capturing to %s\n", file);
	for (int last = 0;;) {
		struct sf_cap_rec *r;
		bool any = false;

		while ((r = sf_cap_next(ring)) && (!count || written < count)) {
			if (simfab_cap_write(fd, ifid[r->dev], r)) {
				sf_cap_done(ring, r);
				goto werr_stop;
			}
			sf_cap_done(ring, r);
			written++;
			any = true;
		}
		if (last || (count && written >= count))
			break;
		if (simfab_cap_stop) {
			/* Stop recording, then read what delivering processes finished. */
			sf_cap_stop(fab, ring);
			nanosleep(&(struct timespec){0, 20000000}, NULL);
			last = 1;
			continue;
		}
		if (!any)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	if (!simfab_cap_stop)
		sf_cap_stop(fab, ring);
	printf("captured %llu packets, %llu lost (ring full)\n", (unsigned long long)written,
	       (unsigned long long)atomic_load(&ring->lost));
	if (close(fd)) {
		simfab_err("capture: %s: %s", file, strerror(errno));
		return SIMFAB_FAIL;
	}
	return ret;
werr_stop:
	sf_cap_stop(fab, ring);
werr:
	simfab_err("capture: writing %s: %s", file, strerror(errno));
	close(fd);
	return SIMFAB_FAIL;
}

/* simfab reclaim: release the objects of dead processes, print how many processes. */
static int cmd_reclaim(struct simfab *sf, int argc, char **argv)
{
	struct sf_fabric *fab;
	int n;

	(void)argv;
	if (argc != 1)
		return simfab_bad_usage("reclaim takes no arguments");
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	sf_lock(fab);
	/* Attaching (sf_get) already reclaimed once: count both. */
	n = sf_attach_reclaimed() + sf_reclaim_locked(fab);
	sf_unlock(fab);
	if (n < 0)
		return simfab_result("reclaim", sf->name, n);
	printf("reclaimed %d dead process%s\n", n, n == 1 ? "" : "es");
	return SIMFAB_OK;
}

/* simfab reset: unlink the fabric and its object files without attaching it. */
static int cmd_reset(struct simfab *sf, int argc, char **argv)
{
	int ret;

	(void)argv;
	if (argc != 1)
		return simfab_bad_usage("reset takes no arguments");
	ret = sf_reset(sf->name);
	return simfab_result("reset", sf->name, ret);
}

/* Loss in ppm as the shortest decimal probability: 1000 → "0.001". */
static void simfab_loss_str(uint32_t ppm, char *buf, size_t len)
{
	size_t n;

	snprintf(buf, len, "%u.%06u", ppm / SIMFAB_PPM, ppm % SIMFAB_PPM);
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
}

/*
 * simfab_topology_print - a fabric's segments and devices in the SIMFABRIC_TOPOLOGY
 * format, every attribute explicit, so that loading the output rebuilds the same
 * topology. Segment loss is the current setting.
 */
static void simfab_topology_print(const struct sf_fabric *fab, const char *what)
{
	struct table t;
	uint32_t s, i;

	printf("# simfabric topology of %s (format: docs/simfabric.md)\n", what);
	table_init(&t, 6, 0);
	for (s = 0; s < fab->nsegs; s++) {
		const struct sf_segment *seg = &fab->segs[s];
		char name[64], prefix[80], sm[32] = "", loss[48] = "";
		char a[INET6_ADDRSTRLEN];
		uint8_t raw[16] = {0};
		uint32_t ppm = atomic_load_explicit(&seg->loss_ppm, memory_order_relaxed);

		snprintf(name, sizeof(name), "segment %s", seg->name);
		if (seg->link == SF_LINK_IB) {
			memcpy(raw, &seg->subnet_prefix, 8);
			snprintf(prefix, sizeof(prefix), "prefix %s",
				 inet_ntop(AF_INET6, raw, a, sizeof(a)));
			for (i = 0; i < fab->ndevs; i++) {
				if (fab->devs[i].seg == s) {
					snprintf(sm, sizeof(sm), "sm %u", fab->devs[i].sm_lid);
					break;
				}
			}
		} else {
			prefix[0] = '\0';
		}
		if (ppm) {
			char p[32];

			simfab_loss_str(ppm, p, sizeof(p));
			snprintf(loss, sizeof(loss), "loss %s", p);
		}
		table_add(&t, name, seg->link == SF_LINK_IB ? "ib" : "eth", prefix, sm, loss, "");
	}
	table_print(&t, stdout);
	table_free(&t);

	table_init(&t, 9, 0);
	for (i = 0; i < fab->ndevs; i++) {
		const struct sf_dev *d = &fab->devs[i];
		char name[64], seg[64], addr[48], ip[48], guid[40], numa[24], mtu[24], pkey[64];
		char ipb[32], ip6[INET6_ADDRSTRLEN];

		snprintf(name, sizeof(name), "device %s", d->name);
		snprintf(seg, sizeof(seg), "segment %s", fab->segs[d->seg].name);
		if (d->link == SF_LINK_IB)
			snprintf(addr, sizeof(addr), "lid %u", d->lid);
		else
			snprintf(addr, sizeof(addr), "mac %02x:%02x:%02x:%02x:%02x:%02x", d->mac[0],
				 d->mac[1], d->mac[2], d->mac[3], d->mac[4], d->mac[5]);
		if (d->ipv4)
			snprintf(ip, sizeof(ip), "ipv4 %s", simfab_ipv4_str(d, ipb, sizeof(ipb)));
		else
			ip[0] = '\0';
		snprintf(guid, sizeof(guid), "guid 0x%016llx",
			 (unsigned long long)be64toh(d->node_guid));
		snprintf(numa, sizeof(numa), "numa %u", d->numa_node);
		snprintf(mtu, sizeof(mtu), "mtu %u", sf_mtu_bytes(d->active_mtu));
		if (d->link == SF_LINK_IB)
			snprintf(pkey, sizeof(pkey), "pkey 0x%04x", d->pkey);
		else if (d->ipv6_prefix)
			snprintf(pkey, sizeof(pkey), "ipv6 %s/%u",
				 inet_ntop(AF_INET6, d->ipv6, ip6, sizeof(ip6)), d->ipv6_prefix);
		else
			snprintf(pkey, sizeof(pkey), "ipv6 none");
		table_add(&t, name, seg, addr, ip, guid, numa, mtu, pkey,
			  d->removed ? "# removed" : "");
	}
	table_print(&t, stdout);
	table_free(&t);
}

/* simfab topology [FILE] */
static int cmd_topology(struct simfab *sf, int argc, char **argv)
{
	struct sf_fabric *fab;
	char what[SF_NAME_MAX + 16];
	char err[512];
	int ret;

	if (argc > 2)
		return simfab_bad_usage("usage: simfab topology [FILE]");
	if (argc == 2) {
		/* Only the segment and device tables are filled; the rest stays untouched. */
		fab = simfab_alloc(sizeof(*fab));
		ret = sf_topology_load(fab, argv[1], err, sizeof(err));
		if (ret) {
			simfab_err("%s", err);
			free(fab);
			return SIMFAB_FAIL;
		}
		simfab_topology_print(fab, argv[1]);
		free(fab);
		return SIMFAB_OK;
	}
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	snprintf(what, sizeof(what), "fabric %s", sf->name);
	simfab_topology_print(fab, what);
	return SIMFAB_OK;
}

/*
 * netns NS: the devices' network interfaces in a new namespace (netns.c); with
 * --delete, remove the namespace.
 */
static int cmd_netns(struct simfab *sf, int argc, char **argv)
{
	char err[256];
	bool del = argc == 3 && !strcmp(argv[2], "--delete");

	if (argc != 2 && !del)
		return simfab_bad_usage("usage: simfab netns NS [--delete]");
	if (!simfab_name_ok(argv[1]))
		return simfab_bad_usage("bad namespace name '%s' (1-%d characters of A-Z a-z 0-9 _ -)",
					argv[1], SF_NAME_MAX - 1);
	if (del) {
		if (sf_netns_delete(argv[1], err, sizeof(err))) {
			simfab_err("netns %s: %s", argv[1], err);
			return SIMFAB_FAIL;
		}
		return SIMFAB_OK;
	}
	if (!simfab_attach(sf))
		return SIMFAB_FAIL;
	if (sf_netns_create(sf->fab, argv[1], stdout, err, sizeof(err))) {
		simfab_err("netns %s: %s", argv[1], err);
		return SIMFAB_FAIL;
	}
	return SIMFAB_OK;
}

/*
 * exec [-n|--netns NS] CMD [ARG...]: exec CMD with the /dev/infiniband nodes of the
 * fabric's devices in a private mount namespace, in network namespace NS if given
 * (devns.c).
 */
static int cmd_exec(struct simfab *sf, int argc, char **argv)
{
	const char *ns = NULL;
	char err[512];
	int i = 1;

	if (i < argc && (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--netns"))) {
		if (i + 1 >= argc)
			return simfab_bad_usage("usage: simfab exec [-n NS] COMMAND [ARGS...]");
		ns = argv[i + 1];
		if (!simfab_name_ok(ns))
			return simfab_bad_usage(
				"bad namespace name '%s' (1-%d characters of A-Z a-z 0-9 _ -)", ns,
				SF_NAME_MAX - 1);
		i += 2;
	}
	if (i >= argc)
		return simfab_bad_usage("usage: simfab exec [-n NS] COMMAND [ARGS...]");
	if (!simfab_attach(sf))
		return SIMFAB_FAIL;
	fflush(stdout);
	sf_devns_exec(sf->fab, ns, argv + i, err, sizeof(err));
	if (ns)
		simfab_err("exec -n %s: %s", ns, err);
	else
		simfab_err("exec: %s", err);
	return SIMFAB_FAIL;
}

static int cmd_help(struct simfab *sf, int argc, char **argv)
{
	(void)sf;
	(void)argc;
	(void)argv;
	fputs(simfab_usage, stdout);
	return SIMFAB_OK;
}

/*
 * listeners: the rdma_cm UD listeners (SIDR services, rdmacm_sidr.c): port space, port,
 * address (IPv4 or "*"), device ("*" for a wildcard bind) and owner pid.
 */
static int cmd_listeners(struct simfab *sf, int argc, char **argv)
{
	struct sf_fabric *fab;
	struct table t;
	int n = 0;

	(void)argv;
	if (argc != 1)
		return simfab_bad_usage("listeners takes no arguments");
	fab = simfab_attach(sf);
	if (!fab)
		return SIMFAB_FAIL;
	table_init(&t, 5, 1ull << 1);
	table_add(&t, "PS", "PORT", "ADDRESS", "DEVICE", "PID");
	sf_lock(fab);
	for (int i = 0; i < SF_MAX_LISTENS; i++) {
		const struct sf_listen *l = &fab->listens[i];
		const char *ps = l->ps == RDMA_PS_IPOIB ? "ipoib"
				 : l->ps == RDMA_PS_UDP ? "udp"
							: "?";
		const char *dev = l->dev < 0			  ? "*"
				  : (uint32_t)l->dev < fab->ndevs ? fab->devs[l->dev].name
								  : "?";
		char port[8], addr[INET_ADDRSTRLEN], pid[32];

		if (!l->own.pid)
			continue;
		snprintf(port, sizeof(port), "%u", l->port);
		if (l->ipv4)
			inet_ntop(AF_INET, &l->ipv4, addr, sizeof(addr));
		else
			snprintf(addr, sizeof(addr), "*");
		snprintf(pid, sizeof(pid), "%d%s", l->own.pid,
			 sf_pid_alive(l->own.pid, 0) ? "" : " (dead)");
		table_add(&t, ps, port, addr, dev, pid);
		n++;
	}
	sf_unlock(fab);
	if (n)
		table_print(&t, stdout);
	table_free(&t);
	return 0;
}

static const struct simfab_cmd simfab_cmds[] = {
	{"devices", cmd_devices},
	{"groups", cmd_groups},
	{"listeners", cmd_listeners},
	{"counters", cmd_counters},
	{"port", cmd_port},
	{"reregister", cmd_reregister},
	{"remove", cmd_remove},
	{"loss", cmd_loss},
	{"qp", cmd_qp},
	{"capture", cmd_capture},
	{"reclaim", cmd_reclaim},
	{"reset", cmd_reset},
	{"netns", cmd_netns},
	{"exec", cmd_exec},
	{"topology", cmd_topology},
	{"help", cmd_help},
};

/*
 * main - options (-f, -h) up to the command word, then the command with its own
 * arguments. The fabric name is checked here; each command checks its arguments before
 * attaching the fabric, so bad usage never creates one. Returns the exit status.
 */
int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"fabric", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct simfab sf = {0};
	const char *fabric = NULL;
	unsigned int i;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "+f:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			fabric = optarg;
			break;
		case 'h':
			fputs(simfab_usage, stdout);
			return SIMFAB_OK;
		default:
			fputs("Try 'simfab help'.\n", stderr);
			return SIMFAB_USAGE;
		}
	}
	if (optind >= argc)
		return simfab_bad_usage("missing command");

	if (fabric) {
		if (setenv("SIMFABRIC", fabric, 1)) {
			simfab_err("setenv: %s", strerror(errno));
			return SIMFAB_FAIL;
		}
	} else {
		fabric = getenv("SIMFABRIC");
		if (!fabric || !*fabric)
			fabric = SIMFAB_DEFAULT_FABRIC;
	}
	for (i = 0; i < sizeof(simfab_cmds) / sizeof(simfab_cmds[0]); i++) {
		if (!strcmp(argv[optind], simfab_cmds[i].name))
			break;
	}
	if (i == sizeof(simfab_cmds) / sizeof(simfab_cmds[0]))
		return simfab_bad_usage("unknown command '%s'", argv[optind]);
	if (simfab_cmds[i].run != cmd_help && !simfab_name_ok(fabric))
		return simfab_bad_usage("bad fabric name '%s' (1-%d characters of A-Z a-z 0-9 _ -)",
					fabric, SF_NAME_MAX - 1);
	sf.name = fabric;

	ret = simfab_cmds[i].run(&sf, argc - optind, argv + optind);
	if (fflush(stdout) || ferror(stdout)) {
		simfab_err("writing output: %s", strerror(errno));
		return SIMFAB_FAIL;
	}
	return ret;
}
