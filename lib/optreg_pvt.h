/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * optreg_pvt.h - the registry's state, shared by options.c (registration, command line,
 * help) and optfile.c (config files); not for other files. Threading: as optreg.h.
 */
#ifndef LIB_OPTREG_PVT_H
#define LIB_OPTREG_PVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "optreg.h"

struct opt_entry {
	struct opt_def def; /* strings owned by the registry */
	unsigned given;	    /* how often a parser applied it */
};

struct opt_include_frame {
	const char *path; /* as opened (relative to the including file's directory) */
	unsigned line;	  /* line being applied */
};

struct opt_reg {
	struct opt_entry *opts;
	size_t n, cap;
	int short_idx[256]; /* short name -> index + 1, 0 = none */

	struct opt_def positional; /* handler NULL = none */

	FILE *out;	    /* built-ins print here */
	char *progname;	    /* for the built-in --help */
	struct opt_ext ext; /* opt_ext_set() */

	/* Parse state. */
	bool exit_requested; /* a handler asked the parser to stop (OPT_EXIT) */
	bool err_located;    /* the failed handler's message already says FILE:LINE */
	bool in_argv;	     /* opt_parse_argv is running (getopt state is not re-entrant) */
	unsigned depth;	     /* config files being read (optfile.c) */
	struct opt_include_frame frames[OPT_CONFIG_DEPTH_MAX];
};

/* The registry (options.c). */
extern struct opt_reg opt_reg;

/* opt_find_long - the option with this long name, any case; NULL if none. */
struct opt_entry *opt_find_long(const char *name);

/*
 * opt_apply - call e's handler with arg and count the option as given. On failure msg
 * holds the handler's reason and *located tells whether it already carries a file
 * location (nested config files).
 */
int opt_apply(struct opt_entry *e, const char *arg, char *msg, size_t msglen, bool *located);

#endif /* LIB_OPTREG_PVT_H */
