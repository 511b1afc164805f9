#!/bin/sh
# Install the Debian 12 packages that ib2roce's build, tests, benchmarks and tools need.
# Idempotent: packages already present are left as they are. Run as root.
set -eu

# libedit-dev: bcom's line editing. prometheus: promtool (the metrics tests) and the
# server the monitoring end-to-end test starts; python3-yaml: the rules checks (tests/monitoring);
# Debian ships promtool only in the server package (about 100 MB installed).
# python3-matplotlib: the plots of bench/harness.py. perftest, qperf, ucx-utils,
# libfabric-bin, infiniband-diags (ibstat, ibaddr): the RDMA programs the simfabric
# tests run unchanged (tests/simfabric); libibumad-dev: the headers of simfabric's
# libibumad.so.3. dpkg-dev, debhelper, lintian: the Debian package (debian/) and its
# test (tests/package). libgnutls28-dev: the HA peer's TLS (control/hanet.c); gnutls-bin:
# gnutls-cli, psktool and certtool: the TLS peer of tests/ha/tls.sh, thirdhost.sh, the
# certificates of tests/ha/certs.sh (certgen.sh) and the key tools of the docs.
# libibumad-dev also builds the bridge's SA joins (control/sajoin.c). libcap2-bin: capsh,
# a bridge without CAP_NET_RAW in tests/native/qkeys.sh (controlled Q_Keys).
PKGS="build-essential pkg-config meson ninja-build python3
libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils
perftest qperf ucx-utils libfabric-bin libibumad-dev infiniband-diags
liburcu-dev libhwloc-dev libnuma-dev libsystemd-dev
libpgm-dev tshark iproute2 nftables jq util-linux procps
valgrind clang libclang-rt-14-dev clang-format
libedit-dev prometheus keepalived python3-matplotlib python3-yaml curl
dpkg-dev debhelper lintian libgnutls28-dev gnutls-bin libcap2-bin"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing="$missing $p"
	fi
done

if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: need root to install:$missing" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture: answer no, non-interactively.
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	apt-get update -q
	apt-get install -y -q --no-install-recommends $missing
fi

# Optional: systemd-socket-activate (package systemd) for the socket-activation test,
# which is skipped without it. A container may refuse to configure systemd: not fatal.
if ! command -v systemd-socket-activate >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q --no-install-recommends systemd ||
		echo "install-deps: systemd not installed: the socket-activation test will be skipped" >&2
fi
