// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The group tables: per side MGID -> group, and IPv4 address -> group, in liburcu
 * lock-free hash tables. The control thread inserts and removes; workers look up as
 * QSBR readers (no read-side cost).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

unsigned long mgid_hash(const union ibv_gid *gid)
{
	uint64_t a, b;

	memcpy(&a, gid->raw, 8);
	memcpy(&b, gid->raw + 8, 8);
	return (unsigned long)mix64(a ^ mix64(b));
}

static int group_match_ib(struct cds_lfht_node *node, const void *key)
{
	const struct group *g = caa_container_of(node, struct group, node[SIDE_IB]);

	return !memcmp(g->mgid[SIDE_IB].raw, key, 16);
}

static int group_match_roce(struct cds_lfht_node *node, const void *key)
{
	const struct group *g = caa_container_of(node, struct group, node[SIDE_ROCE]);

	return !memcmp(g->mgid[SIDE_ROCE].raw, key, 16);
}

static int group_match_addr(struct cds_lfht_node *node, const void *key)
{
	const struct group *g = caa_container_of(node, struct group, addr_node);

	return g->ib_addr == *(const uint32_t *)key;
}

struct group *group_lookup(struct side_ctx *sd, const union ibv_gid *gid)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	cds_lfht_lookup(sd->groups, mgid_hash(gid),
			sd->side == SIDE_IB ? group_match_ib : group_match_roce, gid, &it);
	n = cds_lfht_iter_get_node(&it);
	return n ? caa_container_of(n, struct group, node[sd->side]) : NULL;
}

struct group *group_lookup_addr(struct bridge *br, uint32_t addr)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	cds_lfht_lookup(br->groups_by_addr, mix64(addr), group_match_addr, &addr, &it);
	n = cds_lfht_iter_get_node(&it);
	return n ? caa_container_of(n, struct group, addr_node) : NULL;
}

int group_publish(struct bridge *br, struct group *g)
{
	struct cds_lfht_node *n;

	n = cds_lfht_add_unique(br->sd[SIDE_IB].groups, mgid_hash(&g->mgid[SIDE_IB]),
				group_match_ib, &g->mgid[SIDE_IB], &g->node[SIDE_IB]);
	if (n != &g->node[SIDE_IB])
		return -EEXIST;
	n = cds_lfht_add_unique(br->sd[SIDE_ROCE].groups, mgid_hash(&g->mgid[SIDE_ROCE]),
				group_match_roce, &g->mgid[SIDE_ROCE], &g->node[SIDE_ROCE]);
	if (n != &g->node[SIDE_ROCE]) {
		cds_lfht_del(br->sd[SIDE_IB].groups, &g->node[SIDE_IB]);
		return -EEXIST;
	}
	/* Not unique: "239.1.2.3" and "239.1.2.3/IPv4=ff12::1" share it (two MGIDs). */
	if (g->ib_addr)
		cds_lfht_add(br->groups_by_addr, mix64(g->ib_addr), &g->addr_node);
	return 0;
}

void group_unpublish(struct bridge *br, struct group *g)
{
	/* Workers drop their cached group pointers before the grace period can end. */
	atomic_fetch_add(&br->groups_epoch, 1);
	cds_lfht_del(br->sd[SIDE_IB].groups, &g->node[SIDE_IB]);
	cds_lfht_del(br->sd[SIDE_ROCE].groups, &g->node[SIDE_ROCE]);
	if (g->ib_addr)
		cds_lfht_del(br->groups_by_addr, &g->addr_node);
}

struct group *group_array_find_same(struct group *const *v, uint32_t n, const struct group *g,
				    const char **why)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] != g && group_spec_same(v[i], g, why))
			return v[i];
	return NULL;
}

struct group *group_array_find(struct group *const *v, uint32_t n, uint32_t addr)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i]->addr == addr)
			return v[i];
	return NULL;
}

int group_array_push(struct group ***v, uint32_t *n, uint32_t *cap, struct group *g)
{
	if (*n == *cap) {
		uint32_t c = *cap ? 2 * *cap : 64;
		struct group **nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = g;
	return 0;
}
