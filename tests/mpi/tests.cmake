# SPDX-License-Identifier: MIT
# obl_mpi (src/mpi): the message layer and the ranks' work in one process
# (OpenSSL only; under memcheck in the ct build), then mpirun deployments
# when obl-mpi is built (not under memcheck: mpirun under valgrind is
# impractical; the in-process test covers the same rank code there).
find_package(OpenSSL COMPONENTS Crypto QUIET)
if(OBL_MPI_CORE_SOURCES AND OpenSSL_FOUND)
  foreach(t test_mpi_msg test_mpi_rank)
    obl_add_test(${t} mpi/${t}.c ${OBL_MPI_CORE_SOURCES})
    target_link_libraries(${t} PRIVATE OpenSSL::Crypto)
  endforeach()
endif()
if(TARGET obl-mpi AND NOT OBL_CT_CHECK)
  # obl_mpi_test(NAME ok|fail REGEX mpirun-args...): tests/mpi/run.sh
  function(obl_mpi_test name want re)
    add_test(NAME ${name} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi/run.sh ${want} ${re} ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "unit;mpi" TIMEOUT 180)
  endfunction()
  set(exe $<TARGET_FILE:obl-mpi>)
  set(small --n 1000 --batch 64 --seed ${OBL_TEST_SEED} --timeout 20)
  obl_mpi_test(mpi_np3_model ok "0 wrong" -np 3 ${exe} ${small} --shards 2 --model 12)
  obl_mpi_test(mpi_np4_model_two_balancers ok "rank 1 of 4: 12 epochs.* 0 wrong"
               -np 4 ${exe} ${small} --balancers 2 --shards 3 --model 12)
  # pipelined epochs (obl_mpi_batch_begin/end): two in flight per balancer
  obl_mpi_test(mpi_np4_model_pipelined ok "rank 1 of 4: 12 epochs [(]pipelined[)].* 0 wrong"
               -np 4 ${exe} ${small} --balancers 2 --shards 3 --model 12 --pipeline 1)
  obl_mpi_test(mpi_tampered_pipelined fail "rejected: tampered"
               -np 3 ${exe} ${small} --shards 2 --model 6 --pipeline 1 --fault tamper:0:4)
  obl_mpi_test(mpi_np4_report ok "REPORT_123UnorderedMap[|]obl_mpi[|].*Ranks := 4"
               -np 4 ${exe} ${small} --shards 6 --batches 3)
  obl_mpi_test(mpi_tampered fail "rejected: tampered"
               -np 3 ${exe} ${small} --shards 2 --model 6 --fault tamper:0:3)
  obl_mpi_test(mpi_replayed fail "rejected: replayed"
               -np 3 ${exe} ${small} --shards 2 --model 6 --fault replay:0:3)
  obl_mpi_test(mpi_truncated fail "rejected: truncated"
               -np 3 ${exe} ${small} --shards 2 --model 6 --fault truncate:1:3)
  obl_mpi_test(mpi_silent_rank fail "timeout: no progress with rank[(]s[)] 2"
               -np 3 ${exe} ${small} --shards 2 --model 6 --fault silent:2:3 --timeout 3)
  obl_mpi_test(mpi_killed_rank fail "exited on signal 9|timeout: no progress"
               -np 3 ${exe} ${small} --shards 2 --model 6 --fault kill:2:3 --timeout 3)
  obl_mpi_test(mpi_bad_shards fail "refused: .*2 shards on 3 shard ranks"
               -np 4 ${exe} ${small} --shards 2 --model 2)
  obl_mpi_test(mpi_bad_shard_batch fail "refused: .*b = 3 too small"
               -np 3 ${exe} ${small} --shards 2 --shard-batch 3 --model 2)
  # obl-server --backend mpi (docs/mpi.md) refuses a layout it cannot serve
  if(TARGET obl-server)
    obl_mpi_test(serve_mpi_bad_shards fail "mpi refused: .*1 shards on 2 shard ranks"
                 -np 3 $<TARGET_FILE:obl-server> --backend mpi --port 0 --n 100 --shards 1)
  endif()
endif()
