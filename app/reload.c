// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The reload (app.h): SIGHUP and the console's reload parse the configuration again,
 * apply the runtime features and the group changes, and refuse what needs a restart
 * (config, --check --running-config).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "bridge.h"
#include "capture.h"
#include "console.h"
#include "ctl.h"
#include "groupopts.h"
#include "groups.h"
#include "ha.h"
#include "hanet.h"
#include "daemon.h"
#include "fwd.h"
#include "health.h"
#include "log.h"
#include "loop.h"
#include "metrics_http.h"
#include "notify.h"
#include "options.h"
#include "paths.h"
#include "pgm.h"
#include "placement.h"
#include "report.h"
#include "setup.h"
#include "show.h"
#include "sysgroup.h"
#include "tune.h"
#include "version_line.h"

#include "app.h"

/* ---- Reload (SIGHUP, the console's reload) ---- */

struct app_live live;

/*
 * Is the running group a what the file's group b asks for? Both sides' identities (an
 * IPv4 address, an IPv6 group, a native MGID), the direction, port, format, traffic
 * class and Q_Keys: any difference is a change of the group (left, then joined again).
 * The weight is not: it is taken over in place.
 */
static bool same_group(const struct group *a, const struct group *b)
{
	return a->addr == b->addr && a->ib_addr == b->ib_addr && a->roce_v6 == b->roce_v6 &&
	       a->ib_native == b->ib_native &&
	       (!a->ib_native || !memcmp(&a->mgid[SIDE_IB], &b->mgid[SIDE_IB], 16)) &&
	       (!a->roce_v6 || !memcmp(&a->mgid[SIDE_ROCE], &b->mgid[SIDE_ROCE], 16)) &&
	       a->qkey[SIDE_IB] == b->qkey[SIDE_IB] && a->qkey[SIDE_ROCE] == b->qkey[SIDE_ROCE] &&
	       a->dir == b->dir && a->port == b->port && a->fmt == b->fmt &&
	       a->tos_set == b->tos_set && (!a->tos_set || a->tos == b->tos);
}

/*
 * The group of list x (indexed) that is g as configured (same_group), or NULL. A list
 * holds no two groups with an MGID in common (add_group, ctl_group_insert), so the only
 * candidate is the one group_index_same names: a group configured alike has both of g's
 * MGIDs.
 */
static const struct group *running_match(const struct group_index *x, const struct group *g)
{
	const char *why;
	const struct group *m = group_index_same(x, g, &why);

	return m && same_group(m, g) ? m : NULL;
}

static void free_want(struct opts *o)
{
	for (uint32_t i = 0; i < o->nwant; i++)
		free(o->want[i]);
	free(o->want);
	o->want = NULL;
	o->nwant = o->want_cap = 0;
}

/*
 * Parse the command line again (and with it every config file). The handlers write into
 * the struct opts they were registered with (main's), so it is switched to reload mode
 * for the parse: groups collected into want, settings into *shadow; the result is copied
 * to *res and main's opts restored.
 */
static int reparse(struct bridge_cfg *shadow, struct opts *res, char *err, size_t errlen)
{
	struct opts *o = live.o, saved = *o;
	int ret, here = open(".", O_PATH | O_CLOEXEC);

	cfg_defaults(shadow);
	o->cfg = shadow;
	groupopts_defaults_init(&o->gd, DEFAULT_PORT);
	o->control[0] = o->pidfile[0] = o->metrics[0] = o->control_group[0] = 0;
	o->control_cpu = -1;
	o->allowed_cpus[0] = 0;
	o->affinity_cpus[0] = 0;
	o->metrics_port = 0;
	metrics_http_cfg_init(&o->mh);
	o->reloading = true;
	o->want = NULL;
	o->nwant = o->want_cap = 0;
	memset(&o->gidx, 0, sizeof(o->gidx));
	if (live.cwd >= 0 && fchdir(live.cwd))
		log_debug("reload: fchdir: %s", strerror(errno));
	ret = opt_parse_argv(live.argc, live.argv, err, errlen);
	if (here >= 0) {
		if (fchdir(here))
			log_debug("reload: fchdir back: %s", strerror(errno));
		close(here);
	}
	group_index_free(&o->gidx);
	*res = *o;
	*o = saved;
	return ret < 0 ? ret : 0;
}

/*
 * The settings a reload cannot change, one "name value" line each, in a fixed order:
 * what the engine opened, sized or pinned at start. With feats, the start-up-only
 * features too ("feature buffers 65536"). The console's config command prints the
 * running bridge's; --check --running-config compares a new file's with them.
 */
static void restart_settings(FILE *out, const struct bridge_cfg *c, const struct opts *o,
			     bool feats)
{
	/* Port 0: the first active one. */
	fprintf(out, "device %s", c->ib_dev[0] ? c->ib_dev : "auto");
	fprintf(out, c->ib_port ? ":%u\n" : "\n", c->ib_port);
	fprintf(out, "roce %s", c->roce_dev[0] ? c->roce_dev : "auto");
	fprintf(out, c->roce_port ? ":%u\n" : "\n", c->roce_port);
	fprintf(out, "workers %u\n", c->nworkers);
	fputs("cpus ", out);
	for (uint32_t i = 0; i < c->ncpus; i++)
		fprintf(out, "%s%d", i ? "," : "", c->cpus[i]);
	fputs(c->ncpus ? "\n" : "auto\n", out);
	fprintf(out, "idle %s\n", c->idle == IDLE_BACKOFF ? "backoff" : "spin");
	if (o->control_cpu < 0)
		fputs("control-cpu auto\n", out);
	else
		fprintf(out, "control-cpu %d\n", o->control_cpu);
	fputs("peer ", out);
	for (uint32_t i = 0; i < c->npeers; i++)
		fprintf(out, "%s%s", i ? "," : "",
			inet_ntoa(*(const struct in_addr *)&c->peers[i]));
	for (uint32_t i = 0; i < c->npeers6; i++) {
		char a6[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, c->peers6[i].raw, a6, sizeof(a6));
		fprintf(out, "%s%s", i || c->npeers ? "," : "", a6);
	}
	fputs(c->npeers || c->npeers6 ? "\n" : "none\n", out);
	fprintf(out, "control %s\n", o->control[0] ? o->control : "default");
	fprintf(out, "control-group %s\n", o->control_group[0] ? o->control_group : "none");
	fprintf(out, "pidfile %s\n", o->pidfile[0] ? o->pidfile : "default");
	fprintf(out, "metrics-file %s\n", o->metrics[0] ? o->metrics : "none");
	fprintf(out, "metrics-port %u\n", o->metrics_port);
	fprintf(out, "metrics-address %s\n", inet_ntoa(o->mh.addr));
	fputs("metrics-allow ", out);
	for (uint32_t i = 0; i < o->mh.nallow; i++) {
		struct in_addr a = {o->mh.allow[i].addr};

		fprintf(out, "%s%s/%d", i ? "," : "", inet_ntoa(a),
			__builtin_popcount(o->mh.allow[i].mask));
	}
	fputs(o->mh.nallow ? "\n" : "loopback\n", out);
	if (feats)
		feat_startup_print(out);
}

/* Why a setting of restart_settings cannot change while running. */
static const char *restart_why(const char *name)
{
	static const struct {
		const char *name, *why;
	} why[] = {
		{"device", "the devices are opened at start"},
		{"roce", "the devices are opened at start"},
		{"workers", "the engine sized its workers and channel pairs at start"},
		{"cpus", "the workers are pinned at start"},
		{"idle", "the workers read it at start"},
		{"control-cpu", "the control thread is pinned at start"},
		{"peer", "the peers' addresses are set up at start"},
		{"control", "the console socket is bound at start"},
		{"control-group", "the console socket is bound at start"},
		{"pidfile", "the pid file is locked at start"},
		{"metrics-file", "the metrics file is opened at start"},
		{"metrics-port", "the metrics listener is bound at start"},
		{"metrics-address", "the metrics listener is bound at start"},
		{"metrics-allow", "the metrics listener reads it at start"},
	};

	if (!strncmp(name, "feature ", 8))
		return FEAT_RESTART_WHY;
	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++)
		if (!strcmp(why[i].name, name))
			return why[i].why;
	return "read at start";
}

/* Split a "name value" line of restart_settings; "feature X V" keeps "feature X" whole. */
static bool restart_split(char *line, char **name, char **value)
{
	char *sp = strchr(line, ' ');

	if (sp && !strncmp(line, "feature ", 8))
		sp = strchr(sp + 1, ' ');
	if (!sp)
		return false;
	*sp = 0;
	*name = line;
	*value = sp + 1;
	return true;
}

/*
 * Compare two restart_settings texts: "needs a restart: NAME OLD -> NEW (why)" for each
 * setting whose value differs, a setting missing from old counted as unknown. Returns
 * the number of differences.
 */
static unsigned restart_diff(const char *old, const char *new, FILE *out)
{
	char *o = strdup(old), *n = strdup(new), *save = NULL, *line;
	unsigned diffs = 0;

	if (!o || !n) {
		free(o);
		free(n);
		fprintf(out, "needs a restart: unknown (out of memory)\n");
		return 1;
	}
	for (line = strtok_r(n, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *name, *value, *osave = NULL, *ol, *was = NULL, *oc = strdup(o);

		if (!oc || !restart_split(line, &name, &value)) {
			free(oc);
			continue;
		}
		for (ol = strtok_r(oc, "\n", &osave); ol && !was;
		     ol = strtok_r(NULL, "\n", &osave)) {
			char *on, *ov;

			if (restart_split(ol, &on, &ov) && !strcmp(on, name))
				was = ov;
		}
		if (!was || strcmp(was, value)) {
			fprintf(out, "needs a restart: %s %s -> %s (%s)\n", name,
				was ? was : "(not in the running configuration)", value,
				restart_why(name));
			diffs++;
		}
		free(oc);
	}
	free(o);
	free(n);
	return diffs;
}

/* restart_settings into a string (caller frees), NULL when out of memory. */
static char *restart_text(const struct bridge_cfg *c, const struct opts *o, bool feats)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	restart_settings(f, c, o, feats);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The console's config: the running bridge's restart settings (ctl.config). */
int config_print(struct ctl *c, FILE *out)
{
	(void)c;
	restart_settings(out, &live.given, &live.first, true);
	return 0;
}

/*
 * --check --running-config FILE: the new configuration's restart settings against those
 * of a running bridge (FILE: what `bcom config` printed, "-": standard input). Prints a
 * "needs a restart: ..." line per difference, or that a reload applies it. Returns the
 * exit status: 0 (a reload is enough), 3 (a restart is needed), 1 (FILE unreadable).
 */
int check_running(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *old = NULL, *new;
	size_t cap = 0, len = 0, n;
	char chunk[4096];
	unsigned diffs;

	if (!f) {
		fprintf(stderr, "ib2roce: --running-config %s: %s\n", path, strerror(errno));
		return 1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		char *b = realloc(old, cap = len + n + 1);

		if (!b)
			break;
		old = b;
		memcpy(old + len, chunk, n);
		len += n;
		old[len] = 0;
	}
	if (f != stdin)
		fclose(f);
	if (!old || !strstr(old, "workers ")) {
		fprintf(stderr,
			"ib2roce: --running-config %s: no 'workers' line: expected what `bcom "
			"config` prints\n",
			path);
		free(old);
		return 1;
	}
	new = restart_text(&live.given, &live.first, true);
	diffs = new ? restart_diff(old, new, stdout) : 1;
	if (!diffs)
		printf("a reload applies it: no setting needs a restart\n");
	(void)cap;
	free(old);
	free(new);
	return diffs ? 3 : 0;
}

/*
 * Read the configuration again: a first pass validates everything and changes nothing
 * (an error leaves the bridge as it was); a setting that needs a restart (a device, the
 * workers, CPUs, a start-up-only feature: restart_settings) refuses the whole reload,
 * each named with old -> new and why; otherwise the second pass applies runtime
 * features (each change noted old -> new); then the groups: those no longer configured
 * are left, new ones joined, changed ones (direction, port, format, class) left and
 * joined again. The notes go to out (the log for SIGHUP, the reply and the log for the
 * console). Returns 0, or -EINVAL when refused or a change failed.
 */
int reload(struct ctl *c, FILE *out)
{
	struct opts *o = live.o;
	struct bridge_cfg shadow;
	struct opts r = {0};
	/* The running groups and the configuration's, indexed: the lists are matched one
	 * against the other, thousands of groups each (running_match). */
	struct group_index run = {0}, conf = {0};
	char err[OPT_ERR_LEN];
	uint32_t added = 0, removed = 0, failed = 0;
	int ret;

	char *was = NULL, *now = NULL;
	unsigned restarts;

	feat_reload_mode(true, true, out);
	ret = reparse(&shadow, &r, err, sizeof(err));
	feat_reload_mode(false, false, NULL);
	/* Files that pass one at a time but not together (a key of another certificate). */
	if (!ret && c->ha)
		ret = hanet_reload_check(ha_net(c->ha), err, sizeof(err));
	if (ret) {
		fprintf(out, "%s; nothing changed\n", err);
		ret = -ECANCELED; /* refused (ctl_reload) */
		goto done;
	}
	/* Settings the engine took at start: any change refuses the whole reload, so the
	 * running configuration stays one that a restart would also give (live.given: what
	 * was given, defaults filled in later are not in shadow either). */
	restarts = feat_reload_restarts();
	was = restart_text(&live.given, &live.first, false);
	now = restart_text(&shadow, &r, false);
	restarts += was && now ? restart_diff(was, now, out) : 1;
	free(was);
	free(now);
	if (restarts) {
		fprintf(out,
			"reload refused: %u setting%s need%s a restart; nothing changed (restart "
			"the service to apply the file)\n",
			restarts, restarts == 1 ? "" : "s", restarts == 1 ? "s" : "");
		ret = -ECANCELED; /* refused (ctl_reload) */
		goto done;
	}
	/* A new group with a controlled Q_Key the kernel would refuse: nothing changes. */
	if (group_index_sync(&run, o->br->groups, o->br->ngroups)) {
		fprintf(out, "reload refused: out of memory; nothing changed\n");
		ret = -ECANCELED;
		goto done;
	}
	for (uint32_t k = 0; k < r.nwant; k++) {
		bool have = running_match(&run, r.want[k]) != NULL;

		if (!have && group_qkey_check(o->br, r.want[k], err, sizeof(err))) {
			fprintf(out, "reload refused: %s; nothing changed\n", err);
			ret = -ECANCELED;
			goto done;
		}
	}
	free_want(&r);
	feat_reload_mode(true, false, out);
	ret = reparse(&shadow, &r, err, sizeof(err));
	feat_reload_mode(false, false, NULL);
	if (!ret && c->ha)
		ret = hanet_reload_check(ha_net(c->ha), err, sizeof(err));
	if (ret) { /* the files changed between the two passes */
		fprintf(out, "%s\n", err);
		ret = -ECANCELED; /* nothing changed either: refused */
		goto done;
	}
	console_conf_groups(r.want, r.nwant); /* the configuration's groups (unbridged) */
	if (group_index_sync(&conf, r.want, r.nwant)) {
		fprintf(out, "reload: out of memory matching the groups; no group changed\n");
		ret = -EINVAL;
		goto done;
	}
	for (uint32_t i = 0; i < o->br->ngroups;) {
		struct group *g = o->br->groups[i];
		const struct group *want = running_match(&conf, g);

		if (want) {
			/* A new weight counts for the groups placed from now on; this one
			 * stays on its pair. The spec (control thread) says it. */
			if (g->weight != want->weight) {
				g->weight = want->weight;
				ctl_group_census_drop(c);
			}
			memcpy(g->spec, want->spec, sizeof(g->spec));
			i++;
			continue;
		}
		fprintf(out, "leaving %s\n", g->spec);
		if (ctl_group_remove(c, g->spec, err, sizeof(err))) {
			fprintf(out, "%s\n", err);
			i++;
			failed++;
			continue;
		}
		removed++;
	}
	/* The running list after the leaves: the joins below add only groups that no
	 * other of the configuration's matches (it has no two alike: add_group). */
	group_index_free(&run);
	if (group_index_sync(&run, o->br->groups, o->br->ngroups)) {
		fprintf(out, "reload: out of memory; no group joined\n");
		ret = -EINVAL;
		goto done;
	}
	for (uint32_t k = 0; k < r.nwant; k++) {
		struct group *w = r.want[k];

		if (running_match(&run, w))
			continue;
		r.want[k] = NULL; /* ctl_group_insert owns it now */
		fprintf(out, "joining %s (%s)\n", w->spec, group_dir_name[w->dir]);
		if (ctl_group_insert(c, w, err, sizeof(err))) {
			fprintf(out, "%s\n", err);
			failed++;
			continue;
		}
		added++;
	}
	fprintf(out, "%u group%s added, %u removed%s\n", added, added == 1 ? "" : "s", removed,
		failed ? ", some changes failed" : "");
	ret = failed ? -EINVAL : 0;
done:
	group_index_free(&run);
	group_index_free(&conf);
	free_want(&r);
	live.o = o;
	return ret;
}
