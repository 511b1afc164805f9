# shellcheck shell=bash
# tests/lib/ha.sh (prefix ha_): the HA tests that drive bridges through their consoles
# (tests/ha: pair.sh, three.sh, upgrade.sh, ...); sourced by each test (bash, set -eu).
# Sources con.sh (con_bc, con_ok, con_must, con_json, ...), which sources br.sh.

[ -z "${T_LIB_HA:-}" ] || return 0
T_LIB_HA=1

# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "${BASH_SOURCE[0]%/*}/con.sh"

# ha_role_is NAME PARTITION ROLE: `ha` of bridge NAME shows PARTITION in ROLE.
ha_role_is() {
	con_must "$1" ha
	awk -v p="$2" -v r="$3" '$1 == p && $2 == r { ok = 1 } END { exit !ok }' "$SF_TMP/bcom.out" ||
		br_fail "bridge $1: partition $2 is not $3: $(cat "$SF_TMP/bcom.out")" "$1"
}
