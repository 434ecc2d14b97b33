# obl-server and obl-load (serve/, docs/server.md). test_serve_backend: the
# batch-answering path against a model, in every build; in the ct build under
# memcheck with ops, keys and values secret. test_serve_loadgen: the load
# generator's schedule, key draws and quantiles. test_serve_net: the server
# and obl-load on loopback (ephemeral ports); not in the ct build (the
# network path handles no secret of its own and is too slow under valgrind).
if(TARGET obl_serve)
  set(OBL_SERVE_LAB unit)
  if(OBL_SANITIZE)
    set(OBL_SERVE_LAB sanitize)
  endif()
  foreach(t test_serve_backend test_serve_loadgen)
    add_executable(${t} serve/${t}.c)
    target_link_libraries(${t} PRIVATE obl_serve)
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_options(${t} PRIVATE ${OBL_WARN})
    if(OBL_CT_CHECK)
      add_test(NAME ${t} COMMAND sh ${OBL_MEMCHECK} expect-clean $<TARGET_FILE:${t}>
               -s ${OBL_TEST_SEED} --ct)
      set_tests_properties(${t} PROPERTIES LABELS "ct;serve" TIMEOUT 300)
    else()
      add_test(NAME ${t} COMMAND ${t} -s ${OBL_TEST_SEED})
      set_tests_properties(${t} PROPERTIES LABELS "${OBL_SERVE_LAB};serve" TIMEOUT 120)
    endif()
  endforeach()
  if(NOT OBL_CT_CHECK)
    add_executable(test_serve_net serve/test_serve_net.c serve/net_util.c)
    target_link_libraries(test_serve_net PRIVATE obl_serve)
    target_include_directories(test_serve_net PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_options(test_serve_net PRIVATE ${OBL_WARN})
    add_dependencies(test_serve_net obl-server obl-load)
    add_test(NAME test_serve_net COMMAND test_serve_net -s ${OBL_TEST_SEED}
             --server $<TARGET_FILE:obl-server> --load $<TARGET_FILE:obl-load>)
    set_tests_properties(test_serve_net PROPERTIES LABELS "${OBL_SERVE_LAB};serve;network" TIMEOUT 120)
  endif()
endif()
