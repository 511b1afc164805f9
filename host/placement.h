/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Worker placement (control thread, at start-up): which CPU each worker and the control
 * thread run on, and which NUMA node the buffer pool and the workers' memory live on.
 * The machine comes from hwloc (the real one, or HWLOC_XMLFILE / HWLOC_SYNTHETIC), the
 * NICs' locality from the topology's OpenFabrics OS device of that name or else from the
 * device's sysfs directory (ibv_device.ibdev_path). Workers may be pinned to any CPU of
 * the process's cgroup cpuset (/proc/self/cgroup, then cgroup v1 cpuset.cpus or v2
 * cpuset.cpus.effective) that is online: sched_setaffinity is bounded by the cpuset, not
 * by the inherited affinity (kernel/sched/core.c __sched_setaffinity intersects the new
 * mask with cpuset_cpus_allowed()). The inherited affinity (taskset, systemd
 * CPUAffinity=) is where the control thread and the threads it starts stay:
 * housekeeping. Isolated CPUs come from /sys/devices/system/cpu/{isolated,nohz_full},
 * the NICs' IRQs from <ibdev_path>/device/msi_irqs and /proc/irq/N/smp_affinity_list.
 * The rules are in docs/tuning.md ("Worker placement").
 */
#ifndef CONTROL_PLACEMENT_H
#define CONTROL_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PLACE_MAX_WORKERS 64 /* --workers' maximum */
#define PLACE_SIDES	  2  /* 0: InfiniBand, 1: RoCE (enum side) */
/* The highest CPU number a list may name: the kernel's largest NR_CPUS is 8192
 * (arch/x86/Kconfig NR_CPUS_RANGE_END with MAXSMP); a larger number is refused. */
#define PLACE_CPU_MAX 8191

/* What the options, the devices and the configured groups say. */
struct place_in {
	uint32_t nworkers; /* 0: the control thread runs the (event-driven) data path */
	const int *cpus;   /* --cpus, in worker order; NULL or ncpus 0: automatic */
	uint32_t ncpus;
	int control_cpu;	      /* --control-cpu, -1: automatic */
	const char *allowed;	      /* --allowed-cpus CPUSET (dry runs), NULL: the cgroup's */
	const char *affinity;	      /* --allowed-cpus CPUSET:AFFINITY (dry runs), NULL: the
				       * process affinity (or CPUSET when only that is given) */
	bool oversubscribe;	      /* --enable oversubscribe */
	int rt_prio;		      /* --enable rt=PRIO, 0: off */
	const char *nic[PLACE_SIDES]; /* device names */
	const char *ibdev_path[PLACE_SIDES]; /* the opened devices' sysfs paths, NULL: none */
	uint32_t rx_groups[PLACE_SIDES];     /* configured groups received on each side */
};

/* Where one thread runs, and why. cpu -1: not pinned. */
struct place_thread {
	int cpu;
	int core; /* hwloc logical index of the physical core */
	int node; /* NUMA node (OS index), -1 unknown */
	bool isolated;
	char why[192];
};

/* A placement plan. Owned by the caller, filled by placement_plan, freed by
 * placement_fini. */
struct placement {
	char topo[160];		    /* "2 NUMA nodes, 2 packages, 16 cores, 32 CPUs" */
	char allowed[768];	    /* CPUs workers may use (cpuset and online), and whence */
	char housekeeping[256];	    /* the inherited affinity: control, log, helper threads */
	char isolated[256];	    /* isolated/nohz_full CPUs as a list, "none" */
	char nic[PLACE_SIDES][256]; /* "node 1, local CPUs 8-15" / "locality unknown ..." */
	int nic_node[PLACE_SIDES];  /* -1: no single node (unknown or several) */
	int node;		    /* the workers' and the pool's node, -1: none */
	char node_why[256];
	uint32_t nworkers;
	struct place_thread w[PLACE_MAX_WORKERS];
	struct place_thread control;
	int rt_prio;
	char **idle; /* SMT siblings of workers left idle: "CPU 24: sibling of worker 0 (CPU 8)" */
	uint32_t nidle;
	char **warn; /* what is not as it should be */
	uint32_t nwarn;
	/* Workers on a non-isolated CPU while isolated CPUs exist, or on a CPU that takes the
	 * NICs' IRQs: health's placement warning (health.h). The first one's line. */
	uint32_t nworker_warn;
	char worker_warn[192];
};

/*
 * placement_cpulist_parse - parse a --cpus LIST into CPU numbers in worker order: a comma
 * separated list of CPUs and ranges, decimal ("4-7" expands in ascending order; each
 * number 0 to PLACE_CPU_MAX, a range going up: own code, as hwloc's list parser checks no
 * range); a CPU given twice stays twice (placement_plan refuses it without
 * oversubscribe). Main thread. Returns 0, or -EINVAL with a message naming the item.
 */
int placement_cpulist_parse(const char *list, int *cpus, uint32_t max, uint32_t *n, char *err,
			    size_t errlen);

/*
 * placement_plan - choose the CPUs of the workers and of the control thread and the
 * memory node. Reads the topology and the sysfs files, pins nothing. Main thread.
 * Returns 0; -EINVAL with a message for a configuration this machine cannot honour (a
 * CPU given twice or outside the allowed set without oversubscribe, too few cores, an
 * unknown CPU, a bad --allowed-cpus); -EPERM for rt refused (RT throttling); another
 * negative errno when the topology cannot be read. *pl is filled (and must be released
 * with placement_fini) whatever the result.
 */
int placement_plan(const struct place_in *in, struct placement *pl, char *err, size_t errlen);

/*
 * placement_topology_has_nic - does the topology (e.g. HWLOC_XMLFILE) hold an
 * OpenFabrics OS device of this name? For the dry run: such a device need not be opened.
 */
bool placement_topology_has_nic(const char *name);

/* placement_fini - free what placement_plan allocated. Any thread; NULL is a no-op. */
void placement_fini(struct placement *pl);

/*
 * placement_print - the plan as --check --show-placement prints it: the machine, the
 * NICs, the node, a table of workers, the control thread, idle siblings and warnings.
 */
void placement_print(const struct placement *pl, FILE *out);

/* placement_thread_line - "CPU 8, core 8, node 1, isolated no: <why>" for a log line. */
void placement_thread_line(const struct place_thread *t, char *buf, size_t len);

/*
 * placement_pin_self - pin the calling thread to cpu (sched_setaffinity), for the
 * control thread; cpu < 0 does nothing. Returns 0 or -errno.
 */
int placement_pin_self(int cpu);

#endif /* CONTROL_PLACEMENT_H */
