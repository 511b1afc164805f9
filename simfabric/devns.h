/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * devns.h: the /dev/infiniband nodes of the simulated devices, in a private mount
 * namespace (simfab devns; devns.c says how). Used by simfab only.
 */
#ifndef SIMFABRIC_DEVNS_H
#define SIMFABRIC_DEVNS_H

#include <stddef.h>

#include "sf.h"

/*
 * sf_devns_exec - exec argv (searched in PATH) in a new mount namespace in which
 * /dev/infiniband/uverbs<N> exists for every device number N of a fabric, and nothing
 * else changed. Needs CAP_SYS_ADMIN and overlayfs. Returns only on failure: -1 with a
 * message in err (the process may then be in the new namespace).
 */
int sf_devns_exec(char **argv, char *err, size_t errlen);

#endif /* SIMFABRIC_DEVNS_H */
