// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Devices, contexts, queries, protection domains, address handles, multicast attach,
 * completion channels and async events of the simulated libibverbs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "sf.h"
#include "sf_priv.h"

/* Attributes of a ConnectX-6 (MT4123) as reported by mlx5, capped at the fabric's tables. */
#define SF_VENDOR_ID	  0x02c9
#define SF_VENDOR_PART_ID 4123
#define SF_MAX_QP_WR	  32768
#define SF_MAX_SGE	  30
#define SF_MAX_CQE	  4194303
#define SF_MAX_INLINE	  256
#define SF_PKEY_TBL_IB	  128
#define SF_GID_TBL_IB	  128
#define SF_GID_TBL_ETH	  255

static struct sf_device g_devs[SF_MAX_DEVS];
static pthread_once_t g_devs_once = PTHREAD_ONCE_INIT;

static void sf_devs_init(void)
{
	struct sf_fabric *fab = sf_get();

	if (!fab)
		return;
	for (uint32_t i = 0; i < fab->ndevs; i++) {
		struct sf_device *d = &g_devs[i];

		d->index = i;
		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->dev.name, sizeof(d->dev.name), "%s", fab->devs[i].name);
		snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%u", i);
		sf_sysfs_dev_path(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), fab->name,
				  fab->devs[i].name);
		sf_sysfs_root(d->dev.dev_path, sizeof(d->dev.dev_path), fab->name);
		snprintf(d->dev.dev_path + strlen(d->dev.dev_path),
			 sizeof(d->dev.dev_path) - strlen(d->dev.dev_path),
			 "/class/infiniband_verbs/uverbs%u", i);
	}
	/* The directories ibdev_path names exist once the list is handed out. */
	sf_sysfs_refresh(fab, false);
}

SF_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct sf_fabric *fab = sf_get();
	struct ibv_device **list;
	int n = 0;

	if (num)
		*num = 0;
	if (!fab)
		return NULL;
	pthread_once(&g_devs_once, sf_devs_init);
	list = calloc(fab->ndevs + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < fab->ndevs; i++)
		if (!fab->devs[i].removed)
			list[n++] = &g_devs[i].dev;
	if (num)
		*num = n;
	return list;
}

SF_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

SF_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

SF_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct sf_fabric *fab = sf_get();
	struct sf_device *d = (struct sf_device *)device;

	return fab ? fab->devs[d->index].node_guid : 0;
}

SF_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return (int)((struct sf_device *)device)->index;
}

int sf_context_dev(struct ibv_context *ctx)
{
	if (!ctx || ctx->abi_compat != __VERBS_ABI_IS_EXTENDED)
		return -1;
	return (int)sf_ctx_of(ctx)->dev;
}

static int sf_query_port_ex(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *attr, size_t attr_len);
static int sf_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_qp *sf_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_cq_ex *sf_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
int sf_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sf_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int sf_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sf_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* srq.c */
int sf_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_srq *sf_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
int sf_srq_caps(uint32_t *max_srq_wr, uint32_t *max_srq_sge);

SF_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sf_fabric *fab = sf_get();
	struct sf_device *d = (struct sf_device *)device;
	struct sf_context *c;
	struct ibv_context *ctx;
	uint32_t ci;
	int fd;

	if (!fab)
		return NULL;
	if (fab->devs[d->index].removed) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->fab = fab;
	c->dev = d->index;
	sf_lock(fab);
	for (ci = 0; ci < SF_MAX_CTXS; ci++)
		if (!fab->ctxs[ci].own.pid)
			break;
	if (ci == SF_MAX_CTXS) {
		sf_unlock(fab);
		free(c);
		errno = EMFILE;
		return NULL;
	}
	sf_owner_claim(&fab->ctxs[ci].own);
	fab->ctxs[ci].dev = d->index;
	c->ctx_index = ci;
	fd = sf_endpoint_open(fab->ctxs[ci].own.serial);
	if (fd < 0) {
		sf_owner_release(&fab->ctxs[ci].own);
		sf_unlock(fab);
		free(c);
		errno = -fd;
		return NULL;
	}
	sf_unlock(fab);

	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = sf_query_port_ex;
	c->vctx.query_device_ex = sf_query_device_ex;
	c->vctx.create_qp_ex = sf_create_qp_ex;
	c->vctx.create_cq_ex = sf_create_cq_ex;
	c->vctx.create_srq_ex = sf_create_srq_ex;
	ctx = &c->vctx.context;
	ctx->device = device;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->ops.poll_cq = sf_poll_cq;
	ctx->ops.req_notify_cq = sf_req_notify_cq;
	ctx->ops.post_send = sf_post_send;
	ctx->ops.post_recv = sf_post_recv;
	ctx->ops.post_srq_recv = sf_post_srq_recv;
	ctx->async_fd = fd;
	/* The command fd of a real context is /dev/infiniband/uverbsN; nothing is ever
	 * written to it by applications, /dev/null keeps it a valid descriptor. */
	ctx->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ctx->num_comp_vectors = (int)sysconf(_SC_NPROCESSORS_ONLN);
	pthread_mutex_init(&ctx->mutex, NULL);
	sf_sysfs_start(fab);
	return ctx;
}

SF_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_fabric *fab = c->fab;

	sf_lock(fab);
	sf_owner_release(&fab->ctxs[c->ctx_index].own);
	sf_unlock(fab);
	close(context->async_fd);
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	pthread_mutex_destroy(&context->mutex);
	free(c);
	return 0;
}

static void sf_fill_device_attr(struct sf_fabric *fab, uint32_t dev, struct ibv_device_attr *a)
{
	struct sf_dev *d = &fab->devs[dev];
	uint32_t srq_wr, srq_sge;

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", SF_FW_VER);
	a->node_guid = d->node_guid;
	a->sys_image_guid = d->sys_image_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffffffffffff000ull;
	a->vendor_id = SF_VENDOR_ID;
	a->vendor_part_id = SF_VENDOR_PART_ID;
	a->hw_ver = 0;
	a->max_qp = SF_MAX_QPS;
	a->max_qp_wr = SF_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
			      IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_UD_IP_CSUM | IBV_DEVICE_XRC |
			      IBV_DEVICE_MEM_MGT_EXTENSIONS | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_sge = SF_MAX_SGE;
	a->max_sge_rd = SF_MAX_SGE;
	a->max_cq = SF_MAX_CQS;
	a->max_cqe = SF_MAX_CQE;
	a->max_mr = SF_MAX_MRS;
	a->max_pd = 16777216;
	a->max_qp_rd_atom = 16;
	a->max_res_rd_atom = 2097152;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mw = 16777216;
	a->max_mcast_grp = SF_SEG_MAX_GROUPS; /* what a subnet holds here (groups.c) */
	a->max_mcast_qp_attach = 240;
	a->max_total_mcast_qp_attach = 503316480;
	a->max_ah = INT32_MAX;
	/* Shared receive queues (srq.c) as a ConnectX-6 reports them, or none under
	 * SIMFABRIC_NO_SRQ. */
	a->max_srq = sf_srq_caps(&srq_wr, &srq_sge);
	a->max_srq_wr = (int)srq_wr;
	a->max_srq_sge = (int)srq_sge;
	a->max_pkeys = d->link == SF_LINK_IB ? SF_PKEY_TBL_IB : 1;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = 1;
}

SF_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct sf_context *c = sf_ctx_of(context);

	sf_fill_device_attr(c->fab, c->dev, attr);
	return 0;
}

static int sf_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct sf_context *c = sf_ctx_of(context);
	struct ibv_device_attr_ex a;

	if (input && input->comp_mask)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	sf_fill_device_attr(c->fab, c->dev, &a.orig_attr);
	a.max_dm_size = 0;
	a.completion_timestamp_mask = 0;
	a.hca_core_clock = 0;
	a.raw_packet_caps = 0;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

void sf_port_attr_fill(struct sf_fabric *fab, uint32_t dev, struct ibv_port_attr *a)
{
	struct sf_dev *d = &fab->devs[dev];
	bool ib = d->link == SF_LINK_IB;
	uint32_t state = atomic_load(&d->port_state);

	memset(a, 0, sizeof(*a));
	a->state = state;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = d->active_mtu;
	a->gid_tbl_len = ib ? SF_GID_TBL_IB : SF_GID_TBL_ETH;
	a->port_cap_flags = ib ? 0x2651e848u : 0x04010000u;
	a->max_msg_sz = 0x40000000;
	a->bad_pkey_cntr = 0;
	{
		struct sf_counters c;

		sf_counters_read(fab, dev, &c);
		a->qkey_viol_cntr = (uint32_t)atomic_load(&c.qkey_viol);
	}
	a->pkey_tbl_len = ib ? SF_PKEY_TBL_IB : 1;
	a->lid = ib ? (uint16_t)d->lid : 0;
	a->sm_lid = ib ? (uint16_t)d->sm_lid : 0;
	a->lmc = 0;
	a->max_vl_num = ib ? 4 : 0;
	a->sm_sl = 0;
	a->subnet_timeout = ib ? 18 : 0;
	a->active_width = 2;		/* 4x */
	a->active_speed = ib ? 64 : 32; /* HDR on IB, 25G lanes (100GbE) on Ethernet */
	a->phys_state = state == IBV_PORT_ACTIVE ? 5 /* LinkUp */ : 3 /* Disabled */;
	a->link_layer = ib ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
	a->flags = ib ? 0 : IBV_QPF_GRH_REQUIRED;
}

static int sf_query_port_ex(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *attr, size_t attr_len)
{
	struct sf_context *c = sf_ctx_of(context);
	struct ibv_port_attr a;

	if (port_num != 1)
		return EINVAL;
	sf_port_attr_fill(c->fab, c->dev, &a);
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The exported symbol behind the inline ibv_query_port (compat layout is a prefix). */
#undef ibv_query_port
SF_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *port_attr)
{
	return sf_query_port_ex(context, port_num, (struct ibv_port_attr *)port_attr,
				sizeof(struct ibv_port_attr));
}

SF_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			    union ibv_gid *gid)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_dev *d = &c->fab->devs[c->dev];
	int len = d->link == SF_LINK_IB ? SF_GID_TBL_IB : SF_GID_TBL_ETH;

	if (port_num != 1 || index < 0 || index >= len) {
		errno = EINVAL;
		return -1;
	}
	if (index < SF_GID_MAX && d->gids[index].valid)
		*gid = d->gids[index].gid;
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

/* Private to rdma-core (IBVERBS_PRIVATE_34); ibv_devinfo uses it to print the GID type. */
enum sf_gid_type_sysfs {
	SF_GID_TYPE_SYSFS_IB_ROCE_V1,
	SF_GID_TYPE_SYSFS_ROCE_V2,
};

SF_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
				 enum sf_gid_type_sysfs *type)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_dev *d = &c->fab->devs[c->dev];

	if (port_num != 1 || index >= SF_GID_MAX || !d->gids[index].valid) {
		errno = EINVAL;
		return -1;
	}
	*type = d->gids[index].type == IBV_GID_TYPE_ROCE_V2 ? SF_GID_TYPE_SYSFS_ROCE_V2
							    : SF_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

SF_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_dev *d = &c->fab->devs[c->dev];
	struct ibv_gid_entry e;

	if (flags || port_num != 1)
		return EINVAL;
	if (gid_index >= SF_GID_MAX || !d->gids[gid_index].valid)
		return ENODATA;
	memset(&e, 0, sizeof(e));
	e.gid = d->gids[gid_index].gid;
	e.gid_index = gid_index;
	e.port_num = port_num;
	e.gid_type = d->gids[gid_index].type;
	e.ndev_ifindex = d->link == SF_LINK_ETH ? 100 + c->dev : 0;
	memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
	return 0;
}

SF_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_dev *d = &c->fab->devs[c->dev];
	size_t n = 0;

	if (flags)
		return -EINVAL;
	for (uint32_t i = 0; i < SF_GID_MAX; i++) {
		if (!d->gids[i].valid)
			continue;
		if (n == max_entries)
			return -EINVAL;
		_ibv_query_gid_ex(context, 1, i,
				  (struct ibv_gid_entry *)((char *)entries + n * entry_size), 0,
				  entry_size);
		n++;
	}
	return (ssize_t)n;
}

SF_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	struct sf_context *c = sf_ctx_of(context);
	struct sf_dev *d = &c->fab->devs[c->dev];
	int len = d->link == SF_LINK_IB ? SF_PKEY_TBL_IB : 1;

	if (port_num != 1 || index < 0 || index >= len) {
		errno = EINVAL;
		return -1;
	}
	*pkey = index == 0 ? htons((uint16_t)d->pkey) : 0;
	return 0;
}

SF_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	__be16 p;

	if (ibv_query_pkey(context, port_num, 0, &p))
		return -1;
	if (p == pkey)
		return 0;
	errno = ENOENT;
	return -1;
}

/* ---- protection domains ---- */

static _Atomic uint32_t g_pd_handle;

SF_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = context;
	pd->handle = atomic_fetch_add(&g_pd_handle, 1) + 1;
	return pd;
}

SF_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

/* ---- address handles ---- */

SF_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct sf_context *c = sf_ctx_of(pd->context);
	struct sf_dev *d = &c->fab->devs[c->dev];
	struct sf_ah_priv *ah;

	if (attr->port_num != 1) {
		errno = EINVAL;
		return NULL;
	}
	if (d->link == SF_LINK_ETH && !attr->is_global) {
		/* RoCE needs a GRH to address anything (IBV_QPF_GRH_REQUIRED). */
		errno = EINVAL;
		return NULL;
	}
	if (attr->is_global &&
	    (attr->grh.sgid_index >= SF_GID_MAX || !d->gids[attr->grh.sgid_index].valid)) {
		errno = EINVAL;
		return NULL;
	}
	/* 64-byte aligned: the send path's fields fill the AH's second cache line. */
	ah = aligned_alloc(64, (sizeof(*ah) + 63) & ~(size_t)63);
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	memset(ah, 0, sizeof(*ah));
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->attr = *attr;
	ah->dev = c->dev;
	ah->group = UINT32_MAX;
	ah->sgid = d->gids[attr->is_global ? attr->grh.sgid_index : 0].gid;
	ah->hot.dgid = attr->grh.dgid;
	ah->hot.sgid = ah->sgid;
	ah->hot.flow_label = attr->grh.flow_label;
	ah->hot.dlid = attr->dlid;
	ah->hot.traffic_class = attr->grh.traffic_class;
	ah->hot.hop_limit = attr->grh.hop_limit;
	ah->hot.is_global = attr->is_global;
	if (attr->is_global)
		ah->mcast =
			attr->grh.dgid.raw[0] == 0xff || (sf_gid_is_ipv4(&attr->grh.dgid) &&
							  (attr->grh.dgid.raw[12] & 0xf0) == 0xe0);
	else
		ah->mcast = attr->dlid >= SF_IB_MLID_BASE && attr->dlid < 0xffff;
	return &ah->ah;
}

SF_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(ah);
	return 0;
}

/* ---- multicast attach ---- */

SF_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;
	struct sf_fabric *fab = sf_get();
	struct sf_group *g;
	int r;

	/* A multicast GID: ff00::/8 (IB, RoCE v1) or an IPv4-mapped 224.0.0.0/4 (RoCE v2). */
	bool mc = gid->raw[0] == 0xff || (sf_gid_is_ipv4(gid) && (gid->raw[12] & 0xf0) == 0xe0);

	if (qp->qp_type != IBV_QPT_UD || !mc)
		return EINVAL;
	sf_lock(fab);
	g = sf_group_get_locked(fab, fab->devs[q->dev].seg, gid,
				fab->devs[q->dev].link == SF_LINK_IB ? lid : 0);
	if (!g) {
		sf_unlock(fab);
		return ENOMEM;
	}
	r = sf_group_attach_locked(fab, g, q->index);
	if (r)
		sf_group_put_locked(fab, g);
	sf_unlock(fab);
	return -r;
}

SF_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	struct sf_qp_priv *q = (struct sf_qp_priv *)qp;
	struct sf_fabric *fab = sf_get();
	struct sf_group *g;
	int r;

	(void)lid;
	sf_lock(fab);
	g = sf_group_find(fab, fab->devs[q->dev].seg, gid);
	if (!g) {
		sf_unlock(fab);
		return EINVAL;
	}
	r = sf_group_detach_locked(fab, g, q->index);
	if (!r)
		sf_group_put_locked(fab, g);
	sf_unlock(fab);
	return -r;
}

/* ---- completion channels ---- */

SF_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sf_comp_channel *ch = calloc(1, sizeof(*ch));
	int fd;

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->serial = sf_serial_next();
	fd = sf_endpoint_open(ch->serial);
	if (fd < 0) {
		free(ch);
		errno = -fd;
		return NULL;
	}
	ch->ch.context = context;
	ch->ch.fd = fd;
	ch->ch.refcnt = 0;
	return &ch->ch;
}

SF_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (channel->refcnt)
		return EBUSY;
	close(channel->fd);
	free(channel);
	return 0;
}

/* ---- async events ---- */

SF_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sf_msg m;
	ssize_t n;

	/* One recv, never retried: a signal ends it as in rdma-core (see ibv_get_cq_event). */
	n = recv(context->async_fd, &m, sizeof(m), 0);
	if (n != (ssize_t)sizeof(m)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	memset(event, 0, sizeof(*event));
	event->event_type = m.type;
	switch (m.type) {
	case IBV_EVENT_CQ_ERR:
		event->element.cq = (struct ibv_cq *)(uintptr_t)m.cookie;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		event->element.qp = (struct ibv_qp *)(uintptr_t)m.cookie;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		event->element.srq = (struct ibv_srq *)(uintptr_t)m.cookie;
		break;
	case IBV_EVENT_DEVICE_FATAL:
		event->element.port_num = 0;
		break;
	default:
		event->element.port_num = (int)m.port;
		break;
	}
	return 0;
}

SF_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
