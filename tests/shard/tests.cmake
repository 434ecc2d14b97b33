# Batched layer: the worker pool, the shard engines and the sharded map.
obl_add_test(test_pool shard/test_pool.c)
# The pool's locking under helgrind (valgrind is there in the ct build).
if(OBL_CT_CHECK)
  add_test(NAME test_pool_helgrind
           COMMAND valgrind --tool=helgrind --error-exitcode=99 $<TARGET_FILE:test_pool>
                   -s ${OBL_TEST_SEED} --ct)
  set_tests_properties(test_pool_helgrind PROPERTIES LABELS "ct;threads" TIMEOUT 300)
endif()
obl_add_test(test_scan shard/test_scan.c)
obl_add_test(test_shard shard/test_shard.c TIMEOUT 900)
