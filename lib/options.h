/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * options.h - what a module includes to register its options and features: the option
 * registry (optreg.h: registration, command line, config files, help), the number
 * parsers of handlers (optnum.h), the runtime features (feat.h) and the error helper
 * (err.h); and opt_register_builtin(), which registers the built-in options of both
 * (builtin.c). docs/options.md describes them.
 *
 * Inside lib/ each file includes the part it uses: the registry (options.c, optfile.c)
 * knows nothing of the features; the features (features.c) register their options in
 * the registry; builtin.c sits on top of both.
 *
 * Threading contract and error convention: as optreg.h and feat.h.
 */
#ifndef LIB_OPTIONS_H
#define LIB_OPTIONS_H

#include <stdio.h>

#include "err.h"
#include "feat.h"
#include "optnum.h"
#include "optreg.h"

/*
 * opt_register_builtin - register the built-in options, in this order:
 *   -h, --help                 opt_register_help(out, progname)
 *   -c, --config FILE          opt_register_config()
 *   -e, --enable [NAME[=VAL]]  feat_register_options(out) (with the help's feature list)
 *   -y, --disable [NAME]
 * Main thread, once, before the modules register. Returns 0 or the first error.
 */
int opt_register_builtin(FILE *out, const char *progname);

/* opt_errf - the name the option and feature handlers use for errf() (err.h). */
#define opt_errf errf

#endif /* LIB_OPTIONS_H */
