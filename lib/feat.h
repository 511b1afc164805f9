/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * feat.h - the runtime features (features.c), with the built-in options --enable and
 * --disable (feat_register_options) and, in featcmd.h, the console's enable and disable
 * commands. Not named features.h: lib/ is on the include path, where that name would
 * hide glibc's <features.h>.
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
#ifndef LIB_FEAT_H
#define LIB_FEAT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
 * feat_register_options - register the built-in options of the features (optreg.h):
 *   -e, --enable [NAME[=VAL]]  feat_set(.., true, feat_running_get(), ..); no argument:
 *                              feat_list() to out, OPT_EXIT (an error in a config file)
 *   -y, --disable [NAME]       the same with enable false
 * and the registry's extension (opt_ext_set): the feature list at the end of the help,
 * the feature names kept in config-file errors. Main thread, once, before the modules
 * register. Returns 0 or opt_register's errors.
 */
int feat_register_options(FILE *out);

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

#endif /* LIB_FEAT_H */
