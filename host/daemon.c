// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Daemonizing with a start-up report, and the pid file lock (host/daemon.h).
 *
 * Report framing: two pipes. The daemon's stderr is the write end of the "text" pipe
 * until daemon_report(), so whatever it prints while starting (option and device
 * errors, from any code that writes to stderr) reaches the user's terminal through the
 * waiting parent, byte for byte. The status travels on a separate "status" pipe as one
 * byte, written once by daemon_report(). Keeping them apart means no text can ever be
 * mistaken for the status or hide it, and no framing or escaping is needed: EOF on the
 * status pipe without a byte means the daemon died before reporting.
 *
 * The parent copies text as it arrives. Once the status pipe answers (a byte or EOF) it
 * takes what is left in the text pipe without blocking and exits: text written before
 * the report is already in the pipe, and waiting for the text pipe's EOF could hang if
 * the daemon had handed its stderr to some other process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "paths.h"

/* Status the parent returns when the daemon ended without daemon_report(). */
#define DAEMON_NO_REPORT 1

/* How long a losing pidfile_lock() waits for the winner to write its pid. */
#define PIDFILE_READ_TRIES    50
#define PIDFILE_READ_PAUSE_NS 2000000L

/* Write all of buf to fd; used where stdio must not be (after fork, for raw bytes). */
static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/*
 * Copy one chunk of what is readable on fd to stderr. Returns 1 when it copied, 0 when
 * the pipe is empty for now (EAGAIN, EINTR), -1 at EOF or on an error.
 */
static int copy_text(int fd)
{
	char buf[4096];
	ssize_t n;

	n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	write_all(STDERR_FILENO, buf, (size_t)n);
	return 1;
}

/*
 * The process that called daemon_start(): relay the daemon's start-up text and exit
 * with its status. _exit, not exit: atexit handlers and stdio buffers belong to the
 * daemon now (buffers were flushed before the fork).
 */
static __attribute__((noreturn)) void daemon_wait(pid_t child, int text, int status)
{
	struct pollfd pfd[2] = {{.fd = status, .events = POLLIN}, {.fd = text, .events = POLLIN}};
	bool text_open = true, reported = false;
	unsigned char code = DAEMON_NO_REPORT;

	/* The first child exits as soon as it has forked the daemon: reap it. */
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	for (;;) {
		ssize_t n;

		if (poll(pfd, text_open ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (text_open && pfd[1].revents)
			text_open = copy_text(text) >= 0;
		if (!pfd[0].revents)
			continue;
		n = read(status, &code, 1);
		if (n < 0 && errno == EINTR)
			continue;
		reported = n == 1;
		break;
	}
	/* Text written before the report is in the pipe already; take it, don't wait. */
	if (text_open && fcntl(text, F_SETFL, O_NONBLOCK) == 0)
		while (copy_text(text) > 0)
			;
	if (!reported) {
		static const char msg[] = "ib2roce: the daemon exited during start-up\n";

		write_all(STDERR_FILENO, msg, sizeof(msg) - 1);
		code = DAEMON_NO_REPORT;
	}
	_exit(code);
}

/* The daemon could not set itself up after the fork: say why on the pipe and die. */
static __attribute__((noreturn)) void daemon_fail(int status_fd, const char *what)
{
	char msg[256];
	int len = snprintf(msg, sizeof(msg), "ib2roce: %s: %s\n", what, strerror(errno));

	if (len > 0)
		write_all(STDERR_FILENO, msg,
			  (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1);
	daemon_report(status_fd, 1);
	_exit(1);
}

/*
 * Make sure descriptors 0, 1 and 2 are open (on /dev/null if they were closed when we
 * were started), so that the pipes below never get one of them: the daemon later points
 * 0 and 1 at /dev/null and 2 at a pipe, which would silently replace them.
 */
static int daemon_fill_std_fds(void)
{
	int fd;

	do {
		fd = open("/dev/null", O_RDWR);
	} while (fd >= 0 && fd <= STDERR_FILENO);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int daemon_start(char *err, size_t errlen)
{
	int text[2], status[2], null_fd, ret;
	pid_t pid;

	ret = daemon_fill_std_fds();
	if (ret) {
		snprintf(err, errlen, "/dev/null: %s", strerror(-ret));
		return ret;
	}
	if (pipe2(text, O_CLOEXEC) < 0) {
		ret = -errno;
		snprintf(err, errlen, "report pipe: %s", strerror(-ret));
		return ret;
	}
	if (pipe2(status, O_CLOEXEC) < 0) {
		ret = -errno;
		snprintf(err, errlen, "report pipe: %s", strerror(-ret));
		goto close_text;
	}
	/* Whatever sits in stdio buffers would otherwise be written by both processes. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		snprintf(err, errlen, "fork: %s", strerror(-ret));
		goto close_status;
	}
	if (pid > 0) {
		close(text[1]);
		close(status[1]);
		daemon_wait(pid, text[0], status[0]);
	}

	/* First child: a new session without a controlling terminal. */
	close(text[0]);
	close(status[0]);
	if (dup2(text[1], STDERR_FILENO) < 0)
		_exit(DAEMON_NO_REPORT);
	if (setsid() < 0)
		daemon_fail(status[1], "setsid");
	/*
	 * A session leader that opens a terminal acquires it as its controlling terminal;
	 * the daemon is the leader's child and so never can (it opens no terminal, but a
	 * device path in a config file could name one).
	 */
	pid = fork();
	if (pid < 0)
		daemon_fail(status[1], "fork");
	if (pid > 0)
		_exit(0);

	/*
	 * The daemon. Files it creates are not world-readable; it holds no directory.
	 * SIGPIPE is ignored: if the waiting parent is killed (Ctrl-C during start-up),
	 * writes to stderr and the report must fail with EPIPE, not kill the daemon; the
	 * same holds later for console clients that hang up.
	 */
	signal(SIGPIPE, SIG_IGN);
	umask(027);
	if (chdir("/") < 0)
		daemon_fail(status[1], "chdir /");
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0)
		daemon_fail(status[1], "/dev/null");
	if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0)
		daemon_fail(status[1], "dup2 /dev/null");
	if (null_fd > STDERR_FILENO)
		close(null_fd);
	/* stderr (fd 2, not close-on-exec after dup2) stays the text pipe until the report. */
	close(text[1]);
	return status[1];

close_status:
	close(status[0]);
	close(status[1]);
close_text:
	close(text[0]);
	close(text[1]);
	return ret;
}

void daemon_report(int fd, int status)
{
	unsigned char code = status < 0 || status > 255 ? 1 : (unsigned char)status;
	int null_fd;

	if (fd < 0)
		return;
	/*
	 * Close the text pipe first (stderr onto /dev/null): everything written to stderr
	 * so far is then in the pipe ahead of the status, and nothing later can block on a
	 * pipe whose reader has gone.
	 */
	fflush(stderr);
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd >= 0) {
		dup2(null_fd, STDERR_FILENO);
		close(null_fd);
	}
	write_all(fd, &code, 1);
	close(fd);
}

/* Read the pid written by the lock's holder; 0 when there is none (yet). */
static long pidfile_read(int fd)
{
	char buf[32];
	ssize_t n;
	char *end;
	long pid;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	if (end == buf || *end != '\n' || pid <= 0)
		return 0;
	return pid;
}

static int pidfile_busy(int fd, const char *path, char *err, size_t errlen)
{
	struct timespec pause = {0, PIDFILE_READ_PAUSE_NS};
	long pid = 0;

	/* The holder truncates and writes just after locking: give it a moment. */
	for (int i = 0; i < PIDFILE_READ_TRIES && !(pid = pidfile_read(fd)); i++)
		nanosleep(&pause, NULL);
	if (pid)
		snprintf(err, errlen, "another ib2roce (pid %ld) is running (%s)", pid, path);
	else
		snprintf(err, errlen, "another ib2roce is running (%s)", path);
	return -EEXIST;
}

/*
 * Why OFD locks (F_OFD_SETLK) rather than classic POSIX record locks (F_SETLK): a POSIX
 * lock belongs to the process and is dropped when the process closes *any* descriptor
 * of the file (a library or console command that merely reads the pid file would
 * release it), and it means nothing between threads. An OFD lock belongs to the open
 * file description: it lasts until the last descriptor of that open is closed, and a
 * second open of the file, even in the same process, conflicts with it. Descriptors
 * shared by fork keep the lock, which is why the file is opened O_CLOEXEC and why
 * pidfile_lock() runs in the daemon, after daemon_start(): no exec'd program and no
 * short-lived start-up process holds the lock by accident. flock() would behave alike
 * but is not reliable on NFS; fcntl locks are.
 */
/*
 * Open the directory that holds path and check that others cannot replace entries in
 * it (control_dir_check). Returns the directory's fd and points *base at the file's
 * name, or -errno with a message.
 */
static int pidfile_dir_open(const char *path, const char **base, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;
	int dfd, ret;

	if (!slash) {
		strcpy(dir, ".");
		*base = path;
	} else {
		size_t n = (size_t)(slash - path);

		while (n && path[n - 1] == '/')
			n--;
		if (n >= sizeof(dir)) {
			snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
		memcpy(dir, path, n);
		dir[n] = '\0';
		if (!n)
			strcpy(dir, "/");
		*base = slash + 1;
	}
	if (!**base) {
		snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
		return -EISDIR;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(dfd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		close(dfd);
		return ret;
	}
	ret = control_dir_check(dir, &st, err, errlen);
	if (ret) {
		/* "pid file DIR: reason": which of the bridge's files is meant. */
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "pid file %s: directory %s", path, why);
		close(dfd);
		return ret;
	}
	return dfd;
}

/*
 * Is the open pid file a file we may truncate? A regular file, ours, with no other
 * name (a hard link planted in a sticky directory would make us overwrite its target).
 */
static int pidfile_check(int fd, const char *path, struct stat *st, char *err, size_t errlen)
{
	if (fstat(fd, st) < 0) {
		int ret = -errno;

		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "pid file %s: not a regular file", path);
		return -EINVAL;
	}
	if (st->st_uid != geteuid()) {
		snprintf(err, errlen, "pid file %s: owned by uid %u, not by uid %u", path,
			 (unsigned)st->st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st->st_nlink != 1) {
		snprintf(err, errlen, "pid file %s: has %lu names (hard links)", path,
			 (unsigned long)st->st_nlink);
		return -EPERM;
	}
	return 0;
}

/*
 * Why OFD locks (F_OFD_SETLK) rather than classic POSIX record locks (F_SETLK): a POSIX
 * lock belongs to the process and is dropped when the process closes *any* descriptor
 * of the file (a library or console command that merely reads the pid file would
 * release it), and it means nothing between threads. An OFD lock belongs to the open
 * file description: it lasts until the last descriptor of that open is closed, and a
 * second open of the file, even in the same process, conflicts with it. Descriptors
 * shared by fork keep the lock, which is why the file is opened O_CLOEXEC and why
 * pidfile_lock() runs in the daemon, after daemon_start(): no exec'd program and no
 * short-lived start-up process holds the lock by accident. flock() would behave alike
 * but is not reliable on NFS; fcntl locks are.
 *
 * The bridge runs as root: the file is opened relative to its checked directory,
 * without following a symbolic link (O_NOFOLLOW) and without blocking (a FIFO planted
 * there), and must be a regular file of ours before it is truncated.
 */
int pidfile_lock(const char *path, char *err, size_t errlen)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	struct stat fst, pst;
	const char *base;
	char buf[24];
	int dfd, fd, ret, len;

	dfd = pidfile_dir_open(path, &base, err, errlen);
	if (dfd < 0)
		return dfd;
	for (;;) {
		fd = openat(dfd, base, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			    0644);
		if (fd < 0) {
			ret = -errno;
			if (ret == -ELOOP) {
				snprintf(err, errlen, "pid file %s: is a symbolic link", path);
				close(dfd);
				return ret;
			}
			goto fail;
		}
		ret = pidfile_check(fd, path, &fst, err, errlen);
		if (ret) {
			close(fd);
			close(dfd);
			return ret;
		}
		if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
			ret = -errno;
			if (ret == -EAGAIN || ret == -EACCES) {
				ret = pidfile_busy(fd, path, err, errlen);
				close(fd);
				close(dfd);
				return ret;
			}
			goto fail_close;
		}
		/*
		 * The previous holder unlinks the file before it lets go of the lock: if we
		 * opened the old file just before that, we now hold a lock on a file nobody
		 * else will open. Only a lock on the file that path names counts.
		 */
		memset(&pst, 0, sizeof(pst));
		if (fstatat(dfd, base, &pst, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
			ret = -errno;
			goto fail_close;
		}
		if (pst.st_dev == fst.st_dev && pst.st_ino == fst.st_ino)
			break;
		close(fd);
	}
	close(dfd);
	dfd = -1;
	if (ftruncate(fd, 0) < 0) {
		ret = -errno;
		goto fail_close;
	}
	len = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	errno = 0;
	if (pwrite(fd, buf, (size_t)len, 0) != len) {
		ret = errno ? -errno : -EIO;
		goto fail_close;
	}
	return fd;

fail_close:
	close(fd);
fail:
	if (dfd >= 0)
		close(dfd);
	snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	return ret;
}

void pidfile_unlock(int fd, const char *path)
{
	if (fd < 0)
		return;
	/* Unlink while still holding the lock, so no one locks a file about to vanish. */
	unlink(path);
	close(fd);
}
