// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A process killed while it writes a completion into another process's CQ does not stop
 * that CQ (docs/operations.md, "tx wedge"; docs/simfabric.md, "Completion queues").
 *
 * Two processes on one port, both QPs attached to one multicast group (the HA pair's
 * shape: two bridges on one RoCE segment, each a member of the groups). The child sends
 * one datagram to the group; its delivery into the parent's QP writes a receive
 * completion into the parent's CQ, and SIMFABRIC_TEST_DIE_IN_CQ_PUSH=1 kills the child
 * with SIGKILL in the middle of that write (CQE place taken, not yet published). The
 * parent then sends to the group (itself and the dead member) as a bridge forwards:
 * every signaled send must complete and its own copies must keep arriving. On a CQ whose
 * producers claim places without a lock the parent polled nothing more after the hole:
 * its send queue filled (ENOMEM) after max_send_wr posts.
 *
 * Bounded waits only (a deadline per phase); no timing is asserted.
 */
#include <errno.h>
#include <signal.h>
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
#define QKEY	  0x11111111u
#define MLID	  0xc017
#define SQ_DEPTH  16u
#define RQ_DEPTH  256u
#define SENDS	  (20u * SQ_DEPTH)
#define MSG_LEN	  64u
#define PATIENCE  20.0 /* seconds: the bound of each wait, never asserted */
#define RECV_SIZE (40u + MSG_LEN)

static const union ibv_gid g_mgid = {
	.raw = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x0d, 0x17}};

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

/* One end: the port, a CQ shared by sends and receives (as the bridge's channels), a UD
 * QP attached to the group with `recvs` receives posted, an AH to the group. */
static void end_open(struct end *e, uint32_t recvs)
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
	for (uint32_t i = 0; i < recvs; i++)
		post_recv(e, i);
	if (ibv_attach_mcast(e->qp, &g_mgid, MLID))
		tap_bail("ibv_attach_mcast");
	aa.grh.dgid = g_mgid;
	aa.grh.hop_limit = 1;
	e->ah = ibv_create_ah(e->pd, &aa);
	if (!e->ah)
		tap_bail("ibv_create_ah");
}

/* Release what end_open made (the sanitizer build's leak check). */
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

/* The child: waits for the parent's byte, joins the group without receives (a member that
 * will never read again), sends once; the delivery into the parent's CQ kills it. */
static void child(int go)
{
	struct end e = {0};
	char c;

	if (read(go, &c, 1) != 1)
		_exit(2);
	if (setenv("SIMFABRIC_TEST_DIE_IN_CQ_PUSH", "1", 1))
		_exit(2);
	end_open(&e, 0);
	send_group(&e, 1);
	/* Still alive: the delivery did not reach the parent's CQ. */
	_exit(3);
}

/* The test's fabric removed at the end (`simfab reset`, SIMFAB set by meson): the dead
 * children's objects are otherwise left until a later process reclaims them. */
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

struct tally {
	uint32_t posted, sent_done, recvd, errors;
	int ret; /* the last ibv_post_send error other than ENOMEM */
};

/* One poll of the CQ: send completions counted, receives counted and reposted. */
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
			t->sent_done++;
		} else {
			t->recvd++;
			post_recv(e, (uint32_t)wc[i].wr_id);
		}
	}
}

/* Send `n` signaled datagrams to the group as a bridge forwards (at most SQ_DEPTH
 * outstanding), polling as it goes, until all completed or PATIENCE ran out. Our own
 * copies come back (no loopback block). */
static void send_all(struct end *e, uint32_t n, struct tally *t)
{
	double until = now() + PATIENCE;

	*t = (struct tally){0};
	while (t->sent_done < n && now() < until) {
		if (t->posted < n && t->posted - t->sent_done < SQ_DEPTH) {
			int ret = send_group(e, t->posted);

			if (ret && ret != ENOMEM) {
				t->ret = ret;
				break;
			}
			if (!ret)
				t->posted++;
		}
		drain(e, t);
	}
}

/* The flooder of the stress mode (exec'd: it attaches on its own): sends to the group
 * without end, retiring its sends, after one byte on fd `ready`. */
static int flood(int ready)
{
	struct end e = {0};
	struct tally t = {0};
	uint64_t id = 0;

	end_open(&e, 0);
	if (write(ready, "r", 1) != 1)
		return 2;
	for (;;) {
		if (t.posted - t.sent_done < SQ_DEPTH && !send_group(&e, id++))
			t.posted++;
		drain(&e, &t);
	}
}

/*
 * Stress mode (`sf_deadpush stress ROUNDS`): no hook. Each round a flooder floods the
 * group (its deliveries land in our CQ) and is SIGKILLed at a random moment while we
 * drain; then all our sends must still complete. Whether a kill lands inside a
 * completion's write is chance (a few instructions per datagram), so this mode shows the
 * wedge on a broken fabric only now and then: it is for experiments (docs/simfabric.md),
 * the hook's test above is the regression test.
 */
static int stress(const char *self, uint32_t rounds)
{
	struct end e = {0};
	uint32_t r;

	end_open(&e, RQ_DEPTH);
	srand((unsigned)getpid());
	for (r = 0; r < rounds; r++) {
		struct tally t = {0};
		char fdarg[16], c;
		int rd[2], st;
		double until;
		pid_t pid;

		if (pipe(rd))
			tap_bail("pipe");
		pid = fork();
		if (pid < 0)
			tap_bail("fork");
		if (!pid) {
			close(rd[0]);
			snprintf(fdarg, sizeof(fdarg), "%d", rd[1]);
			execl(self, self, "flood", fdarg, (char *)NULL);
			_exit(2);
		}
		close(rd[1]);
		if (read(rd[0], &c, 1) != 1)
			tap_bail("flooder start");
		close(rd[0]);
		until = now() + 0.001 * (1 + rand() % 20);
		while (now() < until)
			drain(&e, &t);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		send_all(&e, 4 * SQ_DEPTH, &t);
		if (t.sent_done != t.posted || t.posted != 4 * SQ_DEPTH) {
			DIAG("round %u: %u posted, %u completed", r, t.posted, t.sent_done);
			break;
		}
	}
	EQ(r, rounds, "every round's sends completed after its flooder's SIGKILL");
	end_close(&e);
	return finish();
}

int main(int argc, char **argv)
{
	struct end e = {0};
	struct tally t;
	int go[2], st = 0;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "flood"))
		return flood(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "stress"))
		return stress("/proc/self/exe", (uint32_t)atoi(argv[2]));
	/* Forked before this process touches the fabric: the child attaches on its own. */
	if (pipe(go))
		tap_bail("pipe");
	pid = fork();
	if (pid < 0)
		tap_bail("fork");
	if (!pid) {
		close(go[1]);
		child(go[0]);
	}
	close(go[0]);
	end_open(&e, RQ_DEPTH);
	if (write(go[1], "g", 1) != 1)
		tap_bail("write");
	if (waitpid(pid, &st, 0) != pid)
		tap_bail("waitpid");
	if (!OK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		"the child was killed by SIGKILL inside its write into our CQ (status %#x)", st))
		return finish();

	/* Send to the group (ourselves and the dead member) as a bridge forwards: every
	 * signaled send completes, whatever the dead member and the dead producer left. */
	send_all(&e, SENDS, &t);
	EQ(t.ret, 0, "ibv_post_send fails only for a full send queue");
	EQ(t.errors, 0, "no completion with an error");
	EQ(t.posted, SENDS, "all %u sends posted through a send queue of %u", SENDS, SQ_DEPTH);
	EQ(t.sent_done, t.posted, "every posted send completed");
	OK(t.recvd > 0, "our own copies keep arriving (%u received)", t.recvd);
	end_close(&e);
	return finish();
}
