/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * HA peer control over the network (docs/operations.md, "A pair on two hosts"): the
 * HA verbs of a handover (takeover prepare / commit / done) and the role query (ha)
 * over TCP, in TLS 1.3 with a pre-shared key or with X.509 certificates (GnuTLS), both
 * ends proving that they hold the key or the certificate's private key. The cryptography is
 * GnuTLS's; this file only frames the console's protocol (a command line; the reply is text, NUL, a
 * status byte, newline) inside the records.
 *
 * --ha-listen ADDR:PORT   serve the HA verbs of the peer (the listening side);
 * --ha-peer HOST:PORT     the peer to hand over to (the asking side, ha.c);
 * --ha-psk FILE           the keys: lines "IDENTITY:HEXKEY" (psktool's format), checked
 *                         like the pid file (regular file, ours, no symbolic link, not
 *                         readable by group or others, in a directory others cannot
 *                         write) and read again by every reload (SIGHUP, `reload`);
 * --ha-psk-identity NAME  the identity this bridge connects as (default: the first line).
 * --ha-cert FILE, --ha-key FILE, --ha-ca FILE
 *                         instead of --ha-psk (not both): this bridge's certificate, its
 *                         private key (checked as the key file), the CA the peer's must
 *                         chain to; PEM; read again by every reload;
 * --ha-peer-name NAME     the name the peer's certificate must carry (default: --ha-peer's
 *                         host).
 *
 * With --ha-peer set, the listener serves only its address (others: HANET_UNKNOWN,
 * before TLS); the asking side connects from --ha-listen's address.
 * A connection that is not a peer holding a key of the file is refused within a bounded
 * time, counted by reason (hanet_reason_name), logged once per address and reason; it
 * changes no role. Everything here runs on the control thread.
 */
#ifndef CONTROL_HANET_H
#define CONTROL_HANET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct ctl;
struct ha;
struct hanet;
struct hanet_link;

/* Why a connection to --ha-listen was refused: ib2roce_ha_peer_refused_total{reason}. */
enum hanet_reason {
	HANET_AUTH,	/* a known identity with the wrong key (the PSK binder did not verify);
			 * a certificate that does not verify or none; ours refused by it */
	HANET_UNKNOWN,	/* an identity that is not in the key file, or not --ha-peer's address
			 * (a third host) */
	HANET_REPLAY,	/* the handshake failed after the client's key was checked: a recorded
			 * session played again, or records altered on the way */
	HANET_GARBAGE,	/* not TLS 1.3 with a PSK, or closed before the handshake */
	HANET_STALL,	/* a handshake or a message not complete within HA_HANDOVER_MS */
	HANET_PROTOCOL, /* authenticated, but not an HA verb, or a line too long */
	HANET_BUSY,	/* more than HANET_SESSIONS connections at once */
	HANET_NREASONS
};

extern const char *const hanet_reason_name[HANET_NREASONS];

/* Connections to --ha-listen served at once; more are refused (HANET_BUSY). */
#define HANET_SESSIONS 8

/*
 * What hanet serves of HA (ha.c, the protocol above this transport: hanet calls no ha_*
 * function, docs/architecture.md, Layout): the peer's `ha` (ha_show), a pending commit
 * undone (ha_role_set), takeover prepare|commit (ha_takeover_confirm, confirm being
 * ha.h's ha_confirm_fn). Each gets the ha given to hanet_opts_register.
 */
struct hanet_ops {
	void (*show)(struct ha *ha, struct ctl *c, FILE *out);
	int (*role_set)(struct ha *ha, struct ctl *c, const char *name, bool standby,
			const char *reason, FILE *out);
	int (*takeover)(struct ha *ha, struct ctl *c, char *args, FILE *out,
			int (*confirm)(void *ctx, struct ctl *c, void (*undo)(void *arg),
				       void *arg),
			void *ctx);
};

/*
 * Register --ha-peer, --ha-listen, --ha-psk, --ha-psk-identity. ha and ops (kept: static)
 * serve the verbs. NULL with errno.
 */
struct hanet *hanet_opts_register(struct ha *ha, const struct hanet_ops *ops);

/* Close the listener and every connection (a takeover awaiting its `done` is undone
 * first if c is not NULL); NULL is a no-op. */
void hanet_free(struct hanet *n, struct ctl *c);

/*
 * After the options: check that --ha-peer and --ha-listen have a key (--ha-psk) and
 * that the identity is in it, or the three certificate files that make credentials
 * (not both), and listen. 0, or -errno with a message in err.
 */
int hanet_start(struct hanet *n, struct ctl *c, char *err, size_t errlen);

/*
 * After a reload's parse of the options (app/reload.c), before it changes anything: the
 * certificate files it read make credentials together (--ha-key is --ha-cert's key,
 * --ha-ca's certificates are taken), and a running pair keeps its mode (no certificates
 * for a pair with --ha-psk, no key file for one with certificates). 0 (also: nothing
 * read, NULL n), or -EINVAL with one message naming the files in err; what was read is
 * then dropped, the old keys or credentials stay.
 */
int hanet_reload_check(struct hanet *n, char *err, size_t errlen);

/* --ha-peer as given, NULL when not set. */
const char *hanet_peer(const struct hanet *n);

/* After every batch of the control loop: time-outs, a reload's keys. */
void hanet_tick(struct hanet *n, struct ctl *c, uint64_t now_ms);

/* The `ha` lines: listening where, connections, refusals by reason. */
void hanet_show(const struct hanet *n, FILE *out);

/* ib2roce_ha_peer_refused_total{reason}. */
void hanet_prom(const struct hanet *n, FILE *f);

/*
 * The asking side (ha.c): a connection to --ha-peer. hanet_link_new starts nothing;
 * hanet_link_connect drives the non-blocking connect and the handshake: 0 when the
 * session is up, -EAGAIN while in progress (call again when the fd is readable or
 * later), -errno on failure (-EACCES: the peer refused our key or certificate;
 * -EKEYREJECTED: its certificate does not verify here). send: all or -errno
 * (-ENOBUFS: it would block). recv: bytes, 0 at the end, -EAGAIN, -errno.
 */
struct hanet_link *hanet_link_new(struct hanet *n);
int hanet_link_connect(struct hanet_link *l);
int hanet_link_fd(const struct hanet_link *l);
int hanet_link_send(struct hanet_link *l, const char *buf, size_t len);
ssize_t hanet_link_recv(struct hanet_link *l, char *buf, size_t len);
void hanet_link_free(struct hanet_link *l);

/* A partition name or a key identity: 1 to max-1 characters of [A-Za-z0-9_.-] (words
 * that travel in the peer protocol's lines). */
bool hanet_word_ok(const char *s, size_t n, size_t max);

#endif /* CONTROL_HANET_H */
