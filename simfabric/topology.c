// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * topology.c: the segments and devices of a new fabric, either the default topology
 * or one read from the file named by SIMFABRIC_TOPOLOGY, and the address lookups
 * (name, IPv4, GID, LID) shared by libibverbs, librdmacm and simfab.
 *
 * The file format is line oriented (see docs/simfabric.md):
 *
 *	# comment
 *	segment <name> ib|eth [prefix <ipv6 /64>] [sm <lid>] [loss <probability>]
 *	device <name> segment <segment> [lid <n>] [ipv4 <a.b.c.d/len>] [guid <n>]
 *	       [mac <xx:xx:xx:xx:xx:xx>] [numa <node>] [mtu <bytes>] [pkey <n>]
 *	       [ipv6 <addr/len>|none]
 *
 * Derived attributes (GID tables, system image GUID, first QPN, port state) follow the
 * same rules for both sources, in topo_dev_finish().
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sf.h"

/* Node GUIDs of IB devices: Mellanox OUI 00:02:c9, ConnectX style. */
#define TOPO_IB_GUID_BASE  0x0002c90300a0b000ull
#define TOPO_IB_GUID_SEG   0x1000ull		 /* per segment index */
#define TOPO_IB_GUID_DEV   0x10ull		 /* per position on the segment, from 1 */
#define TOPO_IB_PREFIX	   0xfe80000000000000ull /* link-local subnet prefix */
#define TOPO_LID_MAX	   0xbfffu		 /* last unicast LID; multicast LIDs follow */
#define TOPO_QPN_BASE	   0x100u		 /* first QPN; QP0, QP1 and low QPNs are special */
#define TOPO_QPN_STRIDE	   0x1000u		 /* per device index, so QPNs tell devices apart */
#define TOPO_DEFAULT_PLEN  24
#define TOPO_MAX_WORDS	   32
#define TOPO_NODE_DIR	   "/sys/devices/system/node"
#define TOPO_MAX_NUMA_NODE 1023
#define TOPO_PPM	   1000000u
#define TOPO_V6_PLEN	   64 /* prefix length of the default and of an ipv6 given without */

/* Parser state for one topology file. */
struct topo_parser {
	struct sf_fabric *fab;
	const char *path;
	unsigned int line;
	char *err;
	size_t errlen;
	uint32_t sm_lid[SF_MAX_SEGS];	    /* 0: the LID of the segment's first device */
	uint32_t seg_ndevs[SF_MAX_SEGS];    /* devices declared on each segment */
	unsigned int seg_line[SF_MAX_SEGS]; /* where each segment was declared */
	unsigned int dev_line[SF_MAX_DEVS]; /* where each device was declared */
};

/*
 * topo_error - format "FILE:LINE: reason" into the caller's error buffer. Called by the
 * parser on the first error. Returns -EINVAL.
 */
static __attribute__((format(printf, 2, 3))) int topo_error(struct topo_parser *p, const char *fmt,
							    ...)
{
	va_list ap;
	int n;

	if (!p->err || !p->errlen)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "%s:%u: ", p->path, p->line);
	if (n < 0 || (size_t)n >= p->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Empty the segment and device tables (before filling them, and after a failed load). */
static void topo_clear(struct sf_fabric *fab)
{
	memset(fab->segs, 0, sizeof(fab->segs));
	memset(fab->devs, 0, sizeof(fab->devs));
	fab->nsegs = 0;
	fab->ndevs = 0;
}

/* Does NUMA node `node` exist on this machine? Node 0 always does. */
static bool topo_numa_node_exists(uint32_t node)
{
	char path[64];

	if (node == 0)
		return true;
	snprintf(path, sizeof(path), TOPO_NODE_DIR "/node%u", node);
	return access(path, F_OK) == 0;
}

/* Link-local GID fe80::<modified EUI-64 of mac>, as the kernel derives it for RoCE. */
static void topo_gid_from_mac(union ibv_gid *gid, const uint8_t mac[6])
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	gid->raw[8] = mac[0] ^ 0x02; /* flip the universal/local bit */
	gid->raw[9] = mac[1];
	gid->raw[10] = mac[2];
	gid->raw[11] = 0xff;
	gid->raw[12] = 0xfe;
	gid->raw[13] = mac[3];
	gid->raw[14] = mac[4];
	gid->raw[15] = mac[5];
}

/* Node GUID of a RoCE device as mlx5 reports it: OUI, 03:00, the MAC's last 3 bytes. */
static uint64_t topo_guid_from_mac(const uint8_t mac[6])
{
	uint8_t b[8] = {mac[0], mac[1], mac[2], 0x03, 0x00, mac[3], mac[4], mac[5]};
	uint64_t guid;

	memcpy(&guid, b, sizeof(guid));
	return guid; /* network order, like b */
}

/*
 * The default IPv6 address of an Ethernet device: fd00:0:0:<segment index>::<position on
 * the segment, from 1>/64, in the unique local range (RFC 4193) so that it is never routed.
 */
static void topo_default_ipv6(struct sf_dev *d, uint32_t seg, uint32_t pos)
{
	memset(d->ipv6, 0, sizeof(d->ipv6));
	d->ipv6[0] = 0xfd;
	d->ipv6[6] = (uint8_t)(seg >> 8);
	d->ipv6[7] = (uint8_t)seg;
	d->ipv6[14] = (uint8_t)((pos + 1) >> 8);
	d->ipv6[15] = (uint8_t)(pos + 1);
	d->ipv6_prefix = TOPO_V6_PLEN;
}

/* Set GID table entry `index` of a device. */
static void topo_set_gid(struct sf_dev *d, unsigned int index, const union ibv_gid *gid,
			 enum ibv_gid_type type)
{
	d->gids[index].gid = *gid;
	d->gids[index].type = type;
	d->gids[index].valid = 1;
}

/*
 * topo_dev_finish - fill what follows from a device's configured fields (name, seg,
 * lid, node_guid or mac, ipv4, pkey, mtu, numa): link, SM LID, system image GUID, port
 * state, first QPN and the GID table. Called for every device once its segment's SM
 * LID is known. IB: one GID, subnet prefix + port GUID (the port GUID equals the node
 * GUID, as on ConnectX-4 and later). Ethernet, as the kernel's RoCE GID cache fills an
 * mlx5 port (drivers/infiniband/core/roce_gid_mgmt.c, cache.c): the default GIDs first,
 * [0] fe80::<EUI-64 of the MAC> RoCE v1 and [1] the same RoCE v2 (make_default_gid,
 * addrconf_ifid_eui48), then one v1 and one v2 entry per IP address of the netdev, IPv4
 * before IPv6 (_add_netdev_ips: enum_netdev_ipv4_ips, then enum_netdev_ipv6_ips):
 * ::ffff:<ipv4> and the global IPv6 address. The netdev's own link-local address is the
 * default GID again, which the cache does not add twice (__ib_cache_gid_add finds it).
 * So with both addresses: [2] ::ffff:<ipv4> v1, [3] v2, [4] <ipv6> v1, [5] v2; without
 * IPv4 the IPv6 entries are [2] and [3].
 */
static void topo_dev_finish(struct sf_fabric *fab, uint32_t index, uint32_t sm_lid)
{
	struct sf_dev *d = &fab->devs[index];
	const struct sf_segment *s = &fab->segs[d->seg];
	union ibv_gid gid;

	d->link = s->link;
	atomic_store_explicit(&d->port_state, IBV_PORT_ACTIVE, memory_order_relaxed);
	atomic_store_explicit(&d->next_qpn, TOPO_QPN_BASE + TOPO_QPN_STRIDE * index,
			      memory_order_relaxed);
	atomic_store_explicit(&d->ip_id, 0, memory_order_relaxed);
	memset(d->gids, 0, sizeof(d->gids));

	if (d->link == SF_LINK_IB) {
		d->sm_lid = sm_lid;
		d->sys_image_guid = d->node_guid;
		memcpy(gid.raw, &s->subnet_prefix, 8);
		memcpy(gid.raw + 8, &d->node_guid, 8);
		topo_set_gid(d, 0, &gid, IBV_GID_TYPE_IB);
		return;
	}

	d->lid = 0;
	d->sm_lid = 0;
	d->pkey = SF_IB_DEFAULT_PKEY;
	if (!d->node_guid)
		d->node_guid = topo_guid_from_mac(d->mac);
	d->sys_image_guid = d->node_guid;
	topo_gid_from_mac(&gid, d->mac);
	topo_set_gid(d, 0, &gid, IBV_GID_TYPE_ROCE_V1);
	topo_set_gid(d, 1, &gid, IBV_GID_TYPE_ROCE_V2);
	if (d->ipv4) {
		sf_gid_from_ipv4(&gid, d->ipv4);
		topo_set_gid(d, 2, &gid, IBV_GID_TYPE_ROCE_V1);
		topo_set_gid(d, 3, &gid, IBV_GID_TYPE_ROCE_V2);
	}
	if (d->ipv6_prefix) {
		unsigned int g = d->ipv4 ? 4 : 2;

		memcpy(gid.raw, d->ipv6, sizeof(gid.raw));
		topo_set_gid(d, g, &gid, IBV_GID_TYPE_ROCE_V1);
		topo_set_gid(d, g + 1, &gid, IBV_GID_TYPE_ROCE_V2);
	}
}

/* Add a segment with its defaults (no checks: callers validated). Returns its index. */
static uint32_t topo_add_segment(struct sf_fabric *fab, const char *name, enum sf_link link)
{
	uint32_t i = fab->nsegs++;
	struct sf_segment *s = &fab->segs[i];

	snprintf(s->name, sizeof(s->name), "%s", name);
	s->link = link;
	atomic_store_explicit(&s->loss_ppm, 0, memory_order_relaxed);
	if (link == SF_LINK_IB) {
		s->next_mlid = SF_IB_MLID_BASE;
		s->subnet_prefix = htobe64(TOPO_IB_PREFIX);
	}
	return i;
}

/* Add a device with its defaults on segment `seg` (no checks). Returns its index. */
static uint32_t topo_add_device(struct sf_fabric *fab, const char *name, uint32_t seg)
{
	uint32_t i = fab->ndevs++;
	struct sf_dev *d = &fab->devs[i];

	snprintf(d->name, sizeof(d->name), "%s", name);
	d->seg = seg;
	d->link = fab->segs[seg].link;
	d->active_mtu = IBV_MTU_4096;
	d->pkey = SF_IB_DEFAULT_PKEY;
	return i;
}

/*
 * sf_topology_default - the topology tests and users rely on. IB subnet "ib0" (prefix
 * fe80::/64, SM at LID 1): sim_ib0..3, LIDs 1-4, node GUIDs 0x0002c90300a0b010..40,
 * IPoIB 198.18.0.1-4/24, NUMA node 0. Ethernet "eth0": sim_roce0..3, MACs
 * 02:00:00:00:01:01..04, 198.19.0.1-4/24, NUMA node 1 when this machine has one, else 0.
 * All ports ACTIVE, MTU 4096, P_Key 0xffff. Called by sf_topology_load and fabric.c.
 */
SF_PRIVATE void sf_topology_default(struct sf_fabric *fab)
{
	uint32_t roce_numa = topo_numa_node_exists(1) ? 1 : 0;
	uint32_t ib, eth, i, d;
	char name[SF_NAME_MAX];

	topo_clear(fab);
	ib = topo_add_segment(fab, "ib0", SF_LINK_IB);
	eth = topo_add_segment(fab, "eth0", SF_LINK_ETH);

	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "sim_ib%u", i);
		d = topo_add_device(fab, name, ib);
		fab->devs[d].lid = i + 1;
		fab->devs[d].node_guid = htobe64(TOPO_IB_GUID_BASE + TOPO_IB_GUID_SEG * ib +
						 TOPO_IB_GUID_DEV * (i + 1));
		fab->devs[d].ipv4 = htonl(0xc6120000u | (i + 1)); /* 198.18.0.N */
		fab->devs[d].ipv4_prefix = 24;
		fab->devs[d].numa_node = 0;
	}
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "sim_roce%u", i);
		d = topo_add_device(fab, name, eth);
		fab->devs[d].mac[0] = 0x02; /* locally administered, unicast */
		fab->devs[d].mac[4] = eth;
		fab->devs[d].mac[5] = i + 1;
		fab->devs[d].ipv4 = htonl(0xc6130000u | (i + 1)); /* 198.19.0.N */
		fab->devs[d].ipv4_prefix = 24;
		topo_default_ipv6(&fab->devs[d], eth, i); /* fd00:0:0:1::N */
		fab->devs[d].numa_node = roce_numa;
	}
	for (d = 0; d < fab->ndevs; d++)
		topo_dev_finish(fab, d, 1);
}

/* ---- the file parser ---- */

/* Names of segments and devices: 1-31 characters of [A-Za-z0-9_.-]. */
static bool topo_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= SF_NAME_MAX)
		return false;
	for (; *s; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return false;
	}
	return true;
}

/* Parse an unsigned number (decimal, 0x hex) in [min, max]. 0 or -EINVAL. */
static int topo_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int topo_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int ret;

	ret = topo_parse_u64(s, min, max, &v);
	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

/* "a.b.c.d[/len]" to a network-order address and prefix length. 0 or -EINVAL. */
static int topo_parse_ipv4(const char *s, uint32_t *addr, uint32_t *plen)
{
	char buf[INET_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	struct in_addr in;

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &in) != 1)
		return -EINVAL;
	*plen = TOPO_DEFAULT_PLEN;
	if (slash && topo_parse_u32(slash + 1, 1, 32, plen))
		return -EINVAL;
	*addr = in.s_addr;
	return 0;
}

/* "fe80::" or "fe80::/64": the upper 64 bits, network order. 0 or -EINVAL. */
static int topo_parse_prefix(const char *s, uint64_t *prefix)
{
	char buf[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	struct in6_addr in;
	static const uint8_t zero[8];

	if (n >= sizeof(buf) || (slash && strcmp(slash, "/64")))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, &in) != 1 || memcmp(in.s6_addr + 8, zero, 8))
		return -EINVAL;
	memcpy(prefix, in.s6_addr, 8);
	return 0;
}

/*
 * "addr[/len]": a global or unique local unicast IPv6 address (not link-local: that one is
 * made from the MAC; not multicast, loopback, unspecified or IPv4-mapped). 0 or -EINVAL.
 */
static int topo_parse_ipv6(const char *s, uint8_t addr[16], uint32_t *plen)
{
	char buf[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	struct in6_addr in;

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, &in) != 1)
		return -EINVAL;
	*plen = TOPO_V6_PLEN;
	if (slash && topo_parse_u32(slash + 1, 1, 128, plen))
		return -EINVAL;
	if (IN6_IS_ADDR_MULTICAST(&in) || IN6_IS_ADDR_LINKLOCAL(&in) || IN6_IS_ADDR_LOOPBACK(&in) ||
	    IN6_IS_ADDR_UNSPECIFIED(&in) || IN6_IS_ADDR_V4MAPPED(&in) || IN6_IS_ADDR_V4COMPAT(&in))
		return -EINVAL;
	memcpy(addr, in.s6_addr, 16);
	return 0;
}

/* "xx:xx:xx:xx:xx:xx" (hex digits, one or two per byte). 0 or -EINVAL. */
static int topo_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	int i, n = -1;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &n) !=
		    6 ||
	    n < 0 || s[n])
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* A probability in [0, 1] to parts per million, rounded. 0 or -EINVAL. */
static int topo_parse_loss(const char *s, uint32_t *ppm)
{
	char *end;
	double p;

	errno = 0;
	p = strtod(s, &end);
	if (errno || end == s || *end || !(p >= 0.0 && p <= 1.0))
		return -EINVAL;
	*ppm = (uint32_t)(p * TOPO_PPM + 0.5);
	return 0;
}

/* MTU in bytes (256..4096) to enum ibv_mtu. 0 or -EINVAL. */
static int topo_parse_mtu(const char *s, uint32_t *mtu)
{
	uint32_t bytes, m;

	if (topo_parse_u32(s, 256, 4096, &bytes))
		return -EINVAL;
	for (m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		if (sf_mtu_bytes(m) == bytes) {
			*mtu = m;
			return 0;
		}
	}
	return -EINVAL;
}

static int topo_seg_by_name(const struct sf_fabric *fab, const char *name)
{
	uint32_t i;

	for (i = 0; i < fab->nsegs; i++) {
		if (!strcmp(fab->segs[i].name, name))
			return (int)i;
	}
	return -1;
}

/* A unicast interface address: not 0/8, loopback, multicast, class E or broadcast. */
static bool topo_ipv4_unicast(uint32_t addr)
{
	uint32_t a = ntohl(addr);

	return (a >> 24) != 0 && (a >> 24) != 127 && (a >> 28) < 0xe;
}

static uint32_t topo_mask(uint32_t plen)
{
	return plen ? htonl(~0u << (32 - plen)) : 0;
}

static const char *topo_ntoa(uint32_t addr, char *buf)
{
	return inet_ntop(AF_INET, &addr, buf, INET_ADDRSTRLEN);
}

/*
 * topo_segment_line - "segment <name> ib|eth [prefix P] [sm LID] [loss P]". Called by
 * topo_parse_line. Returns 0 or -EINVAL with the message set.
 */
static int topo_segment_line(struct topo_parser *p, char **w, int nw)
{
	struct sf_fabric *fab = p->fab;
	bool have_prefix = false, have_sm = false, have_loss = false;
	uint64_t prefix = htobe64(TOPO_IB_PREFIX);
	uint32_t sm = 0, ppm = 0, i;
	enum sf_link link;
	int k;

	if (nw < 3)
		return topo_error(p, "expected: segment <name> ib|eth [options]");
	if (!topo_name_ok(w[1]))
		return topo_error(p, "bad segment name '%s' (1-%d characters of A-Z a-z 0-9 _ . -)",
				  w[1], SF_NAME_MAX - 1);
	if (topo_seg_by_name(fab, w[1]) >= 0)
		return topo_error(p, "segment %s declared twice", w[1]);
	if (fab->nsegs >= SF_MAX_SEGS)
		return topo_error(p, "too many segments (at most %d)", SF_MAX_SEGS);
	if (!strcmp(w[2], "ib"))
		link = SF_LINK_IB;
	else if (!strcmp(w[2], "eth"))
		link = SF_LINK_ETH;
	else
		return topo_error(p, "segment %s: link '%s' is neither ib nor eth", w[1], w[2]);

	for (k = 3; k < nw; k += 2) {
		const char *key = w[k], *val = k + 1 < nw ? w[k + 1] : NULL;

		if (!val)
			return topo_error(p, "%s: missing value", key);
		if (!strcmp(key, "prefix")) {
			if (have_prefix)
				return topo_error(p, "prefix given twice");
			if (link != SF_LINK_IB)
				return topo_error(p,
						  "prefix: only IB segments have a subnet prefix");
			if (topo_parse_prefix(val, &prefix))
				return topo_error(
					p, "prefix: '%s' is not an IPv6 /64 prefix such as fe80::",
					val);
			have_prefix = true;
		} else if (!strcmp(key, "sm")) {
			if (have_sm)
				return topo_error(p, "sm given twice");
			if (link != SF_LINK_IB)
				return topo_error(p, "sm: only IB segments have a subnet manager");
			if (topo_parse_u32(val, 1, TOPO_LID_MAX, &sm))
				return topo_error(p, "sm: '%s' is not a unicast LID (1-0x%x)", val,
						  TOPO_LID_MAX);
			have_sm = true;
		} else if (!strcmp(key, "loss")) {
			if (have_loss)
				return topo_error(p, "loss given twice");
			if (topo_parse_loss(val, &ppm))
				return topo_error(p, "loss: '%s' is not a probability in [0, 1]",
						  val);
			have_loss = true;
		} else {
			return topo_error(p, "unknown segment option '%s'", key);
		}
	}

	i = topo_add_segment(fab, w[1], link);
	atomic_store_explicit(&fab->segs[i].loss_ppm, ppm, memory_order_relaxed);
	if (link == SF_LINK_IB)
		fab->segs[i].subnet_prefix = prefix;
	p->sm_lid[i] = sm;
	p->seg_line[i] = p->line;
	return 0;
}

/* The lowest LID not used on segment `seg`, or 0 if none is left. */
static uint32_t topo_free_lid(const struct sf_fabric *fab, uint32_t seg)
{
	uint32_t lid, i;

	for (lid = 1; lid <= TOPO_LID_MAX; lid++) {
		for (i = 0; i < fab->ndevs; i++) {
			if (fab->devs[i].seg == seg && fab->devs[i].lid == lid)
				break;
		}
		if (i == fab->ndevs)
			return lid;
	}
	return 0;
}

/*
 * topo_device_check - reject a new device (the last one in the table) that clashes with
 * an earlier one: LID on the same segment, IPv4 address anywhere, IPv4 subnet on another
 * segment, MAC, node GUID. Returns 0 or -EINVAL with the message set.
 */
static int topo_device_check(struct topo_parser *p, uint32_t n)
{
	const struct sf_dev *d = &p->fab->devs[n];
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN], v6[INET6_ADDRSTRLEN];
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct sf_dev *o = &p->fab->devs[i];

		if (d->link == SF_LINK_IB && o->seg == d->seg && o->lid == d->lid)
			return topo_error(p, "lid %u already used by %s", d->lid, o->name);
		if (d->ipv6_prefix && o->ipv6_prefix && !memcmp(d->ipv6, o->ipv6, 16))
			return topo_error(p, "ipv6 %s already used by %s",
					  inet_ntop(AF_INET6, d->ipv6, v6, sizeof(v6)), o->name);
		if (d->ipv4 && o->ipv4 == d->ipv4)
			return topo_error(p, "ipv4 %s already used by %s", topo_ntoa(d->ipv4, a),
					  o->name);
		if (d->ipv4 && o->ipv4 && o->seg != d->seg) {
			uint32_t m = topo_mask(d->ipv4_prefix < o->ipv4_prefix ? d->ipv4_prefix
									       : o->ipv4_prefix);

			if ((d->ipv4 & m) == (o->ipv4 & m))
				return topo_error(p,
						  "ipv4 %s/%u overlaps %s/%u of %s on segment %s",
						  topo_ntoa(d->ipv4, a), d->ipv4_prefix,
						  topo_ntoa(o->ipv4, b), o->ipv4_prefix, o->name,
						  p->fab->segs[o->seg].name);
		}
		if (d->link == SF_LINK_ETH && o->link == SF_LINK_ETH &&
		    !memcmp(d->mac, o->mac, sizeof(d->mac)))
			return topo_error(p, "mac %02x:%02x:%02x:%02x:%02x:%02x already used by %s",
					  d->mac[0], d->mac[1], d->mac[2], d->mac[3], d->mac[4],
					  d->mac[5], o->name);
		if (d->node_guid && o->node_guid == d->node_guid)
			return topo_error(p, "guid 0x%016llx already used by %s",
					  (unsigned long long)be64toh(d->node_guid), o->name);
	}
	return 0;
}

/* Is the option `key` one that only IB (or only Ethernet) devices take? */
static int topo_device_option_link(struct topo_parser *p, const char *key, enum sf_link link,
				   enum sf_link need)
{
	if (link == need)
		return 0;
	return topo_error(p, "%s: only %s devices have one", key,
			  need == SF_LINK_IB ? "IB" : "Ethernet");
}

/*
 * topo_device_line - "device <name> segment <seg> [lid N] [ipv4 A/LEN] [guid N]
 * [mac M] [numa N] [mtu BYTES] [pkey N]", options in any order. Called by
 * topo_parse_line. Returns 0 or -EINVAL with the message set.
 */
static int topo_device_line(struct topo_parser *p, char **w, int nw)
{
	struct sf_fabric *fab = p->fab;
	const char *seg_name = NULL;
	uint32_t lid = 0, ipv4 = 0, plen = 0, numa = 0, mtu = IBV_MTU_4096;
	uint32_t pkey = SF_IB_DEFAULT_PKEY;
	uint64_t guid = 0;
	uint8_t mac[6] = {0};
	bool have_mac = false, have_numa = false;
	unsigned int seen = 0, bit;
	enum sf_link link;
	struct sf_dev *d;
	uint32_t n, pos;
	int k, seg;
	static const char *const keys[] = {"segment", "lid", "ipv4", "guid", "mac",
					   "numa",    "mtu", "pkey", "ipv6"};
	uint8_t ipv6[16] = {0};
	uint32_t plen6 = 0;
	bool no_ipv6 = false;

	if (nw < 2)
		return topo_error(p, "expected: device <name> segment <segment> [options]");
	if (!topo_name_ok(w[1]))
		return topo_error(p, "bad device name '%s' (1-%d characters of A-Z a-z 0-9 _ . -)",
				  w[1], SF_NAME_MAX - 1);
	if (sf_dev_by_name(fab, w[1]) >= 0)
		return topo_error(p, "device %s declared twice", w[1]);
	if (fab->ndevs >= SF_MAX_DEVS)
		return topo_error(p, "too many devices (at most %d)", SF_MAX_DEVS);

	/* First pass: the segment, since the other options depend on its link layer. */
	for (k = 2; k < nw; k += 2) {
		if (!strcmp(w[k], "segment") && k + 1 < nw)
			seg_name = w[k + 1];
	}
	if (!seg_name)
		return topo_error(p, "device %s: missing 'segment <name>'", w[1]);
	seg = topo_seg_by_name(fab, seg_name);
	if (seg < 0)
		return topo_error(p, "device %s: unknown segment %s (declare segments first)", w[1],
				  seg_name);
	link = fab->segs[seg].link;

	for (k = 2; k < nw; k += 2) {
		const char *key = w[k], *val = k + 1 < nw ? w[k + 1] : NULL;

		for (bit = 0; bit < sizeof(keys) / sizeof(keys[0]); bit++) {
			if (!strcmp(key, keys[bit]))
				break;
		}
		if (bit == sizeof(keys) / sizeof(keys[0]))
			return topo_error(p, "unknown device option '%s'", key);
		if (!val)
			return topo_error(p, "%s: missing value", key);
		if (seen & (1u << bit))
			return topo_error(p, "%s given twice", key);
		seen |= 1u << bit;

		if (!strcmp(key, "segment")) {
			continue;
		} else if (!strcmp(key, "lid")) {
			if (topo_device_option_link(p, key, link, SF_LINK_IB))
				return -EINVAL;
			if (topo_parse_u32(val, 1, TOPO_LID_MAX, &lid))
				return topo_error(p, "lid: '%s' is not a unicast LID (1-0x%x)", val,
						  TOPO_LID_MAX);
		} else if (!strcmp(key, "ipv4")) {
			char a[INET_ADDRSTRLEN];
			uint32_t host;

			if (topo_parse_ipv4(val, &ipv4, &plen))
				return topo_error(p, "ipv4: '%s' is not an address a.b.c.d/len",
						  val);
			if (!topo_ipv4_unicast(ipv4))
				return topo_error(p, "ipv4: %s is not a unicast interface address",
						  topo_ntoa(ipv4, a));
			host = ipv4 & ~topo_mask(plen);
			if (plen <= 30 && (host == 0 || host == ~topo_mask(plen)))
				return topo_error(
					p, "ipv4: %s is the network or broadcast address of /%u",
					topo_ntoa(ipv4, a), plen);
		} else if (!strcmp(key, "guid")) {
			if (topo_parse_u64(val, 1, UINT64_MAX, &guid))
				return topo_error(p, "guid: '%s' is not a non-zero 64-bit number",
						  val);
		} else if (!strcmp(key, "mac")) {
			if (topo_device_option_link(p, key, link, SF_LINK_ETH))
				return -EINVAL;
			if (topo_parse_mac(val, mac))
				return topo_error(p, "mac: '%s' is not xx:xx:xx:xx:xx:xx", val);
			if ((mac[0] & 1) || !(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
				return topo_error(p, "mac: %s is not a unicast address", val);
			have_mac = true;
		} else if (!strcmp(key, "numa")) {
			if (topo_parse_u32(val, 0, TOPO_MAX_NUMA_NODE, &numa))
				return topo_error(p, "numa: '%s' is not a node number", val);
			if (!topo_numa_node_exists(numa))
				return topo_error(
					p, "numa: node %u does not exist on this machine (%s)",
					numa, TOPO_NODE_DIR);
			have_numa = true;
		} else if (!strcmp(key, "mtu")) {
			if (topo_parse_mtu(val, &mtu))
				return topo_error(
					p, "mtu: '%s' is not 256, 512, 1024, 2048 or 4096", val);
		} else if (!strcmp(key, "ipv6")) {
			if (topo_device_option_link(p, key, link, SF_LINK_ETH))
				return -EINVAL;
			if (!strcmp(val, "none"))
				no_ipv6 = true;
			else if (topo_parse_ipv6(val, ipv6, &plen6))
				return topo_error(
					p,
					"ipv6: '%s' is not a global unicast address addr/len "
					"(or 'none')",
					val);
		} else if (!strcmp(key, "pkey")) {
			if (topo_device_option_link(p, key, link, SF_LINK_IB))
				return -EINVAL;
			if (topo_parse_u32(val, 1, 0xffff, &pkey) || !(pkey & 0x7fff))
				return topo_error(p, "pkey: '%s' is not a valid P_Key", val);
		}
	}

	pos = p->seg_ndevs[seg]++;
	n = topo_add_device(fab, w[1], (uint32_t)seg);
	d = &fab->devs[n];
	p->dev_line[n] = p->line;
	d->active_mtu = mtu;
	d->ipv4 = ipv4;
	d->ipv4_prefix = ipv4 ? plen : 0;
	if (link == SF_LINK_IB) {
		d->pkey = pkey;
		d->lid = lid ? lid : topo_free_lid(fab, (uint32_t)seg);
		if (!d->lid)
			return topo_error(p, "no free LID left on segment %s", seg_name);
		d->node_guid = htobe64(guid ? guid
					    : TOPO_IB_GUID_BASE + TOPO_IB_GUID_SEG * seg +
						       TOPO_IB_GUID_DEV * (pos + 1));
		d->numa_node = numa;
	} else {
		if (have_mac) {
			memcpy(d->mac, mac, sizeof(mac));
		} else {
			d->mac[0] = 0x02;
			d->mac[4] = (uint8_t)seg;
			d->mac[5] = (uint8_t)(pos + 1);
		}
		d->node_guid = guid ? htobe64(guid) : topo_guid_from_mac(d->mac);
		d->numa_node = have_numa ? numa : (topo_numa_node_exists(1) ? 1 : 0);
		if (plen6) {
			memcpy(d->ipv6, ipv6, sizeof(ipv6));
			d->ipv6_prefix = plen6;
		} else if (!no_ipv6) {
			topo_default_ipv6(d, (uint32_t)seg, pos);
		}
	}
	return topo_device_check(p, n);
}

/*
 * topo_parse_line - split one line (modified in place) into words, dropping a `#`
 * comment, and apply it. Returns 0 or -EINVAL with the message set.
 */
static int topo_parse_line(struct topo_parser *p, char *line)
{
	char *w[TOPO_MAX_WORDS], *save = NULL, *tok;
	char *hash = strchr(line, '#');
	int nw = 0;

	if (hash)
		*hash = '\0';
	for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (nw == TOPO_MAX_WORDS)
			return topo_error(p, "too many words (at most %d)", TOPO_MAX_WORDS);
		w[nw++] = tok;
	}
	if (!nw)
		return 0;
	if (!strcmp(w[0], "segment"))
		return topo_segment_line(p, w, nw);
	if (!strcmp(w[0], "device"))
		return topo_device_line(p, w, nw);
	return topo_error(p, "unknown keyword '%s' (expected segment or device)", w[0]);
}

/*
 * topo_finish_all - after the last line: SM LIDs (default: the first device of each IB
 * segment; a given one must be a device's LID), derived attributes of every device, then
 * GIDs unique across devices.
 * Returns 0 or -EINVAL with the message set (at the line of the later device).
 */
static int topo_finish_all(struct topo_parser *p)
{
	struct sf_fabric *fab = p->fab;
	char a[INET6_ADDRSTRLEN];
	uint32_t i, j, s, gi, gj;

	for (s = 0; s < fab->nsegs; s++) {
		bool has_devs = false, has_sm = false;

		if (fab->segs[s].link != SF_LINK_IB)
			continue;
		for (i = 0; i < fab->ndevs; i++) {
			if (fab->devs[i].seg != s)
				continue;
			if (!p->sm_lid[s])
				p->sm_lid[s] = fab->devs[i].lid;
			has_devs = true;
			has_sm |= fab->devs[i].lid == p->sm_lid[s];
		}
		if (has_devs && !has_sm) {
			p->line = p->seg_line[s];
			return topo_error(p, "sm: no device on segment %s has LID %u",
					  fab->segs[s].name, p->sm_lid[s]);
		}
	}
	for (i = 0; i < fab->ndevs; i++)
		topo_dev_finish(fab, i, p->sm_lid[fab->devs[i].seg]);

	for (i = 0; i < fab->ndevs; i++) {
		for (j = 0; j < i; j++) {
			for (gi = 0; gi < SF_GID_MAX; gi++) {
				for (gj = 0; gj < SF_GID_MAX; gj++) {
					const struct sf_gid *x = &fab->devs[i].gids[gi];
					const struct sf_gid *y = &fab->devs[j].gids[gj];

					if (!x->valid || !y->valid ||
					    memcmp(x->gid.raw, y->gid.raw, sizeof(x->gid.raw)))
						continue;
					p->line = p->dev_line[i];
					return topo_error(
						p, "GID %s of %s is also a GID of %s",
						inet_ntop(AF_INET6, x->gid.raw, a, sizeof(a)),
						fab->devs[i].name, fab->devs[j].name);
				}
			}
		}
	}
	return 0;
}

/*
 * sf_topology_load - fill the segments and devices of a new fabric from the topology
 * file `path`, or with the default topology when path is NULL or empty. Called by
 * fabric.c when it creates a fabric (path from SIMFABRIC_TOPOLOGY) and by simfab to check
 * a file. On failure the tables are left empty and err holds "FILE:LINE: reason" (or
 * "FILE: reason"). Returns 0, -EINVAL for a bad file, or -errno if it cannot be read.
 */
SF_PRIVATE int sf_topology_load(struct sf_fabric *fab, const char *path, char *err, size_t errlen)
{
	struct topo_parser p = {
		.fab = fab,
		.path = path,
		.err = err,
		.errlen = errlen,
	};
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;
	FILE *f;

	if (err && errlen)
		err[0] = '\0';
	if (!path || !*path) {
		sf_topology_default(fab);
		return 0;
	}
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}

	topo_clear(fab);
	for (;;) {
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			if (ferror(f) || errno == ENOMEM) {
				ret = errno ? -errno : -EIO;
				if (err && errlen)
					snprintf(err, errlen, "%s: %s", path, strerror(-ret));
			}
			break;
		}
		p.line++;
		ret = topo_parse_line(&p, line);
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	if (!ret)
		ret = topo_finish_all(&p);
	if (ret)
		topo_clear(fab);
	return ret;
}

/* ---- lookups shared by the libraries and simfab ---- */

/*
 * sf_dev_by_name - index of the device called `name`, removed or not; -1 if none.
 * Lock-free (the device table does not change after creation).
 */
SF_PRIVATE int sf_dev_by_name(struct sf_fabric *fab, const char *name)
{
	uint32_t i;

	for (i = 0; i < fab->ndevs; i++) {
		if (!strncmp(fab->devs[i].name, name, SF_NAME_MAX))
			return (int)i;
	}
	return -1;
}

/*
 * sf_dev_by_ipv4 - the device (not removed) owning IPv4 address `ipv4` (network order),
 * as rdma_bind_addr finds it; -1 if none. Lock-free.
 */
SF_PRIVATE int sf_dev_by_ipv4(struct sf_fabric *fab, uint32_t ipv4)
{
	uint32_t i;

	if (!ipv4)
		return -1;
	for (i = 0; i < fab->ndevs; i++) {
		if (fab->devs[i].ipv4 == ipv4 && !fab->devs[i].removed)
			return (int)i;
	}
	return -1;
}

/*
 * sf_dev_by_gid - the device (not removed) with `gid` in its GID table; -1 if none.
 * When `index` is not NULL it receives the table index; a GID present as RoCE v1 and v2
 * yields the RoCE v2 entry (the kernel's default GID type). Lock-free.
 */
SF_PRIVATE int sf_dev_by_gid(struct sf_fabric *fab, const union ibv_gid *gid, uint32_t *index)
{
	uint32_t i, g;

	for (i = 0; i < fab->ndevs; i++) {
		const struct sf_dev *d = &fab->devs[i];
		int found = -1;

		if (d->removed)
			continue;
		for (g = 0; g < SF_GID_MAX; g++) {
			if (!d->gids[g].valid ||
			    memcmp(d->gids[g].gid.raw, gid->raw, sizeof(gid->raw)))
				continue;
			if (found < 0 || d->gids[g].type == IBV_GID_TYPE_ROCE_V2)
				found = (int)g;
		}
		if (found >= 0) {
			if (index)
				*index = (uint32_t)found;
			return (int)i;
		}
	}
	return -1;
}

/* sf_dev_by_lid - the IB device (not removed) with `lid` on segment `seg`; -1 if none. */
SF_PRIVATE int sf_dev_by_lid(struct sf_fabric *fab, uint32_t seg, uint32_t lid)
{
	uint32_t i;

	if (!lid)
		return -1;
	for (i = 0; i < fab->ndevs; i++) {
		const struct sf_dev *d = &fab->devs[i];

		if (d->seg == seg && d->link == SF_LINK_IB && d->lid == lid && !d->removed)
			return (int)i;
	}
	return -1;
}

/*
 * sf_dev_ipv4_gid_index - the GID index the kernel binds an IPv4 address of this device
 * to: on Ethernet the RoCE v2 entry ::ffff:<ipv4> (3 in the mlx5-like table), on IB 0.
 * Falls back to 0 when the device has no such entry.
 */
SF_PRIVATE uint32_t sf_dev_ipv4_gid_index(const struct sf_dev *d)
{
	union ibv_gid want;
	uint32_t g;

	if (d->link != SF_LINK_ETH || !d->ipv4)
		return 0;
	sf_gid_from_ipv4(&want, d->ipv4);
	for (g = 0; g < SF_GID_MAX; g++) {
		if (d->gids[g].valid && d->gids[g].type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(d->gids[g].gid.raw, want.raw, sizeof(want.raw)))
			return g;
	}
	return 0;
}

/*
 * sf_dev_v2_gid_index - the RoCE v2 entry holding `gid` in the device's table: what the
 * kernel binds an IPv6 address of the netdev to (cma_acquire_dev_by_src_ip with the
 * default GID type RoCE v2, cma.c); -1 if the device has no such entry.
 */
SF_PRIVATE int sf_dev_v2_gid_index(const struct sf_dev *d, const union ibv_gid *gid)
{
	uint32_t g;

	for (g = 0; g < SF_GID_MAX; g++) {
		if (d->gids[g].valid && d->gids[g].type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(d->gids[g].gid.raw, gid->raw, sizeof(gid->raw)))
			return (int)g;
	}
	return -1;
}

/* sf_gid_from_ipv4 - the IPv4-mapped GID ::ffff:a.b.c.d; addr in network order. */
SF_PRIVATE void sf_gid_from_ipv4(union ibv_gid *gid, uint32_t addr)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(gid->raw + 12, &addr, sizeof(addr));
}

/* sf_gid_is_ipv4 - is `gid` an IPv4-mapped address (::ffff:0:0/96)? */
SF_PRIVATE bool sf_gid_is_ipv4(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}
