# SPDX-License-Identifier: MIT
# Contract checks of an outside audit (tests/audit/test_audit.c): the map
# build keeps the keys' hashes secret, NRORAM ids outside the id space,
# export after an overflow, RORAM stash_size, a map's FULL outputs,
# obl_nroram_insert with value NULL.
obl_add_test(test_audit audit/test_audit.c SUBTESTS TIMEOUT 120)

# Negative control of the build's memcheck check: the same test, linked
# with a map build that branches on the keys' hashes (the branch the build
# had), must make memcheck report a conditional jump on a secret. The
# test's own copy of src/omap/build.c takes the archive's place.
obl_add_planted_leak(omap_hash OBL_TEST_PLANT_HASH_BRANCH build_hash audit/test_audit.c
                     ${PROJECT_SOURCE_DIR}/src/omap/build.c)
