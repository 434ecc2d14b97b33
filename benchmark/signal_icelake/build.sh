#!/bin/sh
# Builds $OBL_PLUGIN_WORK/signal_bench from driver.c and the peer's path ORAM
# and hash table (c/path_oram, c/ohtable, c/util/uint128div.c) with clang, as
# the peer builds them, outside its Makefile (which wants OpenEnclave and a
# JDK: compat/ stands in for the two headers its util/log.h includes).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${OBL_PLUGIN_WORK:-$here/../../build/plugins/signal_icelake}
c=$(cat "$work/src_path")/c
# The sharded table needs SipHash (setup.sh found it, or not): built with it
# when present, else the sharded cases fail and say why.
sharded=""
if [ -f "$work/siphash_path" ]; then
    sip=$(cat "$work/siphash_path")
    sharded="-DSIGNAL_SHARDED -pthread -I$sip $c/sharded_ohtable/queue.c"
    sharded="$sharded $c/sharded_ohtable/shard.c $c/sharded_ohtable/sharded_ohtable.c"
    sharded="$sharded $sip/halfsiphash.c"
fi
# shellcheck disable=SC2086
clang -O3 -march=native -w -DIS_TEST -I"$here/compat" -iquote "$c" -I"$c" \
    -o "$work/signal_bench" "$here/driver.c" \
    "$c/path_oram/path_oram.c" "$c/path_oram/position_map.c" "$c/path_oram/stash.c" \
    "$c/path_oram/bucket.c" "$c/path_oram/tree_path.c" "$c/ohtable/ohtable.c" \
    "$c/util/uint128div.c" $sharded -lm
