/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the bridge says while it runs (notify.c): the statistics line every statint
 * seconds (with systemd STATUS=), the pps line (ppsdisplay), and systemd's READY=1,
 * WATCHDOG=1 and STOPPING=1. Control thread.
 */
#ifndef OPS_NOTIFY_H
#define OPS_NOTIFY_H

struct ctl;

/*
 * Register the timers (stats, pps, watchdog under systemd with a watchdog interval),
 * the ready notification (c->on_ready) and the loop's exit hook (STOPPING=1) with the
 * loop. After ctl_init (which reads the watchdog interval). 0 or -errno.
 */
int notify_init(struct ctl *c);

#endif /* OPS_NOTIFY_H */
