#!/bin/sh
# SPDX-License-Identifier: MIT
# Audit of the release library's machine code for AVX-512 masked memory
# operands (docs/oram.md, "Masked memory operands"): memcheck cannot run
# AVX-512 code, and a compiler may turn a secret-dependent AND into a load
# masked by the secret. Every instruction that has both a {%kN} mask and a
# memory operand (other than a constant, %rip-relative) must be of a kind
# on the compiler's allowlist (its function, mnemonic, and whether the
# memory operand is loaded or stored), whose operands were checked by
# hand. Masks known to be all ones are not masked: kN set by
# `kxnor kA,kA,kN` and not written since within the basic block, which is
# how compilers feed the mask that scatter and gather instructions need
# (they clear it as they go). The scanner is tests/ct/masked_ops.awk; it is
# first run on a fixture listing (tests/ct/masked_ops_cases.txt) and must
# flag exactly the functions the fixture expects, so the scanner itself is
# checked on every run (and must tell its planted store from its loads);
# then the library is scanned, and once more with an empty allowlist, which
# must flag every kind found.
# Usage: masked_ops.sh LIBRARY [COMPILER-ID] (GNU, the default, or Clang).
# Exit status 0: nothing outside the list.
set -eu
lib=$1
case "${2:-GNU}" in
  # Entries are function:mnemonic:load|store (masked_ops.awk, detail=1):
  # a function may have only the kinds of masked operand listed for it, so
  # a new kind inside an allowed function fails (a review found one on
  # 2026-12-06: a broadcast of the put's value folded into a load masked by
  # the secret slot, in functions allowed as a whole).
  # gcc 12, checked by hand (docs/oram.md, "Masked memory operands"):
  #   nr_evict_buf*: vmovdqu16 loads of the eviction plan's stack arrays
  #     (rr, tg), masked by public lengths that gcc folds back into the
  #     loads from nr_plan_deepest / nr_plan_swaps;
  #   nr_put32: vpxord loads of gcc's vectorised portable stash insertion
  #     (stashes over 62 blocks), each followed by an unmasked read and
  #     write of the same 64 bytes in the same iteration.
  # (ro_walk_avx512 had vmovdqu32 and vpxord loads too: they were the
  # 32-bit base scan's main loop, masked by the secret index comparison,
  # not its tail; that loop is now written with the mask in a vector.)
  # Since 2026-12-06 no masked store is allowed anywhere.
  GNU) allow='nr_evict_buf32:vmovdqu16:load nr_evict_buf64:vmovdqu16:load nr_put32:vpxord:load' ;;
  # clang 14: the same plan loads, and obl_ct_memeq's tail in the map
  # build's duplicate check (a load masked by the public key size); its 4
  # vpscatterqq in nr_build have kxnor all-ones masks
  Clang) allow='nr_evict_buf32:vmovdqu16:load nr_evict_buf64:vmovdqu16:load obl_omap_build:vmovdqu8:load' ;;
  *) echo "masked_ops: no allowlist for compiler $2" >&2; exit 1 ;;
esac
command -v objdump >/dev/null 2>&1 || { echo "masked_ops: objdump not found" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
scan() { awk -f "$here/masked_ops.awk" "$1" "$1" | sort | uniq -c; }
scan_detail() { awk -v detail=1 -f "$here/masked_ops.awk" "$1" "$1" | sort | uniq -c; }

# the scanner on its fixture: exactly the expected functions, once each
fix="$here/masked_ops_cases.txt"
want=$(sed -n 's/^# expect: //p' "$fix" | tr ' ' '\n' | grep . | sort | tr '\n' ' ')
got=$(scan "$fix" | awk '$1 == 1 { print $2 } $1 != 1 { print "REPEATED:" $2 }' | sort | tr '\n' ' ')
if [ "$want" != "$got" ]; then
  echo "masked_ops: FAIL: the scanner flagged [$got] in its fixture, expected [$want]" >&2
  exit 1
fi
echo "masked_ops: scanner fixture: flags exactly $(echo "$want" | wc -w) expected functions"
# and tells the fixture's planted store from its loads
kinds=$(scan_detail "$fix" | awk '{ print $2 }' | grep -E '^case_(store|secret_load):' | tr '\n' ' ')
if [ "$kinds" != "case_secret_load:vmovdqu64:load case_store:vmovdqu64:store " ]; then
  echo "masked_ops: FAIL: the scanner's detail of the fixture is [$kinds]" >&2
  exit 1
fi

lst=$(mktemp)
trap 'rm -f "$lst"' EXIT
objdump -d --no-show-raw-insn "$lib" >"$lst"
list=$(scan_detail "$lst")
# outside ALLOW: prints the offending functions, returns their number
outside() {
  bad=0
  while read -r cnt fn; do
    [ -n "${fn:-}" ] || continue
    case " $1 " in
      *" $fn "*) ;;
      *) bad=$((bad + 1)); echo "  $fn: $cnt masked memory operands of this kind" ;;
    esac
  done <<LIST
$list
LIST
  return $bad
}

echo "masked_ops: masked memory operands in $lib (count function:mnemonic:kind):"
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
echo "masked_ops: control: an empty allowlist flags all $n kinds"
# allowlist entries this build does not need (a note, not a failure)
for fn in $allow; do
  printf '%s\n' "$list" | awk -v f="$fn" '$2 == f { found = 1 } END { exit !found }' ||
    echo "masked_ops: note: $fn is allowed but does not occur in this build"
done
