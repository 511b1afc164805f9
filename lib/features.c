/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * features.c - the runtime feature registry (see feat.h): a growing array of
 * definitions; values live in the registering modules' atomics. Also the built-in
 * options --enable and --disable, registered in the option registry (optreg.h), which
 * in turn knows nothing of the features but what opt_ext_set() tells it.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "feat.h"
#include "optnum.h"
#include "optreg.h"
#include "suggest.h"

struct feat_entry {
	struct feat_def def; /* name and help owned by the registry */
};

/* Where --enable and --disable without a name list the features (feat_register_options);
 * kept by feat_registry_clear(), like the options that print there. */
static FILE *feat_out;

static struct {
	struct feat_entry *feats;
	size_t n, cap;
	bool running;
	/* Reload (feat_reload_mode): validate only, and report instead of refusing. */
	bool reload, dry;
	FILE *notes;
	unsigned restarts; /* start-up-only features the reload would change */
} freg;

static void format_value(const struct feat_def *d, int64_t v, char *buf, size_t len);

static bool valid_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static struct feat_entry *find_exact(const char *name, size_t len)
{
	for (size_t i = 0; i < freg.n; i++)
		if (strlen(freg.feats[i].def.name) == len &&
		    !strncasecmp(freg.feats[i].def.name, name, len))
			return &freg.feats[i];
	return NULL;
}

static bool in_range(const struct feat_def *d, int64_t v)
{
	return v >= d->min && v <= d->max;
}

int feat_register(const struct feat_def *def)
{
	struct feat_entry *e = NULL;
	struct feat_def d;

	if (!def || !valid_name(def->name) || !def->help || !def->value)
		return -EINVAL;
	d = *def;
	switch (d.type) {
	case FEAT_BOOL:
		d.min = d.off = 0;
		d.max = d.on = 1;
		d.has_on = d.has_off = true;
		break;
	case FEAT_INT:
		if (d.min > d.max || (d.has_on && !in_range(&d, d.on)) ||
		    (d.has_off && !in_range(&d, d.off)))
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (!in_range(&d, d.def))
		return -EINVAL;
	if (find_exact(d.name, strlen(d.name)))
		return -EEXIST;
	if (freg.n == freg.cap) {
		size_t cap = freg.cap ? 2 * freg.cap : 16;
		struct feat_entry *f = realloc(freg.feats, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		freg.feats = f;
		freg.cap = cap;
	}
	d.name = strdup(def->name);
	d.help = strdup(def->help);
	if (!d.name || !d.help) {
		free((char *)d.name);
		free((char *)d.help);
		return -ENOMEM;
	}
	e = &freg.feats[freg.n++];
	e->def = d;
	/* Relaxed: registration happens before any reader thread exists. */
	atomic_store_explicit(d.value, d.def, memory_order_relaxed);
	return 0;
}

/* Exact name (any case) first, else the one feature the name is a prefix of. */
static int lookup(const char *name, size_t len, struct feat_entry **out, char *err, size_t errlen)
{
	struct feat_entry *e = find_exact(name, len);
	size_t matches = 0;

	if (e) {
		*out = e;
		return 0;
	}
	for (size_t i = 0; i < freg.n; i++)
		if (!strncasecmp(freg.feats[i].def.name, name, len)) {
			e = &freg.feats[i];
			matches++;
		}
	if (matches == 1) {
		*out = e;
		return 0;
	}
	if (!matches) {
		const char *best = NULL;
		size_t best_d = 0;

		for (size_t i = 0; i < freg.n; i++)
			suggest_consider(name, len, freg.feats[i].def.name, &best, &best_d);
		if (best)
			return errf(err, errlen, -EINVAL,
				    "unknown feature '%.*s': did you mean %s?", (int)len, name,
				    best);
		return errf(err, errlen, -EINVAL,
			    "unknown feature '%.*s' (see --enable without argument)", (int)len,
			    name);
	}
	errf(err, errlen, -EINVAL, "ambiguous feature '%.*s' (", (int)len, name);
	matches = 0;
	for (size_t i = 0; i < freg.n; i++)
		if (!strncasecmp(freg.feats[i].def.name, name, len))
			errf_append(err, errlen, "%s%s", matches++ ? ", " : "",
				    freg.feats[i].def.name);
	errf_append(err, errlen, ")");
	return -EINVAL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The value feat_set() would store, range-checked; -EINVAL with a message. */
static int new_value(const struct feat_def *d, const char *value, bool enable, int64_t *v,
		     char *err, size_t errlen)
{
	char msg[OPT_ERR_LEN];
	bool b;

	if (!enable) {
		if (value)
			return errf(err, errlen, -EINVAL, "feature '%s': disable takes no value",
				    d->name);
		if (!d->has_off)
			return errf(err, errlen, -EINVAL, "feature '%s' cannot be disabled",
				    d->name);
		*v = d->off;
		return 0;
	}
	if (!value) {
		if (!d->has_on)
			return errf(err, errlen, -EINVAL, "feature '%s' needs a value (%s=VALUE)",
				    d->name, d->name);
		*v = d->on;
		return 0;
	}
	if (d->type == FEAT_BOOL) {
		if (opt_parse_bool(value, &b, msg, sizeof(msg)))
			return errf(err, errlen, -EINVAL, "feature '%s': %s", d->name, msg);
		*v = b;
		return 0;
	}
	if (opt_parse_int(value, d->min, d->max, v, msg, sizeof(msg)))
		return errf(err, errlen, -EINVAL, "feature '%s': %s", d->name, msg);
	return 0;
}

int feat_set(const char *spec, bool enable, bool running, char *err, size_t errlen)
{
	char msg[OPT_ERR_LEN], *value = NULL, *copy, *p;
	struct feat_entry *e = NULL;
	size_t len;
	int64_t v, old;
	int ret;

	if (!spec)
		return errf(err, errlen, -EINVAL, "missing feature name");
	copy = strdup(spec);
	if (!copy)
		return errf(err, errlen, -ENOMEM, "out of memory");
	/* "name", "name=value", "name value", with blanks around. */
	for (p = copy; is_blank(*p); p++)
		;
	spec = p;
	len = strcspn(p, "= \t");
	p += len;
	if (*p) {
		bool eq = false;

		for (; is_blank(*p) || (*p == '=' && !eq); p++)
			eq |= *p == '=';
		value = p;
		for (p += strlen(p); p > value && is_blank(p[-1]); p--)
			;
		*p = '\0';
		if (!*value && !eq)
			value = NULL;
	}
	if (!len) {
		ret = errf(err, errlen, -EINVAL, "missing feature name");
		goto out;
	}
	ret = lookup(spec, len, &e, err, errlen);
	if (ret)
		goto out;
	if (value && !*value) {
		ret = errf(err, errlen, -EINVAL, "feature '%s': missing value after '='",
			   e->def.name);
		goto out;
	}
	ret = new_value(&e->def, value, enable, &v, err, errlen);
	if (ret)
		goto out;
	if (running && !e->def.runtime && freg.reload) {
		if (v != feat_load(e->def.value)) {
			char o[32], n[32];

			freg.restarts++;
			format_value(&e->def, feat_load(e->def.value), o, sizeof(o));
			format_value(&e->def, v, n, sizeof(n));
			if (freg.notes)
				fprintf(freg.notes, "needs a restart: feature %s %s -> %s (%s)%s\n",
					e->def.name, o, n, FEAT_RESTART_WHY,
					freg.dry ? "" : ": kept");
		}
		goto out;
	}
	if (freg.reload && freg.dry)
		goto out;
	old = feat_load(e->def.value);
	if (running && !e->def.runtime) {
		if (v != feat_load(e->def.value))
			ret = errf(err, errlen, -EBUSY,
				   "feature '%s' cannot change while running (needs a restart)",
				   e->def.name);
		goto out;
	}
	if (e->def.apply) {
		msg[0] = '\0';
		ret = e->def.apply(e->def.ctx, v, msg, sizeof(msg));
		if (ret < 0) {
			errf(err, errlen, ret, "feature '%s': %s", e->def.name,
			     msg[0] ? msg : "rejected");
			goto out;
		}
		ret = 0;
	}
	/* Relaxed: pairs with feat_load() in any thread; orders nothing else. */
	atomic_store_explicit(e->def.value, v, memory_order_relaxed);
	if (freg.reload && freg.notes && v != old) {
		char o[32], n[32];

		format_value(&e->def, old, o, sizeof(o));
		format_value(&e->def, v, n, sizeof(n));
		fprintf(freg.notes, "feature '%s': %s -> %s\n", e->def.name, o, n);
	}
out:
	free(copy);
	return ret;
}

void feat_reload_mode(bool on, bool dry, FILE *notes)
{
	freg.reload = on;
	freg.dry = on && dry;
	freg.notes = on ? notes : NULL;
	if (on)
		freg.restarts = 0;
}

unsigned feat_reload_restarts(void)
{
	return freg.restarts;
}

void feat_startup_print(FILE *out)
{
	for (size_t i = 0; i < freg.n; i++) {
		const struct feat_def *d = &freg.feats[i].def;
		char v[32];

		if (d->runtime)
			continue;
		format_value(d, feat_load(d->value), v, sizeof(v));
		fprintf(out, "feature %s %s\n", d->name, v);
	}
}

int feat_get(const char *name, int64_t *value)
{
	struct feat_entry *e = name ? find_exact(name, strlen(name)) : NULL;

	if (!e)
		return -ENOENT;
	*value = feat_load(e->def.value);
	return 0;
}

size_t feat_count(void)
{
	return freg.n;
}

static void format_value(const struct feat_def *d, int64_t v, char *buf, size_t len)
{
	if (d->type == FEAT_BOOL)
		snprintf(buf, len, "%s", v ? "on" : "off");
	else
		snprintf(buf, len, "%" PRId64, v);
}

static void format_range(const struct feat_def *d, char *buf, size_t len)
{
	if (d->type == FEAT_BOOL)
		snprintf(buf, len, "on/off");
	else
		snprintf(buf, len, "%" PRId64 "..%" PRId64, d->min, d->max);
}

/* Column widths: at least the header's, at most what the widest entry needs. */
enum { COL_NAME, COL_VALUE, COL_DEFAULT, COL_RANGE, COL_CHANGE, COLS };

void feat_list(FILE *out)
{
	static const char *const head[COLS] = {"NAME", "VALUE", "DEFAULT", "RANGE", "CHANGE"};
	char cell[COLS][48];
	int w[COLS];

	for (int c = 0; c < COLS; c++)
		w[c] = (int)strlen(head[c]);
	w[COL_CHANGE] = (int)strlen("runtime"); /* or "restart" */
	for (size_t i = 0; i < freg.n; i++) {
		const struct feat_def *d = &freg.feats[i].def;

		format_value(d, feat_load(d->value), cell[COL_VALUE], sizeof(cell[0]));
		format_value(d, d->def, cell[COL_DEFAULT], sizeof(cell[0]));
		format_range(d, cell[COL_RANGE], sizeof(cell[0]));
		w[COL_NAME] =
			(int)strlen(d->name) > w[COL_NAME] ? (int)strlen(d->name) : w[COL_NAME];
		for (int c = COL_VALUE; c <= COL_RANGE; c++)
			if ((int)strlen(cell[c]) > w[c])
				w[c] = (int)strlen(cell[c]);
	}
	fprintf(out, "  %-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w[COL_NAME], head[COL_NAME],
		w[COL_VALUE], head[COL_VALUE], w[COL_DEFAULT], head[COL_DEFAULT], w[COL_RANGE],
		head[COL_RANGE], w[COL_CHANGE], head[COL_CHANGE], "DESCRIPTION");
	for (size_t i = 0; i < freg.n; i++) {
		const struct feat_def *d = &freg.feats[i].def;

		format_value(d, feat_load(d->value), cell[COL_VALUE], sizeof(cell[0]));
		format_value(d, d->def, cell[COL_DEFAULT], sizeof(cell[0]));
		format_range(d, cell[COL_RANGE], sizeof(cell[0]));
		fprintf(out, "  %-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w[COL_NAME], d->name,
			w[COL_VALUE], cell[COL_VALUE], w[COL_DEFAULT], cell[COL_DEFAULT],
			w[COL_RANGE], cell[COL_RANGE], w[COL_CHANGE],
			d->runtime ? "runtime" : "restart", d->help);
	}
}

void feat_running_set(bool running)
{
	freg.running = running;
}

bool feat_running_get(void)
{
	return freg.running;
}

void feat_registry_clear(void)
{
	for (size_t i = 0; i < freg.n; i++) {
		free((char *)freg.feats[i].def.name);
		free((char *)freg.feats[i].def.help);
	}
	free(freg.feats);
	memset(&freg, 0, sizeof(freg));
}

/* ---- The built-in options --enable and --disable ---- */

static int builtin_feature(const char *arg, bool enable, char *err, size_t errlen)
{
	if (!arg) {
		if (opt_in_file())
			return errf(err, errlen, -EINVAL, "a feature name is required here");
		feat_list(feat_out);
		opt_request_exit();
		return 0;
	}
	return feat_set(arg, enable, feat_running_get(), err, errlen);
}

static int builtin_enable(void *ctx, const char *arg, char *err, size_t errlen)
{
	(void)ctx;
	return builtin_feature(arg, true, err, errlen);
}

static int builtin_disable(void *ctx, const char *arg, char *err, size_t errlen)
{
	(void)ctx;
	return builtin_feature(arg, false, err, errlen);
}

/* opt_help's last section. */
static void feat_help(FILE *out)
{
	if (!freg.n)
		return;
	fprintf(out, "\nFeatures (--enable NAME[=VALUE], --disable NAME):\n");
	feat_list(out);
}

/* A feature's name is the program's vocabulary, kept in config-file errors. */
static bool feat_is_name(const char *word)
{
	int64_t v;

	return !feat_get(word, &v);
}

int feat_register_options(FILE *out)
{
	const struct opt_def defs[] = {
		{.name = "enable",
		 .short_name = 'e',
		 .arg = "NAME[=VALUE]",
		 .arg_optional = true,
		 .help = "enable a feature or set its value; without NAME: list the features",
		 .handler = builtin_enable,
		 .repeatable = true},
		{.name = "disable",
		 .short_name = 'y',
		 .arg = "NAME",
		 .arg_optional = true,
		 .help = "disable a feature; without NAME: list the features",
		 .handler = builtin_disable,
		 .repeatable = true},
	};
	const struct opt_ext ext = {.help = feat_help, .is_name = feat_is_name};
	int ret;

	if (!out)
		return -EINVAL;
	feat_out = out;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		ret = opt_register(&defs[i]);
		if (ret)
			return ret;
	}
	opt_ext_set(&ext);
	return 0;
}
