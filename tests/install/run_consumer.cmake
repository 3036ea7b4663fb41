# cmake -DBUILD_DIR=... -DWORK_DIR=... -DGENERATOR=Ninja -DCXX=... -DMPIEXEC=... -DMPIEXEC_FLAGS=a|b -P run_consumer.cmake
# Installs the build tree into WORK_DIR/prefix, builds tests/install/consumer against it twice, with
# find_package(hympi) and with pkg-config (the compiler and hympi.pc's flags only), and runs both on 2 ranks;
# a third run with --perturb must fail, so a consumer that checks nothing cannot pass.
foreach(_var BUILD_DIR WORK_DIR GENERATOR CXX MPIEXEC)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "run_consumer.cmake: -D${_var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" MPIEXEC_FLAGS "${MPIEXEC_FLAGS}")  # '|': a list survives add_test's quoting
set(_source ${CMAKE_CURRENT_LIST_DIR}/consumer)
set(_prefix ${WORK_DIR}/prefix)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${_rc}):\n${_out}")
  endif()
  set(_run_out "${_out}" PARENT_SCOPE)
endfunction()

function(run_consumer binary)
  run("${binary} on 2 ranks" ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${binary})
  if(NOT _run_out MATCHES "consumer: OK on 2 ranks")
    message(FATAL_ERROR "${binary} printed no OK line:\n${_run_out}")
  endif()
  message(STATUS "${binary}: ${_run_out}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${_prefix})

# find_package(hympi) from the prefix alone: the consumer's own build tree, its own configure.
run("configure the consumer (find_package)" ${CMAKE_COMMAND} -S ${_source} -B ${WORK_DIR}/cmake -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${_prefix})
run("build the consumer (find_package)" ${CMAKE_COMMAND} --build ${WORK_DIR}/cmake)
run_consumer(${WORK_DIR}/cmake/consumer)

# pkg-config: the compiler plus what hympi.pc says, nothing else (no MPI wrapper, no CMake).
run("pkg-config hympi" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${_prefix}/lib/pkgconfig
    pkg-config --cflags --libs hympi)
separate_arguments(_flags UNIX_COMMAND "${_run_out}")
run("compile the consumer (pkg-config)" ${CXX} -std=c++20 ${_source}/consumer.cpp ${_flags} -o ${WORK_DIR}/consumer-pc)
run_consumer(${WORK_DIR}/consumer-pc)

execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${WORK_DIR}/consumer-pc --perturb
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(_rc EQUAL 0 OR NOT _out MATCHES "expected")
  message(FATAL_ERROR "the perturbed consumer must fail naming the wrong value (exit ${_rc}):\n${_out}")
endif()
