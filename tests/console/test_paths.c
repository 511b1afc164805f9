/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_paths.c - where the control socket and pid file live: the default path from the
 * user and the environment (root, systemd, XDG_RUNTIME_DIR), the pid file beside the
 * socket, and the socket's directory (created, reused; refused when others may write to
 * it, and in a shared place when it is not ours or open to others).
 *
 * Run as root, the unprivileged branch is tested too, under a borrowed effective uid.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"
#include "tap.h"

/* An effective uid to borrow when running as root (nobody). */
#define OTHER_UID 65534

static char path[CONTROL_PATH_MAX];

static void env(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

/* The default path with this environment; its return value. */
static int default_with(const char *notify, const char *invocation, const char *xdg)
{
	env("NOTIFY_SOCKET", notify);
	env("INVOCATION_ID", invocation);
	env("XDG_RUNTIME_DIR", xdg);
	strcpy(path, "(untouched)");
	return control_default_path(path, sizeof(path));
}

/* Whatever the uid: under systemd the socket is in /run. */
static void test_default_systemd(void)
{
	CHECK_EQ(default_with("/run/systemd/notify", NULL, "/run/user/1000"), 0);
	CHECK_STR(path, "/run/ib2roce/ib2roce.sock");
	CHECK_EQ(default_with(NULL, "0123456789abcdef", "/run/user/1000"), 0);
	CHECK_STR(path, "/run/ib2roce/ib2roce.sock");
	CHECK_EQ(default_with("@notify", "x", NULL), 0);
	CHECK_STR(path, "/run/ib2roce/ib2roce.sock");
}

static void test_default_root(void)
{
	CHECK_EQ(default_with(NULL, NULL, "/run/user/0"), 0);
	CHECK_STR(path, "/run/ib2roce/ib2roce.sock");
	CHECK_EQ(default_with(NULL, NULL, NULL), 0);
	CHECK_STR(path, "/run/ib2roce/ib2roce.sock");
}

static void test_default_user(void)
{
	char want[CONTROL_PATH_MAX], xdg[CONTROL_PATH_MAX + 8];
	size_t n;

	CHECK_EQ(default_with(NULL, NULL, "/run/user/1000"), 0);
	CHECK_STR(path, "/run/user/1000/ib2roce.sock");
	/* Empty variables are unset ones. */
	CHECK_EQ(default_with("", "", "/run/user/1000"), 0);
	CHECK_STR(path, "/run/user/1000/ib2roce.sock");

	snprintf(want, sizeof(want), "/tmp/ib2roce-%u/ib2roce.sock", (unsigned)geteuid());
	CHECK_EQ(default_with(NULL, NULL, NULL), 0);
	CHECK_STR(path, want);
	CHECK_EQ(default_with(NULL, NULL, ""), 0);
	CHECK_STR(path, want);
	CHECK_EQ(default_with(NULL, NULL, "relative/dir"), 0); /* ignored, as XDG says */
	CHECK_STR(path, want);

	/* The longest that fits in sun_path, and one byte more. */
	n = CONTROL_PATH_MAX - 1 - strlen("/ib2roce.sock");
	memset(xdg, 'x', n);
	xdg[0] = '/';
	xdg[n] = '\0';
	CHECK_EQ(default_with(NULL, NULL, xdg), 0);
	CHECK_EQ(strlen(path), CONTROL_PATH_MAX - 1);
	xdg[n] = 'x';
	xdg[n + 1] = '\0';
	CHECK_EQ(default_with(NULL, NULL, xdg), -ENAMETOOLONG);
	CHECK_STR(path, "(untouched)");
}

static void test_default_len(void)
{
	char buf[32];

	default_with("x", NULL, NULL); /* /run/ib2roce/ib2roce.sock: 25 bytes */
	strcpy(buf, "(untouched)");
	CHECK_EQ(control_default_path(buf, 25), -ENAMETOOLONG);
	CHECK_STR(buf, "(untouched)");
	CHECK_EQ(control_default_path(buf, 26), 0);
	CHECK_STR(buf, "/run/ib2roce/ib2roce.sock");
}

static void test_pid_path(void)
{
	char buf[CONTROL_PATH_MAX + 8], small[16];

	CHECK_EQ(control_pid_path("/run/ib2roce/ib2roce.sock", buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/run/ib2roce/ib2roce.pid");
	CHECK_EQ(control_pid_path("/tmp/bridge2", buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/tmp/bridge2.pid");
	CHECK_EQ(control_pid_path("/tmp/b.socket", buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/tmp/b.socket.pid");
	CHECK_EQ(control_pid_path("/tmp/b.sock.old", buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/tmp/b.sock.old.pid");
	CHECK_EQ(control_pid_path("rel.sock", buf, sizeof(buf)), 0);
	CHECK_STR(buf, "rel.pid");
	CHECK_EQ(control_pid_path(".sock", buf, sizeof(buf)), 0);
	CHECK_STR(buf, ".pid");
	CHECK_EQ(control_pid_path("", buf, sizeof(buf)), 0);
	CHECK_STR(buf, ".pid");

	/* In place. */
	strcpy(buf, "/run/x/a.sock");
	CHECK_EQ(control_pid_path(buf, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/run/x/a.pid");

	/* Exactly enough room, one byte less: refused, the buffer untouched. */
	CHECK_EQ(control_pid_path("/tmp/abcdef.sock", small, 16), 0); /* 15 + NUL */
	CHECK_STR(small, "/tmp/abcdef.pid");
	strcpy(small, "(untouched)");
	CHECK_EQ(control_pid_path("/tmp/abcdefg.sock", small, 16), -ENAMETOOLONG);
	CHECK_STR(small, "(untouched)");
	CHECK_EQ(control_pid_path("/tmp/abcdefg", small, 16), -ENAMETOOLONG);
	CHECK_EQ(control_pid_path("/tmp/abcdef", small, 16), 0);
	CHECK_STR(small, "/tmp/abcdef.pid");
	CHECK_EQ(control_pid_path("x", small, 0), -ENAMETOOLONG);
}

/* path_absolute(): relative paths from the current directory, absolute ones unchanged. */
static void test_absolute(void)
{
	char buf[CONTROL_PATH_MAX], want[96], small[8], here[64] = "/tmp/test_paths_abs.XXXXXX";
	int back = open(".", O_PATH | O_CLOEXEC);

	CHECK(back >= 0);
	CHECK(mkdtemp(here) != NULL);
	CHECK_EQ(chdir(here), 0);
	CHECK_EQ(path_absolute("c.sock", buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%s/c.sock", here);
	CHECK_STR(buf, want);
	CHECK_EQ(path_absolute("../x/./y", buf, sizeof(buf)), 0); /* lexical: kept as given */
	CHECK(!strncmp(buf, here, strlen(here)) && !strcmp(buf + strlen(here), "/../x/./y"));
	CHECK_EQ(path_absolute("/run/ib2roce/ib2roce.sock", buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/run/ib2roce/ib2roce.sock");

	/* In place, as set_abs_path may call it. */
	strcpy(buf, "b.sock");
	CHECK_EQ(path_absolute(buf, buf, sizeof(buf)), 0);
	CHECK(!strncmp(buf, here, strlen(here)) && !strcmp(buf + strlen(here), "/b.sock"));

	/* Exactly enough room, one byte less: refused, the buffer untouched. */
	CHECK_EQ(path_absolute("/abcdef", small, 8), 0);
	CHECK_STR(small, "/abcdef");
	strcpy(small, "(kept)");
	CHECK_EQ(path_absolute("/abcdefg", small, 8), -ENAMETOOLONG);
	CHECK_STR(small, "(kept)");
	CHECK_EQ(path_absolute("a", small, 8), -ENAMETOOLONG); /* here + "/a" */
	CHECK_STR(small, "(kept)");

	/* From "/": one slash. */
	CHECK_EQ(chdir("/"), 0);
	CHECK_EQ(path_absolute("r.sock", small, 8), 0);
	CHECK_STR(small, "/r.sock");

	/* A current directory removed since: its error, not a made-up path. */
	CHECK_EQ(chdir(here), 0);
	CHECK_EQ(rmdir(here), 0);
	strcpy(small, "(kept)");
	CHECK_EQ(path_absolute("a", small, 8), -ENOENT);
	CHECK_STR(small, "(kept)");
	CHECK_EQ(fchdir(back), 0);
	close(back);
}

static char tmp[] = "/tmp/test_paths.XXXXXX";
static char err[256];

/* control_make_dir() for tmp/rel, with err reset first. */
static int make(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	strcpy(err, "(none)");
	return control_make_dir(p, err, sizeof(err));
}

static unsigned mode_of(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	if (lstat(p, &st) < 0)
		return 0xffff;
	return st.st_mode & 07777;
}

/* tmp/rel; two in a row may be used at once. */
static const char *at(const char *rel)
{
	static char p[2][512];
	static unsigned i;

	i ^= 1;
	snprintf(p[i], sizeof(p[i]), "%s/%s", tmp, rel);
	return p[i];
}

static void test_make_dir(void)
{
	FILE *f;

	umask(022);
	if (!CHECK(mkdtemp(tmp)))
		return;

	/* Nothing to create for a socket in the current directory or in /. */
	CHECK_EQ(control_make_dir("ib2roce.sock", err, sizeof(err)), 0);
	CHECK_EQ(control_make_dir("/ib2roce.sock", err, sizeof(err)), 0);

	/* A private parent: the directory is made 0750; existing ones are left alone. */
	CHECK_EQ(make("run/ib2roce.sock"), 0);
	CHECK_EQ(mode_of("run"), 0750);
	CHECK_EQ(make("run/ib2roce.sock"), 0);
	CHECK_EQ(make("run//x.sock"), 0); /* "run/" */

	/*
	 * Wherever it is, a directory that others may write to is refused (they could
	 * unlink the live socket and bind their own), unless it has the sticky bit.
	 */
	chmod(at("run"), 0777);
	CHECK_EQ(make("run/other.sock"), -EPERM);
	CHECK_HAS(err, "/run: writable by others (mode 0777)");
	chmod(at("run"), 0770);
	CHECK_EQ(make("run/other.sock"), -EPERM);
	chmod(at("run"), 01777);
	CHECK_EQ(make("run/other.sock"), 0);
	CHECK_EQ(mode_of("run"), 01777);
	chmod(at("run"), 0750);

	/* One level only. */
	CHECK_EQ(make("no/such/x.sock"), -ENOENT);
	CHECK_HAS(err, "cannot create");
	CHECK_HAS(err, "/no/such");

	/* Not a directory. */
	f = fopen(at("file"), "w");
	if (f)
		fclose(f);
	CHECK_EQ(make("file/x.sock"), -ENOTDIR);
	CHECK_HAS(err, "not a directory");

	/* A shared parent like /tmp: private directory, and only ours may be reused. */
	CHECK_EQ(mkdir(at("shared"), 0700), 0);
	chmod(at("shared"), 01777);
	CHECK_EQ(make("shared/ib2roce-1/ib2roce.sock"), 0);
	CHECK_EQ(mode_of("shared/ib2roce-1"), 0700);
	CHECK_EQ(make("shared/ib2roce-1/ib2roce.sock"), 0);
	chmod(at("shared/ib2roce-1"), 0777);
	CHECK_EQ(make("shared/ib2roce-1/ib2roce.sock"), -EPERM);
	CHECK_HAS(err, "writable by others (mode 0777)");
	chmod(at("shared/ib2roce-1"), 0720);
	CHECK_EQ(make("shared/ib2roce-1/ib2roce.sock"), -EPERM);
	chmod(at("shared/ib2roce-1"), 0750); /* readable by others is fine */
	CHECK_EQ(make("shared/ib2roce-1/ib2roce.sock"), 0);

	/* A symbolic link planted there is refused, even to a good directory. */
	CHECK_EQ(symlink(at("run"), at("shared/link")), 0);
	CHECK_EQ(make("shared/link/ib2roce.sock"), -ENOTDIR);
	CHECK_HAS(err, "not a directory");
	/* Elsewhere a link is the administrator's choice. */
	CHECK_EQ(symlink(at("run"), at("link")), 0);
	CHECK_EQ(make("link/ib2roce.sock"), 0);

	/* Someone else's directory (only root can make one to test with). */
	if (geteuid() == 0) {
		CHECK_EQ(chown(at("shared/ib2roce-1"), OTHER_UID, OTHER_UID), 0);
		CHECK_EQ(make("shared/ib2roce-1/ib2roce.sock"), -EPERM);
		CHECK_HAS(err, "owned by uid");
		/* Not in a shared place, but another user's: refused as well. */
		CHECK_EQ(chown(at("run"), OTHER_UID, OTHER_UID), 0);
		CHECK_EQ(make("run/ib2roce.sock"), -EPERM);
		CHECK_HAS(err, "owned by uid 65534, not by root or uid 0");
		CHECK_EQ(chown(at("run"), 0, 0), 0);
		CHECK_EQ(make("run/ib2roce.sock"), 0);
	} else {
		printf("# not root: a directory owned by another user is not tested\n");
	}

	/* No room for a message is no reason to crash. */
	CHECK_EQ(control_make_dir(at("no/such/x.sock"), NULL, 0), -ENOENT);

	snprintf(err, sizeof(err), "rm -rf '%s'", tmp);
	CHECK_EQ(system(err), 0);
}

int main(void)
{
	test_default_systemd();
	if (geteuid() == 0) {
		test_default_root();
		/* Borrow an ordinary effective uid for the user branch, then take root back. */
		if (CHECK(seteuid(OTHER_UID) == 0)) {
			test_default_user();
			test_default_systemd();
			CHECK_EQ(seteuid(0), 0);
		}
	} else {
		printf("# not root: the root branch is not tested\n");
		test_default_user();
	}
	test_default_len();
	test_pid_path();
	test_absolute();
	test_make_dir();
	return tap_done();
}
