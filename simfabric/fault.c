// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Fault injection: what a cable pull, an SM re-registration, a device removal or a lossy
 * link look like to the applications on the fabric.
 */
#include <errno.h>

#include "sf.h"
#include "sf_priv.h"

/*
 * Port down: the port goes DOWN, every context of the device gets IBV_EVENT_PORT_ERR; on
 * IB the kernel's multicast module also fails every join on that port with -ENETRESET
 * (drivers/infiniband/core/multicast.c, mcast_event_handler), the application must leave
 * and join again. RoCE produces no multicast error. Port up: ACTIVE + IBV_EVENT_PORT_ACTIVE.
 * Setting the state the port is already in changes nothing and raises no event.
 */
int sf_port_set(struct sf_fabric *fab, uint32_t dev, bool up)
{
	struct sf_dev *d;
	uint32_t was;

	if (dev >= fab->ndevs || fab->devs[dev].removed)
		return -ENODEV;
	d = &fab->devs[dev];
	sf_lock(fab);
	was = atomic_load(&d->port_state);
	/*
	 * Events come with a change of state only, as from a driver: a port set to the
	 * state it is in raises nothing (a second PORT_ACTIVE would make applications join
	 * again for no reason; the soak's clean-up did that, mid-epoch).
	 */
	if (was == (up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN)) {
		sf_unlock(fab);
		return 0;
	}
	if (up) {
		atomic_store(&d->port_state, IBV_PORT_ACTIVE);
		sf_unlock(fab);
		sf_async_post_dev(fab, dev, IBV_EVENT_PORT_ACTIVE);
		return 0;
	}
	atomic_store(&d->port_state, IBV_PORT_DOWN);
	if (d->link == SF_LINK_IB)
		sf_joins_error_dev_locked(fab, dev, -ENETRESET);
	sf_unlock(fab);
	sf_async_post_dev(fab, dev, IBV_EVENT_PORT_ERR);
	return 0;
}

/* SM asked the port to re-register: IBV_EVENT_CLIENT_REREGISTER, joins fail -ENETRESET. */
int sf_client_reregister(struct sf_fabric *fab, uint32_t dev)
{
	if (dev >= fab->ndevs || fab->devs[dev].removed)
		return -ENODEV;
	if (fab->devs[dev].link != SF_LINK_IB)
		return -EOPNOTSUPP;
	sf_lock(fab);
	sf_joins_error_dev_locked(fab, dev, -ENETRESET);
	sf_unlock(fab);
	sf_async_post_dev(fab, dev, IBV_EVENT_CLIENT_REREGISTER);
	return 0;
}

/*
 * Device removal: the port stops, contexts get IBV_EVENT_DEVICE_FATAL and every rdma_cm
 * id with a join on it RDMA_CM_EVENT_DEVICE_REMOVAL. The device disappears from new
 * device lists.
 */
int sf_device_remove(struct sf_fabric *fab, uint32_t dev)
{
	struct sf_dev *d;

	if (dev >= fab->ndevs)
		return -ENODEV;
	d = &fab->devs[dev];
	sf_lock(fab);
	d->removed = 1;
	atomic_store(&d->port_state, IBV_PORT_DOWN);
	for (uint32_t i = 0; i < SF_MAX_JOINS; i++) {
		struct sf_join *j = &fab->joins[i];
		struct sf_msg m = {.kind = SF_MSG_CM_DEVRM};

		if (!j->own.pid || j->dev != dev)
			continue;
		m.cookie = j->id_cookie;
		m.cookie2 = j->mc_cookie;
		sf_endpoint_send(j->chan_pid, j->chan_serial, &m);
	}
	sf_unlock(fab);
	sf_async_post_dev(fab, dev, IBV_EVENT_DEVICE_FATAL);
	return 0;
}

int sf_loss_set(struct sf_fabric *fab, uint32_t seg, uint32_t ppm)
{
	if (seg >= fab->nsegs)
		return -ENOENT;
	if (ppm > 1000000)
		return -EINVAL;
	atomic_store(&fab->segs[seg].loss_ppm, ppm);
	return 0;
}

/*
 * A send queue that hangs: the QP's sends are accepted (ibv_post_send returns 0 while the
 * queue has room, ENOMEM when it is full, as before) but neither sent nor completed; when
 * the hang ends they are sent and completed in order by the owner's next ibv_post_send,
 * or its next ibv_poll_cq of the send CQ that finds it empty (qp.c). What a QP whose
 * hardware queue stopped, or whose completions were lost, looks like to its owner.
 */
int sf_sq_hang_set(struct sf_fabric *fab, uint32_t dev, uint32_t qpn, bool on)
{
	int ret = -ENOENT;

	if (dev >= fab->ndevs || fab->devs[dev].removed)
		return -ENODEV;
	sf_lock(fab);
	for (uint32_t i = 0; i < SF_MAX_QPS; i++) {
		struct sf_qp *q = &fab->qps[i];

		if (q->own.pid && q->dev == dev && q->qpn == qpn) {
			atomic_store(&q->sq_hang, on ? 1u : 0u);
			ret = 0;
			break;
		}
	}
	sf_unlock(fab);
	return ret;
}
