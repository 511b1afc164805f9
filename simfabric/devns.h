/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * devns.h: the /dev/infiniband nodes of the simulated devices, in a private mount
 * namespace, optionally in a network namespace of simfab netns (simfab exec; devns.c
 * says how). Used by simfab only.
 */
#ifndef SIMFABRIC_DEVNS_H
#define SIMFABRIC_DEVNS_H

#include <stddef.h>

#include "sf.h"

/*
 * sf_devns_exec - exec argv (searched in PATH) in a new mount namespace in which
 * /dev/infiniband holds umad<N>, issm<N> and uverbs<N> for every device index N of fab
 * (not removed) and nothing else of /dev changed; with ns (not NULL), in network
 * namespace ns (/run/netns/ns) with its sysfs on /sys, as `ip netns exec`. Needs
 * CAP_SYS_ADMIN and overlayfs. Returns only on failure: -1 with a message in err (the
 * process may then be in the new namespaces).
 */
int sf_devns_exec(const struct sf_fabric *fab, const char *ns, char **argv, char *err,
		  size_t errlen);

#endif /* SIMFABRIC_DEVNS_H */
