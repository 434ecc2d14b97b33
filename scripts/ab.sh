#!/bin/sh
# SPDX-License-Identifier: MIT
# Two versions of obl in one process (bench/ab.c, docs/bench.md):
#   sh scripts/ab.sh REV [CPU] -- MODE ARGS...
# builds revision REV (any git revision) in a temporary worktree, renames
# every global symbol of its libobl.a to old_<name> (objcopy), builds the
# working tree's release library (build/), links bench/ab.c against both
# and runs it twice, the old and then the new version's structures created
# first, pinned to CPU (default 0) when taskset exists. MODE ARGS as
# obl-ab takes them, for example:
#   sh scripts/ab.sh HEAD~3 -- nroram 1048576 8 8 31
#   sh scripts/ab.sh cb35651 1 -- umap 1048576 56 41 7
#   OBL_AB_PLACEMENTS=5 sh scripts/ab.sh HEAD -- nroram 1048576 8 8 6
# OBL_AB_PLACEMENTS=K (passed to obl-ab) creates the two structures K times
# per order, ROUNDS rounds each, and pools the rounds: on the project's VM a
# structure's speed depends on where its memory lands (bench/ab.c).
# Exit status: that of obl-ab, or 2 when something could not be built.
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: sh scripts/ab.sh REV [CPU] -- MODE ARGS..." >&2; exit 2; }
rev=$1
shift
cpu=0
if [ "$1" != "--" ]; then
    cpu=$1
    shift
fi
[ "${1:-}" = "--" ] || { echo "ab.sh: expected -- before obl-ab's arguments" >&2; exit 2; }
shift
sha=$(git rev-parse --short "$rev") || exit 2
work=$(mktemp -d)
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/src" "$sha" >/dev/null 2>&1 || { echo "ab.sh: no worktree for $rev" >&2; exit 2; }
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DOBL_BUILD_TESTS=OFF \
      -DOBL_BUILD_BENCH=OFF >/dev/null || exit 2
cmake --build "$work/build" -j2 --target obl >/dev/null || exit 2
nm --defined-only -g "$work/build/libobl.a" 2>/dev/null |
    awk 'NF == 3 { print $3 " old_" $3 }' | sort -u > "$work/syms"
objcopy --redefine-syms="$work/syms" "$work/build/libobl.a" "$work/libobl_old.a" || exit 2
cmake --preset release >/dev/null && cmake --build --preset release -j2 --target obl >/dev/null || exit 2
${CC:-gcc} -O2 -march=native -std=c11 -Iinclude -Ibench bench/ab.c bench/harness.c \
    build/libobl.a "$work/libobl_old.a" -lm -o "$work/obl-ab" || exit 2
echo "ab.sh: old = $sha, new = the working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ', modified'))" >&2
# both orders of creation (bench/ab.c, ab_new_first): the old version's
# structure first, then the new one's
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c $cpu"
for first in 0 1; do
    echo "ab.sh: $( [ $first = 1 ] && echo new || echo old ) version's structures created first" >&2
    OBL_AB_NEW_FIRST=$first $pin "$work/obl-ab" "$@" || exit $?
done
