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
if(OBL_CT_CHECK)
  add_executable(ct_leak_omap_hash audit/test_audit.c ${PROJECT_SOURCE_DIR}/src/omap/build.c)
  target_compile_definitions(ct_leak_omap_hash PRIVATE OBL_TEST_PLANT_HASH_BRANCH)
  target_link_libraries(ct_leak_omap_hash PRIVATE obl_traced)
  target_include_directories(ct_leak_omap_hash PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME ct_negative_omap_hash
           COMMAND sh ${OBL_MEMCHECK} expect-branch $<TARGET_FILE:ct_leak_omap_hash>
                   -s ${OBL_TEST_SEED} --ct --only build_hash)
  set_tests_properties(ct_negative_omap_hash PROPERTIES LABELS "ct;negative" TIMEOUT 120)
endif()
