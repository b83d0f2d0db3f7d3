# retc_add_model(<target> SOURCES <file.cc> ...)
#
# Makes an executable of a user's model source files that offers the full retc
# CLI (list, compile, check, train, dump-ir) for the models they define. The
# sources define `int main(int argc, char** argv)` calling `retc::run_cli`.
function(retc_add_model target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "retc_add_model(${target}): SOURCES is required")
  endif()
  add_executable(${target} ${ARG_SOURCES})
  if(TARGET retc::retc_cli)
    target_link_libraries(${target} PRIVATE retc::retc_cli)
  else()
    target_link_libraries(${target} PRIVATE retc_cli)
  endif()
  target_compile_features(${target} PRIVATE cxx_std_20)
endfunction()
