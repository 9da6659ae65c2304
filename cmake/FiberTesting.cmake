# Helpers to register tests that start real MPI processes. Every such test gets a timeout, because
# a spawn or connect bug shows up as a hang, and runs as root the way CI does.

set(FIBER_TEST_ENV
  "OMPI_ALLOW_RUN_AS_ROOT=1"
  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "OMPI_MCA_rmaps_base_oversubscribe=1"
  "FIBER_QUIET=1"
  "FIBER_SPAWN_TIMEOUT_S=30")

# fiber_add_launch_tests(TARGET name LAUNCH mode... [SUFFIX s] [TIMEOUT s] [LABELS l...] [ARGS a...])
# registers one CTest entry per launch mode:
#   singleton   ./prog
#   mpirunN     mpirun --enable-recovery --oversubscribe -n N ./prog (mpirun1, mpirun3, mpirun4...)
# FIBER_TEST_MODE tells the program which mode it runs in.
function(fiber_add_launch_tests)
  cmake_parse_arguments(ARG "" "TARGET;TIMEOUT;SUFFIX" "LAUNCH;LABELS;ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 180)
  endif()
  foreach(mode IN LISTS ARG_LAUNCH)
    if(mode STREQUAL "singleton")
      set(command $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS})
    elseif(mode MATCHES "^mpirun([0-9]+)$")
      set(command ${MPIEXEC_EXECUTABLE} --enable-recovery --oversubscribe -n ${CMAKE_MATCH_1}
        $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS})
    else()
      message(FATAL_ERROR "unknown launch mode ${mode}")
    endif()
    set(test_name ${ARG_TARGET}.${mode}${ARG_SUFFIX})
    add_test(NAME ${test_name} COMMAND ${command})
    set_tests_properties(${test_name} PROPERTIES
      TIMEOUT ${ARG_TIMEOUT}
      LABELS "${ARG_LABELS}"
      ENVIRONMENT "${FIBER_TEST_ENV};FIBER_TEST_MODE=${mode}")
  endforeach()
endfunction()
