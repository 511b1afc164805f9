// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The console's table printer (table.h). */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

void tbl_init(struct tbl *t, const char *const *hdr, unsigned ncols)
{
	assert(ncols >= 1 && ncols <= TBL_COLS_MAX);
	memset(t, 0, sizeof(*t));
	t->hdr = hdr;
	t->ncols = ncols;
}

void tbl_free(struct tbl *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->cell[i].s);
	free(t->cell);
	t->cell = NULL;
	t->n = t->cap = 0;
}

void tbl_add(struct tbl *t, bool right, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16 * t->ncols;
		struct tbl_cell *c = realloc(t->cell, cap * sizeof(*c));

		if (!c)
			return; /* the row comes out short; tbl_print pads it */
		t->cell = c;
		t->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	/* One cell, one line: a control character would break the columns. */
	for (char *p = s; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	t->cell[t->n].s = s;
	t->cell[t->n].right = right;
	t->n++;
}

void tbl_txt(struct tbl *t, const char *s)
{
	tbl_add(t, false, "%s", s);
}

void tbl_u64(struct tbl *t, uint64_t v)
{
	tbl_add(t, true, "%" PRIu64, v);
}

/* A numeric column that may be unknown (-1): "-". */
void tbl_int_or_dash(struct tbl *t, long v)
{
	if (v < 0)
		tbl_add(t, true, "-");
	else
		tbl_add(t, true, "%ld", v);
}

static void tbl_pad(FILE *out, size_t n)
{
	while (n--)
		fputc(' ', out);
}

static const char *cell_str(const struct tbl_cell *c)
{
	return c->s ? c->s : "?";
}

/*
 * Print the table: header row first (right-aligned over columns of numbers), columns
 * TBL_SEP apart, each line prefixed with indent, no trailing blanks. Frees the cells.
 */
void tbl_print(struct tbl *t, FILE *out, const char *indent)
{
	size_t nrows = (t->n + t->ncols - 1) / t->ncols, w[TBL_COLS_MAX];
	bool right[TBL_COLS_MAX];

	for (unsigned c = 0; c < t->ncols; c++) {
		w[c] = t->hdr ? strlen(t->hdr[c]) : 0;
		right[c] = nrows > 0;
	}
	for (size_t i = 0; i < t->n; i++) {
		size_t l = strlen(cell_str(&t->cell[i]));
		unsigned c = i % t->ncols;

		if (l > w[c])
			w[c] = l;
		if (!t->cell[i].right)
			right[c] = false;
	}
	for (size_t r = (t->hdr ? 0 : 1); r <= nrows; r++) {
		fputs(indent, out);
		for (unsigned c = 0; c < t->ncols; c++) {
			size_t i = (r - 1) * t->ncols + c;
			const char *s;
			bool rt;

			if (!r) {
				s = t->hdr[c];
				rt = right[c];
			} else if (i < t->n) {
				s = cell_str(&t->cell[i]);
				rt = t->cell[i].right;
			} else {
				s = "";
				rt = false;
			}
			if (c)
				fputs(TBL_SEP, out);
			if (rt)
				tbl_pad(out, w[c] - strlen(s));
			fputs(s, out);
			if (!rt && c + 1 < t->ncols)
				tbl_pad(out, w[c] - strlen(s));
		}
		fputc('\n', out);
	}
	tbl_free(t);
}

void fmt_age(uint64_t ms, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "s", ms / 1000, ms % 1000 / 100);
}
