/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pcapdump.h - mclisten --dump: received payloads written to a pcap file (nanosecond
 * timestamps, LINKTYPE_ETHERNET), each wrapped in Ethernet, IPv4 and UDP headers so that
 * tshark decodes them as the UDP encapsulation of PGM (-d udp.port==PORT,pgm) or as any
 * other UDP payload. The UDP ports are the group's port, the IPv4 destination the group,
 * the source the sender's IPv4 address on RoCE (0.0.0.0 on InfiniBand, which has none).
 * The IPv4 header checksum is filled, the UDP checksum is 0 (none).
 *
 * One owner thread; errors are sticky in the FILE (checked by pcapdump_close).
 */
#ifndef TOOLS_PCAPDUMP_H
#define TOOLS_PCAPDUMP_H

#include <stdint.h>
#include <stdio.h>

/* pcapdump_open - create path and write the file header. NULL + errno. */
FILE *pcapdump_open(const char *path);

/*
 * pcapdump_write - one record: payload p (len bytes, at most 65507) from src_ip to the
 * group dst_ip (both network order), UDP port `port`, time ts_ns (CLOCK_REALTIME ns).
 */
void pcapdump_write(FILE *f, uint64_t ts_ns, uint32_t src_ip, uint32_t dst_ip, uint16_t port,
		    const void *p, uint32_t len);

/* pcapdump_close - flush and close; 0, or -errno when a write failed. */
int pcapdump_close(FILE *f);

#endif /* TOOLS_PCAPDUMP_H */
