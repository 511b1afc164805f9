// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The version line (version_line.h). "built" is when this file was compiled: it is
 * compiled again whenever version.h changes, i.e. at every new git describe.
 */
#include "version.h"
#include "version_line.h"

const char version_line[] =
	"ib2roce " IB2ROCE_VERSION " (git " IB2ROCE_DESCRIBE ", built " __DATE__ " " __TIME__ ")";

const char version_string[] = IB2ROCE_VERSION;
const char version_describe[] = IB2ROCE_DESCRIBE;
