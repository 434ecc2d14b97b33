# SPDX-License-Identifier: MIT
# Packaging and symbol hygiene. symbols_check: libobl.a and libobl.so
# define no global without the obl_ prefix and no writable data, and export
# every function the public headers declare (pkg/check_symbols.py);
# symbols_negative: the same check fails on the test build's archive (test
# switches, internals). Not in the sanitize build, whose instrumentation
# adds its own writable data to every object.
if(NOT OBL_SANITIZE)
  set(OBL_CHECK_SYMBOLS /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/check_symbols.py)
  add_test(NAME symbols_check
           COMMAND ${OBL_CHECK_SYMBOLS} $<TARGET_FILE:obl> $<TARGET_FILE:obl_shared>
                   ${PROJECT_SOURCE_DIR}/include)
  add_test(NAME symbols_negative
           COMMAND ${OBL_CHECK_SYMBOLS} --negative $<TARGET_FILE:obl_traced>
                   $<TARGET_FILE:obl_shared> ${PROJECT_SOURCE_DIR}/include)
  set_tests_properties(symbols_check symbols_negative PROPERTIES LABELS "unit;pkg" TIMEOUT 60)
endif()
