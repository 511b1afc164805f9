/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * stream.c - per-stream PGM state in a liburcu lock-free hash table (QSBR flavour).
 *
 * Ownership: see stream.h. In short, side[i] of a record is written by the worker that
 * receives the stream's group on side i; d (the SQN state) by the worker of the origin
 * side only; origin is claimed once with a compare-and-swap; the table counters are
 * updated with atomics on the rare insert/remove paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>
#include <urcu/uatomic.h>

#include "pgm_pvt.h"
#include "stream.h"

#define CACHE_LINE	  PGM_STREAM_CACHE_LINE
#define WORD_BITS	  PGM_STREAM_WIN_BITS
#define WIN_MASK	  (PGM_STREAM_WINDOW - 1u)
#define DEFAULT_INIT_SIZE 64ul
#define LABEL_OPT_MAX	  0x7f /* option types are 7 bits */

/* 64-bit finalizer (MurmurHash3 fmix64) constants. */
#define MIX_SHIFT 33u
#define MIX_MUL1  0xff51afd7ed558ccdull
#define MIX_MUL2  0xc4ceb9fe1a85ec53ull

_Static_assert((PGM_STREAM_WINDOW & WIN_MASK) == 0 && PGM_STREAM_WINDOW >= WORD_BITS,
	       "PGM_STREAM_WINDOW must be a power of two of at least 64");
_Static_assert(sizeof(struct pgm_stream_key) == 16, "pgm_stream_key has no padding");
_Static_assert(PGM_STREAM_LABEL_MAX <= UINT8_MAX, "label length fits pgm_stream_stats");

/* Writer-only shorthands: one writer per field, readers use LOAD(). */
#define STORE(x, v) _CMM_STORE_SHARED(x, v)
#define INC(x)	    _CMM_STORE_SHARED(x, (x) + 1)
#define ADD(x, n)   _CMM_STORE_SHARED(x, (x) + (n))
#define LOAD(x)	    CMM_LOAD_SHARED(x)

/* stream_data.flags */
#define D_HAVE_SPM    0x1u
#define D_HAVE_DATA   0x2u
#define D_HAVE_WINDOW 0x4u

struct pgm_stream {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	struct pgm_stream_table *table;
	struct pgm_stream_key key;
	uint16_t dport;
	uint32_t origin; /* PGM_SIDE_NONE until claimed by uatomic_cmpxchg */
	struct pgm_stream_data d;
	struct pgm_stream_side side[PGM_STREAM_SIDES];
};

static inline struct pgm_stream *stream_of(struct cds_lfht_node *node)
{
	return node ? caa_container_of(node, struct pgm_stream, node) : NULL;
}

/*
 * Iterate over the streams. liburcu's cds_lfht_for_each_entry() applies container_of to
 * the NULL end-of-table node, which UBSan rightly reports; this converts live nodes only.
 */
#define for_each_stream(ht, iter, s)                                                               \
	for (cds_lfht_first(ht, iter); ((s) = stream_of(cds_lfht_iter_get_node(iter))) != NULL;    \
	     cds_lfht_next(ht, iter))

struct pgm_stream_table {
	/*
	 * First (pgm_stream_odata_next() reads it through the table pointer): the
	 * generation, which validates every thread's stream_cache and every pgm_stream_ref.
	 */
	struct pgm_stream_table_head head;
	struct cds_lfht *ht;
	uint64_t seed[2];
	int label_opt;
	/* Updated with uatomic on insert/remove/free only. */
	uint64_t streams, inserted, removed, freed, enomem;
	uint64_t gaps_retired, missed_retired, repairs_retired; /* pgm_stream_table_age */
};

_Static_assert(offsetof(struct pgm_stream_table, head) == 0, "a table starts with its head");

/*
 * The last stream this thread found or inserted with pgm_stream_update(): a steady stream
 * (the same TSI and group packet after packet) then costs a key compare instead of a hash
 * and a table lookup. Owned by its thread, never read by another. A pgm_stream_ref
 * (stream.h) is filled from it and valid by the same rule.
 *
 * Why a hit is safe under QSBR, where a record pointer normally dies at the thread's next
 * quiescent state: a record is only freed by stream_remove(), which gives the table a new
 * generation (t->head.gen) before call_rcu(). Generations are drawn from one process-wide
 * counter (stream_gens), so the table never has the same one twice and no two tables
 * share one (a freed table's address may be reused). If this thread still reads the
 * generation it cached, then (RCU's guarantee, the store precedes the grace period) the
 * grace period that frees the record has not ended before this thread's current
 * read-side critical section, so the record stays valid until this thread's next
 * quiescent state; a record removed meanwhile is one the caller raced with aging, which
 * stream.h already allows. On a miss the generation is read before the lookup, with a
 * read barrier between: a lookup that still finds a record being removed then read the
 * generation from before its removal.
 */
struct stream_cache {
	uint64_t gen; /* t->head.gen when s was found; 0: empty */
	struct pgm_stream_key key;
	struct pgm_stream *s;
};

static __thread struct stream_cache stream_cache __attribute__((tls_model("initial-exec")));

/* Source of the tables' generations (uatomic_add_return: never 0). */
static uint64_t stream_gens;

static const char *const state_names[PGM_STREAM_STATE_COUNT] = {
	[PGM_STREAM_NEW] = "new",
	[PGM_STREAM_ACTIVE] = "active",
	[PGM_STREAM_FIN] = "fin",
	[PGM_STREAM_RST] = "rst",
};

static const char *const count_names[PGM_COUNT_TYPES] = {
	[PGM_COUNT_SPM] = "spm",     [PGM_COUNT_POLL] = "poll",	  [PGM_COUNT_POLR] = "polr",
	[PGM_COUNT_ODATA] = "odata", [PGM_COUNT_RDATA] = "rdata", [PGM_COUNT_NAK] = "nak",
	[PGM_COUNT_NNAK] = "nnak",   [PGM_COUNT_NCF] = "ncf",	  [PGM_COUNT_SPMR] = "spmr",
	[PGM_COUNT_ACK] = "ack",
};

const char *pgm_stream_state_name(enum pgm_stream_state s)
{
	if ((unsigned)s >= PGM_STREAM_STATE_COUNT)
		return "unknown";
	return state_names[s];
}

const char *pgm_stream_count_name(enum pgm_stream_count c)
{
	if ((unsigned)c >= PGM_COUNT_TYPES)
		return "unknown";
	return count_names[c];
}

/* Counter index of a (parsed, valid) packet type; PGM_COUNT_TYPES if none. */
static enum pgm_stream_count count_index(uint8_t type)
{
	switch (type) {
	case PGM_TYPE_SPM:
		return PGM_COUNT_SPM;
	case PGM_TYPE_POLL:
		return PGM_COUNT_POLL;
	case PGM_TYPE_POLR:
		return PGM_COUNT_POLR;
	case PGM_TYPE_ODATA:
		return PGM_COUNT_ODATA;
	case PGM_TYPE_RDATA:
		return PGM_COUNT_RDATA;
	case PGM_TYPE_NAK:
		return PGM_COUNT_NAK;
	case PGM_TYPE_NNAK:
		return PGM_COUNT_NNAK;
	case PGM_TYPE_NCF:
		return PGM_COUNT_NCF;
	case PGM_TYPE_SPMR:
		return PGM_COUNT_SPMR;
	case PGM_TYPE_ACK:
		return PGM_COUNT_ACK;
	default:
		return PGM_COUNT_TYPES;
	}
}

void pgm_stream_key_from_packet(struct pgm_stream_key *key, const struct pgm_packet *pkt,
				uint64_t group)
{
	memcpy(key->gsi, pkt->gsi, PGM_GSI_LEN);
	key->sport = pgm_packet_tsi_port(pkt);
	key->group = group;
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> MIX_SHIFT;
	x *= MIX_MUL1;
	x ^= x >> MIX_SHIFT;
	x *= MIX_MUL2;
	x ^= x >> MIX_SHIFT;
	return x;
}

/* Seeded hash of a key: GSIs and ports come from the network. */
static unsigned long key_hash(const struct pgm_stream_table *t, const struct pgm_stream_key *k)
{
	uint64_t tsi = 0;

	memcpy(&tsi, k->gsi, PGM_GSI_LEN);
	tsi ^= (uint64_t)k->sport << (PGM_GSI_LEN * 8);
	return (unsigned long)mix64(mix64(tsi ^ t->seed[0]) ^ k->group ^ t->seed[1]);
}

/* The key has no padding (asserted above): two 8-byte compares. */
static inline bool key_equal(const struct pgm_stream_key *a, const struct pgm_stream_key *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static int key_match(struct cds_lfht_node *node, const void *arg)
{
	const struct pgm_stream *s = caa_container_of(node, struct pgm_stream, node);

	return key_equal(&s->key, arg);
}

static void seed_init(uint64_t seed[2])
{
	struct timespec ts;

	if (getrandom(seed, 2 * sizeof(seed[0]), GRND_NONBLOCK) == (ssize_t)(2 * sizeof(seed[0])))
		return;
	/* No entropy yet (early boot): a clock-derived seed still varies per run. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	seed[0] = mix64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32);
	seed[1] = mix64(seed[0] ^ (uint64_t)(uintptr_t)seed);
}

struct pgm_stream_table *pgm_stream_table_new(const struct pgm_stream_params *params)
{
	struct pgm_stream_params p = {.label_opt = PGM_OPT_VENDOR_LABEL,
				      .init_size = DEFAULT_INIT_SIZE};
	struct pgm_stream_table *t;

	if (params)
		p = *params;
	if (p.label_opt < -1 || p.label_opt > LABEL_OPT_MAX || p.init_size == 0 ||
	    (p.init_size & (p.init_size - 1))) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->label_opt = p.label_opt;
	t->head.gen = uatomic_add_return(&stream_gens, 1);
	seed_init(t->seed);
	t->ht = cds_lfht_new_flavor(p.init_size, p.init_size, 0,
				    CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor,
				    NULL);
	if (!t->ht) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static void stream_free_rcu(struct rcu_head *head)
{
	struct pgm_stream *s = caa_container_of(head, struct pgm_stream, rcu);

	uatomic_inc(&s->table->freed);
	free(s);
}

/* Unlink s (read-side held) and free it after a grace period. */
static bool stream_remove(struct pgm_stream_table *t, struct pgm_stream *s)
{
	if (cds_lfht_del(t->ht, &s->node) != 0)
		return false; /* someone else removed it */
	uatomic_dec(&t->streams);
	uatomic_inc(&t->removed);
	/* A generation no table had, before call_rcu: every stream_cache and pgm_stream_ref
	 * of this table misses from now on (struct stream_cache). */
	uatomic_set(&t->head.gen, uatomic_add_return(&stream_gens, 1));
	urcu_qsbr_call_rcu(&s->rcu, stream_free_rcu);
	return true;
}

void pgm_stream_table_free(struct pgm_stream_table *t)
{
	struct cds_lfht_iter iter;
	struct pgm_stream *s;
	int online;

	if (!t)
		return;
	urcu_qsbr_read_lock();
	for_each_stream(t->ht, &iter, s) stream_remove(t, s);
	urcu_qsbr_read_unlock();

	/* rcu_barrier refuses to run while this QSBR thread counts as a reader. */
	online = urcu_qsbr_read_ongoing();
	if (online)
		urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	if (online)
		urcu_qsbr_thread_online();

	cds_lfht_destroy(t->ht, NULL);
	free(t);
}

static struct pgm_stream *stream_find(struct pgm_stream_table *t, const struct pgm_stream_key *key,
				      unsigned long hash)
{
	struct cds_lfht_iter iter;

	cds_lfht_lookup(t->ht, hash, key_match, key, &iter);
	return stream_of(cds_lfht_iter_get_node(&iter));
}

static struct pgm_stream *stream_new(struct pgm_stream_table *t, const struct pgm_stream_key *key,
				     const struct pgm_packet *pkt)
{
	struct pgm_stream *s;

	if (posix_memalign((void **)&s, CACHE_LINE, sizeof(*s)) != 0)
		return NULL;
	memset(s, 0, sizeof(*s));
	cds_lfht_node_init(&s->node);
	s->table = t;
	s->key = *key;
	s->dport = pgm_type_upstream(pkt->type) ? pkt->sport : pkt->dport;
	s->origin = PGM_SIDE_NONE;
	s->d.state = PGM_STREAM_NEW;
	return s;
}

/* Find the stream or insert a new one (slow path of stream_get()); NULL when out of memory. */
static struct pgm_stream *stream_find_or_add(struct pgm_stream_table *t,
					     const struct pgm_stream_key *key,
					     const struct pgm_packet *pkt)
{
	unsigned long hash = key_hash(t, key);
	struct pgm_stream *s = stream_find(t, key, hash);
	struct cds_lfht_node *node;

	if (s)
		return s;
	s = stream_new(t, key, pkt);
	if (!s) {
		uatomic_inc(&t->enomem);
		return NULL;
	}
	node = cds_lfht_add_unique(t->ht, hash, key_match, key, &s->node);
	if (node != &s->node) {
		/* Another worker inserted it first; ours was never visible. */
		free(s);
		return stream_of(node);
	}
	uatomic_inc(&t->streams);
	uatomic_inc(&t->inserted);
	return s;
}

/* stream_find_or_add() behind this thread's stream_cache. */
static inline struct pgm_stream *stream_get(struct pgm_stream_table *t,
					    const struct pgm_stream_key *key,
					    const struct pgm_packet *pkt)
{
	struct stream_cache *c = &stream_cache;
	uint64_t gen = LOAD(t->head.gen); /* before the lookup: see struct stream_cache */
	struct pgm_stream *s;

	if (c->gen == gen && key_equal(&c->key, key))
		return c->s;
	cmm_smp_rmb(); /* the generation before the lookup's loads */
	s = stream_find_or_add(t, key, pkt);
	if (s) {
		c->gen = gen;
		c->key = *key;
		c->s = s;
	}
	return s;
}

/* ---- SQN window (origin writer only) ---- */

static inline bool win_test(const struct pgm_stream_data *d, uint32_t sqn)
{
	uint32_t b = sqn & WIN_MASK;

	return (d->win[b / WORD_BITS] >> (b % WORD_BITS)) & 1u;
}

static inline void win_set(struct pgm_stream_data *d, uint32_t sqn)
{
	uint32_t b = sqn & WIN_MASK;

	d->win[b / WORD_BITS] |= 1ull << (b % WORD_BITS);
}

/* Restart the window at sqn (first data, OPT_SYN, re-sync). */
static void win_reset(struct pgm_stream_data *d, uint32_t sqn)
{
	memset(d->win, 0, sizeof(d->win));
	win_set(d, sqn);
	STORE(d->rx_lead, sqn);
	d->stale_run = 0;
}

/* Move the window's lead to sqn, ahead by n > 0, forgetting the SQNs it passes over. */
static void win_advance(struct pgm_stream_data *d, uint32_t sqn, uint32_t n)
{
	if (n == 1) {
		/* In order, the common case: the one bit to forget is sqn's own, set again. */
		win_set(d, sqn);
		STORE(d->rx_lead, sqn);
		return;
	}
	if (n >= PGM_STREAM_WINDOW) {
		memset(d->win, 0, sizeof(d->win));
	} else {
		/* The n bits after rx_lead's, around the ring, up to a word at a time. */
		uint32_t b = (d->rx_lead + 1) & WIN_MASK;

		while (n) {
			uint32_t off = b % WORD_BITS, k = WORD_BITS - off;
			uint64_t bits;

			if (k > n)
				k = n;
			bits = (k == WORD_BITS ? ~0ull : (1ull << k) - 1) << off;
			d->win[b / WORD_BITS] &= ~bits;
			n -= k;
			b = (b + k) & WIN_MASK;
		}
	}
	win_set(d, sqn);
	STORE(d->rx_lead, sqn);
}

/* Advertised window: trail and lead move forward in serial order only. */
static void window_note(struct pgm_stream_data *d, uint32_t trail, uint32_t lead)
{
	if (!(d->flags & D_HAVE_WINDOW)) {
		STORE(d->trail, trail);
		STORE(d->lead, lead);
		STORE(d->flags, d->flags | D_HAVE_WINDOW);
		return;
	}
	if (pgm_sqn_gt(trail, d->trail))
		STORE(d->trail, trail);
	if (pgm_sqn_gt(lead, d->lead))
		STORE(d->lead, lead);
}

/* Account one ODATA/RDATA (not parity); returns the verdict. */
static enum pgm_verdict data_note(struct pgm_stream_data *d, const struct pgm_packet *pkt)
{
	bool odata = pkt->type == PGM_TYPE_ODATA;
	uint32_t sqn = pkt->u.data.sqn;
	bool syn = pkt->opt_seen & PGM_OPT_BIT(PGM_OPT_SYN);
	enum pgm_verdict v = PGM_VERDICT_PASS;
	uint32_t behind; /* how far sqn trails rx_lead, when ahead <= 0 */
	int32_t ahead;

	window_note(d, pkt->u.data.trail, sqn);
	ahead = pgm_sqn_diff(sqn, d->rx_lead);
	behind = d->rx_lead - sqn;
	if (!(d->flags & D_HAVE_DATA)) {
		win_reset(d, sqn);
		STORE(d->flags, d->flags | D_HAVE_DATA);
	} else if (syn && odata &&
		   !(ahead <= 0 && behind < PGM_STREAM_WINDOW && win_test(d, sqn))) {
		/* A new session on the same TSI starts its SQNs afresh (a repeated SYN
		 * packet is a duplicate, handled below). */
		INC(d->resyncs);
		win_reset(d, sqn);
	} else if (ahead > 0) {
		uint32_t skipped = (uint32_t)ahead - 1;

		if (!odata)
			skipped++; /* the repaired SQN never came as ODATA either */
		if (skipped) {
			INC(d->gaps);
			ADD(d->missed, skipped);
		}
		if (!odata)
			INC(d->repairs);
		win_advance(d, sqn, (uint32_t)ahead);
		d->stale_run = 0;
	} else if (behind < PGM_STREAM_WINDOW) {
		bool seen = win_test(d, sqn);

		if (odata && seen) {
			INC(d->dups);
			v = PGM_VERDICT_DUPLICATE;
		} else if (odata) {
			INC(d->late);
		} else if (seen) {
			INC(d->rdata_dups);
		} else {
			INC(d->repairs);
		}
		win_set(d, sqn);
		d->stale_run = 0;
	} else {
		/* Older than the window: cannot tell, never called a duplicate. */
		INC(d->stale);
		if (++d->stale_run >= PGM_STREAM_RESYNC_RUN) {
			INC(d->resyncs);
			win_reset(d, sqn);
		}
	}
	if (odata)
		STORE(d->odata_last, sqn);
	return v;
}

static void spm_note(struct pgm_stream_data *d, const struct pgm_packet *pkt)
{
	if ((d->flags & D_HAVE_SPM) && !pgm_sqn_gt(pkt->u.spm.sqn, d->spm_sqn))
		return; /* old or repeated SPM: its window is stale */
	STORE(d->spm_sqn, pkt->u.spm.sqn);
	STORE(d->flags, d->flags | D_HAVE_SPM);
	window_note(d, pkt->u.spm.trail, pkt->u.spm.lead);
}

/* Keep the label the first time it is seen; count later different values. */
static void label_note(struct pgm_stream_table *t, struct pgm_stream_data *d,
		       const struct pgm_packet *pkt)
{
	const struct pgm_opt_rec *rec;
	unsigned n;

	if (t->label_opt < 0 || pkt->n_recs == 0)
		return;
	rec = pgm_packet_opt_find(pkt, (uint8_t)t->label_opt);
	if (!rec)
		return;
	n = rec->len - PGM_OPT_HDR_LEN;
	if (n > PGM_STREAM_LABEL_MAX)
		n = PGM_STREAM_LABEL_MAX;
	if (d->label_len == 0 && n) {
		memcpy(d->label, pkt->raw + rec->offset + PGM_OPT_HDR_LEN, n);
		cmm_smp_wmb(); /* pairs with cmm_smp_rmb() in pgm_stream_snapshot() */
		STORE(d->label_len, n);
	} else if (n != d->label_len ||
		   memcmp(d->label, pkt->raw + rec->offset + PGM_OPT_HDR_LEN, n) != 0) {
		INC(d->label_changes);
	}
}

/* Stream state transitions on OPT_SYN / OPT_FIN / OPT_RST and on data. */
static void state_note(struct pgm_stream_data *d, const struct pgm_packet *pkt)
{
	uint32_t seen = pkt->opt_seen;
	bool data = pkt->type == PGM_TYPE_ODATA || pkt->type == PGM_TYPE_RDATA;

	if (seen & PGM_OPT_BIT(PGM_OPT_SYN))
		INC(d->syn);
	if (seen & PGM_OPT_BIT(PGM_OPT_FIN))
		INC(d->fin);
	if (seen & PGM_OPT_BIT(PGM_OPT_RST))
		INC(d->rst);

	if (seen & PGM_OPT_BIT(PGM_OPT_RST))
		STORE(d->state, PGM_STREAM_RST);
	else if (seen & PGM_OPT_BIT(PGM_OPT_FIN))
		STORE(d->state, PGM_STREAM_FIN);
	else if (pkt->type == PGM_TYPE_ODATA || (data && d->state == PGM_STREAM_NEW))
		STORE(d->state, PGM_STREAM_ACTIVE); /* repairs after FIN keep the state */
}

/* Claim the origin for side on the first downstream packet; returns the origin. */
static uint32_t origin_claim(struct pgm_stream *s, unsigned side)
{
	uint32_t o = LOAD(s->origin);

	if (o != PGM_SIDE_NONE)
		return o;
	o = uatomic_cmpxchg(&s->origin, PGM_SIDE_NONE, side);
	return o == PGM_SIDE_NONE ? side : o;
}

int pgm_stream_update(struct pgm_stream_table *t, const struct pgm_stream_key *key, unsigned side,
		      const struct pgm_packet *pkt, uint64_t now_ns, enum pgm_verdict *verdict)
{
	enum pgm_stream_count idx;
	struct pgm_stream_side *sd;
	struct pgm_stream_data *d;
	struct pgm_stream *s;

	*verdict = PGM_VERDICT_PASS;
	if (side >= PGM_STREAM_SIDES || !(pkt->flags & PGM_PKT_HAVE_HEADER))
		return -EINVAL;
	s = stream_get(t, key, pkt);
	if (!s)
		return -ENOMEM;

	sd = &s->side[side];
	if (!sd->first_ns)
		STORE(sd->first_ns, now_ns);
	STORE(sd->last_ns, now_ns);
	if (pgm_result_malformed(pkt->result)) {
		INC(sd->malformed);
		return 0;
	}
	if (pkt->result == PGM_BAD_CHECKSUM) {
		INC(sd->bad_checksum);
		return 0;
	}
	idx = count_index(pkt->type);
	if (idx == PGM_COUNT_TYPES)
		return -EINVAL; /* not what pgm_parse() accepts */

	if (!pgm_type_upstream(pkt->type) && origin_claim(s, side) != side) {
		INC(sd->loops);
		*verdict = PGM_VERDICT_LOOP;
		return 0;
	}
	INC(sd->types[idx]);
	if (pkt->flags & PGM_PKT_OPX_DISCARD) {
		INC(sd->opx_discard);
		*verdict = PGM_VERDICT_OPX_DISCARD;
		return 0;
	}
	if (pgm_type_upstream(pkt->type))
		return 0;

	/* Downstream on the origin side: this worker owns d. */
	d = &s->d;
	label_note(t, d, pkt);
	switch (pkt->type) {
	case PGM_TYPE_SPM:
		spm_note(d, pkt);
		break;
	case PGM_TYPE_ODATA:
	case PGM_TYPE_RDATA:
		if (pkt->hdr_opts & PGM_HDR_OPT_PARITY)
			INC(d->parity); /* parity SQNs name transmission groups */
		else
			*verdict = data_note(d, pkt);
		break;
	default: /* POLL, NCF: counted above */
		break;
	}
	state_note(d, pkt);
	return 0;
}

bool pgm_stream_ref_fill(struct pgm_stream_table *t, struct pgm_stream_ref *ref, const uint8_t *p,
			 uint64_t tsi, uint64_t group, unsigned side)
{
	const struct stream_cache *c = &stream_cache;
	struct pgm_stream_key key;
	struct pgm_stream *s;

	memcpy(key.gsi, p + PGM_OFF_GSI, PGM_GSI_LEN);
	key.sport = pgm_get16(p + PGM_OFF_SPORT); /* downstream: the TSI port */
	key.group = group;
	/* The generation first: see struct stream_cache. */
	if (c->gen != LOAD(t->head.gen) || !key_equal(&c->key, &key))
		return false;
	s = c->s;
	/*
	 * What stays true once true (the ref's user does not test it again): the origin is
	 * claimed once; the flags and first_ns are only ever set.
	 */
	if (side >= PGM_STREAM_SIDES || LOAD(s->origin) != side ||
	    (s->d.flags & (D_HAVE_DATA | D_HAVE_WINDOW)) != (D_HAVE_DATA | D_HAVE_WINDOW) ||
	    !s->side[side].first_ns)
		return false;
	ref->gen = c->gen;
	ref->tsi = tsi;
	ref->group = group;
	ref->d = &s->d;
	ref->sd = &s->side[side];
	ref->side = side;
	return true;
}

const struct pgm_stream *pgm_stream_lookup(struct pgm_stream_table *t,
					   const struct pgm_stream_key *key)
{
	return stream_find(t, key, key_hash(t, key));
}

void pgm_stream_snapshot(const struct pgm_stream *s, struct pgm_stream_stats *out)
{
	const struct pgm_stream_data *d = &s->d;
	uint32_t flags = LOAD(d->flags);
	uint32_t n;

	memset(out, 0, sizeof(*out));
	out->key = s->key;
	out->dport = s->dport;
	out->origin = (uint8_t)LOAD(s->origin);
	out->state = (enum pgm_stream_state)LOAD(d->state);
	out->have_spm = flags & D_HAVE_SPM;
	out->have_data = flags & D_HAVE_DATA;
	out->have_window = flags & D_HAVE_WINDOW;
	out->spm_sqn = LOAD(d->spm_sqn);
	out->trail = LOAD(d->trail);
	out->lead = LOAD(d->lead);
	out->odata_last = LOAD(d->odata_last);
	out->rx_lead = LOAD(d->rx_lead);
	out->gaps = LOAD(d->gaps);
	out->missed = LOAD(d->missed);
	out->late = LOAD(d->late);
	out->repairs = LOAD(d->repairs);
	out->dups = LOAD(d->dups);
	out->rdata_dups = LOAD(d->rdata_dups);
	out->stale = LOAD(d->stale);
	out->resyncs = LOAD(d->resyncs);
	out->parity = LOAD(d->parity);
	out->syn = LOAD(d->syn);
	out->fin = LOAD(d->fin);
	out->rst = LOAD(d->rst);
	out->label_changes = LOAD(d->label_changes);
	n = LOAD(d->label_len);
	cmm_smp_rmb(); /* pairs with cmm_smp_wmb() in label_note() */
	out->label_len = (uint8_t)n;
	memcpy(out->label, d->label, n);

	for (unsigned i = 0; i < PGM_STREAM_SIDES; i++) {
		const struct pgm_stream_side *sd = &s->side[i];
		struct pgm_stream_side_stats *o = &out->side[i];

		for (unsigned c = 0; c < PGM_COUNT_TYPES; c++)
			o->types[c] = LOAD(sd->types[c]);
		o->malformed = LOAD(sd->malformed);
		o->bad_checksum = LOAD(sd->bad_checksum);
		o->loops = LOAD(sd->loops);
		o->opx_discard = LOAD(sd->opx_discard);
		o->first_ns = LOAD(sd->first_ns);
		o->last_ns = LOAD(sd->last_ns);
		if (o->first_ns && (!out->first_ns || o->first_ns < out->first_ns))
			out->first_ns = o->first_ns;
		if (o->last_ns > out->last_ns)
			out->last_ns = o->last_ns;
	}
}

int pgm_stream_table_for_each(struct pgm_stream_table *t,
			      int (*fn)(const struct pgm_stream *s, void *arg), void *arg)
{
	struct cds_lfht_iter iter;
	struct pgm_stream *s;
	int r;

	for_each_stream(t->ht, &iter, s)
	{
		r = fn(s, arg);
		if (r)
			return r;
	}
	return 0;
}

size_t pgm_stream_table_age(struct pgm_stream_table *t, uint64_t now_ns, uint64_t idle_ns)
{
	struct cds_lfht_iter iter;
	struct pgm_stream *s;
	size_t n = 0;

	for_each_stream(t->ht, &iter, s)
	{
		uint64_t last = 0;

		for (unsigned i = 0; i < PGM_STREAM_SIDES; i++) {
			uint64_t l = LOAD(s->side[i].last_ns);

			if (l > last)
				last = l;
		}
		if (now_ns > last && now_ns - last > idle_ns) {
			struct pgm_stream_stats ss;

			/* Read before the removal: a packet racing with it may be missed. */
			pgm_stream_snapshot(s, &ss);
			if (!stream_remove(t, s))
				continue;
			uatomic_add(&t->gaps_retired, ss.gaps);
			uatomic_add(&t->missed_retired, ss.missed);
			uatomic_add(&t->repairs_retired, ss.repairs);
			n++;
		}
	}
	return n;
}

void pgm_stream_table_info(struct pgm_stream_table *t, struct pgm_stream_table_info *out)
{
	out->streams = uatomic_read(&t->streams);
	out->inserted = uatomic_read(&t->inserted);
	out->removed = uatomic_read(&t->removed);
	out->freed = uatomic_read(&t->freed);
	out->enomem = uatomic_read(&t->enomem);
	out->gaps_retired = uatomic_read(&t->gaps_retired);
	out->missed_retired = uatomic_read(&t->missed_retired);
	out->repairs_retired = uatomic_read(&t->repairs_retired);
}
