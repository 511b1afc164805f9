/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * build.c - writers for the packets the bridge's diagnostic sender and the tests emit:
 * SPM, ODATA/RDATA (optionally with OPT_SYN / OPT_FIN) and NCF. Each computes the
 * checksum and checks the capacity before writing anything.
 */
#include <errno.h>
#include <string.h>

#include "pgm.h"
#include "pgm_pvt.h"

void pgm_nla_ipv4(struct pgm_nla *nla, uint32_t addr)
{
	memset(nla, 0, sizeof(*nla));
	nla->afi = PGM_AFI_IPV4;
	nla->len = PGM_NLA_IPV4_LEN;
	pgm_put32(nla->addr, addr);
}

void pgm_nla_ipv6(struct pgm_nla *nla, const uint8_t *addr)
{
	memset(nla, 0, sizeof(*nla));
	nla->afi = PGM_AFI_IPV6;
	nla->len = PGM_NLA_IPV6_LEN;
	memcpy(nla->addr, addr, PGM_NLA_IPV6_LEN);
}

/* Wire size of an NLA block, 0 when the NLA is not a well-formed IPv4/IPv6 address. */
static size_t nla_size(const struct pgm_nla *nla)
{
	unsigned alen = pgm_afi_len(nla->afi);

	if (!alen || alen != nla->len)
		return 0;
	return PGM_NLA_HDR_LEN + alen;
}

static uint8_t *put_nla(uint8_t *p, const struct pgm_nla *nla)
{
	pgm_put16(p + PGM_NLA_OFF_AFI, nla->afi);
	pgm_put16(p + PGM_NLA_OFF_RESERVED, 0);
	memcpy(p + PGM_NLA_HDR_LEN, nla->addr, nla->len);
	return p + PGM_NLA_HDR_LEN + nla->len;
}

static void put_header(uint8_t *p, const struct pgm_tsi *tsi, uint16_t dport, uint8_t type,
		       uint8_t hdr_opts, uint16_t tsdu_len)
{
	pgm_put16(p + PGM_OFF_SPORT, tsi->sport);
	pgm_put16(p + PGM_OFF_DPORT, dport);
	p[PGM_OFF_TYPE] = type;
	p[PGM_OFF_OPTIONS] = hdr_opts;
	pgm_put16(p + PGM_OFF_CHECKSUM, 0);
	memcpy(p + PGM_OFF_GSI, tsi->gsi, PGM_GSI_LEN);
	pgm_put16(p + PGM_OFF_TSDU_LEN, tsdu_len);
}

ssize_t pgm_build_spm(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
		      uint32_t sqn, uint32_t trail, uint32_t lead, const struct pgm_nla *nla)
{
	size_t nsz = nla_size(nla);
	size_t len = PGM_HDR_LEN + PGM_SPM_FIXED_LEN + nsz;
	uint8_t *p = buf;
	uint8_t *f = p + PGM_HDR_LEN;

	if (!nsz)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	put_header(p, tsi, dport, PGM_TYPE_SPM, 0, 0);
	pgm_put32(f + PGM_SPM_OFF_SQN, sqn);
	pgm_put32(f + PGM_SPM_OFF_TRAIL, trail);
	pgm_put32(f + PGM_SPM_OFF_LEAD, lead);
	put_nla(f + PGM_SPM_FIXED_LEN, nla);
	pgm_checksum_fill(p, len);
	return (ssize_t)len;
}

/* Append a flag-only option (type, length 4, no OPX bits). */
static uint8_t *put_flag_opt(uint8_t *o, uint8_t type, bool last)
{
	o[PGM_OPT_OFF_TYPE] = type | (last ? PGM_OPT_END : 0);
	o[PGM_OPT_OFF_LEN] = PGM_OPT_FLAG_ONLY_LEN;
	o[PGM_OPT_OFF_BITS] = 0;
	o[PGM_OPT_OFF_SPEC] = 0;
	return o + PGM_OPT_FLAG_ONLY_LEN;
}

static ssize_t build_data(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
			  uint8_t type, uint32_t sqn, uint32_t trail, unsigned opts,
			  const void *data, size_t data_len)
{
	unsigned n_flags = !!(opts & PGM_BUILD_SYN) + !!(opts & PGM_BUILD_FIN);
	size_t opts_len = n_flags ? PGM_OPT_LENGTH_LEN + n_flags * PGM_OPT_FLAG_ONLY_LEN : 0;
	size_t len = PGM_HDR_LEN + PGM_DATA_LEN + opts_len + data_len;
	uint8_t *p = buf;
	uint8_t *f = p + PGM_HDR_LEN;
	uint8_t *o = f + PGM_DATA_LEN;

	if (opts & ~(PGM_BUILD_SYN | PGM_BUILD_FIN))
		return -EINVAL;
	if (data_len > UINT16_MAX || len > PGM_MAX_TPDU || (data_len && !data))
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;

	put_header(p, tsi, dport, type, n_flags ? PGM_HDR_OPT_PRESENT : 0, (uint16_t)data_len);
	pgm_put32(f + PGM_DATA_OFF_SQN, sqn);
	pgm_put32(f + PGM_DATA_OFF_TRAIL, trail);
	if (n_flags) {
		o[PGM_OPT_OFF_TYPE] = PGM_OPT_LENGTH;
		o[PGM_OPT_OFF_LEN] = PGM_OPT_LENGTH_LEN;
		pgm_put16(o + PGM_OPT_OFF_TOTAL, (uint16_t)opts_len);
		o += PGM_OPT_LENGTH_LEN;
		if (opts & PGM_BUILD_SYN)
			o = put_flag_opt(o, PGM_OPT_SYN, !(opts & PGM_BUILD_FIN));
		if (opts & PGM_BUILD_FIN)
			o = put_flag_opt(o, PGM_OPT_FIN, true);
	}
	if (data_len)
		memcpy(o, data, data_len);
	pgm_checksum_fill(p, len);
	return (ssize_t)len;
}

ssize_t pgm_build_odata(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
			uint32_t sqn, uint32_t trail, unsigned opts, const void *data,
			size_t data_len)
{
	return build_data(buf, cap, tsi, dport, PGM_TYPE_ODATA, sqn, trail, opts, data, data_len);
}

ssize_t pgm_build_rdata(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
			uint32_t sqn, uint32_t trail, unsigned opts, const void *data,
			size_t data_len)
{
	return build_data(buf, cap, tsi, dport, PGM_TYPE_RDATA, sqn, trail, opts, data, data_len);
}

ssize_t pgm_build_ncf(void *buf, size_t cap, const struct pgm_tsi *tsi, uint16_t dport,
		      uint32_t sqn, const struct pgm_nla *src, const struct pgm_nla *grp)
{
	size_t ssz = nla_size(src), gsz = nla_size(grp);
	size_t len = PGM_HDR_LEN + PGM_NAK_FIXED_LEN + ssz + gsz;
	uint8_t *p = buf;
	uint8_t *f = p + PGM_HDR_LEN;

	if (!ssz || !gsz)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	put_header(p, tsi, dport, PGM_TYPE_NCF, 0, 0);
	pgm_put32(f + PGM_NAK_OFF_SQN, sqn);
	put_nla(put_nla(f + PGM_NAK_FIXED_LEN, src), grp);
	pgm_checksum_fill(p, len);
	return (ssize_t)len;
}
