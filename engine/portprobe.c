// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* portprobe.c - the port rule of ib2roce's sides and of the tools (portprobe.h). */
#include <string.h>
#include <arpa/inet.h>

#include "portprobe.h"

static bool gid_is_ipv4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

/* The RoCEv2 GID with an IPv4-mapped address (what rdma_cm binds IPv4 to). */
static int roce_v2_ipv4_gid(struct ibv_context *ctx, uint8_t port, int tbl_len, union ibv_gid *gid)
{
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && gid_is_ipv4(&e.gid)) {
			*gid = e.gid;
			return i;
		}
	}
	return -1;
}

static bool gid_is_linklocal(const union ibv_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80; /* fe80::/10 */
}

/*
 * The RoCEv2 entries of IPv6 addresses (the kernel's RoCE GID cache adds one v1 and one
 * v2 entry per address of the netdev, drivers/infiniband/core/roce_gid_mgmt.c): the first
 * global one and the link-local one, and the netdev's ifindex.
 */
static void roce_v2_ipv6_gids(struct ibv_context *ctx, uint8_t port, int tbl_len,
			      struct portprobe *pp)
{
	pp->gid6_index = pp->gid6ll_index = -1;
	pp->ifindex = 0;
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2 || gid_is_ipv4(&e.gid))
			continue;
		if (!pp->ifindex)
			pp->ifindex = e.ndev_ifindex;
		if (gid_is_linklocal(&e.gid)) {
			if (pp->gid6ll_index < 0) {
				pp->gid6ll = e.gid;
				pp->gid6ll_index = i;
			}
		} else if (pp->gid6_index < 0 && e.gid.raw[0] != 0xff) {
			pp->gid6 = e.gid;
			pp->gid6_index = i;
		}
	}
}

bool portprobe_port_try(struct ibv_context *ctx, uint8_t port, bool ib, bool down_ok,
			struct portprobe *pp)
{
	struct ibv_port_attr *pa = &pp->pattr;

	if (ibv_query_port(ctx, port, pa) || (pa->state != IBV_PORT_ACTIVE && !down_ok))
		return false;
	if (ib) {
		__be16 pkey;

		if (pa->link_layer != IBV_LINK_LAYER_INFINIBAND)
			return false;
		if (ibv_query_gid(ctx, port, 0, &pp->gid) || ibv_query_pkey(ctx, port, 0, &pkey))
			return false;
		pp->gid_index = 0;
		pp->pkey = ntohs(pkey);
		pp->ipv4 = 0;
		pp->gid6_index = pp->gid6ll_index = -1;
		pp->ifindex = 0;
	} else {
		if (pa->link_layer != IBV_LINK_LAYER_ETHERNET)
			return false;
		pp->gid_index = roce_v2_ipv4_gid(ctx, port, pa->gid_tbl_len, &pp->gid);
		if (pp->gid_index < 0)
			return false;
		memcpy(&pp->ipv4, &pp->gid.raw[12], 4);
		pp->pkey = 0xffff;
		roce_v2_ipv6_gids(ctx, port, pa->gid_tbl_len, pp);
	}
	pp->mtu = 128u << pa->active_mtu;
	return true;
}
