# SPDX-License-Identifier: MIT
# Run at every build of obl-bench (cmake -P, bench/CMakeLists.txt): writes
# OUT, a header defining OBL_BENCH_GIT as the source tree's revision
# (`git rev-parse --short HEAD`, with "-dirty" when tracked files differ
# from it, as scripts/obllib/runner.py records the runner's), or "unknown"
# outside git. The file is rewritten only when the text changes, so results
# name the revision that was built, not the one of the last configure.
execute_process(COMMAND git rev-parse --short HEAD
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev unknown)
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT changes STREQUAL "")
    string(APPEND rev "-dirty")
  endif()
endif()
set(text "#define OBL_BENCH_GIT \"${rev}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
