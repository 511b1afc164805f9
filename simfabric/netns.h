/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * netns.h: network interfaces for the simulated devices, in a network namespace made
 * for them (simfab netns; netns.c says how they are laid out). Used by simfab only.
 */
#ifndef SIMFABRIC_NETNS_H
#define SIMFABRIC_NETNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sf.h"

/* The netdev name of device `dev`: ib<k> or eth<k>, k counting devices of its link. */
void sf_netns_ifname(const struct sf_fabric *fab, uint32_t dev, char *buf, size_t len);

/*
 * sf_netns_create - make network namespace `ns` with one interface per device of fab
 * (not removed), printing a table of them to out (NULL: nothing). Runs iproute2; needs
 * root. On failure the namespace is deleted again. Returns 0, or -1 with a message in
 * err.
 */
int sf_netns_create(const struct sf_fabric *fab, const char *ns, FILE *out, char *err,
		    size_t errlen);

/* sf_netns_delete - delete network namespace ns. Returns 0, or -1 with a message. */
int sf_netns_delete(const char *ns, char *err, size_t errlen);

#endif /* SIMFABRIC_NETNS_H */
