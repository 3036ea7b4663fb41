# Runs one app test (the command after `--`) and passes only when all of these hold:
#   - its exit code is HYMPI_EXPECT_EXIT (0 by default; 1 for the runs that must fail verification),
#   - its output (stdout and stderr) matches HYMPI_EXPECT, the verifier's line,
#   - its output holds no sanitizer report.
# CTest's PASS_REGULAR_EXPRESSION alone ignores the exit status, so a run that printed its verification line and
# then died (a failing MPI_Finalize, a leak report at exit, a crash in a destructor) used to pass; requiring the
# expected code alone would pass an UNSUCCESSFUL run that crashed for another reason. Under ASan/UBSan a report
# exits 1 like a failed verification does, hence the third check.
#
#   cmake -DHYMPI_EXPECT=<regex> [-DHYMPI_EXPECT_EXIT=<code>] [-DHYMPI_TIMEOUT=<s>] -P run_app_test.cmake -- <cmd>...
# Registered by hympi_add_app_test (cmake/HympiTesting.cmake); tested by cmake/test_run_app_test.cmake.
cmake_minimum_required(VERSION 3.20)

set(_command "")
set(_seen_separator FALSE)
math(EXPR _last "${CMAKE_ARGC} - 1")
foreach(_i RANGE 1 ${_last})
  if(_seen_separator)
    list(APPEND _command "${CMAKE_ARGV${_i}}")
  elseif(CMAKE_ARGV${_i} STREQUAL "--")
    set(_seen_separator TRUE)
  endif()
endforeach()
if(NOT _command)
  message(FATAL_ERROR "run_app_test.cmake: no command after --")
endif()
if(NOT DEFINED HYMPI_EXPECT OR HYMPI_EXPECT STREQUAL "")
  message(FATAL_ERROR "run_app_test.cmake: HYMPI_EXPECT (the verification line's regex) is not set")
endif()
if(NOT DEFINED HYMPI_EXPECT_EXIT)
  set(HYMPI_EXPECT_EXIT 0)
endif()
set(_timeout "")
if(DEFINED HYMPI_TIMEOUT)
  set(_timeout TIMEOUT ${HYMPI_TIMEOUT})
endif()

# ECHO_*: the run's own output still reaches `ctest --output-on-failure` as it happens.
execute_process(COMMAND ${_command} RESULT_VARIABLE _code OUTPUT_VARIABLE _out ERROR_VARIABLE _err
                ECHO_OUTPUT_VARIABLE ECHO_ERROR_VARIABLE ${_timeout})

set(_problems "")
if(NOT _code STREQUAL HYMPI_EXPECT_EXIT)
  list(APPEND _problems "exit code ${_code}, expected ${HYMPI_EXPECT_EXIT}")
endif()
if(NOT "${_out}${_err}" MATCHES "${HYMPI_EXPECT}")
  list(APPEND _problems "no output line matches '${HYMPI_EXPECT}'")
endif()
# ASan and LSan open their reports with "==<pid>==ERROR: ...Sanitizer", UBSan with "<file>:<line>:<col>: runtime
# error:"; every one ends with a "SUMMARY: ...Sanitizer" line.
if("${_out}${_err}" MATCHES "(==[0-9]+==ERROR: [A-Za-z]+Sanitizer|: runtime error: |SUMMARY: [A-Za-z]+Sanitizer)")
  list(APPEND _problems "a sanitizer report ('${CMAKE_MATCH_1}')")
endif()
if(_problems)
  list(JOIN _problems "; " _why)
  message(FATAL_ERROR "app test failed: ${_why}")
endif()
