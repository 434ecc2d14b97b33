# SPDX-License-Identifier: MIT
# Oblivious map tests, one ctest entry per sub-test (test_omap.NAME;
# `test_omap --list`): SipHash vectors, the overflow bound and the
# automatic sizing, reference-model streams at several capacities up to
# capacity, adversarial keys, bulk build, stash overflow (map unchanged),
# bad input and allocation failure, white-box checks of the stash invariant.
# `test_omap --long` measures the stash occupancy at capacity instead.
obl_add_test(test_omap omap/test_omap.c SUBTESTS TIMEOUT 300)

# The plain-memory model of the overflow stash (no ORAM, no secrets): its
# self-check runs in the plain builds; with arguments it measures the
# occupancy over 10^9 operations (docs/omap.md, "Overflow stash").
add_executable(overflow_model omap/overflow_model.c)
target_link_libraries(overflow_model PRIVATE obl_traced m)
target_include_directories(overflow_model PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(overflow_model PRIVATE ${OBL_WARN})
if(NOT OBL_CT_CHECK)
  add_test(NAME overflow_model COMMAND overflow_model -s ${OBL_TEST_SEED})
  set_tests_properties(overflow_model PROPERTIES LABELS "unit" TIMEOUT 120)
endif()

# The batched access (obl_omap_access_batch): against single calls on a
# twin map and a model (outputs, errors, state byte for byte), its traces
# (the single calls' touches, prefetches only of the paths read next, a
# planted stale prefetch caught), bad input.
obl_add_test(test_omap_batch omap/test_omap_batch.c SUBTESTS TIMEOUT 300)
