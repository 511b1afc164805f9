// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * capture/pcapng.c: block layouts (lengths at both ends, 4-byte alignment, options) and
 * the reconstructed frames byte by byte (ERF + LRH/GRH/BTH/DETH/ImmDt on InfiniBand,
 * Ethernet/IPv4/UDP/BTH/DETH on RoCEv2, pad and trailer), snaplen cuts. tshark reads
 * real captures in the shell tests of this folder.
 */
#include <string.h>

#include "pcapng.h"
#include "tap.h"

static uint32_t h32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t be32(const uint8_t *p)
{
	return be24(p) << 8 | p[3];
}

/* A block: its length at both ends, a multiple of 4. */
static void check_block(const uint8_t *b, size_t len, uint32_t type, const char *what)
{
	EQ(h32(b), type, "%s: type", what);
	EQ(h32(b + 4), len, "%s: length", what);
	EQ(h32(b + len - 4), len, "%s: trailing length", what);
	EQ(len % 4, 0, "%s: aligned", what);
}

static void test_blocks(void)
{
	uint8_t b[512], data[5] = {1, 2, 3, 4, 5};
	size_t n;

	n = pcapng_shb(b, "ib2roce");
	EQ(n, pcapng_shb_size("ib2roce"), "shb: size");
	check_block(b, n, 0x0a0d0d0a, "shb");
	EQ(h32(b + 8), 0x1a2b3c4d, "shb: byte-order magic");
	n = pcapng_idb(b, CAP_LINKTYPE_ERF, 65535, "sim_ib0:1 ib");
	EQ(n, pcapng_idb_size("sim_ib0:1 ib"), "idb: size");
	check_block(b, n, 1, "idb");
	EQ(b[8] | b[9] << 8, 197, "idb: link type");
	/* Options: if_name (2) of 12 bytes, then if_tsresol (9) = 9. */
	OK(b[16] == 2 && b[18] == 12 && !memcmp(b + 20, "sim_ib0:1 ib", 12), "idb: if_name");
	OK(b[32] == 9 && b[34] == 1 && b[36] == 9, "idb: if_tsresol 9 (ns)");
	n = pcapng_epb(b, 1, 0x123456789ull, data, 5, 9, "drop unknown_group");
	EQ(n, pcapng_epb_size(5, "drop unknown_group"), "epb: size");
	check_block(b, n, 6, "epb");
	OK(h32(b + 8) == 1 && h32(b + 12) == 1 && h32(b + 16) == 0x23456789, "epb: ifid, ts");
	OK(h32(b + 20) == 5 && h32(b + 24) == 9 && !memcmp(b + 28, data, 5), "epb: lengths, data");
	OK(b[36] == 1 && b[38] == 18 && !memcmp(b + 40, "drop unknown_group", 18),
	   "epb: opt_comment after the padded data");
	n = pcapng_epb(b, 0, 0, data, 4, 4, NULL);
	EQ(n, 36, "epb without comment: 32 + data");
}

static void test_ib(void)
{
	uint8_t grh[40], pay[10], out[200];
	struct cap_pkt p = {0};
	uint32_t n, wire;

	memset(grh, 0x11, sizeof(grh));
	memset(pay, 0xab, sizeof(pay));
	p.ib = true;
	p.hdr = grh;
	p.payload = pay;
	p.len = p.caplen = 10;
	p.src_qpn = 0x1234;
	p.dst_qpn = 0xffffff;
	p.qkey = 0x01234567;
	p.pkey = 0xffff;
	p.slid = 7;
	p.dlid = 0xc001;
	p.has_imm = true;
	p.imm = 0x04030201;	 /* network order in memory: 01 02 03 04 */
	p.ts_ns = 1500000000ull; /* 1.5 s */
	n = cap_frame_encode(&p, out, 65535, &wire);
	/* ERF 16 + LRH 8 + GRH 40 + BTH 12 + DETH 8 + ImmDt 4 + 10 + pad 2 + ICRC 4 + VCRC 2 */
	EQ(wire, 106, "ib: wire length");
	EQ(n, 106, "ib: all captured");
	OK(h32(out + 4) == 1 && h32(out) == 0x80000000u, "ib: ERF timestamp 1.5 s (32.32)");
	OK(out[8] == 21 && out[9] == 0x04 && be16(out + 10) == 106 && be16(out + 14) == 90,
	   "ib: ERF type, rlen, wlen");
	OK(out[17] == 0x03 && be16(out + 18) == 0xc001 && be16(out + 22) == 7,
	   "ib: LRH LNH, DLID, SLID");
	EQ(be16(out + 20) & 0x7ff, (90 - 2) / 4, "ib: LRH PktLen (words, without VCRC)");
	OK(!memcmp(out + 24, grh, 40), "ib: GRH as received");
	OK(out[64] == 0x65 && out[65] == 0x20 && be16(out + 66) == 0xffff &&
		   be24(out + 69) == 0xffffff,
	   "ib: BTH SEND only with immediate, pad 2, P_Key, QP");
	OK(be32(out + 76) == 0x01234567 && be24(out + 81) == 0x1234, "ib: DETH Q_Key, source QP");
	OK(out[84] == 1 && out[87] == 4, "ib: ImmDt");
	OK(!memcmp(out + 88, pay, 10) && !memcmp(out + 98, "\0\0\0\0\0\0\0\0", 8),
	   "ib: payload, pad, ICRC, VCRC");
	n = cap_frame_encode(&p, out, 90, &wire);
	OK(n == 90 && wire == 106 && be16(out + 10) == 90, "ib: snaplen cuts, ERF rlen follows");
	p.caplen = 4;
	n = cap_frame_encode(&p, out, 65535, &wire);
	OK(n == 92 && wire == 106, "ib: payload cut at capture: no trailer");
}

static void test_roce(void)
{
	uint8_t hdr[40] = {0}, pay[8], out[200];
	struct cap_pkt p = {0};
	uint32_t n, wire;
	const uint8_t ip[20] = {0x45, 0, 0,   56, 0, 1, 0x40, 0,   1, 17,
				0,    0, 198, 19, 0, 2, 239,  129, 2, 3};

	memcpy(hdr + 20, ip, 20);
	memset(pay, 0xcd, sizeof(pay));
	p.hdr = hdr;
	p.payload = pay;
	p.len = p.caplen = 8;
	p.src_qpn = 0x11;
	p.dst_qpn = 0xffffff;
	p.qkey = 0x01234567;
	p.pkey = 0xffff;
	n = cap_frame_encode(&p, out, 65535, &wire);
	/* Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + DETH 8 + 8 + ICRC 4 */
	OK(n == 74 && wire == 74, "roce: lengths");
	OK(!memcmp(out, "\x01\x00\x5e\x01\x02\x03", 6), "roce: multicast MAC (23 low bits)");
	OK(!memcmp(out + 6, "\x02\x00\xc6\x13\x00\x02", 6),
	   "roce: source MAC from the source IPv4");
	EQ(be16(out + 12), 0x0800, "roce: ethertype IPv4");
	OK(!memcmp(out + 14, ip, 20), "roce: IPv4 header as received");
	OK(be16(out + 34) == (0xc000 | 0x11) && be16(out + 36) == 4791 && be16(out + 38) == 40,
	   "roce: UDP ports and length");
	OK(out[42] == 0x64 && be24(out + 47) == 0xffffff && be32(out + 54) == 0x01234567,
	   "roce: BTH SEND only, QP, DETH Q_Key");
	OK(!memcmp(out + 62, pay, 8) && !memcmp(out + 70, "\0\0\0\0", 4), "roce: payload, ICRC");
}

int main(void)
{
	test_blocks();
	test_ib();
	test_roce();
	return tap_done();
}
