/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_lineedit.c - bcom's line editor driven with byte strings, as a terminal would
 * send them: editing keys and their escape sequences (also split across feeds), the
 * line limit and its bell, history walking and its file, and what le_render() draws
 * (horizontal scrolling on a narrow terminal).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lineedit.h"
#include "tap.h"

static struct le ed;

/* Feed a string; the event. */
static enum le_event feed(const char *s)
{
	return le_feed(&ed, s, strlen(s), NULL);
}

/* Start over with an empty line typed as s. */
static void line(const char *s)
{
	le_reset(&ed);
	feed(s);
}

static char rendered[LE_RENDER_MAX + 1];

static const char *render(unsigned flags)
{
	size_t n = le_render(&ed, rendered, LE_RENDER_MAX, flags);

	rendered[n] = '\0';
	return rendered;
}

static void test_insert_and_move(void)
{
	le_init(&ed);
	CHECK_EQ(feed("hello"), LE_CONTINUE);
	CHECK_STR(ed.buf, "hello");
	CHECK_EQ(ed.len, 5);
	CHECK_EQ(ed.pos, 5);

	CHECK_EQ(feed("\x1b[D\x1b[D"), LE_CONTINUE); /* Left Left */
	CHECK_EQ(ed.pos, 3);
	feed("X");
	CHECK_STR(ed.buf, "helXlo");
	CHECK_EQ(ed.pos, 4);
	feed("\x1b[C"); /* Right */
	CHECK_EQ(ed.pos, 5);
	feed("\x1bOD\x1bOD"); /* Left in application cursor mode */
	CHECK_EQ(ed.pos, 3);
	feed("\x1bOC");
	CHECK_EQ(ed.pos, 4);

	/* Every form of Home and End. */
	static const char *const homes[] = {"\x1b[H", "\x1b[1~", "\x1b[7~", "\x1bOH", "\x01"};
	static const char *const ends[] = {"\x1b[F", "\x1b[4~", "\x1b[8~", "\x1bOF", "\x05"};

	for (size_t i = 0; i < sizeof(homes) / sizeof(homes[0]); i++) {
		ed.pos = 3;
		feed(homes[i]);
		CHECK_EQ(ed.pos, 0);
		feed(ends[i]);
		CHECK_EQ(ed.pos, 6);
	}

	/* Bounds: Left at the start and Right at the end do nothing. */
	feed("\x01\x1b[D\x02");
	CHECK_EQ(ed.pos, 0);
	feed("\x05\x1b[C\x06");
	CHECK_EQ(ed.pos, 6);
	CHECK(!ed.bell);
	feed("\x02\x02"); /* ^B ^B */
	CHECK_EQ(ed.pos, 4);
	feed("\x06"); /* ^F */
	CHECK_EQ(ed.pos, 5);
	CHECK_STR(ed.buf, "helXlo");
}

static void test_delete(void)
{
	line("abcdef");
	feed("\x7f"); /* Backspace (DEL) */
	CHECK_STR(ed.buf, "abcde");
	feed("\x08"); /* Backspace (^H) */
	CHECK_STR(ed.buf, "abcd");
	CHECK_EQ(ed.pos, 4);
	feed("\x01\x7f"); /* at the start: nothing */
	CHECK_STR(ed.buf, "abcd");
	feed("\x1b[3~"); /* Delete */
	CHECK_STR(ed.buf, "bcd");
	CHECK_EQ(ed.pos, 0);
	feed("\x04"); /* ^D on a non-empty line deletes */
	CHECK_STR(ed.buf, "cd");
	CHECK_EQ(feed("\x05\x04"), LE_CONTINUE); /* ^D at the end: nothing */
	CHECK_STR(ed.buf, "cd");
	feed("\x1b[3~");
	CHECK_STR(ed.buf, "cd");
	CHECK_EQ(ed.len, 2);

	line("");
	CHECK_EQ(feed("\x04"), LE_EOF);
}

static void test_kill_yank(void)
{
	line("join 239.1.2.3 extra");
	feed("\x17"); /* ^W */
	CHECK_STR(ed.buf, "join 239.1.2.3 ");
	feed("\x17");
	CHECK_STR(ed.buf, "join ");
	feed("\x19"); /* ^Y */
	CHECK_STR(ed.buf, "join 239.1.2.3 ");
	feed("\x01\x1b[C\x1b[C\x0b"); /* ^K after "jo" */
	CHECK_STR(ed.buf, "jo");
	CHECK_EQ(ed.pos, 2);
	feed("\x19");
	CHECK_STR(ed.buf, "join 239.1.2.3 ");
	feed("\x01\x0b\x0b"); /* a second, empty kill keeps the first */
	CHECK_STR(ed.buf, "");
	feed("\x19");
	CHECK_STR(ed.buf, "join 239.1.2.3 ");

	line("leave 239.1.2.3");
	feed("\x1b[D\x1b[D\x15"); /* ^U kills before the cursor */
	CHECK_STR(ed.buf, ".3");
	CHECK_EQ(ed.pos, 0);

	line("  two  words");
	feed("\x01");
	feed("\x17"); /* ^W at the start: nothing */
	CHECK_STR(ed.buf, "  two  words");
	feed("\x05\x1b[D\x1b[D\x17"); /* inside a word: to its start */
	CHECK_STR(ed.buf, "  two  ds");
}

static void test_words(void)
{
	line("aa bb  cc");
	feed("\x1b[1;5D"); /* Ctrl-Left */
	CHECK_EQ(ed.pos, 7);
	feed("\x1b[1;5D");
	CHECK_EQ(ed.pos, 3);
	feed("\x1b"
	     "b"); /* Alt-b */
	CHECK_EQ(ed.pos, 0);
	feed("\x1b"
	     "f"); /* Alt-f */
	CHECK_EQ(ed.pos, 2);
	feed("\x1b[1;5C");
	CHECK_EQ(ed.pos, 5);
	feed("\x1b[1;3C"); /* Alt-Right */
	CHECK_EQ(ed.pos, 9);
	CHECK_STR(ed.buf, "aa bb  cc");
}

static void test_events(void)
{
	size_t used;

	line("status");
	CHECK_EQ(feed("\r"), LE_DONE);
	CHECK_STR(ed.buf, "status");
	line("status");
	CHECK_EQ(feed("\n"), LE_DONE);

	/* Bytes after the end of a line are left for the next one. */
	le_reset(&ed);
	CHECK_EQ(le_feed(&ed, "help\rstatus\r", 12, &used), LE_DONE);
	CHECK_EQ(used, 5);
	CHECK_STR(ed.buf, "help");
	le_reset(&ed);
	CHECK_EQ(le_feed(&ed, "help\rstatus\r" + 5, 7, &used), LE_DONE);
	CHECK_EQ(used, 7);
	CHECK_STR(ed.buf, "status");
	le_reset(&ed);
	CHECK_EQ(le_feed(&ed, "abc", 3, &used), LE_CONTINUE);
	CHECK_EQ(used, 3);

	line("multicast");
	CHECK_EQ(feed("\x03"), LE_CANCEL); /* ^C */
	le_reset(&ed);
	CHECK_STR(ed.buf, "");
	CHECK_EQ(ed.len, 0);
	CHECK_EQ(ed.pos, 0);

	line("abc");
	CHECK_EQ(feed("\x1a"), LE_SUSPEND); /* ^Z keeps the line */
	CHECK_STR(ed.buf, "abc");

	line("abc");
	CHECK_EQ(feed("\x0c"), LE_CONTINUE); /* ^L */
	CHECK(ed.clear);
	CHECK_HAS(render(0), "\x1b[2J");
	CHECK(!ed.clear);
	CHECK(!strstr(render(0), "\x1b[2J"));
	CHECK_STR(ed.buf, "abc");
}

static void test_split_escapes(void)
{
	line("abcd");
	CHECK_EQ(feed("\x1b"), LE_CONTINUE);
	CHECK(le_escape_pending(&ed));
	feed("[");
	CHECK(le_escape_pending(&ed));
	CHECK_EQ(ed.pos, 4);
	feed("D");
	CHECK(!le_escape_pending(&ed));
	CHECK_EQ(ed.pos, 3);
	CHECK_STR(ed.buf, "abcd");

	/* Delete byte by byte. */
	feed("\x1b");
	feed("[");
	feed("3");
	CHECK_STR(ed.buf, "abcd");
	feed("~");
	CHECK_STR(ed.buf, "abc");

	/* SS3 split. */
	feed("\x1b");
	feed("O");
	feed("H");
	CHECK_EQ(ed.pos, 0);
	CHECK_STR(ed.buf, "abc");

	/* A lone ESC that timed out: the next key is a key of its own. */
	line("ab");
	feed("\x1b");
	le_escape_timeout(&ed);
	CHECK(!le_escape_pending(&ed));
	feed("b");
	CHECK_STR(ed.buf, "abb");

	/* ESC ESC [ D: the second ESC starts the sequence. */
	line("ab");
	feed("\x1b\x1b[D");
	CHECK_EQ(ed.pos, 1);
	CHECK_STR(ed.buf, "ab");

	/* Unknown keys (Insert, PgUp, F5) and a very long sequence insert nothing. */
	line("ab");
	feed("\x1b[2~\x1b[5~\x1b[15~\x1b[?1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18X");
	feed("\x1b[>0c"); /* private parameters */
	CHECK_STR(ed.buf, "ab");
	CHECK_EQ(ed.pos, 2);
	feed("c");
	CHECK_STR(ed.buf, "abc");

	/* A control byte breaks a sequence and counts as itself. */
	line("ab");
	CHECK_EQ(feed("\x1b[1\r"), LE_DONE);
	line("ab");
	CHECK_EQ(feed("\x1bO\r"), LE_DONE);
	CHECK_STR(ed.buf, "ab");
	le_reset(&ed);
	CHECK(!le_escape_pending(&ed));
}

static void test_limits(void)
{
	char big[LE_LINE_MAX + 2];

	memset(big, 'a', LE_LINE_MAX);
	big[LE_LINE_MAX] = '\0';
	line(big);
	CHECK_EQ(ed.len, LE_LINE_MAX);
	CHECK(!ed.bell);
	feed("b");
	CHECK_EQ(ed.len, LE_LINE_MAX);
	CHECK(ed.bell);
	CHECK_EQ(ed.buf[LE_LINE_MAX], '\0');
	CHECK_HAS(render(0), "\a");
	CHECK(!ed.bell);
	feed("\x01z"); /* not in the middle either */
	CHECK_EQ(ed.buf[0], 'a');
	CHECK(ed.bell);
	CHECK_EQ(feed("\r"), LE_DONE);
	CHECK_EQ(strlen(ed.buf), LE_LINE_MAX);

	/* A yank inserts what fits. */
	line("0123456789");
	feed("\x15"); /* kill 10 bytes */
	memset(big, 'x', LE_LINE_MAX - 4);
	big[LE_LINE_MAX - 4] = '\0';
	feed(big);
	render(0);
	CHECK(!ed.bell);
	feed("\x19");
	CHECK_EQ(ed.len, LE_LINE_MAX);
	CHECK(ed.bell);
	CHECK_STR(ed.buf + LE_LINE_MAX - 4, "0123");

	/* Bytes >= 0x80 are inserted as they are; control bytes are not; tab is a space. */
	line("caf\xc3\xa9");
	CHECK_EQ(ed.len, 5);
	CHECK_STR(ed.buf, "caf\xc3\xa9");
	line("a\x07\x0e\x10\x12\x1c\x7f" /* ^N, ^P walk an empty history */);
	CHECK_STR(ed.buf, "");
	line("a\tb");
	CHECK_STR(ed.buf, "a b");
}

static void test_history(void)
{
	char name[32];

	le_done(&ed);
	le_init(&ed);
	CHECK_EQ(le_history_add(&ed, "one"), 1);
	CHECK_EQ(le_history_add(&ed, "two"), 1);
	CHECK_EQ(le_history_add(&ed, "two"), 0);    /* repeat */
	CHECK_EQ(le_history_add(&ed, "  two "), 0); /* repeat after trimming */
	CHECK_EQ(le_history_add(&ed, ""), 0);
	CHECK_EQ(le_history_add(&ed, " \t "), 0);
	CHECK_EQ(le_history_add(&ed, "bad\x1b[2J"), 0);
	CHECK_EQ(le_history_add(&ed, " three "), 1);
	CHECK_EQ(ed.hist_count, 3);
	CHECK_STR(ed.hist[2], "three");

	line("cur");
	feed("\x1b[A"); /* Up */
	CHECK_STR(ed.buf, "three");
	CHECK_EQ(ed.pos, 5);
	feed("\x1b[A");
	CHECK_STR(ed.buf, "two");
	feed("\x10"); /* ^P */
	CHECK_STR(ed.buf, "one");
	CHECK(!ed.bell);
	feed("\x1b[A"); /* past the oldest */
	CHECK_STR(ed.buf, "one");
	CHECK(ed.bell);
	render(0);
	feed("\x1b[B"); /* Down */
	CHECK_STR(ed.buf, "two");
	feed("\x1bOB"); /* Down, application mode */
	CHECK_STR(ed.buf, "three");
	feed("\x0e"); /* ^N back to the line being typed */
	CHECK_STR(ed.buf, "cur");
	CHECK_EQ(ed.pos, 3);
	CHECK(!ed.bell);
	feed("\x1b[B"); /* past the newest */
	CHECK_STR(ed.buf, "cur");
	CHECK(ed.bell);

	/* Edits to a recalled entry do not change the history. */
	feed("\x1b[A\x7f\x7f\x7f\x7f\x7fX\x1b[B\x1b[A");
	CHECK_STR(ed.buf, "three");
	CHECK_STR(ed.hist[2], "three");

	/* A new line starts at the bottom of the history. */
	line("");
	feed("\x1b[A");
	CHECK_STR(ed.buf, "three");

	/* A repeat that is not of the newest entry is kept. */
	CHECK_EQ(le_history_add(&ed, "one"), 1);
	CHECK_EQ(ed.hist_count, 4);

	/* Full: the oldest entries go. */
	for (int i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "cmd %d", i);
		le_history_add(&ed, name);
	}
	CHECK_EQ(ed.hist_count, LE_HISTORY_MAX);
	CHECK_STR(ed.hist[0], "cmd 100");
	CHECK_STR(ed.hist[LE_HISTORY_MAX - 1], "cmd 599");
	line("");
	render(0); /* the bell of before */
	for (int i = 0; i < LE_HISTORY_MAX; i++)
		feed("\x1b[A");
	CHECK_STR(ed.buf, "cmd 100");
	CHECK(!ed.bell);
	le_done(&ed);
	CHECK_EQ(ed.hist_count, 0);
}

static size_t count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void test_history_file(void)
{
	char dir[] = "/tmp/test_lineedit.XXXXXX", path[256], name[32];
	FILE *f;

	if (!CHECK(mkdtemp(dir)))
		return;
	snprintf(path, sizeof(path), "%s/history", dir);

	le_init(&ed);
	CHECK_EQ(le_history_load(&ed, path), -ENOENT);
	CHECK_EQ(le_history_save(&ed, path), 0); /* nothing to save: no file */
	CHECK(access(path, F_OK) < 0);
	le_history_add(&ed, "status");
	le_history_add(&ed, "multicast");
	CHECK_EQ(le_history_save(&ed, path), 0);
	CHECK_EQ(count_lines(path), 2);
	CHECK_EQ(le_history_save(&ed, path), 0); /* saved already: nothing appended */
	CHECK_EQ(count_lines(path), 2);
	le_done(&ed);

	/* A second session reads them back and appends only its own. */
	le_init(&ed);
	CHECK_EQ(le_history_load(&ed, path), 0);
	CHECK_EQ(ed.hist_count, 2);
	CHECK_STR(ed.hist[0], "status");
	CHECK_STR(ed.hist[1], "multicast");
	line("");
	feed("\x1b[A");
	CHECK_STR(ed.buf, "multicast");
	le_history_add(&ed, "join 239.1.1.1");
	CHECK_EQ(le_history_save(&ed, path), 0);
	CHECK_EQ(count_lines(path), 3);
	le_done(&ed);

	/* Bad lines in the file are skipped. */
	f = fopen(path, "a");
	fputs("\x1b[2Jevil\n\n   \nok  \nok\n", f);
	for (int i = 0; i < LE_LINE_MAX + 1; i++)
		putc('y', f);
	fputs("\nlast", f); /* no final newline */
	fclose(f);
	le_init(&ed);
	CHECK_EQ(le_history_load(&ed, path), 0);
	CHECK_EQ(ed.hist_count, 5);
	CHECK_STR(ed.hist[3], "ok");
	CHECK_STR(ed.hist[4], "last");
	CHECK(!ed.hist_rewrite);
	le_done(&ed);

	/* A file grown past twice the history is rewritten with what is kept. */
	f = fopen(path, "w");
	for (int i = 0; i < 3 * LE_HISTORY_MAX; i++)
		fprintf(f, "cmd %d\n", i);
	fclose(f);
	le_init(&ed);
	CHECK_EQ(le_history_load(&ed, path), 0);
	CHECK_EQ(ed.hist_count, LE_HISTORY_MAX);
	snprintf(name, sizeof(name), "cmd %d", 2 * LE_HISTORY_MAX);
	CHECK_STR(ed.hist[0], name);
	CHECK(ed.hist_rewrite);
	le_history_add(&ed, "newest");
	CHECK_EQ(le_history_save(&ed, path), 0);
	CHECK_EQ(count_lines(path), LE_HISTORY_MAX);
	CHECK(!ed.hist_rewrite);
	le_done(&ed);
	le_init(&ed);
	CHECK_EQ(le_history_load(&ed, path), 0);
	CHECK_STR(ed.hist[LE_HISTORY_MAX - 1], "newest");
	le_done(&ed);

	/* A file that cannot be written is an error to return, nothing more. */
	snprintf(path, sizeof(path), "%s/no/such/dir", dir);
	le_init(&ed);
	le_history_add(&ed, "x");
	CHECK_EQ(le_history_save(&ed, path), -ENOENT);
	le_done(&ed);

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	CHECK_EQ(system(path), 0);
}

static void test_render(void)
{
	char want[128], text[31];

	le_init(&ed);
	le_set_prompt(&ed, "> ");
	le_set_cols(&ed, 80);
	line("status");
	CHECK_STR(render(0), "\r> status\x1b[K\r\x1b[8C");
	feed("\x01");
	CHECK_STR(render(0), "\r> status\x1b[K\r\x1b[2C");
	line("");
	le_set_prompt(&ed, "");
	CHECK_STR(render(0), "\r\x1b[K\r");
	le_set_prompt(&ed, "> ");

	/* 20 columns: 17 for text after the prompt, the last one never written. */
	le_set_cols(&ed, 20);
	for (int i = 0; i < 30; i++)
		text[i] = (char)('a' + i % 26);
	text[30] = '\0';
	line(text);
	snprintf(want, sizeof(want), "\r> %.17s\x1b[K\r\x1b[19C", text + 13);
	CHECK_STR(render(0), want);
	CHECK_EQ(ed.scroll, 13);
	feed("\x1b[D\x1b[D"); /* moving inside the window does not scroll */
	CHECK_STR(render(0), "\r> nopqrstuvwxyzabcd\x1b[K\r\x1b[17C");
	feed("\x01");
	snprintf(want, sizeof(want), "\r> %.17s\x1b[K\r\x1b[2C", text);
	CHECK_STR(render(0), want);
	CHECK_EQ(ed.scroll, 0);
	feed("\x05");
	render(0);
	CHECK_EQ(ed.scroll, 13);
	feed("\x17"); /* line shorter than the window: all of it shows */
	CHECK_EQ(ed.len, 0);
	CHECK_STR(render(0), "\r> \x1b[K\r\x1b[2C");
	CHECK_EQ(ed.scroll, 0);

	/* The accepted line is drawn whole. */
	line(text);
	feed("\x01");
	render(0);
	snprintf(want, sizeof(want), "\r> %s\x1b[K", text);
	CHECK_STR(render(LE_RENDER_FINAL), want);

	/* Narrower than the prompt: still one text column. */
	le_set_cols(&ed, 2);
	line("abc");
	CHECK_STR(render(0), "\r> c\x1b[K\r\x1b[3C");

	/* A small buffer is filled, never overrun. */
	le_set_cols(&ed, 80);
	line("status");
	{
		char small[8] = "#######";

		CHECK_EQ(le_render(&ed, small, 5, 0), 5);
		CHECK(!memcmp(small, "\r> st##", 7));
	}

	/* A long prompt is cut. */
	memset(want, 'p', 100);
	want[100] = '\0';
	le_set_prompt(&ed, want);
	CHECK_EQ(ed.prompt_len, LE_PROMPT_MAX);
	le_done(&ed);
}

int main(void)
{
	test_insert_and_move();
	test_delete();
	test_kill_yank();
	test_words();
	test_events();
	test_split_escapes();
	test_limits();
	test_history();
	test_history_file();
	test_render();
	le_done(&ed);
	return tap_done();
}
