# librpkv.so.0 (target rpkv, imported by consumers as rpkv::client) and its
# installation: headers, library, pkg-config file, CMake package.
#
# The library is kv_client's objects plus the embedded rpma layer's objects
# (rpma_objs), linked in and hidden by src/librpkv.map, which exports only
# rpkv_* and kv::Client / kv::Batch. Why not depend on build/lib/librpma.so:
# ours carries the SONAME librpma.so.0 of the real librpma 1.x, and
# installing it into a prefix would shadow a system librpma for every other
# program there. Linked in, librpkv.so needs only system libraries
# (libibverbs, librdmacm, libpmem2, libcurl, libstdc++). The cluster
# client's objects (kv_cluster: etcd over libcurl) are linked in too.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The C API is part of kv_client (in-tree users link it statically).
target_sources(kv_client PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/c_api.cc)

add_library(rpkv SHARED
  $<TARGET_OBJECTS:kv_client> $<TARGET_OBJECTS:kv_cluster>
  $<TARGET_OBJECTS:rpma_objs>)
target_include_directories(rpkv PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/store/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# client.h needs C++17 (string_view, variant); consumers get it from the
# imported target (C-only consumers are unaffected).
target_compile_features(rpkv INTERFACE cxx_std_17)
# What kv_client and rpma_objs link, minus rpma itself (linked in above).
target_link_libraries(rpkv PRIVATE PkgConfig::IBVERBS PkgConfig::RDMACM
                      PkgConfig::PMEM2 CURL::libcurl Threads::Threads)
target_link_options(rpkv PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/src/librpkv.map)
if(NOT RPKV_SANITIZE)
  # Every symbol resolved at link time (a missing source in the object
  # lists above fails here, not in an application). Sanitized shared
  # libraries leave the runtime's symbols to the executable.
  target_link_options(rpkv PRIVATE -Wl,--no-undefined)
endif()
set_target_properties(rpkv PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  EXPORT_NAME client
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/librpkv.map)

# Headers: the C API, the C++ API and every kv/ header client.h includes
# (tests/consumer builds against the installed set, so a missing one fails
# there).
install(FILES include/rpkv/rpkv.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpkv)
install(FILES include/kv/client/client.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kv/client)
install(FILES ${PROJECT_SOURCE_DIR}/store/include/kv/status.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kv)

install(TARGETS rpkv EXPORT rpkvTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(RPKV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rpkv)
install(EXPORT rpkvTargets NAMESPACE rpkv:: FILE rpkvTargets.cmake
        DESTINATION ${RPKV_CMAKE_DIR})
configure_package_config_file(cmake/rpkvConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/rpkvConfig.cmake
  INSTALL_DESTINATION ${RPKV_CMAKE_DIR})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/rpkvConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rpkvConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/rpkvConfigVersion.cmake
        DESTINATION ${RPKV_CMAKE_DIR})

# pkg-config, relocatable (paths relative to the .pc file, so
# `cmake --install BUILD --prefix P` works for any P).
file(RELATIVE_PATH RPKV_PC_PREFIX_REL
     /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" RPKV_PC_PREFIX_REL "${RPKV_PC_PREFIX_REL}")
set(RPKV_PC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(RPKV_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
configure_file(cmake/rpkv.pc.in ${CMAKE_CURRENT_BINARY_DIR}/rpkv.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rpkv.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The consumer test (label integration): install into a fresh prefix, build
# tests/consumer with find_package(rpkv) and with pkg-config, run both
# programs against a live kvserver. Needs the whole build (ctest after
# `cmake --build`, as tools/test.sh does).
if(RPKV_BUILD_TESTS)
  if(TARGET kvserver)
    set(_rpkv_kvserver $<TARGET_FILE:kvserver>)
  else()
    set(_rpkv_kvserver ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/kvserver)
  endif()
  add_test(NAME rpkv_consumer_test
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/consumer/run_consumer_test.sh
            --build-dir ${CMAKE_BINARY_DIR}
            --kvserver ${_rpkv_kvserver}
            --cc ${CMAKE_C_COMPILER} --cxx ${CMAKE_CXX_COMPILER}
            --sanitize "${RPKV_SANITIZE}")
  # 77: no kvserver built (skipped, says why).
  set_tests_properties(rpkv_consumer_test PROPERTIES
    LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
