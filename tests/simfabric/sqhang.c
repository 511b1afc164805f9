// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A send queue that hangs (`simfab qp DEV QPN sq-hang on|off`, docs/simfabric.md "Fault
 * injection"): what a QP whose hardware queue stopped, or whose completions were lost,
 * shows its owner. One UD QP on IB attached to a multicast group (its own copies come
 * back, no loopback block; deadpush.c's shape), one CQ for its sends and receives as the
 * bridge's channels have.
 *
 * - Before: a signaled send completes and its copy arrives.
 * - Hung: ibv_post_send still accepts sends while the queue has room (0), then says
 *   ENOMEM (full), as before; nothing completes and nothing arrives while the test polls.
 * - Released: every held send is sent and completes, in order (wr_id), and arrives.
 * - The knob's bad input: an unknown QPN fails (1), a bad word is a usage error (2).
 *
 * Bounded waits only (a deadline per phase); no timing is asserted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "tap.h"
#include "tap_verbs.h"

#define DEV	  "sim_ib0"
#define MLID	  0xc019
#define QKEY	  0x11111111u
#define SQ_DEPTH  16u
#define RQ_DEPTH  64u
#define MSG_LEN	  64u
#define PATIENCE  20.0 /* seconds: the bound of each wait, never asserted */
#define QUIET	  0.3  /* seconds polled while hung: nothing may come */
#define RECV_SIZE (40u + MSG_LEN)

static const union ibv_gid g_mgid = {
	.raw = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x0d, 0x19}};

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	uint8_t *buf; /* RQ_DEPTH receive buffers, then one send buffer */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void post_recv(struct end *e, uint32_t slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(e->buf + slot * RECV_SIZE),
			      .length = RECV_SIZE,
			      .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(e->qp, &wr, &bad))
		tap_bail("ibv_post_recv");
}

static void end_open(struct end *e)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = SQ_DEPTH,
					      .max_recv_wr = RQ_DEPTH,
					      .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_ah_attr aa = {.is_global = 1, .dlid = MLID, .port_num = 1};

	e->ctx = tap_open_dev(DEV);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, (int)(SQ_DEPTH + RQ_DEPTH), NULL, NULL, 0) : NULL;
	if (!e->cq)
		tap_bail("pd/cq");
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &qa);
	if (!e->qp)
		tap_bail("ibv_create_qp");
	tap_ud_rts(e->qp, QKEY);
	e->buf = calloc(RQ_DEPTH + 1, RECV_SIZE);
	e->mr = e->buf ? ibv_reg_mr(e->pd, e->buf, (RQ_DEPTH + 1) * RECV_SIZE,
				    IBV_ACCESS_LOCAL_WRITE)
		       : NULL;
	if (!e->mr)
		tap_bail("ibv_reg_mr");
	for (uint32_t i = 0; i < RQ_DEPTH; i++)
		post_recv(e, i);
	if (ibv_attach_mcast(e->qp, &g_mgid, MLID))
		tap_bail("ibv_attach_mcast");
	aa.grh.dgid = g_mgid;
	aa.grh.hop_limit = 1;
	e->ah = ibv_create_ah(e->pd, &aa);
	if (!e->ah)
		tap_bail("ibv_create_ah");
}

static void end_close(struct end *e)
{
	ibv_destroy_ah(e->ah);
	ibv_detach_mcast(e->qp, &g_mgid, MLID);
	ibv_destroy_qp(e->qp);
	ibv_dereg_mr(e->mr);
	free(e->buf);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	ibv_close_device(e->ctx);
}

static int send_group(struct end *e, uint64_t id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(e->buf + RQ_DEPTH * RECV_SIZE),
			      .length = MSG_LEN,
			      .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.ud = {.ah = e->ah,
					   .remote_qpn = 0xffffff,
					   .remote_qkey = QKEY}},
			   *bad;

	return ibv_post_send(e->qp, &wr, &bad);
}

struct tally {
	uint32_t sent_done, recvd, errors, out_of_order;
	uint64_t next_id; /* the wr_id the next send completion must carry */
};

/* One poll: send completions checked for order, receives counted and reposted. */
static void drain(struct end *e, struct tally *t)
{
	struct ibv_wc wc[8];
	int n = ibv_poll_cq(e->cq, 8, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			t->errors++;
			continue;
		}
		if (wc[i].opcode == IBV_WC_SEND) {
			if (wc[i].wr_id != t->next_id)
				t->out_of_order++;
			t->next_id = wc[i].wr_id + 1;
			t->sent_done++;
		} else {
			t->recvd++;
			post_recv(e, (uint32_t)wc[i].wr_id);
		}
	}
}

/* Poll until `sends` send completions and `recvs` receives, or PATIENCE ran out. */
static void drain_until(struct end *e, struct tally *t, uint32_t sends, uint32_t recvs)
{
	double until = now() + PATIENCE;

	while ((t->sent_done < sends || t->recvd < recvs) && now() < until)
		drain(e, t);
}

/* Run `simfab ARGS...` (SIMFAB from meson): its exit status, or -1. */
static int simfab(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5)
{
	const char *prog = getenv("SIMFAB");
	int st;
	pid_t pid;

	if (!prog)
		tap_bail("SIMFAB not set");
	pid = fork();
	if (!pid) {
		execl(prog, prog, a1, a2, a3, a4, a5, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int main(void)
{
	struct end e = {0};
	struct tally t = {0};
	char qpn[16];
	double until;
	uint32_t posted = 0;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	end_open(&e);
	snprintf(qpn, sizeof(qpn), "%#x", e.qp->qp_num);

	EQ(send_group(&e, 0), 0, "a send before the hang is posted");
	drain_until(&e, &t, 1, 1);
	EQ(t.sent_done, 1, "and completes");
	EQ(t.recvd, 1, "and its copy arrives");

	EQ(simfab("qp", DEV, qpn, "sq-hang", "on"), 0, "simfab qp %s %s sq-hang on", DEV, qpn);
	for (ret = 0; posted < 2 * SQ_DEPTH; posted++) {
		ret = send_group(&e, 1 + posted);
		if (ret)
			break;
	}
	EQ(posted, SQ_DEPTH, "a hung queue accepts sends while it has room (%u)", SQ_DEPTH);
	EQ(ret, ENOMEM, "then ibv_post_send says the queue is full (ENOMEM)");
	until = now() + QUIET;
	while (now() < until)
		drain(&e, &t);
	EQ(t.sent_done, 1, "no send completes while the queue hangs");
	EQ(t.recvd, 1, "and nothing is sent");

	EQ(simfab("qp", DEV, qpn, "sq-hang", "off"), 0, "simfab qp %s %s sq-hang off", DEV, qpn);
	drain_until(&e, &t, 1 + SQ_DEPTH, 1 + SQ_DEPTH);
	EQ(t.sent_done, 1 + SQ_DEPTH, "released: every held send completes");
	EQ(t.out_of_order, 0, "in the order posted");
	EQ(t.recvd, 1 + SQ_DEPTH, "and is sent");
	EQ(t.errors, 0, "no completion with an error");
	EQ(send_group(&e, 1 + SQ_DEPTH), 0, "the queue takes sends again");
	drain_until(&e, &t, 2 + SQ_DEPTH, 2 + SQ_DEPTH);
	EQ(t.sent_done, 2 + SQ_DEPTH, "which complete at once");

	EQ(simfab("qp", DEV, "0xfffffe", "sq-hang", "on"), 1, "an unknown QPN fails (exit 1)");
	EQ(simfab("qp", DEV, qpn, "sq-hang", "maybe"), 2, "a state other than on/off: usage (2)");
	EQ(simfab("qp", DEV, qpn, "rq-hang", "on"), 2, "an unknown fault: usage (2)");
	EQ(simfab("qp", DEV, "12x", "sq-hang", "on"), 2, "a QPN that is not a number: usage (2)");
	EQ(simfab("qp", "nodev", qpn, "sq-hang", "on"), 1, "an unknown device fails (exit 1)");
	end_close(&e);
	simfab("reset", NULL, NULL, NULL, NULL);
	return tap_done();
}
