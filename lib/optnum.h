/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * optnum.h - the number parsers of option and feature handlers (optnum.c): a whole
 * string, range-checked, a message in err (err.h) on failure, *out untouched then.
 * No state; any thread.
 */
#ifndef LIB_OPTNUM_H
#define LIB_OPTNUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * opt_parse_uint - a whole string as an unsigned decimal or 0x-hex number in
 * [min, max]. Any thread. Returns 0 or -EINVAL with "'abc' is not a number" /
 * "'70000' is out of range 1..65535".
 */
int opt_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen);

/* opt_parse_int - as opt_parse_uint for signed numbers (leading '-'). Any thread. */
int opt_parse_int(const char *s, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen);

/*
 * opt_parse_size - a size: a number as opt_parse_uint with an optional binary suffix
 * k, m, g or t (either case: 2^10, 2^20, 2^30, 2^40), in [min, max]. Any thread.
 * Returns 0 or -EINVAL with "'12q' is not a size (number with optional suffix k, m, g or
 * t)" / "'2g' is out of range 4096..1073741823".
 */
int opt_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen);

/*
 * opt_parse_bool - on/off, yes/no, true/false, enable/disable, 1/0 (any case). Any
 * thread. Returns 0 or -EINVAL with "'maybe' is not a boolean (on/off, yes/no,
 * true/false, 1/0)".
 */
int opt_parse_bool(const char *s, bool *out, char *err, size_t errlen);

#endif /* LIB_OPTNUM_H */
