# SPDX-License-Identifier: MIT
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
obl_add_test(test_route shard/test_route.c)
obl_add_test(test_shard shard/test_shard.c TIMEOUT 900)

# obl-bench sharded / batched: a tiny case each prints a REPORT line in the
# public harness's order (UnorderedMap, the sharded fields) and passes its
# self-check (every answer verified); a shard count above the capacity is a
# usage error.
if(TARGET obl-bench)
  set(shre "REPORT_123UnorderedMap[|]obl_IMPL[|][^|]+[|] N:=1024 [|] Key_bytes := 8 [|] Value_bytes := 56 [|] Shards := S [|] Batch_size := 100 [|] Threads := 2 [|] Engines := E [|] fill := 0[.]8[0-9]* [|] Initialization_time_us := [0-9.]+ [|] Get_latency_us := [0-9.]+ [|] Get_throughput_qps := [0-9.]+ [|] Get_burst_latency_us := [0-9.]+ [|] Get_burst_throughput_qps := [0-9.]+ [|] Get_writeback_latency_us := [0-9.]+ [|] .* Memory_kb := [0-9.]+ [|] .*Baseline_get_throughput_qps := [0-9.]+ REPORT_123")
  string(REPLACE "IMPL" "sharded" re1 "${shre}")
  string(REPLACE "S [|]" "3 [|]" re1 "${re1}")
  string(REPLACE "IMPL" "batched" re2 "${shre}")
  string(REPLACE "S [|]" "1 [|]" re2 "${re2}")
  set(b $<TARGET_FILE:obl-bench>)
  set(args --n 1024 --batch 100 --threads 2 --reps 1 --warmup 0 --queries 300 --value-bytes 56)
  string(REPLACE ";" " " args "${args}")
  foreach(e 0 1 2 3)
    string(REPLACE "E [|]" "${e} [|]" r1 "${re1}")
    string(REPLACE "E [|]" "${e} [|]" r2 "${re2}")
    add_test(NAME test_bench_sharded_${e}
             COMMAND sh -c "${b} sharded ${args} --shards 3 --engines ${e} 2>/dev/null | grep -Eq '${r1}' && ${b} batched ${args} --engines ${e} 2>/dev/null | grep -Eq '${r2}'")
    set_tests_properties(test_bench_sharded_${e} PROPERTIES LABELS "unit;bench" TIMEOUT 120)
  endforeach()
  add_test(NAME test_bench_sharded_usage
           COMMAND sh -c "${b} sharded --n 16 --shards 100 >/dev/null 2>&1; test $? -eq 2")
  set_tests_properties(test_bench_sharded_usage PROPERTIES LABELS "unit;bench" TIMEOUT 60)
endif()

# Edge cases beside test_shard: B at powers of two and their neighbours,
# empty maps and shards, a full shard, bad batches and parameters, failing
# allocations of puts and erases, the whole batch path's trace; the
# `threads` sub-test also under helgrind in the ct build.
obl_add_test(test_shard_edges shard/test_shard_edges.c SUBTESTS TIMEOUT 300)
if(OBL_CT_CHECK)
  # The map's batches on 2 and 3 threads under helgrind: the pool, the
  # shared allocator lock, the shards' and the split scan's tasks.
  add_test(NAME test_shard_helgrind
           COMMAND valgrind --tool=helgrind --error-exitcode=99
                   $<TARGET_FILE:test_shard_edges> -s ${OBL_TEST_SEED} --only threads)
  set_tests_properties(test_shard_helgrind PROPERTIES LABELS "ct;threads" TIMEOUT 300)
  # The negative control: tasks racing on a counter must make helgrind fail.
  add_executable(pool_race shard/pool_race.c)
  target_link_libraries(pool_race PRIVATE obl_traced)
  target_include_directories(pool_race PRIVATE ${PROJECT_SOURCE_DIR}/src)
  add_test(NAME test_pool_helgrind_negative
           COMMAND sh -c "valgrind --tool=helgrind --error-exitcode=99 $<TARGET_FILE:pool_race>; test $? -eq 99")
  set_tests_properties(test_pool_helgrind_negative PROPERTIES LABELS "ct;threads;negative" TIMEOUT 120)
endif()

# The bulk build's oblivious dealing against a plain partition, its trace,
# failing allocations. Negative control in the ct build: the same test
# linked with a dealing that branches on each pair's shard label (the
# test's own copy of src/shard/deal.c takes the archive's place) must make
# memcheck report a conditional jump on a secret.
obl_add_test(test_deal shard/test_deal.c SUBTESTS TIMEOUT 120)
obl_add_planted_leak(shard_label OBL_TEST_PLANT_LABEL_BRANCH trace shard/test_deal.c
                     ${PROJECT_SOURCE_DIR}/src/shard/deal.c)

# Keys over 8 bytes (12 to 64) against the model, the balancer's
# fingerprint collisions (forced; the control ignores them and must go
# wrong) and the whole batch path's trace with 32-byte keys.
obl_add_test(test_shard_keys shard/test_shard_keys.c SUBTESTS TIMEOUT 300)
# Its negative control in the ct build: the split compiled with a branch on
# the longer keys' fingerprints must make memcheck report it.
obl_add_planted_leak(shard_fp OBL_TEST_PLANT_FP_BRANCH map_trace shard/test_shard_keys.c
                     ${PROJECT_SOURCE_DIR}/src/shard/route.c)

# The store policy (engines AUTO with a hint): the store kept for given
# hints and cost constants, every batch size answered with either store,
# bad hints, allocation failures of create and build.
obl_add_test(test_shard_policy shard/test_shard_policy.c SUBTESTS TIMEOUT 300)
