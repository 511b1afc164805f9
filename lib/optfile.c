/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * optfile.c - the config files of the option registry (optreg.h: opt_parse_file and
 * --config): one long option per line, an include stack for error locations, and
 * errors that name the file and line but none of its text.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "optreg.h"
#include "optreg_pvt.h"

/*
 * Write "PATH:LINE: " for the innermost file being read, the formatted reason, and the
 * files that included it.
 */
static void file_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void file_err(char *err, size_t errlen, const char *fmt, ...)
{
	const struct opt_include_frame *f = &opt_reg.frames[opt_reg.depth - 1];
	char reason[OPT_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	errf(err, errlen, 0, "%s:%u: %s", f->path, f->line, reason);
	for (unsigned i = opt_reg.depth - 1; i-- > 0;)
		errf_append(err, errlen, "%s%s:%u",
			    i == opt_reg.depth - 2 ? " (included from " : ", ",
			    opt_reg.frames[i].path, opt_reg.frames[i].line);
	if (opt_reg.depth > 1)
		errf_append(err, errlen, ")");
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

	if (!len || len >= sizeof(name))
		return false;
	memcpy(name, s, len);
	name[len] = '\0';
	return (opt_reg.ext.is_name && opt_reg.ext.is_name(name)) || opt_find_long(name);
}

static void scrub(char *msg, const char *src)
{
	size_t srclen = strlen(src), n = strlen(msg), o = 0;
	char out[OPT_ERR_LEN];

	if (!srclen)
		return;
	/* Room for the longest piece ("'...'", 5 bytes) and the final NUL. */
	for (size_t i = 0; i < n && o + 5 < sizeof(out);) {
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

	e = opt_find_long(kw);
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
	ret = opt_apply(e, arg, msg, sizeof(msg), &located);
	if (ret < 0) {
		if (located) { /* from an included file, which took out its own content */
			errf(err, errlen, 0, "%s", msg);
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
		return errf(err, errlen, ret, "%s: %s", path, strerror(-ret));
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return errf(err, errlen, ret, "%s: %s", path, strerror(-ret));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return errf(err, errlen, -EISDIR, "%s: %s", path, strerror(EISDIR));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return errf(err, errlen, -EINVAL, "%s: not a regular file", path);
	}
	size = file_slurp(fd, &buf);
	close(fd);
	if (size == -EFBIG)
		return errf(err, errlen, -EFBIG, "%s: larger than %d bytes", path,
			    OPT_CONFIG_SIZE_MAX);
	if (size < 0)
		return errf(err, errlen, (int)size, "%s: read error: %s", path,
			    strerror((int)-size));
	*opened = true;
	opt_reg.frames[opt_reg.depth].path = path;
	opt_reg.frames[opt_reg.depth].line = 0;
	opt_reg.depth++;
	for (line = buf; line < buf + size; line = next) {
		char *nl = memchr(line, '\n', (size_t)(buf + size - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(buf + size - line);

		next = line + len + 1;
		line[len] = '\0';
		opt_reg.frames[opt_reg.depth - 1].line++;
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
		if (opt_reg.exit_requested) {
			ret = OPT_EXIT;
			break;
		}
	}
	opt_reg.depth--;
	free(buf);
	return ret;
}

int opt_parse_file(const char *path, char *err, size_t errlen)
{
	bool top = !opt_reg.depth && !opt_reg.in_argv, opened;
	int ret;

	if (!path)
		return errf(err, errlen, -EINVAL, "no file name");
	if (opt_reg.depth == OPT_CONFIG_DEPTH_MAX)
		return errf(err, errlen, -ELOOP, "files nested deeper than %d levels",
			    OPT_CONFIG_DEPTH_MAX);
	if (top)
		opt_reg.exit_requested = false;
	ret = file_parse(path, &opened, err, errlen);
	if (top)
		opt_reg.exit_requested = false;
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
	if (opt_reg.depth == OPT_CONFIG_DEPTH_MAX)
		return errf(err, errlen, -ELOOP, "files nested deeper than %d levels",
			    OPT_CONFIG_DEPTH_MAX);
	if (opt_reg.depth && arg[0] != '/') {
		dir = strdup(opt_reg.frames[opt_reg.depth - 1].path);
		if (!dir || asprintf(&resolved, "%s/%s", dirname(dir), arg) < 0) {
			free(dir);
			return errf(err, errlen, -ENOMEM, "out of memory");
		}
		free(dir);
		path = resolved;
	}
	ret = file_parse(path, &opened, err, errlen);
	if (ret < 0)
		opt_reg.err_located = opened || !opt_reg.depth;
	free(resolved);
	return ret < 0 ? ret : 0;
}

int opt_register_config(void)
{
	const struct opt_def def = {.name = "config",
				    .short_name = 'c',
				    .arg = "FILE",
				    .help = "read options from FILE, one long option per line",
				    .handler = builtin_config,
				    .repeatable = true};

	return opt_register(&def);
}
