// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Unit tests of the group specification parser (engine/mgid.c group_spec_parse) and the
 * MGIDs a group gets on each side (group_mgid_ib, group_mgid_roce), issue 25's group
 * model: IPv4 groups as the reference names them, IPv6 groups (the same 128 bits on
 * both sides), "IB=RoCE" with a native MGID or an IPv4 IB side, the Q_Key options, the
 * duplicate rule across syntaxes (group_spec_same), and every refusal with its message.
 */
#include <arpa/inet.h>
#include <urcu/urcu-qsbr.h>

#include "bridge.h"
#include "tap.h"

#define QK_DEF 0x01234567u /* rdma_cm's RDMA_UDP_QKEY */

static struct group g;
static char err[256];

static int parse(const char *spec)
{
	memset(&g, 0x5a, sizeof(g)); /* every field the parser owns must be set */
	err[0] = 0;
	return group_spec_parse(&g, spec, MGID_RDMA, 4711, -1, QK_DEF, err, sizeof(err));
}

static union ibv_gid gid6(const char *text)
{
	union ibv_gid m;

	if (inet_pton(AF_INET6, text, m.raw) != 1)
		tap_bail(text);
	return m;
}

static bool gid_eq(const union ibv_gid *a, const union ibv_gid *b)
{
	return !memcmp(a->raw, b->raw, 16);
}

static void ok_ipv4(void)
{
	union ibv_gid m;

	EQ(parse("239.1.2.3"), 0, "239.1.2.3 parses");
	EQ(ntohl(g.addr), 0xef010203u, "addr is the group");
	EQ(ntohl(g.ib_addr), 0xef010203u, "ib_addr is the group");
	CHECK(!g.roce_v6 && !g.ib_native);
	EQ(g.qkey[SIDE_IB], QK_DEF, "default IB Q_Key");
	EQ(g.qkey[SIDE_ROCE], QK_DEF, "default RoCE Q_Key");
	EQ(g.port, 4711, "default port");
	EQ(g.fmt, MGID_RDMA, "default format");
	CHECK(!g.tos_set);
	EQ(g.weight, 1, "default weight");
	CHECK_STR(g.spec, "239.1.2.3");
	group_mgid_ib(&g, 0xffff, &m);
	{
		union ibv_gid want = gid6("ff12:4001:ffff::f01:203");

		OK(gid_eq(&m, &want), "IB MGID ff12:4001:ffff::f01:203 (rdma_cm's, 28 bits)");
	}
	group_mgid_roce(&g, &m);
	{
		union ibv_gid want = gid6("::ffff:239.1.2.3");

		OK(gid_eq(&m, &want), "RoCE MGID ::ffff:239.1.2.3");
	}
	/* In place, as ctl_group_insert makes them. */
	group_mgid_ib(&g, 0x8001, &g.mgid[SIDE_IB]);
	{
		union ibv_gid want = gid6("ff12:4001:8001::f01:203");

		OK(gid_eq(&g.mgid[SIDE_IB], &want), "IB MGID in place with P_Key 0x8001");
	}

	EQ(parse("239.1.2.3:5000/PORT#16,w=3,qkey=0x11111111"), 0, "full IPv4 form parses");
	EQ(g.port, 5000, "port 5000");
	EQ(g.fmt, MGID_PORT, "PORT format");
	CHECK(g.tos_set && g.tos == 16);
	EQ(g.weight, 3, "weight 3");
	EQ(g.qkey[SIDE_IB], 0x11111111u, "qkey= sets IB");
	EQ(g.qkey[SIDE_ROCE], 0x11111111u, "qkey= sets RoCE");
	group_mgid_ib(&g, 0xffff, &m);
	{
		union ibv_gid want = gid6("ff15:a01b:ffff::1388:ef01:203");

		OK(gid_eq(&m, &want), "PORT MGID carries the port and 32 bits");
	}
	EQ(parse("239.1.2.3#ibqkey=286331153"), 0, "ibqkey decimal");
	EQ(g.qkey[SIDE_IB], 0x11111111u, "ibqkey= sets IB");
	EQ(g.qkey[SIDE_ROCE], QK_DEF, "ibqkey= leaves RoCE");
	EQ(parse("239.1.2.3#roceqkey=0xFFFFFFFF,ibqkey=0"), 0, "roceqkey and ibqkey together");
	EQ(g.qkey[SIDE_ROCE], 0xffffffffu, "roceqkey= sets RoCE (32 bits)");
	EQ(g.qkey[SIDE_IB], 0, "ibqkey=0");
	/* --qkey's default, then a per-group override. */
	memset(&g, 0, sizeof(g));
	EQ(group_spec_parse(&g, "239.1.2.3", MGID_IPV4, 4711, 7, 0x22, err, sizeof(err)), 0,
	   "defaults from the arguments");
	CHECK(g.qkey[SIDE_IB] == 0x22 && g.qkey[SIDE_ROCE] == 0x22);
	CHECK(g.fmt == MGID_IPV4 && g.tos_set && g.tos == 7);
}

static void ok_ipv6(void)
{
	union ibv_gid want = gid6("ff12:401b:ffff::1234"), m;

	EQ(parse("ff12:401b:ffff::1234"), 0, "IPv6 group parses");
	CHECK(g.roce_v6 && g.ib_native);
	EQ(g.addr, 0, "no IPv4 RoCE address");
	EQ(g.ib_addr, 0, "no IPv4 IB address");
	OK(gid_eq(&g.mgid[SIDE_IB], &want), "IB MGID is the address");
	OK(gid_eq(&g.mgid[SIDE_ROCE], &want), "RoCE group is the address");
	group_mgid_ib(&g, 0x8001, &m);
	OK(gid_eq(&m, &want), "group_mgid_ib returns it whatever the P_Key");
	group_mgid_ib(&g, 0x8001, &g.mgid[SIDE_IB]);
	OK(gid_eq(&g.mgid[SIDE_IB], &want), "and in place");
	group_mgid_roce(&g, &m);
	OK(gid_eq(&m, &want), "group_mgid_roce returns it");
	group_mgid_roce(&g, &g.mgid[SIDE_ROCE]);
	OK(gid_eq(&g.mgid[SIDE_ROCE], &want), "and in place");
	EQ(g.port, 4711, "port: the default");
	EQ(g.qkey[SIDE_IB], QK_DEF, "default Q_Key");
	EQ(parse("FF0E::1:2#qkey=0x11111111,w=2,32"), 0, "IPv6 with options, upper case");
	CHECK(g.qkey[SIDE_IB] == 0x11111111u && g.qkey[SIDE_ROCE] == 0x11111111u);
	CHECK(g.weight == 2 && g.tos_set && g.tos == 32);
	want = gid6("ff0e::1:2");
	OK(gid_eq(&g.mgid[SIDE_ROCE], &want), "ff0e::1:2");
}

static void ok_equals(void)
{
	union ibv_gid mg = gid6("ff12:401b:ffff::1234"), m;

	EQ(parse("ff12:401b:ffff::1234=ff12:401b:ffff::1234"), 0, "MGID=IPv6 parses");
	CHECK(g.ib_native && g.roce_v6 && !g.addr && !g.ib_addr);
	OK(gid_eq(&g.mgid[SIDE_IB], &mg) && gid_eq(&g.mgid[SIDE_ROCE], &mg), "both sides");

	EQ(parse("ff12:401b:ffff::1234=239.1.2.3#ibqkey=0x11111111"), 0, "MGID=IPv4 parses");
	CHECK(g.ib_native && !g.roce_v6);
	EQ(ntohl(g.addr), 0xef010203u, "RoCE IPv4 group");
	EQ(g.ib_addr, 0, "no IPv4 IB side");
	OK(gid_eq(&g.mgid[SIDE_IB], &mg), "IB MGID as given");
	group_mgid_roce(&g, &m);
	{
		union ibv_gid want = gid6("::ffff:239.1.2.3");

		OK(gid_eq(&m, &want), "RoCE MGID ::ffff:239.1.2.3");
	}
	CHECK(g.qkey[SIDE_IB] == 0x11111111u && g.qkey[SIDE_ROCE] == QK_DEF);

	EQ(parse("239.1.2.3:5000/IPv4=ff15::99"), 0, "IPv4 IB side with port and format");
	CHECK(!g.ib_native && g.roce_v6 && !g.addr);
	EQ(ntohl(g.ib_addr), 0xef010203u, "ib_addr");
	CHECK(g.port == 5000 && g.fmt == MGID_IPV4);
	group_mgid_ib(&g, 0xffff, &m);
	{
		union ibv_gid want = gid6("ff15:401b:ffff::f01:203");

		OK(gid_eq(&m, &want), "IB MGID made from the IPv4 side");
	}
	EQ(parse("239.1.2.3=239.4.5.6"), 0, "IPv4=IPv4 (a mapping)");
	EQ(ntohl(g.ib_addr), 0xef010203u, "IB from 239.1.2.3");
	EQ(ntohl(g.addr), 0xef040506u, "RoCE 239.4.5.6");
}

static void refused(const char *spec, const char *why)
{
	char want[300];

	snprintf(want, sizeof(want), "group '%s': %s", spec, why);
	EQ(parse(spec), -EINVAL, "'%s' refused", spec);
	CHECK_STR(err, want);
}

static void refusals(void)
{
	char longspec[200];

	/* IPv4 as today. */
	refused("1.2.3.4", "not a multicast address (224.0.0.0/4)");
	refused("224.0.0.5", "224.0.0.0/24 is link-local network control (RFC 5771), never "
			     "forwarded");
	refused("239.1.2", "not an IPv4 address");
	refused("239.1.2.3:0", "port must be 1..65535");
	refused("239.1.2.3:65536", "port must be 1..65535");
	refused("239.1.2.3/NOPE", "unknown MGID format (RDMA, IPv4, IPv6, PORT, IB)");
	refused("239.1.2.3#256", "TOS must be 0..255 (or w=N, qkey=Q, ibqkey=Q, roceqkey=Q)");
	refused("239.1.2.3#1,2", "TOS given twice");
	refused("239.1.2.3#w=0", "weight w= must be 1..1000000");
	refused("239.1.2.3#w=1,w=2", "weight given twice");
	refused("239.1.2.3#", "empty option after '#' or ','");
	/* IPv6. */
	refused("fe80::1", "IB MGID must start with ff");
	refused("2001:db8::1=ff12::1", "IB side: IB MGID must start with ff");
	refused("ff12::1=fe80::1", "RoCE side: not an IPv6 multicast address (ff00::/8)");
	refused("ff12::1=::ffff:239.1.2.3", "RoCE side: not an IPv6 multicast address (ff00::/8)");
	refused("ff12::zz", "'ff12::zz' is not an MGID in IPv6 notation");
	refused("ff12:1:2:3:4:5:6:7:8", "'ff12:1:2:3:4:5:6:7:8' is not an MGID in IPv6 notation");
	refused("ff12::1=ff12::g", "RoCE side: 'ff12::g' is not an IPv6 address");
	refused("ff12::1/IPv4", "/fmt applies to IPv4 groups only (an MGID is used as given)");
	/* Scopes 0 and 1 never leave a host: not a RoCE group; an IB MGID may have them. */
	refused("ff01:0:2:c985::", "IPv6 scope 1 (interface-local) never leaves the host on RoCE "
				   "(RFC 4291): bridge the MGID to another RoCE group with "
				   "MGID=GROUP");
	refused("ff10::1", "IPv6 scope 0 (reserved) never leaves the host on RoCE (RFC 4291): "
			   "bridge the MGID to another RoCE group with MGID=GROUP");
	refused("ff12::1=ff11::1", "RoCE side: IPv6 scope 1 (interface-local) never leaves the "
				   "host on RoCE (RFC 4291)");
	EQ(parse("ff01:0:2:c985::=ff12::c985"), 0, "an interface-local MGID onto a RoCE group");
	CHECK(g.ib_native && g.roce_v6 && g.mgid[SIDE_IB].raw[1] == 0x01);
	EQ(parse("ff02::1:2"), 0, "link-local scope (2) is a RoCE group");
	/* "=". */
	refused("ff12::1=239.1.2.3:5000",
		"RoCE side: the RoCE side is an address only (:port and /fmt go on an IPv4 IB "
		"side)");
	refused("ff12::1=239.1.2.3/IPv4",
		"RoCE side: the RoCE side is an address only (:port and /fmt go on an IPv4 IB "
		"side)");
	refused("ff12::1=10.1.2.3", "RoCE side: not a multicast address (224.0.0.0/4)");
	refused("10.1.2.3=ff12::1", "IB side: not a multicast address (224.0.0.0/4)");
	refused("ff12::1=ff12::2=ff12::3", "more than one '='");
	refused("=ff12::1", "expected IB=RoCE, both sides given (an MGID or IPv4 address '=' an "
			    "IPv4 or IPv6 group)");
	refused("ff12::1=", "expected IB=RoCE, both sides given (an MGID or IPv4 address '=' an "
			    "IPv4 or IPv6 group)");
	/* Options. */
	refused("ff12::1#qos=1", "unknown option 'qos=1' (TOS, w=, qkey=, ibqkey=, roceqkey=)");
	refused("239.1.2.3#qkey=0x100000000", "qkey must be a 32-bit Q_Key (decimal or 0x hex)");
	refused("239.1.2.3#qkey=4294967296", "qkey must be a 32-bit Q_Key (decimal or 0x hex)");
	refused("239.1.2.3#qkey=-1", "qkey must be a 32-bit Q_Key (decimal or 0x hex)");
	refused("239.1.2.3#qkey=", "qkey must be a 32-bit Q_Key (decimal or 0x hex)");
	refused("239.1.2.3#ibqkey=0x", "ibqkey must be a 32-bit Q_Key (decimal or 0x hex)");
	refused("239.1.2.3#roceqkey=12ab", "roceqkey must be a 32-bit Q_Key (decimal or 0x hex)");
	refused("239.1.2.3#qkey=1,qkey=1", "qkey given twice");
	refused("239.1.2.3#ibqkey=1,ibqkey=2", "ibqkey given twice");
	refused("239.1.2.3#roceqkey=1,roceqkey=2", "roceqkey given twice");
	refused("239.1.2.3#qkey=1,ibqkey=2",
		"qkey= sets both sides: not with ibqkey= or roceqkey=");
	refused("239.1.2.3#roceqkey=1,qkey=2",
		"qkey= sets both sides: not with ibqkey= or roceqkey=");
	memset(longspec, 'f', sizeof(longspec) - 1);
	longspec[sizeof(longspec) - 1] = 0;
	EQ(parse(longspec), -EINVAL, "a spec of 199 characters refused");
	CHECK_HAS(err, "too long (at most 127 characters)");
}

static void qkey_parse(void)
{
	uint32_t q = 7;

	CHECK(!group_qkey_parse("0x11111111", &q) && q == 0x11111111u);
	CHECK(!group_qkey_parse("4294967295", &q) && q == 0xffffffffu);
	CHECK(!group_qkey_parse("010", &q) && q == 10); /* decimal, not octal */
	CHECK(group_qkey_parse("", &q) == -EINVAL);
	CHECK(group_qkey_parse(" 1", &q) == -EINVAL);
	CHECK(group_qkey_parse("+1", &q) == -EINVAL);
	CHECK(group_qkey_parse("0x-1", &q) == -EINVAL);
	CHECK(group_qkey_parse("99999999999999999999999", &q) == -EINVAL);
}

static bool same(const char *a, const char *b, const char **why)
{
	static struct group ga, gb;

	*why = NULL;
	if (group_spec_parse(&ga, a, MGID_RDMA, 4711, -1, QK_DEF, err, sizeof(err)) ||
	    group_spec_parse(&gb, b, MGID_RDMA, 4711, -1, QK_DEF, err, sizeof(err)))
		tap_bail(err);
	return group_spec_same(&ga, &gb, why);
}

static void duplicates(void)
{
	const char *why;

	OK(same("239.1.2.3", "ff12:401b:ffff::1234=239.1.2.3", &why) && !strcmp(why, "RoCE group"),
	   "239.1.2.3 and MGID=239.1.2.3: the same RoCE group");
	OK(same("ff12::1", "FF12:0:0::0:1", &why) && !strcmp(why, "IB MGID"),
	   "ff12::1 spelled twice: the same IB MGID");
	OK(same("ff12::1", "ff12::1=239.1.2.3", &why) && !strcmp(why, "IB MGID"),
	   "ff12::1 and ff12::1=239.1.2.3: the same IB MGID");
	OK(same("ff12::1=239.1.2.3", "ff12::2=239.1.2.3", &why) && !strcmp(why, "RoCE group"),
	   "two MGIDs onto one RoCE group");
	OK(same("239.1.2.3", "ff12:4001:ffff::f01:203=239.9.9.9", &why) && !strcmp(why, "IB MGID"),
	   "239.1.2.3 and its own rdma_cm MGID given natively: the same IB MGID");
	OK(same("239.1.2.3", "239.1.2.3=ff15::1", &why) && !strcmp(why, "IB MGID"),
	   "239.1.2.3 and 239.1.2.3=ff15::1: the same IB MGID");
	OK(same("239.1.2.3", "239.1.2.3:5000", &why) && !strcmp(why, "IB MGID"),
	   "239.1.2.3 and 239.1.2.3:5000: the same IB MGID (the port is not in it)");
	OK(same("239.1.2.3", "239.1.2.3/IPv4", &why) && !strcmp(why, "RoCE group"),
	   "239.1.2.3 in two formats: the same RoCE group");
	OK(!same("239.1.2.3/IPv4=ff15::1", "239.1.2.3/IB=ff15::2", &why),
	   "one IPv4 address in two formats, two RoCE groups: different groups");
	OK(!same("ff12::1", "ff12::2", &why), "two IPv6 groups differ");
	OK(!same("ff12::1=239.1.2.3", "ff12::2=239.1.2.4", &why), "two native groups differ");
	OK(!same("239.1.2.3", "ff12::1", &why), "an IPv4 and an IPv6 group differ");
}

/* A group parsed and given its MGIDs (P_Key 0xffff), as ctl_group_insert makes them. */
static struct group *made(const char *spec)
{
	struct group *n = aligned_alloc(64, sizeof(*n));

	if (!n)
		tap_bail("aligned_alloc");
	memset(n, 0, sizeof(*n));
	if (group_spec_parse(n, spec, MGID_RDMA, 4711, -1, QK_DEF, err, sizeof(err)))
		tap_bail(err);
	group_mgid_ib(n, 0xffff, &n->mgid[SIDE_IB]);
	group_mgid_roce(n, &n->mgid[SIDE_ROCE]);
	return n;
}

/*
 * The RCU tables (engine/tables.c) with groups of every form: groups_by_addr (the
 * DROP_MGID_FORMAT verdict's table) holds the groups whose IB MGID is made from an IPv4
 * address, keyed by that address (two may share it: two formats); native MGIDs are not
 * in it. Each side's table finds every group by its MGID there.
 */
static void tables(void)
{
	static struct bridge tb;
	const char *const specs[] = {"239.1.2.3", "ff12::1=239.1.2.77", "239.1.2.3/IPv4=ff15::1",
				     "ff12::2", "ff12::3"};
	struct group *v[5];
	unsigned long count;
	long before, after;

	urcu_qsbr_register_thread();
	tb.groups_by_addr =
		cds_lfht_new_flavor(16, 16, 0, CDS_LFHT_AUTO_RESIZE, &urcu_qsbr_flavor, NULL);
	for (int s = 0; s < NSIDES; s++) {
		tb.sd[s].side = (enum side)s;
		tb.sd[s].groups = cds_lfht_new_flavor(16, 16, 0, CDS_LFHT_AUTO_RESIZE,
						      &urcu_qsbr_flavor, NULL);
	}
	for (int i = 0; i < 5; i++) {
		v[i] = made(specs[i]);
		EQ(group_publish(&tb, v[i]), 0, "publish %s", specs[i]);
	}
	for (int i = 0; i < 5; i++)
		for (int s = 0; s < NSIDES; s++)
			OK(group_lookup(&tb.sd[s], &v[i]->mgid[s]) == v[i],
			   "%s found by its %s MGID", specs[i], side_name[s]);
	OK(group_lookup_addr(&tb, htonl(0xef010203)) != NULL,
	   "239.1.2.3 in groups_by_addr (two groups make their MGID from it)");
	OK(group_lookup_addr(&tb, htonl(0xef01024d)) == NULL,
	   "239.1.2.77 not: ff12::1=239.1.2.77's IB side is a native MGID");
	OK(group_lookup_addr(&tb, 0) == NULL, "no group under address 0");
	cds_lfht_count_nodes(tb.groups_by_addr, &before, &count, &after);
	EQ(count, 2, "groups_by_addr holds the two groups made from an IPv4 address");
	/* A second group with an MGID in use on a side is refused by the table. */
	{
		struct group *d = made("ff12::3=239.1.2.88");

		EQ(group_publish(&tb, d), -EEXIST, "ff12::3 twice: -EEXIST");
		free(d);
	}
	for (int i = 0; i < 5; i++)
		group_unpublish(&tb, v[i]);
	cds_lfht_count_nodes(tb.groups_by_addr, &before, &count, &after);
	EQ(count, 0, "groups_by_addr empty after the unpublishes");
	cds_lfht_count_nodes(tb.sd[SIDE_IB].groups, &before, &count, &after);
	EQ(count, 0, "the IB table empty");
	urcu_qsbr_synchronize_rcu();
	for (int i = 0; i < 5; i++)
		free(v[i]);
	urcu_qsbr_unregister_thread();
}

/*
 * The group index (group_index_same) against the walk it replaces
 * (group_array_find_same) over a list built as add_group builds one: thousands of
 * candidates of every form, drawn from a small space so that many collide, each looked up
 * both ways (the same group and the same reason), and added when neither finds one. Then
 * the index dropped and made again from the list (group_index_sync) answers the same.
 */
static void index_matches_walk(void)
{
	static const char *const fmts[] = {"RDMA", "IPv4", "IPv6", "PORT", "IB"};
	struct group_index x = {0};
	struct group **list = NULL;
	uint32_t n = 0, cap = 0, differ = 0, by_ib = 0, by_roce = 0;
	uint64_t r = 88172645463325252ull;

	for (int i = 0; i < 6000; i++) {
		char spec[96];
		struct group *c = aligned_alloc(64, sizeof(*c)), *walk, *idx;
		const char *wwhy = NULL, *iwhy = NULL;
		unsigned a, b, k;

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		a = (unsigned)(r >> 8) % 8, b = (unsigned)(r >> 16) % 256, k = (unsigned)(r >> 32);
		switch ((r >> 40) % 6) {
		case 0:
			snprintf(spec, sizeof(spec), "239.1.%u.%u", a, b);
			break;
		case 1:
			snprintf(spec, sizeof(spec), "239.1.%u.%u:%u", a, b, 1000 + k % 4);
			break;
		case 2:
			snprintf(spec, sizeof(spec), "239.1.%u.%u/%s", a, b, fmts[k % 5]);
			break;
		case 3:
			snprintf(spec, sizeof(spec), "ff12::%x", k % 512);
			break;
		case 4:
			snprintf(spec, sizeof(spec), "ff12::%x=239.1.%u.%u", k % 512, a, b);
			break;
		default:
			snprintf(spec, sizeof(spec), "239.1.%u.%u=ff15::%x", a, b, k % 512);
			break;
		}
		if (!c)
			tap_bail("aligned_alloc");
		memset(c, 0, sizeof(*c));
		if (group_spec_parse(c, spec, MGID_RDMA, 4711, -1, QK_DEF, err, sizeof(err))) {
			free(c);
			continue;
		}
		walk = group_array_find_same(list, n, c, &wwhy);
		idx = group_index_same(&x, c, &iwhy);
		if (walk != idx || (walk && strcmp(wwhy, iwhy))) {
			if (differ++ < 5)
				DIAG("%s: walk %s (%s), index %s (%s)", spec,
				     walk ? walk->spec : "none", walk ? wwhy : "-",
				     idx ? idx->spec : "none", idx ? iwhy : "-");
		}
		if (walk) {
			by_ib += !strcmp(wwhy, "IB MGID");
			by_roce += !strcmp(wwhy, "RoCE group");
			free(c);
			continue;
		}
		if (group_array_push(&list, &n, &cap, c) || group_index_add(&x, c))
			tap_bail("out of memory");
	}
	EQ(differ, 0, "index and walk agree on 6000 candidates (%u groups kept)", n);
	OK(n > 1000 && by_ib > 100 && by_roce > 100,
	   "the draw exercised both reasons: %u groups, %u IB MGID, %u RoCE group", n, by_ib,
	   by_roce);
	EQ(x.ngroups, n, "the index counts the list's groups");
	group_index_free(&x);
	OK(x.e == NULL && x.ngroups == 0, "freed: empty");
	EQ(group_index_sync(&x, list, n), 0, "made again from the list");
	differ = 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *why;

		differ += group_index_same(&x, list[i], &why) != list[i];
	}
	EQ(differ, 0, "each group of the list finds itself in the index made again");
	EQ(group_index_sync(&x, list, n), 0, "a second sync of the same list keeps it");
	group_index_free(&x);
	for (uint32_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

int main(void)
{
	ok_ipv4();
	ok_ipv6();
	ok_equals();
	refusals();
	qkey_parse();
	duplicates();
	tables();
	index_matches_walk();
	return tap_done();
}
