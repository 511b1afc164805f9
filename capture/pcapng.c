// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pcapng blocks and UD frames (pcapng.h). Block layouts: the pcapng specification
 * (draft-ietf-opsawg-pcapng); frame layouts: InfiniBand Architecture Specification vol. 1
 * (LRH, GRH, BTH, DETH) and its RoCEv2 annex (UDP destination port 4791).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pcapng.h"

#define PCAPNG_SHB_TYPE	    0x0a0d0d0au
#define PCAPNG_IDB_TYPE	    0x00000001u
#define PCAPNG_EPB_TYPE	    0x00000006u
#define PCAPNG_BOM	    0x1a2b3c4du
#define PCAPNG_OPT_END	    0
#define PCAPNG_OPT_COMMENT  1
#define PCAPNG_SHB_USERAPPL 4
#define PCAPNG_IF_NAME	    2
#define PCAPNG_IF_TSRESOL   9

#define CAP_ERF_FLAG_VLEN 0x04 /* ERF flags: the record length varies */
#define IB_LRH_LEN	  8
#define IB_GRH_LEN	  40
#define IB_BTH_LEN	  12
#define IB_DETH_LEN	  8
#define IB_IMM_LEN	  4
#define IB_ICRC_LEN	  4
#define IB_VCRC_LEN	  2
#define IB_LNH_GRH	  3 /* LRH next header: IBA global (a GRH follows) */
#define ETH_HDR_LEN	  14
#define ETH_P_IPV4	  0x0800
#define ETH_P_IPV6	  0x86dd
#define IPV6_HDR_LEN	  40 /* RoCEv2 over IPv6: the 40 header bytes are the IPv6 header */
#define IPV4_HDR_LEN	  20
#define IPV4_HDR_OFF	  20 /* where the IPv4 header sits in the 40 header bytes */
#define UDP_HDR_LEN	  8
#define ROCE_SPORT_BASE	  0xc000 /* the entropy source ports RoCEv2 senders use */

static inline uint32_t pad4(size_t n)
{
	return (uint32_t)((4 - (n & 3)) & 3);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	put24(p + 1, v);
}

/* BTH, DETH and ImmDt at h; returns their length. */
static uint32_t put_transport(const struct cap_pkt *p, uint8_t *h)
{
	uint32_t n = IB_BTH_LEN + IB_DETH_LEN;

	memset(h, 0, n);
	h[0] = p->has_imm ? CAP_BTH_SEND_ONLY_WITH_IMM : CAP_BTH_SEND_ONLY;
	h[1] = (uint8_t)(pad4(p->len) << 4); /* SE 0, M 0, PadCnt, TVer 0 */
	put16(h + 2, p->pkey);
	put24(h + 5, p->dst_qpn);
	/* PSN 0: a UD receiver does not see it. */
	put32(h + IB_BTH_LEN, p->qkey);
	put24(h + IB_BTH_LEN + 5, p->src_qpn);
	if (p->has_imm) {
		memcpy(h + n, &p->imm, IB_IMM_LEN); /* already in network order */
		n += IB_IMM_LEN;
	}
	return n;
}

/*
 * The ERF record header of an InfiniBand frame: timestamp (little-endian 32.32 fixed
 * point seconds), type, flags (interface 0, varying record length), record length (header and
 * captured bytes), loss counter, wire length of the packet (big-endian).
 */
static void erf_header(uint8_t *h, uint64_t ts_ns, uint32_t n, uint32_t wire)
{
	uint64_t sec = ts_ns / 1000000000ull, frac = ts_ns % 1000000000ull;
	uint64_t ts = sec << 32 | ((frac << 32) / 1000000000ull);

	for (int i = 0; i < 8; i++)
		h[i] = (uint8_t)(ts >> (8 * i));
	h[8] = CAP_ERF_TYPE_INFINIBAND;
	h[9] = CAP_ERF_FLAG_VLEN;
	put16(h + 10, (uint16_t)(n > 0xffff ? 0xffff : n));
	put16(h + 12, 0);
	put16(h + 14, (uint16_t)(wire > 0xffff ? 0xffff : wire));
}

uint32_t cap_frame_encode(const struct cap_pkt *p, uint8_t *out, uint32_t snaplen, uint32_t *wire)
{
	uint8_t h[CAP_FRAME_HDR_MAX] = {0};
	uint8_t trailer[CAP_FRAME_TRAILER_MAX] = {0};
	uint32_t hl, tl, t, pay, n;

	if (p->ib) {
		uint8_t *l = h + CAP_ERF_HDR_LEN;

		t = put_transport(p, l + IB_LRH_LEN + IB_GRH_LEN);
		tl = pad4(p->len) + IB_ICRC_LEN + IB_VCRC_LEN;
		hl = IB_LRH_LEN + IB_GRH_LEN + t;
		memset(l, 0, IB_LRH_LEN);
		l[1] = (uint8_t)((p->sl & 0xf) << 4 | IB_LNH_GRH); /* VL 0, LVer 0 */
		put16(l + 2, p->dlid);
		/* PktLen: LRH to ICRC in 4-byte words (the VCRC is not counted). */
		put16(l + 4, (uint16_t)(((hl + p->len + tl - IB_VCRC_LEN) / 4) & 0x7ff));
		put16(l + 6, p->slid);
		memcpy(l + IB_LRH_LEN, p->hdr, IB_GRH_LEN);
		hl += CAP_ERF_HDR_LEN;
	} else if (p->hdr[0] >> 4 == 6) {
		/* RoCEv2 over IPv6 (version 6 in the first header byte; over IPv4 the first
		 * 20 bytes are zero). */
		const uint8_t *ip = p->hdr;
		uint8_t *u = h + ETH_HDR_LEN + IPV6_HDR_LEN;

		t = put_transport(p, u + UDP_HDR_LEN);
		tl = pad4(p->len) + IB_ICRC_LEN;
		hl = ETH_HDR_LEN + IPV6_HDR_LEN + UDP_HDR_LEN + t;
		/* Destination MAC: the IPv6 multicast mapping 33:33 + the group's last 32
		 * bits (RFC 2464 section 7); unicast, and the source, as for IPv4: a locally
		 * administered address made of the address's last 32 bits. */
		h[0] = ip[24] == 0xff ? 0x33 : 0x02;
		h[1] = ip[24] == 0xff ? 0x33 : 0x00;
		memcpy(h + 2, ip + 36, 4);
		h[6] = 0x02;
		h[7] = 0x00;
		memcpy(h + 8, ip + 20, 4);
		put16(h + 12, ETH_P_IPV6);
		memcpy(h + ETH_HDR_LEN, ip, IPV6_HDR_LEN);
		put16(u, (uint16_t)(ROCE_SPORT_BASE | (p->src_qpn & 0x3fff)));
		put16(u + 2, CAP_ROCE_UDP_PORT);
		put16(u + 4, (uint16_t)(UDP_HDR_LEN + t + p->len + tl));
		/* RoCEv2 senders leave the UDP checksum zero, which IPv6 otherwise forbids
		 * (RFC 8200 8.1); Wireshark decodes the datagram and flags the checksum. */
		put16(u + 6, 0);
	} else {
		const uint8_t *ip = p->hdr + IPV4_HDR_OFF;
		uint8_t *u = h + ETH_HDR_LEN + IPV4_HDR_LEN;

		t = put_transport(p, u + UDP_HDR_LEN);
		tl = pad4(p->len) + IB_ICRC_LEN;
		hl = ETH_HDR_LEN + IPV4_HDR_LEN + UDP_HDR_LEN + t;
		/* Destination MAC: the IPv4 multicast mapping (RFC 1112); source: a locally
		 * administered address made of the source IPv4 address (the verbs API does
		 * not deliver the sender's MAC to a UD receiver). */
		if ((ip[16] & 0xf0) == 0xe0) {
			h[0] = 0x01;
			h[1] = 0x00;
			h[2] = 0x5e;
			h[3] = ip[17] & 0x7f;
		} else {
			h[0] = 0x02;
			h[1] = 0x00;
			h[2] = ip[16];
			h[3] = ip[17];
		}
		h[4] = ip[18];
		h[5] = ip[19];
		h[6] = 0x02;
		h[7] = 0x00;
		memcpy(h + 8, ip + 12, 4);
		put16(h + 12, ETH_P_IPV4);
		memcpy(h + ETH_HDR_LEN, ip, IPV4_HDR_LEN);
		put16(u, (uint16_t)(ROCE_SPORT_BASE | (p->src_qpn & 0x3fff)));
		put16(u + 2, CAP_ROCE_UDP_PORT);
		put16(u + 4, (uint16_t)(UDP_HDR_LEN + t + p->len + tl));
		put16(u + 6, 0); /* no UDP checksum (RoCEv2 senders leave it zero) */
	}
	*wire = hl + p->len + tl;
	if (snaplen < CAP_ERF_HDR_LEN)
		snaplen = CAP_ERF_HDR_LEN; /* IB: the ERF header is always whole */
	n = hl < snaplen ? hl : snaplen;
	memcpy(out, h, n);
	if (n < snaplen) {
		pay = p->caplen < snaplen - n ? p->caplen : snaplen - n;
		memcpy(out + n, p->payload, pay);
		n += pay;
		/* The trailer unless the payload was cut. */
		if (p->caplen == p->len && n < snaplen) {
			uint32_t c = tl < snaplen - n ? tl : snaplen - n;

			memcpy(out + n, trailer, c);
			n += c;
		}
	}
	if (p->ib)
		erf_header(out, p->ts_ns, n, *wire - CAP_ERF_HDR_LEN);
	return n;
}

/* ---- blocks (host byte order: the byte-order magic tells readers) ---- */

static void h16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void h32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Bytes an option of len value bytes takes. */
static size_t opt_size(size_t len)
{
	return 4 + len + pad4(len);
}

/* Write an option; returns its size. */
static size_t opt_put(uint8_t *p, uint16_t code, const void *v, size_t len)
{
	h16(p, code);
	h16(p + 2, (uint16_t)len);
	if (len) /* opt_endofopt has no value (v NULL): memcpy must not see it */
		memcpy(p + 4, v, len);
	memset(p + 4 + len, 0, pad4(len));
	return opt_size(len);
}

static size_t str_len(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > 0xfff0 ? 0xfff0 : n;
}

size_t pcapng_shb_size(const char *app)
{
	return 28 + (app ? opt_size(str_len(app)) + 4 : 0);
}

size_t pcapng_shb(uint8_t *out, const char *app)
{
	size_t len = pcapng_shb_size(app), o = 24;
	uint64_t unknown = UINT64_MAX;

	h32(out, PCAPNG_SHB_TYPE);
	h32(out + 4, (uint32_t)len);
	h32(out + 8, PCAPNG_BOM);
	h16(out + 12, 1); /* version 1.0 */
	h16(out + 14, 0);
	memcpy(out + 16, &unknown, 8); /* section length: not given */
	if (app) {
		o += opt_put(out + o, PCAPNG_SHB_USERAPPL, app, str_len(app));
		o += opt_put(out + o, PCAPNG_OPT_END, NULL, 0);
	}
	h32(out + o, (uint32_t)len);
	return len;
}

size_t pcapng_idb_size(const char *name)
{
	return 16 + opt_size(str_len(name)) + opt_size(1) + 4 + 4;
}

size_t pcapng_idb(uint8_t *out, uint16_t linktype, uint32_t snaplen, const char *name)
{
	size_t len = pcapng_idb_size(name), o = 16;
	uint8_t tsresol = 9; /* 10^-9 s */

	h32(out, PCAPNG_IDB_TYPE);
	h32(out + 4, (uint32_t)len);
	h16(out + 8, linktype);
	h16(out + 10, 0);
	h32(out + 12, snaplen);
	o += opt_put(out + o, PCAPNG_IF_NAME, name ? name : "", str_len(name));
	o += opt_put(out + o, PCAPNG_IF_TSRESOL, &tsresol, 1);
	o += opt_put(out + o, PCAPNG_OPT_END, NULL, 0);
	h32(out + o, (uint32_t)len);
	return len;
}

size_t pcapng_epb_size(uint32_t caplen, const char *comment)
{
	return 32 + caplen + pad4(caplen) + (comment ? opt_size(str_len(comment)) + 4 : 0);
}

size_t pcapng_epb(uint8_t *out, uint32_t ifid, uint64_t ts_ns, const uint8_t *data, uint32_t caplen,
		  uint32_t wirelen, const char *comment)
{
	size_t len = pcapng_epb_size(caplen, comment), o = 28;

	h32(out, PCAPNG_EPB_TYPE);
	h32(out + 4, (uint32_t)len);
	h32(out + 8, ifid);
	h32(out + 12, (uint32_t)(ts_ns >> 32));
	h32(out + 16, (uint32_t)ts_ns);
	h32(out + 20, caplen);
	h32(out + 24, wirelen);
	if (data != out + o) /* callers may build the frame in place */
		memmove(out + o, data, caplen);
	memset(out + o + caplen, 0, pad4(caplen));
	o += caplen + pad4(caplen);
	if (comment) {
		o += opt_put(out + o, PCAPNG_OPT_COMMENT, comment, str_len(comment));
		o += opt_put(out + o, PCAPNG_OPT_END, NULL, 0);
	}
	h32(out + o, (uint32_t)len);
	return len;
}

int pcapng_write_part(int fd, const void *buf, size_t len, size_t *done)
{
	const uint8_t *p = buf;

	*done = 0;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		*done += (size_t)n;
	}
	return 0;
}

int pcapng_write_all(int fd, const void *buf, size_t len)
{
	size_t done;

	return pcapng_write_part(fd, buf, len, &done);
}
