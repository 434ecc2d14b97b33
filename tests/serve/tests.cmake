# SPDX-License-Identifier: MIT
# obl-server and obl-load (serve/, docs/server.md). test_serve_backend: the
# batch-answering path against a model, in every build; in the ct build under
# memcheck with ops, keys and values secret. test_serve_loadgen: the load
# generator's schedule, key draws and quantiles. test_serve_net: the server
# and obl-load on loopback (ephemeral ports); not in the ct build (the
# network path handles no secret of its own and is too slow under valgrind).
# serve_mpi_np3: test_serve_net against obl-server --backend mpi.
if(TARGET obl_serve)
  foreach(t test_serve_backend test_serve_loadgen)
    add_executable(${t} serve/${t}.c)
    target_link_libraries(${t} PRIVATE obl_serve)
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_options(${t} PRIVATE ${OBL_WARN})
    obl_register_test(${t} ${t} 300 serve)
  endforeach()
  if(NOT OBL_CT_CHECK)
    add_executable(test_serve_net serve/test_serve_net.c serve/net_util.c)
    target_link_libraries(test_serve_net PRIVATE obl_serve)
    target_include_directories(test_serve_net PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_options(test_serve_net PRIVATE ${OBL_WARN})
    add_dependencies(test_serve_net obl-server obl-load)
    obl_register_test(test_serve_net test_serve_net 120 "serve;network"
                      --server $<TARGET_FILE:obl-server> --load $<TARGET_FILE:obl-load>)
    # obl-server --backend mpi under mpirun -np 3 (docs/mpi.md); Open MPI's
    # own allocations are not freed at exit: no leak check under ASan.
    if(TARGET obl_mpi)
      obl_register_test(serve_mpi_np3 test_serve_net 120 "serve;network;mpi"
                        --server $<TARGET_FILE:obl-server> --load $<TARGET_FILE:obl-load>
                        --mpirun ${PROJECT_SOURCE_DIR}/scripts/mpirun.sh)
      set_tests_properties(serve_mpi_np3 PROPERTIES ENVIRONMENT ASAN_OPTIONS=detect_leaks=0)
    endif()
  endif()
endif()
