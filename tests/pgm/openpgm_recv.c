/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * openpgm_recv.c NETWORK COUNT TIMEOUT_MS
 *
 * OpenPGM receiver for the interoperability test: receives until COUNT messages have
 * been delivered (OpenPGM delivers them in order, so a lost packet must have been
 * NAKed and repaired), or fails after TIMEOUT_MS or on unrecoverable loss.
 */
#include <stdio.h>
#include <stdlib.h>

#include "openpgm_common.h"

struct progress {
	int want, got;
	size_t bytes;
};

static bool on_data(const void *buf, size_t len, void *arg)
{
	struct progress *p = arg;

	(void)buf;
	p->got++;
	p->bytes += len;
	return p->got >= p->want;
}

int main(int argc, char **argv)
{
	struct progress p = {0};
	pgm_sock_t *sock;
	bool ok;

	if (argc != 4) {
		fprintf(stderr, "usage: %s NETWORK COUNT TIMEOUT_MS\n", argv[0]);
		return 2;
	}
	p.want = atoi(argv[2]);
	sock = opgm_open(argv[1], "ib2roce-pgm-interop-receiver", OPGM_RECEIVER);
	if (!sock)
		return 1;
	ok = opgm_service(sock, opgm_now_ms() + atoi(argv[3]), on_data, &p);
	printf("openpgm_recv: %d of %d messages, %zu bytes\n", p.got, p.want, p.bytes);
	pgm_close(sock, true);
	pgm_shutdown();
	return ok && p.got == p.want ? 0 : 1;
}
