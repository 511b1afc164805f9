// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The console's interfaces table (show.h: show_interfaces): each side's port, device
 * limits and GID table, queried live from the device.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <numa.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "bridge.h"
#include "concmd.h"
#include "console.h"
#include "ctl.h"
#include "health.h"
#include "loop.h"
#include "placement.h"
#include "pool.h"
#include "report.h"
#include "senders.h"
#include "show.h"
#include "show_priv.h"
#include "table.h"
#include "stream.h"
#include "tune.h"
#include "version_line.h"


static const char *port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN:
		return "down";
	case IBV_PORT_INIT:
		return "init";
	case IBV_PORT_ARMED:
		return "armed";
	case IBV_PORT_ACTIVE:
		return "active";
	case IBV_PORT_ACTIVE_DEFER:
		return "active_defer";
	default:
		return "nop";
	}
}

static unsigned mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static const char *gid_type_str(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	default:
		return "?";
	}
}

static bool gid_zero(const union ibv_gid *g)
{
	static const union ibv_gid zero;

	return !memcmp(g->raw, zero.raw, sizeof(zero.raw));
}

/* The port's GID table: every non-zero entry, with its type and network device. */
static void show_gid_table(const struct side_ctx *sd, int tbl_len, FILE *out)
{
	static const char *const hdr[] = {"index", "gid", "type", "netdev"};
	struct tbl t;
	uint32_t shown = 0;

	tbl_init(&t, hdr, sizeof(hdr) / sizeof(hdr[0]));
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;
		char gs[INET6_ADDRSTRLEN], ifn[IF_NAMESIZE];
		int r = ibv_query_gid_ex(sd->ctx, sd->port, (uint32_t)i, &e, 0);

		if (r == ENODATA)
			continue; /* an empty entry */
		if (r) {
			/* Kernels or providers without the extended query: no type, no netdev. */
			memset(&e, 0, sizeof(e));
			if (ibv_query_gid(sd->ctx, sd->port, i, &e.gid))
				continue;
			e.gid_type = UINT32_MAX;
		}
		if (gid_zero(&e.gid))
			continue;
		gid_str(&e.gid, gs, sizeof(gs));
		tbl_add(&t, true, "%d%s", i, i == sd->gid_index ? "*" : "");
		tbl_txt(&t, gs);
		tbl_txt(&t, gid_type_str(e.gid_type));
		if (!e.ndev_ifindex)
			tbl_txt(&t, "-");
		else if (if_indextoname(e.ndev_ifindex, ifn))
			tbl_txt(&t, ifn);
		else
			tbl_add(&t, false, "ifindex %u", e.ndev_ifindex);
		shown++;
	}
	fprintf(out, "  GID table (%u of %d entries in use, * = ours):\n", shown, tbl_len);
	tbl_print(&t, out, "    ");
}

static void show_interface(const struct side_ctx *sd, FILE *out)
{
	struct ibv_port_attr pa = sd->pattr;
	const struct ibv_device_attr *da = &sd->dattr;
	bool live = false, ib = sd->side == SIDE_IB;
	char gs[INET6_ADDRSTRLEN], a[INET_ADDRSTRLEN], m[INET_ADDRSTRLEN];
	struct tbl t;

	/* A removed device answers nothing useful: show what was known at start. */
	if (sd->ctx && sd->state != SIDE_REMOVED)
		live = !ibv_query_port(sd->ctx, sd->port, &pa);
	fprintf(out, "%s %s port %u (%s)\n", side_name[sd->side], sd->dev, sd->port,
		side_state_str(sd->state));
	tbl_init(&t, NULL, 2);
	tbl_txt(&t, "link layer");
	tbl_txt(&t, pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
		    : pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet"
							       : "unspecified");
	tbl_txt(&t, "port state");
	tbl_add(&t, false, "%s%s", port_state_str(pa.state), live ? "" : " (at start)");
	tbl_txt(&t, "active MTU");
	tbl_add(&t, false, "%u", mtu_bytes(pa.active_mtu));
	if (ib) {
		tbl_txt(&t, "LID");
		tbl_add(&t, false, "%#x", pa.lid);
		tbl_txt(&t, "SM LID");
		tbl_add(&t, false, "%#x", pa.sm_lid);
		tbl_txt(&t, "P_Key");
		tbl_add(&t, false, "%#06x", sd->pkey);
	}
	gid_str(&sd->gid, gs, sizeof(gs));
	tbl_txt(&t, "GID");
	tbl_add(&t, false, "%s (index %d)", gs, sd->gid_index);
	if (!ib) {
		ipv4_str(sd->ipv4, a, sizeof(a));
		tbl_txt(&t, "IPv4");
		if (sd->netmask) {
			ipv4_str(sd->netmask, m, sizeof(m));
			tbl_add(&t, false, "%s netmask %s", a, m);
		} else {
			tbl_add(&t, false, "%s (no interface holds it: source subnet not checked)",
				a);
		}
	}
	tbl_txt(&t, "firmware");
	tbl_txt(&t, da->fw_ver[0] ? da->fw_ver : "-");
	tbl_txt(&t, "max_qp");
	tbl_add(&t, false, "%d", da->max_qp);
	tbl_txt(&t, "max_mcast_grp");
	tbl_add(&t, false, "%d", da->max_mcast_grp);
	tbl_txt(&t, "max_mcast_qp_attach");
	tbl_add(&t, false, "%d", da->max_mcast_qp_attach);
	tbl_txt(&t, "max_total_mcast_qp_attach");
	tbl_add(&t, false, "%d", da->max_total_mcast_qp_attach);
	tbl_txt(&t, "loopback blocking");
	tbl_txt(&t, sd->block_lb ? "hardware (QP flag)" : "filter (own packets dropped by source)");
	tbl_txt(&t, "port events");
	tbl_add(&t, false, "%" PRIu64 " (%" PRIu64 " re-joins)", sd->port_events, sd->rejoins);
	tbl_print(&t, out, "  ");
	if (live)
		show_gid_table(sd, pa.gid_tbl_len, out);
}

int show_interfaces(struct ctl *c, const char *name, FILE *out)
{
	struct bridge *br = c->br;
	bool found = false;

	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];

		if (name && strcmp(name, sd->dev) && strcasecmp(name, side_name[s]))
			continue;
		if (found)
			fputc('\n', out);
		show_interface(sd, out);
		found = true;
	}
	if (!found) {
		fprintf(out, "no interface '%s' (have: %s, %s)\n", name, br->sd[SIDE_IB].dev,
			br->sd[SIDE_ROCE].dev);
		return -ENOENT;
	}
	return 0;
}

