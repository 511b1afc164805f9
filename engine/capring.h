/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The capture ring of a worker: a single-producer (the worker) single-consumer (the
 * control thread) ring of fixed-size records, each a received packet's first bytes, its
 * work completion fields and its verdict. Filled only while a capture runs
 * (bridge->cap_gen != 0); a full ring loses the record (counted in `full`), never the
 * packet. control/capture.c drains it into a pcapng file.
 */
#ifndef ENGINE_CAPRING_H
#define ENGINE_CAPRING_H

#include <stdatomic.h>
#include <stdint.h>

/* One captured packet. data: the 40 header bytes and up to the capture's snap bytes of
 * payload (caplen bytes in all). */
struct cap_rec {
	uint64_t ts_ns;	   /* CLOCK_MONOTONIC at the completion poll */
	uint32_t gen;	   /* the capture that took it (bridge->cap_gen) */
	uint32_t group;	   /* the packet's group address (network order), 0: none found */
	uint32_t src_qp;   /* wc.src_qp */
	uint32_t byte_len; /* wc.byte_len: 40 + payload */
	uint32_t caplen;   /* bytes in data */
	uint32_t imm;	   /* wc.imm_data (network order) */
	uint32_t chan;	   /* the receiving channel's index */
	uint16_t slid;	   /* wc.slid */
	uint8_t side;	   /* enum side */
	uint8_t verdict;   /* enum drop_reason, DROP_NREASONS: forwarded */
	uint8_t has_imm;
	uint8_t pad[7];
	uint8_t data[];
};

struct cap_ring {
	_Atomic uint64_t head; /* consumer: the next record to read */
	char pad1[56];
	_Atomic uint64_t tail; /* producer: the next record to write */
	uint64_t full;	       /* producer: records lost to a full ring */
	uint64_t taken;	       /* producer: records written */
	char pad2[40];
	uint32_t mask;	   /* records - 1 */
	uint32_t rec_size; /* bytes per record */
	uint32_t data_max; /* data bytes a record holds */
	uint8_t *recs;
} __attribute__((aligned(64)));

/*
 * A ring of `n` records (rounded up to a power of two, at least 2) of data_max data bytes
 * each. Control thread. NULL with errno on failure.
 */
struct cap_ring *cap_ring_new(uint32_t n, uint32_t data_max);

/* Bytes cap_ring_new(n, data_max) allocates. */
uint64_t cap_ring_footprint(uint32_t n, uint32_t data_max);

/* Write every page of the ring's records once (fault them in: under mlockall
 * MCL_FUTURE they are locked then). Before the ring is published; any thread. */
void cap_ring_touch(struct cap_ring *r);

/* Free a ring no worker uses any more (NULL: nothing). Any thread. */
void cap_ring_free(struct cap_ring *r);

static inline struct cap_rec *cap_ring_at(const struct cap_ring *r, uint64_t i)
{
	return (struct cap_rec *)(r->recs + (size_t)(i & r->mask) * r->rec_size);
}

/*
 * Producer: the record to fill next, or NULL (counted in full) when the ring is full.
 * Nothing is visible to the consumer until cap_ring_commit.
 */
static inline struct cap_rec *cap_ring_reserve(struct cap_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	/* Pairs with the consumer's release store of head: the record is free again. */
	if (tail - atomic_load_explicit(&r->head, memory_order_acquire) > r->mask) {
		r->full++;
		return NULL;
	}
	return cap_ring_at(r, tail);
}

/* Producer: publish the record cap_ring_reserve returned. */
static inline void cap_ring_commit(struct cap_ring *r)
{
	/* Pairs with the consumer's acquire load of tail: the record's bytes are written. */
	atomic_store_explicit(&r->tail, atomic_load_explicit(&r->tail, memory_order_relaxed) + 1,
			      memory_order_release);
	r->taken++;
}

#endif /* ENGINE_CAPRING_H */
