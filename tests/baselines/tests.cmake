# Tests of the non-oblivious baselines and of the obl-bench driver's CLI.
obl_add_test(test_baselines baselines/test_baselines.c)
target_link_libraries(test_baselines PRIVATE obl_baselines)
