# Oblivious map tests (issue 4): SipHash vectors, reference-model streams at
# several capacities and fills up to the maximum load, adversarial keys, bulk
# build, queue overflow (map unchanged), bad input and allocation failure.
# `test_omap --long` also measures the queue failure rate at maximum load.
obl_add_test(test_omap omap/test_omap.c TIMEOUT 300)

# The plain-memory model of the queue policy (no ORAM, no secrets): its
# self-check runs in the plain builds; with arguments it measures failure
# rates over 10^9 operations (docs/omap.md, "Queue failure rate").
add_executable(queue_model omap/queue_model.c)
target_include_directories(queue_model PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(queue_model PRIVATE ${OBL_WARN})
if(NOT OBL_CT_CHECK)
  add_test(NAME queue_model COMMAND queue_model -s ${OBL_TEST_SEED})
  set_tests_properties(queue_model PROPERTIES LABELS "unit" TIMEOUT 120)
endif()
