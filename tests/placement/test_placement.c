/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_placement.c - host/placement.c without a device: --cpus lists parsed with
 * hwloc (order, ranges, duplicates, errors), and a NIC's locality read through its sysfs
 * directory (what ibv_device.ibdev_path names): device/local_cpus, else
 * device/numa_node, else unknown, on the two-socket machine of two-socket-smt.xml
 * (HWLOC_XMLFILE; its OS devices are named mlx5_*, the NICs here are not); a worker on a
 * CPU that takes the NICs' IRQs (device/msi_irqs, /proc/irq/N/smp_affinity_list).
 *
 * Usage: test_placement DIR (the directory of the XML files: tests/placement/fixtures).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "placement.h"
#include "tap.h"

static char dir[256];

/* A fake sysfs device directory: DIR/device/{local_cpus,numa_node} (NULL: no file). */
static void fake_dev(const char *local_cpus, const char *numa_node)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/device", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/device/local_cpus", dir);
	unlink(p);
	if (local_cpus && (f = fopen(p, "w"))) {
		fprintf(f, "%s\n", local_cpus);
		fclose(f);
	}
	snprintf(p, sizeof(p), "%s/device/numa_node", dir);
	unlink(p);
	if (numa_node && (f = fopen(p, "w"))) {
		fprintf(f, "%s\n", numa_node);
		fclose(f);
	}
}

/* Plan 1 worker with both NICs at the fake directory; returns placement_plan's result. */
static int plan_with_sysfs(struct placement *pl)
{
	struct place_in in = {
		.nworkers = 1,
		.control_cpu = -1,
		.allowed = "0-15",
		.nic = {"sysnic0", "sysnic1"},
		.ibdev_path = {dir, dir},
		.rx_groups = {1, 1},
	};
	char err[256] = "";
	int r = placement_plan(&in, pl, err, sizeof(err));

	if (r)
		printf("# placement_plan: %s\n", err);
	return r;
}

static void test_cpulist(void)
{
	int cpus[8];
	uint32_t n = 0;
	char err[256];

	CHECK_EQ(placement_cpulist_parse("3,1-2,1", cpus, 8, &n, err, sizeof(err)), 0);
	CHECK_EQ(n, 4);
	CHECK_EQ(cpus[0], 3);
	CHECK_EQ(cpus[1], 1);
	CHECK_EQ(cpus[2], 2);
	CHECK_EQ(cpus[3], 1);
	CHECK_EQ(placement_cpulist_parse("0-8", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "CPU list '0-8': more than 8 CPUs");
	CHECK_EQ(placement_cpulist_parse("2,x", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "CPU list '2,x': 'x' is not a CPU or a range like 4-7");
	CHECK_EQ(placement_cpulist_parse("4-", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_EQ(placement_cpulist_parse("5-4", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_EQ(placement_cpulist_parse(",", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "empty CPU list");
	/* Issue 21 D8: hwloc's parser wrapped 2^32 + 1 to CPU 1; "-1" was "empty". */
	CHECK_EQ(placement_cpulist_parse("4294967297", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "CPU list '4294967297': '4294967297': CPU 4294967297 is out of range "
		       "(0-8191)");
	CHECK_EQ(placement_cpulist_parse("0,2-99999999999999999999", cpus, 8, &n, err, sizeof(err)),
		 -EINVAL);
	CHECK_STR(err, "CPU list '0,2-99999999999999999999': '2-99999999999999999999': CPU "
		       "99999999999999999999 is out of range (0-8191)");
	CHECK_EQ(placement_cpulist_parse("8192", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_EQ(placement_cpulist_parse("8191", cpus, 8, &n, err, sizeof(err)), 0);
	CHECK_EQ(cpus[0], 8191);
	CHECK_EQ(placement_cpulist_parse("-1", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "CPU list '-1': '-1' is not a CPU or a range like 4-7");
	CHECK_EQ(placement_cpulist_parse("1-2-3", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "CPU list '1-2-3': '1-2-3' is not a CPU or a range like 4-7");
	CHECK_EQ(placement_cpulist_parse("5-4", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "CPU list '5-4': '5-4': a range goes up, like 4-7");
	/* Decimal, as the kernel's lists: hwloc's parser read "010" as octal 8. */
	CHECK_EQ(placement_cpulist_parse("010,0x1", cpus, 8, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "CPU list '010,0x1': '0x1' is not a CPU or a range like 4-7");
	CHECK_EQ(placement_cpulist_parse("010", cpus, 8, &n, err, sizeof(err)), 0);
	CHECK_EQ(cpus[0], 10);
}

static void test_sysfs_locality(void)
{
	struct placement pl;

	/* local_cpus of node 1 (CPUs 8-15): the worker on node 1's first core. */
	fake_dev("0000ff00", "0");
	CHECK_EQ(plan_with_sysfs(&pl), 0);
	CHECK_STR(pl.nic[0], "node 1, local CPUs 8-15 (sysfs)");
	CHECK_EQ(pl.node, 1);
	CHECK_EQ(pl.w[0].cpu, 8);
	placement_fini(&pl);

	/* local_cpus all zero: numa_node decides. */
	fake_dev("00000000", "1");
	CHECK_EQ(plan_with_sysfs(&pl), 0);
	CHECK_STR(pl.nic[1], "node 1, local CPUs 8-15 (sysfs)");
	CHECK_EQ(pl.node, 1);
	placement_fini(&pl);

	/* Only numa_node. */
	fake_dev(NULL, "0");
	CHECK_EQ(plan_with_sysfs(&pl), 0);
	CHECK_STR(pl.nic[0], "node 0, local CPUs 0-7 (sysfs)");
	CHECK_EQ(pl.node, 0);
	CHECK_EQ(pl.w[0].cpu, 0);
	CHECK_EQ(pl.control.cpu, 8); /* off the workers' node */
	placement_fini(&pl);

	/* Every CPU: no locality. */
	fake_dev("ffffffff", "-1");
	CHECK_EQ(plan_with_sysfs(&pl), 0);
	CHECK_STR(pl.nic[0], "locality unknown (local_cpus covers every CPU): treated as local "
			     "to every node");
	CHECK_EQ(pl.node, -1);
	placement_fini(&pl);

	/* Nothing at all. */
	fake_dev(NULL, NULL);
	CHECK_EQ(plan_with_sysfs(&pl), 0);
	CHECK_STR(pl.nic[0], "locality unknown (no local_cpus or numa_node in sysfs): treated "
			     "as local to every node");
	CHECK_STR(pl.node_why, "none: no NIC is local to a single node");
	CHECK_STR(pl.w[0].why, "no node preferred");
	placement_fini(&pl);
}

/* Write TEXT to DIR-relative PATH ("" for an empty file). */
static void put(const char *base, const char *path, const char *text)
{
	char p[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", base, path);
	if ((f = fopen(p, "w"))) {
		fputs(text, f);
		fclose(f);
	}
}

/* A worker CPU that takes the NICs' IRQs (device/msi_irqs/N, /proc/irq/N/
 * smp_affinity_list under the root): a worker warning per NIC, counted for health. */
static void test_irqs(const char *root)
{
	struct placement pl;
	char p[600];

	fake_dev("0000ff00", "1");
	snprintf(p, sizeof(p), "%s/device/msi_irqs", dir);
	mkdir(p, 0700);
	put(dir, "device/msi_irqs/41", "msix\n");
	snprintf(p, sizeof(p), "%s/proc", root);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/proc/irq", root);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/proc/irq/41", root);
	mkdir(p, 0700);
	put(root, "proc/irq/41/smp_affinity_list", "8-9\n");
	CHECK_EQ(plan_with_sysfs(&pl), 0);
	CHECK_EQ(pl.w[0].cpu, 8);
	CHECK_EQ(pl.nworker_warn, 2);
	CHECK_STR(pl.worker_warn, "worker 0 on CPU 8: the IB NIC sysnic0's IRQs may run there; "
				  "fix: set /proc/irq/N/smp_affinity_list of its IRQs to "
				  "housekeeping CPUs (ib2roce --tune-check)");
	placement_fini(&pl);

	put(root, "proc/irq/41/smp_affinity_list", "0-1\n");
	CHECK_EQ(plan_with_sysfs(&pl), 0);
	CHECK_EQ(pl.nworker_warn, 0);
	placement_fini(&pl);

	snprintf(p, sizeof(p), "%s/proc/irq/41/smp_affinity_list", root);
	unlink(p);
	snprintf(p, sizeof(p), "%s/proc/irq/41", root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/proc/irq", root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/proc", root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/device/msi_irqs/41", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/device/msi_irqs", dir);
	rmdir(p);
	fake_dev(NULL, NULL);
}

int main(int argc, char **argv)
{
	char xml[512], root[300];

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	snprintf(xml, sizeof(xml), "%s/two-socket-smt.xml", argv[1]);
	setenv("HWLOC_XMLFILE", xml, 1);
	snprintf(dir, sizeof(dir), "/tmp/test_placement.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	/* An empty root: no isolated CPUs of this machine leak in. */
	snprintf(root, sizeof(root), "%s/root", dir);
	mkdir(root, 0700);
	setenv("IB2ROCE_SYSFS_ROOT", root, 1);
	test_cpulist();
	test_sysfs_locality();
	test_irqs(root);
	/* fake_dev(NULL, NULL) left no files. */
	snprintf(xml, sizeof(xml), "%s/device", dir);
	if (rmdir(xml) || rmdir(root) || rmdir(dir))
		printf("# could not remove %s\n", dir);
	return tap_done();
}
