/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The data path with --workers 0 (evmode.c): the control thread serves the completion
 * channels of both sides in its loop. ctl_data_drain (ctl.h) is here too.
 */
#ifndef CONTROL_EVMODE_H
#define CONTROL_EVMODE_H

struct ctl;

/* Register each side's completion channel and the refill timer with the loop (with
 * --workers 0 only). From ctl_init. 0 or -errno. */
int evmode_init(struct ctl *c);

#endif /* CONTROL_EVMODE_H */
