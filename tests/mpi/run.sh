#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs an obl-mpi deployment for ctest: run.sh ok|fail REGEX mpirun-args...
# ok: exit 0 and REGEX in the output; fail: nonzero exit and REGEX (the
# error expected, for example a rejected message), within 120 s either way.
set -u
want=$1
re=$2
shift 2
here=$(dirname "$0")
out=$(mktemp)
# Open MPI's own allocations are not freed at exit: no leak check under ASan
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} timeout 120 sh "$here/../../scripts/mpirun.sh" "$@" >"$out" 2>&1
rc=$?
cat "$out"
grep -Eq "$re" "$out"
found=$?
rm -f "$out"
if [ "$want" = ok ]; then
  [ $rc = 0 ] && [ $found = 0 ] && exit 0
else
  [ $rc != 0 ] && [ $rc != 124 ] && [ $found = 0 ] && exit 0
fi
echo "run.sh: expected $want with /$re/, got exit $rc, match $found" >&2
exit 1
