#!/bin/sh
# SPDX-License-Identifier: MIT
# Sizes of the code's rooms at a revision (default: the working tree):
#   sh scripts/sizes.sh [REV] [MAX]
# prints the functions of src/, bench/ and tests/ over MAX lines (default
# 100), longest first, the files of src/ over 400 lines, and the counts.
# A function's size is the number of lines from the first line of its
# definition (at column 0, not a preprocessor line, a comment or a
# declaration) to the '}' at column 0 that closes it, that line not
# counted: the house style (clang-format) puts both at column 0.
set -eu
cd "$(dirname "$0")/.."
rev=${1:-}
max=${2:-100}
list() {
    if [ -n "$rev" ]; then git ls-tree -r --name-only "$rev" -- src bench tests; else
        git ls-files -co --exclude-standard -- src bench tests; fi | grep -E '\.[ch]$'
}
show() {
    if [ -n "$rev" ]; then git show "$rev:$1"; else cat "$1"; fi
}
funcs=$(mktemp)
trap 'rm -f "$funcs"' EXIT
for f in $(list); do
    show "$f" | awk -v file="$f" '
        /^[A-Za-z_]/ && !/^(typedef|struct [A-Za-z_0-9]+ *\{|union|enum|#)/ && !/;[ \t]*$/ {
            if (start == 0) { start = NR; sig = $0 }
            next
        }
        start && /^\{/ { body = 1; next }
        body && /^\}/ {
            name = sig; sub(/\(.*/, "", name); n = split(name, w, /[ *]+/)
            id = w[n]
            if (match(sig, /[A-Z][A-Z_0-9]*\([A-Za-z_0-9]+\)\(/)) id = substr(sig, RSTART, RLENGTH - 1)
            print NR - start, file, id
            start = 0; body = 0; next
        }
        !body && /^[^ \t]/ && !/^[A-Za-z_]/ { start = 0 }
        !body && /;[ \t]*$/ && !/^[ \t]/ { start = 0 }
    ' >> "$funcs"
done
echo "functions over $max lines (lines, file, function):"
sort -k1,1nr "$funcs" | awk -v m="$max" '$1 > m { printf "  %4d  %s  %s\n", $1, $2, $3 }'
echo "largest five:"
sort -k1,1nr "$funcs" | head -n 5 | awk '{ printf "  %4d  %s  %s\n", $1, $2, $3 }'
echo "files of src/ over 400 lines:"
for f in $(list | grep '^src/'); do
    printf '%s %s\n' "$(show "$f" | wc -l)" "$f"
done | sort -k1,1nr | awk '$1 > 400 { printf "  %5d  %s\n", $1, $2 }'
printf 'functions: %s, over %s lines: %s\n' "$(wc -l < "$funcs")" "$max" \
    "$(awk -v m="$max" '$1 > m' "$funcs" | wc -l)"
