/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * featcmd.h - the console's enable and disable commands, one implementation for
 * ib2roce's console (control/console.c) and the tools' (tools/mccon.c): the entries of
 * a command table (concmd.h) and what they run. The console that serves them logs
 * what they change (only control/ logs); this code prints to the client only.
 *
 * The console's thread (ib2roce's control thread, a tool's main thread), as feat_set().
 */
#ifndef LIB_FEATCMD_H
#define LIB_FEATCMD_H

#include <stdbool.h>
#include <stdio.h>

/* The struct concmd of each command (name, synopsis, help, exact), for a table. */
#define FEAT_CONCMD_DISABLE                                                                        \
	{                                                                                          \
		"disable", "[name]", "turn a runtime feature off (no name: list them)", false      \
	}
#define FEAT_CONCMD_ENABLE                                                                         \
	{                                                                                          \
		"enable", "[name[=value]]", "turn a runtime feature on or set it (no name: list)", \
			false                                                                      \
	}

/*
 * feat_cmd - run "enable ARGS" (enable true) or "disable ARGS" (args: the command line
 * after the command's name, cut in place). Without a name: the feature list (feat_list)
 * to out. Else feat_set(NAME[=VALUE], enable, running) and "enabled NAME[=VALUE]" /
 * "disabled NAME" to out, or feat_set's message. The program is running: a start-up-only
 * feature cannot change.
 * *applied (applied may be NULL): what was set (it points into args), NULL when nothing
 * was (a list, an error); for the console's log.
 * Returns 0, or -1 with the reason on out.
 */
int feat_cmd(bool enable, char *args, FILE *out, const char **applied);

#endif /* LIB_FEATCMD_H */
