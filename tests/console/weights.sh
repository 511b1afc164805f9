#!/bin/bash
# Per-group weights ("-m addr#w=N", the config file's multicast line, issue 28): the
# groups are spread over the workers by weight, not by count. Two workers, groups given
# (in the config file) as A#w=10, C, B#w=10, D: by count
# (round-robin over the pairs) A and B would both land on worker 0; by weight A and B go
# to different workers, C and D fill up behind them (11 and 11). A join at run time goes
# to the worker with the least weight: E#w=30 to worker 0, then F and G to worker 1 (by
# count G would go to worker 0). A heavy group forwards; a bad weight is refused with a
# one-line message and changes nothing. A reload that changes C's and G's weights keeps
# them where they are, with the new weights counted for the next placement.
set -eu
# shellcheck source-path=SCRIPTDIR source=../lib/con.sh
. "$(dirname "$0")/../lib/con.sh"

sf_init console-weights
ga=239.7.0.1
gb=239.7.0.2
gc=239.7.0.3
gd=239.7.0.4
n=200

conf=$SF_TMP/bridge.conf
cat >"$conf" <<C
device sim_ib0
roce sim_roce0
workers 2
multicast $ga#w=10
multicast $gc
multicast $gb#96,w=10
multicast $gd
C
br_bridge bridge 4 -e oversubscribe -c "$conf"

worker_of() { # the worker of group $1 (pair k is worker k % 2)
	echo $(($(con_json bridge ".groups[] | select(.addr == \"$1\") | .pair") % 2))
}
[ "$(worker_of "$ga")" != "$(worker_of "$gb")" ] ||
	br_fail "the two heavy groups share worker $(worker_of "$ga")" bridge
[ "$(con_json bridge '[.workers[].weight] | map(tostring) | join(",")')" = "11,11" ] ||
	br_fail "worker weights $(con_json bridge '[.workers[].weight]')" bridge
[ "$(con_json bridge ".groups[] | select(.addr == \"$gb\") | .weight")" = 10 ] ||
	br_fail "B's weight" bridge
out=$(con_ok bridge workers)
con_expect_in "$out" "^ *worker +cpu +core +node +isolated +channels +groups +weight " "workers table: weight column"
con_expect_in "$out" "^ *[01] +.* 2 +11 +2 " "workers table: 2 groups of weight 11 per worker"

# The heavy group B forwards (IB -> RoCE), on its worker.
br_listen b_roce "$ROCE_NET.3" -g "$gb" -n "$n" --verify --timeout 30
br_send b_tx "$IB_NET.4" -g "$gb" -n "$n" --rate 5000
br_expect_listener b_roce "$n" 1

# Joins at run time: the least weighted worker.
con_ok bridge join 239.7.0.5#w=30 both >/dev/null
[ "$(worker_of 239.7.0.5)" = 0 ] || br_fail "E (w=30) not on worker 0 (tie 11/11)" bridge
con_ok bridge join 239.7.0.6 both >/dev/null
con_ok bridge join 239.7.0.7 both >/dev/null
[ "$(worker_of 239.7.0.6)" = 1 ] || br_fail "F not on worker 1 (weights 41/11)" bridge
[ "$(worker_of 239.7.0.7)" = 1 ] || br_fail "G not on worker 1 (weights 41/12)" bridge
[ "$(con_json bridge '[.workers[].weight] | map(tostring) | join(",")')" = "41,13" ] ||
	br_fail "worker weights after the joins $(con_json bridge '[.workers[].weight]')" bridge

# Bad weights: one line naming the group, nothing joined.
for bad in "239.7.0.8#w=0" "239.7.0.8#w=x" "239.7.0.8#w=3,w=4" "239.7.0.8#5,7"; do
	out=$(con_must_exit bridge 1 join "$bad" both)
	con_expect_in "$out" "group '$bad': (weight|TOS)" "join $bad"
done
[ "$(con_json bridge '.groups | length')" = 7 ] || br_fail "a bad join changed the groups" bridge

# Reload: C weighs 40 now (it stays on its pair: worker 0 weighs 80), G 80 (it stays
# too: worker 1 weighs 92), H is new and goes to worker 0: the new weights count (with
# the weights before the reload, 41 and 13, it would go to worker 1).
pc=$(con_json bridge ".groups[] | select(.addr == \"$gc\") | .pair")
{
	cat "$conf"
	echo "multicast 239.7.0.5#w=30"
	echo "multicast 239.7.0.6"
	echo "multicast 239.7.0.7#w=80"
	echo "multicast 239.7.0.8"
} | sed "s/^multicast $gc\$/multicast $gc#w=40/" >"$conf.new"
mv "$conf.new" "$conf"
out=$(con_ok bridge reload)
con_expect_in "$out" "1 group added, 0 removed" "reload: H added"
[ "$(con_json bridge ".groups[] | select(.addr == \"$gc\") | .weight")" = 40 ] ||
	br_fail "C's weight after the reload" bridge
[ "$(con_json bridge ".groups[] | select(.addr == \"$gc\") | .pair")" = "$pc" ] ||
	br_fail "the reload moved C" bridge
[ "$(worker_of 239.7.0.7)" = 1 ] || br_fail "the reload moved G" bridge
[ "$(worker_of 239.7.0.8)" = 0 ] || br_fail "H not on worker 0 (weights 80/92)" bridge
[ "$(con_json bridge '[.workers[].weight] | map(tostring) | join(",")')" = "81,92" ] ||
	br_fail "worker weights after the reload $(con_json bridge '[.workers[].weight]')" bridge
[ "$(con_json bridge ".groups[] | select(.addr == \"$gc\") | .group")" = "$gc#w=40" ] ||
	br_fail "C's spec after the reload" bridge

br_stop bridge
br_expect_group bridge "$gb#96,w=10" ib_to_roce "$n"
br_conservation bridge sim_ib0 sim_roce0
sf_log "PASS"
