// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pcapdump.c - the pcap writer of mclisten --dump (see pcapdump.h). Written here rather
 * than with libpcap: a pcap file is a 24-byte header and 16-byte records, and libpcap's
 * dumper needs a pcap_t of a capture source we do not have.
 */
#include <errno.h>
#include <string.h>

#include "pcapdump.h"

#define PCAP_MAGIC_NS	  0xa1b23c4du /* nanosecond timestamps */
#define PCAP_VERSION_MAJ  2u
#define PCAP_VERSION_MIN  4u
#define PCAP_SNAPLEN	  65535u
#define LINKTYPE_ETHERNET 1u
#define ETH_LEN		  14u
#define ETH_TYPE_IPV4	  0x0800u
#define IPV4_LEN	  20u
#define IPV4_TTL	  1u
#define IPV4_DF		  0x4000u
#define IPPROTO_UDP_NUM	  17u
#define UDP_LEN		  8u
#define MAX_PAYLOAD	  (65535u - IPV4_LEN - UDP_LEN)

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* pcap headers are in the writer's byte order (little-endian here, told by the magic). */
static void put32h(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put16h(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

FILE *pcapdump_open(const char *path)
{
	uint8_t h[24];
	FILE *f = fopen(path, "wb");

	if (!f)
		return NULL;
	put32h(h, PCAP_MAGIC_NS);
	put16h(h + 4, PCAP_VERSION_MAJ);
	put16h(h + 6, PCAP_VERSION_MIN);
	put32h(h + 8, 0);  /* thiszone */
	put32h(h + 12, 0); /* sigfigs */
	put32h(h + 16, PCAP_SNAPLEN);
	put32h(h + 20, LINKTYPE_ETHERNET);
	if (fwrite(h, sizeof(h), 1, f) != 1) {
		int e = errno;

		fclose(f);
		errno = e;
		return NULL;
	}
	return f;
}

static uint16_t ipv4_csum(const uint8_t *p)
{
	uint32_t s = 0;

	for (unsigned i = 0; i < IPV4_LEN; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

void pcapdump_write(FILE *f, uint64_t ts_ns, uint32_t src_ip, uint32_t dst_ip, uint16_t port,
		    const void *p, uint32_t len)
{
	uint8_t rec[16], h[ETH_LEN + IPV4_LEN + UDP_LEN];
	uint8_t *ip = h + ETH_LEN, *udp = ip + IPV4_LEN;
	const uint8_t *d = (const uint8_t *)&dst_ip; /* network order: d[1..3] low bytes */
	uint32_t frame;

	if (len > MAX_PAYLOAD)
		len = MAX_PAYLOAD;
	frame = (uint32_t)sizeof(h) + len;
	put32h(rec, (uint32_t)(ts_ns / 1000000000u));
	put32h(rec + 4, (uint32_t)(ts_ns % 1000000000u));
	put32h(rec + 8, frame);
	put32h(rec + 12, frame);
	/* Ethernet: the group's MAC 01:00:5e + low 23 bits, a locally administered source. */
	memcpy(h, (const uint8_t[]){0x01, 0x00, 0x5e, (uint8_t)(d[1] & 0x7f), d[2], d[3]}, 6);
	memcpy(h + 6, (const uint8_t[]){0x02, 0, 0, 0, 0, 0x01}, 6);
	put16(h + 12, ETH_TYPE_IPV4);
	memset(ip, 0, IPV4_LEN);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IPV4_LEN + UDP_LEN + len));
	put16(ip + 6, IPV4_DF);
	ip[8] = IPV4_TTL;
	ip[9] = IPPROTO_UDP_NUM;
	memcpy(ip + 12, &src_ip, 4);
	memcpy(ip + 16, &dst_ip, 4);
	put16(ip + 10, ipv4_csum(ip));
	put16(udp, port);
	put16(udp + 2, port);
	put16(udp + 4, (uint16_t)(UDP_LEN + len));
	put16(udp + 6, 0);
	fwrite(rec, sizeof(rec), 1, f);
	fwrite(h, sizeof(h), 1, f);
	fwrite(p, len, 1, f);
}

int pcapdump_close(FILE *f)
{
	int r = 0;

	if (!f)
		return 0;
	if (ferror(f))
		r = -EIO;
	if (fclose(f) && !r)
		r = -errno;
	return r;
}
