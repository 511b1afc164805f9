#!/bin/bash
set -eu
. "$(dirname "$0")/../lib/tools.sh"
sf_init v6try
br_bridge bridge 2 -d sim_ib0 -r sim_roce0 --workers 1 -m ff0e::1234 -m 239.1.2.3=ff0e::1:2
tools_listen on_roce -r sim_roce2 -m ff0e::1234 -D 50
tools_listen on_ib -d sim_ib2 -m ff0e::1234 -D 50
tools_send ib_tx -d sim_ib1 -m ff0e::1234 -n 100 --rate 20000
tools_send roce_tx -r sim_roce1 -m ff0e::1234 -n 100 --rate 20000
sleep 1
tools_stop on_roce
tools_stop on_ib
br_stop bridge
cat $SF_TMP/bridge.err | tail -30
cat $SF_TMP/on_roce.out $SF_TMP/on_ib.out
