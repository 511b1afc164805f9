// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Packet capture of the fabric (sf.h, `simfab capture`): a ring in a shared-memory file
 * of the capturing process, into which every delivering process writes the datagrams
 * that reach the captured ports.
 *
 * Why a ring and not each process appending to the file: delivery happens in the
 * sender's process, on its data path; a file lock and a write() per datagram would
 * serialize every sender of the fabric. Producers claim a record with one
 * compare-and-swap (a bounded multi-producer ring with a sequence number per record);
 * when the ring is full the record is lost and counted, never the datagram. While no
 * capture runs, delivery pays one load (fab->cap_gen).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sf.h"
#include "sf_priv.h"

#define SF_CAP_KIND "capture"

/* This process's mapping of the current capture ring. */
static struct {
	pthread_mutex_t lock;
	_Atomic uint64_t gen;
	struct sf_cap_ring *ring;
} g_cap = {.lock = PTHREAD_MUTEX_INITIALIZER};

size_t sf_cap_ring_size(uint32_t n)
{
	return sizeof(struct sf_cap_ring) + (size_t)n * sizeof(struct sf_cap_rec);
}

/* The ring of capture generation gen, mapped on first use (NULL: cannot). */
static struct sf_cap_ring *sf_cap_ring_get(struct sf_fabric *fab, uint64_t gen)
{
	struct sf_cap_ring *r;

	if (atomic_load_explicit(&g_cap.gen, memory_order_acquire) == gen)
		return g_cap.ring;
	pthread_mutex_lock(&g_cap.lock);
	if (atomic_load(&g_cap.gen) != gen) {
		/* An older ring stays mapped: another thread may still be writing into it. */
		r = sf_obj_map(SF_CAP_KIND, fab->cap_pid, fab->cap_serial,
			       sf_cap_ring_size(fab->cap_slots));
		if (!r || atomic_load(&fab->cap_gen) != gen) {
			if (r)
				munmap(r, sf_cap_ring_size(fab->cap_slots));
			pthread_mutex_unlock(&g_cap.lock);
			return NULL;
		}
		g_cap.ring = r;
		atomic_store_explicit(&g_cap.gen, gen, memory_order_release);
	}
	r = g_cap.ring;
	pthread_mutex_unlock(&g_cap.lock);
	return r;
}

void sf_cap_record(struct sf_fabric *fab, struct sf_tx *tx, uint32_t dev, uint32_t gen)
{
	struct sf_cap_ring *ring;
	struct sf_cap_rec *r;
	struct timespec ts;
	uint64_t pos;

	tx->cap_seen |= 1u << dev;
	if (!(fab->cap_devs & (1u << dev)))
		return;
	ring = sf_cap_ring_get(fab, gen);
	if (!ring)
		return;
	pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	for (;;) {
		int64_t d;

		r = &ring->rec[pos & ring->mask];
		/* Pairs with the consumer's release store of seq: the record is free. */
		d = (int64_t)(atomic_load_explicit(&r->seq, memory_order_acquire) - pos);
		if (d == 0) {
			if (atomic_compare_exchange_weak_explicit(&ring->tail, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (d < 0) {
			atomic_fetch_add_explicit(&ring->lost, 1, memory_order_relaxed);
			return;
		} else {
			pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
		}
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	r->ts_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	r->dev = dev;
	r->ib = tx->sdev->link == SF_LINK_IB;
	r->src_qpn = tx->sqp->qpn;
	r->dst_qpn = tx->wr->wr.ud.remote_qpn;
	r->qkey = tx->qkey;
	r->pkey = (uint16_t)tx->sdev->pkey;
	r->slid = r->ib ? (uint16_t)tx->sdev->lid : 0;
	r->dlid = tx->dlid;
	r->has_imm = tx->with_imm;
	r->imm = tx->with_imm ? tx->wr->imm_data : 0;
	r->has_grh = tx->has_grh;
	r->len = tx->len;
	r->caplen = tx->len < SF_CAP_DATA_MAX ? tx->len : SF_CAP_DATA_MAX;
	memcpy(r->hdr, tx->hdr, SF_GRH_LEN);
	sf_wire_gather(tx, 0, r->data, r->caplen);
	/* Pairs with the consumer's acquire load: the record is written. */
	atomic_store_explicit(&r->seq, pos + 1, memory_order_release);
}

struct sf_cap_ring *sf_cap_start(struct sf_fabric *fab, uint32_t n, uint32_t devs)
{
	uint32_t serial = sf_serial_next();
	struct sf_cap_ring *ring;
	char path[256];

	if (!n || (n & (n - 1))) {
		errno = EINVAL;
		return NULL;
	}
	ring = sf_obj_create(SF_CAP_KIND, serial, sf_cap_ring_size(n), NULL);
	if (!ring)
		return NULL;
	ring->mask = n - 1;
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&ring->rec[i].seq, i, memory_order_relaxed);
	sf_lock(fab);
	if (atomic_load(&fab->cap_gen) && fab->cap_pid != getpid() &&
	    sf_pid_alive(fab->cap_pid, 0)) {
		sf_unlock(fab);
		munmap(ring, sf_cap_ring_size(n));
		sf_obj_path(path, sizeof(path), SF_CAP_KIND, getpid(), serial);
		unlink(path);
		errno = EBUSY;
		return NULL;
	}
	fab->cap_pid = getpid();
	fab->cap_serial = serial;
	fab->cap_slots = n;
	fab->cap_devs = devs;
	/* Pairs with the producers' acquire load: the fields above are set. Generations
	 * count up from 1 (0 is "off"); the low 32 bits are never 0 either. */
	{
		uint64_t g = atomic_load(&fab->cap_gen) + 1;

		if (!(uint32_t)g)
			g++;
		atomic_store_explicit(&fab->cap_gen, g, memory_order_release);
	}
	sf_unlock(fab);
	return ring;
}

void sf_cap_stop(struct sf_fabric *fab, struct sf_cap_ring *ring)
{
	char path[256];

	sf_lock(fab);
	if (fab->cap_pid == getpid() && fab->cap_serial)
		atomic_store_explicit(&fab->cap_gen, 0, memory_order_release);
	sf_obj_path(path, sizeof(path), SF_CAP_KIND, getpid(), fab->cap_serial);
	sf_unlock(fab);
	(void)ring;
	unlink(path);
}

struct sf_cap_rec *sf_cap_next(struct sf_cap_ring *ring)
{
	uint64_t pos = atomic_load_explicit(&ring->head, memory_order_relaxed);
	struct sf_cap_rec *r = &ring->rec[pos & ring->mask];

	/* Pairs with the producer's release store of seq. */
	return atomic_load_explicit(&r->seq, memory_order_acquire) == pos + 1 ? r : NULL;
}

void sf_cap_done(struct sf_cap_ring *ring, struct sf_cap_rec *r)
{
	uint64_t pos = atomic_load_explicit(&ring->head, memory_order_relaxed);

	/* Pairs with the producers' acquire load of seq: free for position pos + n. */
	atomic_store_explicit(&r->seq, pos + ring->mask + 1, memory_order_release);
	atomic_store_explicit(&ring->head, pos + 1, memory_order_relaxed);
}
