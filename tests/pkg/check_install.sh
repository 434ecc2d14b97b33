#!/bin/sh
# SPDX-License-Identifier: MIT
# obl as another project uses it:
#   check_install.sh BUILD_DIR SOURCE_DIR WORK_DIR CC
# installs the build to WORK_DIR/prefix and checks the files; builds
# examples/map.c against the INSTALLED library through pkg-config (shared,
# and fully static with --static) and through find_package(obl) (obl::obl,
# obl::obl_shared), and runs each program; configures a parent project that
# includes obl with add_subdirectory, which must get the library only (no
# tests: no CTestTestfile.cmake in the parent).
set -eu
build=$1 src=$2 work=$3 cc=$4
example=$src/examples/map.c
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
fail() { echo "check_install: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null || fail "cmake --install"
pc=$(find "$prefix" -name obl.pc)
[ -n "$pc" ] || fail "no obl.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in "$prefix/include/obl/obl.h" "$prefix/include/obl/oram.h" "$prefix/include/obl/omap.h" \
         "$libdir/libobl.a" "$libdir/libobl.so" "$libdir/cmake/obl/obl-config.cmake" \
         "$libdir/cmake/obl/obl-config-version.cmake"; do
  [ -e "$f" ] || fail "not installed: $f"
done
echo "installed: headers, libobl.a, libobl.so, obl.pc, CMake package under $prefix"

if ! command -v pkg-config >/dev/null 2>&1; then
  fail "pkg-config is missing (scripts/install-deps.sh installs it)"
fi
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs obl) || fail "pkg-config --cflags --libs obl"
echo "pkg-config --cflags --libs obl: $flags"
# shellcheck disable=SC2086
"$cc" -o "$work/map_pc_shared" "$example" $flags -Wl,-rpath,"$libdir" ||
  fail "build against the shared library through pkg-config"
ldd "$work/map_pc_shared" | grep -q "libobl.so" || fail "map_pc_shared does not use libobl.so"
"$work/map_pc_shared" || fail "map_pc_shared"
sflags=$(pkg-config --static --cflags --libs obl) || fail "pkg-config --static"
echo "pkg-config --static --cflags --libs obl: $sflags"
# shellcheck disable=SC2086
"$cc" -static -o "$work/map_pc_static" "$example" $sflags ||
  fail "fully static build through pkg-config --static"
"$work/map_pc_static" || fail "map_pc_static"

cmake -S "$src/tests/pkg/consumer" -B "$work/consumer" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_PREFIX_PATH="$prefix" -DOBL_EXAMPLE="$example" >/dev/null ||
  fail "find_package(obl) in a consumer project"
cmake --build "$work/consumer" >/dev/null || fail "consumer build"
"$work/consumer/consumer_static" || fail "consumer_static (obl::obl)"
"$work/consumer/consumer_shared" || fail "consumer_shared (obl::obl_shared)"

cmake -S "$src/tests/pkg/subproject" -B "$work/parent" -DCMAKE_C_COMPILER="$cc" \
      -DOBL_SOURCE="$src" >/dev/null || fail "add_subdirectory(obl) in a parent project"
[ ! -e "$work/parent/CTestTestfile.cmake" ] || fail "add_subdirectory(obl) enabled testing in the parent"
echo "check_install: pass (pkg-config shared and static, find_package, add_subdirectory)"
