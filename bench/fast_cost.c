// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fast_cost: engine instructions per packet of one flow through the data path's burst
 * loop (engine/fwd.c: rx_fast_run, and chan_rx for what it leaves, as chan_burst_side
 * runs them), bursts of 32 receives of one sender to one group, without the verbs (no
 * poll, no post, no refill) and without PGM inspection: the part of `chan_burst` that
 * depends on the packet's kind, measured without the simulated fabric's timing (on a
 * loaded machine the bridge's bursts, and so its per-packet figure, change from run to
 * run). Kinds: ib (IB -> RoCE, an IPv4 group), roce4 (RoCE IPv4 -> IB), roce6 (RoCEv2
 * over IPv6 -> IB, ff0e::1234). Like tests/engine/test_fwd_rules.c it includes fwd.c, and
 * builds on the same fake bridge (tests/lib/fwdfake.h).
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

#include "fwdfake.h"

#define NBURST 32

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

/* The fake bridge (tests/lib/fwdfake.h), its channels ready for the fast path, and two
 * groups: 239.1.2.3 (IB MGID ff12:401b:ffff::239.1.2.3, RoCE ::ffff:239.1.2.3) and
 * ff0e::1234, forwarded both ways. */
static void setup(void)
{
	static struct ibv_ah *const ah = (struct ibv_ah *)0x1000; /* never dereferenced */
	static struct wr_tmpl tt[NSIDES];			  /* each side's work requests */

	atomic_store(&br.bridging, 1);
	fwdfake_bridge_init(&br, ch);
	for (int s = 0; s < NSIDES; s++) {
		ch[s].flows = flows[s];
		ch[s].qcache = qcache[s];
		ch[s].qcache_mask = CH_QCACHE - 1;
		ch[s].prev_sender = &snd;
		ch[s].sig_every = 16;
		ch[s].sq_depth = 128;
		ch[s].tx_buf = ring[s];
		ch[s].tx_mask = 63;
		ch[s].tt = &tt[s];
	}
	fwdfake_group_init(&br, &g4, ip4(239, 1, 2, 3), DIR_BOTH, 1u << SIDE_IB | 1u << SIDE_ROCE);
	fwdfake_group6_init(&br, &g6, "ff0e::1234");
	for (struct group *g = &g4; g; g = g == &g4 ? &g6 : NULL) {
		for (int s = 0; s < NSIDES; s++) {
			g->out_chan[s] = &ch[s];
			atomic_store(&g->ah_out[s], ah);
			g->qkey_out[s] = 0x01234567;
		}
	}
}

/* The 32 receives of one flow: the header of the kind in each buffer. */
static enum side packets(const char *kind)
{
	enum side side = SIDE_ROCE;
	struct rx r;

	if (!strcmp(kind, "ib")) {
		r = ib_pkt(g4.addr);
		side = SIDE_IB;
	} else if (!strcmp(kind, "roce4")) {
		r = roce_pkt(ip4(192, 168, 1, 33), g4.addr);
	} else if (!strcmp(kind, "roce6")) {
		r = roce6_pkt("fd00:0:0:1::33", "ff0e::1234");
	} else {
		fprintf(stderr, "fast_cost: kind '%s' is not ib, roce4 or roce6\n", kind);
		exit(2);
	}
	for (int i = 0; i < NBURST; i++) {
		memcpy(region_buf + i * 256, r.hdr, BR_GRH_LEN);
		wc[i] = r.wc;
		wc[i].wr_id = (uint64_t)i;
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
	out->tt->dirty = 0;
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
	uint64_t fwd;
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
	fwd = ch[!strcmp(argv[1], "ib") ? SIDE_ROCE : SIDE_IB].st.tx_pkts;
	printf("fast_cost %s: %ld bursts of %d, forwarded %" PRIu64 ", sender %" PRIu64 "\n",
	       argv[1], n, NBURST, fwd, snd.pkts);
	/* Every packet forwarded and counted to its sender (the bench-fast_cost tests). */
	if (fwd != (uint64_t)n * NBURST || snd.pkts != fwd) {
		fprintf(stderr, "fast_cost %s: %" PRIu64 " of %ld packets forwarded\n", argv[1],
			fwd, n * NBURST);
		return 1;
	}
	return 0;
}
