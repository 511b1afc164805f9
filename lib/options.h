/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * options.h - the option registry: every module registers its command-line options
 * from its init function, the registry builds getopt_long from them, reads config files
 * (one long option per line), generates the help text and words every error precisely.
 * The second half declares the runtime features (--enable/--disable, implemented in
 * features.c). There is no features.h: the directory is on the include path, where
 * that name would hide glibc's <features.h>.
 *
 * Threading contract: everything here runs on one thread, the main thread before the
 * bridge starts and the control thread afterwards (config reload). Nothing is locked;
 * no function may run concurrently with another of this file. Handlers run on the
 * calling thread, in command-line order.
 *
 * Errors: functions return 0 or a negative errno and write a one-line message without
 * a trailing newline into err (errlen bytes, truncated, always terminated; err may be
 * NULL when errlen is 0). Nothing here prints except opt_help() and the built-in
 * options' listings (to the stream given to opt_register_builtin()); nothing calls
 * exit(): the parsers return OPT_EXIT when the program should stop with status 0.
 * Strings of the definitions are copied at registration.
 */
#ifndef LIB_OPTIONS_H
#define LIB_OPTIONS_H

#include <stdatomic.h>
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
 * opt_register_builtin - register the registry's own options:
 *   -c, --config FILE          read FILE with opt_parse_file (nesting limited to
 *                              OPT_CONFIG_DEPTH_MAX files; relative paths in a file are
 *                              relative to that file's directory)
 *   -e, --enable [NAME[=VAL]]  feat_set(.., true, feat_running_get(), ..); no argument:
 *                              feat_list() to out, OPT_EXIT (an error in a config file)
 *   -y, --disable [NAME]       the same with enable false
 *   -h, --help                 opt_help() to out with progname, OPT_EXIT
 * Main thread, once, before the modules register. Returns 0 or opt_register's errors.
 */
int opt_register_builtin(FILE *out, const char *progname);

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
 * repeatable ones), the positional argument and the feature list (feat_list) to out.
 * Main or control thread.
 */
void opt_help(FILE *out, const char *progname);

/*
 * opt_registry_clear - forget every option, the positional handler, the built-ins and
 * the counts; frees all memory of the registry (features: feat_registry_clear()).
 * Main thread, at exit or between tests.
 */
void opt_registry_clear(void);

/* ---- Helpers for handlers: parse, range-check, never touch *out on failure ---- */

/*
 * opt_parse_uint - a whole string as an unsigned decimal or 0x-hex number in
 * [min, max]. Any thread. Returns 0 or -EINVAL with "'abc' is not a number" /
 * "'70000' is out of range 1..65535".
 */
int opt_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen);

/* opt_parse_int - as opt_parse_uint for signed numbers (leading '-'). Any thread. */
int opt_parse_int(const char *s, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen);

/*
 * opt_parse_size - a size: a number as opt_parse_uint with an optional binary suffix
 * k, m, g or t (either case: 2^10, 2^20, 2^30, 2^40), in [min, max]. Any thread.
 * Returns 0 or -EINVAL with "'12q' is not a size (number with optional suffix k, m, g or
 * t)" / "'2g' is out of range 4096..1073741823".
 */
int opt_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen);

/*
 * opt_parse_bool - on/off, yes/no, true/false, enable/disable, 1/0 (any case). Any
 * thread. Returns 0 or -EINVAL with "'maybe' is not a boolean (on/off, yes/no,
 * true/false, 1/0)".
 */
int opt_parse_bool(const char *s, bool *out, char *err, size_t errlen);

/*
 * opt_errf - format a message into err (if err and errlen) and return code: for
 * handlers, "return opt_errf(err, errlen, -EINVAL, "no device '%s'", arg);". Any thread.
 */
int opt_errf(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ==== Runtime features (features.c) ====
 *
 * Named values that --enable/-e NAME[=VALUE], --disable/-y NAME, config files and the
 * console's enable/disable commands change (bridging, drop, loglevel, mcqp, ...). Every
 * module registers its own at start-up.
 *
 * Threading contract: registration, feat_set(), feat_running_set(), feat_list() and
 * feat_get() run on one thread (main before start-up, then the control thread), never
 * concurrently with each other. The value itself lives in the registering module's
 * _Atomic int64_t, stored with relaxed order by feat_set() and read by any thread with
 * feat_load() (relaxed: a feature is one independent value, it orders nothing else;
 * workers see a change within a few loop iterations).
 */

enum feat_type {
	FEAT_BOOL, /* 0 or 1, shown as off/on */
	FEAT_INT,  /* a number in [min, max] */
};

/*
 * An optional extra check or effect of a change: called with the new value before it is
 * stored (*value still holds the old one). Returns 0, or a negative errno with a reason
 * in err; the value is then unchanged. Runs on the thread that calls feat_set().
 */
typedef int feat_apply_fn(void *ctx, int64_t value, char *err, size_t errlen);

struct feat_def {
	const char *name;    /* [a-z0-9_]+, unique without regard to case */
	enum feat_type type; /* FEAT_BOOL or FEAT_INT */
	const char *help;    /* one line */
	int64_t def;	     /* stored into *value at registration; FEAT_BOOL: 0 or 1 */
	int64_t min, max;    /* FEAT_INT: allowed range (min <= max); ignored for FEAT_BOOL */
	/* FEAT_INT: what "enable NAME" without a value sets (without has_on, NAME=VALUE is
	 * required) and what "disable NAME" sets (without has_off it cannot be disabled).
	 * FEAT_BOOL: ignored, enable sets 1 and disable 0. */
	bool has_on;
	int64_t on;
	bool has_off;
	int64_t off;
	_Atomic int64_t *value; /* where the value lives, owned by the registering module */
	bool runtime;		/* may change while running; else changing it then is -EBUSY */
	feat_apply_fn *apply;	/* NULL or called before each change */
	void *ctx;		/* handed to apply */
};

/*
 * feat_register - add a feature and store its default into *def->value. Main thread,
 * before the command line is parsed. Returns 0, -EEXIST for a taken name, -EINVAL for a
 * bad definition (name syntax, no value or help, def/on/off outside [min, max], min >
 * max, a FEAT_BOOL default other than 0/1), -ENOMEM.
 */
int feat_register(const struct feat_def *def);

/*
 * feat_set - apply "NAME", "NAME=VALUE" or "NAME VALUE" (console) as an enable (true)
 * or a disable (false). NAME is matched without regard to case, exactly or as the
 * unique prefix of one feature. FEAT_BOOL: enable sets 1 or the boolean VALUE
 * (opt_parse_bool), disable sets 0. FEAT_INT: enable sets VALUE (range-checked) or on,
 * disable sets off. running: the bridge is running, so start-up-only features may not
 * change (setting their current value again is accepted and does nothing).
 * Main or control thread. Returns 0, or -EINVAL / -EBUSY / apply's error with one of:
 *   missing feature name
 *   unknown feature 'x' (see --enable without argument)
 *   ambiguous feature 'p' (pgm, pgm_nak, ppsdisplay)
 *   feature 'pgm': disable takes no value
 *   feature 'mcqp': '0' is out of range 1..64
 *   feature 'pgm': 'maybe' is not a boolean (on/off, yes/no, true/false, 1/0)
 *   feature 'statint' needs a value (statint=VALUE)
 *   feature 'buffers' cannot be disabled
 *   feature 'huge' cannot change while running (needs a restart)
 *   feature 'x': <apply's reason>
 */
int feat_set(const char *spec, bool enable, bool running, char *err, size_t errlen);

/*
 * feat_get - the current value of the feature with this exact name (any case).
 * Slow path, for control code: main or control thread. Returns 0 or -ENOENT.
 */
int feat_get(const char *name, int64_t *value);

/*
 * feat_list - print every feature in registration order, aligned: name, current value,
 * default, range, whether it changes at runtime or needs a restart, help. Main or
 * control thread.
 */
void feat_list(FILE *out);

/*
 * feat_reload_mode - for a configuration reload while running. When on, feat_set()
 * with running set checks everything as usual, then: a start-up-only feature whose value
 * would change keeps its value, is counted (feat_reload_restarts) and a line "needs a
 * restart: feature NAME OLD -> NEW (why)" goes to notes; with dry nothing at all is
 * stored (a first pass that only validates); without dry every runtime feature that
 * changes is noted "feature 'NAME': OLD -> NEW". Off restores the normal behaviour.
 * Control thread.
 */
void feat_reload_mode(bool on, bool dry, FILE *notes);

/* Why a start-up-only feature needs a restart, in the notes and in --check. */
#define FEAT_RESTART_WHY "start-up only: the engine sized or set it at start"

/* feat_reload_restarts - start-up-only features that would change, counted since
 * feat_reload_mode(true, ...). Control thread. */
unsigned feat_reload_restarts(void);

/* feat_startup_print - "feature NAME VALUE" for every start-up-only feature (a reload
 * cannot change them), in registration order. Main or control thread. */
void feat_startup_print(FILE *out);

/* feat_count - number of registered features. Main or control thread. */
size_t feat_count(void);

/*
 * feat_running_set - record whether the bridge runs: the built-in --enable/--disable
 * options (config reload) pass it to feat_set(). Main/control thread.
 */
void feat_running_set(bool running);

/* feat_running_get - what feat_running_set() recorded last (false at start). */
bool feat_running_get(void);

/*
 * feat_registry_clear - forget every feature (the values stay where they are) and free
 * the registry's memory; resets the running flag. Main thread, at exit or between tests.
 */
void feat_registry_clear(void);

/* feat_load - read a feature's value: any thread, relaxed (pairs with feat_set's store). */
static inline int64_t feat_load(_Atomic int64_t *value)
{
	return atomic_load_explicit(value, memory_order_relaxed);
}

#endif /* LIB_OPTIONS_H */
