/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Packet capture of the bridge to pcapng files (docs/operations.md, "Capturing").
 *
 * While a capture runs, workers copy every received packet they take (its first bytes,
 * the work completion's fields and the verdict) into their capture ring (engine/
 * capring.h); the control thread drains the rings on a timer of its own, a bounded
 * amount per tick, and writes the packets as frames a sniffer would see (capture/
 * pcapng.h) into a file under capture_dir. A full ring loses captures (counted), never
 * packets.
 */
#ifndef CONTROL_CAPTURE_H
#define CONTROL_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CAPTURE_DIR_DEFAULT  "/var/lib/ib2roce/capture"
#define CAPTURE_RING_DEFAULT 1024  /* records per worker ring */
#define CAPTURE_SNAP_DEFAULT 65535 /* frame bytes kept: all of any UD datagram */

struct ctl;
struct capture;

/* What the options say (capture_dir, capture_ring, --capture). */
struct capture_cfg {
	char dir[256];
	char file[256]; /* --capture FILE: started with the bridge, "" = none */
	uint32_t ring;
	bool mlock; /* -e mlock: the rings are locked, bounded by RLIMIT_MEMLOCK */
};

/* Counters of the current (or last) capture, for stats --json. */
struct capture_counts {
	bool active;
	bool starting;	       /* its rings are being made (capture start answered "starting";
				* also after a capture stop meanwhile, until they are made) */
	char stop_reason[128]; /* why the last capture stopped ("stop", "count reached",
				* "write error: ...", ...); "" while none did */
	uint64_t written;      /* packets written to the file */
	uint64_t dropped;      /* captures lost to full rings (the packets were not) */
	uint64_t dropped_total; /* the same over every capture since the start (a counter) */
	uint64_t bytes;	       /* file bytes (written: not what a failed write left out) */
};

/* Set the defaults and register the options capture-dir, capture-ring, capture. Main thread. */
int capture_opts_register(struct capture_cfg *cfg);

/* A capture module for the control thread c (c->br set), with a copy of cfg (a reload
 * does not change capture-dir or capture-ring): its drain timer and allocation eventfd
 * are watched by the loop, its command (capture) registered with the console. Once per
 * process. NULL with errno. */
struct capture *capture_new(struct ctl *c, const struct capture_cfg *cfg);

/* Stop a running capture (its records written), free the rings. After the workers
 * stopped. NULL: nothing. */
void capture_free(struct capture *cap);

/*
 * Start a capture: "FILE [group G] [side ib|roce|both] [count N] [snaplen N]". FILE is a
 * name in capture_dir (no '/', no ".."), created new (never an existing file or link);
 * capture_dir obeys the rules of the control socket's directory (control_make_dir).
 * The rings (capture-ring records per worker) must fit the budget (docs/operations.md)
 * and are made by a thread of their own. Control thread. 0: started; 1: starting, when
 * the rings are made (they took longer than 50 ms); or negative errno with a message in
 * err, nothing changed then.
 */
int capture_start(struct capture *cap, char *args, char *err, size_t errlen);

/* Stop the running capture after writing what the rings hold, and free the rings (after
 * a grace period); a starting one does not start. -ENOENT when none runs. */
int capture_stop(struct capture *cap, FILE *out);

/* Print the state of the capture ("capture status"). Control thread. */
void capture_status(struct capture *cap, FILE *out);

/* Snapshot of the counters. Control thread. */
void capture_counts_get(struct capture *cap, struct capture_counts *n);

/* The drain timer fired (the loop calls it): write a bounded number of records. Control
 * thread. */
void capture_tick(struct capture *cap);

#endif /* CONTROL_CAPTURE_H */
