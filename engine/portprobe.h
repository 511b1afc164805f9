/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * portprobe.h - which port serves a fabric the way ib2roce uses it: the rule of the
 * bridge's sides (engine/setup.c side_open) and of mcsender/mclisten (tools/mctool.c),
 * kept in one place so that the tools choose the port the bridge would.
 *
 * InfiniBand: an InfiniBand link layer, GID index 0 and P_Key index 0. RoCE: an Ethernet
 * link layer with a RoCEv2 GID holding an IPv4-mapped address (what rdma_cm binds an
 * IPv4 address to), the first such GID of the table; its IPv6 RoCEv2 entries are noted
 * beside it for IPv6 groups.
 */
#ifndef ENGINE_PORTPROBE_H
#define ENGINE_PORTPROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

struct portprobe {
	struct ibv_port_attr pattr; /* ibv_query_port */
	union ibv_gid gid;	    /* the GID the port is used with */
	int gid_index;
	uint16_t pkey; /* IB: P_Key index 0 (host order); RoCE: 0xffff */
	uint32_t ipv4; /* RoCE: the GID's IPv4 address (network order); IB: 0 */
	uint32_t mtu;  /* active MTU in bytes */
	/*
	 * RoCE: the port's IPv6 entries of the GID table, RoCE v2 (what an IPv6 group is
	 * sent and received with: docs/architecture.md "RoCEv2 over IPv6"): the first
	 * global (not link-local, not IPv4-mapped) address and the link-local one; index -1
	 * when the table has none. ifindex: the netdev behind the port (the GID entry's
	 * ndev_ifindex), 0 when the table does not say.
	 */
	union ibv_gid gid6;
	int gid6_index;
	union ibv_gid gid6ll;
	int gid6ll_index;
	uint32_t ifindex;
};

/*
 * portprobe_port_try - does port of ctx serve InfiniBand (ib) or RoCEv2 (!ib)? A port
 * that is not active qualifies only with down_ok. Fills *pp when it does (pp is
 * undefined otherwise). Any thread; verbs queries only.
 */
bool portprobe_port_try(struct ibv_context *ctx, uint8_t port, bool ib, bool down_ok,
			struct portprobe *pp);

#endif /* ENGINE_PORTPROBE_H */
