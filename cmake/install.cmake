# SPDX-License-Identifier: MIT
# Install rules of obl (included by the top-level CMakeLists.txt): the two
# libraries, the public headers, the CMake package exporting obl::obl (the
# static library) and obl::obl_shared, and obl.pc.
include(CMakePackageConfigHelpers)
set(OBL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/obl)

install(TARGETS obl obl_shared EXPORT obl-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/obl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT obl-targets NAMESPACE obl:: DESTINATION ${OBL_CMAKE_DIR})

set(OBL_NEEDS_THREADS ${Threads_FOUND})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/obl-config.cmake.in
  ${PROJECT_BINARY_DIR}/obl-config.cmake INSTALL_DESTINATION ${OBL_CMAKE_DIR})
# 0.x: a new minor version may change the API
write_basic_package_version_file(${PROJECT_BINARY_DIR}/obl-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/obl-config.cmake ${PROJECT_BINARY_DIR}/obl-config-version.cmake
        DESTINATION ${OBL_CMAKE_DIR})

# obl.pc is written at install time, for the prefix installed to (cmake
# --install --prefix P). Libs.private: what a static link adds to -lobl
# (pkg-config --static); libobl.so records them itself.
set(OBL_PC_LIBS_PRIVATE "-lm")
if(Threads_FOUND AND CMAKE_THREAD_LIBS_INIT)
  string(APPEND OBL_PC_LIBS_PRIVATE " ${CMAKE_THREAD_LIBS_INIT}")
endif()
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(OBL_PC_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(OBL_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
set(OBL_PC_PREFIX "@OBL_PC_PREFIX@") # kept for the install step
configure_file(${CMAKE_CURRENT_LIST_DIR}/obl.pc.in ${PROJECT_BINARY_DIR}/obl.pc.in @ONLY)
install(CODE "
  set(OBL_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/obl.pc.in\" \"${PROJECT_BINARY_DIR}/obl.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/obl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
