/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * concmd.h - a console's command table, as ib2roce's console (control/console.c) and the
 * tools' (tools/mccon.c) have it: the words of a command line, the lookup of a command
 * by its name or a unique prefix (with a suggestion for a typo), and the help list. The
 * commands and what they do are the caller's: a table's entries are the caller's
 * structs, each beginning with a struct concmd, the last one with a NULL name.
 *
 * No state; any thread (the one that runs the console).
 */
#ifndef LIB_CONCMD_H
#define LIB_CONCMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct concmd {
	const char *name;
	const char *args; /* synopsis of the arguments, NULL: none */
	const char *help; /* one line */
	bool exact;	  /* never reached by a prefix: typed in full only (shutdown) */
};

/* Are two entries names of one command (an alias: cores and workers)? */
typedef bool concmd_same_fn(const struct concmd *a, const struct concmd *b);

/* concmd_word - split off the next blank-separated word of *s; NULL at the end. */
char *concmd_word(char **s);

/* concmd_rest - the rest of s without surrounding blanks (cut in place); NULL if empty. */
char *concmd_rest(char *s);

/*
 * concmd_no_args - 0 when args holds nothing but blanks, else -1 with "CMD: unexpected
 * argument '...'" written to out.
 */
int concmd_no_args(const char *cmd, char *args, FILE *out);

/*
 * concmd_find - the entry that the command word name selects in table (entries of size
 * bytes): the entry of that name, else the one command it is a prefix of (aliases count
 * once, by same); an exact entry only by its full name. NULL when there is none or
 * there are several, with the reason written to out: "unknown command 'x': did you
 * mean y?" (edit distance, suggest.h, or the exact entry x is a prefix of), "unknown
 * command 'x' (help lists them)", "ambiguous command 'st': stats status".
 */
const struct concmd *concmd_find(const void *table, size_t size, const char *name,
				 concmd_same_fn *same, FILE *out);

/*
 * concmd_help - one line per command whose name starts with what (NULL: all), "name
 * args  help" aligned; without what, a last line on prefixes. Returns how many
 * commands it listed; none (what matches no command) prints "help: no command 'what'
 * (help lists them)", for the caller to fail the command.
 */
int concmd_help(const void *table, size_t size, const char *what, FILE *out);

#endif /* LIB_CONCMD_H */
