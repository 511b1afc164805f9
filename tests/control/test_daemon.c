// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_daemon - host/daemon.c: the pid file lock and the start-up report.
 *
 * Pid file: locked by us, refused to a child (and to a second open of our own, which is
 * what OFD locks give), removed by pidfile_unlock, then free for a child to take; never
 * through a link, onto a file not ours or in a directory others may write to.
 *
 * daemon_start: each scenario runs in a forked "starter" whose stderr is a capture
 * file. The starter calls daemon_start(), so it becomes the waiting parent and its exit
 * status is what the daemon reported; the daemon runs the scenario. Every process sets
 * an alarm so that nothing can hang the test run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "tap.h"

/* Seconds before a stuck test, starter or daemon is killed by SIGALRM. */
#define TEST_ALARM_S   60
#define CHILD_ALARM_S  20
#define WAIT_STEP_NS   10000000L
#define WAIT_STEPS_MAX 1000 /* 10 s */

/* Bytes a daemon writes to stderr to show that a full pipe cannot deadlock start-up. */
#define BIG_TEXT (256 * 1024)

/* The test's temporary directory and the paths in it (short: TMPDIR is ours to pick). */
#define DIR_MAX	  256
#define TPATH_MAX 512
static char dir[DIR_MAX];

static void path_in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Read a whole (small) file into buf as a string; "" when missing. */
static const char *slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

/* Wait until path exists (WAIT_STEPS_MAX steps); 0 or -ETIMEDOUT. */
static int wait_for(const char *path)
{
	struct timespec step = {0, WAIT_STEP_NS};

	for (int i = 0; i < WAIT_STEPS_MAX; i++) {
		if (!access(path, F_OK))
			return 0;
		nanosleep(&step, NULL);
	}
	return -ETIMEDOUT;
}

/* Exit status of a child, or -1 if it did not exit normally. */
static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Run pidfile_lock(path) in a child; its result comes back through a pipe with the
 * error message, or on success with what the file held while the child had the lock
 * (the child unlocks before it exits).
 */
static int lock_in_child(const char *path, char *msg, size_t msglen, long *child_pid)
{
	int p[2], r = -EPIPE;
	pid_t pid;

	msg[0] = '\0';
	if (pipe(p) < 0)
		return -errno;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char err[256] = "", pidbuf[32];
		int fd;

		alarm(CHILD_ALARM_S);
		close(p[0]);
		fd = pidfile_lock(path, err, sizeof(err));
		if (fd >= 0) {
			/* Report what the file holds while we hold the lock. */
			slurp(path, pidbuf, sizeof(pidbuf));
			snprintf(err, sizeof(err), "%s", pidbuf);
			pidfile_unlock(fd, path);
		}
		if (write(p[1], &fd, sizeof(fd)) != sizeof(fd) ||
		    write(p[1], err, strlen(err) + 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (pid > 0) {
		ssize_t n;

		if (read(p[0], &r, sizeof(r)) != sizeof(r))
			r = -EPIPE;
		n = read(p[0], msg, msglen - 1);
		msg[n > 0 ? n : 0] = '\0';
		wait_status(pid);
		*child_pid = pid;
	}
	close(p[0]);
	return r;
}

static void test_pidfile(void)
{
	char path[TPATH_MAX], buf[256], err[256], want[64];
	long child;
	int fd, fd2, r;

	path_in_dir(path, sizeof(path), "ib2roce.pid");

	fd = pidfile_lock(path, err, sizeof(err));
	CHECK(fd >= 0);
	snprintf(want, sizeof(want), "%d\n", (int)getpid());
	CHECK_STR(slurp(path, buf, sizeof(buf)), want);

	/* Another process: refused, with our pid and the path in the message. */
	r = lock_in_child(path, buf, sizeof(buf), &child);
	CHECK_EQ(r, -EEXIST);
	snprintf(want, sizeof(want), "another ib2roce (pid %d) is running (", (int)getpid());
	CHECK_HAS(buf, want);
	CHECK_HAS(buf, path);

	/* A second open in our own process conflicts too (an OFD lock, not a POSIX one). */
	fd2 = pidfile_lock(path, err, sizeof(err));
	CHECK_EQ(fd2, -EEXIST);
	if (fd2 >= 0)
		close(fd2);
	/* ... and the refused attempt did not drop our lock by closing its descriptor. */
	r = lock_in_child(path, buf, sizeof(buf), &child);
	CHECK_EQ(r, -EEXIST);

	pidfile_unlock(fd, path);
	CHECK(access(path, F_OK) < 0 && errno == ENOENT);

	/* Free again: a child takes it and finds its own pid in the file. */
	r = lock_in_child(path, buf, sizeof(buf), &child);
	CHECK(r >= 0);
	snprintf(want, sizeof(want), "%ld\n", child);
	CHECK_STR(buf, want);

	/* Errors name the path. */
	path_in_dir(path, sizeof(path), "no-such-dir/ib2roce.pid");
	r = pidfile_lock(path, err, sizeof(err));
	CHECK_EQ(r, -ENOENT);
	CHECK_HAS(err, "no-such-dir/ib2roce.pid: No such file or directory");
}

/*
 * The pid file is written by root: it must not follow a link planted by a user who may
 * write to its directory, nor truncate anything but a regular file of ours, and a
 * directory others may write to (without the sticky bit) is refused altogether.
 */
static void test_pidfile_safety(void)
{
	char path[TPATH_MAX], victim[TPATH_MAX], sub[TPATH_MAX], buf[256], err[256];
	struct stat st;
	int fd;

	path_in_dir(victim, sizeof(victim), "victim");
	path_in_dir(path, sizeof(path), "link.pid");
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, "precious\n", 9) == 9);
	if (fd >= 0)
		close(fd);

	/* A symbolic link to another file: refused, the file untouched. */
	CHECK_EQ(symlink(victim, path), 0);
	fd = pidfile_lock(path, err, sizeof(err));
	CHECK(fd < 0);
	if (fd >= 0)
		close(fd);
	CHECK_HAS(err, "symbolic link");
	CHECK_STR(slurp(victim, buf, sizeof(buf)), "precious\n");
	unlink(path);

	/* A hard link to it: refused as well. */
	CHECK_EQ(link(victim, path), 0);
	fd = pidfile_lock(path, err, sizeof(err));
	CHECK_EQ(fd, -EPERM);
	CHECK_HAS(err, "hard links");
	CHECK_STR(slurp(victim, buf, sizeof(buf)), "precious\n");
	unlink(path);

	/* Not a regular file (a FIFO would also block a plain open). */
	CHECK_EQ(mkfifo(path, 0644), 0);
	fd = pidfile_lock(path, err, sizeof(err));
	CHECK_EQ(fd, -EINVAL);
	CHECK_HAS(err, "not a regular file");
	unlink(path);

	/* Someone else's file (only root can make one to test with). */
	if (geteuid() == 0) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0 && fchown(fd, 65534, 65534) == 0);
		if (fd >= 0)
			close(fd);
		fd = pidfile_lock(path, err, sizeof(err));
		CHECK_EQ(fd, -EPERM);
		CHECK_HAS(err, "owned by uid 65534");
		unlink(path);
	}

	/* A directory others may write to: refused; with the sticky bit: fine. */
	path_in_dir(sub, sizeof(sub), "open");
	CHECK_EQ(mkdir(sub, 0700), 0);
	chmod(sub, 0777);
	path_in_dir(path, sizeof(path), "open/ib2roce.pid");
	fd = pidfile_lock(path, err, sizeof(err));
	CHECK_EQ(fd, -EPERM);
	CHECK_HAS(err, "writable by others (mode 0777)");
	CHECK(stat(path, &st) < 0 && errno == ENOENT);
	chmod(sub, 01777);
	fd = pidfile_lock(path, err, sizeof(err));
	CHECK(fd >= 0);
	if (fd >= 0)
		pidfile_unlock(fd, path);
	if (geteuid() == 0) {
		CHECK_EQ(chown(sub, 65534, 65534), 0);
		chmod(sub, 0755);
		fd = pidfile_lock(path, err, sizeof(err));
		CHECK_EQ(fd, -EPERM);
		CHECK_HAS(err, "owned by uid 65534");
	}
	rmdir(sub);
	unlink(victim);
}

enum scenario {
	REPORT_FAIL,   /* "boom" on stderr, status 5 */
	REPORT_OK,     /* status 0, keeps running, proves its setup in a marker file */
	NO_REPORT,     /* "dying" on stderr, exits without a report */
	REPORT_ONE,    /* status 1 reported: no "exited during start-up" message */
	BINARY_TEXT,   /* stderr bytes that look like status bytes, then status 7 */
	BIG_TEXT_FAIL, /* more stderr than a pipe holds, then status 4 */
};

/* What the daemon of REPORT_OK records about itself (cwd is / by then: full paths). */
static void daemon_facts(const char *marker)
{
	char tmp[TPATH_MAX + 8], cwd[PATH_MAX], in[PATH_MAX] = "", out[PATH_MAX] = "";
	mode_t mask = umask(0);
	FILE *f;

	umask(mask);
	if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "?");
	if (readlink("/proc/self/fd/0", in, sizeof(in) - 1) < 0)
		strcpy(in, "?");
	if (readlink("/proc/self/fd/1", out, sizeof(out) - 1) < 0)
		strcpy(out, "?");
	snprintf(tmp, sizeof(tmp), "%s.tmp", marker);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "pid=%d\nsession_leader=%d\numask=%03o\ncwd=%s\nstdin=%s\nstdout=%s\n",
		(int)getpid(), getsid(0) == getpid(), (unsigned)mask, cwd, in, out);
	fclose(f);
	rename(tmp, marker); /* the marker appears complete */
}

static __attribute__((noreturn)) void run_daemon(enum scenario sc, int fd)
{
	char marker[TPATH_MAX], go[TPATH_MAX];
	static char big[BIG_TEXT];

	alarm(CHILD_ALARM_S);
	switch (sc) {
	case REPORT_FAIL:
		fprintf(stderr, "boom\n");
		daemon_report(fd, 5);
		_exit(5);
	case REPORT_OK:
		fprintf(stderr, "starting fine\n");
		daemon_report(fd, 0);
		/* stderr is /dev/null now: this must not reach the starter's stderr. */
		fprintf(stderr, "after the report\n");
		/* Outlive the starter: the test says "go" once it has reaped it. */
		path_in_dir(go, sizeof(go), "go");
		path_in_dir(marker, sizeof(marker), "marker");
		if (wait_for(go) == 0)
			daemon_facts(marker);
		_exit(0);
	case NO_REPORT:
		fprintf(stderr, "dying\n");
		_exit(3);
	case REPORT_ONE:
		fprintf(stderr, "cannot open device\n");
		daemon_report(fd, 1);
		_exit(1);
	case BINARY_TEXT:
		if (write(STDERR_FILENO, "\0\5\1<", 4) != 4)
			_exit(9);
		daemon_report(fd, 7);
		_exit(7);
	case BIG_TEXT_FAIL:
		memset(big, 'b', sizeof(big));
		big[sizeof(big) - 1] = '\n';
		if (write(STDERR_FILENO, big, sizeof(big)) != (ssize_t)sizeof(big))
			_exit(9);
		daemon_report(fd, 4);
		_exit(4);
	}
	_exit(99);
}

/*
 * Fork a starter that calls daemon_start() with its stderr in capture (truncated
 * first); returns the starter's exit status and leaves its pid in *starter.
 */
static int start_scenario(enum scenario sc, const char *capture, pid_t *starter)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char err[256];
		int out, fd;

		alarm(CHILD_ALARM_S);
		out = open(capture, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (out < 0 || dup2(out, STDERR_FILENO) < 0)
			_exit(98);
		fd = daemon_start(err, sizeof(err));
		if (fd < 0)
			_exit(97); /* daemon_start failed without forking */
		run_daemon(sc, fd);
	}
	*starter = pid;
	return pid < 0 ? -1 : wait_status(pid);
}

static void test_daemon_start(void)
{
	static char buf[2 * BIG_TEXT];
	char capture[TPATH_MAX], marker[TPATH_MAX], go[TPATH_MAX], want[64];
	const char *text;
	pid_t starter;
	int fd;

	path_in_dir(capture, sizeof(capture), "stderr");
	path_in_dir(marker, sizeof(marker), "marker");
	path_in_dir(go, sizeof(go), "go");

	/* A failed start: the starter exits with the status, the text reached stderr. */
	CHECK_EQ(start_scenario(REPORT_FAIL, capture, &starter), 5);
	text = slurp(capture, buf, sizeof(buf));
	CHECK_STR(text, "boom\n");

	/* A good start: exit 0 while the daemon keeps running, set up as documented. */
	CHECK_EQ(start_scenario(REPORT_OK, capture, &starter), 0);
	CHECK_STR(slurp(capture, buf, sizeof(buf)), "starting fine\n");
	fd = open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ(wait_for(marker), 0);
	text = slurp(marker, buf, sizeof(buf));
	snprintf(want, sizeof(want), "pid=%d\n", (int)starter);
	CHECK(strstr(text, "pid=") && !strstr(text, want)); /* not the starter */
	CHECK_HAS(text, "session_leader=0\n");
	CHECK_HAS(text, "umask=027\n");
	CHECK_HAS(text, "cwd=/\n");
	CHECK_HAS(text, "stdin=/dev/null\n");
	CHECK_HAS(text, "stdout=/dev/null\n");
	/* After the report the daemon's stderr no longer goes to the starter's. */
	CHECK(!strstr(slurp(capture, buf, sizeof(buf)), "after the report"));

	/* A daemon that dies without a report: 1 and the message, after its own text. */
	CHECK_EQ(start_scenario(NO_REPORT, capture, &starter), 1);
	CHECK_STR(slurp(capture, buf, sizeof(buf)),
		  "dying\nib2roce: the daemon exited during start-up\n");

	/* Status 1 reported on purpose: no claim that the daemon died. */
	CHECK_EQ(start_scenario(REPORT_ONE, capture, &starter), 1);
	CHECK_STR(slurp(capture, buf, sizeof(buf)), "cannot open device\n");

	/* Text cannot pass for the status: bytes 0, 5, 1 on stderr are copied as text. */
	CHECK_EQ(start_scenario(BINARY_TEXT, capture, &starter), 7);
	slurp(capture, buf, sizeof(buf));
	CHECK(!memcmp(buf, "\0\5\1<", 4));

	/* More text than a pipe buffers is all copied, without a deadlock. */
	CHECK_EQ(start_scenario(BIG_TEXT_FAIL, capture, &starter), 4);
	{
		struct stat st;

		CHECK(!stat(capture, &st) && st.st_size == BIG_TEXT);
	}
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	alarm(TEST_ALARM_S);
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(dir, sizeof(dir), "%s/test_daemon.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp %s: %s\n", dir, strerror(errno));
		return 1;
	}
	test_pidfile();
	test_pidfile_safety();
	test_daemon_start();

	/* Clean up what the scenarios left (files only, then the directory). */
	{
		static const char *const names[] = {"stderr", "marker", "go", "ib2roce.pid"};
		char p[TPATH_MAX];

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			path_in_dir(p, sizeof(p), names[i]);
			unlink(p);
		}
		rmdir(dir);
	}
	return tap_done();
}
