// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1: reading events (rdma_get_cm_event, rdma_ack_cm_event,
 * rdma_event_str), what librdmacm does when it reads one (cm_event_deliver_locked),
 * events sent by other processes (fault injection), the synchronous ids' wait for their
 * event (cm_complete, used by resolve, multicast and SIDR), and what waits for events to
 * be acknowledged: rdma_destroy_id and rdma_migrate_id. Calls the core and the SIDR
 * protocol (a REQ or REP read from a channel).
 */
#include "rdmacm_priv.h"

/* ---- reading events ---- */

/*
 * What librdmacm does when it reads an event: count it for the id (and join) it belongs
 * to; ADDR_RESOLVED: learn the device and addresses (failure: ADDR_ERROR, status -1 as
 * ucma_query_addr returns); MULTICAST_JOIN (ucma_process_join): remember MGID/MLID and
 * attach id->qp unless send-only; a failed attach makes it MULTICAST_ERROR with the
 * status rdma_seterrno gives (-1, errno set).
 */
static void cm_event_deliver_locked(struct cm_event *evt)
{
	struct cm_id *idp = evt->idp;
	struct cm_mc *mc = evt->mc;
	int ret;

	idp->reported++;
	if (mc)
		mc->reported++;
	switch (evt->ev.event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (cm_id_publish_locked(idp)) {
			evt->ev.event = RDMA_CM_EVENT_ADDR_ERROR;
			evt->ev.status = -1;
		}
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		mc->seen = true;
		mc->umgid = evt->ev.param.ud.ah_attr.grh.dgid;
		mc->umlid = evt->ev.param.ud.ah_attr.dlid;
		if (!idp->id.qp || mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
			break;
		ret = ibv_attach_mcast(idp->id.qp, &mc->umgid, mc->umlid);
		if (ret) {
			errno = ret;
			evt->ev.status = -1;
			evt->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		}
		break;
	default:
		break;
	}
}

/*
 * An event sent by another process (fault injection). MCERR: cookie = id, cookie2 =
 * join record, status; DEVRM: cookie = id. Unknown or stale cookies: NULL (dropped, as
 * the kernel drops events of destroyed ids). An event for an id that moved to another
 * channel is queued there.
 */
static struct cm_event *cm_remote_event_locked(struct cm_chan *ch, const struct sf_msg *msg)
{
	struct cm_id *idp = cm_id_lookup_locked(msg->cookie);
	struct cm_event *evt;
	struct cm_mc *mc = NULL;

	if (!idp)
		return NULL;
	if (msg->kind == SF_MSG_CM_MCERR) {
		mc = cm_mc_lookup_locked(idp, msg->cookie2);
		if (!mc)
			return NULL;
	} else {
		/* One DEVICE_REMOVAL per id (the fabric notifies every join of the id). */
		if (idp->removed)
			return NULL;
		idp->removed = true;
	}
	evt = malloc(sizeof(*evt));
	if (!evt)
		return NULL;
	if (mc) {
		cm_event_init(evt, idp, mc, RDMA_CM_EVENT_MULTICAST_ERROR, msg->status);
		evt->ev.param.ud.private_data = mc->context;
	} else {
		cm_event_init(evt, idp, NULL, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	}
	if (idp->chan != ch) {
		cm_chan_push_locked(idp->chan, evt);
		return NULL;
	}
	return evt;
}

/*
 * rdma_get_cm_event: one event from the channel; blocks in the channel's socket unless
 * the application made channel->fd non-blocking (-1/EAGAIN), -1/EINTR on a signal.
 * The event must be given back with rdma_ack_cm_event.
 */
SF_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_chan *ch;
	struct cm_event *evt;
	union {
		struct sf_msg msg;
		struct sf_sidr_msg sidr;
	} buf;
	const struct sf_msg *m = &buf.msg;
	bool migrate;
	ssize_t n;

	if (cm_init())
		return -1;
	if (!event || !channel)
		return cm_err(EINVAL);
	ch = container_of(channel, struct cm_chan, ch);
	for (;;) {
		n = recv(ch->ch.fd, &buf, sizeof(buf), 0);
		if (n < 0)
			return -1;
		evt = NULL;
		pthread_mutex_lock(&cmlib.lock);
		if (n == (ssize_t)sizeof(buf.sidr) && m->kind == SF_MSG_CM_SIDR_REQ)
			evt = cm_sidr_req_locked(ch, &buf.sidr);
		else if (n == (ssize_t)sizeof(buf.sidr) && m->kind == SF_MSG_CM_SIDR_REP)
			evt = cm_sidr_rep_locked(ch, &buf.sidr);
		else if (n == (ssize_t)sizeof(*m)) {
			switch (m->kind) {
			case SF_MSG_CM:
				ch->token = false;
				evt = cm_chan_pop_locked(ch);
				break;
			case SF_MSG_CM_MCERR:
			case SF_MSG_CM_DEVRM:
				evt = cm_remote_event_locked(ch, m);
				break;
			default:
				break;
			}
		}
		if (evt)
			cm_event_deliver_locked(evt);
		cm_chan_kick_locked(ch);
		migrate = evt && evt->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && evt->idp->sync;
		pthread_mutex_unlock(&cmlib.lock);
		/* ucma_process_conn_req: a synchronous listener's new id gets a channel of its own.
		 */
		if (migrate && rdma_migrate_id(evt->ev.id, NULL)) {
			rdma_destroy_id(evt->ev.id);
			rdma_ack_cm_event(&evt->ev);
			continue;
		}
		if (evt) {
			*event = &evt->ev;
			return 0;
		}
	}
}

/*
 * rdma_ack_cm_event: counts the event as completed for its id (and join), wakes
 * whoever waits in rdma_destroy_id / rdma_leave_multicast / rdma_migrate_id, frees it.
 */
SF_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *evt;

	if (!event)
		return cm_err(EINVAL);
	evt = container_of(event, struct cm_event, ev);
	pthread_mutex_lock(&cmlib.lock);
	if (evt->mc)
		evt->mc->completed++;
	evt->idp->completed++;
	pthread_cond_broadcast(&cmlib.cond);
	pthread_mutex_unlock(&cmlib.lock);
	free(evt);
	return 0;
}

/* rdma_event_str: the names upstream returns. */
SF_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return "RDMA_CM_EVENT_ADDR_RESOLVED";
	case RDMA_CM_EVENT_ADDR_ERROR:
		return "RDMA_CM_EVENT_ADDR_ERROR";
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return "RDMA_CM_EVENT_ROUTE_RESOLVED";
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return "RDMA_CM_EVENT_ROUTE_ERROR";
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return "RDMA_CM_EVENT_CONNECT_REQUEST";
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return "RDMA_CM_EVENT_CONNECT_RESPONSE";
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return "RDMA_CM_EVENT_CONNECT_ERROR";
	case RDMA_CM_EVENT_UNREACHABLE:
		return "RDMA_CM_EVENT_UNREACHABLE";
	case RDMA_CM_EVENT_REJECTED:
		return "RDMA_CM_EVENT_REJECTED";
	case RDMA_CM_EVENT_ESTABLISHED:
		return "RDMA_CM_EVENT_ESTABLISHED";
	case RDMA_CM_EVENT_DISCONNECTED:
		return "RDMA_CM_EVENT_DISCONNECTED";
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return "RDMA_CM_EVENT_DEVICE_REMOVAL";
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		return "RDMA_CM_EVENT_MULTICAST_JOIN";
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		return "RDMA_CM_EVENT_MULTICAST_ERROR";
	case RDMA_CM_EVENT_ADDR_CHANGE:
		return "RDMA_CM_EVENT_ADDR_CHANGE";
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
	default:
		return "UNKNOWN EVENT";
	}
}

/*
 * ucma_complete: for a synchronous id, wait for the event the call produced and turn
 * its status into errno (REJECTED: ECONNREFUSED; negative: -status; else status).
 */
int cm_complete(struct cm_id *idp)
{
	struct rdma_cm_event *ev;

	if (!idp->sync)
		return 0;
	if (idp->id.event) {
		rdma_ack_cm_event(idp->id.event);
		idp->id.event = NULL;
	}
	if (rdma_get_cm_event(idp->id.channel, &idp->id.event))
		return -1;
	ev = idp->id.event;
	if (ev->status) {
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			return cm_err(ECONNREFUSED);
		if (ev->status < 0)
			return cm_err(-ev->status);
		return cm_err(ev->status);
	}
	return 0;
}

/* ---- what waits for acknowledgements: destroying and migrating ids ---- */

/*
 * rdma_destroy_id: the kernel drops the id's memberships (not the QP attachments: the
 * application's QP stays attached until it is destroyed) and its unread events, and
 * reports how many events it delivered; librdmacm waits until all of those were acked.
 * Multicast records are freed here (upstream leaks them).
 */
SF_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *idp, **pp;
	struct cm_mc *mc;

	if (!id)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);

	pthread_mutex_lock(&cmlib.lock);
	for (pp = &cmlib.ids; *pp && *pp != idp; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&cmlib.lock);
		return cm_err(EINVAL);
	}
	*pp = idp->next;
	for (mc = idp->mcs; mc; mc = mc->next)
		cm_mc_release_locked(mc);
	cm_sidr_release_locked(idp);
	cm_chan_take_locked(idp->chan, idp, NULL, false);
	pthread_mutex_unlock(&cmlib.lock);

	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}

	pthread_mutex_lock(&cmlib.lock);
	cm_wait_acked_locked(&idp->completed, &idp->reported);
	while ((mc = idp->mcs)) {
		idp->mcs = mc->next;
		free(mc);
	}
	cm_mc_index_free(idp);
	if (idp->cma_dev >= 0)
		cm_dev_put_locked(idp->cma_dev);
	pthread_mutex_unlock(&cmlib.lock);

	if (idp->sync)
		rdma_destroy_event_channel(id->channel);
	free(idp);
	return 0;
}

/*
 * rdma_migrate_id: move the id to another channel (NULL: a new synchronous one; EINVAL
 * if the id is already synchronous). Its unread events and its joins' notifications
 * follow it; the call waits until the events already read on the old channel are acked.
 */
SF_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_chan *oldch, *newch;
	struct cm_event *moved, *next;
	struct cm_id *idp;
	bool sync;

	if (!id)
		return cm_err(EINVAL);
	idp = container_of(id, struct cm_id, id);
	if (idp->sync && !channel)
		return cm_err(EINVAL);
	sync = !channel;
	if (sync) {
		channel = rdma_create_event_channel();
		if (!channel)
			return -1;
	}
	newch = container_of(channel, struct cm_chan, ch);

	pthread_mutex_lock(&cmlib.lock);
	oldch = idp->chan;
	moved = cm_chan_take_locked(oldch, idp, NULL, true);
	for (; moved; moved = next) {
		next = moved->next;
		cm_chan_push_locked(newch, moved);
	}
	idp->chan = newch;
	sf_lock(cmlib.fab);
	for (struct cm_mc *mc = idp->mcs; mc; mc = mc->next) {
		struct sf_join *j;

		if (mc->slot < 0)
			continue;
		j = &cmlib.fab->joins[mc->slot];
		if (j->own.pid == getpid() && j->own.gen == mc->slot_gen)
			j->chan_serial = newch->serial;
	}
	if (idp->listen_slot >= 0) {
		struct sf_listen *l = &cmlib.fab->listens[idp->listen_slot];

		if (l->own.pid == getpid() && l->own.gen == idp->listen_gen)
			l->chan_serial = newch->serial;
	}
	sf_unlock(cmlib.fab);
	pthread_mutex_unlock(&cmlib.lock);

	if (idp->sync) {
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(&oldch->ch);
	}

	pthread_mutex_lock(&cmlib.lock);
	idp->sync = sync;
	id->channel = channel;
	cm_wait_acked_locked(&idp->completed, &idp->reported);
	pthread_mutex_unlock(&cmlib.lock);
	return 0;
}
