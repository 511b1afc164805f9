/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ha.c - partitions and roles of an HA pair (ha.h, docs/operations.md).
 *
 * The peer is reached through its console socket with the console's own protocol (a
 * command line; the reply is text, NUL, a status byte, newline): a few lines of socket
 * code rather than a library, as bcom does; or, on another host, through hanet.c's TLS
 * connection with the same framing (--ha-peer). A handover (ha_handover) is a state machine
 * that the control loop drives (ha_fd, ha_pass), bounded by one deadline, with a
 * non-blocking socket and a fixed reply buffer; ha.h says what it guarantees and how.
 *
 * Why one file of ~1 300 lines: the partitions' roles, the handover's state machine and
 * the peer's side of it (takeover prepare/commit/done, the undo of a stale commit) read
 * and change the same struct ha under the same rules (one prepared id, the 2 s commit
 * window, the drain before standby); split, each half would need the other's private
 * state. What is not the protocol is elsewhere: the TLS transport in hanet.c, the
 * console's framing in lib/conserver.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bridge.h"
#include "concmd.h"
#include "console.h"
#include "ctl.h"
#include "ha.h"
#include "hanet.h"
#include "log.h"
#include "loop.h"
#include "options.h"
#include "paths.h"
#include "state.h"

/*
 * A --partition group. It is matched to the bridged groups by its RoCE group (the IPv4
 * group's ::ffff:a.b.c.d, or the IPv6 group): every group has one, no two bridged groups
 * share it, and it comes from the configuration only, so both bridges of a pair give a
 * group the same partition whatever the syntax (an IPv4 group, "MGID=239.1.2.3", an
 * IPv6 group).
 */
struct ha_map {
	union ibv_gid roce; /* group_mgid_roce */
	uint32_t part;
	char spec[128];
};

/* One connection to the peer's console for a whole handover (ha_handover). */
struct peer_link {
	const char *path;
	struct hanet_link *tls; /* --ha-peer: TCP and TLS (hanet.c); NULL: the Unix socket */
	int fd;			/* -1: not connected */
	int err;		/* why the link is unusable (negative errno), 0: usable */
	uint64_t deadline;	/* CLOCK_MONOTONIC ms: the peer's time is up */
	char buf[HA_REPLY_MAX];
	size_t have;
};

/* The handover in progress: its partitions, where it is, its report. */
struct ha_xfer {
	bool on;
	bool stopping; /* for a stop: a partition left here goes dark */
	bool watched;  /* l.fd is in the control loop's epoll */
	/* X_DONE: over TLS, our `takeover done` after the commit's answer (the peer undoes
	 * a commit that is not confirmed: TCP cannot settle on the socket as AF_UNIX does). */
	enum { X_CONNECT, X_ASK, X_PREPARE, X_COMMIT, X_DONE } phase;
	struct peer_link l;
	uint32_t *parts, nparts, cur; /* partition indices, the one being handed over */
	uint32_t moved;
	int last; /* the last failure, 0: none */
	char id[HA_ID_MAX];
	char why[48];
	FILE *out; /* the report, into text */
	char *text;
	size_t textlen;
	ha_done_fn *done;
	void *done_arg;
};

struct ha {
	struct ha_part *part;
	uint32_t nparts;
	struct ha_map *map;
	uint32_t nmap, map_cap;
	/* The map by RoCE MGID (map_find): slot = map index + 1, open addressing, at most
	 * half full, covering the first midx_n entries; NULL: built when next needed (a
	 * parse that takes its entries back drops it). */
	uint32_t *midx;
	size_t midx_mask;
	uint32_t midx_n;
	char *peer;
	struct hanet *net; /* --ha-peer, --ha-listen (hanet.c) */
	uint64_t start_ns; /* CLOCK_MONOTONIC at the first handover: in each exchange's id */
	uint32_t seq;	   /* exchanges started */
	int undo_idx;	   /* the partition a takeover commit made active (undo_takeover) */
	struct ctl *undo_ctl;
	struct ha_xfer x; /* the handover in progress */
	/* A stop asked for while a handover of the console ran (ha_stop_after). */
	bool stop_after;
	char stop_why[32];
	ha_done_fn *stop_done;
	void *stop_arg;
};

/*
 * A partition may list thousands of groups: a walk of the map per group made a start
 * with 16 000 partitioned groups quadratic (each step computing the group's MGID), in
 * the option's duplicate check, in ha_start's check that every listed group is bridged
 * and in each group's assignment. The index finds a group's entry at once.
 */
static size_t midx_slot(const union ibv_gid *r, size_t mask)
{
	return group_gid_hash(r, 0) & mask;
}

/* Index entry i (the table has room); an entry of the same key keeps the first. */
static void midx_put(struct ha *ha, uint32_t i)
{
	size_t k = midx_slot(&ha->map[i].roce, ha->midx_mask);

	for (; ha->midx[k]; k = (k + 1) & ha->midx_mask)
		if (!memcmp(ha->map[ha->midx[k] - 1].roce.raw, ha->map[i].roce.raw, 16))
			return;
	ha->midx[k] = i + 1;
}

/* The index of the whole map, grown or built again as needed; -ENOMEM. */
static int midx_sync(struct ha *ha)
{
	size_t cap = 16;

	while (cap < 2 * (size_t)ha->nmap)
		cap *= 2;
	if (!ha->midx || ha->midx_mask + 1 < cap) {
		free(ha->midx);
		ha->midx = calloc(cap, sizeof(*ha->midx));
		ha->midx_n = 0;
		if (!ha->midx)
			return -ENOMEM;
		ha->midx_mask = cap - 1;
	}
	for (; ha->midx_n < ha->nmap; ha->midx_n++)
		midx_put(ha, ha->midx_n);
	return 0;
}

/* The first map entry of the RoCE MGID r, or -1 (none, or no memory for the index:
 * then the walk). */
static int map_find(struct ha *ha, const union ibv_gid *r)
{
	if (midx_sync(ha)) {
		for (uint32_t i = 0; i < ha->nmap; i++)
			if (!memcmp(ha->map[i].roce.raw, r->raw, 16))
				return (int)i;
		return -1;
	}
	for (size_t k = midx_slot(r, ha->midx_mask); ha->midx[k];
	     k = (k + 1) & ha->midx_mask)
		if (!memcmp(ha->map[ha->midx[k] - 1].roce.raw, r->raw, 16))
			return (int)ha->midx[k] - 1;
	return -1;
}

static int part_find(const struct ha *ha, const char *name)
{
	for (uint32_t i = 0; i < ha->nparts; i++)
		if (!strcmp(ha->part[i].name, name))
			return (int)i;
	return -1;
}

static int part_add(struct ha *ha, const char *name)
{
	struct ha_part *p = realloc(ha->part, sizeof(*p) * (ha->nparts + 1));

	if (!p)
		return -ENOMEM;
	ha->part = p;
	p = &ha->part[ha->nparts];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->reason, sizeof(p->reason), "configuration");
	return (int)ha->nparts++;
}

static bool name_ok(const char *s, size_t n)
{
	return hanet_word_ok(s, n, HA_NAME_MAX);
}

/* --partition NAME:GROUP[,GROUP...] */
static int opt_partition(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct ha *ha = ctx;
	const char *colon = strchr(arg, ':');
	char name[HA_NAME_MAX], *list, *tok, *save = NULL;
	struct group *g;
	uint32_t nmap0 = ha->nmap, nparts0 = ha->nparts;
	int idx, r = 0;

	if (!colon || !name_ok(arg, (size_t)(colon - arg)))
		return opt_errf(err, errlen, -EINVAL,
				"partition '%s': expected NAME:GROUP[,GROUP...] with NAME of 1-31 "
				"letters, digits, '_', '-', '.'",
				arg);
	memcpy(name, arg, (size_t)(colon - arg));
	name[colon - arg] = 0;
	if (!colon[1])
		return opt_errf(err, errlen, -EINVAL, "partition '%s': no group", name);
	idx = part_find(ha, name);
	if (idx < 0 && (idx = part_add(ha, name)) < 0)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	list = strdup(colon + 1);
	g = aligned_alloc(64, sizeof(*g));
	if (!list || !g) {
		r = opt_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		union ibv_gid roce;
		int had;

		memset(g, 0, sizeof(*g));
		r = group_spec_parse(g, tok, MGID_RDMA, 4711, -1, BR_UDP_QKEY, err, errlen);
		if (r)
			goto out;
		group_mgid_roce(g, &roce);
		had = map_find(ha, &roce);
		if (had >= 0 && ha->map[had].part != (uint32_t)idx) {
			r = opt_errf(err, errlen, -EINVAL,
				     "partition %s: group %s is in partition %s already", name, tok,
				     ha->part[ha->map[had].part].name);
			goto out;
		}
		if (ha->nmap == ha->map_cap) {
			uint32_t cap = ha->map_cap ? 2 * ha->map_cap : 16;
			struct ha_map *m = realloc(ha->map, sizeof(*m) * cap);

			if (!m) {
				r = opt_errf(err, errlen, -ENOMEM, "out of memory");
				goto out;
			}
			ha->map = m;
			ha->map_cap = cap;
		}
		ha->map[ha->nmap].roce = roce;
		ha->map[ha->nmap].part = (uint32_t)idx;
		snprintf(ha->map[ha->nmap].spec, sizeof(ha->map[ha->nmap].spec), "%s", tok);
		ha->nmap++;
	}
out:
	/* Bad input changes nothing; a reload checks the line but keeps the partitions of
	 * the start (they are start-up only: roles change on the console). */
	if (r || feat_running_get()) {
		if (ha->nmap != nmap0) { /* the index may hold the entries taken back */
			free(ha->midx);
			ha->midx = NULL;
		}
		ha->nmap = nmap0;
		ha->nparts = nparts0;
	}
	free(g);
	free(list);
	return r;
}

static int role_parse(const char *s, bool *standby)
{
	if (!strcmp(s, "active"))
		*standby = false;
	else if (!strcmp(s, "standby"))
		*standby = true;
	else
		return -EINVAL;
	return 0;
}

/* --role [PARTITION=]active|standby (the partition named by an earlier --partition). */
static int opt_role(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct ha *ha = ctx;
	const char *eq = strchr(arg, '=');
	const char *role = eq ? eq + 1 : arg;
	bool standby;
	int idx = -1;

	if (role_parse(role, &standby))
		return opt_errf(err, errlen, -EINVAL,
				"role '%s': expected [PARTITION=]active|standby", arg);
	if (feat_running_get())
		return 0; /* a reload: the role at start only; the console's role changes it */
	if (eq) {
		char name[HA_NAME_MAX];

		if (!name_ok(arg, (size_t)(eq - arg)))
			return opt_errf(err, errlen, -EINVAL, "role '%s': bad partition name", arg);
		memcpy(name, arg, (size_t)(eq - arg));
		name[eq - arg] = 0;
		idx = part_find(ha, name);
		if (idx < 0)
			return opt_errf(err, errlen, -ENOENT,
					"role '%s': no partition %s (--partition comes first)", arg,
					name);
	}
	for (uint32_t i = 0; i < ha->nparts; i++)
		if (idx < 0 || i == (uint32_t)idx)
			ha->part[i].standby = standby;
	return 0;
}

static int opt_peer_control(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct ha *ha = ctx;
	char abs[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *p;

	/* Absolute against the start's directory: the daemon connects from "/" (paths.h). */
	if (!*arg || path_absolute(arg, abs, sizeof(abs)))
		return opt_errf(err, errlen, -EINVAL, "ha-peer-control '%s': not a socket path",
				arg);
	if (feat_running_get())
		return 0; /* a reload: start-up only */
	p = strdup(abs);
	if (!p)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	free(ha->peer);
	ha->peer = p;
	return 0;
}

/* What hanet (the TLS transport, below ha) serves of HA: the peer's verbs. */
static const struct hanet_ops ha_net_ops = {ha_show, ha_role_set, ha_takeover_confirm};

struct ha *ha_opts_register(void)
{
	struct ha *ha = calloc(1, sizeof(*ha));
	int r;

	if (!ha)
		return NULL;
	if (part_add(ha, HA_DEFAULT) < 0)
		goto fail;
	const struct opt_def defs[] = {
		{"partition", 0, "name:group[,group...]", false,
		 "HA: put groups in a named partition (others are in partition default)",
		 opt_partition, ha, true},
		{"role", 0, "[partition=]active|standby", false,
		 "HA: the role at start of every partition, or of one named before (default "
		 "active)",
		 opt_role, ha, true},
		{"ha-peer-control", 0, "path", false,
		 "HA: the peer bridge's console socket (handover, SIGTERM hands over first)",
		 opt_peer_control, ha, false},
	};
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		r = opt_register(&defs[i]);
		if (r) {
			errno = -r;
			goto fail;
		}
	}
	ha->net = hanet_opts_register(ha, &ha_net_ops);
	if (!ha->net)
		goto fail;
	return ha;
fail:
	ha_free(ha);
	return NULL;
}

void ha_free(struct ha *ha)
{
	if (!ha)
		return;
	if (ha->x.on) {
		if (ha->x.l.tls)
			hanet_link_free(ha->x.l.tls);
		else if (ha->x.l.fd >= 0)
			close(ha->x.l.fd);
		fclose(ha->x.out);
		free(ha->x.text);
	}
	hanet_free(ha->net, NULL);
	free(ha->x.parts);
	free(ha->part);
	free(ha->map);
	free(ha->midx);
	free(ha->peer);
	free(ha);
}

static uint32_t group_part(struct ha *ha, const struct group *g)
{
	union ibv_gid r;
	int i;

	group_mgid_roce(g, &r);
	i = map_find(ha, &r);
	return i < 0 ? 0 : ha->map[i].part;
}

/* The group's role bit from its partition (published with release: pairs with the
 * workers' acquire loads of ready in rx_classify; the callers then bump flows_epoch). */
static void group_role_apply(struct ha *ha, struct group *g)
{
	g->standby = ha->part[g->part].standby;
	if (g->standby)
		atomic_fetch_or_explicit(&g->ready, GROUP_STANDBY, memory_order_release);
	else
		atomic_fetch_and_explicit(&g->ready, ~GROUP_STANDBY, memory_order_release);
}

void ha_group_assign(struct ha *ha, struct group *g)
{
	g->part = group_part(ha, g);
	group_role_apply(ha, g);
}

static void count_groups(struct ha *ha, struct bridge *br)
{
	for (uint32_t i = 0; i < ha->nparts; i++)
		ha->part[i].ngroups = 0;
	for (uint32_t i = 0; i < br->ngroups; i++)
		ha->part[br->groups[i]->part].ngroups++;
}

static int ha_register(struct ctl *c);

int ha_check_groups(struct ha *ha, struct group *const *groups, uint32_t n, char *err,
		    size_t errlen)
{
	bool *seen;
	int r = 0;

	if (!ha->nmap)
		return 0;
	/* Mark the entries the groups find (an entry listed twice is found through its
	 * first), then look for one not marked. */
	seen = calloc(ha->nmap, sizeof(*seen));
	if (!seen)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t k = 0; k < n; k++) {
		union ibv_gid g;
		int i;

		group_mgid_roce(groups[k], &g);
		i = map_find(ha, &g);
		if (i >= 0)
			seen[i] = true;
	}
	for (uint32_t i = 0; i < ha->nmap && !r; i++)
		if (!seen[map_find(ha, &ha->map[i].roce)])
			r = opt_errf(err, errlen, -EINVAL,
				     "partition %s: group %s is not bridged (-m, -i, -o)",
				     ha->part[ha->map[i].part].name, ha->map[i].spec);
	free(seen);
	return r;
}

int ha_start(struct ha *ha, struct ctl *c, char *err, size_t errlen)
{
	struct bridge *br = c->br;

	for (uint32_t i = 0; i < br->ngroups; i++)
		ha_group_assign(ha, br->groups[i]);
	bridge_flows_stale(br);
	for (uint32_t i = 0; i < ha->nparts; i++) {
		ha->part[i].since_ms = mono_ms();
		ha->part[i].since_wall = time(NULL);
	}
	count_groups(ha, br);
	if (ha->peer && hanet_peer(ha->net))
		return opt_errf(err, errlen, -EINVAL,
				"--ha-peer-control and --ha-peer: give one peer (a socket path or "
				"HOST:PORT)");
	if (ha_register(c))
		return opt_errf(err, errlen, -ENOMEM, "HA: out of memory");
	return hanet_start(ha->net, c, err, errlen);
}

uint32_t ha_nparts(const struct ha *ha)
{
	return ha->nparts;
}

const struct ha_part *ha_part_get(const struct ha *ha, uint32_t i)
{
	return &ha->part[i];
}

const char *ha_peer(const struct ha *ha)
{
	return ha->peer ? ha->peer : hanet_peer(ha->net);
}

struct hanet *ha_net(const struct ha *ha)
{
	return ha->net;
}

static const char *role_name(bool standby)
{
	return standby ? "standby" : "active";
}

static void part_set(struct ha *ha, struct ctl *c, uint32_t idx, bool standby, const char *reason,
		     FILE *out)
{
	struct ha_part *p = &ha->part[idx];
	struct bridge *br = c->br;

	if (p->standby == standby) {
		fprintf(out, "partition %s: %s already\n", p->name, role_name(standby));
		return;
	}
	/* Break after make: what this bridge received while active is forwarded before it
	 * stops; the peer (made active before) forwards what comes after. */
	if (standby && !ctl_data_drain(c))
		log_warn("partition %s: a worker did not empty its queues in %d ms: going standby "
			 "anyway",
			 p->name, CTL_DRAIN_MS);
	p->standby = standby;
	for (uint32_t i = 0; i < br->ngroups; i++)
		if (br->groups[i]->part == idx)
			group_role_apply(ha, br->groups[i]);
	bridge_flows_stale(br);
	p->since_ms = mono_ms();
	p->since_wall = time(NULL);
	p->transitions++;
	snprintf(p->reason, sizeof(p->reason), "%s", reason);
	log_notice("partition %s: %s -> %s (%s)", p->name, role_name(!standby), role_name(standby),
		   reason);
	if (out)
		fprintf(out, "partition %s: %s -> %s\n", p->name, role_name(!standby),
			role_name(standby));
}

int ha_role_set(struct ha *ha, struct ctl *c, const char *name, bool standby, const char *reason,
		FILE *out)
{
	int idx = -1;

	if (name && (idx = part_find(ha, name)) < 0) {
		fprintf(out, "role: no partition '%s' (see ha)\n", name);
		return -ENOENT;
	}
	for (uint32_t i = 0; i < ha->nparts; i++)
		if (idx < 0 || i == (uint32_t)idx)
			part_set(ha, c, i, standby, reason, out);
	return 0;
}

uint32_t ha_part_ngroups(struct ha *ha, struct ctl *c, uint32_t i)
{
	count_groups(ha, c->br);
	return ha->part[i].ngroups;
}

/* ---- The peer's side of a handover: takeover prepare / commit ---- */

/* Partition idx is in the handover in progress, not handed over yet. */
static bool xfer_has(const struct ha *ha, uint32_t idx)
{
	const struct ha_xfer *x = &ha->x;

	for (uint32_t i = x->cur; x->on && i < x->nparts; i++)
		if (x->parts[i] == idx)
			return true;
	return false;
}

/*
 * Can this bridge forward partition idx now? Both sides up without broken channels or
 * stuck send queues, a group in the partition, each of its groups forwarding in every
 * direction it has (joined), the worker of each alive. false with the first reason in why.
 */
static bool part_healthy(struct ha *ha, struct ctl *c, uint32_t idx, char *why, size_t len)
{
	struct bridge *br = c->br;
	uint64_t now = mono_ms(), limit = health_stall_ms(c);
	uint32_t n = 0;

	if (!c->ready) {
		snprintf(why, len, "not ready (waiting for the first joins)");
		return false;
	}
	for (int s = 0; s < NSIDES; s++) {
		const struct side_ctx *sd = &br->sd[s];
		uint32_t broken = side_broken(br, s), stuck = side_tx_stuck(br, s);

		if (sd->state != SIDE_UP) {
			snprintf(why, len, "%s %s port %u %s", side_name[s], sd->dev, sd->port,
				 side_state_str(sd->state));
			return false;
		}
		if (broken) {
			snprintf(why, len, "%s: %u channel%s in the error state", side_name[s],
				 broken, broken == 1 ? "" : "s");
			return false;
		}
		if (stuck) {
			snprintf(why, len, "%s: %u channel%s with a stuck send queue", side_name[s],
				 stuck, stuck == 1 ? "" : "s");
			return false;
		}
	}
	for (uint32_t i = 0; i < br->ngroups; i++) {
		struct group *g = br->groups[i];
		struct worker *w = g->out_chan[SIDE_IB]->w;

		if (g->part != idx)
			continue;
		n++;
		if (group_fwd_state(g) != FWD_YES) {
			snprintf(why, len, "group %s not joined on both sides (forwarding: %s)",
				 g->spec, group_forwarding(g));
			return false;
		}
		if (br->cfg.nworkers && worker_hb_age_ms(c, w, now) > limit) {
			snprintf(why, len, "worker %u of group %s stalled (%" PRIu64 " ms)", w->id,
				 g->spec, worker_hb_age_ms(c, w, now));
			return false;
		}
	}
	if (!n) {
		snprintf(why, len, "no group of partition %s here", ha->part[idx].name);
		return false;
	}
	return true;
}

/*
 * conserver_reply_confirm's undo: the asking bridge gave up before it could read the
 * commit's answer, so it stays active: so must this one stay standby.
 */
static void undo_takeover(void *arg)
{
	struct ha *ha = arg;
	struct ha_part *p = &ha->part[ha->undo_idx];

	log_warn("partition %s: the handing-over bridge gave up before our answer came: "
		 "taking over undone",
		 p->name);
	part_set(ha, ha->undo_ctl, (uint32_t)ha->undo_idx, true,
		 "takeover undone (the peer gave up)", NULL);
}

static int console_confirm(void *ctx, struct ctl *c, void (*undo)(void *arg), void *arg)
{
	(void)ctx;
	return console_reply_confirm(c, undo, arg);
}

int ha_takeover(struct ha *ha, struct ctl *c, char *args, FILE *out)
{
	return ha_takeover_confirm(ha, c, args, out, console_confirm, NULL);
}

int ha_takeover_confirm(struct ha *ha, struct ctl *c, char *args, FILE *out, ha_confirm_fn *confirm,
			void *ctx)
{
	char *verb = concmd_word(&args), *name = concmd_word(&args), *id = concmd_word(&args);
	char why[256], reason[96]; /* why names a group spec (128) */
	struct ha_part *p;
	bool commit;
	int idx, r;

	if (!verb || !name || !id || concmd_word(&args) ||
	    (strcmp(verb, "prepare") && strcmp(verb, "commit"))) {
		fprintf(out, "takeover: expected prepare|commit PARTITION ID\n");
		return -1;
	}
	commit = !strcmp(verb, "commit");
	if (strlen(id) >= HA_ID_MAX) {
		fprintf(out, "takeover: exchange id '%.*s...' too long (max %d)\n", 16, id,
			HA_ID_MAX - 1);
		return -1;
	}
	idx = part_find(ha, name);
	if (idx < 0) {
		fprintf(out, "takeover: no partition '%s' here\n", name);
		return -1;
	}
	p = &ha->part[idx];
	if (loop_stopping()) {
		fprintf(out, "takeover: partition %s: refused: this bridge is stopping\n", name);
		return -1;
	}
	if (xfer_has(ha, (uint32_t)idx)) {
		fprintf(out, "takeover: partition %s: refused: this bridge is handing it over\n",
			name);
		return -1;
	}
	if (!part_healthy(ha, c, (uint32_t)idx, why, sizeof(why))) {
		fprintf(out, "takeover: partition %s: refused: cannot forward it here: %s\n", name,
			why);
		if (commit)
			p->prep_id[0] = 0;
		log_notice("takeover %s of partition %s (%s) refused: %s", verb, name, id, why);
		return -1;
	}
	if (!commit) {
		/* A newer prepare replaces an older one: only the last asker can commit. */
		snprintf(p->prep_id, sizeof(p->prep_id), "%s", id);
		p->prep_until_ms = mono_ms() + HA_HANDOVER_MS;
		fprintf(out, "takeover: partition %s: prepared (%s here now)\n", name,
			role_name(p->standby));
		return 0;
	}
	if (strcmp(p->prep_id, id) || mono_ms() > p->prep_until_ms) {
		fprintf(out,
			"takeover: partition %s: refused: exchange %s is not prepared here (stale, "
			"expired or replaced)\n",
			name, id);
		log_notice("takeover commit of partition %s (%s) refused: not prepared here "
			   "(stale, expired or replaced)",
			   name, id);
		return -1;
	}
	p->prep_id[0] = 0;
	if (!p->standby) {
		fprintf(out, "takeover: partition %s: active already\n", name);
		return 0;
	}
	ha->undo_idx = idx;
	ha->undo_ctl = c;
	r = confirm(ctx, c, undo_takeover, ha);
	if (r == -EPIPE) {
		fprintf(out, "takeover: partition %s: refused: the asker has gone\n", name);
		log_notice("takeover commit of partition %s (%s) refused: the handing-over bridge "
			   "gave up (connection closed)",
			   name, id);
		return -1;
	}
	/* -ENOTCONN: typed on the terminal, where nobody can give up on the answer. */
	snprintf(reason, sizeof(reason), "takeover from the peer (%s)", id);
	part_set(ha, c, (uint32_t)idx, false, reason, out);
	return 0;
}

/* ---- The asking side: a handover, driven by the control loop ---- */

#define HA_ANSWER_MAX 256 /* a refusal's text kept for the report */

bool ha_busy(const struct ha *ha)
{
	return ha->x.on;
}

bool ha_stopping(const struct ha *ha)
{
	return ha->x.on && (ha->x.stopping || ha->stop_after);
}

/* Connect without blocking. 0 connected, -EAGAIN the backlog is full (try again). */
static int link_connect(struct peer_link *l)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (l->tls) {
		int r = hanet_link_connect(l->tls);

		l->fd = hanet_link_fd(l->tls);
		return r;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->path);
	if (l->fd < 0) {
		l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (l->fd < 0)
			return -errno;
	}
	for (;;) {
		if (!connect(l->fd, (struct sockaddr *)&sa, sizeof(sa)))
			return 0;
		if (errno != EINTR)
			break;
	}
	/* AF_UNIX answers at once: EAGAIN while the listener's backlog is full (then we try
	 * again until the deadline), never EINPROGRESS. */
	return errno == EINPROGRESS ? -EAGAIN : -errno;
}

/* A request line, all of it now (a few dozen bytes to a peer that answered everything
 * before: its socket buffer has room), or the link's error. */
static int link_send(struct peer_link *l, const char *line)
{
	size_t len = strlen(line);
	ssize_t w;

	if (l->tls)
		return hanet_link_send(l->tls, line, len);
	do
		w = send(l->fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w < 0 && errno == EINTR);
	if (w == (ssize_t)len)
		return 0;
	return w < 0 && errno != EAGAIN ? -errno : -ENOBUFS;
}

/* A complete reply (text, NUL, status, newline) is in the buffer. */
static bool link_complete(const struct peer_link *l)
{
	const char *nul = memchr(l->buf, '\0', l->have);

	return nul && (size_t)(nul - l->buf) + 3 <= l->have;
}

/*
 * The complete reply in the buffer: its text (without the trailing newlines, on one line,
 * at most len - 1 bytes) into txt, consumed. 0 success, -EREMOTEIO failure.
 */
static int link_parse(struct peer_link *l, char *txt, size_t len)
{
	char *nul = memchr(l->buf, '\0', l->have);
	size_t tl = (size_t)(nul - l->buf), used = tl + 3;
	int r = nul[1] == '0' ? 0 : -EREMOTEIO;

	while (tl && l->buf[tl - 1] == '\n')
		tl--;
	snprintf(txt, len, "%.*s", (int)tl, l->buf);
	for (char *q = txt; *q; q++)
		if (*q == '\n')
			*q = ' ';
	memmove(l->buf, l->buf + used, l->have - used);
	l->have -= used;
	return r;
}

/*
 * Read what the socket holds now, without waiting, into the fixed buffer. 0, -ECONNRESET
 * at the end, -EMSGSIZE when the buffer is full without a complete reply (a flood: not
 * read any further).
 */
static int link_read_now(struct peer_link *l)
{
	for (;;) {
		ssize_t n;

		if (l->have == sizeof(l->buf))
			return link_complete(l) ? 0 : -EMSGSIZE;
		if (l->tls) {
			n = hanet_link_recv(l->tls, l->buf + l->have, sizeof(l->buf) - l->have);
			if (n == -EAGAIN)
				return 0;
			if (n < 0)
				return (int)n;
			if (!n)
				return -ECONNRESET;
			l->have += (size_t)n;
			continue;
		}
		n = recv(l->fd, l->buf + l->have, sizeof(l->buf) - l->have, MSG_DONTWAIT);
		if (n > 0) {
			l->have += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? 0 : -errno;
	}
}

/*
 * A commit whose answer did not come: shut our reading side down, so that the peer can
 * no longer send it (it then undoes the takeover, conserver_reply_confirm), and look at
 * what came before that. 0 when the peer's success is here.
 */
static int link_settle(struct peer_link *l, char *txt, size_t len)
{
	/* Over TCP a shut reading side tells the peer nothing: there, the peer keeps a
	 * commit only when our `takeover done` comes (X_DONE), so without it nothing moved. */
	if (l->tls)
		return -ETIMEDOUT;
	if (l->fd < 0 || shutdown(l->fd, SHUT_RD))
		return -ENOTCONN;
	link_read_now(l);
	return link_complete(l) && !link_parse(l, txt, len) ? 0 : -ETIMEDOUT;
}

static const char *link_why(int r, char *buf, size_t len)
{
	switch (r) {
	case -ETIMEDOUT:
		return "no answer within the handover's time";
	case -EAGAIN:
		return "it accepts no connection (listen backlog full) within the handover's time";
	case -EINTR:
		return "interrupted: the bridge is stopping now";
	case -EMSGSIZE:
		return "its reply is longer than a bridge's answer (not a bridge console?)";
	case -ECONNRESET:
		return "it closed the connection";
	case -ENOBUFS:
		return "it does not read what it is sent";
	case -EACCES:
		return "the TLS handshake failed: it does not hold our key (--ha-psk), we do "
		       "not hold its, it refused our certificate (--ha-cert), or it is not an "
		       "--ha-listen";
	case -EKEYREJECTED:
		return "the TLS handshake failed: its certificate does not verify (expired, "
		       "not of --ha-ca, or not named --ha-peer-name or --ha-peer's host)";
	case -ENOKEY:
		return "no key to connect with (--ha-psk)";
	case -EBADMSG:
		return "a TLS record that does not verify";
	default:
		snprintf(buf, len, "%s", strerror(-r));
		return buf;
	}
}

/* The report and the log of a partition that stays here. */
static void xfer_failed(struct ha *ha, uint32_t idx, int r, const char *answer)
{
	struct ha_xfer *x = &ha->x;
	const char *name = ha->part[idx].name, *fail, *pre = r == -EREMOTEIO ? "" : "the peer: ";
	char eb[64];

	x->last = r;
	fail = r == -EREMOTEIO ? (answer[0] ? answer : "the peer refused")
			       : link_why(r, eb, sizeof(eb));
	if (x->phase == X_DONE && r != -EREMOTEIO) {
		/* Our `takeover done` went out but its answer did not come: the peer keeps the
		 * partition only if it read it (then both are active: `ha` on both says). */
		fail = "no answer to our confirmation (takeover done): the peer undoes its "
		       "takeover unless it read it (then both are active: check `ha` on both)";
		pre = "the peer: ";
	}
	fprintf(x->out, "partition %s: not handed over: %s%s: staying active\n", name, pre, fail);
	if (x->stopping)
		log_err("%s: partition %s goes dark when this bridge stops: not handed over to %s: "
			"%s%s",
			x->why, name, ha_peer(ha), pre, fail);
	else
		log_warn("%s: partition %s not handed over to %s: %s%s: staying active", x->why,
			 name, ha_peer(ha), pre, fail);
}

/* The peer took partition idx: standby here (after our workers drained). */
static void xfer_moved(struct ha *ha, struct ctl *c, uint32_t idx)
{
	struct ha_xfer *x = &ha->x;
	char reason[96];
	uint64_t t0 = mono_ms();

	snprintf(reason, sizeof(reason), "%s: peer active", x->why);
	log_notice("%s: partition %s: the peer took over (exchange %s)", x->why, ha->part[idx].name,
		   x->id);
	part_set(ha, c, idx, true, reason, x->out);
	x->l.deadline += mono_ms() - t0; /* our own drain is not the peer's time */
	x->moved++;
}

static void xfer_finish(struct ha *ha, struct ctl *c)
{
	struct ha_xfer *x = &ha->x;
	ha_done_fn *done = x->done;
	void *arg = x->done_arg;
	int rc = x->last;

	if (x->l.fd >= 0 && x->watched)
		loop_unwatch(x->l.fd);
	if (x->l.tls)
		hanet_link_free(x->l.tls);
	else if (x->l.fd >= 0)
		close(x->l.fd);
	x->l.tls = NULL;
	x->l.fd = -1;
	fprintf(x->out, "handover: %u of %u partition%s handed over\n", x->moved, x->nparts,
		x->nparts == 1 ? "" : "s");
	if (x->moved)
		log_notice("%s: %u of %u partition%s handed over to %s", x->why, x->moved,
			   x->nparts, x->nparts == 1 ? "" : "s", ha_peer(ha));
	fclose(x->out);
	x->on = false;
	done(c, arg, rc, x->text ? x->text : "");
	free(x->text);
	x->text = NULL;
	free(x->parts);
	x->parts = NULL;
	if (ha->stop_after) {
		/* A stop asked for during this handover: now what is still active here. */
		ha_done_fn *sd = ha->stop_done;
		int r;

		ha->stop_after = false;
		r = ha_handover(ha, c, NULL, ha->stop_why, true, sd, ha->stop_arg, NULL);
		if (r != 1)
			sd(c, ha->stop_arg, r, "");
	}
}

/*
 * Go on with the handover as far as it goes without waiting: connect, ask, read the
 * answers that are here, move to the next partition; then return until the socket or the
 * clock (ha_fd, ha_pass) says more. Finishes (calls done) after the last partition.
 */
static void ha_fd(void *arg, unsigned events);

static void xfer_run(struct ha *ha, struct ctl *c)
{
	struct ha_xfer *x = &ha->x;

	while (x->on) {
		uint32_t idx;
		char cmd[64 + HA_NAME_MAX + HA_ID_MAX], txt[HA_ANSWER_MAX];
		int r;

		if (x->cur == x->nparts) {
			xfer_finish(ha, c);
			return;
		}
		idx = x->parts[x->cur];
		if (x->l.err) {
			xfer_failed(ha, idx, x->l.err, "");
			x->cur++;
			x->phase = X_ASK; /* the next partitions were not asked */
			continue;
		}
		switch (x->phase) {
		case X_CONNECT:
			r = link_connect(&x->l);
			if (r == -EAGAIN && x->l.tls && x->l.fd >= 0 && !x->watched) {
				/* The TLS handshake's answers wake us; the TCP connect's end is
				 * seen by ha_pass (HA_POLL_MS). */
				if (loop_watch(x->l.fd, EPOLLIN, ha_fd, c))
					r = -errno;
				else
					x->watched = true;
			}
			if (r == -EAGAIN)
				return; /* ha_pass tries again */
			if (!r && !x->watched && loop_watch(x->l.fd, EPOLLIN, ha_fd, c))
				r = -errno;
			if (r) {
				x->l.err = r;
				continue;
			}
			x->watched = true;
			x->phase = X_ASK;
			continue;
		case X_ASK:
			if (ha->part[idx].standby) {
				fprintf(x->out, "partition %s: standby already\n",
					ha->part[idx].name);
				x->cur++;
				continue;
			}
			snprintf(x->id, sizeof(x->id), "%d.%" PRIu64 ".%u", (int)getpid(),
				 ha->start_ns, ++ha->seq);
			snprintf(cmd, sizeof(cmd), "takeover prepare %s %s\n", ha->part[idx].name,
				 x->id);
			x->l.err = link_send(&x->l, cmd);
			x->phase = X_PREPARE;
			continue;
		case X_PREPARE:
		case X_COMMIT:
		case X_DONE:
			r = link_read_now(&x->l);
			if (!link_complete(&x->l)) {
				if (!r)
					return; /* wait for the answer */
				if (x->phase == X_COMMIT && !link_settle(&x->l, txt, sizeof(txt))) {
					x->l.err = r;
					goto moved;
				}
				x->l.err = r;
				continue;
			}
			r = link_parse(&x->l, txt, sizeof(txt));
			if (r) {
				xfer_failed(ha, idx, r, txt);
				x->cur++;
				x->phase = X_ASK;
				continue;
			}
			if (x->phase == X_PREPARE) {
				snprintf(cmd, sizeof(cmd), "takeover commit %s %s\n",
					 ha->part[idx].name, x->id);
				x->l.err = link_send(&x->l, cmd);
				x->phase = X_COMMIT;
				continue;
			}
			if (x->phase == X_COMMIT && x->l.tls) {
				/* The peer is active and keeps it once it reads this (the drain
				 * acknowledgement); we go standby on its answer. */
				snprintf(cmd, sizeof(cmd), "takeover done %s %s\n",
					 ha->part[idx].name, x->id);
				x->l.err = link_send(&x->l, cmd);
				x->phase = X_DONE;
				continue;
			}
moved:
			xfer_moved(ha, c, idx);
			x->cur++;
			x->phase = X_ASK;
			continue;
		}
	}
}

/* The handover ends its wait now with error r (the deadline, a stop signal). */
static void xfer_stop(struct ha *ha, struct ctl *c, int r)
{
	struct ha_xfer *x = &ha->x;
	char txt[HA_ANSWER_MAX];

	if (x->phase == X_COMMIT && !x->l.err && !link_settle(&x->l, txt, sizeof(txt))) {
		/* The peer's yes was there after all: that partition went over. */
		xfer_moved(ha, c, x->parts[x->cur]);
		x->cur++;
		x->phase = X_ASK;
	}
	if (!x->l.err)
		x->l.err = r;
	xfer_run(ha, c);
}

/* The handover's socket is readable (arg: the context). */
static void ha_fd(void *arg, unsigned events)
{
	struct ctl *c = arg;

	(void)events;
	if (c->ha->x.on)
		xfer_run(c->ha, c);
}

/* After every batch of the loop: the deadline, a connect to try again; while a handover
 * is in progress the loop waits at most HA_POLL_MS. */
static int ha_pass(void *arg, uint64_t now)
{
	struct ctl *c = arg;
	struct ha *ha = c->ha;
	struct ha_xfer *x = &ha->x;

	hanet_tick(ha->net, c, now);
	if (!x->on)
		return -1;
	if (now >= x->l.deadline)
		/* Over TLS the connect phase is the TCP connect and the handshake: a peer that
		 * stopped answering, not a full backlog. */
		xfer_stop(ha, c, x->phase == X_CONNECT && !x->l.tls ? -EAGAIN : -ETIMEDOUT);
	else
		xfer_run(ha, c);
	return x->on ? HA_POLL_MS : -1;
}

void ha_cancel(struct ha *ha, struct ctl *c)
{
	if (!ha->x.on)
		return;
	if (ha->stop_after) {
		/* The stop that waited for this handover does not wait any longer. */
		ha_done_fn *sd = ha->stop_done;

		ha->stop_after = false;
		xfer_stop(ha, c, -EINTR);
		sd(c, ha->stop_arg, -EINTR, "");
		return;
	}
	xfer_stop(ha, c, -EINTR);
}

void ha_stop_after(struct ha *ha, const char *why, ha_done_fn *done, void *arg)
{
	ha->stop_after = true;
	snprintf(ha->stop_why, sizeof(ha->stop_why), "%s", why);
	ha->stop_done = done;
	ha->stop_arg = arg;
}

static int handover_start(struct ha *ha, struct ctl *c, const char *name, const char *why,
			  bool stopping, ha_done_fn *done, void *arg, FILE *out)
{
	struct ha_xfer *x = &ha->x;
	int idx = -1;

	if (!ha_peer(ha)) {
		fprintf(out, "handover: no peer (--ha-peer-control or --ha-peer)\n");
		return -EINVAL;
	}
	if (name && (idx = part_find(ha, name)) < 0) {
		fprintf(out, "handover: no partition '%s' (see ha)\n", name);
		return -ENOENT;
	}
	if (x->on) {
		fprintf(out,
			"handover: a handover is in progress (%d s at most): try again after it\n",
			HA_HANDOVER_MS / 1000);
		return -EBUSY;
	}
	if (!ha->start_ns)
		ha->start_ns = mono_ns();
	count_groups(ha, c->br);
	free(x->parts);
	x->parts = calloc(ha->nparts, sizeof(*x->parts));
	if (!x->parts) {
		fprintf(out, "handover: out of memory\n");
		return -ENOMEM;
	}
	x->nparts = 0;
	for (uint32_t i = 0; i < ha->nparts; i++) {
		const struct ha_part *p = &ha->part[i];

		if ((idx >= 0 && i != (uint32_t)idx) || p->standby)
			continue;
		if (!p->ngroups) {
			/* Nothing to forward, nothing to hand over. */
			if (idx >= 0)
				fprintf(out, "partition %s: no groups here: nothing to hand over\n",
					p->name);
			continue;
		}
		x->parts[x->nparts++] = i;
	}
	if (!x->nparts) {
		fprintf(out, "handover: no active partition%s%s with groups here\n",
			name ? " " : "", name ? name : "");
		return 0;
	}
	x->text = NULL;
	x->textlen = 0;
	x->out = open_memstream(&x->text, &x->textlen);
	if (!x->out) {
		fprintf(out, "handover: out of memory\n");
		return -ENOMEM;
	}
	x->l.path = ha_peer(ha);
	x->l.fd = -1;
	x->l.tls = NULL;
	if (!ha->peer && !(x->l.tls = hanet_link_new(ha->net))) {
		fclose(x->out);
		free(x->text);
		x->text = NULL;
		fprintf(out, "handover: out of memory\n");
		return -ENOMEM;
	}
	x->l.err = 0;
	x->l.have = 0;
	x->l.deadline = mono_ms() + HA_HANDOVER_MS;
	x->watched = false;
	x->phase = X_CONNECT;
	x->cur = 0;
	x->moved = 0;
	x->last = 0;
	x->stopping = stopping;
	x->done = done;
	x->done_arg = arg;
	snprintf(x->why, sizeof(x->why), "%s", why);
	/* The first step runs from the loop (ha_pass after this batch): done is never called
	 * from inside this function. */
	x->on = true;
	return 1;
}

int ha_handover(struct ha *ha, struct ctl *c, const char *name, const char *why, bool stopping,
		ha_done_fn *done, void *arg, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (out)
		return handover_start(ha, c, name, why, stopping, done, arg, out);
	/* No one to tell (a signal): the messages go nowhere, the outcomes to the log. */
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	r = handover_start(ha, c, name, why, stopping, done, arg, f);
	fclose(f);
	free(buf);
	return r;
}

void ha_show(struct ha *ha, struct ctl *c, FILE *out)
{
	uint64_t now = mono_ms();
	struct chan_stats st;

	count_groups(ha, c->br);
	fprintf(out, "%-16s %-8s %6s %10s %11s  %s\n", "partition", "role", "groups", "since_s",
		"transitions", "reason");
	for (uint32_t i = 0; i < ha->nparts; i++) {
		const struct ha_part *p = &ha->part[i];

		fprintf(out, "%-16s %-8s %6u %10" PRIu64 " %11" PRIu64 "  %s\n", p->name,
			role_name(p->standby), p->ngroups, (now - p->since_ms) / 1000,
			p->transitions, p->reason);
	}
	for (int s = 0; s < NSIDES; s++) {
		side_stats_sum(c->br, s, false, &st);
		fprintf(out, "%s standby_pkts=%" PRIu64 "\n", side_name[s], st.standby);
	}
	fprintf(out, "peer_control %s\n", ha_peer(ha) ? ha_peer(ha) : "-");
	hanet_show(ha->net, out);
	if (ha->x.on) {
		static const char *const phase[] = {
			[X_CONNECT] = "connecting",   [X_ASK] = "asking",
			[X_PREPARE] = "prepare sent", [X_COMMIT] = "commit sent",
			[X_DONE] = "done sent",
		};
		const struct ha_xfer *x = &ha->x;

		fprintf(out,
			"handover in progress (%s): partition %s, %u of %u, %s, %" PRIu64
			" ms left\n",
			x->why, ha->part[x->parts[x->cur < x->nparts ? x->cur : 0]].name,
			x->cur + 1, x->nparts, phase[x->phase],
			x->l.deadline > now ? x->l.deadline - now : 0);
	}
}

/* ---- Registrations with the loop and the console ---- */

/* The handover of a stop is over (ha_handover's done): stop now. */
static void stop_done(struct ctl *c, void *arg, int rc, const char *report)
{
	(void)c;
	(void)arg;
	(void)rc;
	(void)report;
	loop_stop();
}

/*
 * A stop by signal (loop.h). SIGTERM with a peer: make-before-break, the peer takes the
 * active partitions first, the loop serving on meanwhile; then stop_done stops. What it
 * cannot take goes dark (what a stop costs without a peer): logged. A second signal
 * ends the wait, the stop goes on (the partitions not handed over go dark).
 */
static bool ha_stop_hook(void *arg, int sig, enum loop_stop_q q)
{
	struct ctl *c = arg;
	struct ha *ha = c->ha;
	int r;

	switch (q) {
	case LOOP_STOP_HELD:
		return ha_stopping(ha);
	case LOOP_STOP_AGAIN:
		log_warn("second %s: not waiting for the HA peer any longer", strsignal(sig));
		ha_cancel(ha, c);
		return false;
	case LOOP_STOP_ASK:
		break;
	}
	if (sig != SIGTERM || !ha_peer(ha))
		return false;
	r = ha_handover(ha, c, NULL, "SIGTERM", true, stop_done, NULL, NULL);
	if (r == 1)
		return true;
	if (r == -EBUSY) { /* the console's handover first, then the rest */
		ha_stop_after(ha, "SIGTERM", stop_done, NULL);
		return true;
	}
	return false;
}

/* Stopped another way (SIGINT) while a handover waited: end it, say so. */
static void ha_exit_hook(void *arg)
{
	struct ctl *c = arg;

	if (ha_busy(c->ha))
		ha_cancel(c->ha, c);
}

/* A group added at run time: its partition and role, before it is published. */
static void ha_group_hook(void *arg, struct group *g, bool added)
{
	struct ctl *c = arg;

	if (added)
		ha_group_assign(c->ha, g);
}

/* A handover of the console is over: its report is the command's reply. */
static void console_done(struct ctl *c, void *arg, int rc, const char *report)
{
	console_complete(c, (uint64_t)(uintptr_t)arg, report, !rc);
}

/* The console's shutdown with a peer (console_on_shutdown): a handover first, as SIGTERM. */
static int shutdown_hold(struct ctl *c, FILE *out)
{
	if (!ha_peer(c->ha))
		return 0;
	return ha_handover(c->ha, c, NULL, "console shutdown", true, console_shutdown_done,
			   (void *)(uintptr_t)console_defer(c), out);
}

static int cmd_role(struct ctl *c, char *args, FILE *out)
{
	char *a = concmd_word(&args), *b = concmd_word(&args), *role = b ? b : a;
	bool standby;

	if (!a) {
		ha_show(c->ha, c, out);
		return 0;
	}
	if (concmd_no_args("role", args, out))
		return -1;
	if (!strcmp(role, "active"))
		standby = false;
	else if (!strcmp(role, "standby"))
		standby = true;
	else {
		fprintf(out, "role: expected [partition] active|standby, not '%s'\n", role);
		return -1;
	}
	return ha_role_set(c->ha, c, b ? a : NULL, standby, "console role command", out) ? -1 : 0;
}

static int cmd_ha(struct ctl *c, char *args, FILE *out)
{
	if (concmd_no_args("ha", args, out))
		return -1;
	ha_show(c->ha, c, out);
	return 0;
}

static int cmd_handover(struct ctl *c, char *args, FILE *out)
{
	char *part = concmd_word(&args);
	uint64_t token;
	int r;

	if (concmd_no_args("handover", args, out))
		return -1;
	token = console_defer(c);
	if (!token) {
		fprintf(out, "handover: only from a console client (its reply comes later)\n");
		return -1;
	}
	r = ha_handover(c->ha, c, part, "console handover", false, console_done,
			(void *)(uintptr_t)token, out);
	return r == 1 ? CONSOLE_PENDING : r ? -1 : 0;
}

/* The peer's side of a handover (ha.h): sent by the other bridge's handover. */
static int cmd_takeover(struct ctl *c, char *args, FILE *out)
{
	return ha_takeover(c->ha, c, args, out) ? -1 : 0;
}

static const struct console_cmd ha_cmds[] = {
	{{"ha", NULL, "HA partitions: role, since when, transitions, last reason", false}, cmd_ha},
	{{"handover", "[partition]",
	  "make the peer (--ha-peer-control) active, then this bridge standby", false},
	 cmd_handover},
	{{"role", "[partition] active|standby", "set the HA role (no argument: as ha)", false},
	 cmd_role},
	{{"takeover", "prepare|commit partition id",
	  "HA: the peer's side of a handover (sent by the other bridge's handover)", false},
	 cmd_takeover},
	{{NULL, NULL, NULL, false}, NULL},
};

/* The commands and hooks of HA (ha_start). */
static int ha_register(struct ctl *c)
{
	int r = console_cmd_register(ha_cmds);

	if (!r)
		console_on_shutdown(shutdown_hold);
	if (!r && (loop_on_stop(ha_stop_hook, c) || loop_on_exit(ha_exit_hook, c) ||
		   loop_on_group(ha_group_hook, c) || loop_on_pass(ha_pass, c)))
		r = -ENOMEM;
	return r;
}
