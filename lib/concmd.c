// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* concmd.c - the command table of a console (concmd.h). */
#include <string.h>

#include "concmd.h"
#include "suggest.h"

/* Entry i of a table of entries of size bytes (each begins with its struct concmd). */
static const struct concmd *entry(const void *table, size_t size, size_t i)
{
	return (const struct concmd *)((const char *)table + i * size);
}

char *concmd_word(char **s)
{
	char *w = *s + strspn(*s, " \t"), *e;

	if (!*w)
		return NULL;
	e = w + strcspn(w, " \t");
	if (*e)
		*e++ = 0;
	*s = e;
	return w;
}

char *concmd_rest(char *s)
{
	char *e;

	s += strspn(s, " \t");
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = 0;
	return *s ? s : NULL;
}

int concmd_no_args(const char *cmd, char *args, FILE *out)
{
	char *extra = concmd_rest(args);

	if (!extra)
		return 0;
	fprintf(out, "%s: unexpected argument '%s'\n", cmd, extra);
	return -1;
}

const struct concmd *concmd_find(const void *table, size_t size, const char *name,
				 concmd_same_fn *same, FILE *out)
{
	const struct concmd *hit = NULL, *k;
	size_t n = strlen(name);
	int nhits = 0;

	for (size_t i = 0; (k = entry(table, size, i))->name; i++) {
		if (strncmp(k->name, name, n))
			continue;
		if (k->name[n] == 0) /* exact */
			return k;
		if (k->exact)
			continue;
		if (!hit || !same(hit, k))
			nhits++;
		if (!hit)
			hit = k;
	}
	if (!hit) {
		const char *best = NULL;
		size_t best_d = 0;

		for (size_t i = 0; (k = entry(table, size, i))->name; i++)
			suggest_consider(name, n, k->name, &best, &best_d);
		for (size_t i = 0; (k = entry(table, size, i))->name && !best; i++)
			if (k->exact && !strncmp(k->name, name, n))
				best = k->name; /* a prefix of it: it must be typed in full */
		if (best)
			fprintf(out, "unknown command '%s': did you mean %s?\n", name, best);
		else
			fprintf(out, "unknown command '%s' (help lists them)\n", name);
		return NULL;
	}
	if (nhits > 1) {
		fprintf(out, "ambiguous command '%s':", name);
		for (size_t i = 0; (k = entry(table, size, i))->name; i++)
			if (!strncmp(k->name, name, n) && !k->exact)
				fprintf(out, " %s", k->name);
		fprintf(out, "\n");
		return NULL;
	}
	return hit;
}

/* The widest syntax "name args" the help column follows; a longer one has a line of its
 * own, its help on the next. */
#define CONCMD_HELP_COL 40

int concmd_help(const void *table, size_t size, const char *what, FILE *out)
{
	const struct concmd *k;
	int w = 0, shown = 0;

	for (size_t i = 0; (k = entry(table, size, i))->name; i++) {
		int n = (int)strlen(k->name) + (k->args ? 1 + (int)strlen(k->args) : 0);

		if (n > w && n <= CONCMD_HELP_COL)
			w = n;
	}
	for (size_t i = 0; (k = entry(table, size, i))->name; i++) {
		int n = (int)strlen(k->name) + (k->args ? 1 + (int)strlen(k->args) : 0);

		if (what && strncmp(k->name, what, strlen(what)))
			continue;
		shown++;
		/* The syntax whole, however long (no fixed buffer): padded to the column of
		 * the help, or on a line of its own when longer than that column. */
		fprintf(out, "%s%s%s", k->name, k->args ? " " : "", k->args ? k->args : "");
		if (n > w)
			fprintf(out, "\n%*s  %s\n", w, "", k->help);
		else
			fprintf(out, "%*s  %s\n", w - n, "", k->help);
	}
	if (what) {
		if (!shown)
			fprintf(out, "help: no command '%s' (help lists them)\n", what);
		return shown;
	}
	fprintf(out, "Commands may be abbreviated to any unique prefix");
	for (size_t i = 0, first = 1; (k = entry(table, size, i))->name; i++)
		if (k->exact) {
			fprintf(out, "%s%s", first ? ", except " : ", ", k->name);
			first = 0;
		}
	fprintf(out, ".\n");
	return shown;
}
