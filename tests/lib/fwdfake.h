/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A fake bridge for the data path without verbs (tests/lib/fwdfake.c): two sides up, one
 * channel each, groups published in the real RCU tables, and receive buffers crafted as
 * the NIC delivers them. Shared by the rules' unit test (tests/engine/test_fwd_rules.c)
 * and the instruction benchmark (bench/fast_cost.c), which both include engine/fwd.c and
 * drive its static functions (rx_classify, chan_rx, rx_fast_run) on these.
 *
 * The ports: IB GID fe80::2:c903:aa:bb01 (ib_port_gid); RoCE 192.168.1.10/24 and
 * fd00:0:0:1::a/64 at GID index 5 (the link-local entry is the caller's to set). Our QPN
 * on each side is OWN_QPN; the crafted packets come from PEER_QPN, from ib_other_gid on
 * IB. Single-threaded: the caller is the QSBR reader fwdfake_bridge_init registers.
 */
#ifndef TESTS_LIB_FWDFAKE_H
#define TESTS_LIB_FWDFAKE_H

#include <stdint.h>
#include <netinet/ip.h>

#include "bridge.h"

#define OWN_QPN	 0x000111u /* the QPN of our channel on each side */
#define PEER_QPN 0x000222u /* a sender's QPN */
#define PAYLOAD	 64u	   /* the payload bytes of a crafted packet */

extern const union ibv_gid ib_port_gid;	 /* the bridge's IB port */
extern const union ibv_gid ib_other_gid; /* another IB port: the senders' */

/* An IPv6 address from its text (aborts on a bad one). */
union ibv_gid ip6(const char *txt);

/* An IPv4 address a.b.c.d in network order. */
uint32_t ip4(unsigned a, unsigned b, unsigned c, unsigned d);

/* The IB MGID of a group: IPoIB's format for IPv4 (ff12:<sig>:ffff::a.b.c.d, the top
 * nibble of a kept here), `sig` the two signature bytes. */
union ibv_gid ib_mgid(uint16_t sig, uint32_t addr);

/* The RoCE MGID of a group: ::ffff:a.b.c.d. */
union ibv_gid roce_mgid(uint32_t addr);

/*
 * Set up br and its channels ch[SIDE_IB], ch[SIDE_ROCE] (zeroed by the caller: static
 * storage) as above, with empty group tables, and register the calling thread as a QSBR
 * reader. Bridging stays as the caller left it (br->bridging). Once per process.
 */
void fwdfake_bridge_init(struct bridge *br, struct channel ch[NSIDES]);

/* Publish IPv4 group g (addr, network order) with direction dir and ready bits `ready`,
 * its MGIDs ib_mgid(0x401b, addr) and roce_mgid(addr). Aborts when publishing fails. */
void fwdfake_group_init(struct bridge *br, struct group *g, uint32_t addr, enum group_dir dir,
			uint32_t ready);

/* Publish IPv6 group g (the text of an IPv6 multicast address, the same MGID on both
 * sides as a native MGID on IB), both directions, ready on both sides. */
void fwdfake_group6_init(struct bridge *br, struct group *g, const char *addr);

/* A received packet: its header area and the work completion that came with it. */
struct rx {
	uint8_t hdr[BR_GRH_LEN];
	struct ibv_wc wc;
};

/* An IB multicast packet from ib_other_gid's QP PEER_QPN, hop limit 0, to IPv4 group
 * address addr (MGID ib_mgid(0x401b, addr)). */
struct rx ib_pkt(uint32_t addr);

/* Set the IPv4 header checksum (RFC 791), as a NIC delivers it. */
void ip_csum_set(struct iphdr *ip);

/* A RoCEv2 packet from saddr to daddr: bytes 0-19 zero (as rxe), the IPv4 header at 20. */
struct rx roce_pkt(uint32_t saddr, uint32_t daddr);

/* A RoCEv2 over IPv6 packet from src to dst: the IPv6 header in the 40 bytes. */
struct rx roce6_pkt(const char *src, const char *dst);

/* The IPv4 header of a RoCE packet. */
static inline struct iphdr *roce_ip(struct rx *r)
{
	return (struct iphdr *)(r->hdr + BR_IPV4_OFF);
}

#endif /* TESTS_LIB_FWDFAKE_H */
