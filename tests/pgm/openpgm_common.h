/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * openpgm_common.h - what the OpenPGM test sender and receiver share: socket creation
 * with UDP encapsulation bound by IP address, and a service loop that runs OpenPGM's
 * timers and processes incoming packets (NAKs, SPMs, NCFs, repairs) until a deadline.
 * These programs exist only to produce real PGM traffic from an independent
 * implementation (Debian libpgm-dev, OpenPGM 5.3) for tests/pgm/interop.sh.
 */
#ifndef TESTS_PGM_OPENPGM_COMMON_H
#define TESTS_PGM_OPENPGM_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <pgm/pgm.h>

/*
 * UDP encapsulation ports. OpenPGM's defaults differ (3055 unicast, 3056 multicast), but
 * its receive socket is bound to the multicast port only, so a unicast NAK to the
 * source's 3055 meets a closed port. Using one port for both, as OpenPGM's examples do,
 * makes NAKs reach the sender.
 */
#define OPGM_UCAST_PORT 3056
#define OPGM_MCAST_PORT 3056
#define OPGM_DATA_PORT	7500 /* PGM data-destination port */
#define OPGM_MTU	1500
#define OPGM_WINDOW	200 /* transmit / receive window, in SQNs */

enum opgm_role { OPGM_SENDER, OPGM_RECEIVER };

/*
 * Create, configure, bind and connect a PGM socket for network (e.g.
 * "192.0.2.1;239.192.0.1") with a GSI derived from gsi_name. Returns NULL and prints the
 * reason on failure.
 */
pgm_sock_t *opgm_open(const char *network, const char *gsi_name, enum opgm_role role);

/* Milliseconds on the monotonic clock. */
long long opgm_now_ms(void);

/*
 * Run the socket until deadline_ms (monotonic): timers fire, NAKs are answered.
 * Received data (receiver) is passed to on_data; on_data returns true to stop early.
 * Returns false on a PGM error or an unrecoverable loss (reset).
 */
bool opgm_service(pgm_sock_t *sock, long long deadline_ms,
		  bool (*on_data)(const void *buf, size_t len, void *arg), void *arg);

#endif /* TESTS_PGM_OPENPGM_COMMON_H */
