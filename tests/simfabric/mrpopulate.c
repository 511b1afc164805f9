// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Registered memory and rings are mapped populated (simfabric/fabric.c, sf_obj_create):
 * a NIC's DMA takes no page fault, since ibv_reg_mr pins the pages. Counted with the
 * thread's minor faults (getrusage RUSAGE_THREAD), never with time:
 *
 * - the owner: after ibv_reg_mr of PAGES pages, reading one byte of each page takes
 *   (almost) no fault; before, the region's re-backed pages faulted in again, one fault
 *   per 16 pages (the kernel's fault-around), 64 here.
 * - the sender: a child process on the same port sends PAGES datagrams to the group, each
 *   received into a page of its own of the parent's region. Its first send maps the
 *   parent's region and rings; the PAGES - 1 sends after it take (almost) no fault in the
 *   sending thread; before, every one took at least one (a write to a page of the
 *   parent's memory not yet in the sender's page table): at 4 096 groups this was one
 *   fault a forwarded packet in the bridge's worker (docs/benchmarks.md).
 *
 * Every datagram is checked on arrival (its page and its sequence number).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "tap.h"
#include "tap_verbs.h"

#define DEV	 "sim_ib0"
#define QKEY	 0x11111111u
#define MLID	 0xc018
#define PAGES	 1024u
#define PAGE	 4096u
#define MSG_LEN	 64u
#define GRH_LEN	 40u
#define PATIENCE 60.0 /* seconds: the bound of the wait, never asserted */
/* Faults allowed where populated: a few for the stack and libc around the loop. */
#define FEW_FAULTS 16u
/*
 * The sender's bound. Under AddressSanitizer the copy into the peer's pages also writes
 * their shadow (one byte per 8), which is the sanitizer's own memory, not mapped by
 * simfabric: PAGES / 8 of its pages fault once each (129 measured). Still far below
 * the one fault a delivery (PAGES - 1) of an unpopulated mapping.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SENDER_FAULTS (FEW_FAULTS + PAGES / 8u)
#else
#define SENDER_FAULTS FEW_FAULTS
#endif

static const union ibv_gid g_mgid = {
	.raw = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x0d, 0x18}};

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	uint8_t *buf; /* PAGES pages: one receive each (the parent), or the send buffer */
};

static long thread_minflt(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		tap_bail("getrusage");
	return ru.ru_minflt;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The port, one CQ, a UD QP attached to the group, an AH to it, PAGES pages registered. */
static void end_open(struct end *e)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = PAGES,
					      .max_recv_wr = PAGES,
					      .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_ah_attr aa = {.is_global = 1, .dlid = MLID, .port_num = 1};

	e->ctx = tap_open_dev(DEV);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, (int)(2 * PAGES), NULL, NULL, 0) : NULL;
	if (!e->cq)
		tap_bail("pd/cq");
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &qa);
	if (!e->qp)
		tap_bail("ibv_create_qp");
	tap_ud_rts(e->qp, QKEY);
	e->buf = aligned_alloc(PAGE, (size_t)PAGES * PAGE);
	if (!e->buf)
		tap_bail("aligned_alloc");
	memset(e->buf, 0, (size_t)PAGES * PAGE);
	e->mr = ibv_reg_mr(e->pd, e->buf, (size_t)PAGES * PAGE, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		tap_bail("ibv_reg_mr");
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

/* Sends datagram `seq` (its first 4 bytes), unsignaled but every 64th. */
static int send_seq(struct end *e, uint32_t seq)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf, .length = MSG_LEN, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = seq,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = seq % 64 == 63 ? IBV_SEND_SIGNALED : 0,
				 .wr.ud = {.ah = e->ah,
					   .remote_qpn = 0xffffff,
					   .remote_qkey = QKEY}},
			   *bad;

	memcpy(e->buf, &seq, sizeof(seq));
	return ibv_post_send(e->qp, &wr, &bad);
}

/* The child: its own end on the port (its QP leaves the group: the parent alone
 * receives), then PAGES sends; it writes the faults of the sends after the first to
 * `report`. Exit status 0, 2 on an error. */
static void child(int go, int report)
{
	struct end e = {0};
	long f0, f1;
	char c;

	if (read(go, &c, 1) != 1)
		_exit(2);
	end_open(&e);
	if (ibv_detach_mcast(e.qp, &g_mgid, MLID))
		_exit(2);
	if (send_seq(&e, 0)) /* maps the parent's region and rings */
		_exit(2);
	f0 = thread_minflt();
	for (uint32_t i = 1; i < PAGES; i++) {
		struct ibv_wc wc;

		if (send_seq(&e, i))
			_exit(2);
		while (ibv_poll_cq(e.cq, 1, &wc) > 0)
			;
	}
	f1 = thread_minflt();
	if (write(report, &(long){f1 - f0}, sizeof(long)) != sizeof(long))
		_exit(2);
	ibv_attach_mcast(e.qp, &g_mgid, MLID); /* end_close detaches */
	end_close(&e);
	_exit(0);
}

/* The test's fabric removed at the end (`simfab reset`, SIMFAB set by meson). */
static int finish(void)
{
	const char *simfab = getenv("SIMFAB");
	int rc = tap_done();
	pid_t pid;

	if (!simfab)
		return rc;
	pid = fork();
	if (!pid) {
		execl(simfab, simfab, "reset", (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return rc;
}

int main(void)
{
	struct end e = {0};
	int go[2], rep[2];
	uint32_t got = 0, bad = 0;
	long f0, f1, sender_faults = -1;
	volatile uint8_t sink = 0;
	double end;
	pid_t pid;
	int st;

	if (pipe(go) || pipe(rep))
		tap_bail("pipe");
	pid = fork();
	if (pid < 0)
		tap_bail("fork");
	if (!pid) {
		close(go[1]);
		close(rep[0]);
		child(go[0], rep[1]);
	}
	close(go[0]);
	close(rep[1]);
	end_open(&e);

	/* The owner's pages: in its page table once registered. */
	f0 = thread_minflt();
	for (uint32_t i = 0; i < PAGES; i++)
		sink += e.buf[(size_t)i * PAGE + 100];
	f1 = thread_minflt();
	(void)sink;
	OK(f1 - f0 <= FEW_FAULTS,
	   "owner: reading the %u pages of a registered region took %ld faults (at most %u)", PAGES,
	   f1 - f0, FEW_FAULTS);

	for (uint32_t i = 0; i < PAGES; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)(e.buf + (size_t)i * PAGE),
				      .length = PAGE,
				      .lkey = e.mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *badwr;

		if (ibv_post_recv(e.qp, &wr, &badwr))
			tap_bail("ibv_post_recv");
	}
	if (write(go[1], "g", 1) != 1)
		tap_bail("write");
	end = now() + PATIENCE;
	while (got < PAGES && now() < end) {
		struct ibv_wc wc[32];
		int n = ibv_poll_cq(e.cq, 32, wc);

		for (int k = 0; k < n; k++) {
			uint32_t seq;

			if (wc[k].status != IBV_WC_SUCCESS || wc[k].opcode != IBV_WC_RECV) {
				bad++;
				continue;
			}
			memcpy(&seq, e.buf + wc[k].wr_id * PAGE + GRH_LEN, sizeof(seq));
			if (seq != wc[k].wr_id || wc[k].byte_len != GRH_LEN + MSG_LEN)
				bad++;
			got++;
		}
	}
	EQ(got, PAGES, "every datagram received, each into its own page");
	EQ(bad, 0, "each in order, at its page, with its length");
	if (read(rep[0], &sender_faults, sizeof(sender_faults)) != sizeof(sender_faults))
		sender_faults = -1;
	OK(sender_faults >= 0 && sender_faults <= (long)SENDER_FAULTS,
	   "sender: %u deliveries into pages of another process took %ld faults (at most %u)",
	   PAGES - 1, sender_faults, SENDER_FAULTS);
	if (waitpid(pid, &st, 0) != pid)
		tap_bail("waitpid");
	EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 255, 0, "the sender exits cleanly");
	end_close(&e);
	return finish();
}
