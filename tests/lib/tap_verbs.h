/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tap_verbs.h - what the verbs tests with TAP output (tests/simfabric) share, beside
 * tap.h. Header-only, as tap.h: #include "tap_verbs.h" after "tap.h".
 */
#ifndef TESTS_TAP_VERBS_H
#define TESTS_TAP_VERBS_H

#include <string.h>
#include <infiniband/verbs.h>

#include "tap.h"

/* Open the verbs device `name` (ibv_get_device_list, ibv_open_device): its context, or
 * NULL when there is none or it does not open. */
static inline struct ibv_context *tap_find_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/* tap_find_dev, or stop the test (tap_bail) when it finds none. */
static inline struct ibv_context *tap_open_dev(const char *name)
{
	struct ibv_context *ctx = tap_find_dev(name);

	if (!ctx)
		tap_bail(name);
	return ctx;
}

/* Take UD QP `qp` of port 1 through INIT (P_Key index 0, Q_Key `qkey`), RTR and RTS, or
 * stop the test (tap_bail, naming the state that failed). */
static inline void tap_ud_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		tap_bail("INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		tap_bail("RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		tap_bail("RTS");
}

#endif /* TESTS_TAP_VERBS_H */
