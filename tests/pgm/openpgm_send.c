/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * openpgm_send.c NETWORK COUNT LINGER_MS
 *
 * OpenPGM sender for the interoperability test: waits for the receiver to join, sends
 * COUNT small messages and one message larger than the MTU (fragmented, OPT_FRAGMENT),
 * then keeps servicing the socket for LINGER_MS so that NAKs get NCFs and repairs
 * (RDATA), and closes (flushing). Exit 0 when everything was handed to OpenPGM.
 *
 * The large message goes through pgm_send_skbv(): in Debian's OpenPGM 5.3.128,
 * pgm_send()/pgm_sendv() of a multi-fragment APDU crash in the SSE checksum-and-copy
 * routine (an aligned store to a misaligned fragment buffer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openpgm_common.h"

#define STARTUP_MS    400  /* SPMs before data, so the receiver knows the source */
#define GAP_MS	      20   /* between messages */
#define FRAGMENT_DATA 1400 /* bytes per fragment, below the MTU's 1428 */
#define FRAGMENTS     3
#define BIG_MESSAGE   (FRAGMENTS * FRAGMENT_DATA - 200) /* 4000 bytes */

/* Header room OpenPGM needs in front of an skb's data; exported, not declared. */
extern size_t pgm_pkt_offset(bool can_fragment, sa_family_t pgmcc_family);
#define SEND_TIMEOUT_MS 2000

static bool send_one(pgm_sock_t *sock, const void *buf, size_t len)
{
	long long deadline = opgm_now_ms() + SEND_TIMEOUT_MS;

	while (opgm_now_ms() < deadline) {
		int status = pgm_send(sock, buf, len, NULL);

		if (status == PGM_IO_STATUS_NORMAL)
			return true;
		if (status != PGM_IO_STATUS_WOULD_BLOCK && status != PGM_IO_STATUS_RATE_LIMITED &&
		    status != PGM_IO_STATUS_CONGESTION) {
			fprintf(stderr, "openpgm_send: pgm_send status %d\n", status);
			return false;
		}
		if (!opgm_service(sock, opgm_now_ms() + 1, NULL, NULL))
			return false;
	}
	return false;
}

/* One APDU in FRAGMENTS pieces; OpenPGM takes ownership of the skbs. */
static bool send_big(pgm_sock_t *sock)
{
	struct pgm_sk_buff_t *skb[FRAGMENTS];
	size_t left = BIG_MESSAGE, bytes = 0;
	int status;

	for (int i = 0; i < FRAGMENTS; i++) {
		size_t n = left < FRAGMENT_DATA ? left : FRAGMENT_DATA;
		char *p;

		skb[i] = pgm_alloc_skb(OPGM_MTU);
		pgm_skb_reserve(skb[i], (uint16_t)pgm_pkt_offset(true, AF_UNSPEC));
		p = pgm_skb_put(skb[i], (uint16_t)n);
		for (size_t j = 0; j < n; j++)
			p[j] = (char)('a' + (BIG_MESSAGE - left + j) % 26);
		left -= n;
	}
	status = pgm_send_skbv(sock, skb, FRAGMENTS, true, &bytes);
	if (status != PGM_IO_STATUS_NORMAL || bytes != BIG_MESSAGE) {
		fprintf(stderr, "openpgm_send: pgm_send_skbv status %d, %zu bytes\n", status,
			bytes);
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	pgm_sock_t *sock;
	int count, linger;

	if (argc != 4) {
		fprintf(stderr, "usage: %s NETWORK COUNT LINGER_MS\n", argv[0]);
		return 2;
	}
	count = atoi(argv[2]);
	linger = atoi(argv[3]);
	sock = opgm_open(argv[1], "ib2roce-pgm-interop-sender", OPGM_SENDER);
	if (!sock)
		return 1;
	if (!opgm_service(sock, opgm_now_ms() + STARTUP_MS, NULL, NULL))
		return 1;
	for (int i = 0; i < count; i++) {
		char msg[32];

		snprintf(msg, sizeof(msg), "message %d", i);
		if (!send_one(sock, msg, strlen(msg) + 1)) {
			fprintf(stderr, "openpgm_send: send %d failed\n", i);
			return 1;
		}
		if (!opgm_service(sock, opgm_now_ms() + GAP_MS, NULL, NULL))
			return 1;
	}
	if (!send_big(sock))
		return 1;
	if (!opgm_service(sock, opgm_now_ms() + linger, NULL, NULL))
		return 1;
	pgm_close(sock, true);
	pgm_shutdown();
	printf("openpgm_send: sent %d messages and one of %d bytes\n", count, BIG_MESSAGE);
	return 0;
}
