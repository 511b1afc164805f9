/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pcapng writing and the frames of a UD datagram as a wire sniffer would see them.
 *
 * Shared by the bridge (control/capture.c) and the simulated fabric's capture (simfab
 * capture): neither depends on the other, both link this small library.
 *
 * Why our own writer and not libpcap: pcap_dump() writes the classic pcap format only,
 * which has no per-packet comment; the verdict of every packet (forwarded, or the name of
 * its drop reason) goes into the comment option of a pcapng Enhanced Packet Block, so
 * that Wireshark can filter on it (frame.comment contains "drop"). The three blocks used
 * here (Section Header, Interface Description, Enhanced Packet) are a few lines each.
 *
 * InfiniBand frames (LRH, GRH, BTH, DETH, payload, ICRC, VCRC) are written as ERF records of
 * type InfiniBand (LINKTYPE_ERF), as Mellanox's ibdump writes them: Wireshark 4.0 (Debian
 * 12) decodes those, while it has no dissector mapping for LINKTYPE_INFINIBAND (247) and
 * shows such frames as raw data.
 *
 * The verbs API delivers a UD receive as 40 bytes of network header (the GRH on
 * InfiniBand; on RoCEv2 the IPv4 header at offset 20, or the IPv6 header) and the
 * payload. What a sniffer would also see is reconstructed (cap_frame_encode): on
 * InfiniBand the LRH, BTH, DETH (and ImmDt), on RoCEv2 the Ethernet (IPv4 or IPv6) and
 * UDP headers, BTH, DETH (and ImmDt), from the work completion and what the receiver
 * knows of the group. ICRC and VCRC are written as zero (Wireshark shows them and does
 * not check them).
 *
 * All functions: any thread, no allocation, no logging.
 */
#ifndef CAPTURE_PCAPNG_H
#define CAPTURE_PCAPNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAP_LINKTYPE_ETHERNET	1   /* LINKTYPE_ETHERNET */
#define CAP_LINKTYPE_ERF	197 /* LINKTYPE_ERF: an ERF record header, then the frame */
#define CAP_ERF_TYPE_INFINIBAND 21  /* ERF record type: an InfiniBand packet from the LRH on */
#define CAP_ERF_HDR_LEN		16

#define CAP_ROCE_UDP_PORT	   4791
#define CAP_BTH_SEND_ONLY	   0x64 /* UD SEND Only */
#define CAP_BTH_SEND_ONLY_WITH_IMM 0x65 /* UD SEND Only with Immediate */

/* Header bytes a frame adds to the payload at most (IB: ERF LRH GRH BTH DETH ImmDt). */
#define CAP_FRAME_HDR_MAX 88
/* Trailer bytes at most: 3 pad bytes, ICRC, VCRC. */
#define CAP_FRAME_TRAILER_MAX 9

/* One received UD datagram, as a receiver knows it. */
struct cap_pkt {
	bool ib;		/* InfiniBand (LRH/GRH/...), else RoCEv2 (IPv4 or IPv6) */
	const uint8_t *hdr;	/* the 40 header bytes of the receive buffer */
	const uint8_t *payload; /* the first `caplen` payload bytes */
	uint32_t len;		/* payload bytes of the datagram */
	uint32_t caplen;	/* payload bytes at `payload` (<= len) */
	uint32_t src_qpn;	/* wc.src_qp */
	uint32_t dst_qpn;	/* 0xffffff for multicast */
	uint32_t qkey;
	uint16_t pkey;
	uint16_t slid; /* IB: wc.slid */
	uint16_t dlid; /* IB: the group's MLID (0 when unknown) */
	uint8_t sl;
	bool has_imm;
	uint32_t imm;	/* network order, as wc.imm_data */
	uint64_t ts_ns; /* IB: when it was received (ns since the epoch), for the ERF header */
};

/*
 * Write the frame of p into out (at most snaplen bytes: the first bytes of the frame).
 * *wire: the frame's length on the wire. Returns the bytes written.
 */
uint32_t cap_frame_encode(const struct cap_pkt *p, uint8_t *out, uint32_t snaplen, uint32_t *wire);

/* The link type of p's frames. */
static inline uint16_t cap_frame_linktype(bool ib)
{
	return ib ? CAP_LINKTYPE_ERF : CAP_LINKTYPE_ETHERNET;
}

/* Bytes a Section Header Block with the application name `app` takes. */
size_t pcapng_shb_size(const char *app);

/* Write a Section Header Block (little-endian, unknown section length). Returns its size. */
size_t pcapng_shb(uint8_t *out, const char *app);

/* Bytes an Interface Description Block takes. */
size_t pcapng_idb_size(const char *name);

/*
 * Write an Interface Description Block: link type, snaplen, if_name `name`, and
 * if_tsresol 9 (timestamps in nanoseconds). Returns its size.
 */
size_t pcapng_idb(uint8_t *out, uint16_t linktype, uint32_t snaplen, const char *name);

/* Bytes an Enhanced Packet Block of caplen bytes with comment (NULL: none) takes. */
size_t pcapng_epb_size(uint32_t caplen, const char *comment);

/*
 * Write an Enhanced Packet Block: interface ifid, timestamp ts_ns (ns since the epoch),
 * caplen bytes of data of a wirelen-byte frame, opt_comment `comment` (NULL: none).
 * Returns its size. data may already be in place at out + 28.
 */
size_t pcapng_epb(uint8_t *out, uint32_t ifid, uint64_t ts_ns, const uint8_t *data, uint32_t caplen,
		  uint32_t wirelen, const char *comment);

/* Write all of buf to fd, retrying short writes and EINTR. 0 or -errno. */
int pcapng_write_all(int fd, const void *buf, size_t len);

/* As pcapng_write_all, and *done = the bytes written (all of len on success, fewer when a
 * write failed: a full disk, RLIMIT_FSIZE). */
int pcapng_write_part(int fd, const void *buf, size_t len, size_t *done);

#endif /* CAPTURE_PCAPNG_H */
