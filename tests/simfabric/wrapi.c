// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Extended QPs and CQs as mlx5 provides them (rdma-core providers/mlx5): a UD QP created
 * with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS posts through ibv_wr_start / ibv_wr_send(_imm) /
 * ibv_wr_set_ud_addr / ibv_wr_set_sge(_list) / ibv_wr_set_inline_data(_list) /
 * ibv_wr_complete / ibv_wr_abort, and a CQ made by ibv_create_cq_ex is read with
 * ibv_start_poll / ibv_next_poll / ibv_end_poll and the ibv_wc_read_* accessors. What
 * mlx5 refuses is refused with its errno; a batch with an error posts nothing.
 *
 * sim_ib0 sends, sim_ib1 receives (unicast by LID); the datagrams are delivered inside
 * the post, so every check reads the CQs right after it. Run with
 * LD_LIBRARY_PATH=<build>/simfabric and SIMFABRIC naming a fabric of its own. TAP.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "tap.h"
#include "tap_verbs.h"

#define QKEY	  0x11111111u
#define BUF	  8192
#define NRECV	  16
#define GRH_BYTES 40

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cqx;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint16_t lid;
};

static struct ibv_qp *make_qp(struct side *s, int ex, uint64_t ops, uint32_t max_send_wr,
			      uint32_t max_inline)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_UD,
		.send_cq = ibv_cq_ex_to_cq(s->cqx),
		.recv_cq = ibv_cq_ex_to_cq(s->cqx),
		.cap = {.max_send_wr = max_send_wr,
			.max_recv_wr = NRECV,
			.max_send_sge = 2,
			.max_recv_sge = 1,
			.max_inline_data = max_inline},
		.comp_mask = IBV_QP_INIT_ATTR_PD | (ex ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
		.pd = s->pd,
		.send_ops_flags = ops,
	};

	return ibv_create_qp_ex(s->ctx, &a);
}

static void side_open(struct side *s, const char *dev, int ex)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS};
	struct ibv_port_attr pa;

	s->ctx = tap_open_dev(dev);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cqx = ibv_create_cq_ex(s->ctx, &ca);
	s->buf = calloc(1, BUF);
	if (!s->pd || !s->cqx || !s->buf)
		tap_bail("pd/cq_ex");
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		tap_bail("ibv_reg_mr");
	s->qp = make_qp(s, ex, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, 4, 64);
	if (!s->qp)
		tap_bail("ibv_create_qp_ex");
	tap_ud_rts(s->qp, QKEY);
	if (ibv_query_port(s->ctx, 1, &pa))
		tap_bail("ibv_query_port");
	s->lid = pa.lid;
}

static void post_recvs(struct side *s, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)s->buf + (size_t)i * 512,
				      .length = 512,
				      .lkey = s->mr->lkey};
		struct ibv_recv_wr wr = {
			.wr_id = 1000 + (uint64_t)i, .sg_list = &sge, .num_sge = 1};
		struct ibv_recv_wr *bad;

		if (ibv_post_recv(s->qp, &wr, &bad))
			tap_bail("ibv_post_recv");
	}
}

/* Completions now on a CQ, counted through the extended poll. */
static int drain(struct ibv_cq_ex *cqx)
{
	struct ibv_poll_cq_attr pa = {0};
	int n = 0;

	if (ibv_start_poll(cqx, &pa))
		return 0;
	do
		n++;
	while (!ibv_next_poll(cqx));
	ibv_end_poll(cqx);
	return n;
}

static void test_create(struct side *tx)
{
	struct ibv_qp *qp;
	struct ibv_qp_ex *x;

	x = ibv_qp_to_qp_ex(tx->qp);
	OK(x && (void *)x == (void *)tx->qp && &x->qp_base == tx->qp,
	   "ibv_qp_to_qp_ex: the QP's own ibv_qp_ex (qp_base is the QP)");
	OK(x && x->wr_send && x->wr_send_imm && x->wr_set_ud_addr && x->wr_set_sge &&
		   x->wr_set_sge_list && x->wr_set_inline_data && x->wr_set_inline_data_list &&
		   x->wr_start && x->wr_complete && x->wr_abort,
	   "the UD builders and setters are set");
	OK(x && !x->wr_rdma_write && !x->wr_rdma_read && !x->wr_atomic_cmp_swp && !x->wr_send_inv &&
		   !x->wr_send_tso && !x->wr_set_xrc_srqn,
	   "the operations UD lacks stay NULL (as on mlx5)");

	qp = make_qp(tx, 1, IBV_QP_EX_WITH_SEND, 4, 0);
	OK(qp != NULL, "send_ops_flags SEND alone: created");
	if (qp) {
		x = ibv_qp_to_qp_ex(qp);
		OK(x && x->wr_send_imm, "  and wr_send_imm is set all the same (mlx5 fills "
					"every UD function whatever was asked)");
		ibv_destroy_qp(qp);
	}
	errno = 0;
	qp = make_qp(tx, 1, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE, 4, 0);
	OK(!qp && errno == EOPNOTSUPP, "send_ops_flags with RDMA_WRITE on UD: EOPNOTSUPP (%s)",
	   strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = make_qp(tx, 1, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO, 4, 0);
	OK(!qp && errno == EOPNOTSUPP, "send_ops_flags with TSO on UD: EOPNOTSUPP (%s)",
	   strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	qp = make_qp(tx, 0, 0, 4, 0);
	OK(qp && !ibv_qp_to_qp_ex(qp), "a QP created without send_ops_flags: no ibv_qp_ex");
	if (qp)
		ibv_destroy_qp(qp);
}

/* The sender's completions, in order, with the wr_id set before each builder. */
static void check_sends(struct side *tx, uint64_t first, int want)
{
	struct ibv_poll_cq_attr pa = {0};
	int rc = ibv_start_poll(tx->cqx, &pa), n = 0;

	while (!rc) {
		if (tx->cqx->wr_id != first + (uint64_t)n || tx->cqx->status != IBV_WC_SUCCESS ||
		    ibv_wc_read_opcode(tx->cqx) != IBV_WC_SEND)
			break;
		n++;
		rc = ibv_next_poll(tx->cqx);
	}
	if (rc != ENOENT)
		ibv_end_poll(tx->cqx);
	OK(rc == ENOENT && n == want, "%d send completions, wr_id %llu.., in order (%d)", want,
	   (unsigned long long)first, n);
}

static void test_send(struct side *tx, struct side *rx, struct ibv_ah *ah)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(tx->qp);
	struct ibv_poll_cq_attr pa = {0};
	char inl[] = "inline-part-one|";
	char inl2[] = "two";
	struct ibv_data_buf bufs[2] = {{inl, strlen(inl)}, {inl2, strlen(inl2)}};
	struct ibv_sge list[2] = {
		{.addr = (uintptr_t)tx->buf + 4096, .length = 100, .lkey = tx->mr->lkey},
		{.addr = (uintptr_t)tx->buf + 6000, .length = 20, .lkey = tx->mr->lkey},
	};
	struct ibv_sge list0[2] = {
		{.addr = (uintptr_t)tx->buf + 5000, .length = 0, .lkey = tx->mr->lkey},
		{.addr = (uintptr_t)tx->buf + 6000, .length = 20, .lkey = tx->mr->lkey},
	};
	int rc;

	memset(tx->buf + 4096, 'a', 100);
	memset(tx->buf + 6000, 'b', 20);
	post_recvs(rx, 5);

	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_sge(x, tx->mr->lkey, (uintptr_t)tx->buf + 4096, 100);
	x->wr_id = 2;
	ibv_wr_send_imm(x, htonl(0xabcd1234));
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_inline_data(x, inl, strlen(inl));
	x->wr_id = 3;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_inline_data_list(x, 2, bufs);
	/* The inline payloads were copied when set: changing them now changes nothing. */
	memset(inl, 'X', strlen(inl));
	rc = ibv_wr_complete(x);
	OK(rc == 0, "ibv_wr_complete of sge, send_imm+inline, inline list: 0 (%d)", rc);
	check_sends(tx, 1, 3);

	ibv_wr_start(x);
	x->wr_id = 4;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_sge_list(x, 2, list);
	x->wr_id = 5;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_sge_list(x, 2, list0);
	rc = ibv_wr_complete(x);
	OK(rc == 0, "ibv_wr_complete of two sge lists: 0 (%d)", rc);
	check_sends(tx, 4, 2);

	/* The receiver's extended CQ, every standard field. */
	rc = ibv_start_poll(rx->cqx, &pa);
	OK(rc == 0 && rx->cqx->status == IBV_WC_SUCCESS && rx->cqx->wr_id == 1000 &&
		   ibv_wc_read_opcode(rx->cqx) == IBV_WC_RECV &&
		   ibv_wc_read_byte_len(rx->cqx) == GRH_BYTES + 100 &&
		   ibv_wc_read_wc_flags(rx->cqx) == 0 &&
		   ibv_wc_read_src_qp(rx->cqx) == tx->qp->qp_num &&
		   ibv_wc_read_qp_num(rx->cqx) == rx->qp->qp_num &&
		   ibv_wc_read_slid(rx->cqx) == tx->lid && ibv_wc_read_sl(rx->cqx) == 0 &&
		   ibv_wc_read_dlid_path_bits(rx->cqx) == 0 && rx->buf[GRH_BYTES] == 'a' &&
		   rx->buf[GRH_BYTES + 99] == 'a',
	   "receive 1 through ibv_start_poll: status, wr_id, opcode, byte_len (40 + "
	   "payload), flags (no GRH: an IB AH without one), src_qp, qp_num, slid, payload");
	rc = rc ? rc : ibv_next_poll(rx->cqx);
	OK(rc == 0 && rx->cqx->wr_id == 1001 && ibv_wc_read_byte_len(rx->cqx) == GRH_BYTES + 16 &&
		   ibv_wc_read_wc_flags(rx->cqx) == IBV_WC_WITH_IMM &&
		   ibv_wc_read_imm_data(rx->cqx) == htonl(0xabcd1234) &&
		   !memcmp(rx->buf + 512 + GRH_BYTES, "inline-part-one|", 16),
	   "receive 2 (ibv_next_poll): immediate data, the inline payload as set");
	rc = rc ? rc : ibv_next_poll(rx->cqx);
	OK(rc == 0 && rx->cqx->wr_id == 1002 && ibv_wc_read_byte_len(rx->cqx) == GRH_BYTES + 19 &&
		   !memcmp(rx->buf + 1024 + GRH_BYTES, "inline-part-one|two", 19),
	   "receive 3: the inline list, concatenated");
	rc = rc ? rc : ibv_next_poll(rx->cqx);
	OK(rc == 0 && rx->cqx->wr_id == 1003 && ibv_wc_read_byte_len(rx->cqx) == GRH_BYTES + 120 &&
		   rx->buf[1536 + GRH_BYTES + 99] == 'a' && rx->buf[1536 + GRH_BYTES + 100] == 'b',
	   "receive 4: the sge list gathered");
	rc = rc ? rc : ibv_next_poll(rx->cqx);
	OK(rc == 0 && rx->cqx->wr_id == 1004 && ibv_wc_read_byte_len(rx->cqx) == GRH_BYTES + 20 &&
		   rx->buf[2048 + GRH_BYTES] == 'b',
	   "receive 5: a zero-length scatter entry is skipped");
	rc = rc ? rc : ibv_next_poll(rx->cqx);
	OK(rc == ENOENT, "ibv_next_poll on an emptied CQ: ENOENT (%d)", rc);
	ibv_end_poll(rx->cqx);
}

/* A batch that ends in an error posts nothing and returns the error. */
static void test_errors(struct side *tx, struct side *rx, struct ibv_ah *ah)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(tx->qp);
	struct ibv_poll_cq_attr pa;
	struct ibv_qp *qp;
	int rrc;
	uint8_t big[128] = {0};
	struct ibv_sge three[3] = {
		{.addr = (uintptr_t)tx->buf, .length = 1, .lkey = tx->mr->lkey},
		{.addr = (uintptr_t)tx->buf, .length = 1, .lkey = tx->mr->lkey},
		{.addr = (uintptr_t)tx->buf, .length = 1, .lkey = tx->mr->lkey},
	};
	int rc;

	post_recvs(rx, 8);
	/* max_send_wr 4: the fifth WR of a batch overflows the send queue. */
	ibv_wr_start(x);
	for (int i = 0; i < 5; i++) {
		x->wr_id = 10 + (uint64_t)i;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
		ibv_wr_set_sge(x, tx->mr->lkey, (uintptr_t)tx->buf, 8);
	}
	rc = ibv_wr_complete(x);
	OK(rc == ENOMEM, "5 WRs on a send queue of 4: ENOMEM (%d)", rc);
	OK(drain(rx->cqx) == 0 && drain(tx->cqx) == 0, "  and none of the batch was sent");

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_inline_data(x, big, sizeof(big));
	rc = ibv_wr_complete(x);
	OK(rc == ENOMEM, "inline data beyond max_inline_data (64): ENOMEM (%d)", rc);

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_sge_list(x, 3, three);
	rc = ibv_wr_complete(x);
	OK(rc == ENOMEM, "3 scatter entries beyond max_send_sge (2): ENOMEM (%d)", rc);

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_sge(x, tx->mr->lkey, (uintptr_t)tx->buf, 4096 + 1);
	rc = ibv_wr_complete(x);
	OK(rc == EINVAL, "a datagram larger than the path MTU (4096): EINVAL (%d)", rc);

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_sge(x, tx->mr->lkey, (uintptr_t)tx->buf, 8);
	ibv_wr_abort(x);
	OK(drain(rx->cqx) == 0 && drain(tx->cqx) == 0,
	   "the failed batches and an aborted one sent nothing");

	ibv_wr_start(x);
	x->wr_id = 77;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_sge(x, tx->mr->lkey, (uintptr_t)tx->buf, 8);
	rc = ibv_wr_complete(x);
	OK(rc == 0 && drain(rx->cqx) == 1 && drain(tx->cqx) == 1, "the next batch goes out (%d)",
	   rc);

	/* No inline space (max_inline_data 0): inline data of no bytes is a 0-byte send. */
	qp = make_qp(tx, 1, IBV_QP_EX_WITH_SEND, 4, 0);
	if (!qp)
		tap_bail("ibv_create_qp_ex");
	tap_ud_rts(qp, QKEY);
	x = ibv_qp_to_qp_ex(qp);
	ibv_wr_start(x);
	x->wr_id = 88;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, rx->qp->qp_num, QKEY);
	ibv_wr_set_inline_data(x, NULL, 0);
	rc = ibv_wr_complete(x);
	pa.comp_mask = 0;
	rrc = ibv_start_poll(rx->cqx, &pa);
	OK(rc == 0 && rrc == 0 && ibv_wc_read_byte_len(rx->cqx) == GRH_BYTES,
	   "empty inline data on a QP without inline space: a 0-byte datagram (%d)", rc);
	if (!rrc)
		ibv_end_poll(rx->cqx);
	drain(tx->cqx);
	ibv_destroy_qp(qp);
}

static void test_cq_ex(struct side *s)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 8};
	struct ibv_poll_cq_attr pa = {.comp_mask = 1};
	struct ibv_cq_ex *c;
	int rc;

	errno = 0;
	a.wc_flags = (uint64_t)1 << 40;
	c = ibv_create_cq_ex(s->ctx, &a);
	OK(!c && errno == ENOTSUP, "wc_flags beyond what mlx5 knows: ENOTSUP (%s)",
	   strerror(errno));
	errno = 0;
	a.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	c = ibv_create_cq_ex(s->ctx, &a);
	OK(!c && errno == EOPNOTSUPP,
	   "completion timestamps (no HCA clock simulated): EOPNOTSUPP (%s)", strerror(errno));
	errno = 0;
	a.wc_flags = 0;
	a.cqe = 0;
	c = ibv_create_cq_ex(s->ctx, &a);
	OK(!c && errno == EINVAL, "cqe 0: EINVAL (%s)", strerror(errno));
	errno = 0;
	a.cqe = 8;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = s->pd;
	c = ibv_create_cq_ex(s->ctx, &a);
	OK(!c && errno == EINVAL, "a PD that is no parent domain: EINVAL (%s)", strerror(errno));
	errno = 0;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = 1u << 7;
	c = ibv_create_cq_ex(s->ctx, &a);
	OK(!c && errno == EINVAL, "an unknown creation flag: EINVAL (%s)", strerror(errno));

	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
	c = ibv_create_cq_ex(s->ctx, &a);
	OK(c && c->read_byte_len && !c->read_imm_data && !c->read_slid && c->read_opcode &&
		   c->read_wc_flags && c->read_vendor_err,
	   "readers only for the wc_flags asked (opcode, vendor_err, wc_flags always)");
	if (!c)
		return;
	rc = ibv_start_poll(c, &pa);
	OK(rc == EINVAL, "ibv_start_poll with attr comp_mask set: EINVAL (%d)", rc);
	pa.comp_mask = 0;
	rc = ibv_start_poll(c, &pa);
	OK(rc == ENOENT, "ibv_start_poll on an empty CQ: ENOENT (%d)", rc);
	OK(ibv_destroy_cq(ibv_cq_ex_to_cq(c)) == 0, "ibv_destroy_cq of an extended CQ");
}

/* A fresh fabric of its own, given back at the end (sf_reset of the simulated library). */
static void fabric_reset(void)
{
	int (*reset)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");

	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
}

int main(void)
{
	struct side tx = {0}, rx = {0};
	struct ibv_ah_attr aa = {.port_num = 1};
	struct ibv_ah *ah;

	setvbuf(stdout, NULL, _IOLBF, 0);
	fabric_reset();
	side_open(&tx, "sim_ib0", 1);
	side_open(&rx, "sim_ib1", 0);
	aa.dlid = rx.lid;
	ah = ibv_create_ah(tx.pd, &aa);
	if (!ah)
		tap_bail("ibv_create_ah");

	test_create(&tx);
	test_send(&tx, &rx, ah);
	test_errors(&tx, &rx, ah);
	test_cq_ex(&tx);

	ibv_destroy_ah(ah);
	for (struct side *s = &tx; s; s = s == &tx ? &rx : NULL) {
		ibv_destroy_qp(s->qp);
		ibv_dereg_mr(s->mr);
		ibv_destroy_cq(ibv_cq_ex_to_cq(s->cqx));
		ibv_dealloc_pd(s->pd);
		ibv_close_device(s->ctx);
		free(s->buf);
	}
	fabric_reset();
	return tap_done();
}
