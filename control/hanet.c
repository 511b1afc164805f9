/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * hanet.c - the HA verbs over TCP in TLS 1.3 with a pre-shared key or X.509
 * certificates (hanet.h).
 *
 * Why one file of ~1 600 lines: it is the one place that holds GnuTLS state (credentials
 * for both modes, the listener's sessions, the asking side's link) and its rules (TLS 1.3
 * only, bounded handshakes, refusals counted once per address and reason, key files
 * checked and reloaded); ha.c above it sees only a link (hanet_link_*) and three
 * callbacks (struct hanet_ops), so the protocol never meets a GnuTLS call.
 *
 * Why GnuTLS with a PSK (docs/operations.md says the same for operators): a pair of
 * bridges is two known machines, not a public service; a key shared by the two (made
 * with `psktool` or any 32 random bytes) authenticates both ends in one handshake
 * without a CA, certificates to renew or an expiry to miss at 3 a.m. GnuTLS (libgnutls30,
 * in every Debian) implements TLS 1.3's PSK modes with (EC)DHE (forward secrecy) through
 * a small API: credentials from a callback, which lets a reload change the keys without
 * touching a session, and non-blocking sessions on our own sockets (the control loop's
 * epoll). The GnuTLS manual's "Authentication using PSK" and gnutls/gnutls.h were the
 * sources for the calls below.
 *
 * Replays: TLS 1.3 protects every record with a sequence number in the AEAD nonce, so a
 * record replayed inside a session fails to decrypt; a whole recorded session played
 * into a new connection meets a fresh server random, so its Finished does not verify.
 * Neither session tickets (resumption) nor early data (0-RTT, the one replayable part of
 * TLS 1.3) are enabled: GNUTLS_NO_TICKETS, and no GNUTLS_ENABLE_EARLY_DATA.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "concmd.h"
#include "ctl.h"
#include "ha.h"
#include "hanet.h"
#include "log.h"
#include "loop.h"
#include "options.h"
#include "paths.h"

/* TLS 1.3 only, key exchange with a PSK and (EC)DHE only: no certificates, no plain PSK
 * (forward secrecy), AEAD ciphers. */
#define HANET_PRIORITY                                                                             \
	"SECURE256:+SECURE128:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-PSK:+DHE-PSK:-GROUP-ALL:"      \
	"+GROUP-X25519:+GROUP-SECP256R1:+GROUP-FFDHE2048"

/* TLS 1.3 only with X.509 certificates (--ha-cert): the key exchange is (EC)DHE, both
 * ends present a certificate that the other verifies against --ha-ca. */
#define HANET_PRIORITY_CERT                                                                        \
	"SECURE256:+SECURE128:-VERS-ALL:+VERS-TLS1.3:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"   \
	"+GROUP-FFDHE2048"

#define HANET_FILE_MAX (64 * 1024) /* a certificate, key or CA file */
#define HANET_ID_MAX   64	   /* an identity of the key file, with its terminator */
#define HANET_KEY_MIN  16	   /* bytes: 128 bits at least */
#define HANET_KEY_MAX  64	   /* bytes */
#define HANET_LINE_MAX 256	   /* a request line: "takeover commit PARTITION ID" */
#define HANET_LOGGED   64	   /* (address, reason) pairs logged: the rest are counted only */

const char *const hanet_reason_name[HANET_NREASONS] = {
	[HANET_AUTH] = "auth",	   [HANET_UNKNOWN] = "unknown_peer",
	[HANET_REPLAY] = "replay", [HANET_GARBAGE] = "garbage",
	[HANET_STALL] = "stall",   [HANET_PROTOCOL] = "protocol",
	[HANET_BUSY] = "busy",
};

struct hanet_key {
	char id[HANET_ID_MAX];
	unsigned char key[HANET_KEY_MAX];
	size_t len;
};

struct hanet_keys {
	struct hanet_key *k;
	size_t n;
};

struct hanet_addr {
	char text[128]; /* as given */
	char host[128]; /* its host part, without brackets */
	struct sockaddr_storage sa;
	socklen_t salen;
};

/* The certificate credentials (--ha-cert, --ha-key, --ha-ca), shared by the sessions
 * and links that use them: a reload makes new ones, the old go with their last user. */
struct hanet_cred {
	unsigned refs;
	gnutls_certificate_credentials_t x;
};

/* One of the three files, read into memory (PEM). */
struct hanet_file {
	char path[PATH_MAX];
	gnutls_datum_t d; /* NULL data: not given */
};

enum { HANET_CERT, HANET_KEY, HANET_CA, HANET_NFILES };

/* A connection to --ha-listen. */
struct sess {
	struct hanet *n;
	struct sess *next;
	int fd;
	gnutls_session_t s;
	struct hanet_cred *cred; /* certificate mode: the credentials it was set up with */
	bool up;		 /* the handshake is over */
	bool looked_up;		 /* the PSK callback ran for a known identity */
	bool unknown;		 /* the PSK callback met an unknown identity */
	bool idle;		 /* deadline is the idle limit of an authenticated connection */
	bool armed;		 /* ha_takeover_confirm made a partition active (sess_confirm) */
	unsigned verdict;	 /* certificate mode: why the peer's did not verify (logged once
				  * per address, reason and verdict) */
	uint64_t deadline;	 /* CLOCK_MONOTONIC ms: the handshake or the message in progress */
	char addr[INET6_ADDRSTRLEN];
	char id[HANET_ID_MAX];
	char line[HANET_LINE_MAX];
	size_t have;
	/* A commit made here waits for the asker's `takeover done` (or is undone). */
	char pend_part[HA_NAME_MAX];
	char pend_id[HA_ID_MAX];
	uint64_t pend_until;
};

struct hanet {
	struct ha *ha;
	const struct hanet_ops *ops; /* the verbs, served by ha.c */
	struct ctl *c;
	struct hanet_addr peer, listen;
	bool have_peer, have_listen;
	char psk_path[PATH_MAX];
	char ident[HANET_ID_MAX];
	struct hanet_keys keys;
	/* A reload reads the file into staged; it is taken when the reload succeeds. */
	struct hanet_keys staged;
	char staged_path[PATH_MAX];
	bool have_staged;
	uint64_t reloads_seen[CTL_RELOAD_NOUTCOMES];
	gnutls_psk_server_credentials_t scred;
	/* Certificate mode: the files as read, a reload's (staged), the credentials. */
	struct hanet_file files[HANET_NFILES], staged_files[HANET_NFILES];
	char peer_name[256]; /* --ha-peer-name, or --ha-peer's host */
	struct hanet_cred *cred;
	int lfd;
	struct sess *sessions;
	unsigned nsessions;
	uint64_t refused[HANET_NREASONS];
	struct {
		char addr[INET6_ADDRSTRLEN];
		int reason;
		unsigned verdict;
	} logged[HANET_LOGGED];
	unsigned nlogged;
};

/* The asking side's connection (hanet_link_*). */
struct hanet_link {
	struct hanet *n;
	int fd;
	bool connected, up;
	gnutls_session_t s;
	gnutls_psk_client_credentials_t cred;
	struct hanet_cred *xcred; /* certificate mode */
};

/* ---- Keys ---- */

static void keys_clear(struct hanet_keys *k)
{
	if (k->k)
		memset(k->k, 0, sizeof(*k->k) * k->n);
	free(k->k);
	k->k = NULL;
	k->n = 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

bool hanet_word_ok(const char *s, size_t n, size_t max)
{
	if (!n || n >= max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

static bool ident_ok(const char *s, size_t n)
{
	return hanet_word_ok(s, n, HANET_ID_MAX);
}

/* One line "IDENTITY:HEXKEY" into k. 0 or -EINVAL with a message naming the line. */
static int key_parse(const char *path, unsigned lineno, char *line, struct hanet_key *k, char *err,
		     size_t errlen)
{
	char *colon = strchr(line, ':'), *hex;
	size_t hl;

	if (!colon || !ident_ok(line, (size_t)(colon - line)))
		return opt_errf(err, errlen, -EINVAL,
				"ha-psk %s:%u: expected IDENTITY:HEXKEY with IDENTITY of 1-63 "
				"letters, digits, '_', '-', '.'",
				path, lineno);
	memcpy(k->id, line, (size_t)(colon - line));
	k->id[colon - line] = 0;
	hex = colon + 1;
	hl = strlen(hex);
	if (hl % 2 || hl / 2 < HANET_KEY_MIN || hl / 2 > HANET_KEY_MAX)
		return opt_errf(err, errlen, -EINVAL,
				"ha-psk %s:%u: the key of %s must be %d to %d bytes in hex "
				"(psktool makes 32)",
				path, lineno, k->id, HANET_KEY_MIN, HANET_KEY_MAX);
	for (size_t i = 0; i < hl / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return opt_errf(err, errlen, -EINVAL,
					"ha-psk %s:%u: the key of %s is not hexadecimal", path,
					lineno, k->id);
		k->key[i] = (unsigned char)(hi << 4 | lo);
	}
	k->len = hl / 2;
	return 0;
}

/*
 * Read a file of OPT into buf (NUL-terminated, at most size - 1 bytes) with *have its
 * length. A secret (the key file, the private key) is checked as the pid file and the
 * socket's directory are (daemon.c, paths.c): not a symbolic link (O_NOFOLLOW), a
 * regular file owned by us (or root) with one name, no access for group or others, in a
 * directory that passes control_dir_check (nobody else can replace the file). A public
 * file (a certificate, the CA) need only be a regular file. 0, or -errno with a message.
 */
static int file_read(const char *opt, const char *path, bool secret, char *buf, size_t size,
		     size_t *have, char *err, size_t errlen)
{
	char dirbuf[PATH_MAX], *dir, msg[256];
	struct stat st;
	ssize_t got;
	int fd, r;

	*have = 0;
	if (strlen(path) >= sizeof(dirbuf))
		return opt_errf(err, errlen, -ENAMETOOLONG, "%s %s: path too long", opt, path);
	if (secret) {
		snprintf(dirbuf, sizeof(dirbuf), "%s", path);
		dir = dirname(dirbuf);
		if (stat(dir, &st) < 0)
			return opt_errf(err, errlen, -errno, "%s %s: %s: %s", opt, path, dir,
					strerror(errno));
		r = control_dir_check(dir, &st, msg, sizeof(msg));
		if (r)
			return opt_errf(err, errlen, r, "%s %s: %s", opt, path, msg);
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (secret ? O_NOFOLLOW : 0));
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			return opt_errf(err, errlen, r, "%s %s: is a symbolic link", opt, path);
		return opt_errf(err, errlen, r, "%s %s: %s", opt, path, strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = opt_errf(err, errlen, -errno, "%s %s: %s", opt, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = opt_errf(err, errlen, -EINVAL, "%s %s: not a regular file", opt, path);
		goto out;
	}
	if (secret && st.st_uid != geteuid() && st.st_uid != 0) {
		r = opt_errf(err, errlen, -EPERM, "%s %s: owned by uid %u, not by uid %u or root",
			     opt, path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if (secret && st.st_mode & (S_IRWXG | S_IRWXO)) {
		r = opt_errf(err, errlen, -EPERM,
			     "%s %s: mode %04o gives group or others access (chmod 600)", opt, path,
			     (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if (secret && st.st_nlink != 1) {
		r = opt_errf(err, errlen, -EPERM, "%s %s: has %lu names (hard links)", opt, path,
			     (unsigned long)st.st_nlink);
		goto out;
	}
	while ((got = read(fd, buf + *have, size - 1 - *have)) > 0)
		*have += (size_t)got;
	if (got < 0) {
		r = opt_errf(err, errlen, -errno, "%s %s: %s", opt, path, strerror(errno));
		goto out;
	}
	if (*have == size - 1) {
		r = opt_errf(err, errlen, -EFBIG, "%s %s: larger than %zu bytes", opt, path,
			     size - 2);
		goto out;
	}
	buf[*have] = 0;
	r = 0;
out:
	close(fd);
	if (r && secret)
		memset(buf, 0, size);
	return r;
}

/* Read the key file (file_read, a secret) into out: IDENTITY:HEXKEY lines. 0, or -errno
 * with a message naming the file (and the line). */
static int keys_load(const char *path, struct hanet_keys *out, char *err, size_t errlen)
{
	char buf[8192], *line, *save = NULL;
	struct hanet_keys k = {0};
	unsigned lineno = 0;
	size_t have;
	int r;

	r = file_read("ha-psk", path, true, buf, sizeof(buf), &have, err, errlen);
	if (r)
		return r;
	for (char *p = buf; (line = strtok_r(p, "\n", &save)); p = NULL) {
		struct hanet_key *nk;
		size_t ll = strlen(line);

		lineno++; /* blank lines are skipped by strtok_r: numbers count key lines */
		while (ll && (line[ll - 1] == '\r' || line[ll - 1] == ' '))
			line[--ll] = 0;
		if (!ll || line[0] == '#')
			continue;
		nk = realloc(k.k, sizeof(*nk) * (k.n + 1));
		if (!nk) {
			r = opt_errf(err, errlen, -ENOMEM, "out of memory");
			break;
		}
		k.k = nk;
		r = key_parse(path, lineno, line, &k.k[k.n], err, errlen);
		if (r)
			break;
		for (size_t i = 0; i < k.n && !r; i++)
			if (!strcmp(k.k[i].id, k.k[k.n].id))
				r = opt_errf(err, errlen, -EINVAL,
					     "ha-psk %s:%u: identity %s is there twice", path,
					     lineno, k.k[i].id);
		if (r)
			break;
		k.n++;
	}
	if (!r && !k.n)
		r = opt_errf(err, errlen, -EINVAL, "ha-psk %s: no key (IDENTITY:HEXKEY lines)",
			     path);
	memset(buf, 0, sizeof(buf));
	if (r) {
		keys_clear(&k);
		return r;
	}
	keys_clear(out);
	*out = k;
	return 0;
}

/* ---- Certificates ---- */

static void hfile_clear(struct hanet_file *f)
{
	if (f->d.data) {
		memset(f->d.data, 0, f->d.size);
		free(f->d.data);
	}
	f->d.data = NULL;
	f->d.size = 0;
	f->path[0] = 0;
}

static const char *const hfile_opt[HANET_NFILES] = {
	[HANET_CERT] = "ha-cert",
	[HANET_KEY] = "ha-key",
	[HANET_CA] = "ha-ca",
};

/*
 * Read file `which` from path into f, checked on its own: the private key as a secret
 * (file_read) that GnuTLS can import; the certificate a PEM certificate; the CA one or
 * more PEM certificates. That the key is the certificate's is checked when the three
 * make credentials (cred_make). 0, or -errno with a message naming the file.
 */
static int hfile_load(int which, const char *path, struct hanet_file *f, char *err, size_t errlen)
{
	const char *opt = hfile_opt[which];
	char *buf = malloc(HANET_FILE_MAX);
	gnutls_datum_t d;
	size_t have;
	int r, g;

	if (!buf)
		return opt_errf(err, errlen, -ENOMEM, "out of memory");
	if (!*path || strlen(path) >= sizeof(f->path)) {
		free(buf);
		return opt_errf(err, errlen, -EINVAL, "%s '%s': not a file name", opt, path);
	}
	r = file_read(opt, path, which == HANET_KEY, buf, HANET_FILE_MAX, &have, err, errlen);
	if (r) {
		free(buf);
		return r;
	}
	d.data = (unsigned char *)buf;
	d.size = (unsigned)have;
	if (which == HANET_KEY) {
		gnutls_x509_privkey_t k;

		g = gnutls_x509_privkey_init(&k);
		if (!g) {
			g = gnutls_x509_privkey_import(k, &d, GNUTLS_X509_FMT_PEM);
			gnutls_x509_privkey_deinit(k);
		}
	} else {
		gnutls_x509_crt_t *list = NULL;
		unsigned nlist = 0;

		g = gnutls_x509_crt_list_import2(&list, &nlist, &d, GNUTLS_X509_FMT_PEM, 0);
		if (!g && !nlist)
			g = GNUTLS_E_NO_CERTIFICATE_FOUND;
		for (unsigned i = 0; i < nlist; i++)
			gnutls_x509_crt_deinit(list[i]);
		gnutls_free(list);
	}
	if (g < 0) {
		memset(buf, 0, HANET_FILE_MAX);
		free(buf);
		return opt_errf(err, errlen, -EINVAL, "%s %s: not a PEM %s: %s", opt, path,
				which == HANET_KEY ? "private key" : "certificate",
				gnutls_strerror(g));
	}
	hfile_clear(f);
	f->d = d;
	snprintf(f->path, sizeof(f->path), "%s", path);
	return 0;
}

static void cred_put(struct hanet_cred *c)
{
	if (c && !--c->refs) {
		gnutls_certificate_free_credentials(c->x);
		free(c);
	}
}

static struct hanet_cred *cred_get(struct hanet_cred *c)
{
	if (c)
		c->refs++;
	return c;
}

/*
 * Credentials from the three files: our certificate and its key (GnuTLS checks that
 * they belong together), the CA the peer's certificate must chain to. NULL with a
 * message.
 */
static struct hanet_cred *cred_make(const struct hanet_file *f, char *err, size_t errlen)
{
	struct hanet_cred *c = calloc(1, sizeof(*c));
	int g;

	if (!c) {
		opt_errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	c->refs = 1;
	if (gnutls_certificate_allocate_credentials(&c->x)) {
		free(c);
		opt_errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	g = gnutls_certificate_set_x509_key_mem2(c->x, &f[HANET_CERT].d, &f[HANET_KEY].d,
						 GNUTLS_X509_FMT_PEM, NULL, 0);
	if (g < 0) {
		opt_errf(err, errlen, -EINVAL, "ha-cert %s with ha-key %s: %s", f[HANET_CERT].path,
			 f[HANET_KEY].path, gnutls_strerror(g));
		cred_put(c);
		return NULL;
	}
	g = gnutls_certificate_set_x509_trust_mem(c->x, &f[HANET_CA].d, GNUTLS_X509_FMT_PEM);
	if (g <= 0) {
		opt_errf(err, errlen, -EINVAL, "ha-ca %s: %s", f[HANET_CA].path,
			 g < 0 ? gnutls_strerror(g) : "no certificate");
		cred_put(c);
		return NULL;
	}
	return c;
}

static bool cert_mode(const struct hanet *n)
{
	return n->files[HANET_CERT].d.data || n->files[HANET_KEY].d.data ||
	       n->files[HANET_CA].d.data;
}

static const struct hanet_key *key_find(const struct hanet_keys *k, const char *id)
{
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(k->k[i].id, id))
			return &k->k[i];
	return NULL;
}

/* ---- Options ---- */

/* HOST:PORT or [V6]:PORT, resolved now (no name lookup on the control thread later). */
static int addr_parse(const char *opt, const char *arg, bool passive, struct hanet_addr *a,
		      char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)};
	struct addrinfo *res;
	char host[128], *port;
	const char *colon = strrchr(arg, ':');
	size_t hl;
	int r;

	if (!colon || !colon[1] || colon == arg || strlen(arg) >= sizeof(a->text))
		return opt_errf(err, errlen, -EINVAL, "%s '%s': expected HOST:PORT", opt, arg);
	hl = (size_t)(colon - arg);
	if (arg[0] == '[' && arg[hl - 1] == ']') {
		memcpy(host, arg + 1, hl - 2);
		host[hl - 2] = 0;
	} else {
		memcpy(host, arg, hl);
		host[hl] = 0;
	}
	port = (char *)colon + 1;
	for (const char *p = port; *p; p++)
		if (*p < '0' || *p > '9')
			return opt_errf(err, errlen, -EINVAL, "%s '%s': port '%s' is not a number",
					opt, arg, port);
	if (atoi(port) < 1 || atoi(port) > 65535)
		return opt_errf(err, errlen, -EINVAL, "%s '%s': port %s out of range 1..65535", opt,
				arg, port);
	r = getaddrinfo(host, port, &hints, &res);
	if (r)
		return opt_errf(err, errlen, -EINVAL, "%s '%s': %s", opt, arg, gai_strerror(r));
	memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
	a->salen = res->ai_addrlen;
	freeaddrinfo(res);
	snprintf(a->text, sizeof(a->text), "%s", arg);
	snprintf(a->host, sizeof(a->host), "%s", host);
	return 0;
}

static int opt_ha_peer(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct hanet *n = ctx;
	struct hanet_addr a;
	int r = addr_parse("ha-peer", arg, false, &a, err, errlen);

	if (r || feat_running_get())
		return r; /* a reload checks it; the peer is start-up only */
	n->peer = a;
	n->have_peer = true;
	return 0;
}

static int opt_ha_listen(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct hanet *n = ctx;
	struct hanet_addr a;
	int r = addr_parse("ha-listen", arg, true, &a, err, errlen);

	if (r || feat_running_get())
		return r; /* start-up only */
	n->listen = a;
	n->have_listen = true;
	return 0;
}

static int opt_ha_psk(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct hanet *n = ctx;
	bool running = feat_running_get();
	int r;

	if (!*arg || strlen(arg) >= sizeof(n->psk_path))
		return opt_errf(err, errlen, -EINVAL, "ha-psk '%s': not a file name", arg);
	/* A reload reads the file again (a new key, a new peer's line) into staged: taken
	 * by hanet_tick once the reload has gone through, dropped when it was refused. */
	r = keys_load(arg, running ? &n->staged : &n->keys, err, errlen);
	if (r)
		return r;
	snprintf(running ? n->staged_path : n->psk_path, sizeof(n->psk_path), "%s", arg);
	if (running)
		n->have_staged = true;
	return 0;
}

static int opt_ha_ident(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct hanet *n = ctx;

	if (!ident_ok(arg, strlen(arg)))
		return opt_errf(err, errlen, -EINVAL,
				"ha-psk-identity '%s': 1-63 letters, digits, '_', '-', '.'", arg);
	if (!feat_running_get())
		snprintf(n->ident, sizeof(n->ident), "%s", arg);
	return 0;
}

/* --ha-cert, --ha-key, --ha-ca: read now (start) or staged for the reload (hanet_tick). */
static int opt_ha_file(struct hanet *n, int which, const char *arg, char *err, size_t errlen)
{
	bool running = feat_running_get();

	return hfile_load(which, arg, running ? &n->staged_files[which] : &n->files[which], err,
			  errlen);
}

static int opt_ha_cert(void *ctx, const char *arg, char *err, size_t errlen)
{
	return opt_ha_file(ctx, HANET_CERT, arg, err, errlen);
}

static int opt_ha_key(void *ctx, const char *arg, char *err, size_t errlen)
{
	return opt_ha_file(ctx, HANET_KEY, arg, err, errlen);
}

static int opt_ha_ca(void *ctx, const char *arg, char *err, size_t errlen)
{
	return opt_ha_file(ctx, HANET_CA, arg, err, errlen);
}

static int opt_ha_peer_name(void *ctx, const char *arg, char *err, size_t errlen)
{
	struct hanet *n = ctx;

	if (!*arg || strlen(arg) >= sizeof(n->peer_name) || strpbrk(arg, " \t/"))
		return opt_errf(err, errlen, -EINVAL,
				"ha-peer-name '%s': a DNS name or an address, as the peer's "
				"certificate names it",
				arg);
	if (!feat_running_get())
		snprintf(n->peer_name, sizeof(n->peer_name), "%s", arg);
	return 0;
}

/* The PSK of an identity for the server side: GnuTLS asks during the handshake. */
static int psk_lookup(gnutls_session_t s, const char *username, gnutls_datum_t *key)
{
	struct sess *ss = gnutls_session_get_ptr(s);
	const struct hanet_key *k = key_find(&ss->n->keys, username);

	snprintf(ss->id, sizeof(ss->id), "%.*s", HANET_ID_MAX - 1, username);
	if (!k) {
		ss->unknown = true;
		return -1;
	}
	key->data = gnutls_malloc(k->len);
	if (!key->data)
		return -1;
	memcpy(key->data, k->key, k->len);
	key->size = (unsigned)k->len;
	ss->looked_up = true;
	return 0;
}

struct hanet *hanet_opts_register(struct ha *ha, const struct hanet_ops *ops)
{
	struct hanet *n = calloc(1, sizeof(*n));
	const struct opt_def defs[] = {
		{"ha-peer", 0, "host:port", false,
		 "HA: the peer bridge's --ha-listen (TLS with --ha-psk): handover, SIGTERM "
		 "hands over first",
		 opt_ha_peer, n, false},
		{"ha-listen", 0, "addr:port", false,
		 "HA: serve the peer's handover and role query over TLS (--ha-psk) here",
		 opt_ha_listen, n, false},
		{"ha-psk", 0, "file", false,
		 "HA: the pre-shared keys of --ha-peer/--ha-listen, IDENTITY:HEXKEY lines "
		 "(mode 600)",
		 opt_ha_psk, n, false},
		{"ha-psk-identity", 0, "name", false,
		 "HA: the identity of --ha-psk this bridge connects as (default the first)",
		 opt_ha_ident, n, false},
		{"ha-cert", 0, "file", false,
		 "HA: this bridge's X.509 certificate (PEM) for --ha-peer/--ha-listen, instead "
		 "of --ha-psk",
		 opt_ha_cert, n, false},
		{"ha-key", 0, "file", false, "HA: the private key of --ha-cert (PEM, mode 600)",
		 opt_ha_key, n, false},
		{"ha-ca", 0, "file", false,
		 "HA: the CA certificate(s) (PEM) the peer's certificate must chain to", opt_ha_ca,
		 n, false},
		{"ha-peer-name", 0, "name", false,
		 "HA: the name the peer's certificate must carry (default: --ha-peer's host)",
		 opt_ha_peer_name, n, false},
	};

	if (!n)
		return NULL;
	n->ha = ha;
	n->ops = ops;
	n->lfd = -1;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		int r = opt_register(&defs[i]);

		if (r) {
			free(n);
			errno = -r;
			return NULL;
		}
	}
	return n;
}

const char *hanet_peer(const struct hanet *n)
{
	return n && n->have_peer ? n->peer.text : NULL;
}

/* ---- The listening side ---- */

/* Count a refusal; log it the first time for this address and reason. */
static void refuse(struct hanet *n, const struct sess *s, enum hanet_reason why, const char *detail)
{
	unsigned i;

	n->refused[why]++;
	for (i = 0; i < n->nlogged; i++)
		if (n->logged[i].reason == (int)why && n->logged[i].verdict == s->verdict &&
		    !strcmp(n->logged[i].addr, s->addr))
			return;
	if (n->nlogged < HANET_LOGGED) {
		snprintf(n->logged[n->nlogged].addr, sizeof(n->logged[0].addr), "%s", s->addr);
		n->logged[n->nlogged].verdict = s->verdict;
		n->logged[n->nlogged++].reason = (int)why;
		log_warn("ha-listen: peer %s%s%s refused (%s): %s; further refusals of it for this "
			 "reason are counted, not logged",
			 s->addr, s->id[0] ? " identity " : "", s->id, hanet_reason_name[why],
			 detail);
	} else if (n->nlogged == HANET_LOGGED) {
		n->nlogged++;
		log_warn("ha-listen: %d peers and reasons logged: further refusals are counted "
			 "only (ib2roce_ha_peer_refused_total)",
			 HANET_LOGGED);
	}
}

/* The pending commit of s did not get its `done`: back to standby. */
static void pend_undo(struct hanet *n, struct ctl *c, struct sess *s, const char *why)
{
	char *buf = NULL, reason[96];
	size_t len = 0;
	FILE *f;

	if (!s->pend_part[0])
		return;
	log_warn("partition %s: the handing-over bridge %s (%s) %s: taking over undone",
		 s->pend_part, s->addr, s->pend_id, why);
	snprintf(reason, sizeof(reason), "takeover undone (the peer %s)", why);
	f = open_memstream(&buf, &len);
	if (f) {
		n->ops->role_set(n->ha, c, s->pend_part, true, reason, f);
		fclose(f);
	}
	free(buf);
	s->pend_part[0] = 0;
}

static void sess_close(struct hanet *n, struct ctl *c, struct sess *s, const char *why)
{
	struct sess **pp;

	pend_undo(n, c, s, why);
	for (pp = &n->sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	n->nsessions--;
	if (s->fd >= 0) {
		loop_unwatch(s->fd);
		close(s->fd);
	}
	if (s->s)
		gnutls_deinit(s->s);
	cred_put(s->cred);
	free(s);
}

/* A reply in the console's framing: text, NUL, status, newline. */
static int sess_reply(struct sess *s, const char *text, size_t len, int status)
{
	char tail[3] = {0, status ? '1' : '0', '\n'};
	size_t off = 0;

	while (off < len || off < len + 3) {
		const char *p = off < len ? text + off : tail + (off - len);
		size_t l = off < len ? len - off : len + 3 - off;
		ssize_t w = gnutls_record_send(s->s, p, l);

		if (w == GNUTLS_E_INTERRUPTED)
			continue;
		if (w == GNUTLS_E_AGAIN) {
			/* A few hundred bytes to a peer that reads its answers: its window is
			 * open. One that does not read is not a bridge. */
			return -ENOBUFS;
		}
		if (w < 0)
			return -EPIPE;
		off += (size_t)w;
	}
	return 0;
}

/* hanet's ha_confirm_fn: the commit's answer goes out; the takeover holds only when the
 * asker confirms with `takeover done` (sess_line), else it is undone (pend_undo). */
static int sess_confirm(void *ctx, struct ctl *c, void (*undo)(void *), void *arg)
{
	struct sess *s = ctx;

	/* Called only when the commit changes the role (not for "active already"): only
	 * then is there something to undo. */
	s->armed = true;
	(void)c;
	(void)undo;
	(void)arg;
	return 0;
}

/* One authenticated request line: the HA verbs only. false when s was closed. */
static bool sess_line(struct hanet *n, struct ctl *c, struct sess *s, char *line)
{
	char *buf = NULL, *args = line, *verb, copy[HANET_LINE_MAX];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = -1;

	if (!out) {
		sess_close(n, c, s, "out of memory");
		return false;
	}
	verb = concmd_word(&args);
	if (verb && !strcmp(verb, "ha") && !concmd_word(&args)) {
		n->ops->show(n->ha, c, out);
		rc = 0;
	} else if (verb && !strcmp(verb, "takeover")) {
		/* Its words from a copy: ha_takeover_confirm parses args itself. */
		char *a2 = copy, *sub, *part, *id;

		snprintf(copy, sizeof(copy), "%s", args);
		sub = concmd_word(&a2);
		part = concmd_word(&a2);
		id = concmd_word(&a2);

		if (sub && !strcmp(sub, "done")) {
			/* The asker read our commit's answer and goes standby now: ours holds. */
			if (part && id && !concmd_word(&a2) && s->pend_part[0] &&
			    !strcmp(part, s->pend_part) && !strcmp(id, s->pend_id)) {
				log_notice(
					"partition %s: the handing-over bridge %s confirmed (%s)",
					part, s->addr, id);
				s->pend_part[0] = 0;
				fprintf(out, "takeover: partition %s: done\n", part);
				rc = 0;
			} else {
				fprintf(out, "takeover: done: no commit of %s %s waits here\n",
					part ? part : "-", id ? id : "-");
			}
		} else {
			bool commit = sub && !strcmp(sub, "commit");

			if (commit && s->pend_part[0])
				pend_undo(n, c, s, "committed another before confirming");
			s->armed = false;
			rc = n->ops->takeover(n->ha, c, args, out, sess_confirm, s);
			if (!rc && commit && s->armed && part && id) {
				snprintf(s->pend_part, sizeof(s->pend_part), "%s", part);
				snprintf(s->pend_id, sizeof(s->pend_id), "%s", id);
				s->pend_until = mono_ms() + HA_HANDOVER_MS;
			}
		}
	} else {
		fprintf(out, "ha-listen: only the HA verbs here (takeover, ha)\n");
		refuse(n, s, HANET_PROTOCOL, "not an HA verb");
		fclose(out);
		sess_reply(s, buf, len, -1);
		free(buf);
		sess_close(n, c, s, "sent a command that is not an HA verb");
		return false;
	}
	fclose(out);
	if (sess_reply(s, buf, len, rc)) {
		free(buf);
		sess_close(n, c, s, "could not be sent our answer");
		return false;
	}
	free(buf);
	return true;
}

/* What a failed handshake was, from how far it got (the GnuTLS error code alone says
 * "decryption failed" for a wrong key and for a replay alike). */
static enum hanet_reason handshake_reason(const struct sess *s, int err)
{
	if (s->cred) {
		/* Certificate mode: the peer's certificate did not verify (expired, another
		 * CA, another name), it sent none, or it refused ours (its alert). */
		if (err == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR ||
		    err == GNUTLS_E_NO_CERTIFICATE_FOUND || err == GNUTLS_E_CERTIFICATE_ERROR ||
		    err == GNUTLS_E_CERTIFICATE_REQUIRED)
			return HANET_AUTH;
		if (err == GNUTLS_E_FATAL_ALERT_RECEIVED) {
			gnutls_alert_description_t a = gnutls_alert_get(s->s);

			if (a == GNUTLS_A_BAD_CERTIFICATE || a == GNUTLS_A_CERTIFICATE_EXPIRED ||
			    a == GNUTLS_A_UNKNOWN_CA || a == GNUTLS_A_CERTIFICATE_UNKNOWN ||
			    a == GNUTLS_A_UNSUPPORTED_CERTIFICATE ||
			    a == GNUTLS_A_CERTIFICATE_REVOKED || a == GNUTLS_A_ACCESS_DENIED ||
			    a == GNUTLS_A_CERTIFICATE_REQUIRED)
				return HANET_AUTH;
		}
		/* After our Finished: the client's flight did not verify (a replay). */
		return gnutls_handshake_get_last_out(s->s) == GNUTLS_HANDSHAKE_FINISHED
			       ? HANET_REPLAY
			       : HANET_GARBAGE;
	}
	if (s->unknown)
		return HANET_UNKNOWN;
	if (s->looked_up)
		/* The client named a known identity: its binder failed (wrong key) before we
		 * sent our Finished, or the handshake failed after (a replay). */
		return gnutls_handshake_get_last_out(s->s) == GNUTLS_HANDSHAKE_FINISHED
			       ? HANET_REPLAY
			       : HANET_AUTH;
	(void)err;
	return HANET_GARBAGE;
}

/* What to log of a failed handshake: GnuTLS's error, and in certificate mode why the
 * peer's certificate did not verify ("The certificate has expired", "...issuer is
 * unknown", "...does not match the expected name") or the peer's alert. */
static void handshake_detail(struct sess *s, int h, char *buf, size_t len)
{
	snprintf(buf, len, "%s", gnutls_strerror(h));
	if (!s->cred)
		return;
	if (h == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		gnutls_datum_t out = {0};
		unsigned st = gnutls_session_get_verify_cert_status(s->s);

		s->verdict = st;
		if (!gnutls_certificate_verification_status_print(st, GNUTLS_CRT_X509, &out, 0)) {
			size_t l;

			snprintf(buf, len, "its certificate: %s", (char *)out.data);
			gnutls_free(out.data);
			l = strlen(buf);
			while (l && (buf[l - 1] == ' ' || buf[l - 1] == '.'))
				buf[--l] = 0;
		}
	} else if (h == GNUTLS_E_CERTIFICATE_REQUIRED || h == GNUTLS_E_NO_CERTIFICATE_FOUND) {
		/* A GnuTLS client sends only a certificate of a CA that our request names
		 * (--ha-ca): one of another CA does not come at all. */
		s->verdict = 1u << 30;
		snprintf(buf, len, "it sent no certificate of our --ha-ca's CA");
	} else if (h == GNUTLS_E_FATAL_ALERT_RECEIVED) {
		s->verdict = 1u << 31 | gnutls_alert_get(s->s);
		snprintf(buf, len, "it refused the handshake: %s",
			 gnutls_alert_get_name(gnutls_alert_get(s->s)));
	}
}

static void sess_io(struct hanet *n, struct ctl *c, struct sess *s)
{
	for (;;) {
		ssize_t r;
		char *nl;

		if (!s->up) {
			int h = gnutls_handshake(s->s);

			if (h == GNUTLS_E_AGAIN || h == GNUTLS_E_INTERRUPTED)
				return;
			if (h < 0) {
				char detail[512];

				handshake_detail(s, h, detail, sizeof(detail));
				/* Certificate mode: tell the peer why (bad_certificate, ...), which
				 * its TLS 1.3 handshake, over already, learns only this way. */
				if (s->cred)
					gnutls_alert_send_appropriate(s->s, h);
				refuse(n, s, handshake_reason(s, h), detail);
				sess_close(n, c, s, "failed the handshake");
				return;
			}
			s->up = true;
			s->deadline = 0; /* idle: waits for a request */
			continue;
		}
		r = gnutls_record_recv(s->s, s->line + s->have, sizeof(s->line) - 1 - s->have);
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			return;
		if (r == 0 || r == GNUTLS_E_PREMATURE_TERMINATION) {
			sess_close(n, c, s, "closed the connection");
			return;
		}
		if (r < 0) {
			refuse(n, s, HANET_REPLAY, gnutls_strerror((int)r));
			sess_close(n, c, s, "sent a record that does not verify");
			return;
		}
		if (!s->have || s->idle)
			s->deadline = mono_ms() + HA_HANDOVER_MS; /* the message's time */
		s->idle = false;
		s->have += (size_t)r;
		while (s->up && (nl = memchr(s->line, '\n', s->have))) {
			size_t used = (size_t)(nl - s->line) + 1;

			*nl = 0;
			/* sess_line may close s: take the line out first. */
			{
				char one[HANET_LINE_MAX];

				memcpy(one, s->line, used);
				memmove(s->line, s->line + used, s->have - used);
				s->have -= used;
				s->deadline = s->have ? mono_ms() + HA_HANDOVER_MS : 0;
				if (!sess_line(n, c, s, one))
					return; /* s is gone */
			}
		}
		if (s->have == sizeof(s->line) - 1) {
			refuse(n, s, HANET_PROTOCOL, "a request line longer than an HA verb's");
			sess_close(n, c, s, "sent a line too long");
			return;
		}
	}
}

/* A connection is readable (arg: its struct sess). */
static void sess_fd(void *arg, unsigned events)
{
	struct sess *s = arg;

	(void)events;
	sess_io(s->n, s->n->c, s);
}

/* Whether a connection's source is --ha-peer's address (an IPv4 peer met on an IPv6
 * listener comes as ::ffff:a.b.c.d). */
static bool addr_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	const unsigned char *x, *y;
	unsigned char m[16];

	if (a->ss_family == AF_INET && b->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6 && b->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	if (a->ss_family == AF_INET)
		return addr_same(b, a);
	if (a->ss_family != AF_INET6 || b->ss_family != AF_INET)
		return false;
	x = (const unsigned char *)&((const struct sockaddr_in6 *)a)->sin6_addr;
	y = (const unsigned char *)&((const struct sockaddr_in *)b)->sin_addr;
	memset(m, 0, 10);
	m[10] = m[11] = 0xff;
	memcpy(m + 12, y, 4);
	return !memcmp(x, m, 16);
}

static int sess_psk(struct hanet *n, struct sess *s)
{
	return gnutls_priority_set_direct(s->s, HANET_PRIORITY, NULL) ||
	       gnutls_credentials_set(s->s, GNUTLS_CRD_PSK, n->scred);
}

/* Certificate mode: ours presented, the peer's required and verified against --ha-ca,
 * its dates, and the name (--ha-peer-name or --ha-peer's host: a DNS name or an IP
 * address of its subjectAltName, or its CN without one). GnuTLS fails the handshake
 * when it does not verify (gnutls_session_set_verify_cert, the GnuTLS manual's
 * "Verifying a certificate in the context of TLS session"). */
static int sess_cert(struct hanet *n, struct sess *s)
{
	s->cred = cred_get(n->cred);
	if (gnutls_priority_set_direct(s->s, HANET_PRIORITY_CERT, NULL) ||
	    gnutls_credentials_set(s->s, GNUTLS_CRD_CERTIFICATE, s->cred->x))
		return -1;
	gnutls_certificate_server_set_request(s->s, GNUTLS_CERT_REQUIRE);
	gnutls_session_set_verify_cert(s->s, n->peer_name, 0);
	return 0;
}

static void sess_accept(struct hanet *n, struct ctl *c)
{
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(n->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sess *s;
		int one = 1;

		if (fd < 0)
			return; /* EAGAIN, or a connection that went (ECONNABORTED): nothing */
		s = calloc(1, sizeof(*s));
		if (!s) {
			close(fd);
			continue;
		}
		s->n = n;
		s->fd = fd;
		if (sa.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, s->addr,
				  sizeof(s->addr));
		else
			inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, s->addr,
				  sizeof(s->addr));
		if (n->have_peer && !addr_same(&sa, &n->peer.sa)) {
			refuse(n, s, HANET_UNKNOWN, "not --ha-peer's address");
			close(fd);
			free(s);
			continue;
		}
		if (n->nsessions >= HANET_SESSIONS) {
			refuse(n, s, HANET_BUSY, "too many connections at once");
			close(fd);
			free(s);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (gnutls_init(&s->s, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_TICKETS) ||
		    (n->cred ? sess_cert(n, s) : sess_psk(n, s))) {
			log_err("ha-listen: cannot set up a TLS session");
			if (s->s)
				gnutls_deinit(s->s);
			cred_put(s->cred);
			close(fd);
			free(s);
			continue;
		}
		gnutls_session_set_ptr(s->s, s);
		gnutls_transport_set_int(s->s, fd);
		s->deadline = mono_ms() + HA_HANDOVER_MS;
		if (loop_watch(fd, EPOLLIN, sess_fd, s)) {
			gnutls_deinit(s->s);
			close(fd);
			free(s);
			continue;
		}
		s->next = n->sessions;
		n->sessions = s;
		n->nsessions++;
		sess_io(n, c, s);
	}
}

/* The listener is readable (arg: the struct hanet): accept what is waiting. */
static void listen_fd(void *arg, unsigned events)
{
	struct hanet *n = arg;

	(void)events;
	sess_accept(n, n->c);
}

/*
 * A reload's pass over the options read the files (staged_files, staged: each checked on
 * its own by its option): whether the three make credentials (the key is the
 * certificate's, the CA's certificates are taken), and whether they keep the pair's mode
 * (a key file or certificates). Options come one at a time, so only the whole parse can
 * tell: app/reload.c asks after each pass, before anything changes. On a refusal what
 * was read goes (the old credentials stay) and err names the files.
 */
int hanet_reload_check(struct hanet *n, char *err, size_t errlen)
{
	struct hanet_file f[HANET_NFILES];
	struct hanet_cred *c;
	bool any = false;

	if (!n)
		return 0;
	for (int i = 0; i < HANET_NFILES; i++)
		any |= n->staged_files[i].d.data != NULL;
	/* The mode of a running pair (hanet_start: a key file or certificates) changes only
	 * with a restart, as the start refuses both at once. Without --ha-peer and
	 * --ha-listen nothing uses either. */
	if (n->have_peer || n->have_listen) {
		if (any && !n->cred) {
			int i = n->staged_files[HANET_CERT].d.data  ? HANET_CERT
				: n->staged_files[HANET_KEY].d.data ? HANET_KEY
								    : HANET_CA;

			opt_errf(err, errlen, -EINVAL,
				 "%s %s: the reload gives certificates to a pair that "
				 "authenticates with --ha-psk: only a restart changes that",
				 hfile_opt[i], n->staged_files[i].path);
			goto refused;
		}
		if (n->have_staged && n->cred) {
			opt_errf(err, errlen, -EINVAL,
				 "ha-psk %s: the reload gives a key file to a pair that "
				 "authenticates with certificates (--ha-cert): only a restart "
				 "changes that",
				 n->staged_path);
			goto refused;
		}
	}
	if (!any || !n->cred)
		return 0;
	for (int i = 0; i < HANET_NFILES; i++)
		f[i] = n->staged_files[i].d.data ? n->staged_files[i] : n->files[i];
	c = cred_make(f, err, errlen);
	if (!c)
		goto refused;
	cred_put(c);
	return 0;
refused:
	for (int i = 0; i < HANET_NFILES; i++)
		hfile_clear(&n->staged_files[i]);
	keys_clear(&n->staged);
	n->have_staged = false;
	return -EINVAL;
}

/*
 * After a reload (ok: it went through): the files it read (staged_files, checked
 * together by hanet_reload_check) become the credentials. Should they still not make
 * credentials (a file changed between the check and now): logged, the old ones stay.
 * Sessions and links keep the credentials they started with (cred_put frees them).
 */
static void certs_reloaded(struct hanet *n, bool ok)
{
	struct hanet_file f[HANET_NFILES];
	struct hanet_cred *c;
	char err[512];
	bool any = false;

	for (int i = 0; i < HANET_NFILES; i++)
		any |= n->staged_files[i].d.data != NULL;
	if (!any)
		return;
	if (!ok || !n->cred) {
		/* Refused, or certificates given by a reload to a bridge started without:
		 * the mode is start-up only (as --ha-psk's need at start). */
		if (ok)
			log_warn("ha-cert: certificates given by a reload to a bridge started "
				 "without them: a restart takes them");
		for (int i = 0; i < HANET_NFILES; i++)
			hfile_clear(&n->staged_files[i]);
		return;
	}
	for (int i = 0; i < HANET_NFILES; i++)
		f[i] = n->staged_files[i].d.data ? n->staged_files[i] : n->files[i];
	c = cred_make(f, err, sizeof(err));
	if (!c) {
		log_err("%s: the certificates of the reload are not taken; the old ones stay", err);
		for (int i = 0; i < HANET_NFILES; i++)
			hfile_clear(&n->staged_files[i]);
		return;
	}
	cred_put(n->cred);
	n->cred = c;
	for (int i = 0; i < HANET_NFILES; i++)
		if (n->staged_files[i].d.data) {
			hfile_clear(&n->files[i]);
			n->files[i] = n->staged_files[i];
			memset(&n->staged_files[i], 0, sizeof(n->staged_files[i]));
		}
	log_notice("ha-cert %s, ha-key %s, ha-ca %s: read again", n->files[HANET_CERT].path,
		   n->files[HANET_KEY].path, n->files[HANET_CA].path);
}

void hanet_tick(struct hanet *n, struct ctl *c, uint64_t now)
{
	struct sess *s, *next;
	bool changed = false, ok = false;

	if (!n)
		return;
	for (int i = 0; i < CTL_RELOAD_NOUTCOMES; i++)
		if (c->reloads[i] != n->reloads_seen[i]) {
			changed = true;
			ok |= i != CTL_RELOAD_REFUSED;
			n->reloads_seen[i] = c->reloads[i];
		}
	if (changed && n->have_staged) {
		if (ok) {
			keys_clear(&n->keys);
			n->keys = n->staged;
			memset(&n->staged, 0, sizeof(n->staged));
			snprintf(n->psk_path, sizeof(n->psk_path), "%s", n->staged_path);
			log_notice("ha-psk %s: %zu key%s read again", n->psk_path, n->keys.n,
				   n->keys.n == 1 ? "" : "s");
			if (n->ident[0] && !key_find(&n->keys, n->ident))
				log_warn("ha-psk %s: identity %s (--ha-psk-identity) is no longer "
					 "there: the first line's is used",
					 n->psk_path, n->ident);
		} else {
			keys_clear(&n->staged);
		}
		n->have_staged = false;
	}
	if (changed)
		certs_reloaded(n, ok);
	for (s = n->sessions; s; s = next) {
		next = s->next;
		if (s->pend_part[0] && now >= s->pend_until) {
			pend_undo(n, c, s, "did not confirm in time");
			continue;
		}
		if (s->deadline && now >= s->deadline) {
			if (!s->idle)
				refuse(n, s, HANET_STALL,
				       s->up ? "a request not complete in time"
					     : "no handshake in time");
			sess_close(n, c, s, s->idle ? "was idle" : "stalled");
		} else if (s->up && !s->have && !s->pend_part[0] && !s->deadline) {
			/* Authenticated and idle: an asker between partitions (its own drain
			 * between two takes at most CTL_DRAIN_MS). Bounded too, not counted. */
			s->deadline = now + 4 * HA_HANDOVER_MS;
			s->idle = true;
		}
	}
}

static int start_listen(struct hanet *n, char *err, size_t errlen);

/* hanet_start in certificate mode: the three files, the name to verify, the listener. */
static int start_certs(struct hanet *n, char *err, size_t errlen)
{
	for (int i = 0; i < HANET_NFILES; i++)
		if (!n->files[i].d.data)
			return opt_errf(err, errlen, -EINVAL,
					"--ha-cert, --ha-key and --ha-ca go together: --%s is "
					"missing",
					hfile_opt[i]);
	if (!n->peer_name[0] && n->have_peer)
		snprintf(n->peer_name, sizeof(n->peer_name), "%s", n->peer.host);
	if (!n->peer_name[0])
		return opt_errf(err, errlen, -EINVAL,
				"--ha-listen with --ha-cert needs --ha-peer or --ha-peer-name (the "
				"name the peer's certificate must carry)");
	n->cred = cred_make(n->files, err, errlen);
	if (!n->cred)
		return -EINVAL;
	if (!n->have_listen)
		return 0;
	return start_listen(n, err, errlen);
}

int hanet_start(struct hanet *n, struct ctl *c, char *err, size_t errlen)
{
	n->c = c;
	for (int i = 0; i < CTL_RELOAD_NOUTCOMES; i++)
		n->reloads_seen[i] = c->reloads[i];
	if (!n->have_peer && !n->have_listen)
		return 0;
	if (n->keys.n && cert_mode(n))
		return opt_errf(err, errlen, -EINVAL,
				"--ha-psk and --ha-cert/--ha-key/--ha-ca: a pair authenticates "
				"with one of the two, not both");
	if (cert_mode(n))
		return start_certs(n, err, errlen);
	if (!n->keys.n)
		return opt_errf(err, errlen, -EINVAL,
				"--ha-peer and --ha-listen need --ha-psk FILE (the pair's keys) "
				"or --ha-cert, --ha-key and --ha-ca");
	if (n->ident[0] && !key_find(&n->keys, n->ident))
		return opt_errf(err, errlen, -EINVAL, "ha-psk-identity %s: not in %s", n->ident,
				n->psk_path);
	if (!n->have_listen)
		return 0;
	if (gnutls_psk_allocate_server_credentials(&n->scred))
		return opt_errf(err, errlen, -ENOMEM, "ha-listen: out of memory");
	gnutls_psk_set_server_credentials_function(n->scred, psk_lookup);
	return start_listen(n, err, errlen);
}

static int start_listen(struct hanet *n, char *err, size_t errlen)
{
	int one = 1, r;

	n->lfd = socket(n->listen.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (n->lfd < 0)
		return opt_errf(err, errlen, -errno, "ha-listen %s: %s", n->listen.text,
				strerror(errno));
	setsockopt(n->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(n->lfd, (struct sockaddr *)&n->listen.sa, n->listen.salen) ||
	    listen(n->lfd, HANET_SESSIONS)) {
		r = -errno;
		close(n->lfd);
		n->lfd = -1;
		return opt_errf(err, errlen, r, "ha-listen %s: %s", n->listen.text, strerror(-r));
	}
	if (loop_watch(n->lfd, EPOLLIN, listen_fd, n)) {
		r = -errno;
		close(n->lfd);
		n->lfd = -1;
		return opt_errf(err, errlen, r, "ha-listen: epoll: %s", strerror(-r));
	}
	if (n->cred)
		log_notice("ha-listen %s: serving the HA peer over TLS 1.3 (certificates, the "
			   "peer's named %s)",
			   n->listen.text, n->peer_name);
	else
		log_notice("ha-listen %s: serving the HA peer over TLS 1.3 (PSK, %zu key%s)",
			   n->listen.text, n->keys.n, n->keys.n == 1 ? "" : "s");
	return 0;
}

void hanet_free(struct hanet *n, struct ctl *c)
{
	if (!n)
		return;
	while (n->sessions) {
		struct sess *s = n->sessions;

		if (c) {
			sess_close(n, c, s, "went away: the bridge stops");
			continue;
		}
		n->sessions = s->next;
		close(s->fd);
		gnutls_deinit(s->s);
		cred_put(s->cred);
		free(s);
	}
	if (n->lfd >= 0)
		close(n->lfd);
	if (n->scred)
		gnutls_psk_free_server_credentials(n->scred);
	keys_clear(&n->keys);
	keys_clear(&n->staged);
	for (int i = 0; i < HANET_NFILES; i++) {
		hfile_clear(&n->files[i]);
		hfile_clear(&n->staged_files[i]);
	}
	cred_put(n->cred);
	free(n);
}

void hanet_show(const struct hanet *n, FILE *out)
{
	if (!n || (!n->have_listen && !n->have_peer))
		return;
	if (n->cred)
		fprintf(out, "ha_listen %s sessions=%u peer_name=%s\n",
			n->have_listen ? n->listen.text : "-", n->nsessions, n->peer_name);
	else
		fprintf(out, "ha_listen %s sessions=%u keys=%zu\n",
			n->have_listen ? n->listen.text : "-", n->nsessions, n->keys.n);
	fprintf(out, "ha_peer_refused");
	for (int i = 0; i < HANET_NREASONS; i++)
		fprintf(out, " %s=%" PRIu64, hanet_reason_name[i], n->refused[i]);
	fprintf(out, "\n");
}

void hanet_prom(const struct hanet *n, FILE *f)
{
	fprintf(f, "# HELP ib2roce_ha_peer_refused_total Connections to --ha-listen refused, by "
		   "reason (docs/operations.md, \"A pair on two hosts\").\n");
	fprintf(f, "# TYPE ib2roce_ha_peer_refused_total counter\n");
	for (int i = 0; i < HANET_NREASONS; i++)
		fprintf(f, "ib2roce_ha_peer_refused_total{reason=\"%s\"} %" PRIu64 "\n",
			hanet_reason_name[i], n ? n->refused[i] : 0);
}

/* ---- The asking side ---- */

struct hanet_link *hanet_link_new(struct hanet *n)
{
	struct hanet_link *l;

	if (!n || !n->have_peer) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->n = n;
	l->fd = -1;
	return l;
}

int hanet_link_fd(const struct hanet_link *l)
{
	return l->fd;
}

/*
 * The source address of a connection to the peer: --ha-listen's address when it names
 * one (not the wildcard), so that the peer, which accepts only --ha-peer's address
 * (sess_accept), sees the address it was configured with whatever route the kernel
 * picks. A failure leaves the kernel's choice.
 */
static void link_bind(const struct hanet *n, int fd)
{
	struct sockaddr_storage sa;

	if (!n->have_listen || n->listen.sa.ss_family != n->peer.sa.ss_family)
		return;
	sa = n->listen.sa;
	if (sa.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&sa;

		if (in->sin_addr.s_addr == htonl(INADDR_ANY))
			return;
		in->sin_port = 0;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;

		if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			return;
		in6->sin6_port = 0;
	}
	if (bind(fd, (struct sockaddr *)&sa, n->listen.salen))
		log_debug("ha-peer: bind to %s: %s: the kernel picks the source address",
			  n->listen.text, strerror(errno));
}

int hanet_link_connect(struct hanet_link *l)
{
	struct hanet *n = l->n;
	int h;

	if (l->up)
		return 0;
	if (l->fd < 0) {
		const struct hanet_key *k = n->ident[0] ? key_find(&n->keys, n->ident) : NULL;
		gnutls_datum_t key;
		int one = 1;

		if (!k && n->keys.n)
			k = &n->keys.k[0];
		if (!k && !n->cred)
			return -ENOKEY;
		l->fd = socket(n->peer.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (l->fd < 0)
			return -errno;
		setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		link_bind(n, l->fd);
		if (n->cred) {
			/* Certificate mode: the peer's certificate verified as sess_cert does. */
			if (connect(l->fd, (struct sockaddr *)&n->peer.sa, n->peer.salen) &&
			    errno != EINPROGRESS)
				return -errno;
			l->xcred = cred_get(n->cred);
			if (gnutls_init(&l->s,
					GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_TICKETS) ||
			    gnutls_priority_set_direct(l->s, HANET_PRIORITY_CERT, NULL) ||
			    gnutls_credentials_set(l->s, GNUTLS_CRD_CERTIFICATE, l->xcred->x))
				return -ENOMEM;
			gnutls_session_set_verify_cert(l->s, n->peer_name, 0);
			gnutls_transport_set_int(l->s, l->fd);
			return hanet_link_connect(l);
		}
		if (connect(l->fd, (struct sockaddr *)&n->peer.sa, n->peer.salen) &&
		    errno != EINPROGRESS)
			return -errno;
		key.data = (unsigned char *)k->key;
		key.size = (unsigned)k->len;
		if (gnutls_psk_allocate_client_credentials(&l->cred) ||
		    gnutls_psk_set_client_credentials(l->cred, k->id, &key, GNUTLS_PSK_KEY_RAW) ||
		    gnutls_init(&l->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_TICKETS) ||
		    gnutls_priority_set_direct(l->s, HANET_PRIORITY, NULL) ||
		    gnutls_credentials_set(l->s, GNUTLS_CRD_PSK, l->cred))
			return -ENOMEM;
		gnutls_transport_set_int(l->s, l->fd);
	}
	if (!l->connected) {
		int e = 0;
		socklen_t el = sizeof(e);
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);

		if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &e, &el) || e)
			return e ? -e : -errno;
		if (getpeername(l->fd, (struct sockaddr *)&sa, &sl))
			return -EAGAIN; /* the TCP handshake is not over yet */
		l->connected = true;
	}
	h = gnutls_handshake(l->s);
	if (h == GNUTLS_E_AGAIN || h == GNUTLS_E_INTERRUPTED)
		return -EAGAIN;
	if (h < 0) {
		/* Its certificate did not verify here (expired, another CA, another name). */
		if (h == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
			gnutls_alert_send_appropriate(l->s, h); /* the peer counts it: auth */
			return -EKEYREJECTED;
		}
		/* The peer's alert for a wrong key or certificate, or its close without one
		 * (GnuTLS closes on a binder that does not verify): it did not take ours. */
		return -EACCES;
	}
	l->up = true;
	return 0;
}

/* Certificate mode: a send failed: whether the peer's alert (it refused our
 * certificate after our side of the handshake was over) waits to be read. */
static bool link_refused(struct hanet_link *l)
{
	char tmp[64];

	return l->xcred &&
	       gnutls_record_recv(l->s, tmp, sizeof(tmp)) == GNUTLS_E_FATAL_ALERT_RECEIVED;
}

int hanet_link_send(struct hanet_link *l, const char *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = gnutls_record_send(l->s, buf + off, len - off);

		if (w == GNUTLS_E_INTERRUPTED)
			continue;
		if (w == GNUTLS_E_AGAIN)
			return -ENOBUFS;
		if (w < 0)
			return link_refused(l) ? -EACCES : -EPIPE;
		off += (size_t)w;
	}
	return 0;
}

ssize_t hanet_link_recv(struct hanet_link *l, char *buf, size_t len)
{
	for (;;) {
		ssize_t r = gnutls_record_recv(l->s, buf, len);

		if (r >= 0)
			return r;
		if (r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r == GNUTLS_E_AGAIN)
			return -EAGAIN;
		if (r == GNUTLS_E_PREMATURE_TERMINATION)
			return 0;
		/* In TLS 1.3 the client's handshake is over before the server has checked
		 * the client's certificate: its refusal comes as an alert after. */
		if (r == GNUTLS_E_FATAL_ALERT_RECEIVED && l->xcred)
			return -EACCES;
		return -EBADMSG;
	}
}

void hanet_link_free(struct hanet_link *l)
{
	if (!l)
		return;
	if (l->s)
		gnutls_deinit(l->s);
	if (l->cred)
		gnutls_psk_free_client_credentials(l->cred);
	cred_put(l->xcred);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}
