// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fast_cost: engine instructions per packet of one flow through the data path's burst
 * loop (engine/fwd.c: rx_fast_run, and chan_rx for what it leaves, as chan_burst_side
 * runs them), bursts of 32 receives of one sender to one group, without the verbs (no
 * poll, no post, no refill) and without PGM inspection: the part of `chan_burst` that
 * depends on the packet's kind, measured without the simulated fabric's timing (on a
 * loaded machine the bridge's bursts, and so its per-packet figure, change from run to
 * run). Kinds: ib (IB -> RoCE, an IPv4 group), roce4 (RoCE IPv4 -> IB), roce6 (RoCEv2
 * over IPv6 -> IB, ff0e::1234). Like tests/engine/test_fwd_rules.c it includes fwd.c.
 *
 * Run under callgrind, counting only inside the kind's loop, twice with different burst
 * counts; the difference of the two totals over the difference of the packets is the
 * per-packet figure (the first burst, which sets the flow through the full path, cancels):
 *
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=bursts_KIND \
 *	--callgrind-out-file=cg.out build/bench/fast_cost KIND BURSTS
 *
 * and read the "summary:" line of cg.out (docs/benchmarks.md). noipa: GCC would fold the
 * two RoCE loops, the same code, into one symbol (identical code folding).
 */
#include "fwd.c"

#include <inttypes.h>
#include <stdio.h>
#include <netinet/ip6.h>

#define PEER_QPN 0x000222u
#define PAYLOAD	 64u
#define NBURST	 32

static struct bridge br;
static struct channel ch[NSIDES];
static struct group g4, g6;
static struct chan_flow flows[NSIDES][CH_FLOWS];
static struct qcache_ent qcache[NSIDES][CH_QCACHE];
static struct pool_meta meta[NBURST];
static uint32_t ring[NSIDES][64];
static struct sender snd;
static uint8_t region_buf[NBURST * 256] __attribute__((aligned(64)));
static struct ibv_wc wc[NBURST];

static union ibv_gid ip6(const char *txt)
{
	union ibv_gid g;

	if (inet_pton(AF_INET6, txt, g.raw) != 1)
		abort();
	return g;
}

static void setup(void)
{
	static struct {
		struct qpn_set set;
		uint32_t qpn[1];
	} own[NSIDES];
	static struct ibv_ah *const ah = (struct ibv_ah *)0x1000; /* never dereferenced */

	urcu_qsbr_register_thread();
	br.groups_by_addr =
		cds_lfht_new_flavor(16, 16, 0, CDS_LFHT_AUTO_RESIZE, &urcu_qsbr_flavor, NULL);
	atomic_store(&br.bridging, 1);
	for (int s = 0; s < NSIDES; s++) {
		struct side_ctx *sd = &br.sd[s];

		sd->side = (enum side)s;
		sd->state = SIDE_UP;
		sd->groups = cds_lfht_new_flavor(16, 16, 0, CDS_LFHT_AUTO_RESIZE, &urcu_qsbr_flavor,
						 NULL);
		sd->nchan = 1;
		own[s].set.n = 1;
		own[s].set.qpn[0] = 0x111;
		sd->own = &own[s].set;
		sd->mtu = 4096;
		sd->gid6_index = sd->gid6ll_index = -1;
		ch[s].side = (enum side)s;
		ch[s].br = &br;
		ch[s].sd = sd;
		ch[s].peer = &ch[!s];
		ch[s].glast = &ch[s].gcache[0];
		ch[s].flows = flows[s];
		ch[s].qcache = qcache[s];
		ch[s].qcache_mask = CH_QCACHE - 1;
		ch[s].prev_sender = &snd;
		ch[s].sig_every = 16;
		ch[s].sq_depth = 128;
		ch[s].tx_buf = ring[s];
		ch[s].tx_mask = 63;
	}
	br.sd[SIDE_IB].gid = ip6("fe80::2:c903:aa:bb01");
	br.sd[SIDE_ROCE].ipv4 = htonl(0xc0a8010a); /* 192.168.1.10/24 */
	br.sd[SIDE_ROCE].netmask = htonl(0xffffff00);
	br.sd[SIDE_ROCE].gid6 = ip6("fd00:0:0:1::a");
	br.sd[SIDE_ROCE].gid6_index = 5;
	memcpy(br.sd[SIDE_ROCE].net6, br.sd[SIDE_ROCE].gid6.raw, 8);
	br.sd[SIDE_ROCE].mask6[0] = UINT64_MAX;
	/* 239.1.2.3: IB MGID ff12:401b:ffff::239.1.2.3, RoCE ::ffff:239.1.2.3. */
	g4.addr = g4.ib_addr = htonl(0xef010203);
	g4.dir = DIR_BOTH;
	g4.mgid[SIDE_IB] = ip6("ff12:401b:ffff::ef01:203");
	g4.mgid[SIDE_ROCE] = ip6("::ffff:239.1.2.3");
	g6.dir = DIR_BOTH;
	g6.mgid[SIDE_IB] = ip6("ff0e::1234");
	g6.mgid[SIDE_ROCE] = ip6("ff0e::1234");
	for (struct group *g = &g4; g; g = g == &g4 ? &g6 : NULL) {
		atomic_store(&g->ready, 1u << SIDE_IB | 1u << SIDE_ROCE);
		for (int s = 0; s < NSIDES; s++) {
			g->out_chan[s] = &ch[s];
			atomic_store(&g->ah_out[s], ah);
			g->qkey_out[s] = 0x01234567;
		}
		if (group_publish(&br, g))
			abort();
	}
}

/* The 32 receives of one flow: the header of the kind in each buffer. */
static enum side packets(const char *kind)
{
	uint8_t h[BR_GRH_LEN] = {0};
	enum side side = SIDE_ROCE;
	union ibv_gid sa;

	if (!strcmp(kind, "ib")) {
		struct ibv_grh *grh = (struct ibv_grh *)h;

		grh->version_tclass_flow = htonl(6u << 28);
		grh->next_hdr = 0x1b;
		grh->sgid = ip6("fe80::2:c903:aa:bb02");
		grh->dgid = g4.mgid[SIDE_IB];
		side = SIDE_IB;
	} else if (!strcmp(kind, "roce4")) {
		struct iphdr *ip = (struct iphdr *)(h + BR_IPV4_OFF);

		ip->version = IPVERSION;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->saddr = htonl(0xc0a80121); /* 192.168.1.33 */
		ip->daddr = g4.addr;
		ip->check = 0;
		{
			uint32_t sum = 0;

			for (unsigned i = 0; i < 20; i += 2)
				sum += (uint32_t)h[BR_IPV4_OFF + i] << 8 | h[BR_IPV4_OFF + i + 1];
			while (sum >> 16)
				sum = (sum & 0xffff) + (sum >> 16);
			ip->check = htons((uint16_t)~sum);
		}
	} else if (!strcmp(kind, "roce6")) {
		struct ip6_hdr *ip6h = (struct ip6_hdr *)h;

		ip6h->ip6_flow = htonl(6u << 28);
		ip6h->ip6_nxt = IPPROTO_UDP;
		ip6h->ip6_hlim = 64;
		sa = ip6("fd00:0:0:1::33");
		memcpy(&ip6h->ip6_src, sa.raw, 16);
		memcpy(&ip6h->ip6_dst, g6.mgid[SIDE_ROCE].raw, 16);
	} else {
		fprintf(stderr, "fast_cost: kind '%s' is not ib, roce4 or roce6\n", kind);
		exit(2);
	}
	for (int i = 0; i < NBURST; i++) {
		memcpy(region_buf + i * 256, h, BR_GRH_LEN);
		wc[i] = (struct ibv_wc){.wr_id = (uint64_t)i,
					.status = IBV_WC_SUCCESS,
					.opcode = IBV_WC_RECV,
					.byte_len = BR_GRH_LEN + PAYLOAD,
					.wc_flags = IBV_WC_GRH,
					.src_qp = PEER_QPN};
	}
	/* The sender record the channel's caches would hold (rx_classify's source key). */
	{
		struct burst b = {.br = &br, .bridging = true, .check_own = true};
		enum drop_reason why;
		struct src_addr src;

		b.region = (struct region){region_buf, 256};
		if (!rx_classify(&b, &ch[side], side, &wc[0], region_buf, &src, &why))
			abort();
		snd.key.qpn = PEER_QPN;
		memcpy(snd.key.addr, &src.hi, 8);
		memcpy(snd.key.addr + 8, &src.lo, 8);
	}
	return side;
}

/* One burst of the 32 receives, as chan_burst_side runs it (its loop, no verbs). */
static inline __attribute__((always_inline)) void burst_one(const enum side side)
{
	struct channel *c = &ch[side], *out = c->peer;
	struct freelist fl = {.n = 0};
	struct burst b;

	memset(&b, 0, sizeof(b));
	b.br = &br;
	b.region = (struct region){region_buf, 256};
	b.meta = meta;
	b.bridging = true;
	b.flows_ok = true;
	b.check_own = true;
	out->nwr = 0;
	out->tx_head = out->tx_tail = 0;
	out->unsignaled = 0;
	out->tx_dirty = 0;
	burst_peer_begin(&b, out, NBURST);
	b.flows_live = b.bridging && b.peer_fast && b.flows_ok;
	for (int i = 0; i < NBURST; i++) {
		if (b.flows_live) {
			i = rx_fast_run(&b, c, side, false, wc, i, NBURST, &fl);
			if (i == NBURST)
				break;
		}
		chan_rx(&b, c, side, &wc[i], &fl);
	}
	burst_peer_end(&b);
	if (fl.n)
		abort(); /* nothing is dropped */
}

__attribute__((noinline, noipa)) static void bursts_ib(long n)
{
	for (long k = 0; k < n; k++)
		burst_one(SIDE_IB);
}

__attribute__((noinline, noipa)) static void bursts_roce4(long n)
{
	for (long k = 0; k < n; k++)
		burst_one(SIDE_ROCE);
}

__attribute__((noinline, noipa)) static void bursts_roce6(long n)
{
	for (long k = 0; k < n; k++)
		burst_one(SIDE_ROCE);
}

int main(int argc, char **argv)
{
	long n;

	if (argc != 3 || (n = strtol(argv[2], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: fast_cost ib|roce4|roce6 BURSTS\n");
		return 2;
	}
	setup();
	packets(argv[1]);
	if (!strcmp(argv[1], "ib"))
		bursts_ib(n);
	else if (!strcmp(argv[1], "roce4"))
		bursts_roce4(n);
	else
		bursts_roce6(n);
	printf("fast_cost %s: %ld bursts of %d, forwarded %" PRIu64 ", sender %" PRIu64 "\n",
	       argv[1], n, NBURST, ch[!strcmp(argv[1], "ib") ? SIDE_ROCE : SIDE_IB].st.tx_pkts,
	       snd.pkts);
	return 0;
}
