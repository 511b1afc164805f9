/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * stream.h - per-stream PGM state: a lock-free table of streams keyed by TSI and group.
 *
 * Threading contract (liburcu QSBR flavour, cds_lfht):
 * - Workers call pgm_stream_update() for every PGM packet they receive, as registered
 *   QSBR threads, online. A new stream is inserted lock-free (cds_lfht_add_unique).
 * - A record has one writer per fabric side: the worker that receives the stream's group
 *   on that side. Downstream state (SQN window, gaps, duplicates, stream state, label) is
 *   written only by the worker of the stream's origin side. Counters are plain stores;
 *   readers load them with CMM_LOAD_SHARED: each value is whole, a snapshot of several is
 *   not one instant. No atomics on the hot path (the origin side is claimed once per
 *   stream with a compare-and-swap).
 * - Readers (console, JSON, tests) call pgm_stream_table_for_each(), pgm_stream_lookup()
 *   and pgm_stream_snapshot() as registered QSBR threads, online, and keep no pointer to
 *   a record across a quiescent state.
 * - The control thread calls pgm_stream_table_age() (registered, online) to remove idle
 *   streams; removed records are freed with call_rcu after a grace period.
 * - pgm_stream_table_new()/_free() run on the control thread before workers start and
 *   after they stop.
 */
#ifndef PGM_STREAM_H
#define PGM_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include <urcu/system.h>

#include "pgm.h"

/* A bridge has two fabric sides; the caller decides which is which (e.g. 0 IB, 1 RoCE). */
#define PGM_STREAM_SIDES 2u
#define PGM_SIDE_NONE	 0xffu /* origin not known yet: no downstream packet seen */

/* Stream label bytes kept (an option carries at most 255 - 4). */
#define PGM_STREAM_LABEL_MAX 251u

/* SQNs of recent data remembered for duplicate detection (power of two). */
#define PGM_STREAM_WINDOW 1024u

/* Consecutive data packets older than the window after which the window re-syncs. */
#define PGM_STREAM_RESYNC_RUN 8u

struct pgm_stream_table;
struct pgm_stream;

/* Identity of a stream: TSI (GSI + source port) and the caller's opaque group key. */
struct pgm_stream_key {
	uint8_t gsi[PGM_GSI_LEN];
	uint16_t sport; /* TSI source port, host order */
	uint64_t group;
};

/*
 * pgm_stream_key_from_packet - fill key from a parsed packet (PGM_PKT_HAVE_HEADER) and the
 * group it arrived on: GSI and TSI port (the destination port for upstream types).
 * Any thread. O(1).
 */
void pgm_stream_key_from_packet(struct pgm_stream_key *key, const struct pgm_packet *pkt,
				uint64_t group);

enum pgm_stream_state {
	PGM_STREAM_NEW = 0, /* known, no data yet */
	PGM_STREAM_ACTIVE,  /* data flowing */
	PGM_STREAM_FIN,	    /* source sent OPT_FIN */
	PGM_STREAM_RST,	    /* source sent OPT_RST */
	PGM_STREAM_STATE_COUNT
};

/* pgm_stream_state_name - "new", "active", "fin", "rst"; "unknown" otherwise. */
const char *pgm_stream_state_name(enum pgm_stream_state s);

/* Per-type packet counters. */
enum pgm_stream_count {
	PGM_COUNT_SPM = 0,
	PGM_COUNT_POLL,
	PGM_COUNT_POLR,
	PGM_COUNT_ODATA,
	PGM_COUNT_RDATA,
	PGM_COUNT_NAK,
	PGM_COUNT_NNAK,
	PGM_COUNT_NCF,
	PGM_COUNT_SPMR,
	PGM_COUNT_ACK,
	PGM_COUNT_TYPES
};

/* pgm_stream_count_name - "spm", "odata", ...; "unknown" otherwise. */
const char *pgm_stream_count_name(enum pgm_stream_count c);

/* What pgm_stream_update() concluded about one packet. */
enum pgm_verdict {
	PGM_VERDICT_PASS = 0,	 /* forward */
	PGM_VERDICT_DUPLICATE,	 /* ODATA whose SQN this stream already carried */
	PGM_VERDICT_LOOP,	 /* downstream packet on the side opposite the stream's origin */
	PGM_VERDICT_OPX_DISCARD, /* an unknown option's OPX bits ask to discard the packet */
};

/* The runtime feature pgm_dups (see docs/pgm.md). */
enum pgm_dup_policy {
	PGM_DUPS_FORWARD = 0, /* default: count duplicates, forward them */
	PGM_DUPS_DROP,	      /* count and drop duplicates */
};

/*
 * pgm_verdict_drop - whether the caller drops a packet with this verdict: loops and OPX
 * discards always, duplicates when the policy says so. Any thread. O(1).
 */
static inline bool pgm_verdict_drop(enum pgm_verdict v, enum pgm_dup_policy dups)
{
	if (v == PGM_VERDICT_DUPLICATE)
		return dups == PGM_DUPS_DROP;
	return v == PGM_VERDICT_LOOP || v == PGM_VERDICT_OPX_DISCARD;
}

/* Table parameters; pgm_stream_table_new(NULL) uses the defaults shown. */
struct pgm_stream_params {
	int label_opt;		 /* option type read as a stream label, -1 for none (0x22) */
	unsigned long init_size; /* initial hash buckets, a power of two (64) */
};

/*
 * pgm_stream_table_new - create an empty stream table. params may be NULL.
 * Control thread, before workers use it; need not be an RCU thread.
 * Returns the table, or NULL with errno (EINVAL bad params, ENOMEM).
 */
struct pgm_stream_table *pgm_stream_table_new(const struct pgm_stream_params *params);

/*
 * pgm_stream_table_free - remove and free every stream, wait for pending frees, destroy
 * the table. t may be NULL. Caller: a registered QSBR thread (online or offline) once no
 * other thread uses the table. Blocks for a grace period.
 */
void pgm_stream_table_free(struct pgm_stream_table *t);

/*
 * pgm_stream_update - account one received packet to its stream.
 * @key: the stream (pgm_stream_key_from_packet()).
 * @side: fabric side the packet arrived on (< PGM_STREAM_SIDES).
 * @pkt: the packet as pgm_parse() left it; needs PGM_PKT_HAVE_HEADER.
 * @now_ns: the caller's monotonic clock, non-zero.
 * @verdict: output, PGM_VERDICT_PASS unless the packet is a duplicate, a loop or an
 *            OPX discard.
 *
 * Creates the stream on first sight (lock-free insert). The first downstream packet
 * (SPM, POLL, ODATA, RDATA, NCF) makes its side the stream's origin; a later downstream
 * packet of the same stream on the other side is a loop: counted, not accounted.
 * Upstream packets (NAK, NNAK, SPMR, POLR, ACK) are counted on the side they arrive on.
 * A packet with an unknown option whose OPX bits say discard is counted by type and in
 * opx_discard and changes no SQN state. Malformed packets and bad checksums are counted
 * and change no other state.
 * Caller: the worker owning (group, side), a registered QSBR thread, online.
 * Cost: about 160 instructions for in-order ODATA of the stream this thread updated last
 * (a per-thread cache, emptied by any removal from the table, see stream.c); otherwise
 * one hash lookup more; one allocation when the stream is new.
 * Returns 0, -EINVAL (no header, bad side, a packet pgm_parse() did not accept marked
 * PGM_OK), -ENOMEM (new stream not tracked; the packet gets PGM_VERDICT_PASS).
 */
int pgm_stream_update(struct pgm_stream_table *t, const struct pgm_stream_key *key, unsigned side,
		      const struct pgm_packet *pkt, uint64_t now_ns, enum pgm_verdict *verdict);

/*
 * pgm_stream_odata_plain - whether the len bytes at buf are laid out as an ODATA packet
 * without options (options byte 0) whose TSDU length fills the packet: the only packets
 * pgm_stream_odata_next() takes. Such a packet is well formed (pgm_surely_malformed()
 * is exact without options); only its checksum may be wrong. Any thread, a few loads.
 */
static inline bool pgm_stream_odata_plain(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t n = len - PGM_HDR_LEN - PGM_DATA_LEN; /* the TSDU length; wraps when shorter */

	/*
	 * The length in range (one compare), then type and options (one compare turns other
	 * payloads away), then the TSDU length against n in the wire's byte order.
	 */
	return n <= PGM_MAX_TPDU - PGM_HDR_LEN - PGM_DATA_LEN &&
	       pgm_get16(p + PGM_OFF_TYPE) == (unsigned)PGM_TYPE_ODATA << 8 &&
	       pgm_get16_wire(p + PGM_OFF_TSDU_LEN) == htons((uint16_t)n);
}

/*
 * ---- What the inline pgm_stream_odata_next() touches ----
 * Declared here only so that the shortcut can be inline in the data path (as liburcu's
 * urcu/static/ headers declare what its inline fast paths touch). stream.c owns these
 * structures and the ownership rules at the top of this file apply: no other code reads
 * or writes them.
 */
#define PGM_STREAM_CACHE_LINE 64u
#define PGM_STREAM_WIN_BITS   64u /* SQNs per word of pgm_stream_data.win */

/* Counters of one side of a stream; written by that side's worker only. */
struct pgm_stream_side {
	uint64_t types[PGM_COUNT_TYPES];
	uint64_t malformed, bad_checksum, loops, opx_discard;
	uint64_t first_ns, last_ns;
} __attribute__((aligned(PGM_STREAM_CACHE_LINE)));

/* Downstream state of a stream; written by the origin side's worker only. */
struct pgm_stream_data {
	uint32_t state;
	uint32_t flags;
	uint32_t spm_sqn, trail, lead, odata_last, rx_lead;
	uint32_t stale_run;
	uint64_t gaps, missed, late, repairs, dups, rdata_dups, stale, resyncs, parity;
	uint64_t syn, fin, rst, label_changes;
	uint32_t label_len; /* published after label[] with a write barrier */
	uint8_t label[PGM_STREAM_LABEL_MAX];
	/* bit (sqn % WINDOW) set: sqn in (rx_lead - WINDOW, rx_lead] seen */
	uint64_t win[PGM_STREAM_WINDOW / PGM_STREAM_WIN_BITS];
} __attribute__((aligned(PGM_STREAM_CACHE_LINE)));

/*
 * The first member of every table: its generation, a value no table of the process ever
 * had before (never 0), replaced before a stream of the table is handed to call_rcu for
 * freeing (see stream.c, struct stream_cache).
 */
struct pgm_stream_table_head {
	uint64_t gen;
};

/*
 * A caller's memory of one stream for pgm_stream_odata_next() (a flow of the data path):
 * its TSI, group and origin side, and where its state is. Valid while the table's
 * generation is the one it was filled under (no stream was removed since). Zero it to
 * empty it. Owned by one worker thread.
 */
struct pgm_stream_ref {
	uint64_t gen;		    /* the table's generation when filled; 0: empty */
	uint64_t tsi;		    /* pgm_stream_tsi_word() of the stream's packets */
	uint64_t group;		    /* the stream's group key */
	struct pgm_stream_data *d;  /* the stream's downstream state */
	struct pgm_stream_side *sd; /* the stream's counters of side `side` */
	unsigned side;		    /* the stream's origin side */
};

/*
 * pgm_stream_tsi_word - the TSI of the downstream packet at p (at least PGM_HDR_LEN bytes)
 * as one word, for equality tests only: the GSI's bytes (8-13) and the source port's
 * (0-1) in packet order, whatever the host's byte order. Any thread, a few instructions.
 */
static inline uint64_t pgm_stream_tsi_word(const uint8_t *p)
{
	uint64_t w;
	uint16_t port;

	memcpy(&w, p + PGM_OFF_GSI, sizeof(w)); /* the GSI, then the TSDU length */
	memcpy(&port, p + PGM_OFF_SPORT, sizeof(port));
	/* The port's bytes in place of the TSDU length's (bytes 6-7 of w in memory). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (w & ((1ull << (PGM_GSI_LEN * 8)) - 1)) | (uint64_t)port << (PGM_GSI_LEN * 8);
#else
	return (w & ~0xffffull) | port;
#endif
}

/*
 * pgm_stream_ref_fill - the rare part of pgm_stream_odata_next(): fill ref with the stream
 * of the downstream packet at p (tsi: pgm_stream_tsi_word(p)) on group when that stream
 * is in this thread's cache (the last stream pgm_stream_update() found), its origin is
 * side, and it has data, a window and a packet on that side. Returns whether it did;
 * ref is unchanged otherwise.
 * Caller: the worker owning (group, side), a registered QSBR thread, online.
 */
bool pgm_stream_ref_fill(struct pgm_stream_table *t, struct pgm_stream_ref *ref, const uint8_t *p,
			 uint64_t tsi, uint64_t group, unsigned side);

/*
 * pgm_stream_odata_next - the in-order shortcut of pgm_parse() + pgm_stream_update() for
 * a packet pgm_stream_odata_plain() accepted (the caller's test, not repeated): when it is the next
 * ODATA of a known stream (the stream of key (TSI, group) is in ref, or else in this thread's
 * cache, which then fills ref), the stream's origin is `side`, the stream has data and a window,
 * the SQN is the last one seen + 1, and its checksum is absent or right, the stream is updated
 * exactly as pgm_stream_update() would (ODATA counted on the side, last time, window
 * lead and trail, SQN window, state active) and true is returned: pgm_parse() would have
 * said PGM_OK and pgm_stream_update() PGM_VERDICT_PASS. Otherwise nothing is changed (but
 * ref) and false is returned: the caller takes the full path.
 * Caller: the worker owning (group, side), a registered QSBR thread, online.
 * Cost: about 55 instructions inline plus pgm_csum_acc() (30 for 64 bytes) when the ref holds
 * the stream.
 */
static inline __attribute__((always_inline)) bool
pgm_stream_odata_next(struct pgm_stream_table *t, struct pgm_stream_ref *ref, const void *buf,
		      size_t len, uint64_t group, unsigned side, uint64_t now_ns)
{
	/* A table starts with its head (a struct's address is its first member's). */
	const struct pgm_stream_table_head *h = (const void *)t;
	const uint8_t *p = buf;
	uint64_t tsi = pgm_stream_tsi_word(p);
	struct pgm_stream_side *sd;
	struct pgm_stream_data *d;
	uint32_t sqn, trail, bit;

	/*
	 * The ref's stream: no stream removed since it was filled (the generation is read
	 * before the record is used), the same TSI, group and side. What the fill checked
	 * holds for good: the origin is claimed once, the flags and first_ns only get set.
	 */
	if (__builtin_expect(ref->gen != CMM_LOAD_SHARED(h->gen) || ref->tsi != tsi ||
				     ref->group != group || ref->side != side,
			     0) &&
	    !pgm_stream_ref_fill(t, ref, p, tsi, group, side))
		return false;
	d = ref->d;
	/* In order: data_note's ahead 1. This thread is the only writer of d. */
	sqn = pgm_get32(p + PGM_HDR_LEN + PGM_DATA_OFF_SQN);
	if (sqn != d->rx_lead + 1)
		return false;
	/*
	 * pgm_checksum_verify(): a valid packet sums to all ones, pgm_csum_ok() without its
	 * test for a zero sum (the sum of bytes that are not all zero, here the type's).
	 */
	if (pgm_get16(p + PGM_OFF_CHECKSUM) && pgm_csum_acc(p, len) % PGM_CSUM_ALL_ONES != 0)
		return false; /* counted as a bad checksum by the full path */
	/* pgm_stream_update() of an ODATA without options, PGM_OK, not a loop. */
	sd = ref->sd;
	_CMM_STORE_SHARED(sd->last_ns, now_ns);
	_CMM_STORE_SHARED(sd->types[PGM_COUNT_ODATA], sd->types[PGM_COUNT_ODATA] + 1);
	/* window_note() with a window: trail and lead move forward in serial order only. */
	trail = pgm_get32(p + PGM_HDR_LEN + PGM_DATA_OFF_TRAIL);
	if (pgm_sqn_gt(trail, d->trail))
		_CMM_STORE_SHARED(d->trail, trail);
	if (pgm_sqn_gt(sqn, d->lead))
		_CMM_STORE_SHARED(d->lead, sqn);
	/* win_advance() by one: the one bit to forget is sqn's own, set again. */
	bit = sqn % PGM_STREAM_WINDOW;
	d->win[bit / PGM_STREAM_WIN_BITS] |= 1ull << (bit % PGM_STREAM_WIN_BITS);
	_CMM_STORE_SHARED(d->rx_lead, sqn);
	d->stale_run = 0;
	_CMM_STORE_SHARED(d->odata_last, sqn);
	_CMM_STORE_SHARED(d->state, PGM_STREAM_ACTIVE);
	return true;
}

/* Counters of one side of a stream. first_ns/last_ns are 0 until a packet arrives. */
struct pgm_stream_side_stats {
	uint64_t types[PGM_COUNT_TYPES];
	uint64_t malformed;
	uint64_t bad_checksum;
	uint64_t loops;	      /* downstream packets refused as loops */
	uint64_t opx_discard; /* packets with an unknown option asking for discard */
	uint64_t first_ns, last_ns;
};

/* A reader's copy of one stream. */
struct pgm_stream_stats {
	struct pgm_stream_key key;
	uint16_t dport; /* data destination port */
	uint8_t origin; /* side, or PGM_SIDE_NONE */
	enum pgm_stream_state state;
	bool have_spm;		/* spm_sqn valid */
	bool have_data;		/* odata_last / rx_lead valid */
	bool have_window;	/* trail / lead valid */
	uint32_t spm_sqn;	/* last SPM sequence number */
	uint32_t trail, lead;	/* transmit window from SPMs and data */
	uint32_t odata_last;	/* SQN of the last ODATA */
	uint32_t rx_lead;	/* highest data SQN seen */
	uint64_t gaps;		/* times the data SQN jumped ahead by more than one */
	uint64_t missed;	/* SQNs skipped by those jumps */
	uint64_t late;		/* ODATA filling an earlier gap (reordered) */
	uint64_t repairs;	/* RDATA filling a gap */
	uint64_t dups;		/* ODATA for an SQN already seen */
	uint64_t rdata_dups;	/* RDATA for an SQN already seen */
	uint64_t stale;		/* data older than the duplicate window */
	uint64_t resyncs;	/* window restarts (OPT_SYN mid-stream, runs of stale data) */
	uint64_t parity;	/* parity (FEC) data packets, not sequence-tracked */
	uint64_t syn, fin, rst; /* OPT_SYN / OPT_FIN / OPT_RST seen */
	uint64_t label_changes; /* label option with a value other than the first */
	uint8_t label_len;	/* 0: no label seen */
	uint8_t label[PGM_STREAM_LABEL_MAX];
	uint64_t first_ns, last_ns; /* over both sides */
	struct pgm_stream_side_stats side[PGM_STREAM_SIDES];
};

/*
 * pgm_stream_snapshot - copy a stream's state into out. Reader under QSBR (online).
 * Cost: a few hundred bytes of loads.
 */
void pgm_stream_snapshot(const struct pgm_stream *s, struct pgm_stream_stats *out);

/*
 * pgm_stream_lookup - find a stream, NULL if absent. Reader under QSBR (online); the
 * pointer is valid until the caller's next quiescent state. One hash lookup.
 */
const struct pgm_stream *pgm_stream_lookup(struct pgm_stream_table *t,
					   const struct pgm_stream_key *key);

/*
 * pgm_stream_table_for_each - call fn for every stream until fn returns non-zero.
 * Reader under QSBR (online); streams inserted or removed meanwhile may or may not be
 * visited. Returns fn's non-zero value, or 0. O(streams).
 */
int pgm_stream_table_for_each(struct pgm_stream_table *t,
			      int (*fn)(const struct pgm_stream *s, void *arg), void *arg);

/*
 * pgm_stream_table_age - remove streams with no packet on any side for more than
 * idle_ns before now_ns and free them with call_rcu. Control thread, registered QSBR,
 * online. A packet racing with the removal is accounted to the record being removed.
 * Returns the number of streams removed. O(streams).
 */
size_t pgm_stream_table_age(struct pgm_stream_table *t, uint64_t now_ns, uint64_t idle_ns);

/* Table-wide counters. */
struct pgm_stream_table_info {
	uint64_t streams;  /* in the table now */
	uint64_t inserted; /* ever inserted */
	uint64_t removed;  /* removed by aging or free */
	uint64_t freed;	   /* records whose memory was released */
	uint64_t enomem;   /* new streams not tracked for lack of memory */
	/* What the streams removed by pgm_stream_table_age had counted (their gaps,
	 * missed and repairs), so that these plus the live streams' never go down. */
	uint64_t gaps_retired, missed_retired, repairs_retired;
};

/* pgm_stream_table_info - read the table counters. Any thread. O(1). */
void pgm_stream_table_info(struct pgm_stream_table *t, struct pgm_stream_table_info *out);

#endif /* PGM_STREAM_H */
