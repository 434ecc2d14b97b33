#!/bin/sh
# Audit of the release library's machine code for AVX-512 masked memory
# operands (docs/oram.md, "Masked memory operands"): memcheck cannot run
# AVX-512 code, and a compiler may turn a secret-dependent AND into a load
# masked by the secret. Every function with an instruction that has both a
# {%kN} mask and a memory operand (other than a constant, %rip-relative)
# must be on the allowlist, whose masked operands were checked by hand: they
# read lines that the same loop iteration also reads and writes unmasked.
# The check then runs once more with an empty allowlist and must fail
# whenever the library has any masked operand (the check can fail).
# Usage: masked_ops.sh LIBRARY. Exit status 0: nothing outside the list.
set -eu
lib=$1
allow='nr_evict_buf32 nr_evict_buf64 nr_put32 nr_put64 ro_access'
command -v objdump >/dev/null 2>&1 || { echo "masked_ops: objdump not found" >&2; exit 1; }
list=$(objdump -d --no-show-raw-insn "$lib" |
  awk '/^[0-9a-f]+ <[^>]*>:$/ { fn = $2; gsub(/[<>:]/, "", fn) }
       /\{%k[1-7]\}/ && /\(%/ && !/\(%rip\)/ { print fn }' | sort | uniq -c)

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
