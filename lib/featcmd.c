/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * featcmd.c - the console's enable and disable commands (see featcmd.h).
 */
#include <stddef.h>

#include "concmd.h"
#include "feat.h"
#include "featcmd.h"
#include "optreg.h" /* OPT_ERR_LEN */

int feat_cmd(bool enable, char *args, FILE *out, const char **applied)
{
	char err[OPT_ERR_LEN];
	char *spec = concmd_rest(args);

	if (applied)
		*applied = NULL;
	if (!spec) {
		feat_list(out);
		return 0;
	}
	if (feat_set(spec, enable, true, err, sizeof(err))) {
		fprintf(out, "%s\n", err);
		return -1;
	}
	fprintf(out, "%s %s\n", enable ? "enabled" : "disabled", spec);
	if (applied)
		*applied = spec;
	return 0;
}
