# Run by CTest (tests/CMakeLists.txt): installs the build tree into a scratch prefix, then
# configures, builds and runs the consumer project against it.
#   cmake -D BUILD_DIR=... -D SOURCE_DIR=... -D WORK_DIR=... -D GENERATOR=... -D CXX=...
#         [-D WITH_TOOL=1] -P check.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake needs -D ${var}=...")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${what} failed (${rc}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
step("install into ${prefix}" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
step("configure against ${prefix}" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/build"
  -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_PREFIX_PATH=${prefix}" "-DPTXDSL_CONSUMER_TOOL=${WITH_TOOL}")
step("build" "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
step("run" "${WORK_DIR}/build/ptxdsl_consumer")
if(NOT step_output MATCHES "\\.visible \\.entry axpy\\(")
  message(FATAL_ERROR "consumer: the PTX it printed has no entry:\n${step_output}")
endif()
if(EXISTS "${WORK_DIR}/build/ptxdsl_c_consumer")
  step("run the C consumer" "${WORK_DIR}/build/ptxdsl_c_consumer")
  if(NOT step_output MATCHES "ptxdsl C ABI [0-9]+: PTXDSL_")
    message(FATAL_ERROR "consumer: the C consumer printed:\n${step_output}")
  endif()
endif()
message(STATUS "consumer: built and ran against ${prefix}")

# The kernel tool its own sources registered: every command a user's tool has without a GPU.
if(WITH_TOOL)
  set(tool "${WORK_DIR}/build/ptxdsl_consumer_tool")
  step("ptxdsl_consumer_tool list" "${tool}" list)
  if(NOT step_output MATCHES "axpy +y = a \\* x \\+ y")
    message(FATAL_ERROR "consumer: the tool's list has no axpy:\n${step_output}")
  endif()
  step("ptxdsl_consumer_tool emit" "${tool}" emit axpy --n 1000 --json)
  if(NOT step_output MATCHES "\"grid\": \\[4, 1, 1\\]")
    message(FATAL_ERROR "consumer: the tool's contract has no grid of 4:\n${step_output}")
  endif()
  step("ptxdsl_consumer_tool check" "${tool}" check axpy)
  step("ptxdsl_consumer_tool run --cpu" "${tool}" run axpy --cpu --n 1000)
  if(NOT step_output MATCHES "\nPASS: ")
    message(FATAL_ERROR "consumer: the tool's run --cpu did not pass:\n${step_output}")
  endif()
  message(STATUS "consumer: a kernel tool built with ptxdsl_add_kernel_tool ran its commands")
endif()

# The host examples of docs/examples, built the way a user's project builds them.
if(DEFINED EXAMPLES_DIR)
  step("configure the examples against ${prefix}" "${CMAKE_COMMAND}" -S "${EXAMPLES_DIR}"
    -B "${WORK_DIR}/examples" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}")
  step("build the examples" "${CMAKE_COMMAND}" --build "${WORK_DIR}/examples")
  foreach(example layer_norm rms_norm)
    # A GPU runs it (PASS); without a driver it says so and exits 1.
    execute_process(COMMAND "${WORK_DIR}/examples/${example}_example" 64 1024
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT (rc EQUAL 0 AND out MATCHES "PASS") AND
       NOT (rc EQUAL 1 AND out MATCHES "no CUDA driver found \\(libcuda\\.so\\.1\\)"))
      message(FATAL_ERROR "consumer: ${example}_example exited ${rc}:\n${out}")
    endif()
  endforeach()
  # The kernel-tool examples, where the package has the tools: each its own tool's run --cpu.
  foreach(run "softmax;softmax_bwd" "add_rms_norm;add_rms_fwd")
    list(GET run 0 tool)
    list(GET run 1 kernel)
    if(WITH_TOOL)
      step("${tool} run ${kernel} --cpu" "${WORK_DIR}/examples/${tool}" run ${kernel} --cpu
        --dtype bf16 --width 33 --batch 3)
      if(NOT step_output MATCHES "\nPASS: ")
        message(FATAL_ERROR "consumer: ${tool} run ${kernel} --cpu did not pass:\n${step_output}")
      endif()
    endif()
  endforeach()
  message(STATUS "consumer: the examples built and ran against ${prefix}")
endif()
