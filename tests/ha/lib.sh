# shellcheck shell=bash
# Helpers of the HA tests that drive bridges through their consoles (pair.sh, three.sh,
# upgrade.sh); sourced first: it sources the console tests' helpers (../console/lib.sh:
# bc, bc_ok, json, ...), which source the bridge tests' (../bridge/lib.sh).

# shellcheck source-path=SCRIPTDIR source=../console/lib.sh
. "$(dirname "$0")/../console/lib.sh"

# bc_must NAME COMMAND...: bcom to bridge NAME must succeed; its output is left in
# $SF_TMP/bcom.out, nothing printed.
bc_must() {
	bc_ok "$@" >/dev/null
}

# role_is NAME PARTITION ROLE: `ha` of bridge NAME shows PARTITION in ROLE.
role_is() {
	bc_must "$1" ha
	awk -v p="$2" -v r="$3" '$1 == p && $2 == r { ok = 1 } END { exit !ok }' "$SF_TMP/bcom.out" ||
		br_fail "bridge $1: partition $2 is not $3: $(cat "$SF_TMP/bcom.out")" "$1"
}
