#!/bin/sh
# SPDX-License-Identifier: MIT
# obl-ab (bench/ab.c) built against the current library twice over: each
# mode runs and prints its comparison; bad usage fails.
#   check_bench_ab.sh OBL_AB
set -u
ab=$1
fail() { echo "check_bench_ab: FAIL: $*" >&2; exit 1; }
"$ab" nroram 1024 8 8 3 | grep -q 'nroram read us, 3 rounds: old' || fail "nroram"
"$ab" roram 1024 56 3 | grep -q 'roram read us, 3 rounds: old' || fail "roram"
"$ab" umap 1024 56 3 1 | grep -q 'umap get us, 3 rounds: old .* new/old' || fail "umap"
OBL_AB_PLACEMENTS=2 "$ab" roram 1024 8 2 | grep -q 'roram read us, 4 rounds in 2 placements: old' ||
    fail "OBL_AB_PLACEMENTS=2"
if "$ab" roram 0 8 3 2>/dev/null; then fail "roram 0 (a zero size) was accepted"; fi
if OBL_AB_PLACEMENTS=0 "$ab" roram 1024 8 3 2>/dev/null; then fail "OBL_AB_PLACEMENTS=0 was accepted"; fi
echo "check_bench_ab: pass"
