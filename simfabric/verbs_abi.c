// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * verbs_abi.c: the rest of libibverbs.so.1's ABI (rdma-core 44, Debian 12), so that a
 * verbs program written for real hosts loads on the simulated fabric whatever it links
 * to (tests/simfabric/abi.sh compares the dynamic symbol tables with the real library).
 *
 * What the simulated device does not implement answers as rdma-core answers for a
 * provider without that operation (libibverbs/dummy_ops.c): constructors return NULL
 * with errno EOPNOTSUPP, int verbs return EOPNOTSUPP, void verbs do nothing. The device
 * advertises no CQ resize, so a program that checks the attributes first never calls
 * it. docs/simfabric.md lists every such call.
 *
 * Three groups:
 * - public calls of IBVERBS_1.1 .. 1.14 (CQ resize, re-registration, imports,
 *   ECE, dma-buf, the kernel-ABI copy helpers, L2 resolution, QP extension);
 * - IBVERBS_1.0: the compatibility entry points for binaries linked before 2006
 *   against the 1.0 ABI (struct ibv_*_1_0); none is built against Debian 12's headers,
 *   and the simulation refuses them rather than convert every old structure;
 * - IBVERBS_PRIVATE_34: the provider (driver) interface. The simulated library loads
 *   no provider, so a provider that calls it gets EOPNOTSUPP.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <rdma/ib_user_sa.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "sf.h"

/* Mark f as the non-default version `sym@node` (the compatibility and legacy nodes). */
#define SF_SYMVER(f, sym, node) __asm__(".symver " #f ", " #sym "@" #node)

/* ---- IBVERBS_1.1: CQ resize, re-registration (not simulated; SRQs: srq.c) ---- */

SF_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq;
	(void)cqe;
	return EOPNOTSUPP;
}

/* As libibverbs: bad flags are EINVAL before the provider is asked. */
SF_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	(void)mr;
	(void)pd;
	(void)addr;
	(void)length;
	(void)access;
	errno = (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ? EINVAL : EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

/*
 * ibv_resolve_eth_l2_from_gid: the destination MAC of a RoCE address handle. Multicast
 * GIDs map as the kernel maps IP multicast (01:00:5e + 23 bits for IPv4, 33:33 + 32
 * bits for IPv6); a unicast GID is looked up among the fabric's devices (the
 * simulation's neighbour table). No VLANs: *vid is 0xffff, as rdma-core reports an
 * untagged interface. Returns 0, ibv_query_gid's error, or a negative errno.
 */
SF_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					  uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	const uint8_t *d = attr->grh.dgid.raw;
	union ibv_gid sgid;
	struct sf_fabric *fab;
	int err, dev;

	err = ibv_query_gid(context, attr->port_num, attr->grh.sgid_index, &sgid);
	if (err)
		return err;
	if (sf_gid_is_ipv4(&attr->grh.dgid) && (d[12] & 0xf0) == 0xe0) {
		const uint8_t m[ETHERNET_LL_SIZE] = {0x01, 0x00, 0x5e, d[13] & 0x7f, d[14], d[15]};

		memcpy(eth_mac, m, sizeof(m));
	} else if (d[0] == 0xff) {
		const uint8_t m[ETHERNET_LL_SIZE] = {0x33, 0x33, d[12], d[13], d[14], d[15]};

		memcpy(eth_mac, m, sizeof(m));
	} else {
		fab = sf_get();
		if (!fab)
			return -ENODEV;
		dev = sf_dev_by_gid(fab, &attr->grh.dgid, NULL);
		if (dev < 0)
			return -EHOSTUNREACH;
		memcpy(eth_mac, fab->devs[dev].mac, ETHERNET_LL_SIZE);
	}
	if (vid)
		*vid = 0xffff;
	return 0;
}

/* ---- IBVERBS_1.0 / 1.1: the kernel-ABI copy helpers (pure conversions) ---- */

SF_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

SF_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

SF_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
	dst->packet_life_time_selector = src->packet_life_time_selector;
}

SF_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(src->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(src->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
	dst->packet_life_time_selector = src->packet_life_time_selector;
}

/* ---- IBVERBS_1.6 .. 1.14 ---- */

/* ibv_qp_to_qp_ex: qp.c (QPs created with send_ops_flags). */

/* Sharing a context between processes needs the kernel's uverbs file: not simulated. */
SF_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

SF_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

SF_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

SF_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

SF_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

SF_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

SF_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

/* Enhanced connection establishment is a connected-QP feature. */
SF_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

SF_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

SF_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/* No in-order placement guarantee is advertised (as a provider without the op). */
SF_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}

/* ---- IBVERBS_1.0: the 1.0 ABI's compatibility entry points, refused ---- */

static void *compat_null(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

#define SF_COMPAT_PTR(sym)                                                                        \
	SF_EXPORT void *compat_##sym(void);                                                    \
	SF_EXPORT void *compat_##sym(void)                                                     \
	{                                                                                         \
		return compat_null();                                                          \
	}                                                                                         \
	SF_SYMVER(compat_##sym, sym, IBVERBS_1.0)

#define SF_COMPAT_INT(sym)                                                                        \
	SF_EXPORT int compat_##sym(void);                                                      \
	SF_EXPORT int compat_##sym(void)                                                       \
	{                                                                                         \
		return EOPNOTSUPP;                                                                \
	}                                                                                         \
	SF_SYMVER(compat_##sym, sym, IBVERBS_1.0)

#define SF_COMPAT_VOID(sym)                                                                       \
	SF_EXPORT void compat_##sym(void);                                                     \
	SF_EXPORT void compat_##sym(void)                                                      \
	{                                                                                         \
	}                                                                                         \
	SF_SYMVER(compat_##sym, sym, IBVERBS_1.0)

SF_COMPAT_PTR(ibv_get_device_list);
SF_COMPAT_VOID(ibv_free_device_list);
SF_COMPAT_PTR(ibv_get_device_name);

SF_EXPORT uint64_t compat_ibv_get_device_guid(void);
SF_EXPORT uint64_t compat_ibv_get_device_guid(void)
{
	return 0;
}
SF_SYMVER(compat_ibv_get_device_guid, ibv_get_device_guid, IBVERBS_1.0);
SF_COMPAT_PTR(ibv_open_device);
SF_COMPAT_INT(ibv_close_device);
SF_COMPAT_INT(ibv_get_async_event);
SF_COMPAT_VOID(ibv_ack_async_event);
SF_COMPAT_INT(ibv_query_device);
SF_COMPAT_INT(ibv_query_port);
SF_COMPAT_INT(ibv_query_gid);
SF_COMPAT_INT(ibv_query_pkey);
SF_COMPAT_PTR(ibv_alloc_pd);
SF_COMPAT_INT(ibv_dealloc_pd);
SF_COMPAT_PTR(ibv_reg_mr);
SF_COMPAT_INT(ibv_dereg_mr);
SF_COMPAT_PTR(ibv_create_cq);
SF_COMPAT_INT(ibv_resize_cq);
SF_COMPAT_INT(ibv_destroy_cq);
SF_COMPAT_INT(ibv_get_cq_event);
SF_COMPAT_VOID(ibv_ack_cq_events);
SF_COMPAT_PTR(ibv_create_srq);
SF_COMPAT_INT(ibv_modify_srq);
SF_COMPAT_INT(ibv_query_srq);
SF_COMPAT_INT(ibv_destroy_srq);
SF_COMPAT_PTR(ibv_create_qp);
SF_COMPAT_INT(ibv_query_qp);
SF_COMPAT_INT(ibv_modify_qp);
SF_COMPAT_INT(ibv_destroy_qp);
SF_COMPAT_PTR(ibv_create_ah);
SF_COMPAT_INT(ibv_destroy_ah);
SF_COMPAT_INT(ibv_attach_mcast);
SF_COMPAT_INT(ibv_detach_mcast);

/* The pre-2017 driver registration (IBVERBS_1.1, non-default): nothing to register. */
SF_EXPORT void compat_ibv_register_driver(const char *name, void *init_func);
SF_EXPORT void compat_ibv_register_driver(const char *name, void *init_func)
{
	(void)name;
	(void)init_func;
}
SF_SYMVER(compat_ibv_register_driver, ibv_register_driver, IBVERBS_1.1);

/* ---- IBVERBS_PRIVATE_34: the provider interface; no provider is loaded ---- */

/* Read by providers that allow destroying objects after a device disassociates. */
SF_EXPORT bool verbs_allow_disassociate_destroy;

SF_EXPORT void verbs_register_driver_34(const void *ops);
SF_EXPORT void verbs_register_driver_34(const void *ops)
{
	(void)ops;
}

SF_EXPORT void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...);
SF_EXPORT void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

SF_EXPORT void verbs_set_ops(void *vctx, const void *ops);
SF_EXPORT void verbs_set_ops(void *vctx, const void *ops)
{
	(void)vctx;
	(void)ops;
}

SF_EXPORT void verbs_uninit_context(void *vctx);
SF_EXPORT void verbs_uninit_context(void *vctx)
{
	(void)vctx;
}

SF_EXPORT void verbs_init_cq(void *cq, void *context, void *channel, void *cq_context);
SF_EXPORT void verbs_init_cq(void *cq, void *context, void *channel, void *cq_context)
{
	(void)cq;
	(void)context;
	(void)channel;
	(void)cq_context;
}

SF_EXPORT void *verbs_open_device(void *device, void *private_data);
SF_EXPORT void *verbs_open_device(void *device, void *private_data)
{
	(void)device;
	(void)private_data;
	return compat_null();
}

SF_EXPORT void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t alloc_size,
					      void *context_offset, uint32_t driver_id);
SF_EXPORT void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t alloc_size,
					      void *context_offset, uint32_t driver_id)
{
	(void)device;
	(void)cmd_fd;
	(void)alloc_size;
	(void)context_offset;
	(void)driver_id;
	return compat_null();
}

SF_EXPORT int execute_ioctl(void *context, void *cmd);
SF_EXPORT int execute_ioctl(void *context, void *cmd)
{
	(void)context;
	(void)cmd;
	return EOPNOTSUPP;
}

SF_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
SF_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

/* A provider's sysfs read: no provider, nothing read. Returns -1 with errno. */
SF_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt,
					...);
SF_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt,
					...)
{
	(void)buf;
	(void)size;
	(void)sysfs_dev;
	(void)fnfmt;
	errno = EOPNOTSUPP;
	return -1;
}

/* The kernel command wrappers: every one returns an errno value (EOPNOTSUPP). */
#define SF_CMD(sym)                                                                               \
	SF_EXPORT int sym(void);                                                                  \
	SF_EXPORT int sym(void)                                                                   \
	{                                                                                         \
		return EOPNOTSUPP;                                                                \
	}

SF_CMD(ibv_cmd_advise_mr)
SF_CMD(ibv_cmd_alloc_dm)
SF_CMD(ibv_cmd_alloc_mw)
SF_CMD(ibv_cmd_alloc_pd)
SF_CMD(ibv_cmd_attach_mcast)
SF_CMD(ibv_cmd_close_xrcd)
SF_CMD(ibv_cmd_create_ah)
SF_CMD(ibv_cmd_create_counters)
SF_CMD(ibv_cmd_create_cq)
SF_CMD(ibv_cmd_create_cq_ex)
SF_CMD(ibv_cmd_create_flow)
SF_CMD(ibv_cmd_create_flow_action_esp)
SF_CMD(ibv_cmd_create_qp)
SF_CMD(ibv_cmd_create_qp_ex)
SF_CMD(ibv_cmd_create_qp_ex2)
SF_CMD(ibv_cmd_create_rwq_ind_table)
SF_CMD(ibv_cmd_create_srq)
SF_CMD(ibv_cmd_create_srq_ex)
SF_CMD(ibv_cmd_create_wq)
SF_CMD(ibv_cmd_dealloc_mw)
SF_CMD(ibv_cmd_dealloc_pd)
SF_CMD(ibv_cmd_dereg_mr)
SF_CMD(ibv_cmd_destroy_ah)
SF_CMD(ibv_cmd_destroy_counters)
SF_CMD(ibv_cmd_destroy_cq)
SF_CMD(ibv_cmd_destroy_flow)
SF_CMD(ibv_cmd_destroy_flow_action)
SF_CMD(ibv_cmd_destroy_qp)
SF_CMD(ibv_cmd_destroy_rwq_ind_table)
SF_CMD(ibv_cmd_destroy_srq)
SF_CMD(ibv_cmd_destroy_wq)
SF_CMD(ibv_cmd_detach_mcast)
SF_CMD(ibv_cmd_free_dm)
SF_CMD(ibv_cmd_get_context)
SF_CMD(ibv_cmd_modify_cq)
SF_CMD(ibv_cmd_modify_flow_action_esp)
SF_CMD(ibv_cmd_modify_qp)
SF_CMD(ibv_cmd_modify_qp_ex)
SF_CMD(ibv_cmd_modify_srq)
SF_CMD(ibv_cmd_modify_wq)
SF_CMD(ibv_cmd_open_qp)
SF_CMD(ibv_cmd_open_xrcd)
SF_CMD(ibv_cmd_poll_cq)
SF_CMD(ibv_cmd_post_recv)
SF_CMD(ibv_cmd_post_send)
SF_CMD(ibv_cmd_post_srq_recv)
SF_CMD(ibv_cmd_query_context)
SF_CMD(ibv_cmd_query_device_any)
SF_CMD(ibv_cmd_query_mr)
SF_CMD(ibv_cmd_query_port)
SF_CMD(ibv_cmd_query_qp)
SF_CMD(ibv_cmd_query_srq)
SF_CMD(ibv_cmd_read_counters)
SF_CMD(ibv_cmd_reg_dm_mr)
SF_CMD(ibv_cmd_reg_dmabuf_mr)
SF_CMD(ibv_cmd_reg_mr)
SF_CMD(ibv_cmd_req_notify_cq)
SF_CMD(ibv_cmd_rereg_mr)
SF_CMD(ibv_cmd_resize_cq)
