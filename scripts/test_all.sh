#!/bin/sh
# SPDX-License-Identifier: MIT
# The whole test suite of obl, as the README shows and CI runs it:
# installs what is missing, then configures, builds and runs ctest in the
# four builds: release (unit tests and the suite's tooling tests), sanitize
# (address + undefined behaviour), ct (every test under valgrind memcheck
# with secrets marked, plus the negative controls that must fail the check)
# and clang (the unit tests and the masked-operand audit with clang).
# Warnings are errors. Exit status 0 only when every test of every build passed.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
pass=0
fail=0
status=0
for preset in release sanitize ct clang; do
  echo "=== build: $preset"
  cmake --preset "$preset" -DOBL_WERROR=ON >/dev/null
  cmake --build --preset "$preset" -j "$jobs" >/dev/null
  log=$(mktemp)
  if ctest --preset "$preset" -j "$jobs" 2>&1 | tee "$log"; then :; fi
  # ctest's summary line: "100% tests passed, 0 tests failed out of 12"
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [ -z "$line" ]; then
    echo "=== $preset: ctest printed no summary" >&2
    status=1
  else
    f=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    n=$(echo "$line" | sed -E 's/.*failed out of ([0-9]+).*/\1/')
    pass=$((pass + n - f))
    fail=$((fail + f))
    [ "$f" = 0 ] || status=1
  fi
  rm -f "$log"
done
echo "all builds: $pass passed, $fail failed"
exit $status
