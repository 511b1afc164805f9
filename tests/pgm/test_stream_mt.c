/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_stream_mt.c - the stream table under concurrency, as the bridge uses it:
 * two writer threads (one per fabric side, like two workers) insert and update streams,
 * some of them shared between the sides, every second ODATA of a stream through the
 * in-order shortcut (pgm_stream_odata_next, one ref per writer like a data path flow);
 * a reader thread iterates and snapshots; a control thread ages streams out while they
 * are being written (a ref must then never be used for a removed record). All threads are QSBR
 * readers announcing quiescent states. Checks: no crash, counts add up on streams that
 * are never aged, every removed record is freed (ASan/LSan in the sanitizer build catch
 * use-after-free and leaks).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <urcu/urcu-qsbr.h>

#include "pgm.h"
#include "stream.h"
#include "tap.h"

#define WRITER_ROUNDS	  200
#define STREAMS_PER_ROUND 64
#define KEPT_STREAMS	  8 /* never aged: their counts must be exact */
#define KEPT_PORT_BASE	  60000u
#define QS_EVERY	  32		   /* packets between quiescent states */
#define AGE_IDLE_NS	  2000u		   /* idle threshold in the writers' fake clock */
#define KEPT_NOW	  (UINT64_MAX / 2) /* kept streams look active whatever the clock */
#define INSERTED_MIN	  (2 * (WRITER_ROUNDS * STREAMS_PER_ROUND + KEPT_STREAMS))
#define FAST_MAX	  (2 * WRITER_ROUNDS * (STREAMS_PER_ROUND + KEPT_STREAMS))

struct shared {
	struct pgm_stream_table *t;
	atomic_int writers_left;
	atomic_ulong clock;
	unsigned long visits, snapshots, aged;
};

struct writer {
	struct shared *sh;
	unsigned side;
	unsigned long packets;
	unsigned long fast; /* ODATA the shortcut took */
	struct pgm_stream_ref ref;
};

static uint64_t tick(struct shared *sh)
{
	return atomic_fetch_add(&sh->clock, 1) + 1;
}

/* Two ODATA in a row, sqn and sqn + 1: the second one the shortcut takes. */
static void send_data(struct writer *w, uint16_t sport, uint32_t sqn, uint64_t group, uint64_t now)
{
	struct pgm_tsi tsi = {.gsi = {0xaa, 0xbb, 0xcc, 0, 0, (uint8_t)w->side}, .sport = sport};
	struct shared *sh = w->sh;
	struct pgm_stream_key key;
	struct pgm_packet pkt;
	enum pgm_verdict v;
	uint8_t b[64];
	ssize_t n;

	for (unsigned i = 0; i < 2; i++, sqn++) {
		n = pgm_build_odata(b, sizeof(b), &tsi, 7500, sqn, sqn, 0, "mt", 2);
		if (pgm_stream_odata_plain(b, (size_t)n) &&
		    pgm_stream_odata_next(sh->t, &w->ref, b, (size_t)n, group, w->side, now)) {
			w->fast++;
			continue;
		}
		pgm_parse(b, (size_t)n, 0, &pkt);
		pgm_stream_key_from_packet(&key, &pkt, group);
		if (pgm_stream_update(sh->t, &key, w->side, &pkt, now, &v) != 0 ||
		    v != PGM_VERDICT_PASS)
			abort();
	}
}

/* A NAK from a receiver on this side for the kept stream of the other side. */
static void send_nak(struct shared *sh, unsigned side, uint16_t sport, uint64_t group)
{
	struct pgm_stream_key key = {.gsi = {0xaa, 0xbb, 0xcc, 0, 0, (uint8_t)(side ^ 1)},
				     .sport = sport,
				     .group = group};
	struct pgm_packet pkt;
	enum pgm_verdict v;

	/* Only the header matters for accounting an upstream type. */
	memset(&pkt, 0, sizeof(pkt));
	pkt.flags = PGM_PKT_HAVE_HEADER;
	pkt.type = PGM_TYPE_NAK;
	pkt.sport = 7500;
	pkt.dport = sport;
	pkt.result = PGM_OK;
	if (pgm_stream_update(sh->t, &key, side, &pkt, KEPT_NOW, &v) != 0 || v != PGM_VERDICT_PASS)
		abort();
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct shared *sh = w->sh;

	urcu_qsbr_register_thread();
	for (unsigned r = 0; r < WRITER_ROUNDS; r++) {
		for (unsigned i = 0; i < STREAMS_PER_ROUND; i++) {
			/* Fresh streams that go idle and get aged out. */
			send_data(w, (uint16_t)(r * STREAMS_PER_ROUND + i), r, w->side, tick(sh));
			w->packets += 2;
			if (w->packets % QS_EVERY == 0)
				urcu_qsbr_quiescent_state();
		}
		for (unsigned k = 0; k < KEPT_STREAMS; k++) {
			send_data(w, (uint16_t)(KEPT_PORT_BASE + k), 2 * r, 100, KEPT_NOW);
			send_nak(sh, w->side, (uint16_t)(KEPT_PORT_BASE + k), 100);
			w->packets += 3;
		}
		urcu_qsbr_quiescent_state();
	}
	urcu_qsbr_unregister_thread();
	atomic_fetch_sub(&sh->writers_left, 1);
	return NULL;
}

static int visit(const struct pgm_stream *s, void *arg)
{
	struct shared *sh = arg;
	struct pgm_stream_stats st;

	pgm_stream_snapshot(s, &st);
	sh->visits++;
	if (st.origin != PGM_SIDE_NONE && st.origin >= PGM_STREAM_SIDES)
		abort();
	sh->snapshots += st.side[0].types[PGM_COUNT_ODATA] + st.side[1].types[PGM_COUNT_ODATA] > 0;
	return 0;
}

static void *reader_main(void *arg)
{
	struct shared *sh = arg;

	urcu_qsbr_register_thread();
	while (atomic_load(&sh->writers_left) > 0) {
		pgm_stream_table_for_each(sh->t, visit, sh);
		urcu_qsbr_quiescent_state();
	}
	urcu_qsbr_unregister_thread();
	return NULL;
}

static void *control_main(void *arg)
{
	struct shared *sh = arg;

	urcu_qsbr_register_thread();
	while (atomic_load(&sh->writers_left) > 0) {
		unsigned long now = atomic_load(&sh->clock);

		if (now > AGE_IDLE_NS)
			sh->aged += pgm_stream_table_age(sh->t, now, AGE_IDLE_NS);
		urcu_qsbr_quiescent_state();
	}
	urcu_qsbr_unregister_thread();
	return NULL;
}

int main(void)
{
	struct shared sh = {.writers_left = 2, .clock = 1};
	struct writer w[2] = {{.sh = &sh, .side = 0}, {.sh = &sh, .side = 1}};
	struct pgm_stream_table_info info;
	pthread_t tw[2], tr, tc;
	unsigned long fast;

	sh.t = pgm_stream_table_new(NULL);
	CHECK(sh.t != NULL);
	if (!sh.t)
		return tap_done();
	CHECK(pthread_create(&tr, NULL, reader_main, &sh) == 0);
	CHECK(pthread_create(&tc, NULL, control_main, &sh) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&tw[i], NULL, writer_main, &w[i]) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(tw[i], NULL);
	pthread_join(tr, NULL);
	pthread_join(tc, NULL);

	urcu_qsbr_register_thread();
	/* The kept streams: every ODATA and every NAK counted exactly once. */
	for (unsigned side = 0; side < 2; side++) {
		for (unsigned k = 0; k < KEPT_STREAMS; k++) {
			struct pgm_stream_key key = {.gsi = {0xaa, 0xbb, 0xcc, 0, 0, (uint8_t)side},
						     .sport = (uint16_t)(KEPT_PORT_BASE + k),
						     .group = 100};
			const struct pgm_stream *s = pgm_stream_lookup(sh.t, &key);
			struct pgm_stream_stats st;

			CHECK(s != NULL);
			if (!s)
				continue;
			pgm_stream_snapshot(s, &st);
			CHECK_EQ(st.origin, side);
			CHECK_EQ(st.side[side].types[PGM_COUNT_ODATA], 2 * WRITER_ROUNDS);
			CHECK_EQ(st.side[side ^ 1].types[PGM_COUNT_NAK], WRITER_ROUNDS);
			CHECK_EQ(st.gaps, 0);
			CHECK_EQ(st.dups, 0);
			CHECK_EQ(st.rx_lead, 2 * WRITER_ROUNDS - 1);
		}
	}
	pgm_stream_table_info(sh.t, &info);
	/*
	 * Every second ODATA may take the shortcut (it follows its stream's first, which the
	 * full path accounted and left in the thread's cache); it misses when the table
	 * removed any stream in between, and a fresh stream aged out in between comes back
	 * as a new record.
	 */
	fast = w[0].fast + w[1].fast;
	CHECK(fast > 0 && fast <= FAST_MAX);
	CHECK(info.inserted >= INSERTED_MIN && info.inserted - INSERTED_MIN <= FAST_MAX - fast);
	CHECK_EQ(info.streams, info.inserted - info.removed);
	CHECK(sh.aged > 0);
	CHECK(sh.visits > 0);
	printf("# %lu visits, %lu with data, %lu aged, %lu streams left, %lu of %u by the "
	       "shortcut\n",
	       sh.visits, sh.snapshots, sh.aged, (unsigned long)info.streams, fast, FAST_MAX);

	urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
	pgm_stream_table_info(sh.t, &info);
	CHECK_EQ(info.freed, info.removed);
	pgm_stream_table_free(sh.t);
	urcu_qsbr_unregister_thread();
	return tap_done();
}
