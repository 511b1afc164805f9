/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * options.c - the option registry (see options.h): registration into a growing array,
 * getopt_long built per parse, config files with an include stack for error locations,
 * the generated help, and the number parsers handlers use.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"

/* getopt_long returns this plus the option's index for a long option. */
#define LONG_VAL_BASE 0x100

/* Help: widest left column ("  -c, --config=FILE") before the text moves to a new line. */
#define HELP_COL_MAX 34

struct opt_entry {
	struct opt_def def; /* strings owned by the registry */
	unsigned given;	    /* how often a parser applied it */
};

struct include_frame {
	const char *path; /* as opened (relative to the including file's directory) */
	unsigned line;	  /* line being applied */
};

static struct {
	struct opt_entry *opts;
	size_t n, cap;
	int short_idx[256]; /* short name -> index + 1, 0 = none */

	struct opt_def positional; /* handler NULL = none */

	FILE *out;	/* built-ins print here */
	char *progname; /* for the built-in --help */

	/* Parse state. */
	bool exit_requested; /* a handler asked the parser to stop (OPT_EXIT) */
	bool err_located;    /* the failed handler's message already says FILE:LINE */
	bool in_argv;	     /* opt_parse_argv is running (getopt state is not re-entrant) */
	unsigned depth;	     /* config files being read */
	struct include_frame frames[OPT_CONFIG_DEPTH_MAX];
} reg;

int opt_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Append to err after what it holds (same truncation rules as opt_errf). */
static void err_append(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void err_append(char *err, size_t errlen, const char *fmt, ...)
{
	size_t used;
	va_list ap;

	if (!err || !errlen)
		return;
	used = strnlen(err, errlen);
	if (used + 1 >= errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
}

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

static struct opt_entry *find_long(const char *name)
{
	for (size_t i = 0; i < reg.n; i++)
		if (!strcasecmp(reg.opts[i].def.name, name))
			return &reg.opts[i];
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
	if (find_long(def->name) || (def->short_name && reg.short_idx[def->short_name]))
		return -EEXIST;
	if (reg.n == reg.cap) {
		size_t cap = reg.cap ? 2 * reg.cap : 16;
		struct opt_entry *o = realloc(reg.opts, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		reg.opts = o;
		reg.cap = cap;
	}
	e = &reg.opts[reg.n];
	ret = def_copy(&e->def, def);
	if (ret)
		return ret;
	e->given = 0;
	reg.n++;
	if (def->short_name)
		reg.short_idx[def->short_name] = (int)reg.n;
	return 0;
}

int opt_set_positional(const char *arg, const char *help, opt_handler_fn *handler, void *ctx)
{
	struct opt_def d = {.arg = arg, .help = help, .handler = handler, .ctx = ctx};

	if (!arg || !*arg || !help || !handler)
		return -EINVAL;
	if (reg.positional.handler)
		return -EEXIST;
	return def_copy(&reg.positional, &d);
}

void opt_request_exit(void)
{
	reg.exit_requested = true;
}

unsigned opt_given(const char *name)
{
	for (size_t i = 0; i < reg.n; i++)
		if (!strcmp(reg.opts[i].def.name, name))
			return reg.opts[i].given;
	return 0;
}

void opt_registry_clear(void)
{
	for (size_t i = 0; i < reg.n; i++)
		def_free_strings(&reg.opts[i].def);
	free(reg.opts);
	def_free_strings(&reg.positional);
	free(reg.progname);
	memset(&reg, 0, sizeof(reg));
}

/* ---- Applying one option (shared by argv and files) ---- */

/*
 * Call e's handler with arg. On failure msg holds the handler's reason and *located
 * tells whether it already carries a file location (nested config files).
 */
static int apply(struct opt_entry *e, const char *arg, char *msg, size_t msglen, bool *located)
{
	int ret;

	msg[0] = '\0';
	reg.err_located = false;
	ret = e->def.handler(e->def.ctx, arg, msg, msglen);
	*located = reg.err_located;
	reg.err_located = false;
	if (ret < 0) {
		if (!msg[0])
			snprintf(msg, msglen, "invalid argument");
		return ret;
	}
	e->given++;
	return 0;
}

/* ---- Config files ---- */

/*
 * Write "PATH:LINE: " for the innermost file being read, the formatted reason, and the
 * files that included it.
 */
static void file_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void file_err(char *err, size_t errlen, const char *fmt, ...)
{
	const struct include_frame *f = &reg.frames[reg.depth - 1];
	char reason[OPT_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	opt_errf(err, errlen, 0, "%s:%u: %s", f->path, f->line, reason);
	for (unsigned i = reg.depth - 1; i-- > 0;)
		err_append(err, errlen, "%s%s:%u", i == reg.depth - 2 ? " (included from " : ", ",
			   reg.frames[i].path, reg.frames[i].line);
	if (reg.depth > 1)
		err_append(err, errlen, ")");
}

/*
 * Take text of a config line out of a handler's message, in place: a quoted stretch
 * ('...') whose text occurs in src (the line's argument), and every occurrence of all of
 * src (when it is SCRUB_MIN bytes or more, e.g. a path), becomes "...". Handlers quote what they
 * were given, and names of their own (features, formats) only in lists. A config file may be one
 * the reader of its errors cannot read (a console user's reload of a config that names
 * /etc/shadow): its errors name the file and line and give the reason, never the file's content.
 * What the line names of the program's own vocabulary stays: a registered feature's or
 * option's name (the handlers quote the canonical name, "feature 'huge': '...' is not a
 * boolean"), the item the message is about; only the file's own text (a value, a group,
 * a path) becomes "...".
 */
#define SCRUB_MIN 3
static bool scrub_vocab(const char *s, size_t len)
{
	char name[OPT_ERR_LEN];
	int64_t v;

	if (!len || len >= sizeof(name))
		return false;
	memcpy(name, s, len);
	name[len] = '\0';
	return !feat_get(name, &v) || find_long(name);
}

static void scrub(char *msg, const char *src)
{
	size_t srclen = strlen(src), n = strlen(msg), o = 0;
	char out[OPT_ERR_LEN];

	if (!srclen)
		return;
	for (size_t i = 0; i < n && o + 4 < sizeof(out);) {
		const char *close = msg[i] == '\'' ? strchr(msg + i + 1, '\'') : NULL;

		if (close && close > msg + i + 1 &&
		    memmem(src, srclen, msg + i + 1, (size_t)(close - msg - i - 1)) &&
		    !scrub_vocab(msg + i + 1, (size_t)(close - msg - i - 1))) {
			memcpy(out + o, "'...'", 5);
			o += 5;
			i = (size_t)(close - msg) + 1;
		} else if (srclen >= SCRUB_MIN && !strncmp(msg + i, src, srclen) &&
			   !scrub_vocab(src, srclen)) {
			memcpy(out + o, "...", 3);
			o += 3;
			i += srclen;
		} else {
			out[o++] = msg[i++];
		}
	}
	out[o] = '\0';
	memcpy(msg, out, o + 1);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Apply one line of the innermost file (NUL-terminated, newline removed). */
static int file_line(char *line, size_t len, char *err, size_t errlen)
{
	char msg[OPT_ERR_LEN];
	struct opt_entry *e;
	char *p, *kw, *arg, *end;
	bool located;
	int ret;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];

		if ((c < 0x20 && !is_blank((char)c)) || c == 0x7f) {
			file_err(err, errlen, "control character in line");
			return -EINVAL;
		}
	}
	for (p = line; is_blank(*p); p++)
		;
	if (!*p || *p == '#')
		return 0;

	kw = p;
	while (*p && !is_blank(*p) && *p != '=')
		p++;
	end = p;
	while (is_blank(*p))
		p++;
	if (*p == '=')
		for (p++; is_blank(*p); p++)
			;
	arg = p;
	/* A '#' that starts a word begins a comment ("239.1.2.3#5" keeps its TOS). */
	for (; *p; p++)
		if (*p == '#' && p > end && is_blank(p[-1])) {
			*p = '\0';
			break;
		}
	for (p = arg + strlen(arg); p > arg && is_blank(p[-1]); p--)
		;
	*p = '\0';
	*end = '\0';
	if (!*arg)
		arg = NULL;

	e = find_long(kw);
	if (!e) {
		file_err(err, errlen, "unknown option");
		return -EINVAL;
	}
	if (arg && !e->def.arg) {
		file_err(err, errlen, "option '%s' doesn't allow an argument", e->def.name);
		return -EINVAL;
	}
	if (!arg && e->def.arg && !e->def.arg_optional) {
		file_err(err, errlen, "option '%s' requires an argument", e->def.name);
		return -EINVAL;
	}
	ret = apply(e, arg, msg, sizeof(msg), &located);
	if (ret < 0) {
		if (located) { /* from an included file, which took out its own content */
			opt_errf(err, errlen, 0, "%s", msg);
		} else {
			if (arg)
				scrub(msg, arg);
			file_err(err, errlen, "%s: %s", e->def.name, msg);
		}
		return ret;
	}
	return 0;
}

/*
 * Read all of an open config file into a buffer (NUL-terminated, one spare byte), at
 * most OPT_CONFIG_SIZE_MAX bytes. Returns the length, or -EFBIG when the file is larger
 * (it may grow while read), -ENOMEM, or the read's -errno.
 */
static ssize_t file_slurp(int fd, char **out)
{
	size_t len = 0, cap = OPT_CONFIG_SIZE_MAX + 2;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int ret = -errno;

			free(buf);
			return ret;
		}
		if (!n)
			break;
		len += (size_t)n;
		if (len > OPT_CONFIG_SIZE_MAX) {
			free(buf);
			return -EFBIG;
		}
	}
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

/*
 * Read path as the next file of the include stack. *opened tells whether the file could
 * be opened: if not, -errno with "PATH: reason" in err; once it is open, every error
 * message is located by file_err().
 *
 * Only regular files are read (opened without blocking: a FIFO must not stop the control
 * thread), whole and at most OPT_CONFIG_SIZE_MAX bytes (a device like /dev/zero never
 * ends), in lines of at most OPT_CONFIG_LINE_MAX bytes.
 */
static int file_parse(const char *path, bool *opened, char *err, size_t errlen)
{
	char *buf = NULL, *line, *next;
	struct stat st;
	ssize_t size;
	int fd, ret = 0;

	*opened = false;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		return opt_errf(err, errlen, ret, "%s: %s", path, strerror(-ret));
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return opt_errf(err, errlen, ret, "%s: %s", path, strerror(-ret));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return opt_errf(err, errlen, -EISDIR, "%s: %s", path, strerror(EISDIR));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return opt_errf(err, errlen, -EINVAL, "%s: not a regular file", path);
	}
	size = file_slurp(fd, &buf);
	close(fd);
	if (size == -EFBIG)
		return opt_errf(err, errlen, -EFBIG, "%s: larger than %d bytes", path,
				OPT_CONFIG_SIZE_MAX);
	if (size < 0)
		return opt_errf(err, errlen, (int)size, "%s: read error: %s", path,
				strerror((int)-size));
	*opened = true;
	reg.frames[reg.depth].path = path;
	reg.frames[reg.depth].line = 0;
	reg.depth++;
	for (line = buf; line < buf + size; line = next) {
		char *nl = memchr(line, '\n', (size_t)(buf + size - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(buf + size - line);

		next = line + len + 1;
		line[len] = '\0';
		reg.frames[reg.depth - 1].line++;
		if (len > OPT_CONFIG_LINE_MAX) {
			file_err(err, errlen, "line too long (max %d bytes)", OPT_CONFIG_LINE_MAX);
			ret = -EINVAL;
			break;
		}
		if (strlen(line) != len) {
			file_err(err, errlen, "NUL byte in line");
			ret = -EINVAL;
			break;
		}
		ret = file_line(line, len, err, errlen);
		if (ret < 0)
			break;
		if (reg.exit_requested) {
			ret = OPT_EXIT;
			break;
		}
	}
	reg.depth--;
	free(buf);
	return ret;
}

int opt_parse_file(const char *path, char *err, size_t errlen)
{
	bool top = !reg.depth && !reg.in_argv, opened;
	int ret;

	if (!path)
		return opt_errf(err, errlen, -EINVAL, "no file name");
	if (reg.depth == OPT_CONFIG_DEPTH_MAX)
		return opt_errf(err, errlen, -ELOOP, "files nested deeper than %d levels",
				OPT_CONFIG_DEPTH_MAX);
	if (top)
		reg.exit_requested = false;
	ret = file_parse(path, &opened, err, errlen);
	if (top)
		reg.exit_requested = false;
	return ret;
}

/*
 * --config. From the command line the file's messages stand as they are. From a file,
 * an unreadable file or too deep a nesting is an error of the including line (the
 * caller adds its location); errors inside the included file carry their own.
 */
static int builtin_config(void *ctx, const char *arg, char *err, size_t errlen)
{
	char *resolved = NULL, *dir;
	const char *path = arg;
	bool opened = false;
	int ret;

	(void)ctx;
	if (reg.depth == OPT_CONFIG_DEPTH_MAX)
		return opt_errf(err, errlen, -ELOOP, "files nested deeper than %d levels",
				OPT_CONFIG_DEPTH_MAX);
	if (reg.depth && arg[0] != '/') {
		dir = strdup(reg.frames[reg.depth - 1].path);
		if (!dir || asprintf(&resolved, "%s/%s", dirname(dir), arg) < 0) {
			free(dir);
			return opt_errf(err, errlen, -ENOMEM, "out of memory");
		}
		free(dir);
		path = resolved;
	}
	ret = file_parse(path, &opened, err, errlen);
	if (ret < 0)
		reg.err_located = opened || !reg.depth;
	free(resolved);
	return ret < 0 ? ret : 0;
}

/* ---- Command line ---- */

static int builtin_feature(const char *arg, bool enable, char *err, size_t errlen)
{
	if (!arg) {
		if (reg.depth)
			return opt_errf(err, errlen, -EINVAL, "a feature name is required here");
		feat_list(reg.out);
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

static int builtin_help(void *ctx, const char *arg, char *err, size_t errlen)
{
	(void)ctx;
	(void)arg;
	(void)err;
	(void)errlen;
	opt_help(reg.out, reg.progname);
	opt_request_exit();
	return 0;
}

int opt_register_builtin(FILE *out, const char *progname)
{
	const struct opt_def defs[] = {
		{.name = "config",
		 .short_name = 'c',
		 .arg = "FILE",
		 .help = "read options from FILE, one long option per line",
		 .handler = builtin_config,
		 .repeatable = true},
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
		{.name = "help",
		 .short_name = 'h',
		 .help = "show this help and exit",
		 .handler = builtin_help},
	};
	int ret;

	if (!out || !progname)
		return -EINVAL;
	free(reg.progname);
	reg.progname = strdup(progname);
	if (!reg.progname)
		return -ENOMEM;
	reg.out = out;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		ret = opt_register(&defs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* getopt_long's tables for the registry; -ENOMEM. */
static int build_getopt(struct option **longopts, char **shortopts)
{
	struct option *lo = calloc(reg.n + 1, sizeof(*lo));
	char *so = malloc(3 * reg.n + 3), *p;

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
	for (size_t i = 0; i < reg.n; i++) {
		const struct opt_def *d = &reg.opts[i].def;
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

	for (size_t i = 0; i < reg.n; i++)
		if (!strncmp(reg.opts[i].def.name, name, len))
			matches++;
	if (matches < 2) {
		opt_errf(err, errlen, 0, "unrecognized option '%s'", word);
		return;
	}
	opt_errf(err, errlen, 0, "option '--%.*s' is ambiguous; possibilities:", (int)len, name);
	for (size_t i = 0; i < reg.n; i++)
		if (!strncmp(reg.opts[i].def.name, name, len))
			err_append(err, errlen, " '--%s'", reg.opts[i].def.name);
}

static void short_option_err(const char *what, int c, char *err, size_t errlen)
{
	if (isprint(c))
		opt_errf(err, errlen, 0, "%s -- '%c'", what, c);
	else
		opt_errf(err, errlen, 0, "%s -- '\\x%02x'", what, (unsigned)c & 0xff);
}

static int parse_positional(const char *arg, char *err, size_t errlen)
{
	char msg[OPT_ERR_LEN];
	int ret;

	if (!reg.positional.handler)
		return opt_errf(err, errlen, -EINVAL, "unexpected argument '%s'", arg);
	msg[0] = '\0';
	ret = reg.positional.handler(reg.positional.ctx, arg, msg, sizeof(msg));
	if (ret < 0)
		return opt_errf(err, errlen, ret, "argument '%s': %s", arg,
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
				return opt_errf(err, errlen, -EINVAL,
						"option '--%s' requires an argument",
						reg.opts[optopt - LONG_VAL_BASE].def.name);
			short_option_err("option requires an argument", optopt, err, errlen);
			return -EINVAL;
		case '?':
			if (optopt >= LONG_VAL_BASE)
				return opt_errf(err, errlen, -EINVAL,
						"option '--%s' doesn't allow an argument",
						reg.opts[optopt - LONG_VAL_BASE].def.name);
			if (optopt)
				short_option_err("invalid option", optopt, err, errlen);
			else
				long_option_err(argv[optind - 1], err, errlen);
			return -EINVAL;
		}
		if (c >= LONG_VAL_BASE)
			e = &reg.opts[c - LONG_VAL_BASE];
		else
			e = &reg.opts[reg.short_idx[c] - 1];
		arg = e->def.arg ? optarg : NULL;
		if (e->def.arg_optional && !arg && optind < argc && argv[optind][0] != '-')
			arg = argv[optind++];
		ret = apply(e, arg, msg, sizeof(msg), &located);
		if (ret < 0) {
			if (located)
				return opt_errf(err, errlen, ret, "%s", msg);
			return opt_errf(err, errlen, ret, "option --%s: %s", e->def.name, msg);
		}
		if (reg.exit_requested)
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
		return opt_errf(err, errlen, -EINVAL, "no command line");
	if (reg.in_argv || reg.depth)
		return opt_errf(err, errlen, -EBUSY, "the command line is being parsed already");
	ret = build_getopt(&lo, &so);
	if (ret)
		return opt_errf(err, errlen, ret, "out of memory");
	pos = calloc((size_t)argc, sizeof(*pos));
	if (!pos) {
		free(lo);
		free(so);
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	}
	reg.in_argv = true;
	reg.exit_requested = false;
	ret = parse_argv(argc, argv, lo, so, pos, &npos, err, errlen);
	for (int i = 0; ret == 0 && i < npos; i++)
		ret = parse_positional(pos[i], err, errlen);
	reg.exit_requested = false;
	reg.in_argv = false;
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
	const struct opt_def *x = &reg.opts[*(const size_t *)a].def;
	const struct opt_def *y = &reg.opts[*(const size_t *)b].def;
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
	size_t *order = malloc((reg.n ? reg.n : 1) * sizeof(*order));
	char left[256];
	int width = 0;

	fprintf(out, "Usage: %s [OPTION]...%s%s%s\n", progname ? progname : "",
		reg.positional.handler ? " [" : "",
		reg.positional.handler ? reg.positional.arg : "",
		reg.positional.handler ? "]..." : "");
	for (size_t i = 0; i < reg.n; i++) {
		int w;

		help_left(&reg.opts[i].def, left, sizeof(left));
		w = (int)strlen(left);
		if (w <= HELP_COL_MAX && w > width)
			width = w;
	}
	if (reg.positional.handler && (int)strlen(reg.positional.arg) > width &&
	    (int)strlen(reg.positional.arg) <= HELP_COL_MAX)
		width = (int)strlen(reg.positional.arg);
	if (reg.n)
		fprintf(out, "\nOptions:\n");
	for (size_t i = 0; i < reg.n; i++)
		if (order)
			order[i] = i;
	if (order)
		qsort(order, reg.n, sizeof(*order), help_cmp);
	for (size_t i = 0; i < reg.n; i++) {
		const struct opt_entry *e = &reg.opts[order ? order[i] : i];

		help_left(&e->def, left, sizeof(left));
		help_row(out, left, width, e->def.help, e->def.repeatable);
	}
	free(order);
	if (reg.positional.handler) {
		fprintf(out, "\nArguments:\n");
		help_row(out, reg.positional.arg, width, reg.positional.help, false);
	}
	if (feat_count()) {
		fprintf(out, "\nFeatures (--enable NAME[=VALUE], --disable NAME):\n");
		feat_list(out);
	}
	if (find_long("config"))
		fprintf(out, "\nA config file (--config) holds one long option per line, e.g. "
			     "\"multicast 239.1.2.3\", \"enable mcqp=10\"; '#' starts a "
			     "comment.\n");
}

/* ---- Numbers ---- */

/* Digits of a decimal or 0x-hex number at s; *end after them. -EINVAL, -ERANGE. */
static int scan_u64(const char *s, uint64_t *out, const char **end)
{
	unsigned base = 10;
	uint64_t v = 0;
	const char *p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (!isxdigit((unsigned char)*p) || (base == 10 && !isdigit((unsigned char)*p)))
		return -EINVAL;
	for (; isxdigit((unsigned char)*p); p++) {
		unsigned d;

		if (isdigit((unsigned char)*p))
			d = (unsigned)(*p - '0');
		else if (base == 16)
			d = (unsigned)(tolower((unsigned char)*p) - 'a' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base) {
			/* Keep scanning so that "1e999..." is out of range, not "not a number" */
			while (isxdigit((unsigned char)*p) &&
			       (base == 16 || isdigit((unsigned char)*p)))
				p++;
			*end = p;
			return -ERANGE;
		}
		v = v * base + d;
	}
	*out = v;
	*end = p;
	return 0;
}

static int uint_range_err(const char *s, uint64_t min, uint64_t max, char *err, size_t errlen)
{
	return opt_errf(err, errlen, -EINVAL, "'%s' is out of range %" PRIu64 "..%" PRIu64, s, min,
			max);
}

int opt_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen)
{
	const char *end;
	uint64_t v;
	int ret;

	if (!s)
		return opt_errf(err, errlen, -EINVAL, "missing number");
	ret = scan_u64(s, &v, &end);
	if (ret == -EINVAL || *end)
		return opt_errf(err, errlen, -EINVAL, "'%s' is not a number", s);
	if (ret == -ERANGE || v < min || v > max)
		return uint_range_err(s, min, max, err, errlen);
	*out = v;
	return 0;
}

int opt_parse_int(const char *s, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen)
{
	bool neg;
	const char *end;
	uint64_t mag;
	int64_t v;
	int ret;

	if (!s)
		return opt_errf(err, errlen, -EINVAL, "missing number");
	neg = s[0] == '-';
	ret = scan_u64(s + neg, &mag, &end);
	if (ret == -EINVAL || *end)
		return opt_errf(err, errlen, -EINVAL, "'%s' is not a number", s);
	if (ret == -ERANGE || (neg && mag > (uint64_t)INT64_MAX + 1) ||
	    (!neg && mag > (uint64_t)INT64_MAX))
		goto range;
	if (neg)
		v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	else
		v = (int64_t)mag;
	if (v < min || v > max)
		goto range;
	*out = v;
	return 0;
range:
	return opt_errf(err, errlen, -EINVAL, "'%s' is out of range %" PRId64 "..%" PRId64, s, min,
			max);
}

int opt_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen)
{
	const char *end;
	unsigned shift = 0;
	uint64_t v;
	int ret;

	if (!s)
		return opt_errf(err, errlen, -EINVAL, "missing size");
	ret = scan_u64(s, &v, &end);
	if (ret != -EINVAL && *end) {
		const char *suffixes = "kmgt", *at = strchr(suffixes, tolower((unsigned char)*end));

		if (at && end[1] == '\0')
			shift = 10 * (unsigned)(at - suffixes + 1);
		else
			ret = -EINVAL;
	}
	if (ret == -EINVAL)
		return opt_errf(err, errlen, -EINVAL,
				"'%s' is not a size (number with optional suffix k, m, g or t)", s);
	if (ret == -ERANGE || (shift && v > (UINT64_MAX >> shift)))
		return uint_range_err(s, min, max, err, errlen);
	v <<= shift;
	if (v < min || v > max)
		return uint_range_err(s, min, max, err, errlen);
	*out = v;
	return 0;
}

int opt_parse_bool(const char *s, bool *out, char *err, size_t errlen)
{
	static const char *const yes[] = {"on", "yes", "true", "enable", "1"};
	static const char *const no[] = {"off", "no", "false", "disable", "0"};

	for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return opt_errf(err, errlen, -EINVAL,
			"'%s' is not a boolean (on/off, yes/no, true/false, 1/0)", s ? s : "");
}
