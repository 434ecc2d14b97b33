# SPDX-License-Identifier: MIT
# The README's example program (examples/readme_example.c), built against the
# library as a user's program is and run in every build; tests/scripts/
# test_readme.py checks that the README shows the same program. Not under
# memcheck in the ct build: the program prints its results, which reveals
# them, as a user's program may (the library's own tests cover the library).
add_executable(test_readme_example ${PROJECT_SOURCE_DIR}/examples/readme_example.c)
target_link_libraries(test_readme_example PRIVATE obl)
target_compile_options(test_readme_example PRIVATE ${OBL_WARN})
add_test(NAME test_readme_example COMMAND test_readme_example)
set_tests_properties(test_readme_example PROPERTIES LABELS "unit;example" TIMEOUT 120)
