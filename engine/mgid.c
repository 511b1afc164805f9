// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Group specifications ("addr[:port][/fmt][#tos]" as the reference bridge, "#w=N" or
 * "#tos,w=N" with a weight) and the
 * MGIDs a group has on each side.
 */
#include <errno.h>
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

static int spec_err(char *err, size_t errlen, const char *spec, const char *why)
{
	snprintf(err, errlen, "group '%s': %s", spec, why);
	return -EINVAL;
}

int group_spec_parse(struct group *g, const char *spec, enum mgid_fmt def_fmt, uint16_t def_port,
		     int def_tos, char *err, size_t errlen)
{
	char buf[sizeof(g->spec)], *p, *port = NULL, *fmt = NULL, *tos = NULL;
	struct in_addr a;
	bool tos_set = false, weight_set = false;

	if (strlen(spec) >= sizeof(buf))
		return spec_err(err, errlen, spec, "too long");
	strcpy(buf, spec);
	if ((p = strchr(buf, '#'))) {
		*p = 0;
		tos = p + 1;
	}
	if ((p = strchr(buf, '/'))) {
		*p = 0;
		fmt = p + 1;
	}
	if ((p = strchr(buf, ':'))) {
		*p = 0;
		port = p + 1;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return spec_err(err, errlen, spec, "not an IPv4 address");
	if ((ntohl(a.s_addr) >> 28) != 0xe)
		return spec_err(err, errlen, spec, "not a multicast address (224.0.0.0/4)");
	/* RFC 5771: the Local Network Control Block is never forwarded by routers. */
	if ((ntohl(a.s_addr) & 0xffffff00) == 0xe0000000)
		return spec_err(err, errlen, spec,
				"224.0.0.0/24 is link-local network control (RFC 5771), never "
				"forwarded");
	g->addr = a.s_addr;
	g->port = def_port;
	if (port) {
		char *end;
		unsigned long v = strtoul(port, &end, 10);

		if (!*port || *end || v == 0 || v > 65535)
			return spec_err(err, errlen, spec, "port must be 1..65535");
		g->port = (uint16_t)v;
	}
	g->fmt = (uint8_t)def_fmt;
	if (fmt) {
		int f = mgid_fmt_parse(fmt);

		if (f < 0)
			return spec_err(err, errlen, spec,
					"unknown MGID format (RDMA, IPv4, IPv6, PORT, IB)");
		g->fmt = (uint8_t)f;
	}
	g->tos_set = def_tos >= 0;
	g->tos = def_tos >= 0 ? (uint8_t)def_tos : 0;
	g->weight = 1;
	/* "#tos", "#w=N", "#tos,w=N": each option once. */
	for (char *opt = tos, *next; opt; opt = next) {
		char *end;
		unsigned long v;

		if ((next = strchr(opt, ',')))
			*next++ = 0;
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
		if (tos_set)
			return spec_err(err, errlen, spec, "TOS given twice");
		v = strtoul(opt, &end, 0);
		if (!*opt || *end || *opt == '-' || v > 255)
			return spec_err(err, errlen, spec, "TOS must be 0..255 (or w=N, the weight)");
		g->tos = (uint8_t)v;
		g->tos_set = true;
		tos_set = true;
	}
	snprintf(g->spec, sizeof(g->spec), "%s", spec);
	return 0;
}

void group_mgid_ib(const struct group *g, uint16_t pkey, union ibv_gid *m)
{
	uint32_t ip = ntohl(g->addr);
	uint16_t sig;

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
	memset(m, 0, sizeof(*m));
	m->raw[10] = 0xff;
	m->raw[11] = 0xff;
	memcpy(&m->raw[12], &g->addr, 4);
}
