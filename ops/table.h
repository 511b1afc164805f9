/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The console's table printer (table.c): cells collected row by row, then printed with
 * the column widths computed from the content (numbers right-aligned, text left). The
 * tables of show.c, show_ports.c and show_senders.c use it. Control thread.
 */
#ifndef OPS_TABLE_H
#define OPS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TBL_SEP	     "  "
#define TBL_COLS_MAX 23 /* the widest table (workers) has 23 columns */

struct tbl_cell {
	char *s;    /* NULL after an allocation failure: printed as "?" */
	bool right; /* numbers right-aligned, text left-aligned */
};

struct tbl {
	unsigned ncols;
	const char *const *hdr; /* ncols column names; NULL: no header row */
	struct tbl_cell *cell;	/* row-major */
	size_t n, cap;
};

/* A table of ncols columns with the header hdr (NULL: none). */
void tbl_init(struct tbl *t, const char *const *hdr, unsigned ncols);
void tbl_free(struct tbl *t);

/* The next cell (rows fill left to right): printf-formatted, right-aligned or not. */
__attribute__((format(printf, 3, 4))) void tbl_add(struct tbl *t, bool right, const char *fmt, ...);
void tbl_txt(struct tbl *t, const char *s);
void tbl_u64(struct tbl *t, uint64_t v);
void tbl_int_or_dash(struct tbl *t, long v); /* "-" for a negative value */

/* Print the table, each line prefixed with indent, and free it. */
void tbl_print(struct tbl *t, FILE *out, const char *indent);

/* Seconds with one decimal: ages of heartbeats and senders. */
void fmt_age(uint64_t ms, char *buf, size_t len);

#endif /* OPS_TABLE_H */
