#!/bin/sh
# SPDX-License-Identifier: MIT
# Whether two builds made the same machine code (docs/dispatch.md, "Same machine code"):
#   sh scripts/same_code.sh A.o B.o
#   sh scripts/same_code.sh BUILD_A BUILD_B [PATTERN]
# disassembles each pair of objects (objdump -d) and compares them after
# dropping what moves when unrelated code moves: the addresses, the raw
# bytes and the numbers gcc gives local labels and clones (.LC5, .isra.0);
# jump targets stay, as offsets into their function. With two build trees,
# every object of BUILD_A whose path matches PATTERN (an extended regular
# expression, default: the per-variant objects, _portable.dir/ _avx2.dir/
# _avx512.dir/) is compared with the object of the same path in BUILD_B.
# Prints one line per pair, "same" or "differs" (with the first lines of
# the difference); exit status 0 only when every pair is the same.
set -eu
norm() {
    objdump -d --no-show-raw-insn "$1" |
        sed -E -e '1,/^Disassembly/d' \
               -e 's/^ *[0-9a-f]+:[[:space:]]*//' \
               -e 's/^[0-9a-f]+ (<[^>]*>:)/\1/' \
               -e 's/\b[0-9a-f]+ (<[^>]*>)/\1/g' \
               -e 's/\.(LC|L)[0-9]+/.\1N/g' \
               -e 's/\.(isra|constprop|part|cold|lto_priv)\.[0-9]+/.\1/g' \
               -e 's/[[:space:]]+$//'
}
compare() { # $1 $2: objects; $3: the name to print
    a=$(mktemp)
    b=$(mktemp)
    norm "$1" > "$a"
    norm "$2" > "$b"
    if cmp -s "$a" "$b"; then
        echo "same     $3 ($(grep -c . "$a") lines)"
        rm -f "$a" "$b"
        return 0
    fi
    echo "differs  $3"
    diff "$a" "$b" | head -n 12 | sed 's/^/    /'
    rm -f "$a" "$b"
    return 1
}
[ $# -ge 2 ] || { echo "usage: sh scripts/same_code.sh A.o B.o | BUILD_A BUILD_B [PATTERN]" >&2; exit 2; }
if [ -f "$1" ]; then
    compare "$1" "$2" "$1"
    exit $?
fi
pat=${3:-'_(portable|avx2|avx512)\.dir/'}
status=0
n=0
for f in $(cd "$1" && find . -name '*.o' | sort | grep -E "$pat"); do
    n=$((n + 1))
    if [ ! -f "$2/$f" ]; then
        echo "missing  $f (not in $2)"
        status=1
        continue
    fi
    compare "$1/$f" "$2/$f" "$f" || status=1
done
[ "$n" -gt 0 ] || { echo "same_code.sh: no object matches '$pat' in $1" >&2; exit 2; }
exit $status
