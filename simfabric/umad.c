// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated libibumad.so.3 (rdma-core 44's ABI, libibumad.map): the user MAD
 * interface, with the fabric's subnet manager agent (SMA) and subnet administrator (SA)
 * answering in the calling process.
 *
 * What upstream does (rdma-core libibumad/umad.c) and what this does instead:
 *  - CA and port queries read sysfs files (node_type, fw_ver, ports/N/lid, state, rate,
 *    cap_mask, gids/0, pkeys/...). Here the same files of the simulated sysfs tree
 *    (docs/simfabric.md "The simulated sysfs"), found through the simulated
 *    libibverbs' ibdev_path, are read the same way, so ibstat shows what ibv_devinfo
 *    shows.
 *  - umad_open_port opens /dev/infiniband/umadN; MADs are written to and read from it,
 *    agents registered with ioctls. Here the port is one end of a datagram socket pair
 *    (the application's fd: pollable, one MAD per read); the library keeps the other
 *    end. umad_send hands the MAD to the simulated management entity of its destination
 *    at once, and the answer, or the request itself with status ETIMEDOUT when nothing
 *    answers, is queued on the pair for umad_recv (the kernel returns a timed-out send
 *    with that status after timeout_ms x retries; here the answer is immediate).
 *  - Management entities (umad_sm.c; IBA 1.3 ch. 14-15): the SMA of every IB port
 *    (LID-routed SMPs to its LID, directed-route SMPs with hop count 0 to the sender):
 *    NodeInfo, NodeDescription, PortInfo, GUIDInfo, P_KeyTable, Get only; the SA at the
 *    segment's SM LID, QP1: MCMemberRecord Set (join), Delete (leave), Get; PathRecord
 *    Get. Joins go into the fabric's group and join tables, the same that rdma_cm joins
 *    use (one MLID per MGID for both). Anything else answers status 0x000c
 *    (method/attribute not supported). RoCE ports have no SM: their MADs time out.
 *  - Names (umad_str.h) are in umad_str.c, as upstream.
 */
#include <ctype.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>
#include <infiniband/verbs.h>

#include "sf.h"
#include "umad_priv.h"

#define UMAD_EXPORT __attribute__((visibility("default")))

#define MAX_AGENTS UMAD_CA_MAX_AGENTS

struct umad_agent {
	bool used;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint32_t hi_tid; /* what the kernel puts in the top 32 bits of a request's TID */
};

/*
 * The MADs a port holds for umad_recv beyond what its socket pair takes. The kernel
 * queues them on the file's recv_list (drivers/infiniband/core/user_mad.c,
 * queue_packet), not bounded by anything the application sets: a few hundred answers in
 * the socket's buffer would make umad_send fail once an application has sent that many
 * requests without reading (16 000 SA joins at once). Newer kernels stop queueing
 * received MADs at MAX_UMAD_RECV_LIST_SIZE (200 000) and drop the rest; so does this.
 */
#define UMAD_RECV_LIST_MAX 200000

struct umad_held {
	struct umad_held *next;
	size_t len;
	unsigned char data[];
};

/* An open port: the application's fd and the end the answers are written to. */
struct umad_port_sim {
	struct umad_port_sim *next;
	int fd, peer;
	int dev; /* fabric device index */
	struct umad_agent agents[MAX_AGENTS];
	struct umad_held *held, **held_tail; /* FIFO behind the socket's buffer */
	uint32_t nheld;
};

static struct {
	pthread_mutex_t lock;
	struct umad_port_sim *ports;
	uint32_t next_tid;
	int debug;
} U = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_tid = 1};

/* ---- the simulated sysfs (what upstream reads under /sys/class/infiniband) ---- */

/* snprintf into a path buffer; false when the path does not fit. */
static __attribute__((format(printf, 3, 4))) bool pathf(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < len;
}

/*
 * The directory that holds the simulated devices' sysfs directories (the parent of
 * every ibdev_path), in dir; -ENODEV when the fabric has no device.
 */
static int umad_sys_root(char *dir, size_t len)
{
	struct ibv_device **list;
	char *slash;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list || !n) {
		if (list)
			ibv_free_device_list(list);
		return -ENODEV;
	}
	snprintf(dir, len, "%s", list[0]->ibdev_path);
	ibv_free_device_list(list);
	slash = strrchr(dir, '/');
	if (!slash)
		return -ENODEV;
	*slash = '\0';
	return 0;
}

/* One sysfs file's first line, without the newline. */
static int sys_read(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (!pathf(path, sizeof(path), "%s/%s", dir, file))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A number at the start of the file ("4: ACTIVE", "200 Gb/sec", "0x2651e848"). */
static int sys_read_uint(const char *dir, const char *file, unsigned *v)
{
	char buf[64];
	int r = sys_read(dir, file, buf, sizeof(buf));

	if (r)
		return r;
	*v = (unsigned)strtoul(buf, NULL, 0);
	return 0;
}

/* "0002:c903:00a0:b010" → network order. */
static int sys_read_guid(const char *dir, const char *file, __be64 *guid)
{
	unsigned a, b, c, d;
	char buf[64];
	int r = sys_read(dir, file, buf, sizeof(buf));

	if (r)
		return r;
	if (sscanf(buf, "%x:%x:%x:%x", &a, &b, &c, &d) != 4)
		return -EINVAL;
	*guid = htobe64((uint64_t)a << 48 | (uint64_t)b << 32 | (uint64_t)c << 16 | d);
	return 0;
}

/* "fe80:0000:...": eight groups of 16 bits. */
static int sys_read_gid(const char *dir, const char *file, union umad_gid *gid)
{
	unsigned w[8];
	char buf[64];
	int r = sys_read(dir, file, buf, sizeof(buf));

	if (r)
		return r;
	if (sscanf(buf, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3], &w[4], &w[5], &w[6],
		   &w[7]) != 8)
		return -EINVAL;
	for (int i = 0; i < 8; i++) {
		gid->raw[2 * i] = (uint8_t)(w[i] >> 8);
		gid->raw[2 * i + 1] = (uint8_t)w[i];
	}
	return 0;
}

static int digits_only(const struct dirent *d)
{
	const char *p = d->d_name;

	if (!*p)
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	return !*p;
}

/* umad_port_t of port portnum from its ports directory (upstream's get_port). */
static int sim_get_port(const char *ca, const char *ports_dir, int portnum, umad_port_t *port)
{
	char dir[PATH_MAX], pk[PATH_MAX];
	struct dirent **names;
	union umad_gid gid;
	unsigned capmask;
	int n;

	memset(port, 0, sizeof(*port));
	snprintf(port->ca_name, sizeof(port->ca_name), "%s", ca);
	port->portnum = portnum;
	if (!pathf(dir, sizeof(dir), "%s/%d", ports_dir, portnum))
		return -EIO;
	if (sys_read_uint(dir, "lid_mask_count", &port->lmc) ||
	    sys_read_uint(dir, "sm_lid", &port->sm_lid) ||
	    sys_read_uint(dir, "sm_sl", &port->sm_sl) ||
	    sys_read_uint(dir, "lid", &port->base_lid) ||
	    sys_read_uint(dir, "state", &port->state) ||
	    sys_read_uint(dir, "phys_state", &port->phys_state) ||
	    sys_read_uint(dir, "rate", &port->rate) || sys_read_uint(dir, "cap_mask", &capmask))
		return -EIO;
	if (sys_read(dir, "link_layer", port->link_layer, sizeof(port->link_layer)))
		snprintf(port->link_layer, sizeof(port->link_layer), "IB");
	port->capmask = htobe32(capmask);
	if (sys_read_gid(dir, "gids/0", &gid))
		return -EIO;
	port->gid_prefix = gid.global.subnet_prefix;
	port->port_guid = gid.global.interface_id;
	if (!pathf(pk, sizeof(pk), "%s/pkeys", dir))
		return -EIO;
	n = scandir(pk, &names, digits_only, NULL);
	if (n <= 0)
		return -EIO;
	port->pkeys = calloc((size_t)n, sizeof(*port->pkeys));
	for (int i = 0; i < n; i++) {
		unsigned idx = (unsigned)strtoul(names[i]->d_name, NULL, 10), v = 0;

		if (port->pkeys && idx < (unsigned)n && !sys_read_uint(pk, names[i]->d_name, &v))
			port->pkeys[idx] = (uint16_t)v;
		free(names[i]);
	}
	free(names);
	if (!port->pkeys)
		return -ENOMEM;
	port->pkeys_size = (unsigned)n;
	return 0;
}

static void sim_release_ca(umad_ca_t *ca)
{
	for (int i = 0; i < UMAD_CA_MAX_PORTS; i++) {
		if (!ca->ports[i])
			continue;
		free(ca->ports[i]->pkeys);
		free(ca->ports[i]);
		ca->ports[i] = NULL;
	}
}

/* umad_ca_t of a CA by name (upstream's get_ca). */
static int sim_get_ca(const char *name, umad_ca_t *ca)
{
	char root[PATH_MAX], dir[PATH_MAX], ports[PATH_MAX];
	struct dirent **names;
	int n, r;

	memset(ca, 0, sizeof(*ca));
	snprintf(ca->ca_name, sizeof(ca->ca_name), "%s", name);
	r = umad_sys_root(root, sizeof(root));
	if (r)
		return r;
	if (!pathf(dir, sizeof(dir), "%s/%s", root, name))
		return -ENODEV;
	r = sys_read_uint(dir, "node_type", &ca->node_type);
	if (r)
		return r;
	if (sys_read(dir, "fw_ver", ca->fw_ver, sizeof(ca->fw_ver)))
		ca->fw_ver[0] = '\0';
	if (sys_read(dir, "hw_rev", ca->hw_ver, sizeof(ca->hw_ver)))
		ca->hw_ver[0] = '\0';
	if (sys_read(dir, "hca_type", ca->ca_type, sizeof(ca->ca_type)))
		ca->ca_type[0] = '\0';
	r = sys_read_guid(dir, "node_guid", &ca->node_guid);
	if (!r)
		r = sys_read_guid(dir, "sys_image_guid", &ca->system_guid);
	if (r)
		return r;
	if (!pathf(ports, sizeof(ports), "%s/ports", dir))
		return -ENODEV;
	n = scandir(ports, &names, digits_only, alphasort);
	if (n < 0)
		return -ENOENT;
	for (int i = 0; i < n; i++) {
		int p = atoi(names[i]->d_name);

		free(names[i]);
		if (r || p < 0 || p >= UMAD_CA_MAX_PORTS) {
			r = r ? r : -EIO;
			continue;
		}
		ca->ports[p] = calloc(1, sizeof(*ca->ports[p]));
		if (!ca->ports[p]) {
			r = -ENOMEM;
			continue;
		}
		if (sim_get_port(name, ports, p, ca->ports[p])) {
			free(ca->ports[p]->pkeys);
			free(ca->ports[p]);
			ca->ports[p] = NULL;
			r = -EIO;
			continue;
		}
		if (ca->numports < p)
			ca->numports = p;
	}
	free(names);
	if (r)
		sim_release_ca(ca);
	return r;
}

static bool is_ib_link(const umad_port_t *p)
{
	return !strcmp(p->link_layer, "InfiniBand") || !strcmp(p->link_layer, "IB");
}

/*
 * Upstream's resolve_ca_port: port > 0: 1 if that port is an active IB port, 0 if it is
 * an IB port not disabled, -1 otherwise; port 0: the first active IB port (1), else the
 * first IB port that is up (0).
 */
static int sim_resolve_port(const char *name, int *port)
{
	umad_ca_t ca;
	int ret = -1, up = -1;

	if (sim_get_ca(name, &ca))
		return -1;
	if (*port > 0) {
		const umad_port_t *p = *port <= ca.numports ? ca.ports[*port] : NULL;

		if (p && is_ib_link(p))
			ret = p->state == 4 ? 1 : p->phys_state != 3 ? 0 : -1;
		sim_release_ca(&ca);
		return ret;
	}
	for (int i = 0; i <= ca.numports; i++) {
		const umad_port_t *p = ca.ports[i];

		if (!p || !is_ib_link(p))
			continue;
		if (p->state == 4) {
			*port = i;
			ret = 1;
			break;
		}
		if (up < 0 && p->phys_state == 5)
			up = i;
	}
	if (ret < 0 && up >= 0) {
		*port = up;
		ret = 0;
	}
	sim_release_ca(&ca);
	return ret;
}

/*
 * Upstream's resolve_ca_name: a named CA is taken as is (with a port: that port is
 * checked); no name: the first CA (alphabetically) with an active IB port, else the
 * first with an IB port that is up. Returns a malloc'ed name or NULL.
 */
static char *sim_resolve_ca(const char *name, int *port)
{
	struct umad_device_node *list, *node;
	char *found = NULL, *phys = NULL;
	int phys_port = 0;

	if (name && (!port || *port))
		return strdup(name);
	if (name)
		return sim_resolve_port(name, port) < 0 ? NULL : strdup(name);
	list = umad_get_ca_device_list();
	for (node = list; node && !found; node = node->next) {
		int p = port ? *port : 0, t = sim_resolve_port(node->ca_name, &p);

		if (t > 0) {
			found = strdup(node->ca_name);
			if (port)
				*port = p;
		} else if (t == 0 && !phys) {
			phys = strdup(node->ca_name);
			phys_port = p;
		}
	}
	umad_free_ca_device_list(list);
	if (found) {
		free(phys);
		return found;
	}
	if (phys && port)
		*port = phys_port;
	return phys;
}

/* The fabric device of a CA name, or -1. */
static int sim_dev(const char *name)
{
	struct sf_fabric *fab = sf_get();

	return fab && name ? sf_dev_by_name(fab, name) : -1;
}

/* ---- CA and port queries ---- */

UMAD_EXPORT int umad_init(void)
{
	return 0;
}

UMAD_EXPORT int umad_done(void)
{
	return 0;
}

static int ca_name_cmp(const void *a, const void *b)
{
	const struct umad_device_node *const *x = a, *const *y = b;

	return strcmp((*x)->ca_name, (*y)->ca_name);
}

/* Every CA of the simulated sysfs whose node type is 1-3 (CA, switch, router). */
UMAD_EXPORT struct umad_device_node *umad_get_ca_device_list(void)
{
	struct umad_device_node *head = NULL, *tail = NULL;
	char root[PATH_MAX], dir[PATH_MAX];
	struct dirent *e;
	DIR *d;

	errno = 0;
	if (umad_sys_root(root, sizeof(root)))
		return NULL;
	d = opendir(root);
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		struct umad_device_node *node;
		unsigned type;
		size_t len = strlen(e->d_name) + 1;

		if (e->d_name[0] == '.')
			continue;
		if (!pathf(dir, sizeof(dir), "%s/%s", root, e->d_name) ||
		    sys_read_uint(dir, "node_type", &type) || type < 1 || type > 3)
			continue;
		node = calloc(1, sizeof(*node) + len);
		if (!node) {
			umad_free_ca_device_list(head);
			closedir(d);
			errno = ENOMEM;
			return NULL;
		}
		memcpy(node + 1, e->d_name, len);
		node->ca_name = (const char *)(node + 1);
		if (tail)
			tail->next = node;
		else
			head = node;
		tail = node;
	}
	closedir(d);
	umad_sort_ca_device_list(&head, 0);
	errno = 0;
	return head;
}

UMAD_EXPORT void umad_free_ca_device_list(struct umad_device_node *head)
{
	while (head) {
		struct umad_device_node *next = head->next;

		free(head);
		head = next;
	}
}

/* Sort by CA name; size 0: count the list. 0, or EINVAL/ENOMEM (list left as it was). */
UMAD_EXPORT int umad_sort_ca_device_list(struct umad_device_node **head, size_t size)
{
	struct umad_device_node **arr, *node;
	size_t i;

	if (!size)
		for (node = *head; node; node = node->next)
			size++;
	if (size < 2)
		return 0;
	arr = calloc(size, sizeof(*arr));
	if (!arr)
		return ENOMEM;
	for (i = 0, node = *head; i < size; i++, node = node->next) {
		if (!node) {
			free(arr);
			return EINVAL;
		}
		arr[i] = node;
	}
	if (node) {
		free(arr);
		return EINVAL;
	}
	qsort(arr, size, sizeof(*arr), ca_name_cmp);
	for (i = 0; i + 1 < size; i++)
		arr[i]->next = arr[i + 1];
	arr[size - 1]->next = NULL;
	*head = arr[0];
	free(arr);
	return 0;
}

UMAD_EXPORT int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max)
{
	struct umad_device_node *list = umad_get_ca_device_list(), *node;
	int n = 0;

	for (node = list; node && n < max; node = node->next) {
		if (strlen(node->ca_name) >= UMAD_CA_NAME_LEN)
			continue;
		strcpy(cas[n++], node->ca_name);
	}
	umad_free_ca_device_list(list);
	return n;
}

UMAD_EXPORT int umad_get_ca(const char *ca_name, umad_ca_t *ca)
{
	char *name = sim_resolve_ca(ca_name, NULL);
	int r;

	if (!name)
		return -ENODEV;
	r = sim_get_ca(name, ca);
	free(name);
	return r;
}

UMAD_EXPORT int umad_release_ca(umad_ca_t *ca)
{
	if (!ca)
		return -ENODEV;
	sim_release_ca(ca);
	return 0;
}

UMAD_EXPORT int umad_get_port(const char *ca_name, int portnum, umad_port_t *port)
{
	char root[PATH_MAX], dir[PATH_MAX];
	char *name = sim_resolve_ca(ca_name, &portnum);
	int r;

	if (!name)
		return -ENODEV;
	r = umad_sys_root(root, sizeof(root));
	if (!r)
		r = pathf(dir, sizeof(dir), "%s/%s/ports", root, name)
			    ? sim_get_port(name, dir, portnum, port)
			    : -ENODEV;
	free(name);
	return r;
}

UMAD_EXPORT int umad_release_port(umad_port_t *port)
{
	if (!port)
		return -ENODEV;
	free(port->pkeys);
	port->pkeys = NULL;
	port->pkeys_size = 0;
	return 0;
}

/* Port GUIDs of ports 0..numports (0 for a CA's missing port 0); how many, or -errno. */
UMAD_EXPORT int umad_get_ca_portguids(const char *ca_name, __be64 *portguids, int max)
{
	umad_ca_t ca;
	int n = 0;

	if (umad_get_ca(ca_name, &ca) < 0)
		return ca_name ? -1 : -ENODEV;
	if (portguids) {
		if (ca.numports + 1 > max) {
			sim_release_ca(&ca);
			return -ENOMEM;
		}
		for (int i = 0; i <= ca.numports; i++)
			portguids[n++] = ca.ports[i] ? ca.ports[i]->port_guid : htobe64(0);
	}
	sim_release_ca(&ca);
	return n;
}

/*
 * The issm device of a port: /dev/infiniband/issm<N>, N the device's index in the
 * fabric (the umad<N> it would have); see docs/simfabric.md for where such nodes exist.
 */
UMAD_EXPORT int umad_get_issm_path(const char *ca_name, int portnum, char path[], int max)
{
	char *name = sim_resolve_ca(ca_name, &portnum);
	int d = sim_dev(name);

	free(name);
	if (d < 0)
		return -ENODEV;
	snprintf(path, (size_t)max, "/dev/infiniband/issm%d", d);
	return 0;
}

/* ---- ports, agents, buffers ---- */

static struct umad_port_sim *port_find_locked(int fd)
{
	for (struct umad_port_sim *p = U.ports; p; p = p->next)
		if (p->fd == fd)
			return p;
	return NULL;
}

/*
 * umad_open_port: a port of a CA (name NULL: the first CA with an active IB port; port
 * 0: its first active port). Returns the fd (upstream's portid) or -ENODEV / -EIO.
 */
UMAD_EXPORT int umad_open_port(const char *ca_name, int portnum)
{
	struct umad_port_sim *p;
	char *name = sim_resolve_ca(ca_name, &portnum);
	int d = sim_dev(name), sv[2];

	free(name);
	if (d < 0 || portnum != 1)
		return -ENODEV;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		free(p);
		return -EIO;
	}
	p->fd = sv[0];
	p->peer = sv[1];
	p->dev = d;
	p->held_tail = &p->held;
	pthread_mutex_lock(&U.lock);
	p->next = U.ports;
	U.ports = p;
	pthread_mutex_unlock(&U.lock);
	return p->fd;
}

/* Move held MADs into the socket while it takes them (U.lock held). */
static void port_flush_locked(struct umad_port_sim *p)
{
	while (p->held) {
		struct umad_held *h = p->held;

		if (send(p->peer, h->data, h->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			return; /* full again: the reader empties it and calls again */
		p->held = h->next;
		if (!p->held)
			p->held_tail = &p->held;
		p->nheld--;
		free(h);
	}
}

/*
 * Queue a MAD for the port's umad_recv, in order: into the socket, or behind what it
 * holds already. 0, or -ENOMEM; a received MAD beyond UMAD_RECV_LIST_MAX is dropped (0),
 * as the kernel drops it.
 */
static int port_queue(int portid, const void *mad, size_t len)
{
	struct umad_port_sim *p;
	struct umad_held *h;

	pthread_mutex_lock(&U.lock);
	p = port_find_locked(portid);
	if (!p) { /* closed meanwhile: nobody reads it */
		pthread_mutex_unlock(&U.lock);
		return 0;
	}
	port_flush_locked(p);
	if (!p->held && send(p->peer, mad, len, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
		pthread_mutex_unlock(&U.lock);
		return 0;
	}
	if (p->nheld >= UMAD_RECV_LIST_MAX) {
		pthread_mutex_unlock(&U.lock);
		return 0;
	}
	h = malloc(sizeof(*h) + len);
	if (!h) {
		pthread_mutex_unlock(&U.lock);
		return -ENOMEM;
	}
	h->next = NULL;
	h->len = len;
	memcpy(h->data, mad, len);
	*p->held_tail = h;
	p->held_tail = &h->next;
	p->nheld++;
	pthread_mutex_unlock(&U.lock);
	return 0;
}

/* After a read: the socket has room for what the port holds. */
static void port_refill(int portid)
{
	struct umad_port_sim *p;

	pthread_mutex_lock(&U.lock);
	p = port_find_locked(portid);
	if (p)
		port_flush_locked(p);
	pthread_mutex_unlock(&U.lock);
}

UMAD_EXPORT int umad_close_port(int portid)
{
	struct umad_port_sim **pp, *p = NULL;

	pthread_mutex_lock(&U.lock);
	for (pp = &U.ports; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == portid) {
			p = *pp;
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&U.lock);
	if (p) {
		close(p->peer);
		while (p->held) {
			struct umad_held *h = p->held;

			p->held = h->next;
			free(h);
		}
		free(p);
	}
	close(portid);
	return 0;
}

UMAD_EXPORT int umad_get_fd(int portid)
{
	return portid;
}

UMAD_EXPORT void *umad_get_mad(void *umad)
{
	return ((struct ib_user_mad *)umad)->data;
}

UMAD_EXPORT size_t umad_size(void)
{
	return sizeof(struct ib_user_mad);
}

UMAD_EXPORT int umad_status(void *umad)
{
	return (int)((struct ib_user_mad *)umad)->status;
}

UMAD_EXPORT ib_mad_addr_t *umad_get_mad_addr(void *umad)
{
	return &((struct ib_user_mad *)umad)->addr;
}

/* umad_set_grh: mad_addr in host order for the flow label (upstream's contract). */
UMAD_EXPORT int umad_set_grh(void *umad, void *mad_addr)
{
	struct ib_user_mad *mad = umad;
	const ib_mad_addr_t *a = mad_addr;

	if (!a) {
		mad->addr.grh_present = 0;
		return 0;
	}
	mad->addr.grh_present = 1;
	mad->addr.ib_gid = a->ib_gid;
	mad->addr.flow_label = htobe32((uint32_t)a->flow_label);
	mad->addr.hop_limit = a->hop_limit;
	mad->addr.traffic_class = a->traffic_class;
	return 0;
}

UMAD_EXPORT int umad_set_pkey(void *umad, int pkey_index)
{
	((struct ib_user_mad *)umad)->addr.pkey_index = (uint16_t)pkey_index;
	return 0;
}

UMAD_EXPORT int umad_get_pkey(void *umad)
{
	return ((struct ib_user_mad *)umad)->addr.pkey_index;
}

UMAD_EXPORT int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey)
{
	struct ib_user_mad *mad = umad;

	mad->addr.qpn = htobe32((uint32_t)dqp);
	mad->addr.lid = htobe16((uint16_t)dlid);
	mad->addr.qkey = htobe32((uint32_t)qkey);
	mad->addr.sl = (uint8_t)sl;
	return 0;
}

UMAD_EXPORT int umad_set_addr_net(void *umad, __be16 dlid, __be32 dqp, int sl, __be32 qkey)
{
	struct ib_user_mad *mad = umad;

	mad->addr.qpn = dqp;
	mad->addr.lid = dlid;
	mad->addr.qkey = qkey;
	mad->addr.sl = (uint8_t)sl;
	return 0;
}

/* Register an agent of the port; its id, or -EPERM (no room, bad port), as the ioctl. */
static int agent_add(int fd, uint8_t mgmt_class, uint8_t version)
{
	struct umad_port_sim *p;
	int id = -EPERM;

	pthread_mutex_lock(&U.lock);
	p = port_find_locked(fd);
	for (int i = 0; p && i < MAX_AGENTS; i++) {
		if (p->agents[i].used)
			continue;
		p->agents[i] = (struct umad_agent){.used = true,
						   .mgmt_class = mgmt_class,
						   .class_version = version,
						   .hi_tid = U.next_tid++};
		id = i;
		break;
	}
	pthread_mutex_unlock(&U.lock);
	return id;
}

UMAD_EXPORT int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
			      long method_mask[16 / sizeof(long)])
{
	(void)rmpp_version;
	(void)method_mask;
	return agent_add(portid, (uint8_t)mgmt_class, (uint8_t)mgmt_version);
}

/* Vendor classes of range 2 (0x30-0x4f) only, as upstream (-EINVAL otherwise). */
UMAD_EXPORT int umad_register_oui(int portid, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
				  long method_mask[16 / sizeof(long)])
{
	(void)rmpp_version;
	(void)oui;
	(void)method_mask;
	if (mgmt_class < 0x30 || mgmt_class > 0x4f)
		return -EINVAL;
	return agent_add(portid, (uint8_t)mgmt_class, 1);
}

/* umad_register2: 0 or a positive errno (EINVAL: bad arguments or vendor OUI). */
UMAD_EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
	int id;

	if (!attr || !agent_id)
		return EINVAL;
	if (attr->mgmt_class >= 0x30 && attr->mgmt_class <= 0x4f &&
	    ((attr->oui & 0x00ffffff) == 0 || (attr->oui & 0xff000000) != 0))
		return EINVAL;
	if (attr->flags) {
		/* The kernel refuses flags it does not know and returns the ones it does. */
		attr->flags &= UMAD_USER_RMPP;
	}
	id = agent_add(port_fd, attr->mgmt_class, attr->mgmt_class_version);
	if (id < 0)
		return EPERM;
	*agent_id = (uint32_t)id;
	return 0;
}

/* 0, or -1 with errno EINVAL for an agent that is not registered (the ioctl). */
UMAD_EXPORT int umad_unregister(int portid, int agentid)
{
	struct umad_port_sim *p;
	int ret = -1;

	pthread_mutex_lock(&U.lock);
	p = port_find_locked(portid);
	if (p && agentid >= 0 && agentid < MAX_AGENTS && p->agents[agentid].used) {
		p->agents[agentid].used = false;
		ret = 0;
	}
	pthread_mutex_unlock(&U.lock);
	if (ret)
		errno = EINVAL;
	return ret;
}

/* ---- sending and receiving ---- */

/*
 * umad_send: the kernel takes the MAD (length bytes after the ib_user_mad header) for
 * the agent, sets the top 32 bits of a request's TID to the agent's, and sends it. Here
 * the destination answers at once; a request nobody answers comes back with status
 * ETIMEDOUT. 0, or -EIO with errno (EINVAL: no such agent or port, bad length).
 */
UMAD_EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms,
			  int retries)
{
	struct ib_user_mad *mad = umad;
	struct sf_fabric *fab = sf_get();
	struct umad_port_sim *p;
	struct {
		struct ib_user_mad hdr;
		uint8_t mad[MAD_LEN];
	} out;
	uint16_t dlid = be16toh(mad->addr.lid);
	uint32_t dqpn = be32toh(mad->addr.qpn), hi;
	const struct sf_dev *self;
	bool answered = false;
	int dev;

	mad->timeout_ms = (uint32_t)timeout_ms;
	mad->retries = (uint32_t)retries;
	mad->agent_id = (uint32_t)agentid;
	pthread_mutex_lock(&U.lock);
	p = port_find_locked(portid);
	if (!fab || !p || agentid < 0 || agentid >= MAX_AGENTS || !p->agents[agentid].used ||
	    length < 24 || length > MAD_LEN) {
		pthread_mutex_unlock(&U.lock);
		errno = EINVAL;
		return -EIO;
	}
	hi = p->agents[agentid].hi_tid;
	dev = p->dev;
	pthread_mutex_unlock(&U.lock);

	memset(&out, 0, sizeof(out));
	memcpy(out.mad, mad->data, (size_t)length);
	if (!mad_is_request(out.mad[MAD_METHOD]))
		return 0; /* a response or trap: sent, nobody here waits for it */
	put32(out.mad + MAD_TID, hi);
	self = &fab->devs[dev];
	if (atomic_load(&self->port_state) == IBV_PORT_ACTIVE && !self->removed) {
		switch (out.mad[MAD_CLASS]) {
		case UMAD_CLASS_SUBN_LID_ROUTED:
		case UMAD_CLASS_SUBN_DIRECTED_ROUTE:
			answered = dqpn == 0 && sf_sma_answer(fab, dev, dlid, out.mad);
			break;
		case UMAD_CLASS_SUBN_ADM:
			answered = sf_sa_answer(fab, self, dlid, dqpn, out.mad);
			break;
		default:
			break;
		}
	}
	out.hdr.agent_id = (uint32_t)agentid;
	out.hdr.length = (uint32_t)(sizeof(out.hdr) + MAD_LEN);
	if (answered) {
		/* The response's source: the answering port (the SM, or the SMA's port). */
		out.hdr.addr.qpn = htobe32(dqpn);
		out.hdr.addr.lid = htobe16(dlid ? dlid : (uint16_t)self->lid);
		out.hdr.addr.qkey = htobe32(dqpn ? UMAD_QKEY : 0);
		out.hdr.addr.sl = mad->addr.sl;
		out.hdr.addr.pkey_index = mad->addr.pkey_index;
	} else {
		out.hdr.status = ETIMEDOUT;
		out.hdr.addr = mad->addr;
	}
	if (port_queue(portid, &out, sizeof(out))) {
		errno = ENOMEM;
		return -EIO;
	}
	return 0;
}

static int port_poll(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, timeout_ms);

	if (n == 1)
		return 0;
	return n == 0 ? -ETIMEDOUT : -EIO;
}

/*
 * umad_recv: the next MAD of the port (timeout_ms 0: do not wait, < 0: wait for ever).
 * Returns the agent id, -ETIMEDOUT, -EWOULDBLOCK, or -ENOSPC when *length is too small
 * (*length then says what is needed; the MAD stays queued, as the kernel leaves it).
 */
UMAD_EXPORT int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
	struct ib_user_mad *mad = umad;
	struct {
		struct ib_user_mad hdr;
		uint8_t mad[MAD_LEN];
	} in;
	ssize_t n;

	errno = 0;
	if (!umad || !length) {
		errno = EINVAL;
		return -EINVAL;
	}
	if (timeout_ms) {
		int r = port_poll(portid, timeout_ms);

		if (r < 0) {
			errno = -r;
			return r;
		}
	}
	n = recv(portid, &in, sizeof(in), MSG_DONTWAIT | MSG_PEEK);
	if (n < 0) {
		int e = errno == EAGAIN ? EWOULDBLOCK : EIO;

		errno = e;
		return -e;
	}
	if ((size_t)n > umad_size() + (size_t)*length) {
		*length = (int)((size_t)n - umad_size());
		errno = ENOSPC;
		return -ENOSPC;
	}
	n = recv(portid, &in, sizeof(in), MSG_DONTWAIT);
	if (n < 0) {
		errno = EIO;
		return -EIO;
	}
	port_refill(portid);
	memcpy(mad, &in, (size_t)n);
	*length = (size_t)n > umad_size() ? (int)((size_t)n - umad_size()) : 0;
	return (int)in.hdr.agent_id;
}

UMAD_EXPORT int umad_poll(int portid, int timeout_ms)
{
	return port_poll(portid, timeout_ms);
}

/* ---- debugging ---- */

UMAD_EXPORT int umad_debug(int level)
{
	if (level >= 0)
		U.debug = level;
	return U.debug;
}

UMAD_EXPORT void umad_addr_dump(ib_mad_addr_t *addr)
{
	char gid[33];

	for (int i = 0; i < 16; i++)
		snprintf(gid + 2 * i, 3, "%02x", addr->gid[i]);
	fprintf(stderr,
		"ibwarn: [%d] umad_addr_dump: qpn %d qkey 0x%x lid %u sl %d\n"
		"grh_present %d gid_index %d hop_limit %d traffic_class %d flow_label 0x%x "
		"pkey_index 0x%x\nGid 0x%s\n",
		getpid(), be32toh(addr->qpn), be32toh(addr->qkey), be16toh(addr->lid), addr->sl,
		addr->grh_present, addr->gid_index, addr->hop_limit, addr->traffic_class,
		addr->flow_label, addr->pkey_index, gid);
}

UMAD_EXPORT void umad_dump(void *umad)
{
	struct ib_user_mad *mad = umad;

	fprintf(stderr, "ibwarn: [%d] umad_dump: agent id %d status %x timeout %d\n", getpid(),
		mad->agent_id, mad->status, mad->timeout_ms);
	umad_addr_dump(&mad->addr);
}
