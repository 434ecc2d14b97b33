# The README's example program (examples/readme_example.c), built against the
# library and run in every build; tests/scripts/test_readme.py checks that the
# README shows the same program.
obl_add_test(test_readme_example ${PROJECT_SOURCE_DIR}/examples/readme_example.c TIMEOUT 120)
target_link_libraries(test_readme_example PRIVATE m)
