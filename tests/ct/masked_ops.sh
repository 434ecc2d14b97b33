#!/bin/sh
# Audit of the release library's machine code for AVX-512 masked memory
# operands (docs/oram.md, "Masked memory operands"): memcheck cannot run
# AVX-512 code, and a compiler may turn a secret-dependent AND into a load
# masked by the secret. Every function with an instruction that has both a
# {%kN} mask and a memory operand (other than a constant, %rip-relative)
# must be on the compiler's allowlist, whose masked operands were checked by
# hand. Masks known to be all ones are not masked: kN set by
# `kxnor kA,kA,kN` and not written since within the basic block, which is
# how compilers feed the mask that scatter and gather instructions need
# (they clear it as they go). The scanner is tests/ct/masked_ops.awk; it is
# first run on a fixture listing (tests/ct/masked_ops_cases.txt) and must
# flag exactly the functions the fixture expects, so the scanner itself is
# checked on every run; then the library is scanned, and once more with an
# empty allowlist, which must flag every function found.
# Usage: masked_ops.sh LIBRARY [COMPILER-ID] (GNU, the default, or Clang).
# Exit status 0: nothing outside the list.
set -eu
lib=$1
case "${2:-GNU}" in
  # gcc 12: the eviction's and the put's held-block register paths (masked
  # reads of lines the same iteration reads and writes unmasked), ro_access;
  # the vector stash scans and one-vector bucket scans of nr_fetch, nr_put
  # and the eviction (2026-12-05): loads and stores masked by the stash's
  # length or a bucket's fixed lanes (public); the secret masks act on
  # registers only, behind NR_VBARRIER (src/oram/nroram_impl.h); since
  # 2026-12-06 the buckets and stash chunks move by plain loads and stores
  # (docs/oram.md), and what is left in these functions are masked loads
  # of the plan's stack arrays (gcc folds nr_plan_deepest's register masks,
  # public lengths, back into the loads) and gcc's own vectorised loops
  GNU) allow='nr_evict_buf32 nr_evict_buf64 nr_put32 nr_put64 nr_fetch32 nr_fetch64 ro_access' ;;
  # clang 14: obl_ct_memeq's tail (a load masked by the public key size) in
  # the map build's duplicate check
  # clang 14, since 2026-12-05: the same nr_* vector paths as gcc (masked
  # moves only, masks from public lengths, checked by hand 2026-12-05;
  # its 4 vpscatterqq are in nr_build, with kxnor all-ones masks)
  Clang) allow='obl_omap_build nr_evict_buf32 nr_evict_buf64 nr_put32 nr_put64 nr_fetch32 nr_fetch64' ;;
  *) echo "masked_ops: no allowlist for compiler $2" >&2; exit 1 ;;
esac
command -v objdump >/dev/null 2>&1 || { echo "masked_ops: objdump not found" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
scan() { awk -f "$here/masked_ops.awk" "$1" "$1" | sort | uniq -c; }

# the scanner on its fixture: exactly the expected functions, once each
fix="$here/masked_ops_cases.txt"
want=$(sed -n 's/^# expect: //p' "$fix" | tr ' ' '\n' | grep . | sort | tr '\n' ' ')
got=$(scan "$fix" | awk '$1 == 1 { print $2 } $1 != 1 { print "REPEATED:" $2 }' | sort | tr '\n' ' ')
if [ "$want" != "$got" ]; then
  echo "masked_ops: FAIL: the scanner flagged [$got] in its fixture, expected [$want]" >&2
  exit 1
fi
echo "masked_ops: scanner fixture: flags exactly $(echo "$want" | wc -w) expected functions"

lst=$(mktemp)
trap 'rm -f "$lst"' EXIT
objdump -d --no-show-raw-insn "$lib" >"$lst"
list=$(scan "$lst")
# outside ALLOW: prints the offending functions, returns their number
outside() {
  bad=0
  while read -r cnt fn; do
    [ -n "${fn:-}" ] || continue
    case " $1 " in
      *" $fn "*) ;;
      *) bad=$((bad + 1)); echo "  $fn: $cnt masked memory operands" ;;
    esac
  done <<LIST
$list
LIST
  return $bad
}

echo "masked_ops: functions with masked memory operands in $lib:"
echo "${list:-  (none)}"
if outside "$allow"; then
  echo "masked_ops: none outside the allowlist ($allow)"
else
  echo "masked_ops: FAIL: masked memory operands outside the allowlist (above)" >&2
  exit 1
fi
# control: with an empty allowlist every listed function must be flagged
n=$(printf '%s\n' "$list" | grep -c . || true)
set +e
outside "" >/dev/null
m=$?
set -e
if [ "$m" != "$n" ]; then
  echo "masked_ops: FAIL: control flagged $m of $n functions" >&2
  exit 1
fi
echo "masked_ops: control: an empty allowlist flags all $n"
# allowlist entries this build does not need (a note, not a failure)
for fn in $allow; do
  printf '%s\n' "$list" | awk -v f="$fn" '$2 == f { found = 1 } END { exit !found }' ||
    echo "masked_ops: note: $fn is allowed but has no masked operand in this build"
done
