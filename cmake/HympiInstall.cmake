# cmake --install <build> [--prefix P]: what a program built outside this tree needs to use libhympi (headers, the
# layers' libraries, a CMake package and hympi.pc), the apps the Python CLI launches, the profiler and the apps'
# data files. Every installed path is relative to the prefix (PACKAGE_INIT, pkg-config's ${pcfiledir}), so a
# prefix given only to `cmake --install --prefix` works as well as CMAKE_INSTALL_PREFIX.
include(CMakePackageConfigHelpers)

get_property(HYMPI_LAYERS GLOBAL PROPERTY HYMPI_LAYERS)  # in dependency order (hympi_add_layer)
set(_hympi_layer_targets "")
foreach(_layer IN LISTS HYMPI_LAYERS)
  list(APPEND _hympi_layer_targets hympi_${_layer})
endforeach()
# h5 links parallel HDF5 privately; a static libhympi_h5 still hands that link to its users, through this target.
set_target_properties(hympi_hdf5 PROPERTIES EXPORT_NAME hdf5_link)
install(TARGETS ${_hympi_layer_targets} hympi hympi_hdf5 EXPORT hympiTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/hympi DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${HYMPI_GENERATED_DIR}/hympi/contract.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hympi)
install(TARGETS hympi-profile LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hympi/data)

# find_package(hympi): the exported targets plus a config that finds the same dependencies for the same MPI.
set(HYMPI_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hympi)
install(EXPORT hympiTargets NAMESPACE hympi:: DESTINATION ${HYMPI_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hympiConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/hympiConfig.cmake INSTALL_DESTINATION ${HYMPI_CMAKE_DIR})
# 0.x: a minor release may change the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/hympiConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/install/hympiConfig.cmake ${CMAKE_BINARY_DIR}/install/hympiConfigVersion.cmake
        DESTINATION ${HYMPI_CMAKE_DIR})

# For the Python CLI built from this tree (setup.py): where the apps will be.
configure_file(${PROJECT_SOURCE_DIR}/cmake/hympi-install.toml.in ${CMAKE_BINARY_DIR}/hympi-install.toml @ONLY)

# hympi.pc: the umbrella (every layer but the app frame, like hympi::hympi), dependents before their dependencies
# for static linking, the MPI and OpenMP flags spelled out as FindMPI/FindOpenMP found them (MPI implementations
# name their own .pc files differently, and not all ship one).
set(_hympi_pc_libs "")
foreach(_layer IN LISTS HYMPI_LAYERS)
  if(NOT _layer STREQUAL "app")
    string(PREPEND _hympi_pc_libs " -lhympi_${_layer}")
  endif()
endforeach()
set(_hympi_mpi_cflags "")
foreach(_option IN LISTS MPI_CXX_COMPILE_OPTIONS)
  string(APPEND _hympi_mpi_cflags " ${_option}")
endforeach()
foreach(_definition IN LISTS MPI_CXX_COMPILE_DEFINITIONS)
  string(APPEND _hympi_mpi_cflags " -D${_definition}")
endforeach()
foreach(_dir IN LISTS MPI_CXX_INCLUDE_DIRS)
  string(APPEND _hympi_mpi_cflags " -I${_dir}")
endforeach()
set(_hympi_mpi_libs "${MPI_CXX_LINK_FLAGS}")
set(_hympi_mpi_libraries ${MPI_CXX_LIBRARIES} ${MPI_C_LIBRARIES})
list(REMOVE_DUPLICATES _hympi_mpi_libraries)
foreach(_library IN LISTS _hympi_mpi_libraries)
  string(APPEND _hympi_mpi_libs " ${_library}")
endforeach()
file(RELATIVE_PATH _hympi_pc_to_prefix /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" _hympi_pc_to_prefix "${_hympi_pc_to_prefix}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/hympi.pc.in ${CMAKE_BINARY_DIR}/install/hympi.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/install/hympi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# A program outside this tree builds against the installed package (find_package and pkg-config) and runs on 2
# ranks (tests/install/run_consumer.cmake). Not in the sanitizer tree: its instrumented libraries would need the
# consumer to link the sanitizer runtimes, which no installed consumer does.
if(HYMPI_BUILD_TESTS AND NOT HYMPI_SANITIZE)
  string(REPLACE ";" "|" _hympi_mpiexec_flags "${HYMPI_MPIEXEC_FLAGS}")
  add_test(NAME install.consumer
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DWORK_DIR=${CMAKE_BINARY_DIR}/install-test
                   -DGENERATOR=${CMAKE_GENERATOR} -DCXX=${CMAKE_CXX_COMPILER} -DMPIEXEC=${MPIEXEC_EXECUTABLE}
                   -DMPIEXEC_FLAGS=${_hympi_mpiexec_flags} -P ${PROJECT_SOURCE_DIR}/tests/install/run_consumer.cmake)
  set_tests_properties(install.consumer PROPERTIES TIMEOUT 120 PROCESSORS 2
                       ENVIRONMENT "OMP_NUM_THREADS=1;${HYMPI_TEST_ENVIRONMENT}")
  hympi_own_tmpdir(install.consumer)
endif()
