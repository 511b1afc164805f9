// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Groups at run time (groups.h): the console's join and leave, and the reload, add and
 * remove groups while the workers forward: a new group is placed on channels with room
 * (place_group), published, and joined (joins.c); a removed one stops forwarding, is
 * left on both sides, unpublished, and freed after the workers let go (its counters
 * folded into the bridge's).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "bridge.h"
#include "concmd.h"
#include "console.h"
#include "ctl.h"
#include "groups.h"
#include "joins.h"
#include "log.h"
#include "loop.h"
#include "options.h"
#include "setup.h"

const char *const group_dir_name[3] = {"both", "in", "out"};

/*
 * What place_group asks of each channel and worker, counted over the running groups: the
 * groups that receive on a channel (its multicast attachments), whether any group sends
 * or receives on it (so that its Q_Key is taken), and each worker's weight (the sum of
 * its groups' "#w=N"). load[s * npairs + k] and used[] likewise; channel k of side s is
 * br->sd[s].chan[k], whose index is k (channel_create).
 *
 * Kept in struct ctl across inserts (each adds its group) and counted again when it no
 * longer describes br: a group removed, a weight changed by a reload
 * (ctl_group_census_drop), a pair added or groups placed at start (the counts of groups
 * and pairs differ). Counting per insert made a reload adding 15 999 groups to a bridge
 * of one keep the control thread 3.6 s (a pass per channel and question before: 67 s).
 */
struct chan_census {
	uint32_t ngroups, npairs; /* br's, as counted (its workers do not change) */
	uint32_t *load;
	uint8_t *used;
	uint64_t *wload;
};

void ctl_group_census_drop(struct ctl *c)
{
	if (!c->census)
		return;
	free(c->census->load);
	free(c->census->used);
	free(c->census->wload);
	free(c->census);
	c->census = NULL;
}

/* Count group g in (its channels and its worker's weight). */
static void census_count(const struct bridge *br, struct chan_census *cc, const struct group *g)
{
	uint32_t np = cc->npairs;

	for (int s = 0; s < NSIDES; s++) {
		const struct channel *ch = g->out_chan[s];

		if (!ch || ch->index >= np || br->sd[s].chan[ch->index] != ch)
			continue;
		cc->used[s * np + ch->index] = 1;
		if (group_dir_rx(g->dir, s))
			cc->load[s * np + ch->index]++;
	}
	cc->wload[br->sd[SIDE_IB].chan[g->pair]->w->id] += g->weight;
}

/* The census of br, counted again unless c's still describes it; NULL: out of memory. */
static struct chan_census *census_get(struct ctl *c)
{
	struct bridge *br = c->br;
	struct chan_census *cc = c->census;
	uint32_t np = br->npairs;

	if (cc && cc->ngroups == br->ngroups && cc->npairs == np)
		return cc;
	ctl_group_census_drop(c);
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return NULL;
	cc->load = calloc(2 * (size_t)np, sizeof(*cc->load));
	cc->used = calloc(2 * (size_t)np, sizeof(*cc->used));
	cc->wload = calloc(br->nworkers, sizeof(*cc->wload));
	c->census = cc;
	if (!cc->load || !cc->used || !cc->wload) {
		ctl_group_census_drop(c);
		return NULL;
	}
	cc->npairs = np;
	for (uint32_t i = 0; i < br->ngroups; i++)
		census_count(br, cc, br->groups[i]);
	cc->ngroups = br->ngroups;
	return cc;
}

/* Group g was appended to br->groups: count it in when the census was br's before. */
static void census_add(struct ctl *c, const struct group *g)
{
	struct chan_census *cc = c->census;
	const struct bridge *br = c->br;

	if (!cc || cc->ngroups + 1 != br->ngroups || cc->npairs != br->npairs)
		return; /* counted again at the next insert */
	census_count(br, cc, g);
	cc->ngroups++;
}

/*
 * Can channel k of side s take group g? A QP has one Q_Key (IBA 10.2.4: a UD QP
 * receives only datagrams with its Q_Key), so a channel holds groups of one Q_Key: g's
 * there, or none yet (it is given g's: group_qkeys_apply).
 */
static bool chan_qkey_fits(struct bridge *br, const struct chan_census *cc, int s, uint32_t k,
			   const struct group *g)
{
	return br->sd[s].chan[k]->qkey == group_qkey(g, s) || !cc->used[s * br->npairs + k];
}

int group_qkeys_apply(struct bridge *br, struct group *g, char *err, size_t errlen)
{
	for (int s = 0; s < NSIDES; s++) {
		struct channel *ch = g->out_chan[s];
		uint32_t was = ch->qkey;
		int r = channel_set_qkey(ch, group_qkey(g, s));

		if (r)
			return opt_errf(err, errlen, r, "%s: %s channel %u: Q_Key 0x%08x: %s",
					g->spec, side_name[s], ch->index, group_qkey(g, s),
					strerror(-r));
		if (was != ch->qkey)
			log_ctx(LOG_INFO, br->sd[s].dev, g->spec,
				"%s channel %u: Q_Key 0x%08x (was 0x%08x) for %s", side_name[s],
				ch->index, ch->qkey, was, g->spec);
	}
	return 0;
}

int group_qkey_check(struct bridge *br, const struct group *g, char *err, size_t errlen)
{
	for (int s = 0; s < NSIDES; s++) {
		uint32_t q = group_qkey(g, s);
		int r;

		if (!(q & BR_QKEY_CONTROLLED) || !br->sd[s].ctx)
			continue;
		r = side_qkey_probe(&br->sd[s], q);
		if (r == -EPERM)
			return opt_errf(
				err, errlen, r,
				"%s: %s Q_Key 0x%08x is a controlled Q_Key (high bit set): "
				"the kernel gives it to a QP only with CAP_NET_RAW or after "
				"`rdma system set privileged-qkey on` (Linux 6.4+ and stable "
				"kernels since June 2023), and the "
				"bridge has neither",
				g->spec, side_name[s], q);
		if (r)
			return opt_errf(err, errlen, r, "%s: %s Q_Key 0x%08x: %s", g->spec,
					side_name[s], q, strerror(-r));
	}
	return 0;
}

/*
 * Channels for a new group: among the pairs with room on each side that receives, one of
 * the worker with the least weight (the sum of its groups' "#w=N"), the least loaded of
 * that worker's; failing that (a group received on both sides, no pair with room on
 * both), a channel with room on each side, in different pairs: their workers hand
 * packets over; failing that too, a new pair of the worker with the least weight, made
 * now (bridge_pair_add).
 */
static int place_group(struct ctl *c, struct group *g, char *err, size_t errlen)
{
	struct bridge *br = c->br;
	uint32_t cap = br->cfg.mcqp, best = UINT32_MAX, best_load = UINT32_MAX;
	uint32_t k1 = UINT32_MAX, k2 = UINT32_MAX, nw = br->nworkers, wmin = 0;
	struct channel *const *ib = br->sd[SIDE_IB].chan;
	uint32_t np = br->npairs;
	struct chan_census *cc = census_get(c);
	const uint64_t *wload;

	if (!cc)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	wload = cc->wload;
	for (uint32_t i = 1; i < nw; i++)
		wmin = wload[i] < wload[wmin] ? i : wmin;
	for (uint32_t k = 0; k < np; k++) {
		/* A channel of another Q_Key has no room for g (chan_qkey_fits). */
		uint32_t l0 = !chan_qkey_fits(br, cc, SIDE_IB, k, g) ? cap
			      : group_dir_rx(g->dir, SIDE_IB)	     ? cc->load[SIDE_IB * np + k]
								     : 0;
		uint32_t l1 = !chan_qkey_fits(br, cc, SIDE_ROCE, k, g) ? cap
			      : group_dir_rx(g->dir, SIDE_ROCE) ? cc->load[SIDE_ROCE * np + k]
								: 0;
		uint32_t wk = ib[k]->w->id, wb = best == UINT32_MAX ? 0 : ib[best]->w->id;

		if (l0 < cap && k1 == UINT32_MAX)
			k1 = k;
		if (l1 < cap && k2 == UINT32_MAX)
			k2 = k;
		if (l0 < cap && l1 < cap &&
		    (best == UINT32_MAX || wload[wk] < wload[wb] ||
		     (wload[wk] == wload[wb] && l0 + l1 < best_load))) {
			best = k;
			best_load = l0 + l1;
		}
	}
	if (best == UINT32_MAX && (k1 == UINT32_MAX || k2 == UINT32_MAX)) {
		char why[256];
		int r = bridge_pair_add(br, wmin, why, sizeof(why));

		if (r < 0)
			return opt_errf(
				err, errlen, r,
				"no channel has room for another group (mcqp %u, %u channel "
				"pair%s), and no new pair: %s",
				cap, br->npairs, br->npairs == 1 ? "" : "s", why);
		best = (uint32_t)r;
	}
	if (best != UINT32_MAX)
		k1 = k2 = best;
	g->pair = k1;
	g->out_chan[SIDE_IB] = br->sd[SIDE_IB].chan[k1];
	g->out_chan[SIDE_ROCE] = br->sd[SIDE_ROCE].chan[k2];
	return 0;
}

static void group_discard_rcu(struct rcu_head *h)
{
	free(caa_container_of(h, struct group, rcu));
}

int ctl_group_insert(struct ctl *c, struct group *g, char *err, size_t errlen)
{
	struct bridge *br = c->br;
	int r;

	for (int s = 0; s < NSIDES; s++) {
		if (br->sd[s].state == SIDE_REMOVED) {
			r = opt_errf(err, errlen, -ENODEV, "%s device %s is stopped", side_name[s],
				     br->sd[s].dev);
			goto fail;
		}
	}
	{
		const char *why = NULL;
		struct group *dup;

		/* The running groups' index (struct ctl): a reload may add thousands. */
		if (group_index_sync(&c->gidx, br->groups, br->ngroups)) {
			r = opt_errf(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
		dup = group_index_same(&c->gidx, g, &why);
		if (dup) {
			r = opt_errf(err, errlen, -EEXIST,
				     "%s is already bridged as '%s' (the same %s)", g->spec,
				     dup->spec, why);
			goto fail;
		}
	}
	r = group_qkey_check(br, g, err, errlen);
	if (r)
		goto fail;
	r = place_group(c, g, err, errlen);
	if (r)
		goto fail;
	r = group_qkeys_apply(br, g, err, errlen);
	if (r)
		goto fail;
	group_mgid_ib(g, br->sd[SIDE_IB].pkey, &g->mgid[SIDE_IB]);
	group_mgid_roce(g, &g->mgid[SIDE_ROCE]);
	loop_group_event(g, true); /* before it is published: HA's role */
	if (group_publish(br, g)) {
		/* It may have been in a table for a moment: free it after a grace period. */
		r = opt_errf(err, errlen, -EEXIST, "%s: its MGID is used by another group",
			     g->spec);
		goto fail_published;
	}
	if (group_array_push(&br->groups, &br->ngroups, &br->groups_cap, g)) {
		group_unpublish(br, g);
		r = opt_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail_published;
	}
	/* Out of memory empties it: the next insert builds it again. */
	(void)group_index_add(&c->gidx, g);
	census_add(c, g);
	log_ctx(LOG_NOTICE, NULL, g->spec, "bridging %s (%s) on channels IB %u, RoCE %u%s", g->spec,
		group_dir_name[g->dir], g->out_chan[SIDE_IB]->index, g->out_chan[SIDE_ROCE]->index,
		g->out_chan[SIDE_IB]->w != g->out_chan[SIDE_ROCE]->w ? " (workers hand over)" : "");
	for (int s = 0; s < NSIDES; s++) {
		if (br->sd[s].state == SIDE_UP)
			join_issue(c, g, s);
		else
			g->js[s].next_try_ms = UINT64_MAX; /* joined when the port comes up */
	}
	return 0;
fail_published:
	urcu_qsbr_call_rcu(&g->rcu, group_discard_rcu);
	return r;
fail:
	free(g);
	return r;
}

int ctl_group_add(struct ctl *c, const char *spec, enum group_dir dir, char *err, size_t errlen)
{
	struct group *g;
	int r;

	g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	memset(g, 0, sizeof(*g));
	r = group_spec_parse(g, spec, (enum mgid_fmt)c->def_fmt, c->def_port, c->def_tos,
			     c->def_qkey, err, errlen);
	if (r) {
		free(g);
		return r;
	}
	g->dir = dir;
	return ctl_group_insert(c, g, err, errlen);
}

/* After the grace period no worker writes the group's counters: fold them in. */
static void group_free_rcu(struct rcu_head *h)
{
	struct group *g = caa_container_of(h, struct group, rcu);
	struct bridge *br = g->out_chan[SIDE_IB]->br;

	for (int s = 0; s < NSIDES; s++) {
		atomic_fetch_add(&br->left_fwd_pkts[s], g->fwd_pkts[s]);
		atomic_fetch_add(&br->left_fwd_bytes[s], g->fwd_bytes[s]);
	}
	atomic_fetch_add(&br->left_groups, 1);
	free(g);
}

/* Does the bridged group g have the address a (an IPv4 address, network order, or an
 * IPv6 one) on a side: its RoCE group, the IPv4 address of its IB MGID, its MGID? */
static bool group_has_addr(const struct group *g, int af, const void *a)
{
	if (af == AF_INET)
		return !memcmp(&g->addr, a, 4) || !memcmp(&g->ib_addr, a, 4);
	return (g->ib_native && !memcmp(g->mgid[SIDE_IB].raw, a, 16)) ||
	       (g->roce_v6 && !memcmp(g->mgid[SIDE_ROCE].raw, a, 16));
}

/*
 * The index of the group that name names in br->groups, or -errno with a message: its
 * spec as shown by multicast; else a spec of the same group in any syntax (the same IB
 * MGID and RoCE group, "ff12::1" for "FF12:0::1#qkey=5"); else an address alone, which
 * names the group with that address on either side (refused when two groups have it).
 */
static int group_find_name(struct ctl *c, const char *name, char *err, size_t errlen)
{
	struct bridge *br = c->br;
	struct group *p;
	char perr[OPT_ERR_LEN];
	unsigned char a[16];
	int af, found = -1;

	for (uint32_t i = 0; i < br->ngroups; i++)
		if (!strcmp(br->groups[i]->spec, name))
			return (int)i;
	p = aligned_alloc(64, sizeof(*p));
	if (!p)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	memset(p, 0, sizeof(*p));
	if (!group_spec_parse(p, name, (enum mgid_fmt)c->def_fmt, c->def_port, c->def_tos,
			      c->def_qkey, perr, sizeof(perr))) {
		group_mgid_ib(p, br->sd[SIDE_IB].pkey, &p->mgid[SIDE_IB]);
		group_mgid_roce(p, &p->mgid[SIDE_ROCE]);
		for (uint32_t i = 0; i < br->ngroups && found < 0; i++)
			if (!memcmp(br->groups[i]->mgid, p->mgid, sizeof(p->mgid)))
				found = (int)i;
	}
	free(p);
	if (found >= 0)
		return found;
	af = inet_pton(AF_INET, name, a) == 1	 ? AF_INET
	     : inet_pton(AF_INET6, name, a) == 1 ? AF_INET6
						 : 0;
	for (uint32_t i = 0; af && i < br->ngroups; i++) {
		if (!group_has_addr(br->groups[i], af, a))
			continue;
		if (found >= 0)
			return opt_errf(err, errlen, -EINVAL,
					"'%s' names two groups, '%s' and '%s': give the whole spec",
					name, br->groups[found]->spec, br->groups[i]->spec);
		found = (int)i;
	}
	if (found < 0)
		return opt_errf(err, errlen, -ENOENT, "'%s' is not bridged", name);
	return found;
}

int ctl_group_remove(struct ctl *c, const char *name, char *err, size_t errlen)
{
	struct bridge *br = c->br;
	int r = group_find_name(c, name, err, errlen);
	uint32_t i;

	if (r < 0)
		return r;
	i = (uint32_t)r;
	{
		struct group *g = br->groups[i];

		/* Stop forwarding first, then leave, then let the workers drop the pointer. */
		atomic_store(&g->ready, 0);
		bridge_flows_stale(br);
		for (int s = 0; s < NSIDES; s++)
			join_drop(c, g, s, true);
		group_unpublish(br, g);
		memmove(&br->groups[i], &br->groups[i + 1], (br->ngroups - i - 1) * sizeof(g));
		br->ngroups--;
		/* The index and the census only grow: the next insert builds them again. */
		group_index_free(&c->gidx);
		ctl_group_census_drop(c);
		joins_known_drop(c);
		loop_group_event(g, false);
		g->retired = true;
		log_ctx(LOG_NOTICE, NULL, g->spec,
			"stopped bridging %s (%" PRIu64 " IB->RoCE, %" PRIu64 " RoCE->IB packets)",
			g->spec, g->fwd_pkts[SIDE_IB], g->fwd_pkts[SIDE_ROCE]);
		urcu_qsbr_call_rcu(&g->rcu, group_free_rcu);
	}
	return 0;
}

static int cmd_join(struct ctl *c, char *args, FILE *out)
{
	char err[OPT_ERR_LEN];
	char *spec = concmd_word(&args), *d = concmd_word(&args);
	enum group_dir dir = DIR_BOTH;

	if (!spec) {
		fprintf(out, "join: usage: join group[#opts] [both|in|out] (group: "
			     "addr[:port][/fmt], ipv6-group or ib=roce)\n");
		return -1;
	}
	if (d) {
		int k;

		for (k = 0; k < 3 && strcmp(d, group_dir_name[k]); k++)
			;
		if (k == 3) {
			fprintf(out, "join: direction '%s': expected both, in or out\n", d);
			return -1;
		}
		dir = (enum group_dir)k;
	}
	if (concmd_no_args("join", args, out))
		return -1;
	if (ctl_group_add(c, spec, dir, err, sizeof(err))) {
		fprintf(out, "join: %s\n", err);
		return -1;
	}
	log_ctx(LOG_NOTICE, NULL, spec, "console: join %s %s", spec, group_dir_name[dir]);
	fprintf(out, "joining %s (%s)\n", spec, group_dir_name[dir]);
	return 0;
}

static int cmd_leave(struct ctl *c, char *args, FILE *out)
{
	char err[OPT_ERR_LEN];
	char *name = concmd_word(&args);

	if (!name) {
		fprintf(out, "leave: usage: leave <group>\n");
		return -1;
	}
	if (concmd_no_args("leave", args, out))
		return -1;
	if (ctl_group_remove(c, name, err, sizeof(err))) {
		fprintf(out, "leave: %s\n", err);
		return -1;
	}
	log_ctx(LOG_NOTICE, NULL, name, "console: leave %s", name);
	fprintf(out, "left %s\n", name);
	return 0;
}

static const struct console_cmd groups_cmds[] = {
	{{"join", "group [both|in|out]", "bridge one more group now", false}, cmd_join},
	{{"leave", "group", "stop bridging a group now", false}, cmd_leave},
	{{NULL, NULL, NULL, false}, NULL},
};

int groups_init(struct ctl *c)
{
	(void)c;
	return console_cmd_register(groups_cmds);
}
