/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ha.c - partitions and roles of an HA pair (ha.h, docs/operations.md).
 *
 * The peer is reached through its console socket with the console's own protocol (a
 * command line; the reply is text, NUL, a status byte, newline): a few lines of socket
 * code rather than a library, as bcom does.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bridge.h"
#include "ctl.h"
#include "ha.h"
#include "log.h"
#include "options.h"
#include "show.h"

struct ha_map {
	uint32_t addr; /* group address, network order */
	uint32_t part;
	char spec[80];
};

struct ha {
	struct ha_part *part;
	uint32_t nparts;
	struct ha_map *map;
	uint32_t nmap;
	char *peer;
};

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
	if (!n || n >= HA_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
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
		struct ha_map *m;

		memset(g, 0, sizeof(*g));
		r = group_spec_parse(g, tok, MGID_RDMA, 4711, -1, err, errlen);
		if (r)
			goto out;
		for (uint32_t i = 0; i < ha->nmap; i++) {
			if (ha->map[i].addr == g->addr && ha->map[i].part != (uint32_t)idx) {
				r = opt_errf(err, errlen, -EINVAL,
					     "partition %s: group %s is in partition %s already",
					     name, tok, ha->part[ha->map[i].part].name);
				goto out;
			}
		}
		m = realloc(ha->map, sizeof(*m) * (ha->nmap + 1));
		if (!m) {
			r = opt_errf(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		ha->map = m;
		m[ha->nmap].addr = g->addr;
		m[ha->nmap].part = (uint32_t)idx;
		snprintf(m[ha->nmap].spec, sizeof(m[ha->nmap].spec), "%s", tok);
		ha->nmap++;
	}
out:
	/* Bad input changes nothing; a reload checks the line but keeps the partitions of
	 * the start (they are start-up only: roles change on the console). */
	if (r || feat_running_get()) {
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
	char *p;

	if (!*arg || strlen(arg) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return opt_errf(err, errlen, -EINVAL, "ha-peer-control '%s': not a socket path",
				arg);
	if (feat_running_get())
		return 0; /* a reload: start-up only */
	p = strdup(arg);
	if (!p)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	free(ha->peer);
	ha->peer = p;
	return 0;
}

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
	return ha;
fail:
	ha_free(ha);
	return NULL;
}

void ha_free(struct ha *ha)
{
	if (!ha)
		return;
	free(ha->part);
	free(ha->map);
	free(ha->peer);
	free(ha);
}

static uint32_t group_part(const struct ha *ha, const struct group *g)
{
	for (uint32_t i = 0; i < ha->nmap; i++)
		if (ha->map[i].addr == g->addr)
			return ha->map[i].part;
	return 0;
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

int ha_start(struct ha *ha, struct ctl *c, char *err, size_t errlen)
{
	struct bridge *br = c->br;

	for (uint32_t i = 0; i < ha->nmap; i++)
		if (!group_array_find(br->groups, br->ngroups, ha->map[i].addr))
			return opt_errf(err, errlen, -EINVAL,
					"partition %s: group %s is not bridged (-m, -i, -o)",
					ha->part[ha->map[i].part].name, ha->map[i].spec);
	for (uint32_t i = 0; i < br->ngroups; i++)
		ha_group_assign(ha, br->groups[i]);
	bridge_flows_stale(br);
	for (uint32_t i = 0; i < ha->nparts; i++) {
		ha->part[i].since_ms = mono_ms();
		ha->part[i].since_wall = time(NULL);
	}
	count_groups(ha, br);
	return 0;
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
	return ha->peer;
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
		log_warn("partition %s: a worker did not empty its queues in %d ms: going standby anyway",
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
	fprintf(out, "partition %s: %s -> %s\n", p->name, role_name(!standby), role_name(standby));
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

/*
 * Send one console command to the peer and wait for its reply. Returns 0 if the peer
 * answered success, -EREMOTEIO if it answered failure, another negative errno if it
 * could not be asked. The reply text goes to out.
 */
static int peer_command(const char *path, const char *cmd, FILE *out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint64_t deadline = mono_ms() + HA_PEER_TIMEOUT_MS;
	char buf[4096];
	size_t have = 0;
	int fd, r;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, cmd, strlen(cmd), MSG_NOSIGNAL) != (ssize_t)strlen(cmd) ||
	    send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		r = -errno;
		close(fd);
		return r;
	}
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = mono_ms();
		char *nul;
		ssize_t n;

		if (now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			continue;
		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0) {
			r = n < 0 ? -errno : -ECONNRESET;
			break;
		}
		have += (size_t)n;
		nul = memchr(buf, '\0', have);
		if (nul && (size_t)(nul - buf) + 1 < have) {
			fwrite(buf, 1, (size_t)(nul - buf), out);
			r = nul[1] == '0' ? 0 : -EREMOTEIO;
			break;
		}
		if (have == sizeof(buf) - 1) { /* a long text before the end: keep its tail */
			fwrite(buf, 1, have / 2, out);
			memmove(buf, buf + have / 2, have - have / 2);
			have -= have / 2;
		}
	}
	close(fd);
	return r;
}

int ha_handover(struct ha *ha, struct ctl *c, const char *name, const char *why, FILE *out)
{
	int idx = -1, done = 0;

	if (!ha->peer) {
		fprintf(out, "handover: no peer (--ha-peer-control)\n");
		return -EINVAL;
	}
	if (name && (idx = part_find(ha, name)) < 0) {
		fprintf(out, "handover: no partition '%s' (see ha)\n", name);
		return -ENOENT;
	}
	for (uint32_t i = 0; i < ha->nparts; i++) {
		char cmd[64 + HA_NAME_MAX], reason[96];
		int r;

		if ((idx >= 0 && i != (uint32_t)idx) || ha->part[i].standby)
			continue;
		snprintf(cmd, sizeof(cmd), "role %s active", ha->part[i].name);
		r = peer_command(ha->peer, cmd, out);
		if (r) {
			fprintf(out, "handover: partition %s: the peer at %s %s: staying active\n",
				ha->part[i].name, ha->peer,
				r == -EREMOTEIO ? "refused" : strerror(-r));
			log_warn("handover of partition %s to %s failed (%s): staying active",
				 ha->part[i].name, ha->peer,
				 r == -EREMOTEIO ? "refused" : strerror(-r));
			return r;
		}
		snprintf(reason, sizeof(reason), "%s: peer active", why);
		part_set(ha, c, i, true, reason, out);
		done++;
	}
	if (!done)
		fprintf(out, "handover: no active partition%s%s here\n", name ? " " : "",
			name ? name : "");
	return 0;
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
		show_side_stats(c->br, s, false, &st);
		fprintf(out, "%s standby_pkts=%" PRIu64 "\n", side_name[s], st.standby);
	}
	fprintf(out, "peer_control %s\n", ha->peer ? ha->peer : "-");
}
