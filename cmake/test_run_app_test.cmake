# The app-test checker (run_app_test.cmake) on commands whose outcome is known: it must fail a run that printed
# the verification line and then exited non-zero, a clean exit without the line, and a sanitizer report, and pass
# the expected successes. Without this the checker could pass everything and every app.* entry with it.
#   cmake -DHYMPI_CHECKER=<path of run_app_test.cmake> -P test_run_app_test.cmake
cmake_minimum_required(VERSION 3.20)

set(_ok "Verification    = +SUCCESSFUL")
set(_not_ok "Verification    = +UNSUCCESSFUL")
set(_failures 0)

# check_case(<name> <expected: pass|fail> <message regex, for fail> <expected exit> <regex> <sh script>): the
# script's lines are separated by newlines, never ';' (a CMake list separator: it would split the argument).
function(check_case name expected message expect_exit regex script)
  execute_process(COMMAND ${CMAKE_COMMAND} "-DHYMPI_EXPECT=${regex}" -DHYMPI_EXPECT_EXIT=${expect_exit}
                          -P ${HYMPI_CHECKER} -- sh -c "${script}"
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(verdict "pass")
  if(NOT code EQUAL 0)
    set(verdict "fail")
  endif()
  if(NOT verdict STREQUAL expected OR (expected STREQUAL "fail" AND NOT err MATCHES "${message}"))
    message(SEND_ERROR "checker case '${name}': ${verdict} (expected ${expected} with '${message}')\n${out}${err}")
    math(EXPR _failures "${_failures} + 1")
    set(_failures ${_failures} PARENT_SCOPE)
  else()
    message(STATUS "checker case '${name}': ${verdict} as expected")
  endif()
endfunction()

check_case(verified_exit_0 pass "" 0 "${_ok}" "echo ' Verification    =               SUCCESSFUL'")
check_case(verified_then_exit_3 fail "exit code 3, expected 0" 0 "${_ok}"
           "echo ' Verification    =               SUCCESSFUL'\nexit 3")
check_case(exit_0_without_line fail "no output line matches" 0 "${_ok}" "echo 'HYMPI_RESULT {}'")
check_case(unsuccessful_is_not_successful fail "no output line matches" 0 "${_ok}"
           "echo ' Verification    =             UNSUCCESSFUL'")
check_case(asan_report_after_line fail "a sanitizer report" 0 "${_ok}"
           "echo ' Verification    =               SUCCESSFUL'\necho '==42==ERROR: LeakSanitizer: detected memory leaks' >&2")
check_case(ubsan_report fail "a sanitizer report" 0 "${_ok}"
           "echo ' Verification    =               SUCCESSFUL'\necho 'a.cpp:3:7: runtime error: signed integer overflow' >&2")
check_case(expected_failure_exit_1 pass "" 1 "${_not_ok}"
           "echo ' Verification    =             UNSUCCESSFUL'\nexit 1")
check_case(expected_failure_but_exit_0 fail "exit code 0, expected 1" 1 "${_not_ok}"
           "echo ' Verification    =             UNSUCCESSFUL'")
check_case(expected_failure_crashed fail "exit code [^,]*, expected 1" 1 "${_not_ok}"
           "echo ' Verification    =             UNSUCCESSFUL'\nkill -ABRT $$")

if(_failures GREATER 0)
  message(FATAL_ERROR "${_failures} checker case(s) wrong")
endif()
