/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef LIB_VERSION_LINE_H
#define LIB_VERSION_LINE_H

/*
 * "ib2roce VERSION (git DESCRIBE, built DATE TIME)": what --version prints and the
 * console's status and the metrics (ib2roce_build_info) show. Any thread.
 */
extern const char version_line[];

/* Its parts: the project version (meson.build) and `git describe` of the tree built. */
extern const char version_string[];
extern const char version_describe[];

#endif /* LIB_VERSION_LINE_H */
