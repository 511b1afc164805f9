/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Where a bridge's control socket and pid file live (shared by ib2roce and bcom).
 *
 * Default control socket: /run/ib2roce/ib2roce.sock for root or under systemd (the
 * environment has NOTIFY_SOCKET or INVOCATION_ID); else $XDG_RUNTIME_DIR/ib2roce.sock;
 * without XDG_RUNTIME_DIR, /tmp/ib2roce-UID/ib2roce.sock. The pid file is the socket's
 * path with ".sock" replaced by ".pid" (".pid" appended when it does not end in ".sock"),
 * so that `--control PATH` alone keeps instances apart.
 */
#ifndef LIB_PATHS_H
#define LIB_PATHS_H

#include <stddef.h>
#include <sys/stat.h>

/* Maximum length of a control socket path (sun_path, with its terminator). */
#define CONTROL_PATH_MAX 108

/*
 * The default control socket path into buf. Uses geteuid() and the environment (an
 * XDG_RUNTIME_DIR that is not absolute is ignored, empty variables count as unset).
 * 0, or -ENAMETOOLONG (the path does not fit in len or in sun_path); buf is not
 * changed on failure.
 */
int control_default_path(char *buf, size_t len);

/*
 * The pid file that belongs to a control socket path; buf may be sock itself.
 * 0, or -ENAMETOOLONG (buf unchanged).
 */
int control_pid_path(const char *sock, char *buf, size_t len);

/*
 * May files that others must not replace (the control socket, the pid file) live in
 * the directory dir, whose stat is st? It must be a directory owned by root or by the
 * effective uid, and not group or world writable unless it has the sticky bit (then
 * only an entry's owner may remove or rename it). 0, or -ENOTDIR / -EPERM with
 * "DIR: reason" in err (err may be NULL). Any thread; no system call.
 */
int control_dir_check(const char *dir, const struct stat *st, char *err, size_t errlen);

/*
 * Create the directory that holds path (one level, mode 0750 for /run/ib2roce and
 * 0700 for /tmp/ib2roce-UID), or check the existing one. 0 or -errno with a message.
 *
 * In a shared place (a directory whose parent is group or world writable, like /tmp)
 * it is made 0700, and an existing one must be a real directory (not a symbolic link),
 * owned by the effective uid, and not group or world writable (-ENOTDIR, -EPERM).
 * Elsewhere it is made 0750, and an existing one (the current directory for a path
 * without one, "/" for a path directly in /) must pass control_dir_check(). err may
 * be NULL.
 */
int control_make_dir(const char *path, char *err, size_t errlen);

/*
 * path as an absolute path into buf: unchanged when it starts with '/', else the current
 * directory, '/' and path. A daemon changes to "/" after its start, so a file named on
 * its command line relative to where it was started (a console socket, a pid file, a
 * metrics file) is made absolute at parse time and stays the same file. Lexical: no
 * symbolic link is resolved, "." and ".." are kept. 0, -ENAMETOOLONG (buf unchanged),
 * or -errno of getcwd (a directory removed since).
 */
int path_absolute(const char *path, char *buf, size_t len);

#endif /* LIB_PATHS_H */
