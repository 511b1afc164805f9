// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The calls a program written for real hosts may make beyond UD multicast, on the
 * simulated fabric: route resolution works (ROUTE_RESOLVED, one path record with the
 * port's LIDs, GIDs and MTU); connection management, rsockets, imports and ECE are
 * refused with the errno rdma-core gives for an unsupported operation, and nothing
 * aborts; rselect works over ordinary descriptors. SRQs are simulated: srq.c.
 *
 * Built against the real rdma-core headers and libraries, run with
 * LD_LIBRARY_PATH=<build>/simfabric on a fabric of its own (SIMFABRIC set by the test
 * runner, reset at the end through the simulated library's private sf_reset). TAP.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "tap.h"

/* A synchronous id resolved to addr (the IPoIB or RoCE address of a simulated port). */
static struct rdma_cm_id *resolved_id(const char *src, const char *dst)
{
	struct sockaddr_in s = {.sin_family = AF_INET}, d = {.sin_family = AF_INET};
	struct rdma_cm_id *id;

	inet_pton(AF_INET, src, &s.sin_addr);
	inet_pton(AF_INET, dst, &d.sin_addr);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP)) {
		printf("Bail out! rdma_create_id: %s\n", strerror(errno));
		exit(100);
	}
	OK(rdma_resolve_addr(id, (struct sockaddr *)&s, (struct sockaddr *)&d, 1000) == 0,
	   "rdma_resolve_addr %s -> %s", src, dst);
	return id;
}

static void route(const char *name, const char *src, const char *dst, int ib)
{
	struct rdma_cm_id *id = resolved_id(src, dst);
	struct ibv_port_attr pa;
	struct ibv_sa_path_rec *p;
	union ibv_gid sgid;

	OK(rdma_resolve_route(id, 1000) == 0, "%s: rdma_resolve_route succeeds", name);
	OK(id->event && id->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED,
	   "%s: the event is ROUTE_RESOLVED", name);
	OK(id->route.num_paths == 1 && id->route.path_rec, "%s: one path record", name);
	p = id->route.path_rec;
	ibv_query_port(id->verbs, id->port_num, &pa);
	ibv_query_gid(id->verbs, id->port_num, 0, &sgid);
	if (ib) {
		OK(be16toh(p->slid) == pa.lid, "%s: path SLID %u is the port's LID %u", name,
		   be16toh(p->slid), pa.lid);
		OK(p->dlid != 0, "%s: path DLID set", name);
		OK(!memcmp(&p->sgid, &sgid, sizeof(sgid)), "%s: path SGID is GID 0", name);
	} else {
		OK(p->slid == 0 && p->dlid == 0, "%s: no LIDs on Ethernet", name);
	}
	OK(p->mtu == pa.active_mtu, "%s: path MTU %u is the port's %u", name, p->mtu,
	   pa.active_mtu);
	OK(p->numb_path == 1 && p->reversible == 1, "%s: one reversible path", name);
	/* A synchronous UD id: SIDR to a port nobody listens on answers IB_SIDR_UNSUPPORTED,
	 * which ucma_complete turns into errno 1 (sidr.c checks SIDR in full). */
	OK(rdma_connect(id, NULL) == -1 && errno == 1 && id->event &&
		   id->event->event == RDMA_CM_EVENT_UNREACHABLE && id->event->status == 1,
	   "%s: rdma_connect (SIDR) to no listener: UNREACHABLE status 1", name);
	rdma_destroy_ep(id);
	OK(1, "%s: rdma_destroy_ep frees an id from rdma_create_id", name);
}

int main(void)
{
	struct rdma_cm_id *id, *req = (void *)1;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct timeval tv = {0, 1000};
	fd_set rd, wr;
	int pfd[2], (*reset)(const char *);
	int n;

	/* A fresh fabric of its own: one left by another build may have another layout. */
	reset = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	/* Route resolution on both kinds of port (default topology, docs/simfabric.md). */
	route("IB", "198.18.0.2", "198.18.0.3", 1);
	route("RoCE", "198.19.0.2", "198.19.0.3", 0);

	/* Not resolved yet: EINVAL, as upstream. */
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP) == 0) {
		OK(rdma_resolve_route(id, 1000) == -1 && errno == EINVAL,
		   "rdma_resolve_route before rdma_resolve_addr: EINVAL");
		OK(rdma_accept(id, NULL) == -1 && errno == EINVAL,
		   "rdma_accept on a UD id without a request: EINVAL");
		OK(rdma_reject(id, NULL, 0) == -1 && errno == EINVAL,
		   "rdma_reject on a UD id without a request: EINVAL");
		rdma_destroy_id(id);
	}
	/* Connected QPs are not simulated: RC ids refuse connection management. */
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0) {
		OK(rdma_listen(id, 4) == -1 && errno == EOPNOTSUPP,
		   "rdma_listen on an RC id: EOPNOTSUPP");
		OK(rdma_connect(id, NULL) == -1 && errno == EOPNOTSUPP,
		   "rdma_connect on an RC id: EOPNOTSUPP");
		OK(rdma_get_request(id, &req) == -1 && errno == EOPNOTSUPP && req == NULL,
		   "rdma_get_request: EOPNOTSUPP, *id cleared");
		OK(rdma_accept(id, NULL) == -1 && errno == EOPNOTSUPP,
		   "rdma_accept on an RC id: EOPNOTSUPP");
		OK(rdma_reject(id, NULL, 0) == -1 && errno == EOPNOTSUPP,
		   "rdma_reject on an RC id: EOPNOTSUPP");
		OK(rdma_disconnect(id) == -1 && errno == EOPNOTSUPP, "rdma_disconnect: EOPNOTSUPP");
		OK(rdma_establish(id) == -1 && errno == EOPNOTSUPP, "rdma_establish: EOPNOTSUPP");
		OK(rdma_set_local_ece(id, NULL) == -1 && errno == EOPNOTSUPP,
		   "rdma_set_local_ece: EOPNOTSUPP");
		rdma_destroy_id(id);
	}
	OK(rsocket(AF_INET, SOCK_STREAM, 0) == -1 && errno == EOPNOTSUPP, "rsocket: EOPNOTSUPP");
	OK(rsend(3, "x", 1, 0) == -1 && errno == EBADF, "rsend on a non-rsocket: EBADF");
	OK(rclose(3) == -1 && errno == EBADF, "rclose on a non-rsocket: EBADF");

	/* rselect over a pipe: writable at once, readable after a write. */
	if (pipe(pfd) == 0) {
		FD_ZERO(&rd);
		FD_ZERO(&wr);
		FD_SET(pfd[0], &rd);
		FD_SET(pfd[1], &wr);
		n = rselect(pfd[1] + 1, &rd, &wr, NULL, &tv);
		OK(n == 1 && FD_ISSET(pfd[1], &wr) && !FD_ISSET(pfd[0], &rd),
		   "rselect: the empty pipe is writable, not readable (%d)", n);
		OK(write(pfd[1], "x", 1) == 1, "write to the pipe");
		FD_ZERO(&rd);
		FD_SET(pfd[0], &rd);
		n = rselect(pfd[0] + 1, &rd, NULL, NULL, NULL);
		OK(n == 1 && FD_ISSET(pfd[0], &rd), "rselect: readable after a write (%d)", n);
		close(pfd[0]);
		close(pfd[1]);
	}

	/* Verbs beyond UD: refused as a provider without them refuses. */
	list = ibv_get_device_list(NULL);
	ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	if (!ctx) {
		printf("Bail out! no device\n");
		return 100;
	}
	pd = ibv_alloc_pd(ctx);
	errno = 0;
	OK(ibv_import_device(-1) == NULL && errno == EOPNOTSUPP,
	   "ibv_import_device: NULL, EOPNOTSUPP");
	OK(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, 0) == NULL && errno == EOPNOTSUPP,
	   "ibv_reg_dmabuf_mr: NULL, EOPNOTSUPP");
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);

	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	return tap_done();
}
