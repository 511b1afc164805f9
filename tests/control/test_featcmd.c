/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_featcmd.c - the console's enable and disable commands (lib/featcmd.h), the one
 * implementation behind ib2roce's console (control/console.c) and the tools'
 * (tools/mccon.c): what they print for each form of the argument, what they set, what
 * they report as applied (the console's log line), that a start-up-only feature stays
 * as it is while running, and the table entries both consoles use.
 */
#include <stdlib.h>
#include <string.h>

#include "concmd.h"
#include "featcmd.h"
#include "fixture.h"
#include "options.h"
#include "tap.h"

static char *out_buf;
static const char *applied;

/* Run "enable ARGS" or "disable ARGS"; out_buf holds what it printed. */
static int run(bool enable, const char *args)
{
	static char line[256]; /* applied points into it */
	size_t len = 0;
	FILE *out;
	int ret;

	free(out_buf);
	out_buf = NULL;
	out = open_memstream(&out_buf, &len);
	if (!out)
		exit(99);
	snprintf(line, sizeof(line), "%s", args);
	applied = "(untouched)";
	ret = feat_cmd(enable, line, out, &applied);
	fclose(out);
	return ret;
}

static void test_set(void)
{
	fixture_setup();
	CHECK_EQ(run(true, "ppsdisplay"), 0);
	CHECK_STR(out_buf, "enabled ppsdisplay\n");
	CHECK_EQ(fx.ppsdisplay, 1);
	CHECK(applied != NULL);
	CHECK_STR(applied ? applied : "", "ppsdisplay");

	/* Blanks around the argument are cut; a value is passed on as written. */
	CHECK_EQ(run(true, "  drop=7 \t"), 0);
	CHECK_STR(out_buf, "enabled drop=7\n");
	CHECK_EQ(fx.drop, 7);
	CHECK_STR(applied ? applied : "", "drop=7");

	/* A unique prefix, as feat_set. */
	CHECK_EQ(run(false, "ppsd"), 0);
	CHECK_STR(out_buf, "disabled ppsd\n");
	CHECK_EQ(fx.ppsdisplay, 0);

	CHECK_EQ(run(false, "loglevel"), 0);
	CHECK_EQ(fx.loglevel, 3);
	fixture_teardown();
}

static void test_errors(void)
{
	fixture_setup();
	/* The program runs: a start-up-only feature keeps its value. */
	CHECK_EQ(run(true, "huge"), -1);
	CHECK_STR(out_buf, "feature 'huge' cannot change while running (needs a restart)\n");
	CHECK_EQ(fx.huge, 0);
	CHECK(applied == NULL);

	CHECK_EQ(run(true, "nosuchthing"), -1);
	CHECK_STR(out_buf, "unknown feature 'nosuchthing' (see --enable without argument)\n");
	CHECK(applied == NULL);

	CHECK_EQ(run(true, "mcqp=0"), -1);
	CHECK_STR(out_buf, "feature 'mcqp': '0' is out of range 1..64\n");
	CHECK_EQ(fx.mcqp, 16);

	CHECK_EQ(run(false, "pgm=1"), -1);
	CHECK_STR(out_buf, "feature 'pgm': disable takes no value\n");
	CHECK_EQ(fx.pgm, 1);
	fixture_teardown();
}

static void test_list(void)
{
	fixture_setup();
	/* No name, or only blanks: the list, nothing applied. */
	CHECK_EQ(run(true, ""), 0);
	CHECK(applied == NULL);
	CHECK(!strncmp(out_buf, "  NAME", 6));
	CHECK_HAS(out_buf, "ppsdisplay");
	CHECK_HAS(out_buf, "statint");
	CHECK_EQ(run(false, " \t "), 0);
	CHECK(applied == NULL);
	CHECK(!strncmp(out_buf, "  NAME", 6));

	/* applied may be NULL (the tools do not log). */
	{
		char line[] = "pgm_nak";
		FILE *out = fopen("/dev/null", "w");

		CHECK(out != NULL);
		if (out) {
			CHECK_EQ(feat_cmd(true, line, out, NULL), 0);
			fclose(out);
		}
		CHECK_EQ(fx.pgm_nak, 1);
	}
	fixture_teardown();
}

/* The table entries of both consoles: found by name and by prefix, in the help. */
struct entry {
	struct concmd c;
	int n;
};

static void test_table(void)
{
	static const struct entry table[] = {
		{FEAT_CONCMD_DISABLE, 1},
		{FEAT_CONCMD_ENABLE, 2},
		{{NULL, NULL, NULL, false}, 0},
	};
	const struct entry *e;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (!out)
		exit(99);
	e = (const struct entry *)concmd_find(table, sizeof(table[0]), "en", NULL, out);
	CHECK(e && e->n == 2);
	e = (const struct entry *)concmd_find(table, sizeof(table[0]), "disable", NULL, out);
	CHECK(e && e->n == 1);
	concmd_help(table, sizeof(table[0]), NULL, out);
	fclose(out);
	CHECK_HAS(buf, "enable [name[=value]]");
	CHECK_HAS(buf, "turn a runtime feature off (no name: list them)");
	free(buf);
}

int main(void)
{
	test_set();
	test_errors();
	test_list();
	test_table();
	free(out_buf);
	return tap_done();
}
