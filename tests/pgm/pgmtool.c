/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pgmtool.c - test helper around pgm/:
 *
 *   pgmtool write-pcap FILE        catalogue packets (valid ones) and builder output as
 *                                  UDP-encapsulated PGM in a pcap, for tshark to read
 *   pgmtool fields PCAP            one TSV line per PGM packet of a capture, in the
 *                                  format of `tshark -T fields` with TSHARK_FIELDS
 *   pgmtool fields-bin FILE...     the same for raw PGM packets, first column = file name
 *   pgmtool extract PCAP DIR       each PGM payload of a capture as DIR/NNNN-TYPE.bin
 *   pgmtool streams PCAP           replay a capture through a stream table, print each
 *                                  stream's counters as key=value lines
 *   pgmtool corpus DIR             write the catalogue as fuzzer seeds named
 *                                  RESULT--CASE.bin
 *   pgmtool check-corpus DIR       parse every RESULT--*.bin there, fail on a mismatch
 *
 * The field list and formats mirror Wireshark 4.0's PGM dissector, including where it
 * differs from RFC 3208 (see the comments at print_fields()).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <urcu/urcu-qsbr.h>

#include "pcap.h"
#include "pgm.h"
#include "pktgen.h"
#include "stream.h"

#define TEST_SRC_IP 0xc0000201u /* 192.0.2.1 */
#define TEST_GRP_IP 0xefc00001u /* 239.192.0.1 */
#define MAX_FILE    (PGM_MAX_TPDU + 1)

/* Option value offsets (from the option's type byte), RFC 3208 section 9 layouts. */
#define OPT_V0		    4u	/* first 32-bit value */
#define OPT_V1		    8u	/* second */
#define OPT_V2		    12u /* third */
#define OPT_REDIRECT_AFI    4u
#define OPT_REDIRECT_ADDR   8u
#define OPT_PGMCC_AFI	    8u
#define OPT_PGMCC_LOSS_RATE 10u
#define OPT_PGMCC_ADDR	    12u

/* ---- fields ---- */

struct line {
	char buf[4096];
	size_t len;
};

static void l_add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void l_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
}

/* One output column: a list of values joined with ',' as tshark's -E occurrence=a. */
struct col {
	char v[512];
	size_t len;
};

static void c_add(struct col *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void c_add(struct col *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->len && c->len < sizeof(c->v))
		c->v[c->len++] = ',';
	if (c->len >= sizeof(c->v))
		return;
	va_start(ap, fmt);
	n = vsnprintf(c->v + c->len, sizeof(c->v) - c->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		c->len += (size_t)n;
}

static void c_addr(struct col *c, const struct pgm_nla *nla, uint16_t afi)
{
	char s[INET6_ADDRSTRLEN];

	if (nla->afi != afi)
		return;
	inet_ntop(afi == PGM_AFI_IPV4 ? AF_INET : AF_INET6, nla->addr, s, sizeof(s));
	c_add(c, "%s", s);
}

/* Columns, in the order of TSHARK_FIELDS in compare_tshark.sh. */
enum {
	F_SPORT,
	F_DPORT,
	F_TYPE,
	F_OPTS,
	F_CKSUM_STATUS,
	F_GSI,
	F_TSDULEN,
	F_SPM_SQN,
	F_SPM_TRAIL,
	F_SPM_LEAD,
	F_SPM_PATHAFI,
	F_SPM_PATH4,
	F_SPM_PATH6,
	F_NAK_SQN,
	F_NAK_SRCAFI,
	F_NAK_SRC4,
	F_NAK_SRC6,
	F_NAK_GRPAFI,
	F_NAK_GRP4,
	F_NAK_GRP6,
	F_POLL_SQN,
	F_POLL_ROUND,
	F_POLL_SUBTYPE,
	F_POLL_PATHAFI,
	F_POLL_PATH4,
	F_POLL_BOIVL,
	F_POLL_RAND,
	F_POLL_MASK,
	F_POLR_SQN,
	F_POLR_ROUND,
	F_ACK_MAXSQN,
	F_ACK_BITMAP,
	F_OPTS_TYPE,
	F_OPTS_LEN,
	F_OPTS_TLEN,
	F_GEN_TYPE,
	F_GEN_LEN,
	F_GEN_OPX,
	F_GEN_END,
	F_FRAG_FIRST,
	F_FRAG_OFFSET,
	F_FRAG_TOTAL,
	F_JOIN_MIN,
	F_PARITY_OP,
	F_PARITY_GRP,
	F_BOIVL_IVL,
	F_BOIVL_SQN,
	F_BORNG_MIN,
	F_BORNG_MAX,
	F_REDIR_AFI,
	F_REDIR_DLR4,
	F_REDIR_DLR6,
	F_CC_AFI,
	F_CC_ACKER4,
	F_CC_ACKER6,
	F_CC_LOSS,
	F_COUNT
};

static uint32_t opt32(const struct pgm_packet *pkt, const struct pgm_opt_rec *o, unsigned at)
{
	const uint8_t *p = pkt->raw + o->offset + at;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t opt16(const struct pgm_packet *pkt, const struct pgm_opt_rec *o, unsigned at)
{
	const uint8_t *p = pkt->raw + o->offset + at;

	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The NLA of an option the parser accepted (so its AFI and length are consistent). */
static void opt_nla(const struct pgm_packet *pkt, const struct pgm_opt_rec *o, unsigned afi_at,
		    unsigned addr_at, struct pgm_nla *nla)
{
	memset(nla, 0, sizeof(*nla));
	nla->afi = opt16(pkt, o, afi_at);
	nla->len = (uint8_t)(o->len - addr_at);
	memcpy(nla->addr, pkt->raw + o->offset + addr_at, nla->len);
}

/*
 * Wireshark 4.0 decodes a subset of options (the ones below); OPT_SYN, OPT_FIN,
 * OPT_RST, OPT_NBR_UNREACH, OPT_PATH_NLA, OPT_CR, OPT_CRQST and unknown options get no
 * per-option fields. For OPT_NAK_BO_RNG it names the first value "min" although RFC 3208
 * and OpenPGM put the maximum first; for PGMCC options it reads a 16-bit timestamp
 * (not compared) and for OPT_NAK_LIST it prints a formatted string (not compared).
 * Every value compared is decoded per option from the packet bytes so that each
 * occurrence is listed, as tshark does.
 */
static void option_cols(const struct pgm_packet *pkt, struct col *c)
{
	for (unsigned i = 0; i < pkt->n_recs; i++) {
		const struct pgm_opt_rec *o = &pkt->opts[i];
		struct pgm_nla nla;

		switch (o->type) {
		case PGM_OPT_JOIN:
		case PGM_OPT_PARITY_PRM:
		case PGM_OPT_PARITY_GRP:
		case PGM_OPT_NAK_LIST:
		case PGM_OPT_PGMCC_DATA:
		case PGM_OPT_PGMCC_FEEDBACK:
		case PGM_OPT_NAK_BO_IVL:
		case PGM_OPT_NAK_BO_RNG:
		case PGM_OPT_REDIRECT:
		case PGM_OPT_FRAGMENT:
			break;
		default:
			continue;
		}
		c_add(&c[F_GEN_TYPE], "0x%02x", o->type);
		c_add(&c[F_GEN_LEN], "%u", o->len);
		c_add(&c[F_GEN_OPX], "0x%02x", o->bits);
		c_add(&c[F_GEN_END], "%u", o->end);

		switch (o->type) {
		case PGM_OPT_JOIN:
			c_add(&c[F_JOIN_MIN], "0x%08x", opt32(pkt, o, OPT_V0));
			break;
		case PGM_OPT_PARITY_PRM:
		case PGM_OPT_PARITY_GRP:
			c_add(&c[F_PARITY_OP], "0x%02x", o->spec);
			c_add(&c[F_PARITY_GRP], "0x%08x", opt32(pkt, o, OPT_V0));
			break;
		case PGM_OPT_FRAGMENT:
			c_add(&c[F_FRAG_FIRST], "0x%08x", opt32(pkt, o, OPT_V0));
			c_add(&c[F_FRAG_OFFSET], "%u", opt32(pkt, o, OPT_V1));
			c_add(&c[F_FRAG_TOTAL], "%u", opt32(pkt, o, OPT_V2));
			break;
		case PGM_OPT_NAK_BO_IVL:
			c_add(&c[F_BOIVL_IVL], "%u", opt32(pkt, o, OPT_V0));
			c_add(&c[F_BOIVL_SQN], "0x%08x", opt32(pkt, o, OPT_V1));
			break;
		case PGM_OPT_NAK_BO_RNG:
			c_add(&c[F_BORNG_MIN], "%u", opt32(pkt, o, OPT_V0)); /* RFC: maximum */
			c_add(&c[F_BORNG_MAX], "%u", opt32(pkt, o, OPT_V1)); /* RFC: minimum */
			break;
		case PGM_OPT_REDIRECT:
			opt_nla(pkt, o, OPT_REDIRECT_AFI, OPT_REDIRECT_ADDR, &nla);
			c_add(&c[F_REDIR_AFI], "%u", nla.afi);
			c_addr(&c[F_REDIR_DLR4], &nla, PGM_AFI_IPV4);
			c_addr(&c[F_REDIR_DLR6], &nla, PGM_AFI_IPV6);
			break;
		case PGM_OPT_PGMCC_DATA:
		case PGM_OPT_PGMCC_FEEDBACK:
			opt_nla(pkt, o, OPT_PGMCC_AFI, OPT_PGMCC_ADDR, &nla);
			c_add(&c[F_CC_AFI], "%u", nla.afi);
			c_addr(&c[F_CC_ACKER4], &nla, PGM_AFI_IPV4);
			c_addr(&c[F_CC_ACKER6], &nla, PGM_AFI_IPV6);
			if (o->type == PGM_OPT_PGMCC_FEEDBACK)
				c_add(&c[F_CC_LOSS], "0x%04x", opt16(pkt, o, OPT_PGMCC_LOSS_RATE));
			break;
		default:
			break;
		}
	}
}

/*
 * Print one line for a parsed packet, or nothing when tshark 4.0 would not dissect it
 * (SPMR: its dissector has no case for type 0x0c).
 */
static void print_fields(const char *id, const struct pgm_packet *pkt)
{
	struct col c[F_COUNT];
	struct line l = {.len = 0};

	if (pkt->type == PGM_TYPE_SPMR)
		return;
	memset(c, 0, sizeof(c));
	c_add(&c[F_SPORT], "%u", pkt->sport);
	c_add(&c[F_DPORT], "%u", pkt->dport);
	c_add(&c[F_TYPE], "0x%02x", pkt->type);
	c_add(&c[F_OPTS], "0x%02x", pkt->hdr_opts);
	c_add(&c[F_CKSUM_STATUS], "%u", pkt->csum == PGM_CSUM_GOOD);
	for (unsigned i = 0; i < PGM_GSI_LEN; i++)
		l_add(&l, "%02x", pkt->gsi[i]);
	c_add(&c[F_GSI], "%s", l.buf);
	l.len = 0;
	c_add(&c[F_TSDULEN], "%u", pkt->tsdu_len);

	switch (pkt->type) {
	case PGM_TYPE_SPM:
		c_add(&c[F_SPM_SQN], "0x%08x", pkt->u.spm.sqn);
		c_add(&c[F_SPM_TRAIL], "0x%08x", pkt->u.spm.trail);
		c_add(&c[F_SPM_LEAD], "0x%08x", pkt->u.spm.lead);
		c_add(&c[F_SPM_PATHAFI], "%u", pkt->u.spm.nla.afi);
		c_addr(&c[F_SPM_PATH4], &pkt->u.spm.nla, PGM_AFI_IPV4);
		c_addr(&c[F_SPM_PATH6], &pkt->u.spm.nla, PGM_AFI_IPV6);
		break;
	case PGM_TYPE_ODATA:
	case PGM_TYPE_RDATA:
		/* tshark files data SQN and trail under the SPM field names. */
		c_add(&c[F_SPM_SQN], "0x%08x", pkt->u.data.sqn);
		c_add(&c[F_SPM_TRAIL], "0x%08x", pkt->u.data.trail);
		break;
	case PGM_TYPE_NAK:
	case PGM_TYPE_NNAK:
	case PGM_TYPE_NCF:
		c_add(&c[F_NAK_SQN], "0x%08x", pkt->u.nak.sqn);
		c_add(&c[F_NAK_SRCAFI], "%u", pkt->u.nak.src.afi);
		c_addr(&c[F_NAK_SRC4], &pkt->u.nak.src, PGM_AFI_IPV4);
		c_addr(&c[F_NAK_SRC6], &pkt->u.nak.src, PGM_AFI_IPV6);
		c_add(&c[F_NAK_GRPAFI], "%u", pkt->u.nak.grp.afi);
		c_addr(&c[F_NAK_GRP4], &pkt->u.nak.grp, PGM_AFI_IPV4);
		c_addr(&c[F_NAK_GRP6], &pkt->u.nak.grp, PGM_AFI_IPV6);
		break;
	case PGM_TYPE_POLL:
		c_add(&c[F_POLL_SQN], "0x%08x", pkt->u.poll.sqn);
		c_add(&c[F_POLL_ROUND], "%u", pkt->u.poll.round);
		c_add(&c[F_POLL_SUBTYPE], "0x%04x", pkt->u.poll.s_type);
		c_add(&c[F_POLL_PATHAFI], "%u", pkt->u.poll.nla.afi);
		c_addr(&c[F_POLL_PATH4], &pkt->u.poll.nla, PGM_AFI_IPV4);
		c_add(&c[F_POLL_BOIVL], "%u", pkt->u.poll.bo_ivl);
		c_add(&c[F_POLL_RAND], "0x%02x%02x%02x%02x", pkt->u.poll.rand[0],
		      pkt->u.poll.rand[1], pkt->u.poll.rand[2], pkt->u.poll.rand[3]);
		c_add(&c[F_POLL_MASK], "0x%08x", pkt->u.poll.mask);
		break;
	case PGM_TYPE_POLR:
		c_add(&c[F_POLR_SQN], "0x%08x", pkt->u.polr.sqn);
		c_add(&c[F_POLR_ROUND], "%u", pkt->u.polr.round);
		break;
	case PGM_TYPE_ACK:
		c_add(&c[F_ACK_MAXSQN], "0x%08x", pkt->u.ack.rx_max);
		c_add(&c[F_ACK_BITMAP], "0x%08x", pkt->u.ack.bitmap);
		break;
	default:
		break;
	}
	if (pkt->opts_offset) {
		c_add(&c[F_OPTS_TYPE], "0x%02x", PGM_OPT_LENGTH);
		c_add(&c[F_OPTS_LEN], "%u", PGM_OPT_LENGTH_LEN);
		c_add(&c[F_OPTS_TLEN], "%u", pkt->opts_len);
		option_cols(pkt, c);
	}

	l_add(&l, "%s", id);
	for (unsigned i = 0; i < F_COUNT; i++)
		l_add(&l, "\t%.*s", (int)c[i].len, c[i].v);
	printf("%s\n", l.buf);
}

static bool pgm_port(uint16_t p)
{
	return p == PCAP_UDP_ENCAP_UCAST || p == PCAP_UDP_ENCAP_MCAST;
}

static void fields_cb(const struct pcap_udp *u, void *arg)
{
	struct pgm_packet pkt;
	char id[16];

	(void)arg;
	if (!pgm_port(u->sport) && !pgm_port(u->dport))
		return;
	if (pgm_result_malformed(pgm_parse(u->payload, u->len, 0, &pkt))) {
		fprintf(stderr, "frame %u: %s\n", u->frame, pgm_result_name(pkt.result));
		return;
	}
	snprintf(id, sizeof(id), "%u", u->frame);
	print_fields(id, &pkt);
}

static int read_file(const char *path, uint8_t *buf, size_t cap, size_t *len)
{
	FILE *f = fopen(path, "rb");

	if (!f)
		return -1;
	*len = fread(buf, 1, cap, f);
	fclose(f);
	return 0;
}

static int cmd_fields_bin(int argc, char **argv)
{
	static uint8_t buf[MAX_FILE];
	int rc = 0;

	for (int i = 0; i < argc; i++) {
		struct pgm_packet pkt;
		const char *base = strrchr(argv[i], '/');
		size_t len;

		if (read_file(argv[i], buf, sizeof(buf), &len) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (pgm_result_malformed(pgm_parse(buf, len, 0, &pkt))) {
			fprintf(stderr, "%s: %s\n", argv[i], pgm_result_name(pkt.result));
			rc = 1;
			continue;
		}
		print_fields(base ? base + 1 : argv[i], &pkt);
	}
	return rc;
}

/* ---- write-pcap ---- */

static int cmd_write_pcap(const char *path)
{
	static const struct pgm_tsi tsi = {.gsi = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01},
					   .sport = 33333};
	struct pgm_nla src, grp;
	uint8_t b[256];
	FILE *f = pcap_create(path);
	ssize_t n;

	if (!f) {
		perror(path);
		return 1;
	}
	for (size_t i = 0; i < pgm_n_cases; i++) {
		struct pw w;

		/* Valid packets only; checksum 0 is "absent" for RFC 3208 but "bad" for
		 * tshark on data packets, so that case stays out. */
		if (pgm_result_malformed(pgm_cases[i].expect) ||
		    strcmp(pgm_cases[i].name, "odata_no_checksum") == 0)
			continue;
		pgm_case_make(pgm_cases[i].name, &w);
		pcap_write_udp(f, TEST_SRC_IP, TEST_GRP_IP, PCAP_UDP_ENCAP_MCAST,
			       PCAP_UDP_ENCAP_MCAST, w.b, w.len);
	}
	pgm_nla_ipv4(&src, TEST_SRC_IP);
	pgm_nla_ipv4(&grp, TEST_GRP_IP);
	n = pgm_build_spm(b, sizeof(b), &tsi, 7500, 1, 2, 1, &src);
	pcap_write_udp(f, TEST_SRC_IP, TEST_GRP_IP, 3056, 3056, b, (size_t)n);
	for (unsigned o = 0; o < 4; o++) {
		n = pgm_build_odata(b, sizeof(b), &tsi, 7500, 2 + o, 2, o, "builder", 7);
		pcap_write_udp(f, TEST_SRC_IP, TEST_GRP_IP, 3056, 3056, b, (size_t)n);
	}
	n = pgm_build_rdata(b, sizeof(b), &tsi, 7500, 3, 2, 0, "again", 5);
	pcap_write_udp(f, TEST_SRC_IP, TEST_GRP_IP, 3056, 3056, b, (size_t)n);
	n = pgm_build_ncf(b, sizeof(b), &tsi, 7500, 3, &src, &grp);
	pcap_write_udp(f, TEST_SRC_IP, TEST_GRP_IP, 3056, 3056, b, (size_t)n);
	if (fclose(f) != 0) {
		perror(path);
		return 1;
	}
	return 0;
}

/* ---- extract ---- */

struct extract {
	const char *dir;
	int rc;
};

static void extract_cb(const struct pcap_udp *u, void *arg)
{
	struct extract *x = arg;
	struct pgm_packet pkt;
	char path[4096];
	FILE *f;

	if (!pgm_port(u->sport) && !pgm_port(u->dport))
		return;
	pgm_parse(u->payload, u->len, PGM_PARSE_NO_CSUM, &pkt);
	snprintf(path, sizeof(path), "%s/%04u-%s.bin", x->dir, u->frame,
		 (pkt.flags & PGM_PKT_HAVE_HEADER) ? pgm_type_name(pkt.type) : "short");
	f = fopen(path, "wb");
	if (!f || fwrite(u->payload, 1, u->len, f) != u->len)
		x->rc = 1;
	if (f && fclose(f) != 0)
		x->rc = 1;
}

/* ---- streams ---- */

struct replay {
	struct pgm_stream_table *t;
	uint64_t now;
	unsigned packets, malformed;
};

static void replay_cb(const struct pcap_udp *u, void *arg)
{
	struct replay *r = arg;
	struct pgm_stream_key key;
	struct pgm_packet pkt;
	enum pgm_verdict v;
	uint64_t group;

	if (!pgm_port(u->sport) && !pgm_port(u->dport))
		return;
	pgm_parse(u->payload, u->len, 0, &pkt);
	if (!(pkt.flags & PGM_PKT_HAVE_HEADER)) {
		r->malformed++;
		return;
	}
	/* Upstream packets travel unicast: key them by the group they name. */
	group = u->dst_ip;
	if ((pkt.type == PGM_TYPE_NAK || pkt.type == PGM_TYPE_NNAK) &&
	    pkt.u.nak.grp.afi == PGM_AFI_IPV4)
		group = (uint64_t)pkt.u.nak.grp.addr[0] << 24 | pkt.u.nak.grp.addr[1] << 16 |
			pkt.u.nak.grp.addr[2] << 8 | pkt.u.nak.grp.addr[3];
	pgm_stream_key_from_packet(&key, &pkt, group);
	if (pgm_stream_update(r->t, &key, 0, &pkt, ++r->now, &v) == 0)
		r->packets++;
}

static int print_stream(const struct pgm_stream *s, void *arg)
{
	struct pgm_stream_stats st;
	const struct pgm_stream_side_stats *sd;

	(void)arg;
	pgm_stream_snapshot(s, &st);
	sd = &st.side[0];
	printf("stream gsi=%02x%02x%02x%02x%02x%02x sport=%u dport=%u group=0x%08llx "
	       "state=%s",
	       st.key.gsi[0], st.key.gsi[1], st.key.gsi[2], st.key.gsi[3], st.key.gsi[4],
	       st.key.gsi[5], st.key.sport, st.dport, (unsigned long long)st.key.group,
	       pgm_stream_state_name(st.state));
	for (unsigned c = 0; c < PGM_COUNT_TYPES; c++)
		printf(" %s=%llu", pgm_stream_count_name((enum pgm_stream_count)c),
		       (unsigned long long)sd->types[c]);
	printf(" gaps=%llu missed=%llu late=%llu repairs=%llu dups=%llu rdata_dups=%llu "
	       "syn=%llu fin=%llu rst=%llu malformed=%llu bad_checksum=%llu",
	       (unsigned long long)st.gaps, (unsigned long long)st.missed,
	       (unsigned long long)st.late, (unsigned long long)st.repairs,
	       (unsigned long long)st.dups, (unsigned long long)st.rdata_dups,
	       (unsigned long long)st.syn, (unsigned long long)st.fin, (unsigned long long)st.rst,
	       (unsigned long long)sd->malformed, (unsigned long long)sd->bad_checksum);
	if (st.have_data)
		printf(" odata_last=%u rx_lead=%u", st.odata_last, st.rx_lead);
	if (st.have_window)
		printf(" trail=%u lead=%u", st.trail, st.lead);
	printf("\n");
	return 0;
}

static int cmd_streams(const char *path)
{
	struct replay r = {.now = 0};
	long n;

	urcu_qsbr_register_thread();
	r.t = pgm_stream_table_new(NULL);
	if (!r.t) {
		perror("pgm_stream_table_new");
		return 1;
	}
	n = pcap_for_each_udp(path, replay_cb, &r);
	pgm_stream_table_for_each(r.t, print_stream, NULL);
	printf("packets=%u no_header=%u records=%ld\n", r.packets, r.malformed, n);
	pgm_stream_table_free(r.t);
	urcu_qsbr_unregister_thread();
	return n < 0;
}

/* ---- corpus ---- */

static int cmd_corpus(const char *dir)
{
	for (size_t i = 0; i < pgm_n_cases; i++) {
		char path[4096];
		struct pw w;
		FILE *f;

		pgm_case_make(pgm_cases[i].name, &w);
		snprintf(path, sizeof(path), "%s/%s--%s.bin", dir,
			 pgm_result_name(pgm_cases[i].expect), pgm_cases[i].name);
		f = fopen(path, "wb");
		if (!f || fwrite(w.b, 1, w.len, f) != w.len || fclose(f) != 0) {
			perror(path);
			return 1;
		}
	}
	return 0;
}

static int cmd_check_corpus(const char *dir)
{
	static uint8_t buf[MAX_FILE];
	unsigned files = 0, bad = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		perror(dir);
		return 1;
	}
	while ((de = readdir(d)) != NULL) {
		const char *sep = strstr(de->d_name, "--");
		struct pgm_packet pkt;
		const char *got;
		char path[4096];
		size_t len;

		if (!sep)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (read_file(path, buf, sizeof(buf), &len) != 0) {
			perror(path);
			bad++;
			continue;
		}
		files++;
		got = pgm_result_name(pgm_parse(buf, len, 0, &pkt));
		if (strlen(got) != (size_t)(sep - de->d_name) ||
		    strncmp(got, de->d_name, (size_t)(sep - de->d_name)) != 0) {
			printf("not ok - %s parses as %s\n", de->d_name, got);
			bad++;
		}
	}
	closedir(d);
	printf("# %u corpus files checked, %u mismatches\n", files, bad);
	return bad || files == 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: pgmtool write-pcap FILE | fields PCAP | fields-bin FILE... |\n"
			"       extract PCAP DIR | streams PCAP | corpus DIR | check-corpus DIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	if (strcmp(argv[1], "write-pcap") == 0)
		return cmd_write_pcap(argv[2]);
	if (strcmp(argv[1], "fields") == 0)
		return pcap_for_each_udp(argv[2], fields_cb, NULL) < 0;
	if (strcmp(argv[1], "fields-bin") == 0)
		return cmd_fields_bin(argc - 2, argv + 2);
	if (strcmp(argv[1], "extract") == 0 && argc == 4) {
		struct extract x = {.dir = argv[3], .rc = 0};

		if (pcap_for_each_udp(argv[2], extract_cb, &x) < 0)
			return 1;
		return x.rc;
	}
	if (strcmp(argv[1], "streams") == 0)
		return cmd_streams(argv[2]);
	if (strcmp(argv[1], "corpus") == 0)
		return cmd_corpus(argv[2]);
	if (strcmp(argv[1], "check-corpus") == 0)
		return cmd_check_corpus(argv[2]);
	return usage();
}
