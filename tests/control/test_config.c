/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_config.c - config files: everything good.conf accepts, and every broken file
 * fixtures/bad-*.conf, whose first line says what must happen:
 *     # expect ERRNO: MESSAGE        (%D in MESSAGE stands for the conf directory)
 * plus nesting through -c and config lines, unreadable files, files that are not
 * regular or too large, the line length limit, errors that never quote the file, and a
 * config reload while running. Usage: test_config CONF_DIR
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "options.h"
#include "tap.h"

static const char *conf_dir;
static char err[OPT_ERR_LEN];
static char empty[] = "/tmp/test_config_empty_XXXXXX"; /* an empty regular file */

static char *conf_path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", conf_dir, name) < 0)
		exit(99);
	return p;
}

static int parse(const char *name)
{
	char *path = conf_path(name);
	int ret;

	strcpy(err, "(untouched)");
	ret = opt_parse_file(path, err, sizeof(err));
	free(path);
	return ret;
}

static void test_good(void)
{
	fixture_setup();
	CHECK_EQ(parse("good.conf"), 0);
	CHECK_STR(err, "(untouched)");
	CHECK_STR(fx.log, "device=mlx5_0:1 roce=rxe0 multicast=239.1.2.3:4711/PORT#5 "
			  "multicast=239.1.2.4 multicast=239.1.2.7 mgid=IPv6 inbound=239.1.2.5 "
			  "port=1000 port=0x7d0 verbose verbose workers=3 debug "
			  "outbound=239.1.2.6");
	CHECK_EQ(fx.port, 2000);
	CHECK_EQ(fx.groups, 5);
	CHECK_EQ(opt_given("port"), 2);
	CHECK_EQ(opt_given("verbose"), 2);
	CHECK_EQ(opt_given("enable"), 5);
	CHECK_EQ(opt_given("disable"), 1);
	CHECK_EQ(fx.mcqp, 10);
	CHECK_EQ(fx.drop, 7);
	CHECK_EQ(fx.pgm, 0);
	CHECK_EQ(fx.loglevel, 5);
	CHECK_EQ(fx.huge, 1);
	CHECK_EQ(fx.ppsdisplay, 1);
	CHECK_STR(fixture_output(), "");

	/* The same file through -c, with command-line options before and after it. */
	fixture_setup();
	{
		char *path = conf_path("good.conf");
		char *argv[] = {"ib2roce", "-p", "1", "-c", path, "-p", "3", "239.9.9.9", NULL};

		CHECK_EQ(opt_parse_argv(8, argv, err, sizeof(err)), 0);
		free(path);
	}
	CHECK_EQ(fx.port, 3);
	CHECK_EQ(opt_given("port"), 4);
	CHECK_EQ(fx.groups, 6);
	CHECK_HAS(fx.log, "port=1 device=mlx5_0:1 ");
	CHECK_HAS(fx.log, " outbound=239.1.2.6 port=3 group=239.9.9.9");
}

/* Every fixtures/bad-*.conf fails with the message and errno of its "# expect" line. */
static void test_bad_files(void)
{
	static const struct {
		const char *name;
		int code;
	} codes[] = {
		{"EINVAL", -EINVAL}, {"ENOENT", -ENOENT}, {"ELOOP", -ELOOP}, {"EBUSY", -EBUSY}};
	struct dirent **list;
	unsigned files = 0;
	int n;

	n = scandir(conf_dir, &list, NULL, alphasort);
	if (!CHECK(n > 0))
		return;
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		char line[1024], want[2048], ename[16], before[sizeof(fx.log)], *w, *path;
		int code = 0, ret;
		FILE *f;

		if (strncmp(name, "bad-", 4) || !strstr(name, ".conf"))
			goto next;
		files++;
		path = conf_path(name);
		f = fopen(path, "r");
		if (!CHECK(f && fgets(line, sizeof(line), f))) {
			printf("# %s: no expect line\n", name);
			goto next_path;
		}
		fclose(f);
		line[strcspn(line, "\n")] = '\0';
		if (!CHECK(sscanf(line, "# expect %15[A-Z]: ", ename) == 1)) {
			printf("# %s: bad expect line '%s'\n", name, line);
			goto next_path;
		}
		for (size_t c = 0; c < sizeof(codes) / sizeof(codes[0]); c++)
			if (!strcmp(codes[c].name, ename))
				code = codes[c].code;
		/* want = message with %D replaced by the conf directory */
		w = want;
		for (const char *p = strchr(line, ':') + 2; *p && w < want + sizeof(want) - 1;) {
			if (p[0] == '%' && p[1] == 'D') {
				w += snprintf(w, (size_t)(want + sizeof(want) - w), "%s", conf_dir);
				p += 2;
			} else {
				*w++ = *p++;
			}
		}
		*w = '\0';

		/* opt_parse_file directly ... */
		fixture_setup();
		ret = parse(name);
		if (!OK(ret == code && !strcmp(err, want), "%s", name))
			printf("#   got  %d \"%s\"\n#   want %d \"%s\"\n", ret, err, code, want);
		memcpy(before, fx.log, sizeof(before));
		/* ... and through -c on the command line: the same message, the same lines
		 * applied before the error, nothing after it. */
		fixture_setup();
		{
			char *argv[] = {"ib2roce", "-c", path, "-x", NULL};

			ret = opt_parse_argv(4, argv, err, sizeof(err));
		}
		if (!OK(ret == code && !strcmp(err, want) && !strcmp(fx.log, before), "%s -c",
			name))
			printf("#   -c: got %d \"%s\" log \"%s\"\n", ret, err, fx.log);
next_path:
		free(path);
next:
		free(list[i]);
	}
	free(list);
	CHECK(files >= 25);
}

static void test_nesting(void)
{
	/* Four files deep is allowed; relative names follow the including file. */
	fixture_setup();
	CHECK_EQ(parse("nest-ok.conf"), 0);
	CHECK_STR(fx.log, "port=4444 verbose port=1111");
	CHECK_EQ(fx.port, 1111);

	/* -c from the command line starts the nesting at its own file. */
	fixture_setup();
	{
		char *path = conf_path("nest-ok.conf");
		char *argv[] = {"ib2roce", "--config", path, NULL};

		CHECK_EQ(opt_parse_argv(3, argv, err, sizeof(err)), 0);
		free(path);
	}
	CHECK_EQ(fx.port, 1111);

	/* Relative -c paths on the command line are relative to the working directory. */
	fixture_setup();
	if (CHECK(chdir(conf_dir) == 0)) {
		char *argv[] = {"ib2roce", "-c", "nest/level4.conf", NULL};

		CHECK_EQ(opt_parse_argv(3, argv, err, sizeof(err)), 0);
		CHECK_STR(fx.log, "port=4000 port=5000");
		CHECK_EQ(parse("bad-include-self.conf"), -ELOOP);
	}
}

static void test_io(void)
{
	char *path;

	fixture_setup();
	CHECK_EQ(parse("does-not-exist.conf"), -ENOENT);
	path = conf_path("does-not-exist.conf: No such file or directory");
	CHECK_STR(err, path);
	free(path);

	CHECK_EQ(opt_parse_file(conf_dir, err, sizeof(err)), -EISDIR);
	if (asprintf(&path, "%s: Is a directory", conf_dir) < 0)
		exit(99);
	CHECK_STR(err, path);
	free(path);

	CHECK_EQ(opt_parse_file(NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "no file name");

	/* Empty files and files of comments only are fine. */
	CHECK_EQ(opt_parse_file(empty, err, sizeof(err)), 0);
	CHECK_STR(fx.log, "");
}

/*
 * Only regular files: /dev/zero never ends (it used to eat memory until getline failed,
 * and then counted as a valid file), a FIFO blocks whoever opens it (--check, or the
 * control thread in a reload). Both are refused at once, and so is a file too large.
 */
static void test_not_regular(void)
{
	char dir[] = "/tmp/test_config_XXXXXX", fifo[64], *argv[] = {"ib2roce", "-c", NULL, NULL};
	int fd;

	fixture_setup();
	CHECK_EQ(opt_parse_file("/dev/zero", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "/dev/zero: not a regular file");
	CHECK_EQ(opt_parse_file("/dev/null", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "/dev/null: not a regular file");
	argv[2] = "/dev/zero";
	CHECK_EQ(opt_parse_argv(3, argv, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "/dev/zero: not a regular file");

	if (!CHECK(mkdtemp(dir)))
		return;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK_EQ(mkfifo(fifo, 0600), 0);
	alarm(10); /* a regression blocks in open(): fail, don't hang */
	CHECK_EQ(opt_parse_file(fifo, err, sizeof(err)), -EINVAL);
	alarm(0);
	CHECK_HAS(err, "/fifo: not a regular file");
	unlink(fifo);

	/* One byte over the size limit (a file of comments). */
	snprintf(fifo, sizeof(fifo), "%s/big", dir);
	fd = open(fifo, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (CHECK(fd >= 0)) {
		char line[1024];

		memset(line, ' ', sizeof(line));
		line[0] = '#';
		line[sizeof(line) - 1] = '\n';
		for (int i = 0; i < OPT_CONFIG_SIZE_MAX / (int)sizeof(line); i++)
			CHECK_EQ(write(fd, line, sizeof(line)), sizeof(line));
		close(fd);
		CHECK_EQ(opt_parse_file(fifo, err, sizeof(err)), 0); /* exactly the limit */
		fd = open(fifo, O_WRONLY | O_APPEND);
		CHECK_EQ(write(fd, "\n", 1), 1);
		close(fd);
		CHECK_EQ(opt_parse_file(fifo, err, sizeof(err)), -EFBIG);
		CHECK_HAS(err, "/big: larger than 1048576 bytes");
	}
	unlink(fifo);
	rmdir(dir);
	CHECK_STR(fx.log, "");
}

/* help in a file stops the reading with OPT_EXIT, as on the command line. */
static void test_exit(void)
{
	char tmpl[] = "/tmp/test_config_XXXXXX";
	int fd = mkstemp(tmpl);
	FILE *f;

	if (!CHECK(fd >= 0))
		return;
	f = fdopen(fd, "w");
	fprintf(f, "debug\nhelp\nport 0\n");
	fclose(f);
	fixture_setup();
	CHECK_EQ(opt_parse_file(tmpl, err, sizeof(err)), OPT_EXIT);
	CHECK_STR(fx.log, "debug");
	CHECK_HAS(fixture_output(), "Usage: ib2roce");
	/* The next parse starts afresh. */
	CHECK_EQ(opt_parse_file(empty, err, sizeof(err)), 0);
	unlink(tmpl);
}

/* Lines up to OPT_CONFIG_LINE_MAX bytes; a longer one is an error, with its number. */
static void test_long_line(void)
{
	char tmpl[] = "/tmp/test_config_XXXXXX";
	int fd = mkstemp(tmpl);
	char want[128];
	FILE *f;

	if (!CHECK(fd >= 0))
		return;
	f = fdopen(fd, "w");
	/* "multicast 239.1.1.1:" and nines up to the limit: read whole. */
	fprintf(f, "# long\nmulticast 239.1.1.1:");
	for (int i = 0; i < OPT_CONFIG_LINE_MAX - 20; i++)
		fputc('9', f);
	fprintf(f, "\nport 7\n");
	fclose(f);
	fixture_setup();
	CHECK_EQ(opt_parse_file(tmpl, err, sizeof(err)), 0);
	CHECK_EQ(strlen(fx.log) > OPT_CONFIG_LINE_MAX - 20, 1); /* the nines were applied */
	CHECK_EQ(fx.port, 7);
	CHECK_EQ(fx.groups, 1);

	/* One byte more: "FILE:LINE: line too long", nothing of the line applied. */
	f = fopen(tmpl, "w");
	fprintf(f, "port 8\n# long\nmulticast 239.1.1.1:");
	for (int i = 0; i < OPT_CONFIG_LINE_MAX - 19; i++)
		fputc('9', f);
	fprintf(f, "\nport 7\n");
	fclose(f);
	fixture_setup();
	CHECK_EQ(opt_parse_file(tmpl, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: line too long (max %d bytes)", tmpl,
		 OPT_CONFIG_LINE_MAX);
	CHECK_STR(err, want);
	CHECK_EQ(fx.port, 8);
	CHECK_EQ(fx.groups, 0);
	unlink(tmpl);
}

/*
 * Errors never quote the file: a console user's reload of a config that includes a file
 * they cannot read (/etc/shadow) must not show them its lines.
 */
static void test_no_content(void)
{
	static const char *const lines[] = {
		"root:$6$SECRETHASH:19000:0:99999:7:::", /* unknown option */
		"port SECRETHASH",			 /* handler's reason */
		"enable SECRETHASH",			 /* feature registry's reason */
		"mgid SECRETHASH",			 /* a list of formats */
		"config SECRETHASH",			 /* include path */
		"SECRETHASH\001",			 /* control character */
	};
	char tmpl[] = "/tmp/test_config_XXXXXX";
	int fd = mkstemp(tmpl);

	if (!CHECK(fd >= 0))
		return;
	close(fd);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		FILE *f = fopen(tmpl, "w");

		fprintf(f, "# a secret\n%s\n", lines[i]);
		fclose(f);
		fixture_setup();
		CHECK(opt_parse_file(tmpl, err, sizeof(err)) < 0);
		CHECK_HAS(err, ":2: ");
		if (!CHECK(!strstr(err, "SECRET")))
			printf("#   line '%s': %s\n", lines[i], err);
	}
	unlink(tmpl);
}

/* A reload while running: runtime features change, start-up-only ones need a restart. */
static void test_reload(void)
{
	char tmpl[] = "/tmp/test_config_XXXXXX";
	int fd = mkstemp(tmpl);
	char want[256];
	FILE *f;

	if (!CHECK(fd >= 0))
		return;
	f = fdopen(fd, "w");
	fprintf(f, "enable statint=30\nenable buffers=200000\nenable buffers=4096\n");
	fclose(f);
	fixture_setup();
	feat_running_set(true);
	CHECK_EQ(opt_parse_file(tmpl, err, sizeof(err)), -EBUSY);
	snprintf(want, sizeof(want),
		 "%s:3: enable: feature 'buffers' cannot change while running (needs a restart)", tmpl);
	CHECK_STR(err, want);
	CHECK_EQ(fx.statint, 30);
	CHECK_EQ(fx.buffers, 200000);
	feat_running_set(false);
	CHECK_EQ(opt_parse_file(tmpl, err, sizeof(err)), 0);
	CHECK_EQ(fx.buffers, 4096);
	unlink(tmpl);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CONF_DIR\n", argv[0]);
		return 2;
	}
	conf_dir = argv[1];
	{
		int fd = mkstemp(empty);

		if (fd < 0) {
			printf("Bail out! mkstemp: %s\n", strerror(errno));
			return 1;
		}
		close(fd);
	}
	test_good();
	test_bad_files();
	test_io();
	test_exit();
	test_not_regular();
	test_long_line();
	test_no_content();
	test_reload();
	test_nesting(); /* last: changes the working directory */
	fixture_teardown();
	unlink(empty);
	return tap_done();
}
