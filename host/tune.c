// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * tune.c - the host tuning report (tune.h) and the cpu_dma_latency feature.
 *
 * Every check reads kernel files as text under the root prefix, so that a test (or an
 * audit of another host) can point it at a directory holding copies of them. The files:
 *   /sys/devices/system/cpu/{online,isolated,nohz_full}     CPU lists
 *   /proc/cmdline                                           rcu_nocbs=
 *   /sys/devices/system/cpu/cpuN/topology/thread_siblings_list, cpuN/online
 *   /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor
 *   /sys/devices/system/cpu/cpuN/cpuidle/stateK/{name,latency,disable}
 *   /sys/devices/system/node/nodeK/cpulist, <ibdev_path>/device/numa_node
 *   <ibdev_path>/device/msi_irqs/N, else /proc/interrupts lines naming the PCI device
 *   /proc/irq/N/smp_affinity_list, /proc/PID/comm (irqbalance), /etc/default/irqbalance
 *   /dev/cpu_dma_latency (a 32-bit value: the current PM QoS CPU latency limit in us)
 *   /sys/kernel/mm/transparent_hugepage/enabled, /proc/swaps, /proc/sys/vm/swappiness,
 *   /proc/sys/kernel/sched_rt_runtime_us, /proc/sys/kernel/timer_migration
 * Only the memlock limit and CAP_IPC_LOCK are the process's own (tune_input_init).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "options.h"
#include "tune.h"

/* Deepest idle-state exit latency (us) a worker CPU may reach and still PASS: C1. */
#define TUNE_CSTATE_MAX_US 2
#define TUNE_CPU_PATH	   "/sys/devices/system/cpu"
#define TUNE_QOS_PATH	   "/dev/cpu_dma_latency"

/* Module state: the root prefix and the PM QoS request (main/control thread). */
static struct {
	char root[256];
	int qos_fd; /* /dev/cpu_dma_latency while cpu_dma_latency is on, else -1 */
	_Atomic int64_t qos_on;
} tune = {.qos_fd = -1};

const char *tune_root(void)
{
	return tune.root;
}

/* ---- cpu_dma_latency and --tune-root ---- */

static int apply_qos(void *ctx, int64_t value, char *err, size_t len)
{
	char path[sizeof(tune.root) + sizeof(TUNE_QOS_PATH)];
	int32_t zero = 0;
	int fd;

	(void)ctx;
	if (!value) {
		if (tune.qos_fd >= 0)
			close(tune.qos_fd);
		tune.qos_fd = -1;
		return 0;
	}
	if (tune.qos_fd >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s%s", tune.root, TUNE_QOS_PATH);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return opt_errf(err, len, -errno, "%s: %s", path, strerror(errno));
	/* The kernel takes a binary s32 (or a hex string); the request lives while the
	 * file is open. */
	if (write(fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero)) {
		int e = errno ? errno : EIO;

		close(fd);
		return opt_errf(err, len, -e, "%s: write: %s", path, strerror(e));
	}
	tune.qos_fd = fd;
	return 0;
}

static int opt_tune_root(void *ctx, const char *arg, char *err, size_t len)
{
	(void)ctx;
	if (!*arg)
		return opt_errf(err, len, -EINVAL, "empty directory");
	if (strlen(arg) >= sizeof(tune.root))
		return opt_errf(err, len, -EINVAL, "directory name too long (max %zu bytes)",
				sizeof(tune.root) - 1);
	if (tune.qos_fd >= 0)
		return opt_errf(err, len, -EINVAL,
				"give --tune-root before --enable cpu_dma_latency");
	strcpy(tune.root, arg);
	/* "/" and "dir/" read the same files as "" and "dir". */
	for (size_t n = strlen(tune.root); n && tune.root[n - 1] == '/'; n--)
		tune.root[n - 1] = 0;
	return 0;
}

int tune_register(void)
{
	const struct opt_def root = {
		"tune-root",
		0,
		"dir",
		false,
		"for tests and audits: read /sys, /proc, /etc, /dev below DIR (a copy of another "
		"host's files)",
		opt_tune_root,
		NULL,
		false};
	const struct feat_def qos = {
		"cpu_dma_latency",
		FEAT_BOOL,
		"hold /dev/cpu_dma_latency at 0 us while running: no deep C-states",
		0,
		0,
		0,
		false,
		0,
		false,
		0,
		&tune.qos_on,
		true,
		apply_qos,
		NULL};
	int r = opt_register(&root);

	return r ? r : feat_register(&qos);
}

void tune_release(void)
{
	if (tune.qos_fd >= 0)
		close(tune.qos_fd);
	tune.qos_fd = -1;
}

/* ---- Reading the files ---- */

/* Read <root><path> into buf (trailing white space removed). 0 or -errno. */
static int __attribute__((format(printf, 4, 5)))
read_text(const struct tune_input *in, char *buf, size_t len, const char *fmt, ...)
{
	char rel[512], path[800];
	va_list ap;
	ssize_t n;
	int fd;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s%s", in->root, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = 0;
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = 0;
	return 0;
}

static int read_long(const struct tune_input *in, long *v, const char *path)
{
	char buf[64], *end;
	int r = read_text(in, buf, sizeof(buf), "%s", path);

	if (r)
		return r;
	errno = 0;
	*v = strtol(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

/* "0-3,8,10-11" (also "(null)" or empty: no CPU) into set. 0 or -EINVAL. */
static int cpulist_parse(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	if (!strcmp(s, "(null)"))
		return 0;
	while (*s && !isspace((unsigned char)*s)) {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;

		if (end == s || lo < 0)
			return -EINVAL;
		if (*end == '-') {
			s = end + 1;
			hi = strtol(s, &end, 10);
			if (end == s || hi < lo)
				return -EINVAL;
		}
		for (long c = lo; c <= hi && c < CPU_SETSIZE; c++)
			CPU_SET((int)c, set);
		s = end;
		if (*s == ',')
			s++;
		else if (*s && !isspace((unsigned char)*s))
			return -EINVAL;
	}
	return 0;
}

/* The CPU list in a file; an unreadable file is an empty set. 0 or -errno. */
static int read_cpulist(const struct tune_input *in, cpu_set_t *set, const char *path)
{
	char buf[4096];
	int r = read_text(in, buf, sizeof(buf), "%s", path);

	CPU_ZERO(set);
	return r ? r : cpulist_parse(buf, set);
}

/* set as "0-3,8" ("none" when empty). */
static void cpulist_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int e = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "",
						 c);
		if (e > c && used < len)
			used += (size_t)snprintf(buf + used, len - used, "-%d", e);
		c = e;
	}
	if (!used)
		snprintf(buf, len, "none");
}

/* ---- The report ---- */

/* Append to buf (len bytes, *used of them taken); stops quietly when full. */
static void __attribute__((format(printf, 4, 5)))
appendf(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

/* "CPU" or "CPUs", as the set holds one or more. */
static const char *cpus_word(const cpu_set_t *set)
{
	return CPU_COUNT(set) == 1 ? "CPU" : "CPUs";
}

static void __attribute__((format(printf, 6, 7)))
add(struct tune_report *r, const char *check, const char *target, enum tune_status st,
    const char *fix, const char *fmt, ...)
{
	struct tune_line *l;
	va_list ap;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct tune_line *v = realloc(r->lines, cap * sizeof(*v));

		if (!v) {
			r->cap = SIZE_MAX; /* remembered as out of memory */
			return;
		}
		r->lines = v;
		r->cap = cap;
	}
	l = &r->lines[r->n++];
	snprintf(l->check, sizeof(l->check), "%s", check);
	snprintf(l->target, sizeof(l->target), "%s", target);
	l->status = st;
	va_start(ap, fmt);
	vsnprintf(l->detail, sizeof(l->detail), fmt, ap);
	va_end(ap);
	snprintf(l->fix, sizeof(l->fix), "%s", fix ? fix : "");
	r->count[st]++;
}

/* The CPUs the host has online, minus the workers: where IRQs and the control belong. */
static void housekeeping(const struct tune_input *in, cpu_set_t *hk)
{
	cpu_set_t online;

	if (read_cpulist(in, &online, TUNE_CPU_PATH "/online") || !CPU_COUNT(&online))
		CPU_OR(&online, &online, &in->control);
	CPU_XOR(hk, &online, &in->workers);
	CPU_AND(hk, hk, &online);
}

/* isolcpus, nohz_full and rcu_nocbs for every worker CPU. */
static void check_isolation(const struct tune_input *in, struct tune_report *r)
{
	char wl[256], fix[320], cmdline[4096], target[24];
	cpu_set_t iso, nohz, nocb;
	const char *p;

	cpulist_format(&in->workers, wl, sizeof(wl));
	read_cpulist(in, &iso, TUNE_CPU_PATH "/isolated");
	read_cpulist(in, &nohz, TUNE_CPU_PATH "/nohz_full");
	CPU_ZERO(&nocb);
	if (!read_text(in, cmdline, sizeof(cmdline), "/proc/cmdline")) {
		for (p = cmdline; (p = strstr(p, "rcu_nocbs=")); p++)
			if (p == cmdline || p[-1] == ' ')
				cpulist_parse(p + strlen("rcu_nocbs="), &nocb);
	}
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &in->workers))
			continue;
		snprintf(target, sizeof(target), "cpu%d", c);
		snprintf(fix, sizeof(fix), "kernel parameter isolcpus=managed_irq,domain,%s", wl);
		if (CPU_ISSET(c, &iso))
			add(r, "isolcpus", target, TUNE_PASS, NULL, "isolated");
		else
			add(r, "isolcpus", target, TUNE_WARN, fix,
			    "not isolated: the scheduler may run other tasks here");
		snprintf(fix, sizeof(fix), "kernel parameter nohz_full=%s", wl);
		if (CPU_ISSET(c, &nohz))
			add(r, "nohz_full", target, TUNE_PASS, NULL, "tick stopped while busy");
		else
			add(r, "nohz_full", target, TUNE_WARN, fix,
			    "not nohz_full: timer tick interrupts the worker");
		snprintf(fix, sizeof(fix), "kernel parameter rcu_nocbs=%s", wl);
		if (CPU_ISSET(c, &nocb))
			add(r, "rcu_nocbs", target, TUNE_PASS, NULL, "RCU callbacks offloaded");
		else if (CPU_ISSET(c, &nohz))
			add(r, "rcu_nocbs", target, TUNE_PASS, NULL,
			    "RCU callbacks offloaded (implied by nohz_full)");
		else
			add(r, "rcu_nocbs", target, TUNE_WARN, fix,
			    "RCU callbacks run on this CPU");
	}
}

/* An SMT sibling of a worker: another worker (FAIL), online (WARN), offline (PASS). */
static void check_smt(const struct tune_input *in, struct tune_report *r)
{
	char buf[256], target[24], fix[320], detail[160];

	for (int c = 0; c < CPU_SETSIZE; c++) {
		cpu_set_t sib;
		enum tune_status st = TUNE_PASS;
		size_t used = 0;

		if (!CPU_ISSET(c, &in->workers))
			continue;
		snprintf(target, sizeof(target), "cpu%d", c);
		if (read_text(in, buf, sizeof(buf),
			      TUNE_CPU_PATH "/cpu%d/topology/thread_siblings_list", c) ||
		    cpulist_parse(buf, &sib)) {
			add(r, "smt", target, TUNE_WARN, NULL,
			    "topology unknown (no %s/cpu%d/topology)", TUNE_CPU_PATH, c);
			continue;
		}
		CPU_CLR(c, &sib);
		fix[0] = detail[0] = 0;
		for (int s = 0; s < CPU_SETSIZE; s++) {
			char path[96];
			long online;

			if (!CPU_ISSET(s, &sib))
				continue;
			if (CPU_ISSET(s, &in->workers)) {
				st = TUNE_FAIL;
				appendf(detail, sizeof(detail), &used,
					"%ssibling cpu%d is a worker too", used ? "; " : "", s);
				snprintf(fix, sizeof(fix), "--cpus with one CPU per core");
				continue;
			}
			/* No online file: the CPU cannot be taken offline (often cpu0). */
			snprintf(path, sizeof(path), TUNE_CPU_PATH "/cpu%d/online", s);
			if (read_long(in, &online, path))
				online = 1;
			if (!online) {
				appendf(detail, sizeof(detail), &used, "%ssibling cpu%d offline",
					used ? "; " : "", s);
				continue;
			}
			if (st == TUNE_PASS)
				st = TUNE_WARN;
			appendf(detail, sizeof(detail), &used, "%ssibling cpu%d online%s",
				used ? "; " : "", s,
				CPU_ISSET(s, &in->control) ? " (control thread may run there)"
							   : "");
			if (!fix[0])
				snprintf(fix, sizeof(fix),
					 "echo 0 > " TUNE_CPU_PATH "/cpu%d/online", s);
		}
		add(r, "smt", target, st, fix, "%s", used ? detail : "no SMT sibling");
	}
}

/* The frequency governor of every worker CPU. */
static void check_governor(const struct tune_input *in, struct tune_report *r)
{
	char gov[64], target[24], fix[200];

	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &in->workers))
			continue;
		snprintf(target, sizeof(target), "cpu%d", c);
		if (read_text(in, gov, sizeof(gov), TUNE_CPU_PATH "/cpu%d/cpufreq/scaling_governor",
			      c)) {
			add(r, "governor", target, TUNE_PASS, NULL,
			    "no cpufreq driver (frequency set by firmware)");
			continue;
		}
		snprintf(fix, sizeof(fix),
			 "echo performance > " TUNE_CPU_PATH "/cpu%d/cpufreq/scaling_governor", c);
		if (!strcmp(gov, "performance"))
			add(r, "governor", target, TUNE_PASS, NULL, "performance");
		else
			add(r, "governor", target, TUNE_WARN, fix, "%s: frequency drops when idle",
			    gov);
	}
}

/*
 * The PM QoS CPU latency limit in us: 0 when our feature holds it, else what
 * /dev/cpu_dma_latency reads (the kernel returns the current limit as a binary s32).
 * -errno when it cannot be read.
 */
static int64_t qos_limit(const struct tune_input *in, bool *ours)
{
	char path[800];
	int32_t v;
	ssize_t n;
	int fd;

	*ours = tune.qos_fd >= 0;
	if (*ours)
		return 0;
	snprintf(path, sizeof(path), "%s%s", in->root, TUNE_QOS_PATH);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, &v, sizeof(v));
	close(fd);
	return n == (ssize_t)sizeof(v) ? (int64_t)v : -EINVAL;
}

/* The deepest idle state a worker CPU can enter under the PM QoS limit. */
static void check_cstates(const struct tune_input *in, struct tune_report *r, int64_t limit)
{
	char target[24], name[32], deep[32];

	for (int c = 0; c < CPU_SETSIZE; c++) {
		long worst = -1;
		int nstates = 0;

		if (!CPU_ISSET(c, &in->workers))
			continue;
		snprintf(target, sizeof(target), "cpu%d", c);
		deep[0] = 0;
		for (int k = 0; k < 64; k++) {
			char path[128];
			long lat, dis;

			snprintf(path, sizeof(path), TUNE_CPU_PATH "/cpu%d/cpuidle/state%d/latency",
				 c, k);
			if (read_long(in, &lat, path))
				break;
			nstates++;
			snprintf(path, sizeof(path), TUNE_CPU_PATH "/cpu%d/cpuidle/state%d/disable",
				 c, k);
			if (!read_long(in, &dis, path) && dis)
				continue;
			if (limit >= 0 && lat > limit)
				continue;
			if (lat > worst) {
				worst = lat;
				if (read_text(in, name, sizeof(name),
					      TUNE_CPU_PATH "/cpu%d/cpuidle/state%d/name", c, k))
					snprintf(name, sizeof(name), "state%d", k);
				snprintf(deep, sizeof(deep), "%s", name);
			}
		}
		if (!nstates)
			add(r, "cstate", target, TUNE_PASS, NULL, "no cpuidle states");
		else if (worst <= TUNE_CSTATE_MAX_US)
			add(r, "cstate", target, TUNE_PASS, NULL,
			    "deepest reachable %s, exit %ld us", worst >= 0 ? deep : "none",
			    worst < 0 ? 0 : worst);
		else
			add(r, "cstate", target, TUNE_WARN, "--enable cpu_dma_latency",
			    "deepest reachable %s, exit %ld us", deep, worst);
	}
}

/* The control thread's CPUs against the workers'. */
static void check_control(const struct tune_input *in, struct tune_report *r)
{
	char cl[256], hl[256], target[300], fix[1024];
	cpu_set_t both, hk;

	cpulist_format(&in->control, cl, sizeof(cl));
	if (CPU_COUNT(&in->control) == 1)
		snprintf(target, sizeof(target), "cpu%s", cl);
	else
		snprintf(target, sizeof(target), "cpus %s", cl);
	CPU_AND(&both, &in->control, &in->workers);
	housekeeping(in, &hk);
	cpulist_format(&hk, hl, sizeof(hl));
	if (!CPU_COUNT(&both)) {
		add(r, "control", target, TUNE_PASS, NULL,
		    "no worker CPU in the control's affinity");
		return;
	}
	cpulist_format(&both, cl, sizeof(cl));
	if (!CPU_COUNT(&hk)) {
		add(r, "control", target, TUNE_FAIL, "fewer --workers, or more CPUs",
		    "every CPU runs a worker: the control thread competes with them");
		return;
	}
	snprintf(fix, sizeof(fix), "taskset -c %s ib2roce ... (or CPUAffinity=%s)", hl, hl);
	if (CPU_EQUAL(&both, &in->control))
		add(r, "control", target, TUNE_FAIL, fix,
		    "the control thread may only run on worker %s %s", cpus_word(&both), cl);
	else
		add(r, "control", target, TUNE_WARN, fix,
		    "the control thread may run on worker %s %s", cpus_word(&both), cl);
}

/* The NIC's IRQ numbers: <dev>/msi_irqs, else /proc/interrupts lines naming its PCI
 * address. Returns how many were found (at most max). */
static int nic_irqs(const struct tune_input *in, const char *dev, int *irq, int max)
{
	char path[800], link[512], line[1024], pci[600] = "";
	ssize_t k;
	DIR *d;
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s%s/msi_irqs", in->root, dev);
	d = opendir(path);
	if (d) {
		struct dirent *e;

		while ((e = readdir(d)) && n < max)
			if (isdigit((unsigned char)e->d_name[0]))
				irq[n++] = atoi(e->d_name);
		closedir(d);
	}
	if (n)
		goto sort;
	snprintf(path, sizeof(path), "%s%s", in->root, dev);
	k = readlink(path, link, sizeof(link) - 1);
	if (k <= 0)
		return 0;
	link[k] = 0;
	snprintf(pci, sizeof(pci), "@pci:%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
	snprintf(path, sizeof(path), "%s/proc/interrupts", in->root);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && n < max) {
		char *end;
		long v = strtol(line, &end, 10);

		if (end != line && *end == ':' && strstr(line, pci))
			irq[n++] = (int)v;
	}
	fclose(f);
sort:
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && irq[j - 1] > irq[j]; j--) {
			int t = irq[j];

			irq[j] = irq[j - 1];
			irq[j - 1] = t;
		}
	return n;
}

/* IRQs of each NIC whose affinity includes a worker CPU; its NUMA node. */
static void check_nics(const struct tune_input *in, struct tune_report *r)
{
	enum { IRQS_MAX = 512 };
	char dev[320], hl[256], list[160], fix[1024], wl[256];
	cpu_set_t hk;
	int irq[IRQS_MAX];

	housekeeping(in, &hk);
	cpulist_format(&hk, hl, sizeof(hl));
	cpulist_format(&in->workers, wl, sizeof(wl));
	for (uint32_t i = 0; i < in->nnics; i++) {
		const struct tune_nic *nic = &in->nics[i];
		int n, bad = 0;
		size_t lu = 0, fu = 0;
		long node;
		cpu_set_t hit;

		if (nic->error[0]) {
			add(r, "nic", nic->name, TUNE_FAIL, "-d/-r naming an active port", "%s",
			    nic->error);
			continue;
		}
		snprintf(dev, sizeof(dev), "%s/device", nic->ibdev_path);
		n = nic_irqs(in, dev, irq, IRQS_MAX);
		if (!n) {
			add(r, "irq", nic->name, TUNE_WARN, NULL, "no IRQs found (%s%s/msi_irqs)",
			    in->root, dev);
		} else {
			CPU_ZERO(&hit);
			fix[0] = 0;
			fu = (size_t)snprintf(fix, sizeof(fix), "for i in");
			for (int k = 0; k < n; k++) {
				char path[64];
				cpu_set_t aff;

				snprintf(path, sizeof(path), "/proc/irq/%d/smp_affinity_list",
					 irq[k]);
				if (read_cpulist(in, &aff, path))
					continue;
				CPU_AND(&aff, &aff, &in->workers);
				if (!CPU_COUNT(&aff))
					continue;
				CPU_OR(&hit, &hit, &aff);
				bad++;
				if (lu < sizeof(list))
					lu += (size_t)snprintf(list + lu, sizeof(list) - lu, "%s%d",
							       lu ? "," : "", irq[k]);
				if (fu < sizeof(fix))
					fu += (size_t)snprintf(fix + fu, sizeof(fix) - fu, " %d",
							       irq[k]);
			}
			if (!bad) {
				add(r, "irq", nic->name, TUNE_PASS, NULL,
				    "%d IRQs, none on worker CPUs", n);
			} else {
				cpulist_format(&hit, wl, sizeof(wl));
				if (fu < sizeof(fix))
					fu += (size_t)snprintf(
						fix + fu, sizeof(fix) - fu,
						"; do echo %s > /proc/irq/$i/smp_affinity_list; "
						"done",
						hl);
				/* Too long for the line's fix column: say it in words. */
				if (fu >= sizeof(((struct tune_line *)0)->fix) || !CPU_COUNT(&hk))
					snprintf(
						fix, sizeof(fix),
						"set /proc/irq/N/smp_affinity_list of IRQ %s to %s",
						list, hl);
				add(r, "irq", nic->name, TUNE_FAIL, fix,
				    "%d of %d IRQs may run on worker %s %s: IRQ %s", bad, n,
				    cpus_word(&hit), wl, list);
			}
		}
		snprintf(dev, sizeof(dev), "%s/device/numa_node", nic->ibdev_path);
		if (read_long(in, &node, dev) || node < 0) {
			add(r, "numa", nic->name, TUNE_PASS, NULL, "no NUMA node given");
		} else {
			cpu_set_t local, remote;
			char path[96], nl[256];

			snprintf(path, sizeof(path), "/sys/devices/system/node/node%ld/cpulist",
				 node);
			if (read_cpulist(in, &local, path)) {
				add(r, "numa", nic->name, TUNE_PASS, NULL,
				    "node %ld (CPUs unknown)", node);
				continue;
			}
			CPU_XOR(&remote, &in->workers, &local); /* workers not on the node */
			CPU_AND(&remote, &remote, &in->workers);
			cpulist_format(&remote, wl, sizeof(wl));
			n = CPU_COUNT(&remote);
			CPU_XOR(&remote, &local, &in->control); /* local minus the control's */
			CPU_AND(&local, &local, &remote);
			cpulist_format(&local, nl, sizeof(nl));
			snprintf(fix, sizeof(fix), "--cpus from node %ld: %s", node, nl);
			if (n)
				add(r, "numa", nic->name, TUNE_WARN, fix,
				    "node %ld; workers on %s %s are remote", node,
				    n == 1 ? "CPU" : "CPUs", wl);
			else
				add(r, "numa", nic->name, TUNE_PASS, NULL,
				    "node %ld, workers local", node);
		}
	}
}

/* Is a process named irqbalance running (any /proc/PID/comm)? */
static bool irqbalance_running(const struct tune_input *in)
{
	char path[800], comm[64];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/proc", in->root);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]) &&
		    !read_text(in, comm, sizeof(comm), "/proc/%s/comm", e->d_name))
			found = !strcmp(comm, "irqbalance");
	closedir(d);
	return found;
}

/*
 * irqbalance: not running, or running with the worker CPUs banned. Without
 * IRQBALANCE_BANNED_CPULIST/CPUS in its environment file it bans the isolated and
 * nohz_full CPUs by itself.
 */
static void check_irqbalance(const struct tune_input *in, struct tune_report *r)
{
	char conf[4096], wl[256], fix[1024];
	cpu_set_t banned, t;
	const char *p;
	bool given = false;

	if (!irqbalance_running(in)) {
		add(r, "irqbalance", "host", TUNE_PASS, NULL, "not running");
		return;
	}
	if (!CPU_COUNT(&in->workers)) {
		add(r, "irqbalance", "host", TUNE_PASS, NULL, "running (no worker CPUs)");
		return;
	}
	CPU_ZERO(&banned);
	if (!read_text(in, conf, sizeof(conf), "/etc/default/irqbalance")) {
		for (p = conf; (p = strstr(p, "IRQBALANCE_BANNED_CPULIST=")); p++)
			if (p == conf || p[-1] == '\n') {
				const char *v = p + strlen("IRQBALANCE_BANNED_CPULIST=");
				char list[1024];

				given = true;
				v += *v == '"' || *v == '\'';
				snprintf(list, sizeof(list), "%.*s", (int)strcspn(v, "\"'\n"), v);
				if (cpulist_parse(list, &banned))
					CPU_ZERO(&banned);
			}
	}
	if (!given) {
		read_cpulist(in, &banned, TUNE_CPU_PATH "/isolated");
		read_cpulist(in, &t, TUNE_CPU_PATH "/nohz_full");
		CPU_OR(&banned, &banned, &t);
	}
	CPU_AND(&t, &banned, &in->workers);
	cpulist_format(&in->workers, wl, sizeof(wl));
	if (CPU_EQUAL(&t, &in->workers)) {
		add(r, "irqbalance", "host", TUNE_PASS, NULL, "running, worker CPUs banned (%s)",
		    given ? "IRQBALANCE_BANNED_CPULIST" : "isolated/nohz_full");
		return;
	}
	snprintf(fix, sizeof(fix),
		 "systemctl stop irqbalance, or IRQBALANCE_BANNED_CPULIST=%s in "
		 "/etc/default/irqbalance",
		 wl);
	add(r, "irqbalance", "host", TUNE_WARN, fix, "running: may move IRQs onto worker CPUs");
}

static void check_qos(struct tune_report *r, int64_t limit, bool ours)
{
	if (ours)
		add(r, "cpu_dma_latency", "host", TUNE_PASS, NULL, "held at 0 us by this bridge");
	else if (limit < 0)
		add(r, "cpu_dma_latency", "host", TUNE_WARN, "--enable cpu_dma_latency",
		    "cannot read " TUNE_QOS_PATH ": %s", strerror((int)-limit));
	else if (limit <= TUNE_CSTATE_MAX_US)
		add(r, "cpu_dma_latency", "host", TUNE_PASS, NULL,
		    "held at %" PRId64 " us by another process", limit);
	else
		add(r, "cpu_dma_latency", "host", TUNE_WARN, "--enable cpu_dma_latency",
		    "not held (limit %" PRId64 " us)", limit);
}

/* Host-wide: THP, swap, memlock, RT throttling, timer migration. */
static void check_host(const struct tune_input *in, struct tune_report *r)
{
	char buf[4096];
	long v, swappiness = -1;

	if (read_text(in, buf, sizeof(buf), "/sys/kernel/mm/transparent_hugepage/enabled"))
		add(r, "thp", "host", TUNE_PASS, NULL, "no transparent huge pages");
	else if (strstr(buf, "[always]"))
		add(r, "thp", "host", TUNE_WARN,
		    "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
		    "always: khugepaged compaction stalls");
	else
		add(r, "thp", "host", TUNE_PASS, NULL, "%s", buf);

	if (!read_text(in, buf, sizeof(buf), "/proc/swaps")) {
		int areas = 0;

		for (const char *p = strchr(buf, '\n'); p && p[1]; p = strchr(p + 1, '\n'))
			areas++;
		read_long(in, &swappiness, "/proc/sys/vm/swappiness");
		if (!areas)
			add(r, "swap", "host", TUNE_PASS, NULL, "no swap");
		else
			add(r, "swap", "host", TUNE_WARN, "swapoff -a",
			    "%d swap area%s, swappiness %ld", areas, areas == 1 ? "" : "s",
			    swappiness);
	} else {
		add(r, "swap", "host", TUNE_WARN, NULL, "cannot read /proc/swaps");
	}

	if (in->memlock == UINT64_MAX)
		add(r, "memlock", "host", TUNE_PASS, NULL, "unlimited");
	else if (in->memlock >= in->pool_bytes)
		add(r, "memlock", "host", TUNE_PASS, NULL,
		    "%" PRIu64 " KiB >= pool %" PRIu64 " KiB", in->memlock >> 10,
		    in->pool_bytes >> 10);
	else
		add(r, "memlock", "host", in->ipc_lock ? TUNE_WARN : TUNE_FAIL,
		    "ulimit -l unlimited (systemd: LimitMEMLOCK=infinity)",
		    "%" PRIu64 " KiB < pool %" PRIu64 " KiB%s", in->memlock >> 10,
		    in->pool_bytes >> 10,
		    in->ipc_lock ? "; only CAP_IPC_LOCK lets it register" : "");

	if (read_long(in, &v, "/proc/sys/kernel/sched_rt_runtime_us"))
		add(r, "rt_throttle", "host", TUNE_PASS, NULL, "unknown");
	else if (v < 0)
		add(r, "rt_throttle", "host", TUNE_PASS, NULL, "off");
	else
		add(r, "rt_throttle", "host", TUNE_WARN, "sysctl -w kernel.sched_rt_runtime_us=-1",
		    "RT tasks stopped after %ld us per period", v);

	if (read_long(in, &v, "/proc/sys/kernel/timer_migration"))
		add(r, "timer_migration", "host", TUNE_PASS, NULL, "unknown");
	else if (!v)
		add(r, "timer_migration", "host", TUNE_PASS, NULL, "off");
	else
		add(r, "timer_migration", "host", TUNE_WARN, "sysctl -w kernel.timer_migration=0",
		    "on: timers may move onto worker CPUs");
}

/*
 * One kernel command line for every worker CPU (the per-CPU fixes merged) and the
 * unit's CPUAffinity=: isolcpus/nohz_full/rcu_nocbs on the workers, irqaffinity (the
 * default IRQ affinity, Documentation/admin-guide/kernel-parameters.txt) and the
 * service's own threads on the housekeeping CPUs.
 */
static void merged_lines(const struct tune_input *in, struct tune_report *r)
{
	char wl[256], hl[256];
	cpu_set_t hk;

	if (in->workers_unknown || !CPU_COUNT(&in->workers))
		return;
	housekeeping(in, &hk);
	cpulist_format(&in->workers, wl, sizeof(wl));
	cpulist_format(&hk, hl, sizeof(hl));
	snprintf(r->cmdline, sizeof(r->cmdline),
		 "isolcpus=managed_irq,domain,%.200s nohz_full=%.200s rcu_nocbs=%.200s "
		 "irqaffinity=%.200s",
		 wl, wl, wl, CPU_COUNT(&hk) ? hl : "0");
	if (CPU_COUNT(&hk))
		snprintf(r->cpuaffinity, sizeof(r->cpuaffinity), "CPUAffinity=%.250s", hl);
}

int tune_report_build(const struct tune_input *in, struct tune_report *r)
{
	int64_t limit;
	bool ours;

	memset(r, 0, sizeof(*r));
	if (in->workers_unknown)
		add(r, "workers", "-", TUNE_FAIL, "--cpus LIST",
		    "worker CPUs unknown (no CPU affinity)");
	else if (!CPU_COUNT(&in->workers))
		add(r, "workers", "-", TUNE_PASS, NULL,
		    "none: event-driven data path on the control thread");
	limit = qos_limit(in, &ours);
	check_isolation(in, r);
	check_smt(in, r);
	check_governor(in, r);
	check_cstates(in, r, limit);
	check_control(in, r);
	check_nics(in, r);
	check_irqbalance(in, r);
	check_qos(r, limit, ours);
	check_host(in, r);
	merged_lines(in, r);
	if (r->cap == SIZE_MAX) {
		tune_report_free(r);
		return -ENOMEM;
	}
	return 0;
}

static const char *const status_name[] = {"PASS", "WARN", "FAIL"};

void tune_report_print(const struct tune_report *r, FILE *out)
{
	int wc = (int)strlen("CHECK"), wt = (int)strlen("TARGET"), wd = (int)strlen("DETAIL");

	for (size_t i = 0; i < r->n; i++) {
		const struct tune_line *l = &r->lines[i];

		wc = (int)strlen(l->check) > wc ? (int)strlen(l->check) : wc;
		wt = (int)strlen(l->target) > wt ? (int)strlen(l->target) : wt;
		wd = (int)strlen(l->detail) > wd ? (int)strlen(l->detail) : wd;
	}
	fprintf(out, "%-*s  %-*s  %-6s  %-*s  %s\n", wc, "CHECK", wt, "TARGET", "STATUS", wd,
		"DETAIL", "FIX");
	for (size_t i = 0; i < r->n; i++) {
		const struct tune_line *l = &r->lines[i];

		if (l->fix[0])
			fprintf(out, "%-*s  %-*s  %-6s  %-*s  %s\n", wc, l->check, wt, l->target,
				status_name[l->status], wd, l->detail, l->fix);
		else
			fprintf(out, "%-*s  %-*s  %-6s  %s\n", wc, l->check, wt, l->target,
				status_name[l->status], l->detail);
	}
	if (r->cmdline[0])
		fprintf(out, "kernel command line for the worker CPUs: %s\n", r->cmdline);
	if (r->cpuaffinity[0])
		fprintf(out, "unit [Service] for the housekeeping CPUs: %s\n", r->cpuaffinity);
	fprintf(out, "summary: %zu PASS, %zu WARN, %zu FAIL\n", r->count[TUNE_PASS],
		r->count[TUNE_WARN], r->count[TUNE_FAIL]);
}

int tune_report_exit_status(const struct tune_report *r)
{
	return r->count[TUNE_FAIL] ? 3 : r->count[TUNE_WARN] ? 1 : 0;
}

void tune_report_free(struct tune_report *r)
{
	free(r->lines);
	memset(r, 0, sizeof(*r));
}

/* ---- Filling the input ---- */

/* CAP_IPC_LOCK (bit 14) in CapEff of /proc/self/status (this process, not the root). */
static bool has_ipc_lock(void)
{
	char line[256];
	bool cap = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7)) {
			cap = (strtoull(line + 7, NULL, 16) >> 14) & 1;
			break;
		}
	fclose(f);
	return cap;
}

void tune_input_init(struct tune_input *in)
{
	struct rlimit rl;

	memset(in, 0, sizeof(*in));
	in->root = tune.root;
	if (sched_getaffinity(0, sizeof(in->control), &in->control))
		CPU_ZERO(&in->control);
	in->memlock = UINT64_MAX;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY)
		in->memlock = (uint64_t)rl.rlim_cur;
	in->ipc_lock = has_ipc_lock();
}

int tune_input_add_nic(struct tune_input *in, const char *name, const char *ibdev_path,
		       const char *error)
{
	struct tune_nic *nic;

	for (uint32_t i = 0; i < in->nnics && !error; i++)
		if (!strcmp(in->nics[i].ibdev_path, ibdev_path))
			return 0;
	if (in->nnics == TUNE_NICS_MAX)
		return -ENOSPC;
	nic = &in->nics[in->nnics++];
	snprintf(nic->name, sizeof(nic->name), "%s", name);
	snprintf(nic->ibdev_path, sizeof(nic->ibdev_path), "%s", error ? "" : ibdev_path);
	snprintf(nic->error, sizeof(nic->error), "%s", error ? error : "");
	return 0;
}
