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

# The example programs (examples/), each run as a test; in the ct build
# under memcheck like every test, for memory errors and leaks only: an
# example branches on the map's `found` as any caller may, and the ct build
# marks every output derived from secrets.
foreach(ex ${OBL_EXAMPLES})
  if(OBL_CT_CHECK)
    add_test(NAME example_${ex}
             COMMAND sh ${OBL_MEMCHECK} expect-memsafe $<TARGET_FILE:example_${ex}>)
  else()
    add_test(NAME example_${ex} COMMAND example_${ex})
  endif()
  set_tests_properties(example_${ex} PROPERTIES LABELS "unit;pkg;example" TIMEOUT 300)
endforeach()

# The library installed to a scratch prefix and used from there
# (pkg/check_install.sh). Not where the library carries the sanitizers'
# or memcheck's instrumentation, which an outside program would not link.
if(NOT OBL_SANITIZE AND NOT OBL_CT_CHECK)
  add_test(NAME pkg_install
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_install.sh ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/pkg_install ${CMAKE_C_COMPILER})
  set_tests_properties(pkg_install PROPERTIES LABELS "unit;pkg" TIMEOUT 300)
endif()

# The licence line (scripts/spdx.sh): spdx_script tests the script on a
# scratch repository; spdx_headers checks this tree. spdx_headers is
# registered disabled until the tree is stamped (`sh scripts/spdx.sh`, then
# set OBL_SPDX_STAMPED to ON here). Source checks: release build only.
set(OBL_SPDX_STAMPED ON)
if(NOT OBL_SANITIZE AND NOT OBL_CT_CHECK AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  add_test(NAME spdx_script
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_spdx_script.sh ${PROJECT_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/spdx_script)
  add_test(NAME spdx_headers COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/spdx.sh --check)
  set_tests_properties(spdx_script spdx_headers PROPERTIES LABELS "unit;pkg" TIMEOUT 60)
  if(NOT OBL_SPDX_STAMPED)
    set_tests_properties(spdx_headers PROPERTIES DISABLED TRUE)
  endif()
endif()
