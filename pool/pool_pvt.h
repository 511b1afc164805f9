/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pool_pvt.h - what the files of pool/ share and nobody else uses: the metadata mapping
 * layout and the memory-region table.
 */
#ifndef IB2ROCE_POOL_PVT_H
#define IB2ROCE_POOL_PVT_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"

struct ibv_mr;

/* Offsets in the metadata mapping (pool.c). */
struct pool_layout {
	size_t off_depot;    /* struct pool_depot */
	size_t off_caches;   /* nworkers * cache_stride */
	size_t off_cells;    /* depot_cap cells */
	size_t off_meta;     /* nbufs struct pool_meta */
	size_t cache_stride; /* one struct pool_cache with 2 * cache_size slots, aligned */
	size_t len;	     /* whole mapping, page multiple */
	uint32_t depot_cap;
};

/* One registration of the data region (mr.c). */
struct pool_mr {
	struct ibv_pd *pd;
	struct ibv_mr *mr;
};

/* Compute the metadata layout for these parameters. */
void pool_layout(struct pool_layout *l, uint32_t nbufs, uint32_t nworkers, uint32_t cache_size);

/* Deregister every memory region and free the table (pool_free). */
void pool_mr_release_all(struct pool *pool);

#endif /* IB2ROCE_POOL_PVT_H */
