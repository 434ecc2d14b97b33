#!/bin/sh
# SPDX-License-Identifier: MIT
# The licence line of every source file (LICENSE: MIT).
#   sh scripts/spdx.sh          adds "SPDX-License-Identifier: MIT" as the
#                               first line (after a #! line) of each file
#                               that lacks it; running it again changes
#                               nothing
#   sh scripts/spdx.sh --check  lists the files that lack it; exit 1 if any
# Files: *.c *.h *.py *.sh *.cmake and CMakeLists.txt under the directories
# below that git tracks, or that are new and not ignored.
set -eu
cd "$(dirname "$0")/.."
tag="SPDX-License-Identifier: MIT"
dirs="src include bench tests baselines examples scripts cmake"
mode=stamp
[ "${1:-}" = "--check" ] && mode=check

files() {
    # shellcheck disable=SC2086
    git ls-files --cached --others --exclude-standard -- $dirs |
        grep -E '(\.(c|h|py|sh|cmake)|(^|/)CMakeLists\.txt)$' || true
}

missing=0
for f in $(files); do
    [ -f "$f" ] || continue
    head -n 3 "$f" | grep -q "$tag" && continue
    if [ $mode = check ]; then
        echo "spdx: no licence line: $f"
        missing=$((missing + 1))
        continue
    fi
    case $f in
    *.c | *.h) line="/* $tag */" ;;
    *) line="# $tag" ;;
    esac
    tmp=$(mktemp)
    if head -n 1 "$f" | grep -q '^#!'; then
        { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$tmp"
    else
        { echo "$line"; cat "$f"; } >"$tmp"
    fi
    # keep the file's mode (scripts stay executable)
    cat "$tmp" >"$f"
    rm -f "$tmp"
done
if [ $mode = check ]; then
    [ $missing = 0 ] && echo "spdx: every source file carries the licence line"
    [ $missing = 0 ]
fi
