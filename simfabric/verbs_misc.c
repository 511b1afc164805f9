// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The small libibverbs entry points: strings, rate conversions, fork support, sysfs
 * reads and address handles from a work completion.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "sf.h"
#include "sf_priv.h"

SF_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const str[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	if ((unsigned int)status < sizeof(str) / sizeof(str[0]) && str[status])
		return str[status];
	return "unknown";
}

SF_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const str[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	if ((unsigned int)event < sizeof(str) / sizeof(str[0]) && str[event])
		return str[event];
	return "unknown";
}

SF_EXPORT const char *ibv_port_state_str(enum ibv_port_state state)
{
	static const char *const str[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	if ((unsigned int)state < sizeof(str) / sizeof(str[0]))
		return str[state];
	return "unknown";
}

SF_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	switch (node_type) {
	case IBV_NODE_CA:
		return "InfiniBand channel adapter";
	case IBV_NODE_SWITCH:
		return "InfiniBand switch";
	case IBV_NODE_ROUTER:
		return "InfiniBand router";
	case IBV_NODE_RNIC:
		return "iWARP NIC";
	case IBV_NODE_USNIC:
		return "usNIC";
	case IBV_NODE_USNIC_UDP:
		return "usNIC UDP";
	case IBV_NODE_UNSPECIFIED:
		return "unspecified";
	default:
		return "unknown";
	}
}

/* Static rate enum <-> multiple of 2.5 Gb/s and Mb/s (IBTA table, as libibverbs). */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} sf_rates[] = {
	{IBV_RATE_2_5_GBPS, 1, 2500},	  {IBV_RATE_5_GBPS, 2, 5000},
	{IBV_RATE_10_GBPS, 4, 10000},	  {IBV_RATE_20_GBPS, 8, 20000},
	{IBV_RATE_30_GBPS, 12, 30000},	  {IBV_RATE_40_GBPS, 16, 40000},
	{IBV_RATE_60_GBPS, 24, 60000},	  {IBV_RATE_80_GBPS, 32, 80000},
	{IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 5, 14062},
	{IBV_RATE_56_GBPS, 22, 56250},	  {IBV_RATE_112_GBPS, 45, 112500},
	{IBV_RATE_168_GBPS, 67, 168750},  {IBV_RATE_25_GBPS, 10, 25781},
	{IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
	{IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
	{IBV_RATE_50_GBPS, 20, 53125},	  {IBV_RATE_400_GBPS, 160, 425000},
	{IBV_RATE_600_GBPS, 240, 637500},
};
#define SF_NRATES (sizeof(sf_rates) / sizeof(sf_rates[0]))

SF_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < SF_NRATES; i++)
		if (sf_rates[i].rate == rate)
			return sf_rates[i].mult;
	return -1;
}

SF_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < SF_NRATES; i++)
		if (sf_rates[i].mult == mult)
			return sf_rates[i].rate;
	return IBV_RATE_MAX;
}

SF_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < SF_NRATES; i++)
		if (sf_rates[i].rate == rate)
			return sf_rates[i].mbps;
	return -1;
}

SF_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < SF_NRATES; i++)
		if (sf_rates[i].mbps == mbps)
			return sf_rates[i].rate;
	return IBV_RATE_MAX;
}

/*
 * Fork support: the simulation needs none (no DMA), so there is nothing to set up; the
 * calls succeed like on a kernel with copy-on-fork for pinned pages.
 */
SF_EXPORT int ibv_fork_init(void)
{
	return 0;
}

SF_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

SF_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

SF_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

SF_EXPORT const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

/*
 * Reads of a simulated device's sysfs directory are answered from the fabric; anything
 * else is read from the file system like libibverbs does.
 */
SF_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	static const char prefix[] = "/sys/class/infiniband/";
	struct sf_fabric *fab;
	char path[512];
	ssize_t n;
	int fd, dev;

	if (!strncmp(dir, prefix, sizeof(prefix) - 1) && (fab = sf_get()) &&
	    (dev = sf_dev_by_name(fab, dir + sizeof(prefix) - 1)) >= 0) {
		const struct sf_dev *d = &fab->devs[dev];
		int len;

		if (!strcmp(file, "board_id"))
			len = snprintf(buf, size, SF_BOARD_ID);
		else if (!strcmp(file, "fw_ver"))
			len = snprintf(buf, size, SF_FW_VER);
		else if (!strcmp(file, "hca_type"))
			len = snprintf(buf, size, SF_HCA_TYPE);
		else if (!strcmp(file, "node_type"))
			len = snprintf(buf, size, "1: CA");
		else if (!strcmp(file, "node_desc"))
			len = snprintf(buf, size, "simfabric %s", d->name);
		else {
			errno = ENOENT;
			return -1;
		}
		return len < (int)size ? len : (int)size - 1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	else if ((size_t)n < size)
		buf[n] = 0;
	return (int)n;
}

/*
 * An address handle that answers the sender of a received packet (as libibverbs'
 * ibv_init_ah_from_wc): DLID = SLID, and with a GRH the source GID becomes the
 * destination (RoCEv2/IPv4: the source address of the IPv4 header).
 */
SF_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				  struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_dev *d = &c->fab->devs[c->dev];

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah_attr->is_global = 1;
	if (d->link == SF_LINK_ETH && ((uint8_t *)grh)[SF_IPV4_OFF] == 0x45) {
		const uint8_t *ip = (const uint8_t *)grh + SF_IPV4_OFF;
		uint32_t saddr;

		memcpy(&saddr, ip + 12, 4);
		sf_gid_from_ipv4(&ah_attr->grh.dgid, saddr);
		ah_attr->grh.hop_limit = 0xff;
		ah_attr->grh.traffic_class = ip[1];
		ah_attr->grh.sgid_index = (uint8_t)sf_dev_ipv4_gid_index(d);
		return 0;
	}
	if (d->link == SF_LINK_ETH && ((uint8_t *)grh)[0] >> 4 == 6) {
		/*
		 * RoCEv2 over IPv6 (rdma-core libibverbs/verbs.c, set_ah_attr_by_ipv6): no
		 * reply to a multicast destination; the source GID entry is the one holding
		 * the packet's destination address, of the type its next header names (UDP:
		 * RoCE v2); the hop limit and traffic class are the received ones.
		 */
		int g = -1;

		if (grh->dgid.raw[0] == 0xff) {
			errno = EINVAL;
			return -1;
		}
		if (grh->next_hdr == 17)
			g = sf_dev_v2_gid_index(d, &grh->dgid);
		if (g < 0) {
			errno = grh->next_hdr == 17 ? ENOENT : EPROTONOSUPPORT;
			return -1;
		}
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.flow_label = ntohl(grh->version_tclass_flow) & 0xfffff;
		ah_attr->grh.hop_limit = grh->hop_limit;
		ah_attr->grh.traffic_class = (ntohl(grh->version_tclass_flow) >> 20) & 0xff;
		ah_attr->grh.sgid_index = (uint8_t)g;
		return 0;
	}
	ah_attr->grh.dgid = grh->sgid;
	ah_attr->grh.flow_label = ntohl(grh->version_tclass_flow) & 0xfffff;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.traffic_class = (ntohl(grh->version_tclass_flow) >> 20) & 0xff;
	ah_attr->grh.sgid_index = 0;
	return 0;
}

SF_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}
