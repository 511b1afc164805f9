/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Running in the background: daemonizing with a start-up report to the parent, and the
 * pid file lock that keeps a second instance from starting.
 */
#ifndef CONTROL_DAEMON_H
#define CONTROL_DAEMON_H

#include <stddef.h>

/*
 * daemon_start - fork into the background before any device is opened. The parent
 * waits until the child reports (daemon_report) and exits with the reported status
 * (0 = started; the child's status otherwise; 1 if the child died without a report),
 * after copying what the child wrote to the report pipe to stderr (start-up errors).
 * The child: new session (setsid), second fork so it cannot re-acquire a terminal,
 * umask 027, chdir /, stdin/stdout to /dev/null, SIGPIPE ignored (a parent killed during
 * start-up must not take the daemon with it); stderr is the report pipe until
 * daemon_report. The status travels on a pipe of its own (one byte), so nothing written
 * to stderr can be taken for it. Main thread, before any other thread exists. Returns
 * in the child: the report fd (>= 0), or -errno with a message (in the process that
 * called it, nothing forked then).
 */
int daemon_start(char *err, size_t errlen);

/*
 * daemon_report - in the child: point stderr at /dev/null, then tell the parent the
 * start-up result (0 = running, else the exit status 1..255 it should return; values
 * outside 0..255 become 1) and close fd. Does nothing for fd < 0, so it can be called
 * unconditionally when the bridge did not daemonize.
 */
void daemon_report(int fd, int status);

/*
 * pidfile_lock - create/open path (mode 0644, close-on-exec), take an exclusive
 * non-blocking fcntl (OFD) lock over it and write our pid. Call it in the daemon, after
 * daemon_start(), so the pid is the daemon's. The lock belongs to the open file, not to
 * the process: a second pidfile_lock() of the same path fails even in this process.
 * The directory must pass control_dir_check() (paths.h: root's or ours, not writable by
 * others without the sticky bit); the file is opened without following a symbolic link
 * and must be a regular file owned by the effective uid with one name; else -EPERM,
 * -ENOTDIR, -ELOOP or -EINVAL with "pid file PATH: reason". Returns the fd (keep it
 * open while running), or -EEXIST with "another ib2roce (pid N) is running (PATH)" when
 * locked by another process, or -errno with "PATH: <strerror>".
 */
int pidfile_lock(const char *path, char *err, size_t errlen);

/* pidfile_unlock - remove path and close fd (at exit, while still holding the lock). */
void pidfile_unlock(int fd, const char *path);

#endif /* CONTROL_DAEMON_H */
