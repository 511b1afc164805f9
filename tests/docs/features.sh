#!/bin/bash
# docs/ib2roce.conf.5's FEATURES section names every feature that `ib2roce --enable` lists
# (it lacked cpu_dma_latency, rt, mlock and oversubscribe: issue 21).
set -eu
ib2roce=$1
page=$2
names=$("$ib2roce" --enable 2>&1 | awk 'NR > 1 && NF { print $1 }')
[ -n "$names" ] || { echo "docs-features: FAIL: ib2roce --enable listed nothing" >&2; exit 1; }
section=$(sed -n '/^\.SH FEATURES/,/^\.SH /p' "$page" | sed 's/\\-/-/g')
missing=
for n in $names; do
	grep -qF "\\fB$n\\fR" <<<"$section" || missing="$missing $n"
done
if [ -n "$missing" ]; then
	echo "docs-features: FAIL: $page's FEATURES omits:$missing" >&2
	exit 1
fi
echo "docs-features: $(wc -w <<<"$names") features, all in $page"
