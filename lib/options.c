/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * options.c - the option registry (see optreg.h): registration into a growing array,
 * getopt_long built per parse, the built-in --help and the generated help. Config files
 * are optfile.c's (the state both use is in optreg_pvt.h), the number parsers optnum.c's,
 * --enable and --disable the features' (features.c).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "optreg.h"
#include "optreg_pvt.h"

/* getopt_long returns this plus the option's index for a long option. */
#define LONG_VAL_BASE 0x100

/* Help: widest left column ("  -c, --config=FILE") before the text moves to a new line. */
#define HELP_COL_MAX 34

struct opt_reg opt_reg;

/* ---- Registration ---- */

static bool valid_long_name(const char *s)
{
	if (!s || !(islower((unsigned char)*s) || isdigit((unsigned char)*s)))
		return false;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '-' &&
		    *s != '_')
			return false;
	return true;
}

struct opt_entry *opt_find_long(const char *name)
{
	for (size_t i = 0; i < opt_reg.n; i++)
		if (!strcasecmp(opt_reg.opts[i].def.name, name))
			return &opt_reg.opts[i];
	return NULL;
}

static void def_free_strings(struct opt_def *d)
{
	free((char *)d->name);
	free((char *)d->arg);
	free((char *)d->help);
}

/* Copy the strings of src into dst; -ENOMEM leaves dst without strings. */
static int def_copy(struct opt_def *dst, const struct opt_def *src)
{
	*dst = *src;
	dst->name = src->name ? strdup(src->name) : NULL;
	dst->arg = src->arg ? strdup(src->arg) : NULL;
	dst->help = strdup(src->help);
	if ((src->name && !dst->name) || (src->arg && !dst->arg) || !dst->help) {
		def_free_strings(dst);
		return -ENOMEM;
	}
	return 0;
}

int opt_register(const struct opt_def *def)
{
	struct opt_entry *e;
	int ret;

	if (!def || !valid_long_name(def->name) || !def->handler || !def->help ||
	    (def->arg_optional && !def->arg) || (def->arg && !*def->arg))
		return -EINVAL;
	if (def->short_name && (def->short_name < 0 || def->short_name > 127 ||
				!isalnum((unsigned char)def->short_name)))
		return -EINVAL;
	if (opt_find_long(def->name) || (def->short_name && opt_reg.short_idx[def->short_name]))
		return -EEXIST;
	if (opt_reg.n == opt_reg.cap) {
		size_t cap = opt_reg.cap ? 2 * opt_reg.cap : 16;
		struct opt_entry *o = realloc(opt_reg.opts, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		opt_reg.opts = o;
		opt_reg.cap = cap;
	}
	e = &opt_reg.opts[opt_reg.n];
	ret = def_copy(&e->def, def);
	if (ret)
		return ret;
	e->given = 0;
	opt_reg.n++;
	if (def->short_name)
		opt_reg.short_idx[def->short_name] = (int)opt_reg.n;
	return 0;
}

int opt_set_positional(const char *arg, const char *help, opt_handler_fn *handler, void *ctx)
{
	struct opt_def d = {.arg = arg, .help = help, .handler = handler, .ctx = ctx};

	if (!arg || !*arg || !help || !handler)
		return -EINVAL;
	if (opt_reg.positional.handler)
		return -EEXIST;
	return def_copy(&opt_reg.positional, &d);
}

void opt_request_exit(void)
{
	opt_reg.exit_requested = true;
}

unsigned opt_given(const char *name)
{
	for (size_t i = 0; i < opt_reg.n; i++)
		if (!strcmp(opt_reg.opts[i].def.name, name))
			return opt_reg.opts[i].given;
	return 0;
}

void opt_registry_clear(void)
{
	for (size_t i = 0; i < opt_reg.n; i++)
		def_free_strings(&opt_reg.opts[i].def);
	free(opt_reg.opts);
	def_free_strings(&opt_reg.positional);
	free(opt_reg.progname);
	memset(&opt_reg, 0, sizeof(opt_reg));
}

/* ---- Applying one option (shared by argv and files) ---- */

/* Call e's handler with arg (optreg_pvt.h). */
int opt_apply(struct opt_entry *e, const char *arg, char *msg, size_t msglen, bool *located)
{
	int ret;

	msg[0] = '\0';
	opt_reg.err_located = false;
	ret = e->def.handler(e->def.ctx, arg, msg, msglen);
	*located = opt_reg.err_located;
	opt_reg.err_located = false;
	if (ret < 0) {
		if (!msg[0])
			snprintf(msg, msglen, "invalid argument");
		return ret;
	}
	e->given++;
	return 0;
}

/* ---- Command line ---- */

static int builtin_help(void *ctx, const char *arg, char *err, size_t errlen)
{
	(void)ctx;
	(void)arg;
	(void)err;
	(void)errlen;
	opt_help(opt_reg.out, opt_reg.progname);
	opt_request_exit();
	return 0;
}

int opt_register_help(FILE *out, const char *progname)
{
	const struct opt_def def = {.name = "help",
				    .short_name = 'h',
				    .help = "show this help and exit",
				    .handler = builtin_help};

	if (!out || !progname)
		return -EINVAL;
	free(opt_reg.progname);
	opt_reg.progname = strdup(progname);
	if (!opt_reg.progname)
		return -ENOMEM;
	opt_reg.out = out;
	return opt_register(&def);
}

void opt_ext_set(const struct opt_ext *ext)
{
	opt_reg.ext = ext ? *ext : (struct opt_ext){0};
}

bool opt_in_file(void)
{
	return opt_reg.depth > 0;
}

/* getopt_long's tables for the registry; -ENOMEM. */
static int build_getopt(struct option **longopts, char **shortopts)
{
	struct option *lo = calloc(opt_reg.n + 1, sizeof(*lo));
	char *so = malloc(3 * opt_reg.n + 3), *p;

	if (!lo || !so) {
		free(lo);
		free(so);
		return -ENOMEM;
	}
	/* '-': non-options in order (code 1), whatever POSIXLY_CORRECT says;
	 * ':': a missing argument returns ':' instead of '?'. */
	p = so;
	*p++ = '-';
	*p++ = ':';
	for (size_t i = 0; i < opt_reg.n; i++) {
		const struct opt_def *d = &opt_reg.opts[i].def;
		int has_arg = !d->arg ? no_argument
				      : (d->arg_optional ? optional_argument : required_argument);

		lo[i] = (struct option){d->name, has_arg, NULL, LONG_VAL_BASE + (int)i};
		if (d->short_name) {
			*p++ = (char)d->short_name;
			if (has_arg != no_argument)
				*p++ = ':';
			if (has_arg == optional_argument)
				*p++ = ':';
		}
	}
	*p = '\0';
	*longopts = lo;
	*shortopts = so;
	return 0;
}

/* The message for an unknown or ambiguous long option (getopt gives optopt 0). */
static void long_option_err(const char *word, char *err, size_t errlen)
{
	const char *name = word + 2;
	size_t len = strcspn(name, "=");
	unsigned matches = 0;

	for (size_t i = 0; i < opt_reg.n; i++)
		if (!strncmp(opt_reg.opts[i].def.name, name, len))
			matches++;
	if (matches < 2) {
		errf(err, errlen, 0, "unrecognized option '%s'", word);
		return;
	}
	errf(err, errlen, 0, "option '--%.*s' is ambiguous; possibilities:", (int)len, name);
	for (size_t i = 0; i < opt_reg.n; i++)
		if (!strncmp(opt_reg.opts[i].def.name, name, len))
			errf_append(err, errlen, " '--%s'", opt_reg.opts[i].def.name);
}

static void short_option_err(const char *what, int c, char *err, size_t errlen)
{
	if (isprint(c))
		errf(err, errlen, 0, "%s -- '%c'", what, c);
	else
		errf(err, errlen, 0, "%s -- '\\x%02x'", what, (unsigned)c & 0xff);
}

static int parse_positional(const char *arg, char *err, size_t errlen)
{
	char msg[OPT_ERR_LEN];
	int ret;

	if (!opt_reg.positional.handler)
		return errf(err, errlen, -EINVAL, "unexpected argument '%s'", arg);
	msg[0] = '\0';
	ret = opt_reg.positional.handler(opt_reg.positional.ctx, arg, msg, sizeof(msg));
	if (ret < 0)
		return errf(err, errlen, ret, "argument '%s': %s", arg,
			    msg[0] ? msg : "invalid argument");
	return 0;
}

/* The getopt loop; positional words are collected into pos (argc entries). */
static int parse_argv(int argc, char **argv, const struct option *lo, const char *so, char **pos,
		      int *npos, char *err, size_t errlen)
{
	char msg[OPT_ERR_LEN];
	struct opt_entry *e;
	const char *arg;
	bool located;
	int c, ret;

	optind = 0; /* glibc: full re-initialisation */
	opterr = 0;
	while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		switch (c) {
		case 1:
			pos[(*npos)++] = optarg;
			continue;
		case ':':
			if (optopt >= LONG_VAL_BASE)
				return errf(err, errlen, -EINVAL,
					    "option '--%s' requires an argument",
					    opt_reg.opts[optopt - LONG_VAL_BASE].def.name);
			short_option_err("option requires an argument", optopt, err, errlen);
			return -EINVAL;
		case '?':
			if (optopt >= LONG_VAL_BASE)
				return errf(err, errlen, -EINVAL,
					    "option '--%s' doesn't allow an argument",
					    opt_reg.opts[optopt - LONG_VAL_BASE].def.name);
			if (optopt)
				short_option_err("invalid option", optopt, err, errlen);
			else
				long_option_err(argv[optind - 1], err, errlen);
			return -EINVAL;
		}
		if (c >= LONG_VAL_BASE)
			e = &opt_reg.opts[c - LONG_VAL_BASE];
		else
			e = &opt_reg.opts[opt_reg.short_idx[c] - 1];
		arg = e->def.arg ? optarg : NULL;
		if (e->def.arg_optional && !arg && optind < argc && argv[optind][0] != '-')
			arg = argv[optind++];
		ret = opt_apply(e, arg, msg, sizeof(msg), &located);
		if (ret < 0) {
			if (located)
				return errf(err, errlen, ret, "%s", msg);
			return errf(err, errlen, ret, "option --%s: %s", e->def.name, msg);
		}
		if (opt_reg.exit_requested)
			return OPT_EXIT;
	}
	while (optind < argc)
		pos[(*npos)++] = argv[optind++];
	return 0;
}

int opt_parse_argv(int argc, char **argv, char *err, size_t errlen)
{
	struct option *lo;
	char *so, **pos;
	int npos = 0, ret;

	if (argc < 1 || !argv)
		return errf(err, errlen, -EINVAL, "no command line");
	if (opt_reg.in_argv || opt_reg.depth)
		return errf(err, errlen, -EBUSY, "the command line is being parsed already");
	ret = build_getopt(&lo, &so);
	if (ret)
		return errf(err, errlen, ret, "out of memory");
	pos = calloc((size_t)argc, sizeof(*pos));
	if (!pos) {
		free(lo);
		free(so);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	opt_reg.in_argv = true;
	opt_reg.exit_requested = false;
	ret = parse_argv(argc, argv, lo, so, pos, &npos, err, errlen);
	for (int i = 0; ret == 0 && i < npos; i++)
		ret = parse_positional(pos[i], err, errlen);
	opt_reg.exit_requested = false;
	opt_reg.in_argv = false;
	free(pos);
	free(lo);
	free(so);
	return ret;
}

/* ---- Help ---- */

/* "-c, --config=FILE", "    --cpus=LIST", "-e, --enable[=NAME[=VALUE]]" */
static void help_left(const struct opt_def *d, char *buf, size_t len)
{
	int n;

	if (d->short_name)
		n = snprintf(buf, len, "-%c, --%s", d->short_name, d->name);
	else
		n = snprintf(buf, len, "    --%s", d->name);
	if (d->arg && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, d->arg_optional ? "[=%s]" : "=%s", d->arg);
}

/* Sort key: the short name, or the long name's first letter; then the long name. */
static int help_cmp(const void *a, const void *b)
{
	const struct opt_def *x = &opt_reg.opts[*(const size_t *)a].def;
	const struct opt_def *y = &opt_reg.opts[*(const size_t *)b].def;
	int kx = tolower(x->short_name ? x->short_name : x->name[0]);
	int ky = tolower(y->short_name ? y->short_name : y->name[0]);

	if (kx != ky)
		return kx - ky;
	if (!!x->short_name != !!y->short_name)
		return x->short_name ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void help_row(FILE *out, const char *left, int width, const char *help, bool repeatable)
{
	if ((int)strlen(left) > width)
		fprintf(out, "  %s\n  %*s  %s%s\n", left, width, "", help,
			repeatable ? " (repeatable)" : "");
	else
		fprintf(out, "  %-*s  %s%s\n", width, left, help,
			repeatable ? " (repeatable)" : "");
}

void opt_help(FILE *out, const char *progname)
{
	size_t *order = malloc((opt_reg.n ? opt_reg.n : 1) * sizeof(*order));
	char left[256];
	int width = 0;

	fprintf(out, "Usage: %s [OPTION]...%s%s%s\n", progname ? progname : "",
		opt_reg.positional.handler ? " [" : "",
		opt_reg.positional.handler ? opt_reg.positional.arg : "",
		opt_reg.positional.handler ? "]..." : "");
	for (size_t i = 0; i < opt_reg.n; i++) {
		int w;

		help_left(&opt_reg.opts[i].def, left, sizeof(left));
		w = (int)strlen(left);
		if (w <= HELP_COL_MAX && w > width)
			width = w;
	}
	if (opt_reg.positional.handler && (int)strlen(opt_reg.positional.arg) > width &&
	    (int)strlen(opt_reg.positional.arg) <= HELP_COL_MAX)
		width = (int)strlen(opt_reg.positional.arg);
	if (opt_reg.n)
		fprintf(out, "\nOptions:\n");
	for (size_t i = 0; i < opt_reg.n; i++)
		if (order)
			order[i] = i;
	if (order)
		qsort(order, opt_reg.n, sizeof(*order), help_cmp);
	for (size_t i = 0; i < opt_reg.n; i++) {
		const struct opt_entry *e = &opt_reg.opts[order ? order[i] : i];

		help_left(&e->def, left, sizeof(left));
		help_row(out, left, width, e->def.help, e->def.repeatable);
	}
	free(order);
	if (opt_reg.positional.handler) {
		fprintf(out, "\nArguments:\n");
		help_row(out, opt_reg.positional.arg, width, opt_reg.positional.help, false);
	}
	if (opt_reg.ext.help)
		opt_reg.ext.help(out);
	if (opt_find_long("config"))
		fprintf(out, "\nA config file (--config) holds one long option per line, e.g. "
			     "\"multicast 239.1.2.3\", \"enable mcqp=10\"; '#' starts a "
			     "comment.\n");
}
