# SPDX-License-Identifier: MIT
# Record sorts, shuffle, compaction and expansion (obl/sort.h): models,
# traces, bad input; secrets marked under memcheck in the ct build.
obl_add_test(test_sort sort/test_sort.c TIMEOUT 300)
