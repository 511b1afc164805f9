// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The simulated librdmacm.so.1: socket addresses (AF_INET, AF_INET6, AF_IB) as rdma_cm
 * reads them (lengths, ports, wildcards, loopback, multicast, the GID an address maps
 * to, the IPoIB multicast MGID), rdma_get_src_port / rdma_get_dst_port, and
 * rdma_getaddrinfo (rdma-core 44 librdmacm/addrinfo.c). Calls only the core.
 */
#include "rdmacm_priv.h"

/* ---- addresses ---- */

/* ucma_addrlen: AF_IB is supported (every kernel since 3.11 has AF_IB in the ucma ABI). */
socklen_t cm_addrlen(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

/* cma_zero_addr / cma_any_addr. */
bool cm_addr_zero(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	case AF_INET6:
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_IB:
		return ib_addr_any(&((const struct sockaddr_ib *)sa)->sib_addr);
	default:
		return false;
	}
}

/* cma_loopback_addr. */
bool cm_addr_loopback(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) ==
		       IN_LOOPBACKNET;
	case AF_INET6:
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_IB:
		return ib_addr_loopback(&((const struct sockaddr_ib *)sa)->sib_addr);
	default:
		return false;
	}
}

/* IPv4 224/4 or IPv6 ff00::/8 (AF_IB has no such notion here). */
bool cm_addr_multicast(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	case AF_INET6:
		return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	default:
		return false;
	}
}

/* Same family and same address (ports not compared): cma_addr_cmp. */
bool cm_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	switch (a->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	case AF_INET6:
		return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
					  &((const struct sockaddr_in6 *)b)->sin6_addr);
	case AF_IB:
		return !ib_addr_cmp(&((const struct sockaddr_ib *)a)->sib_addr,
				    &((const struct sockaddr_ib *)b)->sib_addr);
	default:
		return false;
	}
}

/* The port of an address, host order: cma_port (AF_IB: the SID bits under the mask). */
uint16_t cm_addr_port(const struct sockaddr *sa)
{
	const struct sockaddr_ib *sib;

	switch (sa->sa_family) {
	case AF_INET:
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	case AF_INET6:
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	case AF_IB:
		sib = (const struct sockaddr_ib *)sa;
		return (uint16_t)(be64toh(sib->sib_sid) & be64toh(sib->sib_sid_mask));
	default:
		return 0;
	}
}

/* cma_bind_port: store the port; AF_IB keeps the PS bits of the SID, mask becomes ~0. */
void cm_addr_set_port(struct sockaddr *sa, uint16_t port)
{
	struct sockaddr_ib *sib;
	uint64_t sid, mask;

	switch (sa->sa_family) {
	case AF_INET:
		((struct sockaddr_in *)sa)->sin_port = htons(port);
		break;
	case AF_INET6:
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
		break;
	case AF_IB:
		sib = (struct sockaddr_ib *)sa;
		sid = be64toh(sib->sib_sid);
		mask = be64toh(sib->sib_sid_mask);
		sib->sib_sid = htobe64((sid & mask) | port);
		sib->sib_sid_mask = htobe64(~0ull);
		break;
	}
}

/* ucma_get_port: the port as librdmacm reports it (network order). */
static __be16 cm_user_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	case AF_IB:
		return htobe16((uint16_t)be64toh(((const struct sockaddr_ib *)sa)->sib_sid));
	default:
		return 0;
	}
}

/* The GID in an AF_IB address. */
const union ibv_gid *cm_sib_gid(const struct sockaddr *sa)
{
	return (const union ibv_gid *)&((const struct sockaddr_ib *)sa)->sib_addr;
}

/* rdma_ip2gid: IPv4 → ::ffff:a.b.c.d, IPv6 as is, AF_IB its GID. */
void cm_ip2gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	switch (sa->sa_family) {
	case AF_INET:
		sf_gid_from_ipv4(gid, ((const struct sockaddr_in *)sa)->sin_addr.s_addr);
		break;
	case AF_INET6:
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, sizeof(gid->raw));
		break;
	case AF_IB:
		memcpy(gid->raw, &((const struct sockaddr_ib *)sa)->sib_addr, sizeof(gid->raw));
		break;
	}
}

/*
 * Does a host interface (not a simulated device) own this address? Then the kernel finds
 * the netdev but no RDMA device on it (cma_acquire_dev_by_src_ip: -ENODEV); an address
 * nobody owns fails earlier in rdma_translate_ip with -EADDRNOTAVAIL.
 */
bool cm_host_owns(const struct sockaddr *sa)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != sa->sa_family)
			continue;
		found = cm_addr_equal(i->ifa_addr, sa);
	}
	freeifaddrs(ifa);
	return found;
}

/* IPoIB hardware multicast address of an IP group (ip_ib_mc_map / ipv6_ib_mc_map). */
void cm_ipoib_mc_map(const struct sockaddr *sa, uint16_t pkey, bool rdma_cm_sig,
		     union ibv_gid *mgid)
{
	memset(mgid, 0, sizeof(*mgid));
	mgid->raw[0] = 0xff;
	mgid->raw[1] = 0x10 | CM_IPOIB_SCOPE;
	mgid->raw[2] = sa->sa_family == AF_INET6 ? 0x60 : 0x40;
	/* cma_set_mgid: byte 3 becomes 0x01, "the RDMA CM signature", for RDMA_PS_UDP. */
	mgid->raw[3] = rdma_cm_sig ? 0x01 : 0x1b;
	mgid->raw[4] = (uint8_t)(pkey >> 8);
	mgid->raw[5] = (uint8_t)pkey;
	if (sa->sa_family == AF_INET6) {
		memcpy(&mgid->raw[6], &((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr[6], 10);
	} else {
		memcpy(&mgid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr.s_addr, 4);
		mgid->raw[12] &= 0x0f;
	}
}

/* rdma_get_src_port / rdma_get_dst_port: ucma_get_port of the route's addresses. */
SF_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return cm_user_port(&id->route.addr.src_addr);
}

SF_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return cm_user_port(&id->route.addr.dst_addr);
}

/* ---- rdma_getaddrinfo ---- */

/* ucma_copy_addr: a malloc'ed copy of an address. */
static int cm_copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
			socklen_t src_len)
{
	*dst = malloc(src_len);
	if (!*dst)
		return cm_err(ENOMEM);
	memcpy(*dst, src, src_len);
	*dst_len = src_len;
	return 0;
}

/* ucma_set_sid: SID = port space << 16 | port; the masks of what is set. */
static void cm_set_sid(int ps, const struct sockaddr *addr, struct sockaddr_ib *sib)
{
	__be16 port = addr ? cm_user_port(addr) : 0;

	sib->sib_sid = htobe64(((uint64_t)ps << 16) + be16toh(port));
	if (ps)
		sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK);
	if (port)
		sib->sib_sid_mask |= htobe64(RDMA_IB_IP_PORT_MASK);
}

/* ucma_convert_in6: an IPv6 result as an AF_IB address (P_Key 0xffff, SID from the PS). */
static int cm_convert_in6(int ps, struct sockaddr **dst, socklen_t *dst_len,
			  const struct sockaddr_in6 *src)
{
	struct sockaddr_ib *sib = calloc(1, sizeof(*sib));

	if (!sib)
		return cm_err(ENOMEM);
	sib->sib_family = AF_IB;
	sib->sib_pkey = htobe16(SF_IB_DEFAULT_PKEY);
	sib->sib_flowinfo = src->sin6_flowinfo;
	memcpy(&sib->sib_addr, &src->sin6_addr, sizeof(sib->sib_addr));
	cm_set_sid(ps, (const struct sockaddr *)src, sib);
	sib->sib_scope_id = src->sin6_scope_id;
	*dst = (struct sockaddr *)sib;
	*dst_len = sizeof(*sib);
	return 0;
}

/* ucma_convert_to_ai: the libc hints for rdma_addrinfo hints. */
static void cm_hints_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;
	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

/*
 * ucma_convert_to_rai: QP type and port space from the hints, else from the socket type
 * and protocol; the address becomes the source (AI_PASSIVE) or the destination. AF_IB
 * with RAI_FAMILY|RAI_NUMERICHOST turns an IPv6 result into a sockaddr_ib (an IPv4
 * result is kept as is: upstream would read past it).
 */
static int cm_ai_to_rai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
			const struct addrinfo *ai)
{
	bool to_ib = (hints->ai_flags & RAI_FAMILY) && hints->ai_family == AF_IB &&
		     (hints->ai_flags & RAI_NUMERICHOST) && ai->ai_family == AF_INET6;
	struct sockaddr **addr;
	socklen_t *len;

	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		if (ai->ai_canonname)
			rai->ai_src_canonname = strdup(ai->ai_canonname);
		addr = &rai->ai_src_addr;
		len = &rai->ai_src_len;
	} else {
		if (ai->ai_canonname)
			rai->ai_dst_canonname = strdup(ai->ai_canonname);
		addr = &rai->ai_dst_addr;
		len = &rai->ai_dst_len;
	}
	if (to_ib) {
		rai->ai_family = AF_IB;
		return cm_convert_in6(rai->ai_port_space, addr, len,
				      (const struct sockaddr_in6 *)ai->ai_addr);
	}
	rai->ai_family = ai->ai_family;
	return cm_copy_addr(addr, len, ai->ai_addr, ai->ai_addrlen);
}

/*
 * rdma_getaddrinfo: names and services through libc getaddrinfo (first result only, as
 * upstream), or the hints' addresses when neither is given. No ibacm service exists on
 * the simulated fabric, so no route is filled in (upstream without ibacm: the same).
 * Errors as upstream: EINVAL without node, service and hints; otherwise -1 with errno
 * set to the getaddrinfo EAI_* code or the errno of the failure.
 */
SF_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if (!service && !node && !hints)
		return cm_err(EINVAL);
	if (!res)
		return cm_err(EINVAL);
	if (cm_init())
		return -1;
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return cm_err(ENOMEM);

	if (node || service) {
		struct addrinfo ai_hints, *ai;

		if (hints) {
			cm_hints_to_ai(&ai_hints, hints);
			ret = getaddrinfo(node, service, &ai_hints, &ai);
		} else {
			ret = getaddrinfo(node, service, NULL, &ai);
		}
		if (!ret) {
			ret = cm_ai_to_rai(rai, hints ? hints : &nohints, ai);
			freeaddrinfo(ai);
		}
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = cm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					   hints->ai_dst_len);
	}
	if (ret)
		goto err;
	if (hints && !rai->ai_src_len && hints->ai_src_len) {
		ret = cm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				   hints->ai_src_len);
		if (ret)
			goto err;
	}
	*res = rai;
	return 0;
err:
	rdma_freeaddrinfo(rai);
	/* Upstream: return ERR(ret), i.e. errno = the EAI_* code (or -1). */
	return cm_err(ret);
}

/* rdma_freeaddrinfo: the whole list and everything it points to. */
SF_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *rai;

	while (res) {
		rai = res;
		res = res->ai_next;
		free(rai->ai_connect);
		free(rai->ai_route);
		free(rai->ai_src_canonname);
		free(rai->ai_dst_canonname);
		free(rai->ai_src_addr);
		free(rai->ai_dst_addr);
		free(rai);
	}
}
