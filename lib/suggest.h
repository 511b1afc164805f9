/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * "did you mean X": the closest known name to a word the user mistyped (console commands,
 * features, options). Any thread, no state.
 */
#ifndef LIB_SUGGEST_H
#define LIB_SUGGEST_H

#include <stddef.h>

/*
 * The edit distance between the len bytes at a and the string b, ignoring case: inserts,
 * deletes, substitutions and swaps of two neighbours cost 1 each (optimal string
 * alignment). Names longer than SUGGEST_NAME_MAX count as far apart (SIZE_MAX).
 */
#define SUGGEST_NAME_MAX 64
size_t suggest_distance(const char *a, size_t len, const char *b);

/*
 * Keep the better of *best and cand for word (len bytes): call it for every candidate,
 * starting with *best = NULL; *best ends as the closest name near enough to be a typo
 * (distance at most 2, and less than the word's length), or NULL.
 */
void suggest_consider(const char *word, size_t len, const char *cand, const char **best,
		      size_t *best_d);

#endif /* LIB_SUGGEST_H */
