/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * optreg.h - the option registry: every module registers its command-line options
 * from its init function, the registry builds getopt_long from them, reads config files
 * (one long option per line, optfile.c), generates the help text and words every error
 * precisely. Modules include options.h, which has this, the number parsers (optnum.h),
 * the runtime features (feat.h) and opt_register_builtin().
 *
 * The registry knows nothing of the modules above it: the features (feat.h) extend it
 * through opt_ext_set() (their list in the help, their names in config-file errors).
 *
 * Threading contract: everything here runs on one thread, the main thread before the
 * bridge starts and the control thread afterwards (config reload). Nothing is locked;
 * no function may run concurrently with another of this file. Handlers run on the
 * calling thread, in command-line order.
 *
 * Errors: functions return 0 or a negative errno and write a one-line message without
 * a trailing newline into err (errlen bytes, truncated, always terminated; err may be
 * NULL when errlen is 0; err.h). Nothing here prints except opt_help() and the built-in
 * options' listings (to the stream given to opt_register_help()); nothing calls
 * exit(): the parsers return OPT_EXIT when the program should stop with status 0.
 * Strings of the definitions are copied at registration.
 */
#ifndef LIB_OPTREG_H
#define LIB_OPTREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Returned (positive) by the parsers: help or a listing was printed, exit with 0. */
#define OPT_EXIT 1

/* Config files read through --config may nest this many files deep. */
#define OPT_CONFIG_DEPTH_MAX 4

/* A config file is a regular file of at most this many bytes, in lines of at most
 * OPT_CONFIG_LINE_MAX bytes (without the newline). */
#define OPT_CONFIG_SIZE_MAX (1024 * 1024)
#define OPT_CONFIG_LINE_MAX 4096

/* Size of a buffer that holds any message of this module without truncation in practice. */
#define OPT_ERR_LEN 512

/*
 * An option or positional-argument handler: apply arg (NULL when the option takes no
 * argument, or an optional one was not given). Returns 0, or a negative errno (normally
 * -EINVAL) with a reason in err, e.g. "'70000' is out of range 1..65535"; the registry
 * adds where the error is ("option --port: ", "FILE:LINE: port: "). Runs on the parsing
 * thread; may call opt_request_exit().
 */
typedef int opt_handler_fn(void *ctx, const char *arg, char *err, size_t errlen);

struct opt_def {
	const char *name;	 /* long name, also the config-file keyword: [a-z0-9][a-z0-9_-]* */
	int short_name;		 /* ASCII letter or digit, 0 = none */
	const char *arg;	 /* argument name for help ("dev[:port]"); NULL = no argument */
	bool arg_optional;	 /* the argument may be left out (-l [fmt], -e [name[=value]]) */
	const char *help;	 /* one line */
	opt_handler_fn *handler; /* called for every occurrence, in order */
	void *ctx;		 /* handed to handler */
	bool repeatable;	 /* accumulates (-m, -v); else each occurrence replaces the last */
};

/*
 * opt_register - add an option. Main thread, before parsing (modules call it from their
 * init function). Long names are unique without regard to case (config keywords are
 * matched that way), short names exactly.
 * Returns 0, -EEXIST when the long or short name is taken, -EINVAL for a bad definition
 * (name syntax, short name not alphanumeric, no handler or help, optional argument
 * without an argument name), -ENOMEM.
 */
int opt_register(const struct opt_def *def);

/*
 * opt_set_positional - accept non-option arguments (e.g. multicast groups): handler is
 * called for each, in order, after all options of the command line have been applied
 * (GNU getopt permutation, as the reference did). arg names them in the help ("GROUP").
 * Main thread, before parsing. Returns 0, -EEXIST when already set, -EINVAL, -ENOMEM.
 */
int opt_set_positional(const char *arg, const char *help, opt_handler_fn *handler, void *ctx);

/*
 * opt_register_help - register -h, --help: opt_help() to out with progname, OPT_EXIT;
 * out also takes what other built-ins list. Main thread, once, before the modules
 * register. Returns 0, -EINVAL, -ENOMEM or opt_register's errors.
 */
int opt_register_help(FILE *out, const char *progname);

/*
 * opt_register_config - register -c, --config FILE (optfile.c): read FILE with
 * opt_parse_file (nesting limited to OPT_CONFIG_DEPTH_MAX files; relative paths in a
 * file are relative to that file's directory). Main thread, once, before the modules
 * register. Returns 0 or opt_register's errors.
 */
int opt_register_config(void);

/*
 * What a module above the registry adds to it (features.c: feat_register_options()).
 *   help:    prints a section at the end of opt_help() (NULL: none)
 *   is_name: whether a word is a name of the program's own vocabulary (a feature's),
 *            kept in config-file errors like an option's name (NULL: none)
 */
struct opt_ext {
	void (*help)(FILE *out);
	bool (*is_name)(const char *word);
};

/*
 * opt_ext_set - set the extension (copied; NULL removes it). Main thread, before
 * parsing; opt_registry_clear() removes it.
 */
void opt_ext_set(const struct opt_ext *ext);

/*
 * opt_in_file - whether a config file is being applied (a handler called from
 * opt_parse_file or --config runs for a line of a file). Parsing thread.
 */
bool opt_in_file(void);

/*
 * opt_parse_argv - apply the command line: options in order, through getopt_long built
 * from the registry (clustered short options, "--name=value", unique abbreviations of
 * long names, "--" ends the options), then the positional arguments. An optional
 * argument is taken from the same word (-lPORT, --mgid=PORT) or else from the next word
 * when that does not start with '-' (-e bridging), as the reference did. Stops at the
 * first error; what was applied before it stays applied (the caller exits). argv is not
 * reordered. Main thread; uses and resets getopt's globals (optind, opterr).
 * Returns 0, OPT_EXIT (a handler asked to stop: help or a list was printed; the rest of
 * the command line is ignored) or a negative errno with one of:
 *   invalid option -- 'z'
 *   unrecognized option '--foo'
 *   option '--p' is ambiguous; possibilities: '--port' '--pgm'
 *   option requires an argument -- 'm'
 *   option '--multicast' requires an argument
 *   option '--help' doesn't allow an argument
 *   option --port: <handler's reason>
 *   unexpected argument 'x'                (no positional handler)
 *   argument 'x': <handler's reason>
 *   FILE: <strerror> / FILE:LINE: <reason> (from --config, as opt_parse_file)
 */
int opt_parse_argv(int argc, char **argv, char *err, size_t errlen);

/*
 * opt_parse_file - apply a config file: one long option per line ("multicast 239.1.2.3",
 * "enable mcqp=10", "debug"), keyword matched without regard to case, optionally
 * followed by '=' instead of blanks; the argument is the rest of the line. Blank lines,
 * lines starting with '#', and from a blank followed by '#' to the end of a line are
 * comments; leading and trailing white space (also CR) is ignored. Stops at the first
 * error. Main thread before start-up, or the control thread (reload).
 * Only a regular file is read (opened without blocking), of at most
 * OPT_CONFIG_SIZE_MAX bytes, in lines of at most OPT_CONFIG_LINE_MAX bytes.
 * Returns 0, OPT_EXIT, -errno of open/read with "FILE: <strerror>" (also "FILE: not a
 * regular file", "FILE: larger than N bytes", "FILE: read error: <strerror>"), or a
 * negative errno (normally -EINVAL) with "FILE:LINE: <reason>", where reason is one of
 *   unknown option
 *   option 'multicast' requires an argument
 *   option 'debug' doesn't allow an argument
 *   control character in line
 *   NUL byte in line
 *   line too long (max 4096 bytes)
 *   multicast: <handler's reason>
 * followed by " (included from A.conf:3, B.conf:1)" when the file was read through
 * config lines of other files (innermost first). No text of the file appears in a
 * message (a file may be unreadable to whom the message goes, e.g. through a console
 * reload): the handler's reason has what it quotes of the argument replaced by "...";
 * option names are the registry's.
 */
int opt_parse_file(const char *path, char *err, size_t errlen);

/*
 * opt_request_exit - called by a handler that printed what was asked for (a list, the
 * help): the running parser stops after this option and returns OPT_EXIT.
 */
void opt_request_exit(void);

/*
 * opt_given - how often the option with this long name (exact) was applied by the
 * parsers since registration (command line and config files): 0 when never or unknown.
 * Main or control thread.
 */
unsigned opt_given(const char *name);

/*
 * opt_help - print the usage line, every option aligned ("  -c, --config=FILE  help",
 * sorted by short name, long-only options by long name, "(repeatable)" after the help of
 * repeatable ones), the positional argument and the extension's section (opt_ext_set:
 * the feature list) to out. Main or control thread.
 */
void opt_help(FILE *out, const char *progname);

/*
 * opt_registry_clear - forget every option, the positional handler, the built-ins and
 * the counts and the extension; frees all memory of the registry (features:
 * feat_registry_clear()).
 * Main thread, at exit or between tests.
 */
void opt_registry_clear(void);

#endif /* LIB_OPTREG_H */
