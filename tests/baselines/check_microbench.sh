#!/bin/sh
# SPDX-License-Identifier: MIT
# obl-microbench (bench/microbench.c): every micro-benchmark runs once and
# prints its answer; the memory one, cut at 16 MiB so that the sanitize build
# stays within its time (1 .. 256 MiB took over 120 s there on CI), writes a
# JSON row per region size and pattern (5 x 5), the layout one (shrunk to
# 2^17 buckets by the same cut) a row per layout (5); an unknown argument and
# an out-of-range --max-mib are usage errors (exit 2).
#   check_microbench.sh OBL_MICROBENCH JSON_OUT
set -u
mb=$1 json=$2
fail() { echo "check_microbench: FAIL: $*" >&2; exit 1; }
rm -f "$json"
out=$("$mb" all --reps 1 --max-mib 16 --json "$json") || fail "obl-microbench all exited $?"
echo "$out" | grep -q '^# answer: 64-byte entries' || fail "no cmov answer"
echo "$out" | grep -q '^# answer: from 16 MiB one core moves about [0-9]* random lines per us' ||
    fail "no memory answer"
echo "$out" | grep -q '^# answer: the best blocked layout (G = [2-5]) takes [0-9.]* of heap' ||
    fail "no layout answer"
[ "$(grep -c '"bench": "memory"' "$json")" -eq 25 ] || fail "memory rows: not 25"
[ "$(grep -c '"bench": "layout"' "$json")" -eq 5 ] || fail "layout rows: not 5"
[ "$(grep -c '"bench": "cmov"' "$json")" -ge 9 ] || fail "cmov rows: fewer than 9"
"$mb" bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown argument did not exit 2"
"$mb" memory --max-mib 0 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--max-mib 0 did not exit 2"
echo "check_microbench: pass"
