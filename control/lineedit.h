/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lineedit.h - a small line editor with history for bcom, written as a pure state machine
 * so that it can be tested without a terminal.
 *
 * The caller owns the terminal: it reads bytes (in raw mode), feeds them with le_feed(),
 * and after each feed writes what le_render() produced. Apart from the history entries
 * and the history file functions, the editor does no I/O, no allocation and does not
 * look at the environment. Escape sequences may be split across feeds: the parser state
 * lives in struct le.
 *
 * Keys: printable bytes and bytes >= 0x80 insert (a tab inserts a space); Left/Right,
 * Home/End, Delete, Up/Down as sent by xterm-like terminals in normal and application
 * cursor mode (ESC [ D, ESC O D, ESC [ H, ESC [ 1~, ESC [ 7~, ESC O H, ESC [ 3~, ...);
 * Ctrl-Left/Right and Alt-b/Alt-f move by words; Backspace (0x7f, ^H); ^A ^E ^B ^F;
 * ^K (kill to end), ^U (kill to start), ^W (kill the word before the cursor), ^Y (yank
 * the last kill); ^D deletes under the cursor, or ends input on an empty line; ^L clears
 * the screen; ^C abandons the line; ^Z asks the caller to suspend; ^P/^N and Up/Down walk
 * the history; Enter (CR or LF) accepts the line. Unknown escape sequences and other
 * control characters are ignored.
 *
 * One byte is one column: UTF-8 text can be typed and is passed on unchanged, but
 * the cursor moves by bytes and multibyte characters may be drawn at the wrong place.
 *
 * Narrow terminals: the line is drawn on one row and scrolls horizontally so that the
 * cursor stays visible; the last column is never written, so the terminal never wraps.
 * When a line is accepted it is drawn once more in full (wrapping if needed), so the
 * scrollback shows the whole command.
 *
 * History: up to LE_HISTORY_MAX entries, oldest dropped first; empty (all blank) lines
 * and a repeat of the newest entry are not stored. Walking up saves the line being typed;
 * walking back down past the newest entry restores it. Edits made to a recalled entry
 * are not written back into the history.
 */
#ifndef CONTROL_LINEEDIT_H
#define CONTROL_LINEEDIT_H

#include <stdbool.h>
#include <stddef.h>

/* Longest line, in bytes, without its terminator: the console protocol's limit. */
#define LE_LINE_MAX 1023

/* Entries kept in the history (in memory, and read back from a history file). */
#define LE_HISTORY_MAX 500

/* Longest prompt drawn; a longer one is cut. */
#define LE_PROMPT_MAX 64

/* Longest escape sequence parsed; a longer one is dropped up to its final byte. */
#define LE_ESC_MAX 16

/* A buffer of this size always holds le_render()'s output. */
#define LE_RENDER_MAX (LE_LINE_MAX + LE_PROMPT_MAX + 64)

/* What a feed ended with. */
enum le_event {
	LE_CONTINUE, /* all bytes consumed, the line is still being edited */
	LE_DONE,     /* Enter: the line is in le->buf */
	LE_EOF,	     /* ^D on an empty line */
	LE_CANCEL,   /* ^C: the line was abandoned */
	LE_SUSPEND,  /* ^Z: the caller should stop itself (the line is kept) */
};

/* Flags of le_render(). */
#define LE_RENDER_FINAL 0x1 /* draw the whole line (wrapping), cursor after its end */

/*
 * The editor state. The caller allocates it (it is a few KiB: static or on the heap).
 * buf/len/pos and the history arrays may be read by the caller; change them only
 * through the functions below.
 */
struct le {
	char buf[LE_LINE_MAX + 1]; /* the line, always NUL-terminated */
	size_t len;		   /* bytes in buf */
	size_t pos;		   /* cursor, 0..len */

	/* Escape sequence being parsed (esc_len bytes after the ESC, esc_on when in one). */
	bool esc_on;
	char esc[LE_ESC_MAX];
	size_t esc_len;
	bool esc_skip; /* too long: drop bytes until the final one */

	/* Output owed to the terminal, consumed by le_render(). */
	bool bell;
	bool clear;

	/* Last text killed by ^K, ^U or ^W, for ^Y. */
	char kill[LE_LINE_MAX + 1];
	size_t kill_len;

	/* History, oldest first. hist_pos == hist_count is the line being typed. */
	char *hist[LE_HISTORY_MAX];
	size_t hist_count;
	size_t hist_pos;
	size_t hist_unsaved; /* newest entries not yet in the history file */
	bool hist_rewrite;   /* the file grew too long: rewrite it instead of appending */
	char saved[LE_LINE_MAX + 1];
	size_t saved_len;

	/* Drawing. */
	char prompt[LE_PROMPT_MAX + 1];
	size_t prompt_len;
	size_t cols;   /* terminal width */
	size_t scroll; /* first byte of buf shown */
};

/* Start an editor with an empty history, prompt "" and 80 columns. */
void le_init(struct le *le);

/* Free the history entries. The editor may be reused after le_init(). */
void le_done(struct le *le);

/* Start a new, empty line (after LE_DONE, LE_CANCEL or LE_EOF). Keeps the history. */
void le_reset(struct le *le);

/* Set the prompt (copied, cut at LE_PROMPT_MAX bytes) and the terminal width (0: 80). */
void le_set_prompt(struct le *le, const char *prompt);
void le_set_cols(struct le *le, size_t cols);

/*
 * Feed one byte. Returns the event it caused; after anything but LE_CONTINUE the caller
 * reads le->buf (LE_DONE) and calls le_reset() before feeding the next line.
 */
enum le_event le_feed_byte(struct le *le, unsigned char c);

/*
 * Feed n bytes; stops at the first byte that ends the line (LE_DONE, LE_EOF, LE_CANCEL,
 * LE_SUSPEND) and returns that event, or LE_CONTINUE when all were consumed. *used (if
 * not NULL) is the number of bytes consumed: the rest (typed ahead, pasted lines) belongs
 * to the next line.
 */
enum le_event le_feed(struct le *le, const char *bytes, size_t n, size_t *used);

/* An escape sequence is half-read (the caller may time out a lone ESC key). */
bool le_escape_pending(const struct le *le);

/* Drop a half-read escape sequence: the ESC key alone does nothing. */
void le_escape_timeout(struct le *le);

/*
 * Write into out (at most outlen bytes, not NUL-terminated) the bytes that bring the
 * terminal row up to date: a pending bell and screen clear, then the prompt and the
 * visible part of the line, and the cursor placed. With LE_RENDER_FINAL (once the line
 * is over) the whole line is drawn and the cursor left after it: the caller then ends
 * the row ("\r\n", or "^C\r\n"). Updates the horizontal scroll position. Returns the number of
 * bytes written; outlen >= LE_RENDER_MAX is always enough.
 */
size_t le_render(struct le *le, char *out, size_t outlen, unsigned flags);

/*
 * Add a line to the history (copied, without leading/trailing blanks). Returns 1 when
 * stored, 0 when not (blank, a repeat of the newest entry, too long or holding control
 * characters), -ENOMEM. Resets the history walk.
 */
int le_history_add(struct le *le, const char *line);

/*
 * Read a history file (one entry a line, oldest first), keeping the newest
 * LE_HISTORY_MAX entries after those already held. Returns 0 or -errno (a missing file
 * is -ENOENT: the caller decides whether that matters).
 */
int le_history_load(struct le *le, const char *path);

/*
 * Append to a history file (created with mode 0600) the entries added since the last
 * load or save; when the file had grown to more than twice LE_HISTORY_MAX lines, it is
 * rewritten with the history held instead. Returns 0 or -errno.
 */
int le_history_save(struct le *le, const char *path);

#endif /* CONTROL_LINEEDIT_H */
