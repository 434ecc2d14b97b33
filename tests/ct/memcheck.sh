#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs a test program under valgrind memcheck as a secret tracker.
#   memcheck.sh expect-clean  PROG ARGS...  pass iff memcheck reports nothing
#                                           and PROG exits 0 (77, a skipped
#                                           sub-test, passes through)
#   memcheck.sh expect-memsafe PROG ARGS... as expect-clean, without the
#                                           secret tracking (uninitialised-
#                                           value reports): for programs that
#                                           branch on the library's outputs
#                                           as any caller does (examples/)
#   memcheck.sh expect-branch PROG ARGS...  pass iff memcheck reports a
#                                           conditional jump on a secret
#   memcheck.sh expect-index  PROG ARGS...  pass iff memcheck reports a
#                                           secret-dependent address
# The negative controls prove the check can fail: a planted leak must be seen.
mode=$1
shift
undef=yes
if [ "$mode" = expect-memsafe ]; then
  mode=expect-clean
  undef=no
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
valgrind --tool=memcheck --error-exitcode=99 --track-origins=$undef --undef-value-errors=$undef \
  --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
  --log-file="$log" "$@"
rc=$?
case $mode in
expect-clean)
  if [ $rc -eq 77 ]; then
    grep -E "ERROR SUMMARY" "$log"
    exit 77
  fi
  if [ $rc -ne 0 ]; then
    cat "$log"
    echo "memcheck: FAIL (exit $rc): a report above means a secret reached a branch or an address" >&2
    exit 1
  fi
  grep -E "ERROR SUMMARY" "$log"
  exit 0 ;;
expect-branch) want="Conditional jump or move depends on uninitialised value" ;;
expect-index) want="Use of uninitialised value of size 8" ;;
*) echo "memcheck.sh: unknown mode $mode" >&2; exit 2 ;;
esac
if [ $rc -eq 99 ] && grep -q "$want" "$log"; then
  echo "negative control: memcheck reported '$want' as it must"
  exit 0
fi
cat "$log"
echo "negative control FAILED: expected exit 99 and '$want', got exit $rc" >&2
exit 1
