// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * netns.c: the network interfaces of the simulated devices (`simfab netns`).
 *
 * A real host has a netdev behind every RDMA port: IPoIB `ib0` behind an IB port, the
 * Ethernet interface behind a RoCE port, whose ifindex the RoCE GID table reports. The
 * simulated devices have none on the host, so programs that look at interfaces
 * (if_nametoindex, getifaddrs, netlink, /sys/class/net) find nothing. This makes them in
 * a network namespace of their own, where every process of the fabric then runs (the
 * fabric's event sockets are abstract AF_UNIX sockets, which belong to a namespace):
 * one veth interface per device, named ib<k> (IB) or eth<k> (Ethernet) in fabric
 * order, with the ifindex the GID table reports (100 + device index), the device's MAC
 * (IB: a locally administered one derived from the port GUID, as veth is Ethernet),
 * its IPv4 address and prefix, on Ethernet its global IPv6 address (added without
 * duplicate address detection, so that it is usable at once; the link-local address is
 * the kernel's own, EUI-64 from the MAC, which equals GID entry 0), and an MTU that
 * maps back to the port's active MTU: IPoIB datagram mode is the IB MTU - 4; on RoCE
 * the kernel takes the largest IB MTU that fits in the netdev MTU less 96 bytes of
 * headers (iboe_get_mtu), so 1500 carries 1024, 9000 carries 4096. The other end of each veth pair (<name>-wire) stays in the
 * namespace, up, so the interface has carrier.
 *
 * The interfaces are made by iproute2 (`ip -batch`), not by netlink code of our own:
 * it is the tool the operators use and the one that knows every kernel's link
 * attributes. Root (CAP_SYS_ADMIN, CAP_NET_ADMIN) is needed, as for `ip netns add`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>

#include "netns.h"

#define NETNS_IFINDEX_BASE 100 /* the GID table's ndev_ifindex: 100 + device index */
#define NETNS_ROCE_HDRS	   96  /* GRH + UDP + BTH + XRC + AtomicETH + ICRC (iboe_get_mtu) */
#define NETNS_IPOIB_HDR	   4   /* IPoIB encapsulation header, datagram mode */

/* The Ethernet MTU whose RoCE MTU is `ib_mtu` bytes. */
static unsigned int netns_eth_mtu(unsigned int ib_mtu)
{
	if (ib_mtu >= 4096)
		return 9000; /* the usual jumbo MTU */
	if (ib_mtu == 1024)
		return 1500; /* the usual Ethernet MTU */
	return ib_mtu + NETNS_ROCE_HDRS;
}

void sf_netns_ifname(const struct sf_fabric *fab, uint32_t dev, char *buf, size_t len)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < dev; i++)
		if (fab->devs[i].link == fab->devs[dev].link)
			k++;
	snprintf(buf, len, "%s%u", fab->devs[dev].link == SF_LINK_IB ? "ib" : "eth", k);
}

/* Run argv, wait for it; 0 when it exited 0, else -1 with a message in err. */
static int netns_run(char *const argv[], char *err, size_t errlen)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "simfab: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			snprintf(err, errlen, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, "'%s %s %s %s' failed (exit %d)", argv[0], argv[1],
			 argv[2] ? argv[2] : "", argv[2] && argv[3] ? argv[3] : "",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -1;
	}
	return 0;
}

int sf_netns_create(const struct sf_fabric *fab, const char *ns, FILE *out, char *err,
		    size_t errlen)
{
	char *add[] = {"ip", "netns", "add", (char *)ns, NULL};
	char *del[] = {"ip", "netns", "delete", (char *)ns, NULL};
	char path[] = "/tmp/simfab-netns.XXXXXX";
	char ignore[8];
	FILE *batch;
	int fd, ret;

	if (netns_run(add, err, errlen))
		return -1;
	fd = mkstemp(path);
	if (fd < 0 || !(batch = fdopen(fd, "w"))) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		netns_run(del, ignore, sizeof(ignore));
		return -1;
	}
	fprintf(batch, "link set lo up\n");
	if (out)
		fprintf(out, "%-8s %-8s %-10s %-18s %-18s %s\n", "netdev", "ifindex", "device",
			"address", "mac", "mtu");
	for (uint32_t i = 0; i < fab->ndevs; i++) {
		const struct sf_dev *d = &fab->devs[i];
		char name[16], ip[INET_ADDRSTRLEN], mac[24];
		unsigned int mtu, ib_mtu = 128u << d->active_mtu;
		uint8_t m[6];

		if (d->removed)
			continue;
		sf_netns_ifname(fab, i, name, sizeof(name));
		if (d->link == SF_LINK_IB) {
			uint64_t guid = be64toh(d->node_guid);

			/* Locally administered unicast, the port GUID's low 40 bits. */
			m[0] = 0x02;
			for (int b = 1; b < 6; b++)
				m[b] = (uint8_t)(guid >> (8 * (5 - b)));
			mtu = ib_mtu - NETNS_IPOIB_HDR;
		} else {
			memcpy(m, d->mac, sizeof(m));
			mtu = netns_eth_mtu(ib_mtu);
		}
		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
			 m[4], m[5]);
		inet_ntop(AF_INET, &d->ipv4, ip, sizeof(ip));
		fprintf(batch,
			"link add name %s index %u address %s mtu %u type veth peer name %s-wire mtu "
			"%u\n",
			name, NETNS_IFINDEX_BASE + i, mac, mtu, name, mtu);
		if (d->ipv4)
			fprintf(batch, "address add %s/%u dev %s\n", ip, d->ipv4_prefix, name);
		if (d->link == SF_LINK_ETH && d->ipv6_prefix) {
			char ip6[INET6_ADDRSTRLEN];

			inet_ntop(AF_INET6, d->ipv6, ip6, sizeof(ip6));
			fprintf(batch, "address add %s/%u dev %s nodad\n", ip6, d->ipv6_prefix,
				name);
		}
		fprintf(batch, "link set %s-wire up\nlink set %s up\n", name, name);
		if (out) {
			char addr[40];

			snprintf(addr, sizeof(addr), "%s/%u", ip, d->ipv4_prefix);
			fprintf(out, "%-8s %-8u %-10s %-18s %-18s %u\n", name,
				NETNS_IFINDEX_BASE + i, d->name, d->ipv4 ? addr : "-", mac, mtu);
		}
	}
	ret = fclose(batch);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	} else {
		char *run[] = {"ip", "-n", (char *)ns, "-batch", path, NULL};

		ret = netns_run(run, err, errlen);
	}
	unlink(path);
	if (ret) {
		netns_run(del, ignore, sizeof(ignore));
		return -1;
	}
	return 0;
}

int sf_netns_delete(const char *ns, char *err, size_t errlen)
{
	char *del[] = {"ip", "netns", "delete", (char *)ns, NULL};

	return netns_run(del, err, errlen);
}
