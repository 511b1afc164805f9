// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Signals and the blocking calls of the simulated libibverbs, as on a real host:
 *
 * - ibv_get_cq_event, ibv_get_async_event and rdma_get_cm_event block in one read (or
 *   write) of an event fd in rdma-core; the kernel's wait there (ib_uverbs_event_read,
 *   ucma_get_event) ends with -ERESTARTSYS
 *   when a signal handler runs, so the call returns -1/EINTR when the handler was
 *   installed without SA_RESTART and goes on waiting with SA_RESTART. qperf ends its
 *   timed loops with such a SIGALRM. Checked for the three calls, both ways: a helper thread
 *   waits until the main thread sleeps in the call, signals it, and (SA_RESTART) once it
 *   sleeps again, produces the event it waits for.
 * - A handler that calls exit() while ibv_open_device starts the simulated sysfs refresh
 *   thread (the signal arrives while all signals are blocked for the thread's creation,
 *   and is delivered when the mask is restored): the process exits. This program
 *   interposes pthread_create to raise the signal at that point; it is linked with
 *   -rdynamic so that the library's call binds to it.
 *
 * Run with LD_LIBRARY_PATH=<build>/simfabric and SIMFABRIC naming a fabric of its own.
 * TAP; a call that does not return after the signal fails the test at once (the helper
 * thread gives it 20 s) instead of hanging it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"
#include "tap_verbs.h"

/* How long the helper waits for a state change before it declares the test failed. */
#define PATIENCE_MS	20000
#define EXIT_IN_HANDLER 42

static atomic_int g_handled;
static atomic_int g_returned;
static atomic_int g_raise_in_create;
static pid_t g_main_tid;

static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&g_handled, 1);
}

static void on_signal_exit(int sig)
{
	(void)sig;
	exit(EXIT_IN_HANDLER);
}

/*
 * The library creates its sysfs refresh thread with every signal blocked: a signal
 * raised here stays pending until ibv_open_device restores the mask.
 */
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
			RTLD_NEXT, "pthread_create");

	if (atomic_exchange(&g_raise_in_create, 0))
		raise(SIGUSR1);
	return real(t, a, fn, arg);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* The scheduler state of the main thread ('R', 'S', ...), from /proc. */
static char main_state(void)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)g_main_tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static void helper_fail(const char *what)
{
	printf("not ok - %s\nBail out! the call under test did not behave; stopping\n", what);
	fflush(stdout);
	_exit(1);
}

static void wait_sleeping(const char *what)
{
	for (int i = 0; main_state() != 'S'; i++) {
		if (i > PATIENCE_MS)
			helper_fail(what);
		sleep_ms(1);
	}
}

struct port {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;    /* with the channel */
	struct ibv_cq *small; /* 1 entry: overrun raises IBV_EVENT_CQ_ERR */
	struct ibv_qp *qp;    /* sends complete on cq */
	struct ibv_qp *qp2;   /* sends complete on small */
	struct ibv_ah *ah;
	struct rdma_event_channel *cmch;
	struct rdma_cm_id *cmid;
};

static struct ibv_qp *ud_qp(struct port *p, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(p->pd, &qa);

	if (!qp)
		tap_bail("ibv_create_qp");
	tap_ud_rts(qp, 0x11111111);
	return qp;
}

static void port_open(struct port *p, const char *name)
{
	struct ibv_port_attr pa;
	struct ibv_ah_attr aa = {.port_num = 1};

	p->ctx = tap_open_dev(name);
	if (ibv_query_port(p->ctx, 1, &pa))
		tap_bail("ibv_query_port");
	p->pd = ibv_alloc_pd(p->ctx);
	p->ch = ibv_create_comp_channel(p->ctx);
	if (!p->pd || !p->ch)
		tap_bail("pd/channel");
	p->cq = ibv_create_cq(p->ctx, 8, NULL, p->ch, 0);
	p->small = ibv_create_cq(p->ctx, 1, NULL, NULL, 0);
	if (!p->cq || !p->small)
		tap_bail("ibv_create_cq");
	p->qp = ud_qp(p, p->cq);
	p->qp2 = ud_qp(p, p->small);
	aa.dlid = pa.lid;
	p->ah = ibv_create_ah(p->pd, &aa);
	if (!p->ah)
		tap_bail("ibv_create_ah");
	p->cmch = rdma_create_event_channel();
	if (!p->cmch || rdma_create_id(p->cmch, &p->cmid, NULL, RDMA_PS_UDP))
		tap_bail("rdma_cm id");
}

/* A signaled empty send to our own port: its completion lands on the QP's send CQ. */
static void send_one(struct port *p, struct ibv_qp *qp)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = {.ah = p->ah, .remote_qpn = p->qp->qp_num, .remote_qkey = 0x11111111}};
	struct ibv_send_wr *bad;

	if (ibv_post_send(qp, &wr, &bad))
		helper_fail("ibv_post_send");
}

enum which { CQ_EVENT, ASYNC_EVENT, CM_EVENT };

struct job {
	struct port *p;
	enum which which;
	int restart;
};

static pthread_t g_main_thread;

static void *helper_run(void *arg)
{
	struct job *j = arg;

	wait_sleeping("the main thread never blocked in the call");
	pthread_kill(g_main_thread, SIGUSR1);
	for (int i = 0; !atomic_load(&g_handled); i++) {
		if (i > PATIENCE_MS)
			helper_fail("the signal handler never ran");
		sleep_ms(1);
	}
	if (!j->restart) {
		for (int i = 0; !atomic_load(&g_returned); i++) {
			if (i > PATIENCE_MS)
				helper_fail("the call went on waiting after a handler without "
					    "SA_RESTART ran (rdma-core returns -1/EINTR)");
			sleep_ms(1);
		}
		return NULL;
	}
	/* SA_RESTART: the call waits again; give it its event. */
	wait_sleeping("the call did not wait again after a handler with SA_RESTART");
	if (atomic_load(&g_returned))
		helper_fail("the call returned after a handler with SA_RESTART");
	if (j->which == CQ_EVENT) {
		send_one(j->p, j->p->qp);
	} else if (j->which == CM_EVENT) {
		struct sockaddr_in dst = {.sin_family = AF_INET};

		/* Address resolution of sim_ib1's IPoIB address: ADDR_RESOLVED. */
		inet_pton(AF_INET, "198.18.0.2", &dst.sin_addr);
		if (rdma_resolve_addr(j->p->cmid, NULL, (struct sockaddr *)&dst, 2000))
			helper_fail("rdma_resolve_addr");
	} else {
		/* Two completions into a CQ of one entry: IBV_EVENT_CQ_ERR. */
		send_one(j->p, j->p->qp2);
		send_one(j->p, j->p->qp2);
	}
	return NULL;
}

static void wait_case(struct port *p, enum which which, int restart)
{
	const char *name = which == CQ_EVENT   ? "ibv_get_cq_event"
			   : which == CM_EVENT ? "rdma_get_cm_event"
					       : "ibv_get_async_event";
	struct rdma_cm_event *ce = NULL;
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = restart ? SA_RESTART : 0};
	struct job j = {.p = p, .which = which, .restart = restart};
	struct ibv_async_event ae;
	struct ibv_cq *cq = NULL;
	void *cq_ctx;
	pthread_t t;
	int rc, e;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	atomic_store(&g_handled, 0);
	atomic_store(&g_returned, 0);
	if (which == CQ_EVENT && ibv_req_notify_cq(p->cq, 0))
		tap_bail("ibv_req_notify_cq");
	if (pthread_create(&t, NULL, helper_run, &j))
		tap_bail("pthread_create");
	errno = 0;
	if (which == CQ_EVENT)
		rc = ibv_get_cq_event(p->ch, &cq, &cq_ctx);
	else if (which == CM_EVENT)
		rc = rdma_get_cm_event(p->cmch, &ce);
	else
		rc = ibv_get_async_event(p->ctx, &ae);
	e = errno;
	atomic_store(&g_returned, 1);
	pthread_join(t, NULL);
	OK(atomic_load(&g_handled) == 1, "%s %s: the handler ran once", name,
	   restart ? "SA_RESTART" : "no SA_RESTART");
	if (!restart) {
		OK(rc == -1 && e == EINTR,
		   "%s without SA_RESTART: -1/EINTR after the handler (got %d, %s)", name, rc,
		   strerror(e));
		return;
	}
	if (which == CM_EVENT) {
		OK(rc == 0 && ce && ce->event == RDMA_CM_EVENT_ADDR_RESOLVED && ce->id == p->cmid,
		   "rdma_get_cm_event with SA_RESTART: restarted, then ADDR_RESOLVED (rc %d)", rc);
		if (!rc)
			rdma_ack_cm_event(ce);
	} else if (which == CQ_EVENT) {
		struct ibv_wc wc;

		OK(rc == 0 && cq == p->cq,
		   "ibv_get_cq_event with SA_RESTART: restarted, then the CQ's event (rc %d)", rc);
		if (!rc)
			ibv_ack_cq_events(cq, 1);
		OK(ibv_poll_cq(p->cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
			   wc.opcode == IBV_WC_SEND,
		   "the completion behind the event is the send");
	} else {
		OK(rc == 0 && ae.event_type == IBV_EVENT_CQ_ERR && ae.element.cq == p->small,
		   "ibv_get_async_event with SA_RESTART: restarted, then CQ_ERR of the "
		   "overrun CQ (rc %d, event %d)",
		   rc, rc ? -1 : (int)ae.event_type);
		if (!rc)
			ibv_ack_async_event(&ae);
	}
}

/*
 * In a child that has not touched the fabric: SIGUSR1 pending while ibv_open_device
 * creates the refresh thread, its handler calls exit(). The child must exit with the
 * handler's status; before the fix it hung in the exit path (the destructor waited for
 * the lock that ibv_open_device held while it restored the signal mask).
 */
static void exit_in_handler(void)
{
	struct sigaction sa = {.sa_handler = on_signal_exit};
	int status = 0;
	pid_t pid, w = 0;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		tap_bail("fork");
	if (!pid) {
		struct ibv_device **list;

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
		list = ibv_get_device_list(NULL);
		if (!list || !list[0])
			_exit(3);
		atomic_store(&g_raise_in_create, 1);
		ibv_open_device(list[0]);
		/* Not reached: the handler ran when the mask was restored. */
		_exit(atomic_load(&g_raise_in_create) ? 4 : 5);
	}
	for (int i = 0; i <= PATIENCE_MS / 10; i++) {
		w = waitpid(pid, &status, WNOHANG);
		if (w)
			break;
		sleep_ms(10);
	}
	if (!w) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		OK(0, "exit() in a signal handler during ibv_open_device: the process hung "
		      "in exit (killed after 20 s)");
		return;
	}
	OK(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_IN_HANDLER,
	   "exit() in a signal handler during ibv_open_device: the process exits with the "
	   "handler's status (status %#x)",
	   status);
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
	struct port p = {0};

	setvbuf(stdout, NULL, _IOLBF, 0);
	fabric_reset();
	/* First, while this process has not attached the fabric: a forked child whose
	 * parent attached skips the exit-time release that the case exercises. */
	exit_in_handler();

	g_main_tid = (pid_t)syscall(SYS_gettid);
	g_main_thread = pthread_self();
	port_open(&p, "sim_ib0");
	wait_case(&p, CQ_EVENT, 0);
	wait_case(&p, CQ_EVENT, 1);
	wait_case(&p, ASYNC_EVENT, 0);
	wait_case(&p, ASYNC_EVENT, 1);
	wait_case(&p, CM_EVENT, 0);
	wait_case(&p, CM_EVENT, 1);

	rdma_destroy_id(p.cmid);
	rdma_destroy_event_channel(p.cmch);

	ibv_destroy_qp(p.qp);
	ibv_destroy_qp(p.qp2);
	ibv_destroy_ah(p.ah);
	ibv_destroy_cq(p.cq);
	ibv_destroy_cq(p.small);
	ibv_destroy_comp_channel(p.ch);
	ibv_dealloc_pd(p.pd);
	ibv_close_device(p.ctx);
	fabric_reset();
	return tap_done();
}
