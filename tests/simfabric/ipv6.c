// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * RoCEv2 over IPv6 on the simulated fabric, checked against what Linux and rdma-core do
 * on an mlx5 port (the sources are named in docs/simfabric.md, "IPv6 on RoCE ports"):
 *  - the GID table of a RoCE port: fe80::<EUI-64> v1/v2, ::ffff:<ipv4> v1/v2, then the
 *    netdev's IPv6 address v1/v2 (ibv_query_gid, ibv_query_gid_ex, ibv_query_gid_table);
 *  - rdma_cm with AF_INET6: bind to the global or link-local address (the RoCE v2 entry
 *    of that address), resolve address and route, the source address chosen for an
 *    unbound id; rdma_join_multicast of an IPv6 group on a RoCE v2 port refused with
 *    ENOTSUPP (524) as cma_iboe_join_multicast does;
 *  - delivery to a QP attached (ibv_attach_mcast) to an IPv6 group: the 40-byte header
 *    is the IPv6 header, wc_flags GRH, the packet type in sl; IPv4 and IPv6 groups on one
 *    QP at once; a unicast IPv6 datagram and ibv_init_ah_from_wc's answer.
 * Uses the default topology: sim_roce0..3 with 198.19.0.N and fd00:0:0:1::N.
 * TAP output; the exit status is the number of failed checks (capped).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tap.h"
#include "tap_verbs.h"

#define MSG_LEN	  100
#define BUF_LEN	  (40 + 4096)
#define NBUF	  8
#define WAIT_MS	  3000
#define QKEY	  0x01234567u
#define ENOTSUPP_ 524 /* the kernel's ENOTSUPP as user space sees it */
#define GROUP6	  "ff0e::1234"
#define GROUP4	  "239.1.2.3"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct sockaddr *in6(struct sockaddr_in6 *a, const char *ip)
{
	memset(a, 0, sizeof(*a));
	a->sin6_family = AF_INET6;
	if (inet_pton(AF_INET6, ip, &a->sin6_addr) != 1)
		tap_bail(ip);
	return (struct sockaddr *)a;
}

static struct sockaddr *in4(struct sockaddr_in *a, const char *ip)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a->sin_addr);
	return (struct sockaddr *)a;
}

static bool gid_eq(const void *a, const char *text)
{
	uint8_t b[16];

	inet_pton(AF_INET6, text, b);
	return !memcmp(a, b, 16);
}

static struct rdma_cm_event *get_event(struct rdma_event_channel *ch)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, WAIT_MS) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* The next event's type and status (-1: none). */
static int next_event(struct rdma_event_channel *ch, int *status)
{
	struct rdma_cm_event *ev = get_event(ch);
	int type;

	if (!ev)
		return -1;
	type = ev->event;
	if (status)
		*status = ev->status;
	rdma_ack_cm_event(ev);
	return type;
}

/* ---- 1. the GID table ---- */

static void test_gid_table(void)
{
	/* sim_roce1: MAC 02:00:00:00:01:02, 198.19.0.2, fd00:0:0:1::2. */
	static const char *const want[] = {"fe80::ff:fe00:102", "fe80::ff:fe00:102",
					   "::ffff:198.19.0.2", "::ffff:198.19.0.2",
					   "fd00:0:0:1::2",	"fd00:0:0:1::2"};
	struct ibv_context *c = tap_open_dev("sim_roce1");
	struct ibv_gid_entry tab[16];
	struct ibv_port_attr pa;
	union ibv_gid g;
	ssize_t n;
	int ok = 1;

	for (int i = 0; i < 6; i++) {
		struct ibv_gid_entry e;
		uint32_t type = i % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;

		if (ibv_query_gid(c, 1, i, &g) || !gid_eq(g.raw, want[i]))
			ok = 0;
		OK(!ibv_query_gid_ex(c, 1, (uint32_t)i, &e, 0) && gid_eq(e.gid.raw, want[i]) &&
			      e.gid_type == type && e.gid_index == (uint32_t)i && e.port_num == 1,
		      "ibv_query_gid_ex %d: %s %s", i, want[i], i % 2 ? "RoCE v2" : "RoCE v1");
	}
	OK(ok, "ibv_query_gid 0-5: link-local, IPv4-mapped, IPv6, each v1 then v2");
	OK(!ibv_query_gid(c, 1, 6, &g) && gid_eq(g.raw, "::"), "entry 6 is empty");
	n = ibv_query_gid_table(c, tab, 16, 0);
	OK(n == 6 && gid_eq(tab[4].gid.raw, "fd00:0:0:1::2") &&
		      tab[4].gid_type == IBV_GID_TYPE_ROCE_V1 && tab[5].gid_index == 5 &&
		      tab[5].gid_type == IBV_GID_TYPE_ROCE_V2,
	      "ibv_query_gid_table: 6 entries, the IPv6 ones at 4 (v1) and 5 (v2) (%zd)", n);
	OK(!ibv_query_port(c, 1, &pa) && pa.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "sim_roce1 is Ethernet");
	ibv_close_device(c);
}

/* ---- 2. rdma_cm on IPv6 addresses ---- */

static void test_cm(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in6 a, b;
	struct rdma_cm_id *id;
	int st = 0, r, e;

	if (!ch)
		tap_bail("rdma_create_event_channel");

	/* Bind to the global address: the device, its RoCE v2 IPv6 GID as source. */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	OK(!rdma_bind_addr(id, in6(&a, "fd00:0:0:1::2")) && id->verbs &&
		      !strcmp(ibv_get_device_name(id->verbs->device), "sim_roce1"),
	      "bind fd00:0:0:1::2: sim_roce1");
	OK(gid_eq(id->route.addr.addr.ibaddr.sgid.raw, "fd00:0:0:1::2"),
	      "bound id's sgid is the IPv6 GID");
	OK(!rdma_resolve_addr(id, NULL, in6(&b, GROUP6), 1000) &&
		      next_event(ch, &st) == RDMA_CM_EVENT_ADDR_RESOLVED && !st,
	      "resolve ff0e::1234 from the bound id: ADDR_RESOLVED");
	OK(gid_eq(id->route.addr.addr.ibaddr.dgid.raw, GROUP6),
	      "dgid of a RoCE multicast destination: the group address itself");
	OK(!rdma_resolve_route(id, 1000) &&
		      next_event(ch, &st) == RDMA_CM_EVENT_ROUTE_RESOLVED && !st,
	      "resolve route: ROUTE_RESOLVED");
	/* cma_iboe_join_multicast: IPv6 groups on a RoCE v2 port are not supported. */
	errno = 0;
	r = rdma_join_multicast(id, in6(&b, GROUP6), NULL);
	e = errno;
	OK(r == -1 && e == ENOTSUPP_,
	      "rdma_join_multicast ff0e::1234 on RoCE v2: -1, errno 524 (ENOTSUPP) (%d %d)", r, e);
	rdma_destroy_id(id);

	/* The link-local address binds too, with its interface (sim_roce2: device 6,
	 * ifindex 106): the RoCE v2 entry 1. Without the interface: EINVAL; with
	 * another port's: ENODEV (cma_check_linklocal, cma_acquire_dev_by_src_ip). */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	errno = 0;
	r = rdma_bind_addr(id, in6(&a, "fe80::ff:fe00:103"));
	e = errno;
	OK(r == -1 && e == EINVAL, "bind fe80::ff:fe00:103 without sin6_scope_id: EINVAL (%d)",
	      e);
	a.sin6_scope_id = 105;
	errno = 0;
	r = rdma_bind_addr(id, (struct sockaddr *)&a);
	e = errno;
	OK(r == -1 && e == ENODEV, "bind it with scope 105 (sim_roce1's netdev): ENODEV (%d)",
	      e);
	a.sin6_scope_id = 106;
	OK(!rdma_bind_addr(id, (struct sockaddr *)&a) && id->verbs &&
		      !strcmp(ibv_get_device_name(id->verbs->device), "sim_roce2") &&
		      gid_eq(id->route.addr.addr.ibaddr.sgid.raw, "fe80::ff:fe00:103"),
	      "bind fe80::ff:fe00:103 scope 106 (link-local of sim_roce2): sim_roce2");
	rdma_destroy_id(id);

	/* An address no device or host interface owns. */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	errno = 0;
	OK(rdma_bind_addr(id, in6(&a, "fd00:0:0:9::1")) == -1 && errno == EADDRNOTAVAIL,
	      "bind fd00:0:0:9::1: EADDRNOTAVAIL");
	rdma_destroy_id(id);

	/* The IPv4-mapped GID of a port is not an IPv6 address of its netdev. */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	errno = 0;
	r = rdma_bind_addr(id, in6(&a, "::ffff:198.19.0.2"));
	e = errno;
	OK(r == -1 && e == EADDRNOTAVAIL, "bind ::ffff:198.19.0.2: EADDRNOTAVAIL (%d)", e);
	rdma_destroy_id(id);

	/* Unbound: the route to fd00:0:0:1::3 leaves by the first port on that prefix,
	 * which gives the source address. */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	OK(!rdma_resolve_addr(id, NULL, in6(&b, "fd00:0:0:1::3"), 1000) &&
		      next_event(ch, &st) == RDMA_CM_EVENT_ADDR_RESOLVED && !st && id->verbs &&
		      !strcmp(ibv_get_device_name(id->verbs->device), "sim_roce0"),
	      "unbound resolve fd00:0:0:1::3: sim_roce0");
	OK(gid_eq(&((struct sockaddr_in6 *)rdma_get_local_addr(id))->sin6_addr,
		     "fd00:0:0:1::1") &&
		      gid_eq(id->route.addr.addr.ibaddr.sgid.raw, "fd00:0:0:1::1"),
	      "its source address and sgid: fd00:0:0:1::1");
	rdma_destroy_id(id);

	/* Unbound to a prefix no port has: ADDR_ERROR. */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	r = rdma_resolve_addr(id, NULL, in6(&b, "fd00:0:0:7::3"), 1000);
	e = r ? -1 : next_event(ch, &st);
	OK(e == RDMA_CM_EVENT_ADDR_ERROR && st == -ENODEV,
	      "unbound resolve fd00:0:0:7::3: ADDR_ERROR -ENODEV (event %d status %d)", e, st);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- 3. delivery ---- */

struct ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* An rdma_cm UD endpoint bound to `ip` (IPv4 or IPv6), with NBUF receives posted. */
static void ep_open(struct ep *e, const char *ip)
{
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;
	struct ibv_qp_init_attr qa = {0};

	memset(e, 0, sizeof(*e));
	e->ch = rdma_create_event_channel();
	if (!e->ch || rdma_create_id(e->ch, &e->id, e, RDMA_PS_UDP))
		tap_bail("rdma_create_id");
	if (rdma_bind_addr(e->id, strchr(ip, ':') ? in6(&a6, ip) : in4(&a4, ip)))
		tap_bail("rdma_bind_addr");
	e->pd = ibv_alloc_pd(e->id->verbs);
	e->cq = ibv_create_cq(e->id->verbs, 64, NULL, NULL, 0);
	if (!e->pd || !e->cq)
		tap_bail("pd/cq");
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = NBUF;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(e->id, e->pd, &qa))
		tap_bail("rdma_create_qp");
	e->buf = calloc(NBUF + 1, BUF_LEN);
	e->mr = ibv_reg_mr(e->pd, e->buf, (size_t)(NBUF + 1) * BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!e->buf || !e->mr)
		tap_bail("ibv_reg_mr");
	for (int i = 0; i < NBUF; i++) {
		struct ibv_sge sge = {(uintptr_t)(e->buf + (size_t)i * BUF_LEN), BUF_LEN,
				      e->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(e->id->qp, &wr, &bad))
			tap_bail("ibv_post_recv");
	}
}

static void ep_close(struct ep *e)
{
	rdma_destroy_qp(e->id);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	rdma_destroy_id(e->id);
	rdma_destroy_event_channel(e->ch);
	free(e->buf);
}

static int send_to(struct ep *e, struct ibv_ah *ah, uint32_t qpn, uint8_t fill)
{
	uint8_t *s = e->buf + (size_t)NBUF * BUF_LEN;
	struct ibv_sge sge = {(uintptr_t)s, MSG_LEN, e->mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;

	memset(s, fill, MSG_LEN);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(e->id->qp, &wr, &bad);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (now_ms() < end) {
		int r = ibv_poll_cq(cq, 1, wc);

		if (r)
			return r;
	}
	return 0;
}

static void test_delivery(void)
{
	struct ep rx, tx, tx4;
	struct ibv_ah_attr aa = {0}, back;
	struct ibv_ah *ah6, *ah4, *ahu;
	struct sockaddr_in g4;
	struct rdma_cm_event *ev;
	union ibv_gid mg;
	struct ibv_wc wc;
	const uint8_t *h;
	uint32_t vtf, pad = (4 - (MSG_LEN & 3)) & 3;
	bool got4 = false, got6 = false;

	ep_open(&rx, "fd00:0:0:1::2");
	ep_open(&tx, "fd00:0:0:1::4");
	ep_open(&tx4, "198.19.0.3");
	/* The receiver takes the IPv6 group with verbs (what an application does on a
	 * RoCE v2 port, rdma_cm refusing it) and the IPv4 group through rdma_cm. */
	inet_pton(AF_INET6, GROUP6, mg.raw);
	OK(!ibv_attach_mcast(rx.id->qp, &mg, 0), "ibv_attach_mcast ff0e::1234 on RoCE");
	OK(!rdma_join_multicast(rx.id, in4(&g4, GROUP4), NULL) && (ev = get_event(rx.ch)) &&
		      ev->event == RDMA_CM_EVENT_MULTICAST_JOIN && !rdma_ack_cm_event(ev),
	      "the same QP joins 239.1.2.3 with rdma_cm");
	if (rdma_join_multicast(tx4.id, in4(&g4, GROUP4), NULL))
		tap_bail("rdma_join_multicast 239.1.2.3");
	ev = get_event(tx4.ch);
	if (!ev || ev->event != RDMA_CM_EVENT_MULTICAST_JOIN)
		tap_bail("IPv4 sender's MULTICAST_JOIN");

	/* The IPv6 AH: the group, the sender's RoCE v2 IPv6 GID (index 5). */
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = mg;
	aa.grh.sgid_index = 5;
	aa.grh.hop_limit = 64;
	aa.grh.traffic_class = 0x28;
	aa.grh.flow_label = 0x12345;
	ah6 = ibv_create_ah(tx.pd, &aa);
	OK(ah6 != NULL, "ibv_create_ah with an IPv6 GRH on RoCE");
	OK(ah6 && !send_to(&tx, ah6, 0xffffff, 0x66), "post an IPv6 multicast datagram");
	ah4 = ibv_create_ah(tx4.pd, &ev->param.ud.ah_attr);
	OK(ah4 && !send_to(&tx4, ah4, ev->param.ud.qp_num, 0x44),
	   "post an IPv4 multicast datagram to the same receiver");
	rdma_ack_cm_event(ev);

	for (int i = 0; i < 2; i++) {
		if (poll_one(rx.cq, &wc) != 1 || wc.status != IBV_WC_SUCCESS)
			break;
		h = rx.buf + (size_t)wc.wr_id * BUF_LEN;
		if (h[40] == 0x66 && !got6) {
			got6 = true;
			vtf = (uint32_t)h[0] << 24 | h[1] << 16 | h[2] << 8 | h[3];
			OK(wc.wc_flags & IBV_WC_GRH, "IPv6: wc_flags has IBV_WC_GRH");
			/* mlx5 (providers/mlx5/cq.c): RoCE packet type in sl, IPv6 0x9. */
			OK(wc.sl == 0x9, "IPv6: sl 0x9 (RoCEv2 over IPv6) (%u)", wc.sl);
			OK(wc.byte_len == 40 + MSG_LEN, "IPv6: byte_len 40 + payload");
			OK(vtf >> 28 == 6 && ((vtf >> 20) & 0xff) == 0x28 &&
				      (vtf & 0xfffff) == 0x12345,
			      "IPv6 header: version 6, traffic class 0x28, flow label 0x12345");
			OK((h[4] << 8 | h[5]) == 8 + 12 + 8 + MSG_LEN + (int)pad + 4,
			      "IPv6 payload length = UDP + BTH + DETH + payload + ICRC (%u)",
			      h[4] << 8 | h[5]);
			OK(h[6] == 17 && h[7] == 64, "IPv6 next header UDP (17), hop limit 64");
			OK(gid_eq(h + 8, "fd00:0:0:1::4") && gid_eq(h + 24, GROUP6),
			      "IPv6 source fd00:0:0:1::4, destination ff0e::1234");
			OK(ibv_init_ah_from_wc(rx.id->verbs, 1, &wc, (struct ibv_grh *)h,
						  &back) != 0,
			      "ibv_init_ah_from_wc refuses a multicast destination (rdma-core)");
		} else if (h[40] == 0x44 && !got4) {
			got4 = true;
			OK(h[20] == 0x45 && h[29] == 17 && h[36] == 239 && wc.sl == 0xa,
			      "IPv4 datagram on the same QP: IPv4 header at 20, sl 0xa");
		}
	}
	OK(got6 && got4, "the QP received the IPv6 and the IPv4 group's datagram");

	/* Unicast over IPv6 to the receiver's QP, and the reply AH from the completion. */
	aa.grh.dgid = rx.id->route.addr.addr.ibaddr.sgid; /* fd00:0:0:1::2 */
	ahu = ibv_create_ah(tx.pd, &aa);
	OK(ahu && !send_to(&tx, ahu, rx.id->qp->qp_num, 0x77), "post an IPv6 unicast");
	if (poll_one(rx.cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS) {
		h = rx.buf + (size_t)wc.wr_id * BUF_LEN;
		OK(h[40] == 0x77 && gid_eq(h + 24, "fd00:0:0:1::2") && h[6] == 17,
		      "unicast: IPv6 destination fd00:0:0:1::2, next header UDP");
		memset(&back, 0, sizeof(back));
		int r = ibv_init_ah_from_wc(rx.id->verbs, 1, &wc, (struct ibv_grh *)h, &back);

		OK(!r && back.is_global && gid_eq(back.grh.dgid.raw, "fd00:0:0:1::4") &&
			      back.grh.sgid_index == 5 && back.grh.hop_limit == 64 &&
			      back.grh.traffic_class == 0x28,
		      "ibv_init_ah_from_wc: dgid = sender, sgid_index 5 (own IPv6 v2 entry), "
		      "hop limit and traffic class as received (sgid_index %u)",
		      back.grh.sgid_index);
	} else {
		OK(0, "unicast: IPv6 datagram received");
	}
	if (ahu)
		ibv_destroy_ah(ahu);
	if (ah6)
		ibv_destroy_ah(ah6);
	if (ah4)
		ibv_destroy_ah(ah4);
	ibv_detach_mcast(rx.id->qp, &mg, 0);
	rdma_leave_multicast(rx.id, (struct sockaddr *)&g4);
	rdma_leave_multicast(tx4.id, (struct sockaddr *)&g4);
	ep_close(&tx4);
	ep_close(&tx);
	ep_close(&rx);
}

/* ---- 4. simfab capture: RoCEv2 over IPv6 as Ethernet/IPv6/UDP 4791 ---- */

/* Wait until `path` holds `text` (or the child exited). */
static bool wait_text(const char *path, const char *text, pid_t child)
{
	uint64_t end = now_ms() + 10000;
	char buf[512];

	while (now_ms() < end) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		if (strstr(buf, text))
			return true;
		if (waitpid(child, NULL, WNOHANG) == child)
			return false;
		usleep(10000);
	}
	return false;
}

/* Lines tshark prints for `filter` on `file`; -1 if it cannot run. */
static int tshark_count(const char *file, const char *filter)
{
	char cmd[1024], line[1024];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "tshark -n -r '%s' -Y '%s' 2>/dev/null", file, filter);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		n++;
	return pclose(p) ? -1 : n;
}

static void test_capture(void)
{
	const char *simfab = getenv("SIMFAB");
	char dir[] = "/tmp/sf-ipv6-XXXXXX", file[64], err[64];
	struct ibv_ah_attr aa = {0};
	struct ibv_ah *ah;
	struct ep rx, tx;
	union ibv_gid mg;
	struct ibv_wc wc;
	int status = -1, n;
	pid_t pid;

	if (!simfab || system("command -v tshark >/dev/null 2>&1")) {
		printf("# SIMFAB or tshark missing: capture not checked\n");
		return;
	}
	if (!mkdtemp(dir))
		tap_bail("mkdtemp");
	snprintf(file, sizeof(file), "%s/f.pcapng", dir);
	snprintf(err, sizeof(err), "%s/cap.err", dir);
	pid = fork();
	if (pid < 0)
		tap_bail("fork");
	if (!pid) {
		if (!freopen(err, "w", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(simfab, simfab, "capture", file, "-c", "1", "sim_roce1", (char *)NULL);
		_exit(127);
	}
	OK(wait_text(err, "capturing to", pid), "simfab capture started");
	ep_open(&rx, "fd00:0:0:1::2");
	ep_open(&tx, "fd00:0:0:1::4");
	inet_pton(AF_INET6, GROUP6, mg.raw);
	if (ibv_attach_mcast(rx.id->qp, &mg, 0))
		tap_bail("ibv_attach_mcast");
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = mg;
	aa.grh.sgid_index = 5;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(tx.pd, &aa);
	OK(ah && !send_to(&tx, ah, 0xffffff, 0x66) && poll_one(rx.cq, &wc) == 1,
	      "capture: one IPv6 datagram sent and received");
	waitpid(pid, &status, 0);
	OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "simfab capture -c 1 exits 0");
	n = tshark_count(file,
			 "eth.type == 0x86dd && eth.dst == 33:33:00:00:12:34 && "
			 "ipv6.src == fd00:0:0:1::4 && ipv6.dst == ff0e::1234 && "
			 "ipv6.hlim == 64 && udp.dstport == 4791 && "
			 "infiniband.bth.opcode == 100 && infiniband.bth.destqp == 0xffffff && "
			 "infiniband.deth.q_key == 0x01234567");
	OK(n == 1,
	      "tshark: Ethernet/IPv6/UDP 4791 to ff0e::1234 (MAC 33:33:00:00:12:34), BTH UD "
	      "SEND only, DETH Q_Key (%d)",
	      n);
	if (ah)
		ibv_destroy_ah(ah);
	ibv_detach_mcast(rx.id->qp, &mg, 0);
	ep_close(&tx);
	ep_close(&rx);
	unlink(file);
	unlink(err);
	rmdir(dir);
}

/* ---- 5. the topology file's ipv6 key (simfab topology FILE checks and prints it) ---- */

/* Run `simfab topology` on `text`; its output (stdout and stderr) in out; exit status. */
static int topo_run(const char *simfab, const char *dir, const char *text, char *out, size_t len)
{
	char file[128], cmd[512];
	FILE *f, *p;
	size_t n;
	int st;

	snprintf(file, sizeof(file), "%s/t.topo", dir);
	f = fopen(file, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		tap_bail("topology file");
	snprintf(cmd, sizeof(cmd), "SIMFABRIC=t-ipv6-topo '%s' topology '%s' 2>&1", simfab, file);
	p = popen(cmd, "r");
	if (!p)
		tap_bail("popen");
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	st = pclose(p);
	unlink(file);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_topology(void)
{
	const char *simfab = getenv("SIMFAB");
	char dir[] = "/tmp/sf-ipv6t-XXXXXX", out[4096];
	int rc;

	if (!simfab) {
		printf("# SIMFAB not set: topology file not checked\n");
		return;
	}
	if (!mkdtemp(dir))
		tap_bail("mkdtemp");
	rc = topo_run(simfab, dir,
		      "segment e eth\n"
		      "device a segment e ipv4 10.0.0.1/24 ipv6 2001:db8::1/48\n"
		      "device b segment e ipv6 none\n"
		      "device c segment e\n",
		      out, sizeof(out));
	OK(rc == 0 && strstr(out, "ipv6 2001:db8::1/48") && strstr(out, "ipv6 none") &&
		      strstr(out, "ipv6 fd00::3/64"),
	      "ipv6 ADDR/LEN, ipv6 none and the default fd00:0:0:<segment>::<position>/64");
	rc = topo_run(simfab, dir, "segment e eth\ndevice a segment e ipv6 fe80::1\n", out,
		      sizeof(out));
	OK(rc == 1 && strstr(out, ":2: ipv6: 'fe80::1' is not a global unicast address"),
	      "a link-local ipv6 is refused, naming the line and the item");
	rc = topo_run(simfab, dir, "segment e eth\ndevice a segment e ipv6 ff0e::1\n", out,
		      sizeof(out));
	OK(rc == 1 && strstr(out, "ipv6: 'ff0e::1'"), "a multicast ipv6 is refused");
	rc = topo_run(simfab, dir,
		      "segment e eth\ndevice a segment e ipv6 fd00::2\ndevice b segment e\n", out,
		      sizeof(out));
	OK(rc == 1 && strstr(out, ":3: ipv6 fd00::2 already used by a"),
	      "an ipv6 used twice (here by b's default) is refused");
	rc = topo_run(simfab, dir, "segment i ib\ndevice a segment i ipv6 fd00::5\n", out,
		      sizeof(out));
	OK(rc == 1 && strstr(out, "ipv6: only Ethernet devices have one"),
	      "ipv6 on an IB device is refused");
	rmdir(dir);
}

int main(void)
{
	int (*reset)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sf_reset");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	test_gid_table();
	test_cm();
	test_delivery();
	test_capture();
	test_topology();
	if (reset && getenv("SIMFABRIC"))
		reset(getenv("SIMFABRIC"));
	return tap_done();
}
