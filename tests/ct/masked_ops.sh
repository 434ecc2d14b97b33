#!/bin/sh
# Audit of the release library's machine code for AVX-512 masked memory
# operands (docs/oram.md, "Masked memory operands"): memcheck cannot run
# AVX-512 code, and a compiler may turn a secret-dependent AND into a load
# masked by the secret. Every function with an instruction that has both a
# {%kN} mask and a memory operand (other than a constant, %rip-relative)
# must be on the compiler's allowlist, whose masked operands were checked by
# hand. Masks known to be all ones are not masked: kN set by kxnor (kN =
# all ones) and not written since, which is how compilers feed the mask
# that scatter and gather instructions need (they clear it as they go).
# The check then runs once more with an empty allowlist and must fail
# whenever the library has any masked operand (the check can fail).
# Usage: masked_ops.sh LIBRARY [COMPILER-ID] (GNU, the default, or Clang).
# Exit status 0: nothing outside the list.
set -eu
lib=$1
case "${2:-GNU}" in
  # gcc 12: the eviction's and the put's held-block register paths (masked
  # reads of lines the same iteration reads and writes unmasked), ro_access
  GNU) allow='nr_evict_buf32 nr_evict_buf64 nr_put32 nr_put64 ro_access' ;;
  # clang 14: obl_ct_memeq's tail (a load masked by the public key size) in
  # the map build's duplicate check
  Clang) allow='obl_omap_build' ;;
  *) echo "masked_ops: no allowlist for compiler $2" >&2; exit 1 ;;
esac
command -v objdump >/dev/null 2>&1 || { echo "masked_ops: objdump not found" >&2; exit 1; }
list=$(objdump -d --no-show-raw-insn "$lib" |
  awk '/^[0-9a-f]+ <[^>]*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); split("", ones); next }
       match($0, /kxnor[bwdq] +%k[0-7],%k[0-7],%k[1-7]/) {
         n = split(substr($0, RSTART, RLENGTH), a, ","); ones[a[n]] = 1; next }
       match($0, /\{%k[1-7]\}/) {
         k = substr($0, RSTART + 1, RLENGTH - 2)
         if ($0 ~ /\(%/ && $0 !~ /\(%rip\)/ && !(k in ones)) print fn
         if ($0 ~ /scatter|gather/) delete ones[k]
         next }
       match($0, /,%k[1-7]$/) { delete ones[substr($0, RSTART + 1)] }' | sort | uniq -c)

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
