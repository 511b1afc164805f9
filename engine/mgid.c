// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Group specifications ("addr[:port][/fmt][#tos]" as the reference bridge, "#w=N" or
 * "#tos,w=N" with a weight) and the
 * MGIDs a group has on each side.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>

#include "bridge.h"

const char *const side_name[NSIDES] = {"IB", "RoCE"};

const char *const mgid_fmt_name[MGID_NFMT] = {
	[MGID_RDMA] = "RDMA", [MGID_IPV4] = "IPv4", [MGID_IPV6] = "IPv6",
	[MGID_PORT] = "PORT", [MGID_IB] = "IB",
};

/* Signatures in bytes 2-3 of the reference's ff15 MGIDs, and rdma_cm's for PS_UDP. */
#define SIG_RDMA		  0x4001
#define SIG_IPV4		  0x401b
#define SIG_IPV6		  0x601b
#define SIG_PORT		  0xa01b
#define SIG_IB			  0x4001
#define MGID_SCOPE_LINK_TRANSIENT 0x12 /* rdma_cm: flags 1, scope 2 */
#define MGID_SCOPE_SITE_TRANSIENT 0x15 /* the reference's custom MGIDs */
#define IPV4_MCAST_LOW28	  0x0fffffffu

int mgid_fmt_parse(const char *name)
{
	for (int i = 0; i < MGID_NFMT; i++)
		if (!strcasecmp(name, mgid_fmt_name[i]))
			return i;
	return -1;
}

static int spec_err(char *err, size_t errlen, const char *spec, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int spec_err(char *err, size_t errlen, const char *spec, const char *fmt, ...)
{
	char why[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "group '%s': %s", spec, why);
	return -EINVAL;
}

int group_qkey_parse(const char *s, uint32_t *qkey)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *d = hex ? s + 2 : s;
	unsigned long long v;
	char *end;

	/* Digits only: strtoull alone would take a sign, blanks, and octal for "010". */
	if (!*d || !(hex ? isxdigit((unsigned char)*d) : isdigit((unsigned char)*d)))
		return -EINVAL;
	errno = 0;
	v = strtoull(d, &end, hex ? 16 : 10);
	if (*end || errno || v > UINT32_MAX)
		return -EINVAL;
	*qkey = (uint32_t)v;
	return 0;
}

/* An address that can only be IPv6 text: two colons or more (IPv4 has at most one). */
static bool looks_ipv6(const char *s)
{
	const char *c = strchr(s, ':');

	return c && strchr(c + 1, ':');
}

/*
 * "a.b.c.d[:port][/fmt]" in buf (modified): the IPv4 checks of every IPv4 group, then
 * the port and format if allow_pf, else refused. what names the side in messages.
 */
static int parse_ipv4(char *buf, const char *spec, const char *what, bool allow_pf, uint32_t *addr,
		      uint16_t *port, uint8_t *fmt, char *err, size_t errlen)
{
	char *p, *ports = NULL, *fmts = NULL;
	struct in_addr a;

	if ((p = strchr(buf, '/'))) {
		*p = 0;
		fmts = p + 1;
	}
	if ((p = strchr(buf, ':'))) {
		*p = 0;
		ports = p + 1;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return spec_err(err, errlen, spec, "%snot an IPv4 address", what);
	if ((ntohl(a.s_addr) >> 28) != 0xe)
		return spec_err(err, errlen, spec, "%snot a multicast address (224.0.0.0/4)", what);
	/* RFC 5771: the Local Network Control Block is never forwarded by routers. */
	if ((ntohl(a.s_addr) & 0xffffff00) == 0xe0000000)
		return spec_err(err, errlen, spec,
				"%s224.0.0.0/24 is link-local network control (RFC 5771), never "
				"forwarded",
				what);
	if ((ports || fmts) && !allow_pf)
		return spec_err(err, errlen, spec,
				"%sthe RoCE side is an address only (:port and /fmt go on an "
				"IPv4 IB side)",
				what);
	*addr = a.s_addr;
	if (ports) {
		char *end;
		unsigned long v = strtoul(ports, &end, 10);

		if (!*ports || *end || *ports == '-' || v == 0 || v > 65535)
			return spec_err(err, errlen, spec, "port must be 1..65535");
		*port = (uint16_t)v;
	}
	if (fmts) {
		int f = mgid_fmt_parse(fmts);

		if (f < 0)
			return spec_err(err, errlen, spec,
					"unknown MGID format (RDMA, IPv4, IPv6, PORT, IB)");
		*fmt = (uint8_t)f;
	}
	return 0;
}

/* An IPv6 multicast address (ff00::/8) in buf: an MGID on IB, a group on RoCE. */
static int parse_ipv6(const char *buf, const char *spec, const char *what, bool ib,
		      union ibv_gid *gid, char *err, size_t errlen)
{
	if (strchr(buf, '/'))
		return spec_err(err, errlen, spec,
				"%s/fmt applies to IPv4 groups only (an MGID is used as given)",
				what);
	if (inet_pton(AF_INET6, buf, gid->raw) != 1)
		return spec_err(err, errlen, spec, "%s'%s' is not an %s", what, buf,
				ib ? "MGID in IPv6 notation" : "IPv6 address");
	if (gid->raw[0] != 0xff)
		return spec_err(err, errlen, spec, "%s%s", what,
				ib ? "IB MGID must start with ff"
				   : "not an IPv6 multicast address (ff00::/8)");
	return 0;
}

/*
 * An IPv6 group on RoCE must leave the host: a scope (the low nibble of byte 1) of 0
 * (reserved) or 1 (interface-local) never does (RFC 4291 2.7; Linux drops such a packet
 * on any device but loopback, net/ipv6/ip6_output.c ip6_finish_output2). On IB the
 * MGID is the SM's business (perftest's own default MGID is ff01:0:2:c985::), so an
 * MGID of that scope is bridged with "MGID=R" onto another RoCE group.
 */
static int roce_scope_check(const union ibv_gid *gid, const char *spec, const char *what, char *err,
			    size_t errlen)
{
	unsigned scope = gid->raw[1] & 0x0f;

	if (scope > 1)
		return 0;
	return spec_err(err, errlen, spec,
			"%sIPv6 scope %u (%s) never leaves the host on RoCE (RFC 4291)%s", what,
			scope, scope ? "interface-local" : "reserved",
			*what ? "" : ": bridge the MGID to another RoCE group with MGID=GROUP");
}

/* One option after '#': "qkey=", "ibqkey=", "roceqkey=", "w=", or the traffic class. */
static int parse_opts(struct group *g, char *opts, const char *spec, char *err, size_t errlen)
{
	static const char *const qkey_opt[] = {"qkey=", "ibqkey=", "roceqkey="};
	bool tos_set = false, weight_set = false, qkey_set[3] = {false, false, false};

	for (char *opt = opts, *next; opt; opt = next) {
		char *end;
		unsigned long v;
		size_t q;

		if ((next = strchr(opt, ',')))
			*next++ = 0;
		if (!*opt)
			return spec_err(err, errlen, spec, "empty option after '#' or ','");
		if (!strncmp(opt, "w=", 2)) {
			if (weight_set)
				return spec_err(err, errlen, spec, "weight given twice");
			v = strtoul(opt + 2, &end, 10);
			if (!opt[2] || *end || opt[2] == '-' || v < 1 || v > GROUP_WEIGHT_MAX)
				return spec_err(err, errlen, spec, "weight w= must be 1..1000000");
			g->weight = (uint32_t)v;
			weight_set = true;
			continue;
		}
		for (q = 0; q < 3; q++)
			if (!strncmp(opt, qkey_opt[q], strlen(qkey_opt[q])))
				break;
		if (q < 3) {
			uint32_t k;

			if (qkey_set[q])
				return spec_err(err, errlen, spec, "%.*s given twice",
						(int)strlen(qkey_opt[q]) - 1, qkey_opt[q]);
			if (group_qkey_parse(opt + strlen(qkey_opt[q]), &k))
				return spec_err(err, errlen, spec,
						"%.*s must be a 32-bit Q_Key (decimal or 0x hex)",
						(int)strlen(qkey_opt[q]) - 1, qkey_opt[q]);
			if ((q == 0 && (qkey_set[1] || qkey_set[2])) || (q > 0 && qkey_set[0]))
				return spec_err(err, errlen, spec,
						"qkey= sets both sides: not with ibqkey= or "
						"roceqkey=");
			qkey_set[q] = true;
			if (q != 2)
				g->qkey[SIDE_IB] = k;
			if (q != 1)
				g->qkey[SIDE_ROCE] = k;
			continue;
		}
		if (strchr(opt, '='))
			return spec_err(err, errlen, spec,
					"unknown option '%s' (TOS, w=, qkey=, ibqkey=, roceqkey=)",
					opt);
		if (tos_set)
			return spec_err(err, errlen, spec, "TOS given twice");
		v = strtoul(opt, &end, 0);
		if (*end || *opt == '-' || v > 255)
			return spec_err(
				err, errlen, spec,
				"TOS must be 0..255 (or w=N, qkey=Q, ibqkey=Q, roceqkey=Q)");
		g->tos = (uint8_t)v;
		g->tos_set = true;
		tos_set = true;
	}
	return 0;
}

int group_spec_parse(struct group *g, const char *spec, enum mgid_fmt def_fmt, uint16_t def_port,
		     int def_tos, uint32_t def_qkey, char *err, size_t errlen)
{
	char buf[sizeof(g->spec)], *p, *opts = NULL, *roce = NULL;
	int r;

	if (strlen(spec) >= sizeof(buf))
		return spec_err(err, errlen, spec, "too long (at most %zu characters)",
				sizeof(buf) - 1);
	strcpy(buf, spec);
	if ((p = strchr(buf, '#'))) {
		*p = 0;
		opts = p + 1;
	}
	if ((p = strchr(buf, '='))) {
		*p = 0;
		roce = p + 1;
		if (strchr(roce, '='))
			return spec_err(err, errlen, spec, "more than one '='");
		if (!*buf || !*roce)
			return spec_err(err, errlen, spec,
					"expected IB=RoCE, both sides given (an MGID or IPv4 "
					"address '=' an IPv4 or IPv6 group)");
	}
	g->addr = 0;
	g->ib_addr = 0;
	g->port = def_port;
	g->fmt = (uint8_t)def_fmt;
	g->roce_v6 = false;
	g->ib_native = false;
	memset(g->mgid, 0, sizeof(g->mgid));
	g->tos_set = def_tos >= 0;
	g->tos = def_tos >= 0 ? (uint8_t)def_tos : 0;
	g->weight = 1;
	g->qkey[SIDE_IB] = g->qkey[SIDE_ROCE] = def_qkey;

	/* The IB side (or the whole group without '='). */
	if (looks_ipv6(buf)) {
		r = parse_ipv6(buf, spec, roce ? "IB side: " : "", true, &g->mgid[SIDE_IB], err,
			       errlen);
		if (r)
			return r;
		g->ib_native = true;
		g->fmt = MGID_RDMA; /* not used: the MGID is as given */
		if (!roce) {
			/* The same 128 bits are the RoCE group: its scope must leave the host. */
			r = roce_scope_check(&g->mgid[SIDE_IB], spec, "", err, errlen);
			if (r)
				return r;
			g->roce_v6 = true;
			g->mgid[SIDE_ROCE] = g->mgid[SIDE_IB];
		}
	} else {
		r = parse_ipv4(buf, spec, roce ? "IB side: " : "", true, &g->ib_addr, &g->port,
			       &g->fmt, err, errlen);
		if (r)
			return r;
		if (!roce)
			g->addr = g->ib_addr;
	}
	/* The RoCE side of "L=R". */
	if (roce) {
		if (looks_ipv6(roce)) {
			r = parse_ipv6(roce, spec, "RoCE side: ", false, &g->mgid[SIDE_ROCE], err,
				       errlen);
			if (!r)
				r = roce_scope_check(&g->mgid[SIDE_ROCE], spec, "RoCE side: ", err,
						     errlen);
			if (r)
				return r;
			g->roce_v6 = true;
		} else {
			uint16_t port = 0;
			uint8_t fmt = 0;

			r = parse_ipv4(roce, spec, "RoCE side: ", false, &g->addr, &port, &fmt, err,
				       errlen);
			if (r)
				return r;
		}
	}
	if (opts) {
		r = parse_opts(g, opts, spec, err, errlen);
		if (r)
			return r;
	}
	snprintf(g->spec, sizeof(g->spec), "%s", spec);
	return 0;
}

void group_mgid_ib(const struct group *g, uint16_t pkey, union ibv_gid *m)
{
	uint32_t ip = ntohl(g->ib_addr);
	uint16_t sig;

	if (g->ib_native) {
		if (m != &g->mgid[SIDE_IB])
			*m = g->mgid[SIDE_IB];
		return;
	}
	memset(m, 0, sizeof(*m));
	m->raw[0] = 0xff;
	m->raw[1] = g->fmt == MGID_RDMA ? MGID_SCOPE_LINK_TRANSIENT : MGID_SCOPE_SITE_TRANSIENT;
	switch (g->fmt) {
	case MGID_IPV4:
		sig = SIG_IPV4;
		break;
	case MGID_IPV6:
		sig = SIG_IPV6;
		break;
	case MGID_PORT:
		sig = SIG_PORT;
		break;
	case MGID_IB:
		sig = SIG_IB;
		break;
	default:
		sig = SIG_RDMA;
		break;
	}
	m->raw[2] = (uint8_t)(sig >> 8);
	m->raw[3] = (uint8_t)sig;
	m->raw[4] = (uint8_t)(pkey >> 8);
	m->raw[5] = (uint8_t)pkey;
	if (g->fmt == MGID_PORT) {
		m->raw[10] = (uint8_t)(g->port >> 8);
		m->raw[11] = (uint8_t)g->port;
	} else {
		ip &= IPV4_MCAST_LOW28;
	}
	m->raw[12] = (uint8_t)(ip >> 24);
	m->raw[13] = (uint8_t)(ip >> 16);
	m->raw[14] = (uint8_t)(ip >> 8);
	m->raw[15] = (uint8_t)ip;
}

void group_mgid_roce(const struct group *g, union ibv_gid *m)
{
	if (g->roce_v6) {
		if (m != &g->mgid[SIDE_ROCE])
			*m = g->mgid[SIDE_ROCE];
		return;
	}
	memset(m, 0, sizeof(*m));
	m->raw[10] = 0xff;
	m->raw[11] = 0xff;
	memcpy(&m->raw[12], &g->addr, 4);
}

bool group_spec_same(const struct group *a, const struct group *b, const char **why)
{
	union ibv_gid ma, mb;

	/* The P_Key is the bridge's, the same for every group: any one compares. */
	group_mgid_ib(a, 0xffff, &ma);
	group_mgid_ib(b, 0xffff, &mb);
	if (!memcmp(ma.raw, mb.raw, sizeof(ma.raw))) {
		*why = "IB MGID";
		return true;
	}
	group_mgid_roce(a, &ma);
	group_mgid_roce(b, &mb);
	if (!memcmp(ma.raw, mb.raw, sizeof(ma.raw))) {
		*why = "RoCE group";
		return true;
	}
	return false;
}

/*
 * The group index (struct group_index). Each group was checked against every one before
 * it with group_spec_same, which makes four MGIDs a compare: at 16 000 groups the parse
 * took 4.5 s before the first join (`ib2roce --check` with 16 000 -m), and a reload,
 * which parses twice and then matched the running list against the new one three times,
 * kept the control thread (console, watchdog) from its loop for longer still. Written
 * here rather than with a library: liburcu's lfht needs registered RCU readers and this
 * code also runs in the tools, which do not link liburcu; POSIX hsearch_r keys strings and
 * cannot grow. Open addressing on the two keys of a group (its IB MGID under the P_Key
 * 0xffff, its RoCE group), each slot keeping the first group with that key and its
 * position in the list.
 */
struct group_index_ent {
	union ibv_gid key;
	struct group *g; /* NULL: free */
	uint32_t ord;	 /* g's position in the list */
	uint8_t kind;	 /* 0: IB MGID, 1: RoCE group */
};

uint32_t group_gid_hash(const union ibv_gid *k, uint8_t salt)
{
	uint64_t a, b;

	memcpy(&a, k->raw, 8);
	memcpy(&b, k->raw + 8, 8);
	/* Both halves folded, then murmur3's finaliser: every bit reaches the low ones. */
	a ^= (b << 32 | b >> 32) * 0x9e3779b97f4a7c15ull ^ salt;
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdull;
	a ^= a >> 33;
	a *= 0xc4ceb9fe1a85ec53ull;
	a ^= a >> 33;
	return (uint32_t)a;
}

static struct group_index_ent *gidx_slot(const struct group_index *x, const union ibv_gid *k,
					 uint8_t kind)
{
	for (uint32_t i = group_gid_hash(k, kind) & x->mask;; i = (i + 1) & x->mask) {
		struct group_index_ent *e = &x->e[i];

		if (!e->g || (e->kind == kind && !memcmp(e->key.raw, k->raw, sizeof(k->raw))))
			return e;
	}
}

static void gidx_put(struct group_index *x, const union ibv_gid *k, uint8_t kind, struct group *g,
		     uint32_t ord)
{
	struct group_index_ent *e = gidx_slot(x, k, kind);

	if (e->g)
		return; /* the first with this key stays */
	e->key = *k;
	e->kind = kind;
	e->g = g;
	e->ord = ord;
	x->used++;
}

void group_index_free(struct group_index *x)
{
	free(x->e);
	memset(x, 0, sizeof(*x));
}

int group_index_add(struct group_index *x, struct group *g)
{
	union ibv_gid k;

	/* At most half full: two keys a group. */
	if (!x->e || 2 * (x->used + 2) > x->mask + 1) {
		uint32_t size = x->e ? 2 * (x->mask + 1) : 256;
		struct group_index_ent *old = x->e;
		uint32_t oldn = x->e ? x->mask + 1 : 0;

		x->e = calloc(size, sizeof(*x->e));
		if (!x->e) {
			free(old);
			memset(x, 0, sizeof(*x));
			return -ENOMEM;
		}
		x->mask = size - 1;
		x->used = 0;
		for (uint32_t i = 0; i < oldn; i++)
			if (old[i].g)
				gidx_put(x, &old[i].key, old[i].kind, old[i].g, old[i].ord);
		free(old);
	}
	group_mgid_ib(g, 0xffff, &k);
	gidx_put(x, &k, 0, g, x->ngroups);
	group_mgid_roce(g, &k);
	gidx_put(x, &k, 1, g, x->ngroups);
	x->ngroups++;
	return 0;
}

int group_index_sync(struct group_index *x, struct group *const *v, uint32_t n)
{
	if (x->ngroups == n)
		return 0;
	group_index_free(x);
	for (uint32_t i = 0; i < n; i++) {
		int r = group_index_add(x, v[i]);

		if (r)
			return r;
	}
	return 0;
}

struct group *group_index_same(const struct group_index *x, const struct group *g, const char **why)
{
	const struct group_index_ent *ib, *roce;
	union ibv_gid k;

	if (!x->e)
		return NULL;
	group_mgid_ib(g, 0xffff, &k);
	ib = gidx_slot(x, &k, 0);
	group_mgid_roce(g, &k);
	roce = gidx_slot(x, &k, 1);
	/* The list's first group with either key; group_spec_same asks IB first. */
	if (ib->g && (!roce->g || ib->ord <= roce->ord)) {
		*why = "IB MGID";
		return ib->g;
	}
	if (roce->g) {
		*why = "RoCE group";
		return roce->g;
	}
	return NULL;
}
