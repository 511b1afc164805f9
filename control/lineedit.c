/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lineedit.c - the line editor of bcom (see lineedit.h): key handling, escape sequence
 * parsing, history and drawing, without any terminal I/O of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lineedit.h"

#define KEY_CTRL(c) ((c)&0x1f)
#define KEY_ESC	    0x1b
#define KEY_DEL	    0x7f

/* Modifier parameter of xterm's CSI 1;<mod> sequences: 5 = Ctrl, 3 = Alt. */
#define CSI_MOD_ALT  3
#define CSI_MOD_CTRL 5

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Bytes a line may hold: the editor never stores what would disturb the terminal. */
static bool is_text(unsigned char c)
{
	return c >= 0x20 && c != KEY_DEL;
}

void le_init(struct le *le)
{
	memset(le, 0, sizeof(*le));
	le->cols = 80;
}

void le_done(struct le *le)
{
	for (size_t i = 0; i < le->hist_count; i++)
		free(le->hist[i]);
	le->hist_count = 0;
	le->hist_pos = 0;
	le->hist_unsaved = 0;
}

void le_reset(struct le *le)
{
	le->buf[0] = '\0';
	le->len = 0;
	le->pos = 0;
	le->esc_on = false;
	le->esc_len = 0;
	le->esc_skip = false;
	le->hist_pos = le->hist_count;
	le->saved_len = 0;
	le->scroll = 0;
}

void le_set_prompt(struct le *le, const char *prompt)
{
	size_t n = strlen(prompt);

	if (n > LE_PROMPT_MAX)
		n = LE_PROMPT_MAX;
	memcpy(le->prompt, prompt, n);
	le->prompt[n] = '\0';
	le->prompt_len = n;
}

void le_set_cols(struct le *le, size_t cols)
{
	le->cols = cols ? cols : 80;
}

/* Replace the line with s (a history entry or the saved line), cursor at its end. */
static void set_line(struct le *le, const char *s, size_t n)
{
	memcpy(le->buf, s, n);
	le->buf[n] = '\0';
	le->len = n;
	le->pos = n;
}

/* Insert what fits of s at the cursor; ring the bell when something did not fit. */
static void insert(struct le *le, const char *s, size_t n)
{
	if (n > LE_LINE_MAX - le->len) {
		n = LE_LINE_MAX - le->len;
		le->bell = true;
	}
	memmove(le->buf + le->pos + n, le->buf + le->pos, le->len - le->pos + 1);
	memcpy(le->buf + le->pos, s, n);
	le->len += n;
	le->pos += n;
}

/* Remove [from, to) from the line; the cursor goes to from. */
static void erase(struct le *le, size_t from, size_t to)
{
	memmove(le->buf + from, le->buf + to, le->len - to + 1);
	le->len -= to - from;
	le->pos = from;
}

/* Remove [from, to) and keep it for ^Y (an empty kill leaves the last one alone). */
static void kill_range(struct le *le, size_t from, size_t to)
{
	if (from == to)
		return;
	memcpy(le->kill, le->buf + from, to - from);
	le->kill_len = to - from;
	erase(le, from, to);
}

/* Start of the word before the cursor (words are separated by blanks). */
static size_t word_left(const struct le *le)
{
	size_t p = le->pos;

	while (p > 0 && is_blank(le->buf[p - 1]))
		p--;
	while (p > 0 && !is_blank(le->buf[p - 1]))
		p--;
	return p;
}

/* End of the word at or after the cursor. */
static size_t word_right(const struct le *le)
{
	size_t p = le->pos;

	while (p < le->len && is_blank(le->buf[p]))
		p++;
	while (p < le->len && !is_blank(le->buf[p]))
		p++;
	return p;
}

static void history_up(struct le *le)
{
	const char *h;

	if (le->hist_pos == 0) {
		le->bell = true;
		return;
	}
	if (le->hist_pos == le->hist_count) {
		memcpy(le->saved, le->buf, le->len + 1);
		le->saved_len = le->len;
	}
	h = le->hist[--le->hist_pos];
	set_line(le, h, strlen(h));
}

static void history_down(struct le *le)
{
	const char *h;

	if (le->hist_pos >= le->hist_count) {
		le->bell = true;
		return;
	}
	if (++le->hist_pos == le->hist_count) {
		set_line(le, le->saved, le->saved_len);
		return;
	}
	h = le->hist[le->hist_pos];
	set_line(le, h, strlen(h));
}

static void cursor_left(struct le *le)
{
	if (le->pos > 0)
		le->pos--;
}

static void cursor_right(struct le *le)
{
	if (le->pos < le->len)
		le->pos++;
}

static void delete_char(struct le *le)
{
	if (le->pos < le->len)
		erase(le, le->pos, le->pos + 1);
}

static void backspace(struct le *le)
{
	if (le->pos > 0)
		erase(le, le->pos - 1, le->pos);
}

/* The key of a CSI or SS3 sequence: final byte, first parameter, modifier parameter. */
static void do_key(struct le *le, char final, unsigned num, unsigned mod)
{
	bool word = mod == CSI_MOD_CTRL || mod == CSI_MOD_ALT;

	switch (final) {
	case 'A':
		history_up(le);
		break;
	case 'B':
		history_down(le);
		break;
	case 'C':
		if (word)
			le->pos = word_right(le);
		else
			cursor_right(le);
		break;
	case 'D':
		if (word)
			le->pos = word_left(le);
		else
			cursor_left(le);
		break;
	case 'H':
		le->pos = 0;
		break;
	case 'F':
		le->pos = le->len;
		break;
	case '~':
		/* VT220 keys; rxvt and the Linux console send 1/4 or 7/8 for Home/End. */
		if (num == 1 || num == 7)
			le->pos = 0;
		else if (num == 4 || num == 8)
			le->pos = le->len;
		else if (num == 3)
			delete_char(le);
		break;
	default:
		break; /* an unknown key: ignored */
	}
}

/* A complete CSI sequence: le->esc holds '[' and the parameter bytes. */
static void do_csi(struct le *le, char final)
{
	unsigned num = 0, mod = 0, *cur = &num;

	for (size_t i = 1; i < le->esc_len; i++) {
		char c = le->esc[i];

		if (c >= '0' && c <= '9') {
			if (*cur < 1000)
				*cur = *cur * 10 + (unsigned)(c - '0');
		} else if (c == ';' && cur == &num) {
			cur = &mod;
		} else {
			return; /* private or intermediate bytes: not a key we know */
		}
	}
	do_key(le, final, num, mod);
}

/* Alt-<key>, sent by terminals as ESC <key>. */
static void do_meta(struct le *le, unsigned char c)
{
	if (c == 'b')
		le->pos = word_left(le);
	else if (c == 'f')
		le->pos = word_right(le);
}

static enum le_event feed_plain(struct le *le, unsigned char c);

/* One byte after an ESC. */
static enum le_event feed_escape(struct le *le, unsigned char c)
{
	if (le->esc_len == 0) {
		if (c == '[' || c == 'O') {
			le->esc[le->esc_len++] = (char)c;
		} else if (c != KEY_ESC) { /* ESC ESC: the second one starts the sequence */
			le->esc_on = false;
			do_meta(le, c);
		}
		return LE_CONTINUE;
	}
	if (le->esc[0] == 'O' && c >= 0x20) { /* SS3: one final byte */
		le->esc_on = false;
		do_key(le, (char)c, 0, 0);
		return LE_CONTINUE;
	}
	if (c >= 0x40 && c <= 0x7e) { /* the final byte of a CSI sequence */
		le->esc_on = false;
		if (!le->esc_skip)
			do_csi(le, (char)c);
		return LE_CONTINUE;
	}
	if (c >= 0x20 && c <= 0x3f) { /* parameter or intermediate byte */
		if (le->esc_len < LE_ESC_MAX)
			le->esc[le->esc_len++] = (char)c;
		else
			le->esc_skip = true;
		return LE_CONTINUE;
	}
	/* Not part of a sequence (a broken one, or a key typed after a lone ESC). */
	le->esc_on = false;
	return feed_plain(le, c);
}

static enum le_event feed_plain(struct le *le, unsigned char c)
{
	char ch = (char)c;

	switch (c) {
	case '\r':
	case '\n':
		return LE_DONE;
	case KEY_CTRL('C'):
		return LE_CANCEL;
	case KEY_CTRL('D'):
		if (le->len == 0)
			return LE_EOF;
		delete_char(le);
		break;
	case KEY_CTRL('Z'):
		return LE_SUSPEND;
	case KEY_CTRL('A'):
		le->pos = 0;
		break;
	case KEY_CTRL('E'):
		le->pos = le->len;
		break;
	case KEY_CTRL('B'):
		cursor_left(le);
		break;
	case KEY_CTRL('F'):
		cursor_right(le);
		break;
	case KEY_CTRL('H'):
	case KEY_DEL:
		backspace(le);
		break;
	case KEY_CTRL('K'):
		kill_range(le, le->pos, le->len);
		break;
	case KEY_CTRL('U'):
		kill_range(le, 0, le->pos);
		break;
	case KEY_CTRL('W'):
		kill_range(le, word_left(le), le->pos);
		break;
	case KEY_CTRL('Y'):
		insert(le, le->kill, le->kill_len);
		break;
	case KEY_CTRL('L'):
		le->clear = true;
		break;
	case KEY_CTRL('P'):
		history_up(le);
		break;
	case KEY_CTRL('N'):
		history_down(le);
		break;
	case '\t': /* the console splits words at blanks: a pasted tab is a space */
		insert(le, " ", 1);
		break;
	case KEY_ESC:
		le->esc_on = true;
		le->esc_len = 0;
		le->esc_skip = false;
		break;
	default:
		if (is_text(c))
			insert(le, &ch, 1);
		break; /* other control characters are ignored */
	}
	return LE_CONTINUE;
}

enum le_event le_feed_byte(struct le *le, unsigned char c)
{
	if (le->esc_on)
		return feed_escape(le, c);
	return feed_plain(le, c);
}

enum le_event le_feed(struct le *le, const char *bytes, size_t n, size_t *used)
{
	enum le_event ev = LE_CONTINUE;
	size_t i;

	for (i = 0; i < n && ev == LE_CONTINUE; i++)
		ev = le_feed_byte(le, (unsigned char)bytes[i]);
	if (used)
		*used = i;
	return ev;
}

bool le_escape_pending(const struct le *le)
{
	return le->esc_on;
}

void le_escape_timeout(struct le *le)
{
	le->esc_on = false;
	le->esc_len = 0;
	le->esc_skip = false;
}

/* Output under construction: bytes beyond len are counted nowhere and dropped. */
struct out {
	char *p;
	size_t len, n;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (n > o->len - o->n)
		n = o->len - o->n;
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

size_t le_render(struct le *le, char *out, size_t outlen, unsigned flags)
{
	struct out o = {.p = out, .len = outlen, .n = 0};
	size_t width, shown, col;
	char move[32];

	if (le->bell)
		puts_(&o, "\a");
	if (le->clear)
		puts_(&o, "\x1b[H\x1b[2J");
	le->bell = false;
	le->clear = false;

	puts_(&o, "\r");
	put(&o, le->prompt, le->prompt_len);
	if (flags & LE_RENDER_FINAL) {
		put(&o, le->buf, le->len);
		puts_(&o, "\x1b[K");
		le->scroll = 0;
		return o.n;
	}

	/* Text columns: all but the prompt and the last one (so the terminal never wraps). */
	width = le->cols > le->prompt_len + 1 ? le->cols - le->prompt_len - 1 : 1;
	if (le->scroll > le->pos)
		le->scroll = le->pos;
	if (le->pos - le->scroll > width)
		le->scroll = le->pos - width;
	/* After a deletion, show text again to the left rather than leave columns empty. */
	if (le->len <= width)
		le->scroll = 0;
	else if (le->scroll > le->len - width)
		le->scroll = le->len - width;
	shown = le->len - le->scroll < width ? le->len - le->scroll : width;
	put(&o, le->buf + le->scroll, shown);
	puts_(&o, "\x1b[K\r");
	col = le->prompt_len + le->pos - le->scroll;
	if (col) {
		snprintf(move, sizeof(move), "\x1b[%zuC", col);
		puts_(&o, move);
	}
	return o.n;
}

/* Add a line already checked, dropping the oldest entry when full. */
static int history_push(struct le *le, const char *line, size_t n)
{
	char *copy;

	if (n == 0)
		return 0;
	if (le->hist_count && strlen(le->hist[le->hist_count - 1]) == n &&
	    !memcmp(le->hist[le->hist_count - 1], line, n))
		return 0;
	copy = strndup(line, n);
	if (!copy)
		return -ENOMEM;
	if (le->hist_count == LE_HISTORY_MAX) {
		free(le->hist[0]);
		memmove(le->hist, le->hist + 1, (LE_HISTORY_MAX - 1) * sizeof(le->hist[0]));
		le->hist_count--;
	}
	le->hist[le->hist_count++] = copy;
	if (le->hist_unsaved < le->hist_count)
		le->hist_unsaved++;
	return 1;
}

/* Trim blanks and check what a history entry may hold; 0 when it may not. */
static int history_check(const char **line, size_t *n)
{
	const char *s = *line;
	size_t len = strlen(s);

	while (len && is_blank(*s)) {
		s++;
		len--;
	}
	while (len && is_blank(s[len - 1]))
		len--;
	if (len > LE_LINE_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!is_text((unsigned char)s[i]))
			return 0;
	*line = s;
	*n = len;
	return 1;
}

int le_history_add(struct le *le, const char *line)
{
	size_t n = 0;
	int ret = 0;

	if (history_check(&line, &n))
		ret = history_push(le, line, n);
	le->hist_pos = le->hist_count;
	return ret;
}

int le_history_load(struct le *le, const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, lines = 0, n;
	ssize_t got;
	int ret = 0;

	if (!f)
		return -errno;
	while ((got = getline(&line, &cap, f)) > 0) {
		const char *s = line;

		lines++;
		if (line[got - 1] == '\n')
			line[--got] = '\0';
		/* An entry with a NUL in it would be cut: skip it like any other bad one. */
		if ((size_t)got != strlen(line) || !history_check(&s, &n))
			continue;
		ret = history_push(le, s, n);
		if (ret < 0)
			break;
	}
	if (ret >= 0 && ferror(f))
		ret = -EIO;
	free(line);
	fclose(f);
	le->hist_unsaved = 0;
	le->hist_rewrite = lines > 2 * LE_HISTORY_MAX;
	le->hist_pos = le->hist_count;
	return ret < 0 ? ret : 0;
}

/* Write entries [from, hist_count) to f; 0 or -errno. */
static int history_write(struct le *le, FILE *f, size_t from)
{
	errno = 0;
	for (size_t i = from; i < le->hist_count; i++)
		if (fputs(le->hist[i], f) == EOF || putc('\n', f) == EOF)
			return errno ? -errno : -EIO;
	return 0;
}

int le_history_save(struct le *le, const char *path)
{
	char tmp[4096];
	const char *target = path;
	size_t from = le->hist_count - le->hist_unsaved;
	FILE *f;
	int fd, ret;

	if (le->hist_rewrite) {
		/* A new file renamed over the old one: a crash leaves either, never half. */
		if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
			return -ENAMETOOLONG;
		target = tmp;
		from = 0;
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	} else {
		if (from == le->hist_count)
			return 0;
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = history_write(le, f, from);
	errno = 0;
	if (fclose(f) == EOF && ret == 0)
		ret = errno ? -errno : -EIO;
	if (ret == 0 && le->hist_rewrite && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0) {
		if (le->hist_rewrite)
			unlink(target);
		return ret;
	}
	le->hist_unsaved = 0;
	le->hist_rewrite = false;
	return 0;
}
