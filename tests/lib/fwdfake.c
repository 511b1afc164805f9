// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The fake bridge of the data path's tests and benchmark (fwdfake.h): set-up and crafted
 * receive buffers, as the NIC delivers them: IB, a 40-byte GRH then the payload; RoCEv2
 * over IPv4, bytes 0-19 undefined and the IPv4 header at offset 20
 * (reference/verbs-facts.md section 3: 0x45, TOS, tot_len, id, frag_off with DF, TTL,
 * protocol 17, checksum, saddr, daddr); over IPv6, the IPv6 header in the 40 bytes; the
 * NIC strips UDP port 4791, BTH and DETH.
 */
#include "fwdfake.h"

#include <arpa/inet.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

const union ibv_gid ib_port_gid = {
	.raw = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0xbb, 0x01}};
const union ibv_gid ib_other_gid = {
	.raw = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0xbb, 0x02}};

union ibv_gid ip6(const char *txt)
{
	union ibv_gid g;

	if (inet_pton(AF_INET6, txt, g.raw) != 1)
		abort();
	return g;
}

uint32_t ip4(unsigned a, unsigned b, unsigned c, unsigned d)
{
	return htonl(a << 24 | b << 16 | c << 8 | d);
}

union ibv_gid ib_mgid(uint16_t sig, uint32_t addr)
{
	union ibv_gid m = {.raw = {0xff, 0x12, (uint8_t)(sig >> 8), (uint8_t)sig, 0xff, 0xff}};

	memcpy(m.raw + 12, &addr, 4);
	return m;
}

union ibv_gid roce_mgid(uint32_t addr)
{
	union ibv_gid m = {.raw = {[10] = 0xff, [11] = 0xff}};

	memcpy(m.raw + 12, &addr, 4);
	return m;
}

void fwdfake_bridge_init(struct bridge *br, struct channel ch[NSIDES])
{
	static struct {
		struct qpn_set set;
		uint32_t qpn[1];
	} own_qpn[NSIDES];
	struct side_ctx *roce = &br->sd[SIDE_ROCE];

	urcu_qsbr_register_thread();
	br->groups_by_addr =
		cds_lfht_new_flavor(16, 16, 0, CDS_LFHT_AUTO_RESIZE, &urcu_qsbr_flavor, NULL);
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br->sd[s];

		sd->side = (enum side)s;
		sd->state = SIDE_UP;
		sd->groups = cds_lfht_new_flavor(16, 16, 0, CDS_LFHT_AUTO_RESIZE, &urcu_qsbr_flavor,
						 NULL);
		sd->nchan = 1;
		own_qpn[s].set.n = 1;
		own_qpn[s].set.qpn[0] = OWN_QPN;
		sd->own = &own_qpn[s].set;
		sd->mtu = 4096;
		sd->gid6_index = sd->gid6ll_index = -1;
		ch[s].side = (enum side)s;
		ch[s].br = br;
		ch[s].sd = sd;
		ch[s].peer = &ch[!s];
		ch[s].glast = &ch[s].gcache[0];
	}
	br->sd[SIDE_IB].gid = ib_port_gid;
	roce->ipv4 = ip4(192, 168, 1, 10);
	roce->netmask = ip4(255, 255, 255, 0);
	/* The port's global IPv6 RoCE v2 entry (GID 5 of an mlx5 port) and its prefix. */
	roce->gid6 = ip6("fd00:0:0:1::a");
	roce->gid6_index = 5;
	memcpy(roce->net6, roce->gid6.raw, 8); /* fd00:0:0:1::/64 */
	roce->mask6[0] = UINT64_MAX;
}

void fwdfake_group_init(struct bridge *br, struct group *g, uint32_t addr, enum group_dir dir,
			uint32_t ready)
{
	g->addr = addr;
	g->ib_addr = addr; /* the IB MGID is made from it (groups_by_addr) */
	g->dir = dir;
	g->mgid[SIDE_IB] = ib_mgid(0x401b, addr);
	g->mgid[SIDE_ROCE] = roce_mgid(addr);
	atomic_store(&g->ready, ready);
	if (group_publish(br, g))
		abort();
}

void fwdfake_group6_init(struct bridge *br, struct group *g, const char *addr)
{
	g->dir = DIR_BOTH;
	g->mgid[SIDE_IB] = ip6(addr);
	g->mgid[SIDE_ROCE] = ip6(addr);
	atomic_store(&g->ready, 1u << SIDE_IB | 1u << SIDE_ROCE);
	if (group_publish(br, g))
		abort();
}

/* The work completion of a crafted packet. */
static const struct ibv_wc rx_wc = {.status = IBV_WC_SUCCESS,
				    .opcode = IBV_WC_RECV,
				    .byte_len = BR_GRH_LEN + PAYLOAD,
				    .wc_flags = IBV_WC_GRH,
				    .src_qp = PEER_QPN};

struct rx ib_pkt(uint32_t addr)
{
	struct rx r = {.wc = rx_wc};
	struct ibv_grh *grh = (struct ibv_grh *)r.hdr;

	grh->version_tclass_flow = htonl(6u << 28);
	grh->paylen = htons(PAYLOAD + 12 + 8 + 4); /* BTH, DETH, ICRC */
	grh->next_hdr = 0x1b;
	grh->hop_limit = 0;
	grh->sgid = ib_other_gid;
	grh->dgid = ib_mgid(0x401b, addr);
	return r;
}

void ip_csum_set(struct iphdr *ip)
{
	const uint8_t *b = (const uint8_t *)ip;
	uint32_t sum = 0;

	ip->check = 0;
	for (unsigned i = 0; i < sizeof(*ip); i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip->check = htons((uint16_t)~sum);
}

struct rx roce_pkt(uint32_t saddr, uint32_t daddr)
{
	struct rx r = {.wc = rx_wc};
	struct iphdr *ip = roce_ip(&r);

	ip->version = IPVERSION;
	ip->ihl = sizeof(*ip) / 4;
	ip->tot_len = htons(sizeof(*ip) + sizeof(struct udphdr) + 12 + 8 + PAYLOAD + 4);
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = saddr;
	ip->daddr = daddr;
	ip_csum_set(ip);
	return r;
}

struct rx roce6_pkt(const char *src, const char *dst)
{
	struct rx r = {.wc = rx_wc};
	struct ip6_hdr *ip6h = (struct ip6_hdr *)r.hdr;
	union ibv_gid s = ip6(src), d = ip6(dst);

	ip6h->ip6_flow = htonl(6u << 28);
	ip6h->ip6_plen = htons(sizeof(struct udphdr) + 12 + 8 + PAYLOAD + 4);
	ip6h->ip6_nxt = IPPROTO_UDP;
	ip6h->ip6_hlim = 64;
	memcpy(&ip6h->ip6_src, s.raw, 16);
	memcpy(&ip6h->ip6_dst, d.raw, 16);
	return r;
}
