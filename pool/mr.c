// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mr.c - registration of the data region with protection domains: one memory region
 * per PD, looked up by PD, so that each device gets its lkey once.
 */
#include <errno.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

#include "pool.h"
#include "pool_pvt.h"

static struct pool_mr *pool_mr_find(struct pool *pool, struct ibv_pd *pd)
{
	for (uint32_t i = 0; i < pool->nmrs; i++)
		if (pool->mrs[i].pd == pd)
			return &pool->mrs[i];
	return NULL;
}

int pool_register(struct pool *pool, struct ibv_pd *pd, uint32_t *lkey)
{
	struct pool_mr *m;
	struct ibv_mr *mr;

	if (!pd)
		return -EINVAL;
	m = pool_mr_find(pool, pd);
	if (m) {
		*lkey = m->mr->lkey;
		return 0;
	}
	if (pool->nmrs == pool->mrs_cap) {
		uint32_t cap = pool->mrs_cap ? 2 * pool->mrs_cap : 4;
		struct pool_mr *n = realloc(pool->mrs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pool->mrs = n;
		pool->mrs_cap = cap;
	}
	errno = 0;
	mr = ibv_reg_mr(pd, pool->data, (size_t)pool->nbufs * pool->buf_size,
			IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return errno ? -errno : -EIO;
	pool->mrs[pool->nmrs].pd = pd;
	pool->mrs[pool->nmrs].mr = mr;
	pool->nmrs++;
	*lkey = mr->lkey;
	return 0;
}

int pool_unregister(struct pool *pool, struct ibv_pd *pd)
{
	struct pool_mr *m = pool_mr_find(pool, pd);
	int ret;

	if (!m)
		return -ENOENT;
	/* ibv_dereg_mr returns a positive errno. */
	ret = ibv_dereg_mr(m->mr);
	if (ret)
		return -ret;
	*m = pool->mrs[--pool->nmrs];
	return 0;
}

void pool_mr_release_all(struct pool *pool)
{
	for (uint32_t i = 0; i < pool->nmrs; i++)
		ibv_dereg_mr(pool->mrs[i].mr);
	free(pool->mrs);
	pool->mrs = NULL;
	pool->nmrs = pool->mrs_cap = 0;
}
