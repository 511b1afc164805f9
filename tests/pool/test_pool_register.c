// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pool_register - pool_register/pool_unregister against the simulated fabric (run
 * with LD_LIBRARY_PATH at the simfabric build directory; the test uses a fabric of its
 * own, SIMFABRIC=pooltest<pid>, removed at the end).
 *
 * The pool is registered with the PDs of sim_ib0 and sim_roce0; registering again
 * returns the same lkey. Then the bridge's zero-copy path, on one host: a UD datagram
 * sent on sim_ib0 is received into pool buffer A (IB lkey), and the payload at A + 40 is
 * sent as-is on sim_roce0 (RoCE lkey) into pool buffer C; the bytes must arrive intact.
 * A deregistered lkey and a bogus one must fail with a local protection error (the
 * simulation validates lkeys as a NIC does), and pool_free must deregister what is left
 * (the simulation drops the region's backing file when its last MR goes).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "pool.h"
#include "tap.h"
#include "tap_verbs.h"

#define QKEY	0x11111111u
#define MSG_LEN 1000
#define WAIT_MS 2000

static char g_fabric[32];

/* Remove this test's fabric (its /dev/shm files). */
static void fabric_remove(void)
{
	char pattern[64];
	glob_t g;

	snprintf(pattern, sizeof(pattern), "/dev/shm/simfabric.%s*", g_fabric);
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			unlink(g.gl_pathv[i]);
		globfree(&g);
	}
}

/* Number of region backing files this process has in the fabric. */
static size_t mem_files(void)
{
	char pattern[96];
	size_t n = 0;
	glob_t g;

	snprintf(pattern, sizeof(pattern), "/dev/shm/simfabric.%s.mem.%d.*", g_fabric,
		 (int)getpid());
	if (glob(pattern, 0, NULL, &g) == 0) {
		n = g.gl_pathc;
		globfree(&g);
	}
	return n;
}

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint32_t lkey;
};

/* A UD QP in RTS and an AH that addresses this very port (unicast to ourselves). */
static int side_qp(struct side *s, bool roce)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = QKEY};
	struct ibv_ah_attr aa = {.port_num = 1};
	struct ibv_port_attr pa;

	s->cq = ibv_create_cq(s->ctx, 32, NULL, NULL, 0);
	if (!s->cq)
		return -1;
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->qp ||
	    ibv_modify_qp(s->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	qa.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(s->qp, &qa, IBV_QP_STATE))
		return -1;
	qa.qp_state = IBV_QPS_RTS;
	qa.sq_psn = 0;
	if (ibv_modify_qp(s->qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -1;
	if (ibv_query_port(s->ctx, 1, &pa))
		return -1;
	if (roce) {
		/* The RoCEv2 GID of the port's IPv4 address. */
		int found = -1;

		for (int i = 0; i < pa.gid_tbl_len && found < 0; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(s->ctx, 1, (uint32_t)i, &e, 0))
				continue;
			if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && e.gid.raw[10] == 0xff &&
			    e.gid.raw[11] == 0xff) {
				found = i;
				aa.grh.dgid = e.gid;
			}
		}
		if (found < 0)
			return -1;
		aa.is_global = 1;
		aa.grh.sgid_index = (uint8_t)found;
		aa.grh.hop_limit = 64;
	} else {
		aa.dlid = pa.lid;
	}
	s->ah = ibv_create_ah(s->pd, &aa);
	return s->ah ? 0 : -1;
}

/* Destroy the AH, QP and CQ (a QP in the error state after a failed send). */
static void side_qp_close(struct side *s)
{
	if (s->ah)
		ibv_destroy_ah(s->ah);
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	s->ah = NULL;
	s->qp = NULL;
	s->cq = NULL;
}

static void side_close(struct side *s)
{
	side_qp_close(s);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
}

static int post_recv(struct side *s, struct pool *pool, uint32_t idx, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)pool_data(pool, idx),
			      .length = pool_buf_size(pool),
			      .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = idx, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

/* Send len bytes at addr (inside the pool) to our own QP. */
static int post_send(struct side *s, const uint8_t *addr, uint32_t len, uint32_t lkey,
		     uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_send_wr wr =
				   {
					   .wr_id = wr_id,
					   .sg_list = &sge,
					   .num_sge = 1,
					   .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_SIGNALED,
				   },
			   *bad;

	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = s->qp->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(s->qp, &wr, &bad);
}

/* Poll until n completions arrived or WAIT_MS passed. */
static int poll_n(struct side *s, struct ibv_wc *wc, int n)
{
	struct timespec ms = {0, 1000000};
	int got = 0;

	for (int t = 0; t < WAIT_MS && got < n; t++) {
		int k = ibv_poll_cq(s->cq, n - got, wc + got);

		if (k < 0)
			return k;
		got += k;
		if (got < n)
			nanosleep(&ms, NULL);
	}
	return got;
}

static const struct ibv_wc *find_wc(const struct ibv_wc *wc, int n, enum ibv_wc_opcode op)
{
	for (int i = 0; i < n; i++)
		if (wc[i].opcode == op)
			return &wc[i];
	return NULL;
}

/* Send MSG_LEN bytes from buffer `from` + 40 on s with lkey, receive into `to`. */
static bool relay(struct side *s, struct pool *pool, uint32_t from, uint32_t to, uint32_t lkey,
		  const char *what)
{
	struct ibv_wc wc[2];
	const struct ibv_wc *rx, *tx;
	int n;

	if (!OK(post_recv(s, pool, to, s->lkey) == 0, "%s: receive posted with the pool lkey",
		what))
		return false;
	if (!OK(post_send(s, pool_data(pool, from) + POOL_GRH_LEN, MSG_LEN, lkey, 1000 + from) == 0,
		"%s: send posted from a pool buffer", what))
		return false;
	n = poll_n(s, wc, 2);
	rx = find_wc(wc, n, IBV_WC_RECV);
	tx = find_wc(wc, n, IBV_WC_SEND);
	OK(tx && tx->status == IBV_WC_SUCCESS, "%s: send completes successfully (status %s)", what,
	   tx ? ibv_wc_status_str(tx->status) : "none");
	return OK(rx && rx->status == IBV_WC_SUCCESS && rx->wr_id == to &&
			  rx->byte_len == POOL_GRH_LEN + MSG_LEN,
		  "%s: received into buffer %u, 40 + %u bytes", what, to, MSG_LEN);
}

/*
 * A send with this lkey fails with a local protection error. On a QP of its own (an
 * error moves a QP to the error state), on the device and PD of s.
 */
static void expect_prot_err(struct side *s, bool roce, struct pool *pool, uint32_t from,
			    uint32_t lkey, const char *what)
{
	struct side probe = {.name = s->name, .ctx = s->ctx, .pd = s->pd};
	struct ibv_wc wc[2];
	int n;

	if (!OK(side_qp(&probe, roce) == 0, "%s: probe QP", what))
		goto out;
	if (post_send(&probe, pool_data(pool, from) + POOL_GRH_LEN, 64, lkey, 7)) {
		OK(1, "%s: rejected at post", what);
		goto out;
	}
	n = poll_n(&probe, wc, 1);
	OK(n == 1 && wc[0].wr_id == 7 && wc[0].status == IBV_WC_LOC_PROT_ERR,
	   "%s: local protection error (%s)", what,
	   n == 1 ? ibv_wc_status_str(wc[0].status) : "none");
out:
	side_qp_close(&probe);
}

/* Completions waiting on s's CQ right now. */
static int stray(struct side *s)
{
	struct ibv_wc wc[4];

	return ibv_poll_cq(s->cq, 4, wc);
}

int main(void)
{
	struct side ib = {.name = "sim_ib0"}, roce = {.name = "sim_roce0"};
	struct pool_params p;
	struct pool *pool;
	uint32_t idx[4], lk, stale;
	int ret;
	uint8_t *payload;

	snprintf(g_fabric, sizeof(g_fabric), "pooltest%d", (int)getpid());
	setenv("SIMFABRIC", g_fabric, 1);
	fabric_remove();

	ib.ctx = tap_find_dev(ib.name);
	roce.ctx = tap_find_dev(roce.name);
	if (!OK(ib.ctx && roce.ctx, "open sim_ib0 and sim_roce0 (LD_LIBRARY_PATH=simfabric)"))
		goto out;
	ib.pd = ibv_alloc_pd(ib.ctx);
	roce.pd = ibv_alloc_pd(roce.ctx);
	if (!OK(ib.pd && roce.pd, "PDs allocated"))
		goto out;

	pool_params_init(&p);
	p.nbufs = 256;
	p.cache_size = 32;
	pool = pool_new(&p);
	if (!OK(pool, "pool_new"))
		goto out;

	ret = pool_register(pool, ib.pd, &ib.lkey);
	OK(ret == 0 && ib.lkey != 0, "registered with sim_ib0's PD, lkey %#x", ib.lkey);
	ret = pool_register(pool, roce.pd, &roce.lkey);
	OK(ret == 0 && roce.lkey != 0 && roce.lkey != ib.lkey,
	   "registered with sim_roce0's PD, its own lkey %#x", roce.lkey);
	lk = 0;
	OK(pool_register(pool, ib.pd, &lk) == 0 && lk == ib.lkey,
	   "registering again with the same PD returns the same lkey");
	lk = 12345;
	OK(pool_register(pool, NULL, &lk) == -EINVAL && lk == 12345,
	   "NULL PD: -EINVAL, lkey untouched");
	EQ(mem_files(), 1, "one shared backing for the region (both MRs cover it)");

	if (!OK(side_qp(&ib, false) == 0 && side_qp(&roce, true) == 0,
		"UD QPs in RTS on both devices, AHs to themselves"))
		goto free_pool;
	if (!OK(pool_get_burst(pool_cache(pool, 0), idx, 4) == 4, "4 buffers from the pool"))
		goto free_pool;
	pool_set_state_burst(pool, idx, 4, POOL_RX);

	/* B = idx[1] holds the original payload. */
	payload = pool_data(pool, idx[1]) + POOL_GRH_LEN;
	for (int i = 0; i < MSG_LEN; i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	/* IB: B -> A (idx[0]) */
	if (relay(&ib, pool, idx[1], idx[0], ib.lkey, "IB"))
		OK(!memcmp(pool_data(pool, idx[0]) + POOL_GRH_LEN, payload, MSG_LEN),
		   "IB: payload intact at A + 40");
	/* RoCE: A + 40 -> C (idx[2]): the bridge's zero-copy forward. */
	if (relay(&roce, pool, idx[0], idx[2], roce.lkey, "RoCE, sent from the IB receive buffer"))
		OK(!memcmp(pool_data(pool, idx[2]) + POOL_GRH_LEN, payload, MSG_LEN),
		   "RoCE: the payload received on IB arrives intact at C + 40");

	expect_prot_err(&roce, true, pool, idx[3], roce.lkey ^ 0x5a5a00, "a bogus lkey");

	stale = ib.lkey;
	OK(pool_unregister(pool, ib.pd) == 0, "pool_unregister(sim_ib0's PD)");
	EQ(pool_unregister(pool, ib.pd), -ENOENT, "unregistering twice: -ENOENT");
	expect_prot_err(&ib, false, pool, idx[3], stale, "the deregistered IB lkey");
	ret = pool_register(pool, ib.pd, &ib.lkey);
	OK(ret == 0 && ib.lkey != stale, "registered again, new lkey %#x", ib.lkey);
	if (relay(&ib, pool, idx[1], idx[3], ib.lkey, "IB after re-registration"))
		OK(!memcmp(pool_data(pool, idx[3]) + POOL_GRH_LEN, payload, MSG_LEN),
		   "payload intact");
	OK(stray(&ib) == 0 && stray(&roce) == 0, "no stray completions");

	pool_put_burst(pool_cache(pool, 0), idx, 4);
free_pool:
	OK(mem_files() >= 1, "the region is backed while registered");
	pool_free(pool); /* both MRs still registered: pool_free deregisters them */
	EQ(mem_files(), 0, "pool_free deregistered every MR (backing file gone)");
out:
	side_close(&ib);
	side_close(&roce);
	fabric_remove();
	return tap_done();
}
