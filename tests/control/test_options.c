/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_options.c - the option registry: registration rules, command-line parsing
 * (short, long, clustered, abbreviated, optional arguments, repeatable options,
 * positional arguments), every error message word for word, and the generated help.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "options.h"
#include "tap.h"

static char err[OPT_ERR_LEN];

/* Parse "ib2roce" + the words (NULL-terminated) on a private copy of argv. */
static int run_words(const char *const *words)
{
	char *argv[64];
	int argc = 0, ret;

	argv[argc++] = strdup("ib2roce");
	for (; *words; words++)
		argv[argc++] = strdup(*words);
	argv[argc] = NULL;
	strcpy(err, "(untouched)");
	ret = opt_parse_argv(argc, argv, err, sizeof(err));
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return ret;
}

#define RUN(...) run_words((const char *const[]){__VA_ARGS__, NULL})

/* The command line must fail with exactly this message. */
#define CHECK_ERR(want, ...)                                                                       \
	do {                                                                                       \
		fixture_setup();                                                                   \
		CHECK_EQ(RUN(__VA_ARGS__), -EINVAL);                                               \
		CHECK_STR(err, want);                                                              \
	} while (0)

static int nop(void *ctx, const char *arg, char *e, size_t elen)
{
	(void)ctx;
	(void)arg;
	(void)e;
	(void)elen;
	return 0;
}

static void test_register(void)
{
	struct opt_def d = {.name = "extra", .help = "x", .handler = nop};
	char name[32];

	fixture_setup();
	CHECK_EQ(opt_register(&d), 0);
	CHECK_EQ(opt_register(&d), -EEXIST);
	d.name = "mcast";
	d.short_name = 'm'; /* taken by --multicast */
	CHECK_EQ(opt_register(&d), -EEXIST);
	d.short_name = 'e'; /* taken by the built-in --enable */
	CHECK_EQ(opt_register(&d), -EEXIST);
	d.name = "help"; /* built-in long name, free short name */
	d.short_name = 'H';
	CHECK_EQ(opt_register(&d), -EEXIST);
	CHECK_EQ(opt_register_builtin(stdout, "again"), -EEXIST);

	/* Bad definitions. */
	d = (struct opt_def){.name = "ok-name_2", .help = "x", .handler = nop, .short_name = '7'};
	CHECK_EQ(opt_register(NULL), -EINVAL);
	d.name = NULL;
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.name = "";
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.name = "-x";
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.name = "Upper";
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.name = "two words";
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.name = "a=b";
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.name = "ok-name_2";
	d.short_name = '?';
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.short_name = ':';
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.short_name = 200;
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.short_name = -1;
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.short_name = '7';
	d.handler = NULL;
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.handler = nop;
	d.help = NULL;
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.help = "x";
	d.arg_optional = true; /* optional argument without a name */
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.arg = "";
	CHECK_EQ(opt_register(&d), -EINVAL);
	d.arg = "N";
	CHECK_EQ(opt_register(&d), 0); /* now it is valid */
	CHECK_EQ(RUN("-7", "3"), 0);
	CHECK_EQ(opt_given("ok-name_2"), 1);

	CHECK_EQ(opt_set_positional("GROUP", "again", nop, NULL), -EEXIST);
	CHECK_EQ(opt_set_positional(NULL, "x", nop, NULL), -EINVAL);

	/* No fixed maximum: many options, the last one still parses. */
	for (int i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "opt-%d", i);
		d = (struct opt_def){.name = name, .arg = "V", .help = "generated", .handler = nop};
		if (opt_register(&d))
			break;
	}
	CHECK_EQ(RUN("--opt-599=1", "--opt-0", "2"), 0);
	CHECK_EQ(opt_given("opt-599"), 1);
	CHECK_EQ(opt_given("opt-0"), 1);
	CHECK_EQ(opt_given("opt-1"), 0);
}

static void test_parse(void)
{
	/* Short, long, clustered, attached and separate arguments, abbreviations. */
	fixture_setup();
	CHECK_EQ(RUN("-xvvm239.1.1.1", "-d", "mlx5_0:1", "--roce=rxe0", "--mult", "239.1.1.2",
		     "--work=4", "-p1234"),
		 0);
	CHECK_STR(fx.log, "debug verbose verbose multicast=239.1.1.1 device=mlx5_0:1 roce=rxe0 "
			  "multicast=239.1.1.2 workers=4 port=1234");
	CHECK_EQ(fx.port, 1234);
	CHECK_EQ(fx.groups, 2);
	CHECK_STR(fixture_output(), "");

	/* Repeatable options accumulate; for the others the last one wins. */
	fixture_setup();
	CHECK_EQ(RUN("-p", "1", "-v", "--port", "2", "-v", "-v", "-m", "239.0.0.1", "-p3"), 0);
	CHECK_EQ(fx.port, 3);
	CHECK_EQ(opt_given("port"), 3);
	CHECK_EQ(opt_given("verbose"), 3);
	CHECK_EQ(opt_given("multicast"), 1);
	CHECK_EQ(opt_given("device"), 0);
	CHECK_EQ(opt_given("nosuch"), 0);
	CHECK_EQ(opt_given("Port"), 0); /* exact name */

	/* Optional arguments: attached, after '=', or the next word unless it is an option. */
	fixture_setup();
	CHECK_EQ(RUN("-lPORT", "-l", "ib", "--mgid=ipv6", "--mgid", "RDMA", "-e", "drop=5",
		     "-ehuge", "--enable=loglevel=2", "--enable", "ppsdisplay", "-y", "pgm",
		     "--disable=bridging"),
		 0);
	CHECK_STR(fx.log, "mgid=PORT mgid=IB mgid=IPv6 mgid=RDMA");
	CHECK_EQ(fx.drop, 5);
	CHECK_EQ(fx.huge, 1);
	CHECK_EQ(fx.loglevel, 2);
	CHECK_EQ(fx.ppsdisplay, 1);
	CHECK_EQ(fx.pgm, 0);
	CHECK_EQ(fx.bridging, 0);

	/* -l without a format lists them and stops; later words are not looked at. */
	fixture_setup();
	CHECK_EQ(RUN("-x", "-l", "-p", "0"), OPT_EXIT);
	CHECK_STR(fixture_output(), "RDMA\nIPv4\nIPv6\nPORT\nIB\n");
	CHECK_STR(fx.log, "debug");

	/* Positional groups come after all options (GNU permutation), in order. */
	fixture_setup();
	CHECK_EQ(RUN("239.1.1.1", "-l", "PORT", "239.1.1.2", "-x"), 0);
	CHECK_STR(fx.log, "mgid=PORT debug group=239.1.1.1 group=239.1.1.2");
	/* ... whatever POSIXLY_CORRECT says. */
	fixture_setup();
	setenv("POSIXLY_CORRECT", "1", 1);
	CHECK_EQ(RUN("239.1.1.1", "-x", "239.1.1.2"), 0);
	unsetenv("POSIXLY_CORRECT");
	CHECK_STR(fx.log, "debug group=239.1.1.1 group=239.1.1.2");

	/* "--" ends the options. */
	fixture_setup();
	CHECK_EQ(RUN("-x", "--", "239.1.1.3", "-v"), -EINVAL);
	CHECK_STR(err, "argument '-v': '-v' is not an IPv4 multicast address");
	CHECK_STR(fx.log, "debug group=239.1.1.3");

	/* A required argument takes the next word even when it starts with '-'. */
	fixture_setup();
	CHECK_EQ(RUN("-d", "-x"), 0);
	CHECK_STR(fx.log, "device=-x");

	/* An empty command line is fine. */
	fixture_setup();
	CHECK_EQ(run_words((const char *const[]){NULL}), 0);
	CHECK_STR(fx.log, "");
	CHECK_STR(err, "(untouched)");

	/* The registry can parse again (getopt state is reset). */
	CHECK_EQ(RUN("-x"), 0);
	CHECK_EQ(RUN("-v"), 0);
	CHECK_STR(fx.log, "debug verbose");
}

static void test_builtin(void)
{
	const char *out;

	/* -e / -y without a name: the feature list, stop. */
	fixture_setup();
	CHECK_EQ(RUN("-e"), OPT_EXIT);
	out = fixture_output();
	CHECK_HAS(out, "NAME        VALUE   DEFAULT  RANGE            CHANGE   DESCRIPTION\n");
	CHECK_HAS(out, "mcqp        16      16       1..64            restart  groups per QP\n");
	fixture_setup();
	CHECK_EQ(RUN("-p", "5", "--disable"), OPT_EXIT);
	CHECK_HAS(fixture_output(),
		  "bridging    on      on       on/off           runtime  forward");
	fixture_setup();
	CHECK_EQ(RUN("-y", "-x"), OPT_EXIT); /* "-x" is an option, not a feature name */
	CHECK_STR(fx.log, "");

	/* -h prints the help, stops before the bad port. */
	fixture_setup();
	CHECK_EQ(RUN("-x", "--help", "-p", "0"), OPT_EXIT);
	CHECK_HAS(fixture_output(), "Usage: ib2roce [OPTION]... [GROUP]...\n");
	CHECK_STR(fx.log, "debug");
	fixture_setup();
	CHECK_EQ(RUN("--he"), OPT_EXIT);

	/* The running flag reaches the built-in --enable. */
	fixture_setup();
	feat_running_set(true);
	CHECK_EQ(RUN("-e", "buffers=4096"), -EBUSY);
	CHECK_STR(err, "option --enable: feature 'buffers' cannot change while running (needs a "
		       "restart)");
	CHECK_EQ(RUN("-e", "drop=3"), 0);
	CHECK_EQ(fx.drop, 3);
	feat_running_set(false);
	CHECK_EQ(RUN("-e", "buffers=4096"), 0);
	CHECK_EQ(fx.buffers, 4096);
}

static void test_errors(void)
{
	CHECK_ERR("invalid option -- 'z'", "-z");
	CHECK_ERR("invalid option -- 'z'", "-xz");
	CHECK_ERR("invalid option -- '?'", "-?");
	CHECK_ERR("invalid option -- '\\x01'", "-\x01");
	CHECK_ERR("unrecognized option '--foo'", "--foo");
	CHECK_ERR("unrecognized option '--foo=bar'", "-x", "--foo=bar");
	CHECK_ERR("unrecognized option '--Device'", "--Device", "x"); /* argv is case-sensitive */
	CHECK_ERR("option '--c' is ambiguous; possibilities: '--config' '--cores' '--cpus'", "--c",
		  "x");
	CHECK_ERR("option '--d' is ambiguous; possibilities: '--disable' '--device' '--debug'",
		  "--d=1");
	CHECK_ERR("option requires an argument -- 'm'", "-m");
	CHECK_ERR("option requires an argument -- 'm'", "-xvm");
	CHECK_ERR("option '--multicast' requires an argument", "--multicast");
	CHECK_ERR("option '--multicast' requires an argument", "--multi");
	CHECK_ERR("option '--help' doesn't allow an argument", "--help=x");
	CHECK_ERR("option '--debug' doesn't allow an argument", "--deb=1");
	CHECK_ERR("option --port: '0' is out of range 1..65535", "-p", "0");
	CHECK_ERR("option --port: '70000' is out of range 1..65535", "--port=70000");
	CHECK_ERR("option --port: 'abc' is not a number", "--port", "abc");
	CHECK_ERR("option --port: '' is not a number", "-p", "");
	CHECK_ERR("option --multicast: '1.2.3.4' is not an IPv4 multicast address", "-m",
		  "1.2.3.4");
	CHECK_ERR("option --mgid: unknown MGID format 'FOO'", "-lFOO");
	CHECK_ERR("option --enable: unknown feature 'nosuch' (see --enable without argument)", "-e",
		  "nosuch");
	CHECK_ERR("option --enable: feature 'mcqp': '0' is out of range 1..64", "-e", "mcqp=0");
	CHECK_ERR("option --disable: feature 'pgm': disable takes no value", "-y", "pgm=1");
	CHECK_ERR("argument 'foo': 'foo' is not an IPv4 multicast address", "foo");
	CHECK_ERR("argument '239.1.1.1x': '239.1.1.1x' is not an IPv4 multicast address",
		  "239.1.1.1", "239.1.1.1x", "239.1.1.2");

	/* The first error stops: later options are not applied. */
	fixture_setup();
	CHECK_EQ(RUN("-x", "-z", "-v"), -EINVAL);
	CHECK_STR(fx.log, "debug");
	CHECK_EQ(fx.groups, 0);

	/* A file given with -c that cannot be read: "FILE: strerror" and its errno. */
	fixture_setup();
	CHECK_EQ(RUN("-c", "/nonexistent/ib2roce.conf"), -ENOENT);
	CHECK_STR(err, "/nonexistent/ib2roce.conf: No such file or directory");

	/* No positional handler. */
	opt_registry_clear();
	CHECK_EQ(opt_register_builtin(stdout, "bcom"), 0);
	CHECK_EQ(RUN("status"), -EINVAL);
	CHECK_STR(err, "unexpected argument 'status'");

	/* Messages are truncated to errlen; err may be NULL. */
	fixture_setup();
	{
		char *argv[] = {"ib2roce", "--unknown-option", NULL};
		char small[12];

		CHECK_EQ(opt_parse_argv(2, argv, small, sizeof(small)), -EINVAL);
		CHECK_STR(small, "unrecognize");
		CHECK_EQ(opt_parse_argv(2, argv, NULL, 0), -EINVAL);
		CHECK_EQ(opt_parse_argv(0, argv, err, sizeof(err)), -EINVAL);
	}
}

static void test_help(void)
{
	static const char *const names[] = {"config",  "enable",    "disable", "help",	   "device",
					    "roce",    "multicast", "inbound", "outbound", "mgid",
					    "port",    "tos",	    "cores",   "systemd",  "debug",
					    "verbose", "test",	    "cpus",    "workers"};
	const char *out, *prev = NULL;
	char want[64];

	fixture_setup();
	opt_help(fx.out, "ib2roce");
	out = fixture_output();
	/* Golden lines: aligned columns, optional arguments in brackets, long-only options
	 * indented, too-wide options on a line of their own. */
	CHECK_HAS(out, "Usage: ib2roce [OPTION]... [GROUP]...\n\nOptions:\n"
		       "  -c, --config=FILE            read options from FILE, one long option per "
		       "line (repeatable)\n"
		       "      --cpus=LIST              CPUs for the workers\n"
		       "  -d, --device=dev[:port]      InfiniBand device\n"
		       "  -e, --enable[=NAME[=VALUE]]  enable a feature or set its value; without "
		       "NAME: list the features (repeatable)\n"
		       "  -h, --help                   show this help and exit\n");
	CHECK_HAS(out, "  -m, --multicast=addr[:port][/fmt][#tos]\n"
		       "                               group bridged both ways (repeatable)\n");
	CHECK_HAS(out, "  -v, --verbose                more logging (twice: dump packets) "
		       "(repeatable)\n"
		       "      --workers=N              busy-polling workers (0: event-driven)\n"
		       "  -x, --debug                  stay in the foreground");
	CHECK_HAS(out, "  -y, --disable[=NAME]         disable a feature; without NAME: list the "
		       "features (repeatable)\n");
	CHECK_HAS(out, "\nArguments:\n  GROUP                        groups bridged both ways "
		       "(as --multicast)\n");
	CHECK_HAS(out, "\nFeatures (--enable NAME[=VALUE], --disable NAME):\n"
		       "  NAME        VALUE   DEFAULT  RANGE            CHANGE   DESCRIPTION\n");
	CHECK_HAS(out,
		  "  statint     10      10       0..3600          runtime  statistics interval "
		  "(s)\n");
	/* Every option, sorted by short name (long-only ones by long name). */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(want, sizeof(want), "--%s", names[i]);
		CHECK_HAS(out, want);
	}
	for (const char *const *w =
		     (const char *const[]){"-c, ", "--cpus",	"-d, ", "-e, ", "-h, ",
					   "-i, ", "-k, ",	"-l, ", "-m, ", "-o, ",
					   "-p, ", "-q, ",	"-r, ", "-s, ", "-t, ",
					   "-v, ", "--workers", "-x, ", "-y, ", NULL};
	     *w; w++) {
		const char *at = strstr(out, *w);

		CHECK(at && (!prev || at > prev));
		prev = at;
	}
	/* The help reflects current feature values. */
	fixture_setup();
	CHECK_EQ(RUN("-e", "statint=30", "-h"), OPT_EXIT);
	CHECK_HAS(fixture_output(), "  statint     30      10       0..3600          runtime");
}

static void test_numbers(void)
{
	uint64_t u = 77;
	int64_t i = 77;
	bool b = false;

	CHECK_EQ(opt_parse_uint("0", 0, 10, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 0);
	CHECK_EQ(opt_parse_uint("0x1F", 0, 100, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 31);
	CHECK_EQ(opt_parse_uint("010", 0, 100, &u, err, sizeof(err)), 0); /* decimal, not octal */
	CHECK_EQ(u, 10);
	CHECK_EQ(opt_parse_uint("18446744073709551615", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK(u == UINT64_MAX);
	u = 5;
	CHECK_EQ(opt_parse_uint("18446744073709551616", 0, UINT64_MAX, &u, err, sizeof(err)),
		 -EINVAL);
	CHECK_STR(err, "'18446744073709551616' is out of range 0..18446744073709551615");
	CHECK_EQ(u, 5); /* untouched on failure */
	CHECK_EQ(opt_parse_uint("0x", 0, 9, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'0x' is not a number");
	CHECK_EQ(opt_parse_uint("12 ", 0, 99, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'12 ' is not a number");
	CHECK_EQ(opt_parse_uint("-1", 0, 99, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'-1' is not a number");
	CHECK_EQ(opt_parse_uint("+1", 0, 99, &u, err, sizeof(err)), -EINVAL);
	CHECK_EQ(opt_parse_uint("1a", 0, 99, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'1a' is not a number");
	CHECK_EQ(opt_parse_uint(NULL, 0, 99, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "missing number");
	CHECK_EQ(opt_parse_uint("100", 0, 99, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'100' is out of range 0..99");
	CHECK_EQ(u, 5);

	CHECK_EQ(opt_parse_int("-42", -100, 100, &i, err, sizeof(err)), 0);
	CHECK_EQ(i, -42);
	CHECK_EQ(opt_parse_int("-9223372036854775808", INT64_MIN, INT64_MAX, &i, err, sizeof(err)),
		 0);
	CHECK(i == INT64_MIN);
	CHECK_EQ(opt_parse_int("9223372036854775807", INT64_MIN, INT64_MAX, &i, err, sizeof(err)),
		 0);
	CHECK(i == INT64_MAX);
	CHECK_EQ(opt_parse_int("9223372036854775808", INT64_MIN, INT64_MAX, &i, err, sizeof(err)),
		 -EINVAL);
	CHECK_STR(err, "'9223372036854775808' is out of range "
		       "-9223372036854775808..9223372036854775807");
	CHECK_EQ(opt_parse_int("-0x10", -100, 100, &i, err, sizeof(err)), 0);
	CHECK_EQ(i, -16);
	CHECK_EQ(opt_parse_int("-", -100, 100, &i, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'-' is not a number");
	CHECK_EQ(opt_parse_int("-101", -100, 100, &i, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'-101' is out of range -100..100");
	CHECK_EQ(i, -16);

	CHECK_EQ(opt_parse_size("4k", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 4096);
	CHECK_EQ(opt_parse_size("2M", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 2 << 20);
	CHECK_EQ(opt_parse_size("1g", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 1 << 30);
	CHECK_EQ(opt_parse_size("3T", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 3ULL << 40);
	CHECK_EQ(opt_parse_size("0x10k", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 16 << 10);
	CHECK_EQ(opt_parse_size("512", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK_EQ(u, 512);
	CHECK_EQ(opt_parse_size("12q", 0, UINT64_MAX, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'12q' is not a size (number with optional suffix k, m, g or t)");
	CHECK_EQ(opt_parse_size("1kb", 0, UINT64_MAX, &u, err, sizeof(err)), -EINVAL);
	CHECK_EQ(opt_parse_size("k", 0, UINT64_MAX, &u, err, sizeof(err)), -EINVAL);
	CHECK_EQ(opt_parse_size("2g", 4096, (1ULL << 30) - 1, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'2g' is out of range 4096..1073741823");
	CHECK_EQ(opt_parse_size("16777216t", 0, UINT64_MAX, &u, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'16777216t' is out of range 0..18446744073709551615");
	CHECK_EQ(u, 512);

	for (const char *const *s = (const char *const[]){"on", "YES", "true", "Enable", "1", NULL};
	     *s; s++) {
		b = false;
		CHECK(opt_parse_bool(*s, &b, err, sizeof(err)) == 0 && b);
	}
	for (const char *const *s =
		     (const char *const[]){"off", "no", "FALSE", "disable", "0", NULL};
	     *s; s++) {
		b = true;
		CHECK(opt_parse_bool(*s, &b, err, sizeof(err)) == 0 && !b);
	}
	CHECK_EQ(opt_parse_bool("maybe", &b, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "'maybe' is not a boolean (on/off, yes/no, true/false, 1/0)");
	CHECK_EQ(opt_parse_bool("", &b, err, sizeof(err)), -EINVAL);
	CHECK_EQ(opt_parse_bool("on ", &b, err, sizeof(err)), -EINVAL);

	CHECK_EQ(opt_errf(err, sizeof(err), -ENODEV, "no device '%s'", "mlx9"), -ENODEV);
	CHECK_STR(err, "no device 'mlx9'");
	CHECK_EQ(opt_errf(NULL, 0, -EINVAL, "x"), -EINVAL);
}

int main(void)
{
	test_register();
	test_parse();
	test_builtin();
	test_errors();
	test_help();
	test_numbers();
	fixture_teardown();
	return tap_done();
}
