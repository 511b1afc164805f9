/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * optnum.c - the number parsers of option and feature handlers (see optnum.h).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "optnum.h"

/* Digits of a decimal or 0x-hex number at s; *end after them. -EINVAL, -ERANGE. */
static int scan_u64(const char *s, uint64_t *out, const char **end)
{
	unsigned base = 10;
	uint64_t v = 0;
	const char *p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (!isxdigit((unsigned char)*p) || (base == 10 && !isdigit((unsigned char)*p)))
		return -EINVAL;
	for (; isxdigit((unsigned char)*p); p++) {
		unsigned d;

		if (isdigit((unsigned char)*p))
			d = (unsigned)(*p - '0');
		else if (base == 16)
			d = (unsigned)(tolower((unsigned char)*p) - 'a' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base) {
			/* Keep scanning so that "1e999..." is out of range, not "not a number" */
			while (isxdigit((unsigned char)*p) &&
			       (base == 16 || isdigit((unsigned char)*p)))
				p++;
			*end = p;
			return -ERANGE;
		}
		v = v * base + d;
	}
	*out = v;
	*end = p;
	return 0;
}

static int uint_range_err(const char *s, uint64_t min, uint64_t max, char *err, size_t errlen)
{
	return errf(err, errlen, -EINVAL, "'%s' is out of range %" PRIu64 "..%" PRIu64, s, min,
		    max);
}

int opt_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen)
{
	const char *end;
	uint64_t v;
	int ret;

	if (!s)
		return errf(err, errlen, -EINVAL, "missing number");
	ret = scan_u64(s, &v, &end);
	if (ret == -EINVAL || *end)
		return errf(err, errlen, -EINVAL, "'%s' is not a number", s);
	if (ret == -ERANGE || v < min || v > max)
		return uint_range_err(s, min, max, err, errlen);
	*out = v;
	return 0;
}

int opt_parse_int(const char *s, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen)
{
	bool neg;
	const char *end;
	uint64_t mag;
	int64_t v;
	int ret;

	if (!s)
		return errf(err, errlen, -EINVAL, "missing number");
	neg = s[0] == '-';
	ret = scan_u64(s + neg, &mag, &end);
	if (ret == -EINVAL || *end)
		return errf(err, errlen, -EINVAL, "'%s' is not a number", s);
	if (ret == -ERANGE || (neg && mag > (uint64_t)INT64_MAX + 1) ||
	    (!neg && mag > (uint64_t)INT64_MAX))
		goto range;
	if (neg)
		v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	else
		v = (int64_t)mag;
	if (v < min || v > max)
		goto range;
	*out = v;
	return 0;
range:
	return errf(err, errlen, -EINVAL, "'%s' is out of range %" PRId64 "..%" PRId64, s, min,
		    max);
}

int opt_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		   size_t errlen)
{
	const char *end;
	unsigned shift = 0;
	uint64_t v;
	int ret;

	if (!s)
		return errf(err, errlen, -EINVAL, "missing size");
	ret = scan_u64(s, &v, &end);
	if (ret != -EINVAL && *end) {
		const char *suffixes = "kmgt", *at = strchr(suffixes, tolower((unsigned char)*end));

		if (at && end[1] == '\0')
			shift = 10 * (unsigned)(at - suffixes + 1);
		else
			ret = -EINVAL;
	}
	if (ret == -EINVAL)
		return errf(err, errlen, -EINVAL,
			    "'%s' is not a size (number with optional suffix k, m, g or t)", s);
	if (ret == -ERANGE || (shift && v > (UINT64_MAX >> shift)))
		return uint_range_err(s, min, max, err, errlen);
	v <<= shift;
	if (v < min || v > max)
		return uint_range_err(s, min, max, err, errlen);
	*out = v;
	return 0;
}

int opt_parse_bool(const char *s, bool *out, char *err, size_t errlen)
{
	static const char *const yes[] = {"on", "yes", "true", "enable", "1"};
	static const char *const no[] = {"off", "no", "false", "disable", "0"};

	for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return errf(err, errlen, -EINVAL, "'%s' is not a boolean (on/off, yes/no, true/false, 1/0)",
		    s ? s : "");
}
