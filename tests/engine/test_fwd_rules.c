// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Unit tests of the data path's classification and discard rules (engine/fwd.c) on
 * crafted receive buffers, as the NIC delivers them: IB, a 40-byte GRH then the payload;
 * RoCEv2 over IPv4, bytes 0-19 undefined and the IPv4 header at offset 20
 * (reference/verbs-facts.md section 3: 0x45, TOS, tot_len, id, frag_off with DF, TTL,
 * protocol 17, checksum, saddr, daddr), then the payload (the NIC strips UDP port 4791,
 * BTH and DETH).
 *
 * How the rules are reached: this file includes engine/fwd.c, so its static functions
 * (rx_classify, chan_rx, rx_pgm) are called as they are, and fwd.c's generated code in
 * the engine library is not changed by any test hook. The engine library's other
 * objects (group tables, pool, senders) are linked as the bridge links them; fwd.c's
 * own object is not pulled from the archive (this object defines its symbols).
 *
 * Each packet's verdict is checked twice: rx_classify's (the group, or a drop reason),
 * and for a drop the counter chan_rx moves (ch->st.drops[reason], the only counter that
 * moves, and the buffer handed back to the free list).
 */
#include "fwd.c"

#include <netinet/ip6.h>

#include "fwdfake.h"
#include "tap.h"

#define FWD DROP_NREASONS /* the verdict "forwarded" */

static struct bridge br;
static struct channel ch[NSIDES];
static struct group g_both, g_out, g_in, g_idle, g_v6;
/* The receive buffers: one buffer of 512 bytes (the pool's data region). */
static uint8_t region_buf[512] __attribute__((aligned(64)));

/* The RoCE port's IPv6 addresses (GID entries 5 and 1 of an mlx5 port with both). */
static union ibv_gid roce_port_gid6, roce_port_gid6ll;

/* The fake bridge (tests/lib/fwdfake.h) with the groups and peers of the tests below. */
static void setup(void)
{
	fwdfake_bridge_init(&br, ch);
	roce_port_gid6 = br.sd[SIDE_ROCE].gid6;
	roce_port_gid6ll = ip6("fe80::ff:fe00:10a");
	br.cfg.peers[0] = ip4(192, 168, 1, 20);
	br.cfg.npeers = 1;
	fwdfake_group_init(&br, &g_both, ip4(239, 1, 2, 3), DIR_BOTH,
			   1u << SIDE_IB | 1u << SIDE_ROCE);
	fwdfake_group_init(&br, &g_out, ip4(239, 1, 2, 4), DIR_OUT,
			   1u << SIDE_IB | 1u << SIDE_ROCE);
	fwdfake_group_init(&br, &g_in, ip4(239, 1, 2, 5), DIR_IN, 1u << SIDE_IB | 1u << SIDE_ROCE);
	fwdfake_group_init(&br, &g_idle, ip4(239, 1, 2, 6), DIR_BOTH, 0);
	/* RoCEv2 over IPv6: the port's link-local RoCE v2 entry beside fwdfake's global one
	 * (fd00:0:0:1::a, prefix /64), an IPv6 peer, and an IPv6 group (ff0e::1234 on both
	 * sides, as a native MGID on IB). */
	br.sd[SIDE_ROCE].gid6ll = roce_port_gid6ll;
	br.sd[SIDE_ROCE].gid6ll_index = 1;
	br.cfg.peers6[0] = ip6("fd00:0:0:1::20");
	br.cfg.npeers6 = 1;
	fwdfake_group6_init(&br, &g_v6, "ff0e::1234");
}

/* A burst as chan_burst_side starts one (the fields the rules read). */
static struct burst burst_new(enum side side)
{
	struct burst b = {.w = NULL, .br = &br, .pool = NULL};

	b.region = (struct region){region_buf, sizeof(region_buf)};
	b.bridging = atomic_load(&br.bridging) != 0;
	b.check_own = !br.sd[side].block_lb;
	return b;
}

/* rx_classify's group for the packet (NULL: dropped, *why the reason). */
static struct group *classify(enum side side, const struct rx *r, enum drop_reason *why)
{
	struct burst b = burst_new(side);
	struct src_addr src;

	memcpy(region_buf, r->hdr, BR_GRH_LEN);
	*why = FWD;
	return rx_classify(&b, &ch[side], side, &r->wc, region_buf, &src, why);
}

/*
 * The verdict of the rules on a packet received on side `side`: FWD when rx_classify
 * found its group (*gp), else the drop reason, checked against chan_rx: the one counter
 * it moved (by one), and the buffer back on the free list.
 */
static int verdict(enum side side, const struct rx *r, struct group **gp)
{
	struct channel *c = &ch[side];
	uint64_t before[DROP_NREASONS];
	enum drop_reason why = FWD;
	struct freelist fl = {.n = 0};
	struct burst b = burst_new(side);
	struct group *g = NULL;
	int moved = -1, nmoved = 0;

	if (r->wc.status == IBV_WC_SUCCESS)
		g = classify(side, r, &why);
	if (gp)
		*gp = g;
	if (g)
		return FWD;
	memcpy(before, c->st.drops, sizeof(before));
	memcpy(region_buf, r->hdr, BR_GRH_LEN);
	chan_rx(&b, c, side, &r->wc, &fl);
	for (int i = 0; i < DROP_NREASONS; i++) {
		if (c->st.drops[i] != before[i]) {
			nmoved++;
			moved = i;
			CHECK_EQ(c->st.drops[i] - before[i], 1);
		}
	}
	CHECK_EQ(nmoved, 1);
	CHECK_EQ(fl.n, 1); /* the buffer goes back to the pool */
	if (r->wc.status == IBV_WC_SUCCESS)
		CHECK_EQ(moved, why); /* chan_rx counts what rx_classify said */
	return moved;
}

static void test_ib(void)
{
	struct group *g;
	struct rx r;

	printf("# IB: the GRH at offset 0\n");
	r = ib_pkt(g_both.addr);
	CHECK_EQ(verdict(SIDE_IB, &r, &g), FWD);
	CHECK(g == &g_both);

	/* The loop marker: hop limit BR_IB_MARKER_HOP_LIMIT (1), what a bridge sets. */
	r = ib_pkt(g_both.addr);
	r.hdr[offsetof(struct ibv_grh, hop_limit)] = BR_IB_MARKER_HOP_LIMIT;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_LOOP);
	/* Native senders are forwarded: perftest's 255, rdma_cm's (the SA record's) 0 or
	 * 255, anything else but the marker. */
	r.hdr[offsetof(struct ibv_grh, hop_limit)] = 255;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);
	r.hdr[offsetof(struct ibv_grh, hop_limit)] = 64;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);
	r.hdr[offsetof(struct ibv_grh, hop_limit)] = 0;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);

	/* No GRH flag in the completion: nothing of the header is read. */
	r = ib_pkt(g_both.addr);
	r.wc.wc_flags = 0;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_NO_GRH);

	/* A receive completion with an error status. */
	r = ib_pkt(g_both.addr);
	r.wc.status = IBV_WC_LOC_LEN_ERR;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_RX_ERROR);

	/* Unicast: a DGID that is not a multicast GID (first byte not 0xff). */
	r = ib_pkt(g_both.addr);
	r.hdr[offsetof(struct ibv_grh, dgid)] = 0xfe;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_UNICAST);

	/* Our own packet back: our port GID and one of our QPNs. */
	r = ib_pkt(g_both.addr);
	((struct ibv_grh *)r.hdr)->sgid = ib_port_gid;
	r.wc.src_qp = OWN_QPN;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_OWN);
	/* ... before the loop marker is looked at. */
	r.hdr[offsetof(struct ibv_grh, hop_limit)] = 1;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_OWN);
	r.hdr[offsetof(struct ibv_grh, hop_limit)] = 0;
	/* Another QP of our own port: not ours, forwarded. */
	r.wc.src_qp = PEER_QPN;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);
	/* Our QPN from another port: forwarded. */
	((struct ibv_grh *)r.hdr)->sgid = ib_other_gid;
	r.wc.src_qp = OWN_QPN;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);
	/* With the hardware blocking our own multicast (block_lb) the filter is off. */
	((struct ibv_grh *)r.hdr)->sgid = ib_port_gid;
	br.sd[SIDE_IB].block_lb = true;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);
	br.sd[SIDE_IB].block_lb = false;

	/* A group not bridged. */
	r = ib_pkt(ip4(239, 9, 9, 9));
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_UNKNOWN_GROUP);

	/* A bridged group's address in another MGID format: another signature, or the
	 * address's top nibble cleared as IPoIB's mapping does. */
	r = ib_pkt(g_both.addr);
	((struct ibv_grh *)r.hdr)->dgid = ib_mgid(0x601b, g_both.addr);
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_MGID_FORMAT);
	((struct ibv_grh *)r.hdr)->dgid.raw[3] = 0x1b;
	((struct ibv_grh *)r.hdr)->dgid.raw[12] &= 0x0f;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_MGID_FORMAT);
}

static void test_roce(void)
{
	uint32_t src = ip4(192, 168, 1, 33), own = br.sd[SIDE_ROCE].ipv4;
	struct group *g;
	struct rx r;

	printf("# RoCEv2: the IPv4 header at offset 20 of the 40-byte area\n");
	r = roce_pkt(src, g_both.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, &g), FWD);
	CHECK(g == &g_both);
	/* Bytes 0-19 are undefined: what they hold does not matter, even a first nibble 6
	 * (IPv6's version), as long as the IPv4 header's checksum is right (rdma-core's
	 * get_grh_header_version). */
	memset(r.hdr, 0x60, BR_IPV4_OFF);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	/* With a wrong checksum that area is an IPv6 header (destination bytes 24-39: the
	 * IPv4 header's bytes 4-19, not multicast). */
	roce_ip(&r)->check ^= 1;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNICAST);

	/* Not IPv4 without options: another version, or a header length other than 5. */
	r = roce_pkt(src, g_both.addr);
	roce_ip(&r)->version = 6;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_BAD_HEADER);
	r = roce_pkt(src, g_both.addr);
	roce_ip(&r)->ihl = 6; /* options */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_BAD_HEADER);
	roce_ip(&r)->ihl = 4; /* shorter than a header */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_BAD_HEADER);
	r = roce_pkt(src, g_both.addr);
	memset(r.hdr + BR_IPV4_OFF, 0, sizeof(struct iphdr)); /* a header of zeros */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_BAD_HEADER);

	/* No GRH flag. */
	r = roce_pkt(src, g_both.addr);
	r.wc.wc_flags = 0;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_NO_GRH);

	/* Unicast: a destination outside 224.0.0.0/4 (either edge of the range). */
	r = roce_pkt(src, ip4(192, 168, 1, 10));
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNICAST);
	r = roce_pkt(src, ip4(240, 1, 2, 3));
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNICAST);
	r = roce_pkt(src, ip4(223, 255, 255, 255));
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNICAST);

	/* TTL: no rule on RoCE (the loop marker is IB's hop limit; peers and own packets are
	 * told by address). TTL 1 and 0 are forwarded as any other. */
	r = roce_pkt(src, g_both.addr);
	roce_ip(&r)->ttl = 1;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	roce_ip(&r)->ttl = 0;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);

	/* Fragments: no rule either. A RoCEv2 NIC delivers only whole datagrams (sent with
	 * DF) to a UD QP; the rules look at the addresses only, whatever frag_off says. */
	r = roce_pkt(src, g_both.addr);
	roce_ip(&r)->frag_off = htons(IP_MF);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	roce_ip(&r)->frag_off = htons(185); /* a later fragment, offset 1480 */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);

	/* Our own packet back: our address and one of our QPNs. */
	r = roce_pkt(own, g_both.addr);
	r.wc.src_qp = OWN_QPN;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_OWN);
	r.wc.src_qp = PEER_QPN; /* another QP of this host */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	r.wc.src_qp = OWN_QPN;
	br.sd[SIDE_ROCE].block_lb = true;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	br.sd[SIDE_ROCE].block_lb = false;
	r = roce_pkt(src, g_both.addr); /* our QPN from another host */
	r.wc.src_qp = OWN_QPN;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);

	/* A configured peer bridge's packets. */
	r = roce_pkt(br.cfg.peers[0], g_both.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_PEER);

	/* A source outside the interface's subnet, unless foreign sources are allowed. */
	r = roce_pkt(ip4(10, 0, 0, 1), g_both.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_FOREIGN);
	br.cfg.allow_foreign = true;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	br.cfg.allow_foreign = false;
	br.sd[SIDE_ROCE].netmask = 0; /* netmask unknown: no check */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	br.sd[SIDE_ROCE].netmask = ip4(255, 255, 255, 0);

	/* A group not bridged. */
	r = roce_pkt(src, ip4(239, 9, 9, 9));
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNKNOWN_GROUP);
}

/* RoCEv2 over IPv6: the IPv6 header at offset 0 (docs/architecture.md). */
static void test_roce6(void)
{
	struct group *g;
	struct src_addr src;
	struct burst b;
	struct rx r;

	printf("# RoCEv2 over IPv6: the IPv6 header at offset 0\n");
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::1234");
	CHECK_EQ(verdict(SIDE_ROCE, &r, &g), FWD);
	CHECK(g == &g_v6);
	/* The sender's key is the 16-byte source address. */
	b = burst_new(SIDE_ROCE);
	memcpy(region_buf, r.hdr, BR_GRH_LEN);
	{
		enum drop_reason why = FWD;
		union ibv_gid s6 = ip6("fd00:0:0:1::33");

		CHECK(rx_classify(&b, &ch[SIDE_ROCE], SIDE_ROCE, &r.wc, region_buf, &src, &why) ==
		      &g_v6);
		CHECK(!memcmp(&src.hi, s6.raw, 8) && !memcmp(&src.lo, s6.raw + 8, 8));
	}
	/* A source whose byte 12 is 0x45 (where an IPv4 header would start): still IPv6, its
	 * "IPv4 header" has no valid checksum. */
	r = roce6_pkt("fd00:0:0:1:0:0:4500:33", "ff0e::1234");
	CHECK_EQ(r.hdr[BR_IPV4_OFF], 0x45);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);

	/* Hop limit: no rule (as IPv4's TTL): 1 and 0 forwarded. */
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::1234");
	((struct ip6_hdr *)r.hdr)->ip6_hlim = 1;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	((struct ip6_hdr *)r.hdr)->ip6_hlim = 0;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);

	/* Unicast: a destination outside ff00::/8 (an IPv4-mapped one too). */
	r = roce6_pkt("fd00:0:0:1::33", "fd00:0:0:1::a");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNICAST);
	r = roce6_pkt("fd00:0:0:1::33", "::ffff:239.1.2.3");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNICAST);

	/* Another IP version in the first nibble (and no IPv4 at 20): a bad header. */
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::1234");
	r.hdr[0] = 0x50;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_BAD_HEADER);

	/* Our own packet back: our global or link-local address and one of our QPNs. */
	r = roce6_pkt("fd00:0:0:1::a", "ff0e::1234");
	r.wc.src_qp = OWN_QPN;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_OWN);
	r = roce6_pkt("fe80::ff:fe00:10a", "ff0e::1234");
	r.wc.src_qp = OWN_QPN;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_OWN);
	r.wc.src_qp = PEER_QPN; /* another QP of this host */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	r.wc.src_qp = OWN_QPN;
	br.sd[SIDE_ROCE].block_lb = true;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	br.sd[SIDE_ROCE].block_lb = false;
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::1234"); /* our QPN from another host */
	r.wc.src_qp = OWN_QPN;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	/* Our IPv4-mapped address in an IPv6 header is not ours (another host's address). */

	/* A configured IPv6 peer bridge; an IPv4 peer's mapped address is not an IPv6 one. */
	r = roce6_pkt("fd00:0:0:1::20", "ff0e::1234");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_PEER);
	r = roce6_pkt("fd00:0:0:1::21", "ff0e::1234");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	/* ... and the IPv6 peer list does not touch IPv4 packets. */
	r = roce_pkt(ip4(192, 168, 1, 20), g_both.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_PEER);
	r = roce_pkt(ip4(192, 168, 1, 21), g_both.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);

	/* A source outside the interface's IPv6 prefix; link-local sources are on the link. */
	r = roce6_pkt("fd00:0:0:2::1", "ff0e::1234");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_FOREIGN);
	br.cfg.allow_foreign = true;
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	br.cfg.allow_foreign = false;
	br.sd[SIDE_ROCE].mask6[0] = 0; /* prefix unknown: no check */
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	br.sd[SIDE_ROCE].mask6[0] = UINT64_MAX;
	r = roce6_pkt("fe80::1234:5678", "ff0e::1234");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);

	/* A group not bridged; an IPv4 group's RoCE MGID is not an IPv6 group. */
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::9999");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNKNOWN_GROUP);
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::ffff:ef01:203");
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNKNOWN_GROUP);

	/* An IPv6 header with 0x45 at byte 20 (IPv6 or IPv4 by the checksum) leaves no flow
	 * behind (flow_set): the fast path would not take it (roce_fast_ipv6). */
	{
		static struct chan_flow flows[CH_FLOWS];
		struct chan_flow *saved = ch[SIDE_ROCE].flows;
		struct sender snd = {.key.qpn = PEER_QPN};
		unsigned set = 0;

		ch[SIDE_ROCE].flows = flows;
		b = burst_new(SIDE_ROCE);
		b.flows_ok = true;
		r = roce6_pkt("fd00:0:0:1:0:0:4500:33", "ff0e::1234");
		memcpy(region_buf, r.hdr, BR_GRH_LEN);
		flow_set(&b, &ch[SIDE_ROCE], SIDE_ROCE, region_buf, &src, &g_v6, &snd, NULL, 0,
			 4096);
		for (unsigned i = 0; i < CH_FLOWS; i++)
			set += flows[i].lim != 0;
		CHECK_EQ(set, 0);
		/* An IPv4 packet does (the same call). */
		r = roce_pkt(ip4(192, 168, 1, 33), g_both.addr);
		memcpy(region_buf, r.hdr, BR_GRH_LEN);
		flow_set(&b, &ch[SIDE_ROCE], SIDE_ROCE, region_buf, &src, &g_both, &snd, NULL, 0,
			 4096);
		for (unsigned i = 0; i < CH_FLOWS; i++)
			set += flows[i].lim != 0;
		CHECK_EQ(set, 1);
		ch[SIDE_ROCE].flows = saved;
	}
}

/* ---- the flow fast path (rx_fast_run) with RoCEv2 over IPv6 flows ---- */

static struct chan_flow roce_flows[CH_FLOWS];
static struct pool_meta fast_meta[1];
static uint32_t fast_ring[64];
/* The address handles the bridge would send with: only compared, never dereferenced. */
static struct ibv_ah *const ah_v6 = (struct ibv_ah *)0x6600, *const ah_v4 = (struct ibv_ah *)0x4400;

/* A burst of the RoCE channel whose peer (IB) takes every send in its chain (peer_fast,
 * flows allowed), as chan_burst_side sets one up. */
static struct burst fast_burst(void)
{
	static struct wr_tmpl tt; /* the IB side's templates */
	struct burst b = burst_new(SIDE_ROCE);
	struct channel *out = &ch[SIDE_IB];
	struct freelist fl = {.n = 0};

	out->tt = &tt;
	out->nwr = 0;
	out->tx_head = out->tx_tail = 0;
	out->unsignaled = 0;
	out->sig_every = 16;
	out->sq_depth = 64;
	out->tx_buf = fast_ring;
	out->tx_mask = 63;
	memset(tt.tx, 0, sizeof(tt.tx));
	b.meta = fast_meta;
	b.flows_ok = true;
	burst_peer_begin(&b, out, 1);
	CHECK_EQ(fl.n, 0);
	CHECK(b.peer_fast);
	return b;
}

/*
 * Packet r received on RoCE through the flow fast path (rx_fast_run, one completion):
 * true when a flow took it (its send chained on the IB channel: *ah and *qkey what the
 * send carries), false when it went back to the full path, having changed nothing.
 */
static bool fast_rx(const struct rx *r, struct ibv_ah **ah, uint32_t *qkey)
{
	struct burst b = fast_burst();
	struct freelist fl = {.n = 0};
	int i;

	memcpy(region_buf, r->hdr, BR_GRH_LEN);
	i = rx_fast_run(&b, &ch[SIDE_ROCE], SIDE_ROCE, false, &r->wc, 0, 1, &fl);
	burst_peer_end(&b);
	CHECK_EQ(fl.n, 0);
	if (i == 0) {
		CHECK_EQ(ch[SIDE_IB].nwr, 0);
		return false;
	}
	CHECK_EQ(i, 1);
	CHECK_EQ(ch[SIDE_IB].nwr, 1);
	*ah = ch[SIDE_IB].tt->tx[0].wr.wr.ud.ah;
	*qkey = ch[SIDE_IB].tt->tx[0].wr.wr.ud.remote_qkey;
	return true;
}

/* Packet r through the full path (chan_rx): forwarded (chained on IB with *ah), which
 * sets its flow. Its sender is the channel's last one (prev_sender = snd). */
static void full_rx(const struct rx *r, struct sender *snd, struct ibv_ah **ah)
{
	struct burst b = fast_burst();
	struct freelist fl = {.n = 0};
	enum drop_reason why = FWD;
	struct src_addr src;

	memcpy(region_buf, r->hdr, BR_GRH_LEN);
	/* The sender's key: what rx_classify makes of the source address. */
	CHECK(rx_classify(&b, &ch[SIDE_ROCE], SIDE_ROCE, &r->wc, region_buf, &src, &why) != NULL);
	snd->key.qpn = r->wc.src_qp;
	memcpy(snd->key.addr, &src.hi, 8);
	memcpy(snd->key.addr + 8, &src.lo, 8);
	ch[SIDE_ROCE].prev_sender = snd;
	chan_rx(&b, &ch[SIDE_ROCE], SIDE_ROCE, &r->wc, &fl);
	burst_peer_end(&b);
	CHECK_EQ(fl.n, 0);
	CHECK_EQ(ch[SIDE_IB].nwr, 1);
	*ah = ch[SIDE_IB].tt->tx[0].wr.wr.ud.ah;
}

static void test_flows6(void)
{
	struct channel *c = &ch[SIDE_ROCE];
	static struct sender snd6, snd4, snd6b;
	struct sender_table *st = sender_table_new(1, 64);
	struct worker w = {.br = &br};
	struct ibv_ah *ah;
	uint32_t qkey, a4, s4 = 0;
	uint64_t fwd_before, x, k = 0;
	char src6[INET6_ADDRSTRLEN];
	struct rx r, r4, r6;

	printf("# flows of RoCEv2 over IPv6 (rx_fast_run)\n");
	CHECK(st != NULL);
	br.senders = st;
	c->flows = roce_flows;
	c->flows_epoch = atomic_load(&br.flows_epoch);
	c->gcache_epoch = atomic_load(&br.groups_epoch);
	c->scache_epoch = atomic_load(&st->epoch);
	ch[SIDE_IB].sd->mtu = 4096;
	for (int s = 0; s < NSIDES; s++) {
		g_v6.out_chan[s] = &ch[s];
		g_both.out_chan[s] = &ch[s];
	}
	atomic_store(&g_v6.ah_out[SIDE_IB], ah_v6);
	g_v6.qkey_out[SIDE_IB] = 0x11111111;
	atomic_store(&g_both.ah_out[SIDE_IB], ah_v4);
	g_both.qkey_out[SIDE_IB] = 0x01234567;

	/* Made by the full path, then used: the flow's group, AH and Q_Key, counted to its
	 * group and sender. */
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::1234");
	CHECK(!fast_rx(&r, &ah, &qkey)); /* no flow yet */
	full_rx(&r, &snd6, &ah);
	CHECK(ah == ah_v6);
	fwd_before = g_v6.fwd_pkts[SIDE_ROCE];
	CHECK(fast_rx(&r, &ah, &qkey));
	CHECK(ah == ah_v6);
	CHECK_EQ(qkey, 0x11111111);
	CHECK_EQ(g_v6.fwd_pkts[SIDE_ROCE], fwd_before + 1);
	CHECK_EQ(snd6.pkts, 2); /* the full path's packet and this one */
	CHECK(fast_rx(&r, &ah, &qkey));
	CHECK_EQ(snd6.pkts, 3);
	/* Too big for the other side: the full path (which drops it as too_big). */
	r.wc.byte_len = BR_GRH_LEN + 4097;
	CHECK(!fast_rx(&r, &ah, &qkey));
	r.wc.byte_len = BR_GRH_LEN + PAYLOAD;
	/* Another source, another group: no flow of theirs. */
	r = roce6_pkt("fd00:0:0:1::34", "ff0e::1234");
	CHECK(!fast_rx(&r, &ah, &qkey));
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::1235");
	CHECK(!fast_rx(&r, &ah, &qkey));
	/* An IPv6 header with 0x45 at byte 20 (IPv6 or IPv4 by the checksum): full path each
	 * time, never a flow (flow_set), even after the full path forwarded it. */
	r = roce6_pkt("fd00:0:0:1:0:0:4500:33", "ff0e::1234");
	full_rx(&r, &snd6b, &ah);
	CHECK(ah == ah_v6);
	CHECK(!fast_rx(&r, &ah, &qkey));

	/*
	 * IPv4 and IPv6 flows in one set, with the same first key word: an IPv4 packet
	 * 10.a.b.c -> 239.1.2.3 whose set is set 0, and an IPv6 source whose first 8 bytes
	 * are that packet's addresses (0a.a.b.c.ef.01.02.03) with a low half that puts its
	 * flow in set 0 too. Neither packet is taken by the other's flow.
	 */
	br.cfg.allow_foreign = true;
	for (a4 = 1; a4 < (1u << 24); a4++) {
		uint8_t kb[8]; /* the IPv4 packet's bytes 32-39: saddr, daddr */

		s4 = htonl(10u << 24 | a4);
		memcpy(kb, &s4, 4);
		memcpy(kb + 4, &g_both.addr, 4);
		memcpy(&k, kb, 8);
		if (flow_slot(roce_flows, k, 0) == &roce_flows[0])
			break;
	}
	CHECK(flow_slot(roce_flows, k, 0) == &roce_flows[0]);
	{
		union ibv_gid d = ip6("ff0e::1234");
		uint8_t sa[16];
		uint64_t dlo;

		memcpy(&dlo, d.raw + 8, 8);
		for (x = 1; flow_slot(roce_flows, x, dlo) != &roce_flows[0]; x++)
			;
		/* The source address: k's 8 bytes, then x's as memory holds them. */
		memcpy(sa, &k, 8);
		memcpy(sa + 8, &x, 8);
		inet_ntop(AF_INET6, sa, src6, sizeof(src6));
	}
	flows_drop(c);
	r6 = roce6_pkt(src6, "ff0e::1234");
	r4 = roce_pkt(s4, g_both.addr);
	CHECK(!memcmp(r6.hdr + GRH_SGID, r4.hdr + BR_IPV4_OFF + IPV4_SADDR, 8));
	full_rx(&r6, &snd6, &ah);
	CHECK(ah == ah_v6);
	CHECK(fast_rx(&r6, &ah, &qkey) && ah == ah_v6);
	/* The IPv4 packet finds the IPv6 flow's first word in way 0: not taken (lim 0). */
	CHECK(!fast_rx(&r4, &ah, &qkey));
	/* The full path forwards it to its own group and sets its flow there... */
	full_rx(&r4, &snd4, &ah);
	CHECK(ah == ah_v4);
	CHECK(fast_rx(&r4, &ah, &qkey) && ah == ah_v4);
	CHECK_EQ(qkey, 0x01234567);
	/* ... and the IPv6 packet does not take the IPv4 flow (its key's other words are 0):
	 * the full path, then both flows side by side in the set's two ways. */
	CHECK(!fast_rx(&r6, &ah, &qkey));
	full_rx(&r6, &snd6, &ah);
	CHECK(fast_rx(&r6, &ah, &qkey) && ah == ah_v6);
	CHECK(fast_rx(&r4, &ah, &qkey) && ah == ah_v4);
	CHECK((roce_flows[0].lim != 0) != (roce_flows[1].lim != 0));
	CHECK((roce_flows[0].lim6 != 0) != (roce_flows[1].lim6 != 0));
	/* An IPv6 packet whose 32 address bytes are the IPv4 flow's key (k, then zeros: the
	 * set of (0, 0) is set 0 as well) does not take it (lim6 0). */
	{
		uint8_t sa[16] = {0};
		char t[INET6_ADDRSTRLEN];

		CHECK(flow_slot(roce_flows, 0, 0) == &roce_flows[0]);
		memcpy(sa, &k, 8);
		inet_ntop(AF_INET6, sa, t, sizeof(t));
		r = roce6_pkt(t, "::");
		CHECK(!fast_rx(&r, &ah, &qkey));
	}
	br.cfg.allow_foreign = false;

	/* A group's ready bits, role or AH changed (bridge_flows_stale): the channel drops
	 * its flows before its next burst (chan_caches_check); the full path sets them again. */
	r = roce6_pkt("fd00:0:0:1::33", "ff0e::1234");
	full_rx(&r, &snd6, &ah);
	CHECK(fast_rx(&r, &ah, &qkey));
	bridge_flows_stale(&br);
	chan_caches_check(&w, c);
	CHECK(!fast_rx(&r, &ah, &qkey));
	CHECK(!fast_rx(&r6, &ah, &qkey));
	CHECK(!fast_rx(&r4, &ah, &qkey));
	full_rx(&r, &snd6, &ah);
	CHECK(fast_rx(&r, &ah, &qkey));
	/* A group leaving the tables (its epoch): the same, and the full path no longer
	 * finds it (unknown_group). */
	group_unpublish(&br, &g_v6);
	chan_caches_check(&w, c);
	CHECK(!fast_rx(&r, &ah, &qkey));
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_UNKNOWN_GROUP);
	if (group_publish(&br, &g_v6))
		abort();
	chan_caches_check(&w, c);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
}

/* The rules after the group is found: its direction, its joins, the bridging switch. */
static void test_group_rules(void)
{
	uint32_t src = ip4(192, 168, 1, 33);
	struct rx r;

	printf("# the group's rules\n");
	/* -o (DIR_OUT): RoCE -> IB only, the IB side joined send-only; -i the other way. */
	r = ib_pkt(g_out.addr);
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_SENDONLY_SIDE);
	r = roce_pkt(src, g_out.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), FWD);
	r = ib_pkt(g_in.addr);
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);
	r = roce_pkt(src, g_in.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_SENDONLY_SIDE);

	/* Not joined yet (no ready bit), or a side's port down. */
	r = ib_pkt(g_idle.addr);
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_NOT_JOINED);
	br.sd[SIDE_ROCE].state = SIDE_DOWN;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_SIDE_DOWN);
	br.sd[SIDE_ROCE].state = SIDE_UP;
	atomic_store(&g_idle.ready, 1u << SIDE_IB); /* joined on IB only: forwards from IB */
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), FWD);
	r = roce_pkt(src, g_idle.addr);
	CHECK_EQ(verdict(SIDE_ROCE, &r, NULL), DROP_NOT_JOINED);

	/* Bridging switched off at run time: last, after every other rule. */
	atomic_store(&br.bridging, 0);
	r = ib_pkt(g_both.addr);
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_BRIDGING_OFF);
	r.hdr[offsetof(struct ibv_grh, hop_limit)] = 1;
	CHECK_EQ(verdict(SIDE_IB, &r, NULL), DROP_LOOP);
	atomic_store(&br.bridging, 1);
}

/* PGM inspection (rx_pgm): what is not PGM or malformed is counted, not parsed. */
static void test_pgm(void)
{
	struct channel *c = &ch[SIDE_ROCE];
	uint8_t pl[PAYLOAD] = "market data, not PGM";
	uint8_t bad[40] = {0};

	printf("# PGM inspection\n");
	atomic_store(&br.pgm_policy, 0);
	CHECK(!rx_pgm(&br, c, &g_both, pl, sizeof(pl), 0));
	CHECK_EQ(c->st.pgm_not_pgm, 1);
	CHECK_EQ(c->st.pgm_malformed, 0);

	/* ODATA with the options bit set and an OPT_LENGTH of a wrong length: PGM's shape,
	 * invalid. */
	bad[PGM_OFF_TYPE] = PGM_TYPE_ODATA;
	bad[PGM_OFF_OPTIONS] = PGM_HDR_OPT_PRESENT;
	bad[PGM_HDR_LEN + 8 + PGM_OPT_OFF_LEN] = 99;
	CHECK(!rx_pgm(&br, c, &g_both, bad, sizeof(bad), 0));
	CHECK_EQ(c->st.pgm_malformed, 1);

	/* The strict policy drops both (pgm_result_drop of a malformed result). */
	atomic_store(&br.pgm_policy, PGM_DROP_MALFORMED);
	CHECK(rx_pgm(&br, c, &g_both, bad, sizeof(bad), 0));
	CHECK(rx_pgm(&br, c, &g_both, pl, sizeof(pl), 0));
	CHECK_EQ(c->st.pgm_malformed, 2);
	CHECK_EQ(c->st.pgm_not_pgm, 2);
	atomic_store(&br.pgm_policy, 0);
}

int main(void)
{
	atomic_store(&br.bridging, 1);
	setup();
	test_ib();
	test_roce();
	test_roce6();
	test_flows6();
	test_group_rules();
	test_pgm();
	return tap_done();
}
