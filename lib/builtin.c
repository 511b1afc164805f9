/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * builtin.c - opt_register_builtin() (options.h): the registry's own options and the
 * features' in one call, for the programs (ib2roce, mcsender, mclisten). It sits on top
 * of both, so that neither the registry nor the features need the other's built-ins.
 */
#include "feat.h"
#include "options.h"
#include "optreg.h"

int opt_register_builtin(FILE *out, const char *progname)
{
	int ret = opt_register_help(out, progname);

	if (!ret)
		ret = opt_register_config();
	if (!ret)
		ret = feat_register_options(out);
	return ret;
}
