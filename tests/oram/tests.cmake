# SPDX-License-Identifier: MIT
# ORAM module tests: NRORAM and RORAM models, stash overflow, trace
# equality, chi-square of revealed leaves, bad input, allocation failure;
# one ctest entry per sub-test (test_oram.NAME; `test_oram --list`).
# `test_oram --long` runs the stash soak (10^8 accesses at 2^16; --soak N OPS
# for another size), outside CI.
obl_add_test(test_oram oram/test_oram.c SUBTESTS TIMEOUT 300)
target_link_libraries(test_oram PRIVATE m)
