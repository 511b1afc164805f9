# shellcheck shell=bash
# Certificates for the HA tests in certificate mode (--ha-cert, --ha-key, --ha-ca;
# control/hanet.c), made with certtool (gnutls-bin) as docs/operations.md shows.
#
# cg_ca DIR NAME: a CA: DIR/NAME.key, DIR/NAME.pem (valid 30 days).
# cg_host DIR NAME CA CN [IP] [past]: a host certificate DIR/NAME.pem with its key
#   DIR/NAME.key (mode 600), for TLS clients and servers, signed by CA (cg_ca's NAME),
#   subjectAltName the DNS name CN (and IP), valid 30 days, or, with "past", valid only in
#   2019 (expired).

cg_ca() {
	local d=$1 name=$2

	certtool -p --key-type ecdsa --outfile "$d/$name.key" >/dev/null 2>&1
	printf 'cn = "%s"\nca\ncert_signing_key\nexpiration_days = 30\n' "$name" >"$d/$name.tmpl"
	certtool -s --load-privkey "$d/$name.key" --template "$d/$name.tmpl" \
		--outfile "$d/$name.pem" >/dev/null 2>&1 || {
		echo "certtool: cannot make CA $name"
		exit 1
	}
}

cg_host() {
	local d=$1 name=$2 ca=$3 cn=$4 ip=${5:-} when=${6:-}

	certtool -p --key-type ecdsa --outfile "$d/$name.key" >/dev/null 2>&1
	chmod 600 "$d/$name.key"
	{
		printf 'cn = "%s"\ndns_name = "%s"\ntls_www_server\ntls_www_client\nsigning_key\n' \
			"$cn" "$cn"
		[ -z "$ip" ] || printf 'ip_address = "%s"\n' "$ip"
		if [ "$when" = past ]; then
			printf 'activation_date = "2019-01-01 00:00:00"\n'
			printf 'expiration_date = "2019-12-31 00:00:00"\n'
		else
			printf 'expiration_days = 30\n'
		fi
	} >"$d/$name.tmpl"
	certtool -c --load-privkey "$d/$name.key" --load-ca-certificate "$d/$ca.pem" \
		--load-ca-privkey "$d/$ca.key" --template "$d/$name.tmpl" \
		--outfile "$d/$name.pem" >/dev/null 2>&1 || {
		echo "certtool: cannot make certificate $name"
		exit 1
	}
}
