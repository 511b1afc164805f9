/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pcap.c - see pcap.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pcap.h"

#define PCAP_MAGIC	   0xa1b2c3d4u
#define PCAP_MAGIC_SWAPPED 0xd4c3b2a1u
#define PCAP_MAGIC_NS	   0xa1b23c4du
#define PCAP_VERSION_MAJOR 2u
#define PCAP_VERSION_MINOR 4u
#define PCAP_SNAPLEN	   65535u
#define PCAP_GLOBAL_LEN	   24u
#define PCAP_RECORD_LEN	   16u
#define LINKTYPE_ETHERNET  1u
#define LINKTYPE_LINUX_SLL 113u

#define ETH_LEN	       14u
#define ETH_TYPE_OFF   12u
#define ETH_TYPE_IPV4  0x0800u
#define SLL_LEN	       16u
#define SLL_PROTO_OFF  14u
#define IPV4_MIN_LEN   20u
#define IPV4_PROTO_UDP 17u
#define IPV4_TTL       16u
#define IPV4_DF	       0x4000u
#define UDP_LEN	       8u

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* Little-endian (the byte order this file's headers are written in). */
static void put32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32le(const uint8_t *p, int swapped)
{
	if (swapped)
		return get32(p);
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

FILE *pcap_create(const char *path)
{
	uint8_t h[PCAP_GLOBAL_LEN] = {0};
	FILE *f = fopen(path, "wb");

	if (!f)
		return NULL;
	put32le(h, PCAP_MAGIC);
	h[4] = PCAP_VERSION_MAJOR;
	h[6] = PCAP_VERSION_MINOR;
	put32le(h + 16, PCAP_SNAPLEN);
	put32le(h + 20, LINKTYPE_ETHERNET);
	if (fwrite(h, sizeof(h), 1, f) != 1) {
		fclose(f);
		return NULL;
	}
	return f;
}

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += get16(p + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

int pcap_write_udp(FILE *f, uint32_t src_ip, uint32_t dst_ip, uint16_t sport, uint16_t dport,
		   const void *payload, size_t len)
{
	static unsigned seq;
	size_t frame_len = ETH_LEN + IPV4_MIN_LEN + UDP_LEN + len;
	uint8_t rec[PCAP_RECORD_LEN];
	uint8_t *fr;
	uint8_t *ip, *udp;

	if (len > PCAP_SNAPLEN - ETH_LEN - IPV4_MIN_LEN - UDP_LEN) {
		errno = EMSGSIZE;
		return -1;
	}
	fr = calloc(1, frame_len);
	if (!fr)
		return -1;
	/* Ethernet: IPv4 multicast MAC for multicast destinations. */
	if ((dst_ip >> 28) == 0xe) {
		fr[0] = 0x01;
		fr[2] = 0x5e;
		fr[3] = (uint8_t)((dst_ip >> 16) & 0x7f);
		fr[4] = (uint8_t)(dst_ip >> 8);
		fr[5] = (uint8_t)dst_ip;
	} else {
		fr[0] = 0x02;
		fr[5] = 0x02;
	}
	fr[6] = 0x02;
	fr[11] = 0x01;
	put16(fr + ETH_TYPE_OFF, ETH_TYPE_IPV4);

	ip = fr + ETH_LEN;
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IPV4_MIN_LEN + UDP_LEN + len));
	put16(ip + 4, (uint16_t)++seq);
	put16(ip + 6, IPV4_DF);
	ip[8] = IPV4_TTL;
	ip[9] = IPV4_PROTO_UDP;
	put32(ip + 12, src_ip);
	put32(ip + 16, dst_ip);
	put16(ip + 10, ip_checksum(ip, IPV4_MIN_LEN));

	udp = ip + IPV4_MIN_LEN;
	put16(udp, sport);
	put16(udp + 2, dport);
	put16(udp + 4, (uint16_t)(UDP_LEN + len));
	memcpy(udp + UDP_LEN, payload, len); /* UDP checksum 0: none, valid for IPv4 */

	put32le(rec, seq);
	put32le(rec + 4, 0);
	put32le(rec + 8, (uint32_t)frame_len);
	put32le(rec + 12, (uint32_t)frame_len);
	if (fwrite(rec, sizeof(rec), 1, f) != 1 || fwrite(fr, frame_len, 1, f) != 1) {
		free(fr);
		return -1;
	}
	free(fr);
	return 0;
}

/* Decode the IPv4/UDP part of one frame; returns 0 when it is a UDP packet. */
static int decode_frame(const uint8_t *p, size_t len, uint32_t link, struct pcap_udp *u)
{
	size_t l2, ihl, ip_total, udp_len;
	const uint8_t *ip;

	if (link == LINKTYPE_ETHERNET) {
		if (len < ETH_LEN || get16(p + ETH_TYPE_OFF) != ETH_TYPE_IPV4)
			return -1;
		l2 = ETH_LEN;
	} else if (link == LINKTYPE_LINUX_SLL) {
		if (len < SLL_LEN || get16(p + SLL_PROTO_OFF) != ETH_TYPE_IPV4)
			return -1;
		l2 = SLL_LEN;
	} else {
		return -1;
	}
	ip = p + l2;
	len -= l2;
	if (len < IPV4_MIN_LEN || (ip[0] >> 4) != 4)
		return -1;
	ihl = (size_t)(ip[0] & 0xf) * 4;
	ip_total = get16(ip + 2);
	if (ihl < IPV4_MIN_LEN || ip_total > len || ip_total < ihl + UDP_LEN ||
	    ip[9] != IPV4_PROTO_UDP || (get16(ip + 6) & 0x3fff) != 0)
		return -1; /* not UDP, or a fragment */
	udp_len = get16(ip + ihl + 4);
	if (udp_len < UDP_LEN || udp_len > ip_total - ihl)
		return -1;
	u->src_ip = get32(ip + 12);
	u->dst_ip = get32(ip + 16);
	u->sport = get16(ip + ihl);
	u->dport = get16(ip + ihl + 2);
	u->payload = ip + ihl + UDP_LEN;
	u->len = udp_len - UDP_LEN;
	return 0;
}

long pcap_for_each_udp(const char *path, void (*fn)(const struct pcap_udp *u, void *arg), void *arg)
{
	uint8_t h[PCAP_GLOBAL_LEN], rec[PCAP_RECORD_LEN];
	uint8_t *frame = NULL;
	uint32_t magic, link;
	int swapped;
	long n = 0;
	FILE *f;

	f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	if (fread(h, sizeof(h), 1, f) != 1)
		goto bad;
	magic = get32le(h, 0);
	if (magic == PCAP_MAGIC || magic == PCAP_MAGIC_NS)
		swapped = 0;
	else if (magic == PCAP_MAGIC_SWAPPED)
		swapped = 1;
	else
		goto bad;
	link = get32le(h + 20, swapped);
	frame = malloc(PCAP_SNAPLEN);
	if (!frame)
		goto bad;
	while (fread(rec, sizeof(rec), 1, f) == 1) {
		uint32_t incl = get32le(rec + 8, swapped);
		struct pcap_udp u = {0};

		if (incl > PCAP_SNAPLEN || fread(frame, incl, 1, f) != 1)
			goto bad;
		n++;
		if (decode_frame(frame, incl, link, &u) == 0) {
			u.frame = (unsigned)n;
			fn(&u, arg);
		}
	}
	free(frame);
	fclose(f);
	return n;
bad:
	fprintf(stderr, "%s: not a readable classic pcap file\n", path);
	free(frame);
	fclose(f);
	return -1;
}
