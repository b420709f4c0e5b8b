# ptxdsl_add_kernel_tool(<target> SOURCES <file>... [OUTPUT_NAME <name>] [LIBRARIES <lib>...])
#
# Builds <target>, an executable with the commands of `ptxdsl` (list, emit [--json], check
# [--ptx FILE], run [--cpu] [--trace]) for the kernels its sources register. The sources define
#   void ptxdsl::tool::register_kernels(ptxdsl::tool::Registry& registry)
# (docs/dsl.md, "Your own tool"); the main is the package's (ptxdsl::tool_main). LIBRARIES are
# linked too (the sources' own dependencies). The tool is named <target> unless OUTPUT_NAME.
function(ptxdsl_add_kernel_tool target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT_NAME" "SOURCES;LIBRARIES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
      "ptxdsl_add_kernel_tool(${target}): unexpected arguments ${arg_UNPARSED_ARGUMENTS}; it "
      "takes SOURCES, OUTPUT_NAME and LIBRARIES")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR
      "ptxdsl_add_kernel_tool(${target}): SOURCES must name the files that define "
      "ptxdsl::tool::register_kernels")
  endif()
  if(NOT TARGET ptxdsl::tool_main)
    message(FATAL_ERROR
      "ptxdsl_add_kernel_tool(${target}): this ptxdsl has no ptxdsl::tool (it was built with "
      "PTXDSL_BUILD_TOOLS=OFF)")
  endif()
  add_executable(${target} ${arg_SOURCES})
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_link_libraries(${target} PRIVATE ptxdsl::tool_main ptxdsl::tool ${arg_LIBRARIES})
  if(arg_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${arg_OUTPUT_NAME})
  endif()
endfunction()
