/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pcap.h - just enough of the classic pcap file format for the PGM tests: write PGM
 * packets wrapped in Ethernet/IPv4/UDP (UDP encapsulation, as OpenPGM sends them), and
 * read back the UDP payloads of a capture (Ethernet or Linux cooked link types).
 */
#ifndef TESTS_PGM_PCAP_H
#define TESTS_PGM_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PCAP_UDP_ENCAP_UCAST 3055u /* OpenPGM's default UDP encapsulation ports */
#define PCAP_UDP_ENCAP_MCAST 3056u

struct pcap_udp {
	unsigned frame;		 /* 1-based record number, as tshark's frame.number */
	uint32_t src_ip, dst_ip; /* host order */
	uint16_t sport, dport;
	const uint8_t *payload;
	size_t len;
};

/* Open a pcap for writing (Ethernet link type); NULL with errno on failure. */
FILE *pcap_create(const char *path);

/* Append one UDP datagram carrying payload; returns 0 or -1 with errno. */
int pcap_write_udp(FILE *f, uint32_t src_ip, uint32_t dst_ip, uint16_t sport, uint16_t dport,
		   const void *payload, size_t len);

/*
 * Call fn for every IPv4/UDP packet of the capture (other records are counted but
 * skipped). Returns the number of records read, or -1 with a message on stderr.
 */
long pcap_for_each_udp(const char *path, void (*fn)(const struct pcap_udp *u, void *arg),
		       void *arg);

#endif /* TESTS_PGM_PCAP_H */
