#!/bin/bash
# The Debian package (debian/): built from a copy of the source tree with
# dpkg-buildpackage, checked with lintian (when installed: no error or warning; the
# remaining informational tags are justified in debian/ib2roce.lintian-overrides), then
# installed into a fresh root with `dpkg --root ROOT --force-script-chrootless`:
# dpkg's own database there, the maintainer scripts run on this host with DPKG_ROOT=ROOT
# (debhelper's snippets and deb-systemd-helper honour it, and every systemctl call is
# skipped for a DPKG_ROOT), so install, upgrade, removal and purge run as on a real
# system without a chroot, a container image or root's systemd being touched. A chroot
# or container (debootstrap) would add a mirror download and root rights to CI for
# nothing the package's own files and scripts do not show here. Then:
#   - the files are where a distribution puts them, simfab is not there, the
#     configuration is a conffile, ib2roce-tools holds mcsender and mclisten;
#   - ib2roce.service is enabled (the wants link in ROOT) and nothing was started;
#   - ROOT/usr/sbin/ib2roce --version, and --check -c ROOT/etc/ib2roce/ib2roce.conf of
#     the shipped example on the simulated fabric (it names sim_ib0 and sim_roce0);
#   - systemd-analyze verify --root ROOT of the installed units (the base system's
#     units and /bin/kill, which a real root has, copied in): no message at all;
#   - an upgrade (the same package again) keeps a locally changed conffile and the
#     enablement; removal keeps the conffile; purge removes it and the wants link.
# Skipped (77) without dpkg-buildpackage or debhelper, and in a sanitizer build. Environment: SRCDIR (the source
# tree), SIMLIB, SIMFAB (tests/lib/sf.sh).
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/sf.sh
. "$(dirname "$0")/../lib/sf.sh"
: "${SRCDIR:?SRCDIR must name the source tree}"

SF_TEST=package-deb
# The package is built from the tree with Debian's flags, whatever this build directory's
# are: a sanitizer build would only build and check the same package a second time.
if [ -n "${PACKAGE_SANITIZED:-}" ]; then
	sf_log "SKIP: a sanitizer build (the package does not depend on the build directory)"
	exit 77
fi
for p in dpkg-buildpackage dh dpkg-checkbuilddeps; do
	if ! command -v "$p" >/dev/null 2>&1; then
		sf_log "SKIP: $p not installed (apt-get install dpkg-dev debhelper)"
		exit 77
	fi
done
sf_init package-deb
src=$SF_TMP/src
root=$SF_TMP/root
mkdir -p "$src" "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: >"$root/var/lib/dpkg/status"

# The tree as git sees it (tracked and new files, not ignored build directories).
if git -C "$SRCDIR" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$SRCDIR" ls-files -z --cached --others --exclude-standard |
		(cd "$SRCDIR" && tar --null -T - -cf -) | tar -xf - -C "$src"
else
	tar -C "$SRCDIR" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$src"
fi
# The build and the packaging tools load the real libraries, not the simulated ones.
(cd "$src" && env -u LD_LIBRARY_PATH DEB_BUILD_OPTIONS="nocheck parallel=2" \
	nice dpkg-buildpackage -us -uc -b >"$SF_TMP/build.log" 2>&1) ||
	sf_fail "dpkg-buildpackage failed" "$SF_TMP/build.log"
deb=$SF_TMP/ib2roce_0.1.0_amd64.deb
tools=$SF_TMP/ib2roce-tools_0.1.0_amd64.deb
deb=$(ls "$SF_TMP"/ib2roce_*.deb)
tools=$(ls "$SF_TMP"/ib2roce-tools_*.deb)
if command -v lintian >/dev/null 2>&1; then
	env -u LD_LIBRARY_PATH lintian --fail-on error,warning "$SF_TMP"/ib2roce_*.changes \
		>"$SF_TMP/lintian.log" 2>&1 || sf_fail "lintian" "$SF_TMP/lintian.log"
	if grep -E '^[EW]: ' "$SF_TMP/lintian.log"; then
		sf_fail "lintian errors or warnings" "$SF_TMP/lintian.log"
	fi
else
	sf_log "lintian not installed: not run"
fi

# rootdpkg ARG...: dpkg on ROOT, its scripts run here with DPKG_ROOT set.
rootdpkg() {
	env -u LD_LIBRARY_PATH dpkg --root="$root" --force-not-root --force-script-chrootless \
		--force-depends "$@" >>"$SF_TMP/dpkg.log" 2>&1 || sf_fail "dpkg $*" "$SF_TMP/dpkg.log"
}
status() {
	env -u LD_LIBRARY_PATH dpkg-query --admindir="$root/var/lib/dpkg" -W \
		-f='${db:Status-Abbrev}' "$1" 2>/dev/null || true
}

rootdpkg -i "$deb" "$tools"
[ "$(status ib2roce)" = "ii " ] || sf_fail "ib2roce not installed: '$(status ib2roce)'" "$SF_TMP/dpkg.log"
[ "$(status ib2roce-tools)" = "ii " ] || sf_fail "ib2roce-tools not installed" "$SF_TMP/dpkg.log"
for f in usr/sbin/ib2roce usr/bin/bcom lib/systemd/system/ib2roce.service \
	lib/systemd/system/ib2roce.socket etc/ib2roce/ib2roce.conf \
	usr/share/man/man1/ib2roce.1.gz usr/share/man/man1/bcom.1.gz \
	usr/share/man/man5/ib2roce.conf.5.gz usr/share/man/man7/ib2roce.7.gz \
	usr/share/ib2roce/monitoring/ib2roce.rules.yml \
	usr/share/ib2roce/monitoring/ib2roce.dashboard.json \
	usr/share/ib2roce/keepalived.conf.example usr/share/ib2roce/ib2roce-notify.sh \
	usr/share/ib2roce/ib2roce.conf.example usr/bin/mcsender usr/bin/mclisten \
	usr/share/man/man1/mcsender.1.gz; do
	[ -e "$root/$f" ] || sf_fail "not installed: /$f" "$SF_TMP/dpkg.log"
done
for f in usr/bin/simfab usr/share/man/man1/simfab.1.gz; do
	[ ! -e "$root/$f" ] || sf_fail "simfab is in the package: /$f"
done
dpkg-deb -c "$deb" | grep -q 'usr/bin/mc' && sf_fail "mcsender/mclisten in the ib2roce package"
env -u LD_LIBRARY_PATH dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Conffiles}\n' ib2roce |
	grep -q '^ /etc/ib2roce/ib2roce.conf ' || sf_fail "/etc/ib2roce/ib2roce.conf is not a conffile"
grep -q "^ExecStart=/usr/sbin/ib2roce --systemd -c /etc/ib2roce/ib2roce.conf$" \
	"$root/lib/systemd/system/ib2roce.service" || sf_fail "the unit's ExecStart" \
	"$root/lib/systemd/system/ib2roce.service"
# Enabled, not started: the wants link, and the scripts start nothing on installation.
[ -L "$root/etc/systemd/system/multi-user.target.wants/ib2roce.service" ] ||
	sf_fail "ib2roce.service not enabled in the root" "$SF_TMP/dpkg.log"
[ ! -e "$root/etc/systemd/system/sockets.target.wants/ib2roce.socket" ] ||
	sf_fail "ib2roce.socket enabled"
info=$root/var/lib/dpkg/info
if grep -q 'deb-systemd-invoke start\|_dh_action=start' "$info/ib2roce.postinst"; then
	sf_fail "postinst starts the service" "$info/ib2roce.postinst"
fi
grep -q "deb-systemd-invoke try-restart 'ib2roce.service'" "$info/ib2roce.postinst" ||
	sf_fail "postinst does not try-restart on upgrade" "$info/ib2roce.postinst"
grep -q 'deb-systemd-invoke stop ib2roce.socket ib2roce.service' "$info/ib2roce.prerm" ||
	sf_fail "prerm does not stop the service on removal" "$info/ib2roce.prerm"

# The installed programs.
"$root/usr/sbin/ib2roce" --version >"$SF_TMP/version.out" 2>&1 ||
	sf_fail "ib2roce --version" "$SF_TMP/version.out"
grep -Eq '^ib2roce 0\.1\.0 \(git [^,]+, built .+\)$' "$SF_TMP/version.out" ||
	sf_fail "ib2roce --version: unexpected output" "$SF_TMP/version.out"
rc=0
timeout -k 5 60 "$root/usr/sbin/ib2roce" --check -c "$root/etc/ib2roce/ib2roce.conf" \
	>"$SF_TMP/check.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || sf_fail "ib2roce --check of the shipped configuration: exit status $rc" \
	"$SF_TMP/check.out"
grep -q '^configuration valid: IB sim_ib0:1 <-> RoCE sim_roce0:1, 4 groups' "$SF_TMP/check.out" ||
	sf_fail "ib2roce --check: no 'configuration valid'" "$SF_TMP/check.out"

# The units, as systemd would load them in that root.
if command -v systemd-analyze >/dev/null 2>&1; then
	mkdir -p "$root/usr/lib/systemd" "$root/bin"
	cp -r /lib/systemd/system "$root/usr/lib/systemd/system"
	cp /bin/kill "$root/bin/kill"
	env -u LD_LIBRARY_PATH systemd-analyze verify --man=no --root="$root" ib2roce.service \
		ib2roce.socket >"$SF_TMP/verify.log" 2>&1 || sf_fail "systemd-analyze verify" "$SF_TMP/verify.log"
	[ ! -s "$SF_TMP/verify.log" ] || sf_fail "systemd-analyze verify has messages" "$SF_TMP/verify.log"
	rm -rf "$root/usr/lib/systemd/system" "$root/bin/kill"
else
	sf_log "systemd-analyze not installed: units not verified"
fi

# Upgrade (the same version again): a local change of the conffile and the enablement stay.
echo "# changed here" >>"$root/etc/ib2roce/ib2roce.conf"
rootdpkg -i "$deb"
grep -q '^# changed here$' "$root/etc/ib2roce/ib2roce.conf" ||
	sf_fail "the upgrade replaced a changed conffile" "$SF_TMP/dpkg.log"
[ -L "$root/etc/systemd/system/multi-user.target.wants/ib2roce.service" ] ||
	sf_fail "the upgrade disabled the service" "$SF_TMP/dpkg.log"
# Removal: the programs go, the configuration stays; purge: all of it.
rootdpkg -r ib2roce-tools ib2roce
[ ! -e "$root/usr/sbin/ib2roce" ] || sf_fail "removal left /usr/sbin/ib2roce"
[ -e "$root/etc/ib2roce/ib2roce.conf" ] || sf_fail "removal deleted the conffile"
rootdpkg -P ib2roce
[ ! -e "$root/etc/ib2roce/ib2roce.conf" ] || sf_fail "purge left the conffile"
[ ! -e "$root/etc/systemd/system/multi-user.target.wants/ib2roce.service" ] ||
	sf_fail "purge left the wants link"
[ -z "$(status ib2roce)" ] || [ "$(status ib2roce)" = "pn " ] ||
	sf_fail "after purge: '$(status ib2roce)'" "$SF_TMP/dpkg.log"
sf_log "PASS"
