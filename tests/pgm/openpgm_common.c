/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * openpgm_common.c - see openpgm_common.h. OpenPGM API usage follows its documented
 * socket interface (pgm_socket, pgm_setsockopt, pgm_bind3, pgm_connect, pgm_recvfrom).
 */
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "openpgm_common.h"

#define MS_PER_S  1000LL
#define NS_PER_MS 1000000LL
#define US_PER_MS 1000LL
#define RECV_BUF  65536
#define MAX_RTE	  (40 * 1000 * 1000) /* bytes per second: the bucket must hold a whole APDU */
#define HOPS	  16

long long opgm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * MS_PER_S + ts.tv_nsec / NS_PER_MS;
}

static void report(const char *what, pgm_error_t *err)
{
	fprintf(stderr, "openpgm: %s: %s\n", what, err && err->message ? err->message : "failed");
	if (err)
		pgm_error_free(err);
}

static bool set_int(pgm_sock_t *sock, int opt, int v)
{
	return pgm_setsockopt(sock, IPPROTO_PGM, opt, &v, sizeof(v));
}

static bool configure(pgm_sock_t *sock, enum opgm_role role)
{
	bool ok = set_int(sock, PGM_UDP_ENCAP_UCAST_PORT, OPGM_UCAST_PORT) &&
		  set_int(sock, PGM_UDP_ENCAP_MCAST_PORT, OPGM_MCAST_PORT) &&
		  set_int(sock, PGM_MTU, OPGM_MTU);

	if (role == OPGM_SENDER) {
		/* SPMs every 100 ms after data, ambient ones every second. */
		const int heartbeat[] = {pgm_msecs(100), pgm_msecs(100), pgm_msecs(100),
					 pgm_msecs(100), pgm_msecs(1000)};

		ok = ok && set_int(sock, PGM_SEND_ONLY, 1) &&
		     set_int(sock, PGM_TXW_SQNS, OPGM_WINDOW) &&
		     set_int(sock, PGM_TXW_MAX_RTE, MAX_RTE) &&
		     set_int(sock, PGM_AMBIENT_SPM, pgm_secs(1)) &&
		     pgm_setsockopt(sock, IPPROTO_PGM, PGM_HEARTBEAT_SPM, heartbeat,
				    sizeof(heartbeat));
	} else {
		/* Quick NAKs so that the loss is repaired well within the test's time. */
		ok = ok && set_int(sock, PGM_RECV_ONLY, 1) && set_int(sock, PGM_PASSIVE, 0) &&
		     set_int(sock, PGM_RXW_SQNS, OPGM_WINDOW) &&
		     set_int(sock, PGM_PEER_EXPIRY, pgm_secs(30)) &&
		     set_int(sock, PGM_SPMR_EXPIRY, pgm_msecs(250)) &&
		     set_int(sock, PGM_NAK_BO_IVL, pgm_msecs(50)) &&
		     set_int(sock, PGM_NAK_RPT_IVL, pgm_msecs(300)) &&
		     set_int(sock, PGM_NAK_RDATA_IVL, pgm_msecs(500)) &&
		     set_int(sock, PGM_NAK_DATA_RETRIES, 20) &&
		     set_int(sock, PGM_NAK_NCF_RETRIES, 20);
	}
	return ok;
}

pgm_sock_t *opgm_open(const char *network, const char *gsi_name, enum opgm_role role)
{
	struct pgm_addrinfo_t *res = NULL;
	struct pgm_interface_req_t if_req;
	struct pgm_sockaddr_t addr;
	pgm_error_t *err = NULL;
	pgm_sock_t *sock = NULL;

	if (!pgm_init(&err)) {
		report("pgm_init", err);
		return NULL;
	}
	if (!pgm_getaddrinfo(network, NULL, &res, &err)) {
		report("pgm_getaddrinfo", err);
		return NULL;
	}
	if (!pgm_socket(&sock, AF_INET, SOCK_SEQPACKET, IPPROTO_UDP, &err)) {
		report("pgm_socket", err);
		goto fail;
	}
	if (!configure(sock, role)) {
		report("pgm_setsockopt", NULL);
		goto fail;
	}

	memset(&addr, 0, sizeof(addr));
	addr.sa_port = OPGM_DATA_PORT;
	addr.sa_addr.sport = DEFAULT_DATA_SOURCE_PORT; /* random TSI port */
	if (!pgm_gsi_create_from_string(&addr.sa_addr.gsi, gsi_name, -1)) {
		report("pgm_gsi_create_from_string", NULL);
		goto fail;
	}
	memset(&if_req, 0, sizeof(if_req));
	if_req.ir_interface = res->ai_recv_addrs[0].gsr_interface;
	memcpy(&if_req.ir_address, &res->ai_recv_addrs[0].gsr_addr, sizeof(if_req.ir_address));
	if (!pgm_bind3(sock, &addr, sizeof(addr), &if_req, sizeof(if_req), &if_req, sizeof(if_req),
		       &err)) {
		report("pgm_bind3", err);
		goto fail;
	}
	for (unsigned i = 0; i < res->ai_recv_addrs_len; i++)
		if (!pgm_setsockopt(sock, IPPROTO_PGM, PGM_JOIN_GROUP, &res->ai_recv_addrs[i],
				    sizeof(struct group_req))) {
			report("PGM_JOIN_GROUP", NULL);
			goto fail;
		}
	if (!pgm_setsockopt(sock, IPPROTO_PGM, PGM_SEND_GROUP, &res->ai_send_addrs[0],
			    sizeof(struct group_req)) ||
	    !set_int(sock, PGM_MULTICAST_LOOP, 0) || !set_int(sock, PGM_MULTICAST_HOPS, HOPS) ||
	    !set_int(sock, PGM_NOBLOCK, 1)) {
		report("pgm_setsockopt", NULL);
		goto fail;
	}
	if (!pgm_connect(sock, &err)) {
		report("pgm_connect", err);
		goto fail;
	}
	pgm_freeaddrinfo(res);
	return sock;
fail:
	if (sock)
		pgm_close(sock, false);
	pgm_freeaddrinfo(res);
	return NULL;
}

bool opgm_service(pgm_sock_t *sock, long long deadline_ms,
		  bool (*on_data)(const void *buf, size_t len, void *arg), void *arg)
{
	static char buf[RECV_BUF];

	for (;;) {
		long long left = deadline_ms - opgm_now_ms();
		struct pgm_sockaddr_t from;
		socklen_t fromlen = sizeof(from);
		pgm_error_t *err = NULL;
		struct timeval tv;
		socklen_t optlen = sizeof(tv);
		fd_set readfds;
		size_t len = 0;
		int status, nfds = 0;

		if (left <= 0)
			return true;
		status = pgm_recvfrom(sock, buf, sizeof(buf), 0, &len, &from, &fromlen, &err);
		switch (status) {
		case PGM_IO_STATUS_NORMAL:
			if (on_data && on_data(buf, len, arg))
				return true;
			continue;
		case PGM_IO_STATUS_TIMER_PENDING:
			pgm_getsockopt(sock, IPPROTO_PGM, PGM_TIME_REMAIN, &tv, &optlen);
			break;
		case PGM_IO_STATUS_RATE_LIMITED:
			pgm_getsockopt(sock, IPPROTO_PGM, PGM_RATE_REMAIN, &tv, &optlen);
			break;
		case PGM_IO_STATUS_WOULD_BLOCK:
			tv.tv_sec = left / MS_PER_S;
			tv.tv_usec = (left % MS_PER_S) * US_PER_MS;
			break;
		case PGM_IO_STATUS_RESET:
			report("unrecoverable data loss", err);
			return false;
		default:
			report("pgm_recvfrom", err);
			return false;
		}
		if (tv.tv_sec * MS_PER_S + tv.tv_usec / US_PER_MS > left) {
			tv.tv_sec = left / MS_PER_S;
			tv.tv_usec = (left % MS_PER_S) * US_PER_MS;
		}
		FD_ZERO(&readfds);
		pgm_select_info(sock, &readfds, NULL, &nfds);
		select(nfds, &readfds, NULL, NULL, &tv);
	}
}
