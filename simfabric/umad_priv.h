/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * umad_priv.h: what the simulated libibumad's files share (umad.c: the user MAD
 * interface; umad_sm.c: the fabric's SM agents and SA; umad_str.c: names). Private to
 * libibumad.so.3.
 */
#ifndef SIMFABRIC_UMAD_PRIV_H
#define SIMFABRIC_UMAD_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include "sf.h"

/* A MAD is 256 bytes; the SA data starts at 56, SMP data at 64. */
#define MAD_LEN	     256
#define SA_DATA	     56
#define SMP_DATA     64
#define SA_COMP_MASK 48 /* the SA header's ComponentMask (RMPP 24, SM_Key 36, offset 44) */

/* MAD header fields (IBA 13.4.2). */
#define MAD_CLASS   1
#define MAD_METHOD  3
#define MAD_STATUS  4
#define MAD_HOP_CNT 7
#define MAD_TID	    8
#define MAD_ATTR    16

/* MAD status: method not supported (bits 2-4 = 2). */
#define MAD_ST_BAD_METHOD 0x0008
/* MAD status: method/attribute combination not supported (bits 2-4 = 3). */
#define MAD_ST_UNSUPPORTED 0x000c
/* Directed-route SMP direction bit (in the status field). */
#define SMP_DIRECTION 0x8000
/* SA class status (bits 8-14): no records, request invalid, insufficient components. */
#define SA_ST_NO_RECORDS  (UMAD_SA_STATUS_NO_RECORDS << 8)
#define SA_ST_REQ_INVALID (UMAD_SA_STATUS_REQ_INVALID << 8)
#define SA_ST_INSUF_COMPS (UMAD_SA_STATUS_INSUF_COMPS << 8)

/* Methods that expect a response (IBA 13.4.5): Get, Set, Delete, GetTable, ... */
static inline bool mad_is_request(uint8_t method)
{
	return !(method & 0x80) && method != UMAD_METHOD_SEND && method != UMAD_METHOD_TRAP &&
	       method != UMAD_METHOD_REPORT;
}

/* Big-endian fields of a MAD. */
static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get16(p) << 48 | (uint64_t)get16(p + 2) << 32 |
	       (uint64_t)get16(p + 4) << 16 | get16(p + 6);
}

/*
 * sf_sma_answer - answer an SMP sent from device self_dev to dlid (LID-routed) or by
 * directed route, in place: resp is a copy of the request and becomes the response.
 * false: nothing answers (no such port, not IB, port down: the request times out).
 * sf_sa_answer - likewise for a MAD to the SA (dlid must be the SM's LID, dqpn 1).
 * Both take the fabric lock where they change the group tables.
 */
bool sf_sma_answer(struct sf_fabric *fab, int self_dev, uint16_t dlid, uint8_t *resp);
bool sf_sa_answer(struct sf_fabric *fab, const struct sf_dev *self, uint16_t dlid, uint32_t dqpn,
		  uint8_t *resp);

#endif /* SIMFABRIC_UMAD_PRIV_H */
