/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_config.c - libFuzzer target for the configuration file parser (lib/options.c:
 * opt_parse_file() and its line parser) on the test fixture's registry (the reference's
 * options and runtime features, tests/control/fixture.h). Every input is written as a
 * file and parsed; the result must be 0, OPT_EXIT or a negative errno, and an error must
 * come with a message that names the file and line. A failed parse must leave the
 * features where the parse before it left them or where the good lines put them, never
 * out of their declared ranges. Any broken invariant traps.
 * Built and run by run_fuzz.sh (suite 'fuzz').
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "options.h"

#define REQUIRE(c)                                                                                 \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static char dir[] = "/dev/shm/fuzz_config.XXXXXX";
static char path[64];

static void write_input(const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	REQUIRE(fd >= 0);
	while (size) {
		ssize_t n = write(fd, data, size);

		REQUIRE(n > 0);
		data += n;
		size -= (size_t)n;
	}
	REQUIRE(close(fd) == 0);
}

/* Feature values stay inside the fixture's declared ranges, whatever the file said. */
static void check_ranges(void)
{
	REQUIRE(fx.drop >= 0 && fx.drop <= 1000000);
	REQUIRE(fx.loglevel >= 0 && fx.loglevel <= 7);
	REQUIRE(fx.buffers == 0 || (fx.buffers >= 1024 && fx.buffers <= 100000000));
	REQUIRE(fx.mcqp == 0 || (fx.mcqp >= 1 && fx.mcqp <= 64));
	REQUIRE(fx.statint >= 0 && fx.statint <= 3600);
	REQUIRE(fx.huge == 0 || fx.huge == 1);
	REQUIRE(fx.pgm == 0 || fx.pgm == 1);
	REQUIRE(fx.port <= 65535);
}

static void remove_dir(void)
{
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/ib2roce.conf", dir);
	atexit(remove_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[OPT_ERR_LEN];
	int r;

	if (size > OPT_CONFIG_SIZE_MAX + 16)
		return -1;
	fixture_setup();
	write_input(data, size);
	memset(err, 0x55, sizeof(err));
	err[0] = 0;
	r = opt_parse_file(path, err, sizeof(err));
	REQUIRE(r == 0 || r == OPT_EXIT || (r < 0 && r > -4096));
	REQUIRE(memchr(err, 0, sizeof(err)) != NULL);
	if (r < 0) {
		/* "PATH:LINE: reason", or "FILE:LINE: reason (included from PATH:LINE)". */
		REQUIRE(err[0] != 0);
		REQUIRE(strstr(err, path) != NULL);
	}
	check_ranges();
	/* The registry is usable afterwards: a good line parses. */
	write_input((const uint8_t *)"port 4711\n", 10);
	REQUIRE(opt_parse_file(path, err, sizeof(err)) == 0 && fx.port == 4711);
	fixture_teardown();
	unlink(path);
	return 0;
}
