/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tune.h - the host tuning report (ib2roce --tune-check, the console's "tuning"): for
 * the worker CPUs, the control thread's CPUs, the NICs and the host, one line per check
 * and target with PASS, WARN or FAIL, what was found and the exact command or kernel
 * parameter that fixes it (docs/tuning.md explains each check).
 *
 * The report is a pure function of a struct tune_input and of the files it reads under
 * the input's root prefix ("" = this host; a directory holding a copy of another host's
 * /sys, /proc, /etc and /dev files, for tests and audits). Callers fill the input from
 * the configuration (--tune-check) or from the running bridge (tuning).
 *
 * The module also owns the cpu_dma_latency runtime feature: while it is on, the process
 * holds <root>/dev/cpu_dma_latency open with the value 0 written (a PM QoS request that
 * keeps every CPU out of idle states with an exit latency above 0 us); turning it off
 * or exiting closes the file and releases the request.
 *
 * Threading: everything here runs on the main thread before start-up or on the control
 * thread afterwards, never concurrently.
 */
#ifndef CONTROL_TUNE_H
#define CONTROL_TUNE_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TUNE_NICS_MAX 4

/* A NIC of the bridge: its name and its sysfs directory (ibv_device->ibdev_path). */
struct tune_nic {
	char name[64];
	char ibdev_path[256]; /* "" when the device could not be opened */
	char error[160];      /* why it could not be opened, "" when it was */
};

/* What the report is about. */
struct tune_input {
	const char *root;     /* prefix of every file read: "" = this host */
	cpu_set_t workers;    /* CPUs of the busy-polling workers (empty: --workers 0) */
	bool workers_unknown; /* the worker CPUs could not be determined */
	cpu_set_t control;    /* CPUs the control thread may run on (its affinity) */
	struct tune_nic nics[TUNE_NICS_MAX];
	uint32_t nnics;
	uint64_t pool_bytes; /* bytes the buffer pool registers (pinned memory) */
	uint64_t memlock;    /* RLIMIT_MEMLOCK soft limit in bytes, UINT64_MAX: unlimited */
	bool ipc_lock;	     /* the process has CAP_IPC_LOCK (may exceed memlock) */
};

enum tune_status {
	TUNE_PASS,
	TUNE_WARN,
	TUNE_FAIL,
};

struct tune_line {
	char check[20];
	char target[24];
	enum tune_status status;
	char detail[160];
	char fix[512];
};

struct tune_report {
	struct tune_line *lines;
	size_t n, cap;
	size_t count[3]; /* lines per status */
	/* For every worker CPU at once (empty without workers): the kernel parameters that
	 * isolate them and keep IRQs off them, and the unit's CPUAffinity= line (the
	 * housekeeping CPUs: online minus workers). */
	char cmdline[1024];
	char cpuaffinity[300];
};

/*
 * tune_register - register the cpu_dma_latency runtime feature and the --tune-root
 * option. Main thread, before the command line is parsed. Returns 0 or the registries'
 * negative errno.
 */
int tune_register(void);

/* tune_root - the --tune-root prefix ("" when not given). Main or control thread. */
const char *tune_root(void);

/*
 * tune_input_init - fill in what belongs to this process: root (tune_root()), the
 * calling thread's CPU affinity as the control CPUs, RLIMIT_MEMLOCK and CAP_IPC_LOCK;
 * no workers, no NICs, pool_bytes 0. Main or control thread.
 */
void tune_input_init(struct tune_input *in);

/*
 * tune_input_add_nic - add a NIC (name, ibdev_path) or, with error non-NULL, a device
 * that could not be opened; a second entry with the same path is ignored. Returns 0 or
 * -ENOSPC beyond TUNE_NICS_MAX.
 */
int tune_input_add_nic(struct tune_input *in, const char *name, const char *ibdev_path,
		       const char *error);

/*
 * tune_report_build - run every check against the files under in->root. Reads only;
 * costs a few hundred small file reads. Main or control thread. Returns 0 or -ENOMEM
 * (r is then empty); free r with tune_report_free.
 */
int tune_report_build(const struct tune_input *in, struct tune_report *r);

/* tune_report_print - the aligned table and a summary line. */
void tune_report_print(const struct tune_report *r, FILE *out);

/*
 * tune_report_exit_status - what --tune-check exits with: 0 all PASS, 1 some WARN and no
 * FAIL, 3 some FAIL (2 stays the status of bad options).
 */
int tune_report_exit_status(const struct tune_report *r);

/* tune_report_free - free the lines; r is empty afterwards. */
void tune_report_free(struct tune_report *r);

/*
 * tune_release - close /dev/cpu_dma_latency if the feature holds it (at exit; closing
 * also happens when the process ends). Main thread.
 */
void tune_release(void);

#endif /* CONTROL_TUNE_H */
