/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pktgen.h - hand-assembled PGM packets for the tests: a byte writer that can produce any
 * packet, valid or not, and a catalogue of named cases (every type, every option, every
 * malformed reason) with the parse result each must get. The catalogue also generates the
 * fuzzer's seed corpus (gen_corpus).
 */
#ifndef TESTS_PGM_PKTGEN_H
#define TESTS_PGM_PKTGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pgm.h"

#define PW_CAP 2048u

/* Values the catalogue uses. */
#define PW_SPORT 0x1234u
#define PW_DPORT 7500u
#define PW_SRC4	 0xc0000201u /* 192.0.2.1 */
#define PW_GRP4	 0xefc00001u /* 239.192.0.1 */
extern const uint8_t pw_gsi[PGM_GSI_LEN];
extern const uint8_t pw_src6[PGM_NLA_IPV6_LEN]; /* 2001:db8::1 */

struct pw {
	uint8_t b[PW_CAP];
	size_t len;
	size_t opts_at; /* position of OPT_LENGTH, 0 when none */
};

void pw_init(struct pw *w);
void pw_u8(struct pw *w, uint8_t v);
void pw_u16(struct pw *w, uint16_t v);
void pw_u32(struct pw *w, uint32_t v);
void pw_bytes(struct pw *w, const void *p, size_t n);
/* Common header with tsdu length 0 and checksum 0. */
void pw_header(struct pw *w, uint8_t type, uint8_t hdr_opts);
void pw_nla4(struct pw *w, uint32_t addr);
void pw_nla6(struct pw *w, const uint8_t addr[PGM_NLA_IPV6_LEN]);
/* OPT_LENGTH with total filled in by pw_opts_end(). */
void pw_opts_begin(struct pw *w);
void pw_opt(struct pw *w, uint8_t type, bool end, uint8_t bits, uint8_t spec, const void *val,
	    size_t vlen);
void pw_opts_end(struct pw *w);
/* Append data and set the TSDU length to its size. */
void pw_data(struct pw *w, const void *p, size_t n);
void pw_set_tsdu(struct pw *w, uint16_t n);
/* Fill the checksum. */
void pw_csum(struct pw *w);

struct pgm_case {
	const char *name;
	enum pgm_result expect;
	void (*make)(struct pw *w);
};

extern const struct pgm_case pgm_cases[];
extern const size_t pgm_n_cases;

/* Build the named catalogue case into w (aborts when no case has that name). */
void pgm_case_make(const char *name, struct pw *w);

#endif /* TESTS_PGM_PKTGEN_H */
