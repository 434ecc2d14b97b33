#!/bin/sh
# Builds $OBL_PLUGIN_WORK/cpp_stl_bench from driver.cpp.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${OBL_PLUGIN_WORK:-$here/../../build/plugins/cpp_stl}
mkdir -p "$work"
g++ -std=c++17 -O2 -march=native -Wall -o "$work/cpp_stl_bench" "$here/driver.cpp"
