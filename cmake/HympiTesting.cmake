# Test helpers shared by every layer's tests/ folder: each layer declares its own tests next to
# its sources with these two functions.
find_package(GTest REQUIRED)

# MPI launcher flags for this machine: oversubscribed, unbound (apps bind themselves), root ok. Hydra
# (MPICH's mpiexec) starts any number of ranks and binds none unless asked; it spells the flag -bind-to.
if(HYMPI_MPI_FLAVOR STREQUAL "mpich")
  set(HYMPI_MPIEXEC_FLAGS -bind-to none)
else()
  set(HYMPI_MPIEXEC_FLAGS --oversubscribe --bind-to none)
  if(MPIEXEC_EXECUTABLE MATCHES "mpirun|mpiexec")
    execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _mpi_version ERROR_QUIET)
    if(_mpi_version MATCHES "Open MPI|OpenRTE")
      list(APPEND HYMPI_MPIEXEC_FLAGS --allow-run-as-root)
    endif()
  endif()
endif()
set(HYMPI_TEST_DATA_DIR ${PROJECT_SOURCE_DIR}/tests/data)
set(HYMPI_TEST_SUPPORT_DIR ${PROJECT_SOURCE_DIR}/tests/support)

# The unit suites test code that calls no MPI: one tree of `make test` runs them (the sanitizer tree), the
# other only the MPI suites, which run once per MPI implementation.
option(HYMPI_UNIT_SUITES "With HYMPI_TEST_SUITES: build and register the unit suites (unit.*), not only mpi.*" ON)

# The MPI-aware GoogleTest main, compiled once for every MPI test binary.
if(HYMPI_TEST_SUITES)
  add_library(hympi_gtest_mpi_main OBJECT ${HYMPI_TEST_SUPPORT_DIR}/gtest_mpi_main.cpp)
  target_link_libraries(hympi_gtest_mpi_main PRIVATE MPI::MPI_CXX OpenMP::OpenMP_CXX GTest::gtest hympi_warnings)
  target_compile_options(hympi_gtest_mpi_main PRIVATE ${HYMPI_TEST_OPTIMIZATION} ${HYMPI_LIGHT_SANITIZE})
endif()

# A test binary's sources: tests/<suite>.cpp for each of SUITES (the layer's tests/ folder), else tests/<name>.cpp.
# A layer's suites that share libraries (and rank counts) go into one binary: in the sanitizer tree (a unity build)
# they then compile as one source, so GoogleTest's and nlohmann::json's code is generated once per binary, not once
# per suite, and each binary is one link, and one launch per rank count.
macro(hympi_test_sources name)
  if(NOT ARG_SUITES)
    set(ARG_SUITES ${name})
  endif()
  list(TRANSFORM ARG_SUITES PREPEND tests/ OUTPUT_VARIABLE ARG_SOURCES)
  list(TRANSFORM ARG_SOURCES APPEND .cpp)
endmacro()

# The suites' precompiled header (CMakeLists.txt: HYMPI_PRECOMPILED_HEADERS, and GoogleTest's), built by the first
# suite registered and reused by the others: they all share HYMPI_TEST_OPTIMIZATION and HYMPI_LIGHT_SANITIZE.
function(hympi_precompile_suite name)
  get_property(donor GLOBAL PROPERTY HYMPI_SUITE_PCH_DONOR)
  if(donor)
    target_precompile_headers(${name} REUSE_FROM ${donor})
  else()
    target_precompile_headers(${name} PRIVATE ${HYMPI_PRECOMPILED_HEADERS} <gtest/gtest.h>)
    set_property(GLOBAL PROPERTY HYMPI_SUITE_PCH_DONOR ${name})
  endif()
endfunction()

# Open MPI's mpirun makes its session directory (ompi.<host>.<uid> under TMPDIR) with a mkdir that fails when
# another mpirun makes the same directory at the same instant ("A call to mkdir was unable to create the desired
# directory ... File exists"): two MPI tests that CTest started together failed that way on a fresh clone. So each
# CTest entry that launches MPI gets its own TMPDIR in the build tree, as each process of the Python suite does
# (tests/python/conftest.py); a run killed before mpirun cleans up also leaves its session directory there, not in /tmp.
function(hympi_own_tmpdir test)
  set(dir ${CMAKE_BINARY_DIR}/test-tmp/${test})
  file(MAKE_DIRECTORY ${dir})
  set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT "TMPDIR=${dir}")
endfunction()

# hympi_add_unit_test(<name> LIBS <targets>... [SUITES <suite>...]): GoogleTest binary run as one serial process.
function(hympi_add_unit_test name)
  if(NOT HYMPI_TEST_SUITES OR NOT HYMPI_UNIT_SUITES)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "LIBS;SUITES" ${ARGN})
  hympi_test_sources(${name})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main hympi_warnings)
  target_compile_options(${name} PRIVATE ${HYMPI_TEST_OPTIMIZATION} ${HYMPI_LIGHT_SANITIZE})
  target_include_directories(${name} PRIVATE ${HYMPI_TEST_SUPPORT_DIR})
  target_compile_definitions(${name} PRIVATE HYMPI_TEST_DATA="${HYMPI_TEST_DATA_DIR}")
  hympi_precompile_suite(${name})
  add_test(NAME unit.${name} COMMAND ${name})
  set_tests_properties(unit.${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2;${HYMPI_TEST_ENVIRONMENT}")
endfunction()

# hympi_add_mpi_test(<name> LIBS <targets>... RANKS <n>... [SUITES <suite>...]): one CTest entry per rank
# count (of those in HYMPI_MPI_TEST_RANKS, when set).
set(HYMPI_MPI_TEST_RANKS "" CACHE STRING
  "rank counts the MPI suites run at, e.g. 1;3;4 (empty: each suite's own list; a suite the filter would leave without a multi-rank run keeps its list)")
function(hympi_add_mpi_test name)
  if(NOT HYMPI_TEST_SUITES)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "LIBS;RANKS;SUITES" ${ARGN})
  hympi_test_sources(${name})
  add_executable(${name} ${ARG_SOURCES} $<TARGET_OBJECTS:hympi_gtest_mpi_main>)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest hympi_warnings)
  target_compile_options(${name} PRIVATE ${HYMPI_TEST_OPTIMIZATION} ${HYMPI_LIGHT_SANITIZE})
  target_include_directories(${name} PRIVATE ${HYMPI_TEST_SUPPORT_DIR})
  target_compile_definitions(${name} PRIVATE HYMPI_TEST_DATA="${HYMPI_TEST_DATA_DIR}")
  hympi_precompile_suite(${name})
  set(ranks ${ARG_RANKS})
  if(HYMPI_MPI_TEST_RANKS)
    # Keep the suite's rank counts that are in the filter, unless that leaves it no multi-rank run.
    set(kept "")
    set(multi FALSE)
    foreach(np IN LISTS ARG_RANKS)
      if(np IN_LIST HYMPI_MPI_TEST_RANKS)
        list(APPEND kept ${np})
        if(np GREATER 1)
          set(multi TRUE)
        endif()
      endif()
    endforeach()
    if(multi)
      set(ranks ${kept})
    endif()
  endif()
  foreach(np IN LISTS ranks)
    add_test(NAME mpi.${name}.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${HYMPI_MPIEXEC_FLAGS} ${MPIEXEC_NUMPROC_FLAG} ${np} $<TARGET_FILE:${name}>)
    set_tests_properties(mpi.${name}.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np}
                         ENVIRONMENT "OMP_NUM_THREADS=1;${HYMPI_TEST_ENVIRONMENT}")
    hympi_own_tmpdir(mpi.${name}.np${np})
  endforeach()
endfunction()

# hympi_add_checked_run(<test> RANKS <np> [THREADS <nt>] [TIMEOUT <s>] EXPECT <regex> [EXIT <code>]
#                       [ENVIRONMENT <var=value>...] COMMAND <program> <args>...): the CTest entry <test>, the
# program launched at <np> ranks x <nt> threads (default 1). It passes only when the run exits <code> (default 0),
# prints a line matching <regex> and no sanitizer report: cmake/run_app_test.cmake checks all three, where CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status (a run that printed its verdict and then failed in
# MPI_Finalize, or with a leak report at exit, passed).
set(HYMPI_APP_TEST_CHECKER ${PROJECT_SOURCE_DIR}/cmake/run_app_test.cmake)
function(hympi_add_checked_run test)
  cmake_parse_arguments(ARG "" "RANKS;THREADS;TIMEOUT;EXPECT;EXIT" "ENVIRONMENT;COMMAND" ${ARGN})
  if(NOT ARG_RANKS OR NOT ARG_COMMAND OR NOT ARG_EXPECT)
    message(FATAL_ERROR "hympi_add_checked_run(${test}): RANKS, EXPECT and COMMAND are required")
  endif()
  if(NOT ARG_THREADS)
    set(ARG_THREADS 1)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT DEFINED ARG_EXIT)
    set(ARG_EXIT 0)
  endif()
  # The checker stops the run 10 s before CTest would kill the checker, so a hung run is reported as the run's
  # timeout, with its output so far.
  math(EXPR run_timeout "${ARG_TIMEOUT} - 10")
  add_test(NAME ${test}
           COMMAND ${CMAKE_COMMAND} "-DHYMPI_EXPECT=${ARG_EXPECT}" -DHYMPI_EXPECT_EXIT=${ARG_EXIT}
                   -DHYMPI_TIMEOUT=${run_timeout} -P ${HYMPI_APP_TEST_CHECKER}
                   -- ${MPIEXEC_EXECUTABLE} ${HYMPI_MPIEXEC_FLAGS} ${MPIEXEC_NUMPROC_FLAG} ${ARG_RANKS} ${ARG_COMMAND})
  # PROCESSORS = ranks x threads, so ctest -j never runs spinning OpenMP teams on shared cores.
  math(EXPR procs "${ARG_RANKS} * ${ARG_THREADS}")
  set_tests_properties(${test} PROPERTIES TIMEOUT ${ARG_TIMEOUT} PROCESSORS ${procs}
    ENVIRONMENT "OMP_NUM_THREADS=${ARG_THREADS};${ARG_ENVIRONMENT};${HYMPI_TEST_ENVIRONMENT}")
  hympi_own_tmpdir(${test})
endfunction()

# hympi_add_app_test(<name> RANKS <np> [THREADS <nt>] [TIMEOUT <s>] [FAILS] COMMAND <app> <args>...): the app run
# app.<name>, unbound (HYMPI_BIND=none: tests share the cores). It must exit 0 and print the verifier's
# "Verification = SUCCESSFUL" line; FAILS: it must print "UNSUCCESSFUL" and exit 1 instead (a verifier shown to
# fail on a wrong answer, not a crash).
function(hympi_add_app_test name)
  cmake_parse_arguments(ARG "FAILS" "" "" ${ARGN})
  if(ARG_FAILS)
    set(verdict EXPECT "Verification    = +UNSUCCESSFUL" EXIT 1)
  else()
    set(verdict EXPECT "Verification    = +SUCCESSFUL" EXIT 0)
  endif()
  hympi_add_checked_run(app.${name} ${ARG_UNPARSED_ARGUMENTS} ${verdict} ENVIRONMENT HYMPI_BIND=none)
endfunction()

# The checker itself, on commands whose outcome is known (a verified run that exits 3 must fail, ...): registered
# once wherever app runs are, so a checker that passed everything could not hide behind them.
if(HYMPI_BUILD_TESTS AND HYMPI_BUILD_APPS)
  add_test(NAME app.checker
           COMMAND ${CMAKE_COMMAND} -DHYMPI_CHECKER=${HYMPI_APP_TEST_CHECKER}
                   -P ${PROJECT_SOURCE_DIR}/cmake/test_run_app_test.cmake)
  set_tests_properties(app.checker PROPERTIES TIMEOUT 60)
endif()
