/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_features.c - the runtime feature registry: registration rules, every form of
 * enable/disable, every error message word for word, start-up-only features while
 * running (-EBUSY), the apply callback, feat_get, the aligned listing, and a worker
 * thread seeing a change.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "options.h"
#include "tap.h"

static char err[OPT_ERR_LEN];

static int set(const char *spec, bool enable, bool running)
{
	strcpy(err, "(untouched)");
	return feat_set(spec, enable, running, err, sizeof(err));
}

#define CHECK_SET_ERR(ret, want, spec, enable, running)                                            \
	do {                                                                                       \
		CHECK_EQ(set(spec, enable, running), ret);                                         \
		CHECK_STR(err, want);                                                              \
	} while (0)

static void test_register(void)
{
	_Atomic int64_t v = 99;
	struct feat_def d = {.name = "extra",
			     .type = FEAT_INT,
			     .help = "x",
			     .def = 5,
			     .min = 1,
			     .max = 10,
			     .value = &v};

	fixture_setup();
	CHECK_EQ(feat_count(), 10);
	CHECK_EQ(feat_register(&d), 0);
	CHECK_EQ(v, 5); /* the default is stored */
	CHECK_EQ(feat_count(), 11);
	CHECK_EQ(feat_register(&d), -EEXIST);
	d.name = "mcqp";
	CHECK_EQ(feat_register(&d), -EEXIST);

	d.name = "extra2";
	CHECK_EQ(feat_register(NULL), -EINVAL);
	d.def = 0; /* below min */
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.def = 11;
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.def = 5;
	d.min = 20; /* min > max */
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.min = 1;
	d.has_on = true;
	d.on = 11;
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.on = 10;
	d.has_off = true;
	d.off = 0;
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.off = 1;
	d.value = NULL;
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.value = &v;
	d.help = NULL;
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.help = "x";
	d.type = (enum feat_type)7;
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.type = FEAT_BOOL;
	d.def = 2; /* a bool is 0 or 1; its min/max/on/off are ignored */
	CHECK_EQ(feat_register(&d), -EINVAL);
	for (const char *const *n =
		     (const char *const[]){"", "Upper", "with-dash", "a b", "x=y", NULL};
	     *n; n++) {
		d.name = *n;
		CHECK_EQ(feat_register(&d), -EINVAL);
	}
	d.name = NULL;
	CHECK_EQ(feat_register(&d), -EINVAL);
	d.name = "extra_2";
	d.def = 1;
	CHECK_EQ(feat_register(&d), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(feat_count(), 12);
}

static void test_set(void)
{
	fixture_setup();
	/* Booleans: enable, disable, an explicit value, any case, unique prefixes. */
	CHECK_EQ(set("bridging", false, false), 0);
	CHECK_EQ(fx.bridging, 0);
	CHECK_EQ(set("BRIDGING", true, false), 0);
	CHECK_EQ(fx.bridging, 1);
	CHECK_EQ(set("bridging=off", true, false), 0);
	CHECK_EQ(fx.bridging, 0);
	CHECK_EQ(set("  bridging   yes ", true, false), 0);
	CHECK_EQ(fx.bridging, 1);
	CHECK_EQ(set("ppsd", true, false), 0);
	CHECK_EQ(fx.ppsdisplay, 1);
	CHECK_EQ(set("pgm", false, false), 0); /* exact name wins over the prefix of pgm_nak */
	CHECK_EQ(fx.pgm, 0);
	CHECK_EQ(fx.pgm_nak, 0);
	CHECK_EQ(set("pgm_", true, false), 0);
	CHECK_EQ(fx.pgm_nak, 1);
	CHECK_STR(err, "(untouched)");

	/* Integers: value forms, on/off values. */
	CHECK_EQ(set("drop=5", true, false), 0);
	CHECK_EQ(fx.drop, 5);
	CHECK_EQ(set("drop 7", true, false), 0);
	CHECK_EQ(fx.drop, 7);
	CHECK_EQ(set(" drop = 0x10 ", true, false), 0);
	CHECK_EQ(fx.drop, 16);
	CHECK_EQ(set("drop", true, false), 0);
	CHECK_EQ(fx.drop, 100);
	CHECK_EQ(set("drop", false, false), 0);
	CHECK_EQ(fx.drop, 0);
	CHECK_EQ(set("loglevel", true, false), 0);
	CHECK_EQ(fx.loglevel, 5);
	CHECK_EQ(set("log", false, false), 0);
	CHECK_EQ(fx.loglevel, 3);
	CHECK_EQ(set("statint", false, false), 0);
	CHECK_EQ(fx.statint, 0);
	CHECK_EQ(set("statint=3600", true, false), 0);
	CHECK_EQ(fx.statint, 3600);

	/* Errors leave the value as it was. */
	CHECK_SET_ERR(-EINVAL, "feature 'drop': '-1' is out of range 0..1000000", "drop=-1", true,
		      false);
	CHECK_SET_ERR(-EINVAL, "feature 'drop': '1000001' is out of range 0..1000000",
		      "drop 1000001", true, false);
	CHECK_SET_ERR(-EINVAL, "feature 'drop': 'x' is not a number", "drop=x", true, false);
	CHECK_SET_ERR(-EINVAL, "feature 'drop': '5 6' is not a number", "drop=5 6", true, false);
	CHECK_SET_ERR(-EINVAL, "feature 'drop': missing value after '='", "drop=", true, false);
	CHECK_SET_ERR(-EINVAL, "feature 'drop': missing value after '='", "drop = ", true, false);
	CHECK_EQ(fx.drop, 0);
	CHECK_SET_ERR(-EINVAL, "feature 'mcqp': '0' is out of range 1..64", "mcqp=0", true, false);
	CHECK_SET_ERR(-EINVAL, "feature 'mcqp': '65' is out of range 1..64", "mcqp=65", true,
		      false);
	CHECK_SET_ERR(-EINVAL, "feature 'statint' needs a value (statint=VALUE)", "statint", true,
		      false);
	CHECK_SET_ERR(-EINVAL, "feature 'buffers' cannot be disabled", "buffers", false, false);
	CHECK_SET_ERR(-EINVAL, "feature 'pgm': disable takes no value", "pgm=1", false, false);
	CHECK_SET_ERR(-EINVAL, "feature 'drop': disable takes no value", "drop 5", false, false);
	CHECK_SET_ERR(-EINVAL,
		      "feature 'huge': 'maybe' is not a boolean (on/off, yes/no, "
		      "true/false, 1/0)",
		      "huge=maybe", true, false);
	CHECK_SET_ERR(-EINVAL, "unknown feature 'nosuch' (see --enable without argument)",
		      "nosuch=3", true, false);
	CHECK_SET_ERR(-EINVAL, "unknown feature 'bridgingx': did you mean bridging?", "bridgingx",
		      false, false);
	CHECK_SET_ERR(-EINVAL, "unknown feature 'satint': did you mean statint?", "satint=3", true,
		      false);
	CHECK_SET_ERR(-EINVAL, "ambiguous feature 'p' (pgm, pgm_nak, ppsdisplay)", "p", true,
		      false);
	CHECK_SET_ERR(-EINVAL, "ambiguous feature 'PG' (pgm, pgm_nak)", "PG=1", true, false);
	CHECK_SET_ERR(-EINVAL, "missing feature name", "", true, false);
	CHECK_SET_ERR(-EINVAL, "missing feature name", "=5", true, false);
	CHECK_SET_ERR(-EINVAL, "missing feature name", "   ", false, false);
	CHECK_SET_ERR(-EINVAL, "missing feature name", NULL, true, false);
	CHECK_EQ(fx.statint, 3600);
	CHECK_EQ(fx.mcqp, 16);
	CHECK_EQ(fx.pgm, 0);

	/* A short err buffer truncates; no buffer at all is fine. */
	{
		char small[8];

		CHECK_EQ(feat_set("nosuch", true, false, small, sizeof(small)), -EINVAL);
		CHECK_STR(small, "unknown");
		CHECK_EQ(feat_set("p", true, false, small, sizeof(small)), -EINVAL);
		CHECK_STR(small, "ambiguo");
		CHECK_EQ(feat_set("p", true, false, NULL, 0), -EINVAL);
	}
}

static void test_running(void)
{
	fixture_setup();
	/* Start-up-only features: a change while running is refused ... */
	CHECK_SET_ERR(-EBUSY, "feature 'buffers' cannot change while running (needs a restart)",
		      "buffers=4096", true, true);
	CHECK_EQ(fx.buffers, 200000);
	CHECK_SET_ERR(-EBUSY, "feature 'huge' cannot change while running (needs a restart)",
		      "huge", true, true);
	CHECK_EQ(fx.huge, 0);
	/* ... the value it already has is accepted (config reload), without apply. */
	CHECK_EQ(set("huge", false, true), 0);
	CHECK_EQ(set("buffers=200000", true, true), 0);
	CHECK_EQ(set("mcqp=16", true, true), 0);
	CHECK_EQ(fx.applied_mcqp, 0);
	/* ... and errors of the value itself still come first. */
	CHECK_SET_ERR(-EINVAL, "feature 'buffers': '1' is out of range 1024..100000000",
		      "buffers=1", true, true);
	/* Runtime features change while running. */
	CHECK_EQ(set("bridging", false, true), 0);
	CHECK_EQ(fx.bridging, 0);
	CHECK_EQ(set("statint=60", true, true), 0);
	CHECK_EQ(fx.statint, 60);
	/* Not running: everything changes. */
	CHECK_EQ(set("buffers=4096", true, false), 0);
	CHECK_EQ(fx.buffers, 4096);

	CHECK(!feat_running_get());
	feat_running_set(true);
	CHECK(feat_running_get());
	feat_registry_clear();
	CHECK(!feat_running_get());
}

static void test_apply(void)
{
	fixture_setup();
	CHECK_EQ(set("mcqp=20", true, false), 0);
	CHECK_EQ(fx.mcqp, 20);
	CHECK_EQ(fx.applied_mcqp, 1);
	CHECK_SET_ERR(-EINVAL, "feature 'mcqp': the device attaches at most 32 groups per QP",
		      "mcqp=40", true, false);
	CHECK_EQ(fx.mcqp, 20);
	CHECK_EQ(fx.applied_mcqp, 2);
	/* Range errors are found before apply runs. */
	CHECK_EQ(set("mcqp=100", true, false), -EINVAL);
	CHECK_EQ(fx.applied_mcqp, 2);
}

static void test_get_list(void)
{
	int64_t v = -1;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	fixture_setup();
	CHECK_EQ(feat_get("mcqp", &v), 0);
	CHECK_EQ(v, 16);
	CHECK_EQ(set("mcqp=8", true, false), 0);
	CHECK_EQ(feat_get("MCQP", &v), 0);
	CHECK_EQ(v, 8);
	v = -1;
	CHECK_EQ(feat_get("mc", &v), -ENOENT); /* exact names only */
	CHECK_EQ(feat_get("nosuch", &v), -ENOENT);
	CHECK_EQ(feat_get(NULL, &v), -ENOENT);
	CHECK_EQ(v, -1);

	CHECK_EQ(set("bridging", false, false), 0);
	CHECK_EQ(set("drop=1000000", true, false), 0);
	out = open_memstream(&buf, &len);
	if (!CHECK(out != NULL))
		return;
	feat_list(out);
	fclose(out);
	CHECK_STR(buf,
		  "  NAME        VALUE    DEFAULT  RANGE            CHANGE   DESCRIPTION\n"
		  "  bridging    off      on       on/off           runtime  forward packets\n"
		  "  drop        1000000  0        0..1000000       runtime  drop every Nth "
		  "packet (fault injection)\n"
		  "  loglevel    6        6        0..7             runtime  log priority "
		  "threshold\n"
		  "  buffers     200000   200000   1024..100000000  restart  buffers in the "
		  "pool\n"
		  "  huge        off      off      on/off           restart  huge pages for the "
		  "buffers\n"
		  "  mcqp        8        16       1..64            restart  groups per QP\n"
		  "  pgm         on       on       on/off           runtime  PGM awareness\n"
		  "  pgm_nak     off      off      on/off           runtime  bridge PGM NAKs\n"
		  "  ppsdisplay  off      off      on/off           runtime  show packet rates\n"
		  "  statint     10       10       0..3600          runtime  statistics interval "
		  "(s)\n");
	free(buf);

	/* An empty registry lists the header only. */
	feat_registry_clear();
	buf = NULL;
	out = open_memstream(&buf, &len);
	if (!CHECK(out != NULL))
		return;
	feat_list(out);
	fclose(out);
	CHECK_STR(buf, "  NAME  VALUE  DEFAULT  RANGE  CHANGE   DESCRIPTION\n");
	free(buf);
}

/* A worker reads the value with feat_load() while the control thread changes it. */
static void *reader(void *arg)
{
	_Atomic int64_t *v = arg;

	while (feat_load(v))
		sched_yield();
	return NULL;
}

static void test_thread(void)
{
	pthread_t t;

	fixture_setup();
	CHECK_EQ(fx.bridging, 1);
	if (!CHECK(pthread_create(&t, NULL, reader, (void *)&fx.bridging) == 0))
		return;
	CHECK_EQ(set("bridging", false, true), 0);
	CHECK_EQ(pthread_join(t, NULL), 0); /* returns once the reader saw 0 */
}

int main(void)
{
	test_register();
	test_set();
	test_running();
	test_apply();
	test_get_list();
	test_thread();
	fixture_teardown();
	return tap_done();
}
