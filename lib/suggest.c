// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Edit distance for "did you mean" (suggest.h). Own code: a dozen lines of dynamic
 * programming over names of a few bytes, which no Debian library offers on its own.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "suggest.h"

#define SUGGEST_NEAR 2

static size_t min3(size_t a, size_t b, size_t c)
{
	size_t m = a < b ? a : b;

	return m < c ? m : c;
}

size_t suggest_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	size_t d[SUGGEST_NAME_MAX + 1][SUGGEST_NAME_MAX + 1];

	if (la > SUGGEST_NAME_MAX || lb > SUGGEST_NAME_MAX)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]),
			    cb = tolower((unsigned char)b[j - 1]);
			size_t cost = ca != cb;

			d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < d[i][j])
				d[i][j] = d[i - 2][j - 2] + 1;
		}
	}
	return d[la][lb];
}

void suggest_consider(const char *word, size_t len, const char *cand, const char **best,
		      size_t *best_d)
{
	size_t d = suggest_distance(word, len, cand);

	if (d > SUGGEST_NEAR || d >= len)
		return;
	if (!*best || d < *best_d) {
		*best = cand;
		*best_d = d;
	}
}
