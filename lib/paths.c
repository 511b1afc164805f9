/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * paths.c - where a bridge's control socket and pid file live (see paths.h). Shared by
 * ib2roce (which creates the socket) and bcom (which connects to it), so that both agree
 * on the default without any configuration.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "paths.h"

#define CONTROL_RUN_DIR	  "/run/ib2roce"
#define CONTROL_SOCK_NAME "ib2roce.sock"
#define CONTROL_SOCK_EXT  ".sock"
#define CONTROL_PID_EXT	  ".pid"

/* A directory in a place where others may create entries (like /tmp) is made private. */
#define CONTROL_DIR_MODE_SHARED 0700
#define CONTROL_DIR_MODE	0750

static bool env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

int control_default_path(char *buf, size_t len)
{
	char path[CONTROL_PATH_MAX];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	/*
	 * A service started by systemd may run as a dedicated user, yet its operators look
	 * for it in /run; the variables tell us that we are such a service.
	 */
	if (geteuid() == 0 || env_set("NOTIFY_SOCKET") || env_set("INVOCATION_ID"))
		n = snprintf(path, sizeof(path), "%s/%s", CONTROL_RUN_DIR, CONTROL_SOCK_NAME);
	else if (xdg && xdg[0] == '/') /* the XDG spec says to ignore a relative one */
		n = snprintf(path, sizeof(path), "%s/%s", xdg, CONTROL_SOCK_NAME);
	else
		n = snprintf(path, sizeof(path), "/tmp/ib2roce-%u/%s", (unsigned)geteuid(),
			     CONTROL_SOCK_NAME);
	if (n < 0 || (size_t)n >= sizeof(path) || (size_t)n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, path, (size_t)n + 1);
	return 0;
}

int control_pid_path(const char *sock, char *buf, size_t len)
{
	size_t n = strlen(sock);
	size_t ext = strlen(CONTROL_SOCK_EXT);
	size_t pid = strlen(CONTROL_PID_EXT);

	if (n >= ext && !strcmp(sock + n - ext, CONTROL_SOCK_EXT))
		n -= ext;
	if (n + pid >= len)
		return -ENAMETOOLONG;
	memmove(buf, sock, n); /* buf may be sock itself */
	memcpy(buf + n, CONTROL_PID_EXT, pid + 1);
	return 0;
}

int path_absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	size_t n = strlen(path), c;

	if (path[0] == '/') {
		if (n >= len)
			return -ENAMETOOLONG;
		memmove(buf, path, n + 1);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return errno == ERANGE ? -ENAMETOOLONG : -errno;
	c = strlen(cwd);
	if (c == 1) /* "/": no second slash */
		c = 0;
	if (c + 1 + n >= len)
		return -ENAMETOOLONG;
	memmove(buf + c + 1, path, n + 1); /* buf may be path itself */
	memcpy(buf, cwd, c);
	buf[c] = '/';
	return 0;
}

int control_dir_check(const char *dir, const struct stat *st, char *err, size_t errlen)
{
	if (!S_ISDIR(st->st_mode))
		return errf(err, errlen, -ENOTDIR, "%s: not a directory", dir);
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return errf(err, errlen, -EPERM, "%s: owned by uid %u, not by root or uid %u", dir,
			    (unsigned)st->st_uid, (unsigned)geteuid());
	/* With the sticky bit only an entry's owner (or root) may remove or rename it. */
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return errf(err, errlen, -EPERM, "%s: writable by others (mode %04o)", dir,
			    (unsigned)(st->st_mode & 07777));
	return 0;
}

int control_make_dir(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX], parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	bool shared;
	size_t n;
	int ret;

	if (!slash) {
		strcpy(dir, "."); /* the current directory: nothing to create */
		goto check;
	}
	n = (size_t)(slash - path);
	while (n && path[n - 1] == '/') /* "a//b": the directory is "a" */
		n--;
	if (!n) {
		strcpy(dir, "/"); /* "/": nothing to create */
		goto check;
	}
	if (n >= sizeof(dir))
		return errf(err, errlen, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
	memcpy(dir, path, n);
	dir[n] = '\0';

	/* The parent tells how careful to be: anyone may have made the directory in /tmp. */
	memcpy(parent, dir, n + 1);
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		strcpy(parent, "/");
	else
		parent[slash - parent] = '\0';
	if (stat(parent, &st) < 0) {
		ret = -errno;
		return errf(err, errlen, ret, "cannot create %s: %s", dir, strerror(errno));
	}
	shared = st.st_mode & (S_IWGRP | S_IWOTH);

	if (mkdir(dir, shared ? CONTROL_DIR_MODE_SHARED : CONTROL_DIR_MODE) == 0)
		return 0;
	if (errno != EEXIST) {
		ret = -errno;
		return errf(err, errlen, ret, "cannot create %s: %s", dir, strerror(errno));
	}

	/*
	 * In a shared place, a directory (or a symbolic link) planted by someone else would
	 * let them replace our socket: it must be a real directory, ours, and closed to
	 * others, even with the sticky bit (the name of a socket that is not there yet is
	 * anyone's to take in a sticky directory).
	 */
	if (shared) {
		if (lstat(dir, &st) < 0) {
			ret = -errno;
			return errf(err, errlen, ret, "%s: %s", dir, strerror(errno));
		}
		if (!S_ISDIR(st.st_mode))
			return errf(err, errlen, -ENOTDIR, "%s: not a directory", dir);
		if (st.st_uid != geteuid())
			return errf(err, errlen, -EPERM, "%s: owned by uid %u, not by uid %u", dir,
				    (unsigned)st.st_uid, (unsigned)geteuid());
		if (st.st_mode & (S_IWGRP | S_IWOTH))
			return errf(err, errlen, -EPERM, "%s: writable by others (mode %04o)", dir,
				    (unsigned)(st.st_mode & 07777));
		return 0;
	}
	/*
	 * Elsewhere the existing directory (a symbolic link is followed) is the
	 * administrator's choice, within what control_dir_check() allows: whoever may
	 * remove our socket there could bind their own and receive the console's commands.
	 */
check:
	if (stat(dir, &st) < 0) {
		ret = -errno;
		return errf(err, errlen, ret, "%s: %s", dir, strerror(errno));
	}
	return control_dir_check(dir, &st, err, errlen);
}
