#!/bin/sh
# Builds $OBL_PLUGIN_WORK/cpp_stl_bench from driver.cpp.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${OBL_PLUGIN_WORK:-$here/../../build/plugins/cpp_stl}
mkdir -p "$work"
if [ -x "$work/cpp_stl_bench" ] && [ "$work/cpp_stl_bench" -nt "$here/driver.cpp" ] \
   && [ "$work/cpp_stl_bench" -nt "$here/../common/peer_report.h" ]; then
    exit 0
fi
g++ -std=c++17 -O2 -march=native -Wall -o "$work/cpp_stl_bench" "$here/driver.cpp"
