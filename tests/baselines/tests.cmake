# SPDX-License-Identifier: MIT
# Tests of the non-oblivious baselines and of the obl-bench driver's CLI.
obl_add_test(test_baselines baselines/test_baselines.c)
target_link_libraries(test_baselines PRIVATE obl_baselines)

# The driver's command line and output formats (docs/benchmark-format.md),
# only where obl-bench is built (not in the ct build).
if(TARGET obl-bench)
  add_test(NAME test_bench_cli
           COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:obl-bench>
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/bench_cli
                   -P ${CMAKE_CURRENT_LIST_DIR}/check_bench_cli.cmake)
  set(lab unit)
  if(OBL_SANITIZE)
    set(lab sanitize)
  endif()
  set_tests_properties(test_bench_cli PROPERTIES LABELS "${lab};bench" TIMEOUT 300)
endif()

# obl-ab (bench/ab.c) built against the current library twice over: each
# mode runs and prints its comparison; bad usage fails (check_bench_ab.sh).
if(TARGET obl-ab)
  add_test(NAME test_bench_ab_self
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_bench_ab.sh $<TARGET_FILE:obl-ab>)
  set_tests_properties(test_bench_ab_self PROPERTIES LABELS "${lab};bench" TIMEOUT 120)
endif()

# obl-microbench (bench/microbench.c): every micro-benchmark once, its
# answers and JSON rows; usage errors (check_microbench.sh).
if(TARGET obl-microbench)
  add_test(NAME test_microbench
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_microbench.sh
                   $<TARGET_FILE:obl-microbench> ${CMAKE_CURRENT_BINARY_DIR}/microbench.jsonl)
  set_tests_properties(test_microbench PROPERTIES LABELS "${lab};bench" TIMEOUT 120)
endif()
