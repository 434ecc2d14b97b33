#!/bin/sh
# Builds $OBL_PLUGIN_WORK/olabs_bench from driver.cpp against the peer's
# headers (omap/) and its three .cpp files, without its CMake project (so
# neither googletest nor its protobuf benchmark is needed). Rebuilds only
# when driver.cpp or the source path changed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${OBL_PLUGIN_WORK:-$here/../../build/plugins/olabs_oram}
src=$(cat "$work/src_path")
bin=$work/olabs_bench
if [ -x "$bin" ] && [ "$bin" -nt "$here/driver.cpp" ] && [ "$bin" -nt "$here/../common/peer_report.h" ] \
   && [ "$(cat "$work/built_from" 2>/dev/null)" = "$src" ]; then
    exit 0
fi
flags="-std=c++20 -O3 -DNDEBUG -march=native -fopenmp -DBOOST_STACKTRACE_USE_ADDR2LINE -w"
inc="-I$src/omap -I/usr/include/bearssl"
mkdir -p "$work/obj"
# the library's objects only when the source path changed (the driver is the
# part that changes)
[ "$(cat "$work/built_from" 2>/dev/null)" = "$src" ] || rm -f "$work/obj/"*.o
for f in common/encutils.cpp common/tracing/tracer.cpp external_memory/server/serverBackend.cpp; do
    o=$work/obj/$(basename "$f" .cpp).o
    [ -f "$o" ] || g++ $flags $inc -c "$src/omap/$f" -o "$o"
done
g++ $flags $inc -c "$here/driver.cpp" -o "$work/obj/driver.o"
g++ -fopenmp -o "$bin" "$work/obj/"*.o -lbearssl -ldl
printf '%s\n' "$src" > "$work/built_from"
