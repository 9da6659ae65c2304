# Helpers to register tests that start real MPI processes. Every such test gets a timeout, because
# a spawn or connect bug shows up as a hang, runs as root the way CI does, and is run through
# tests/checked_run.sh so that a failure cannot hide behind the launcher's exit status.

set(FIBER_TEST_ENV
  "OMPI_ALLOW_RUN_AS_ROOT=1"
  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "OMPI_MCA_rmaps_base_oversubscribe=1"
  "FIBER_QUIET=1"
  "FIBER_SPAWN_TIMEOUT_S=30"
  ${FIBER_MPI_TEST_ENV})
set(FIBER_CHECKED_RUN ${PROJECT_SOURCE_DIR}/tests/checked_run.sh)

# mpirun with the option that keeps a job alive when one of its processes dies, and
# oversubscription (tests start more processes than CI has cores).
if(FIBER_MPI STREQUAL "openmpi5")
  set(FIBER_MPIRUN ${MPIEXEC_EXECUTABLE} --with-ft ulfm --prtemca state_base_recoverable 1
                   --oversubscribe)
else()
  set(FIBER_MPIRUN ${MPIEXEC_EXECUTABLE} --enable-recovery --oversubscribe)
endif()

# fiber_set_test_environment(test...) gives tests the environment of this build's MPI.
function(fiber_set_test_environment)
  foreach(test IN LISTS ARGN)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT ${FIBER_TEST_ENV})
    if(FIBER_MPI_TEST_ENV_MODS)
      set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT_MODIFICATION ${FIBER_MPI_TEST_ENV_MODS})
    endif()
  endforeach()
endfunction()

# fiber_add_launch_tests(TARGET name LAUNCH mode... [SUFFIX s] [TIMEOUT s] [LABELS l...]
#                        [RANKS_KILLED] [ARGS a...])
# registers one CTest entry per launch mode:
#   singleton   ./prog
#   mpirunN     mpirun <recovery option> --oversubscribe -n N ./prog (mpirun1, mpirun3...)
# The program must report its exit status (fiber::testing::init). RANKS_KILLED: the test kills
# processes of its job on purpose, so under mpirun the launcher's exit status is not held against
# it.
# FIBER_TEST_MODE tells the program which mode it runs in.
function(fiber_add_launch_tests)
  cmake_parse_arguments(ARG "RANKS_KILLED" "TARGET;TIMEOUT;SUFFIX" "LAUNCH;LABELS;ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 180)
  endif()
  foreach(mode IN LISTS ARG_LAUNCH)
    set(checks --status)
    if(mode STREQUAL "singleton")
      # No launcher: the exit status is the program's own, and must be 0 too.
      set(launcher "")
    elseif(mode MATCHES "^mpirun([0-9]+)$")
      set(launcher ${FIBER_MPIRUN} -n ${CMAKE_MATCH_1})
      if(ARG_RANKS_KILLED)
        list(APPEND checks --ranks-killed)
      endif()
    else()
      message(FATAL_ERROR "unknown launch mode ${mode}")
    endif()
    set(test_name ${ARG_TARGET}.${mode}${ARG_SUFFIX})
    add_test(NAME ${test_name}
      COMMAND ${FIBER_CHECKED_RUN} ${checks} -- ${launcher} $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS})
    set_tests_properties(${test_name} PROPERTIES
      TIMEOUT ${ARG_TIMEOUT}
      LABELS "${ARG_LABELS}"
      ENVIRONMENT "FIBER_TEST_MODE=${mode}")
    fiber_set_test_environment(${test_name})
  endforeach()
endfunction()

# fiber_add_checked_test(NAME name [TIMEOUT s] [LABELS l...] [PASS_REGEX r] COMMAND cmd...)
# registers a test that is not a fibermpi test program (a script, an example): it fails on a
# non-zero exit status, and, with PASS_REGEX, also when its output does not match.
function(fiber_add_checked_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT;PASS_REGEX" "LABELS;COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 180)
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${FIBER_CHECKED_RUN} -- ${ARG_COMMAND})
  set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}")
  if(ARG_PASS_REGEX)
    # With an output check CTest ignores the exit status; checked_run's failure line fails it.
    set_tests_properties(${ARG_NAME} PROPERTIES
      PASS_REGULAR_EXPRESSION "${ARG_PASS_REGEX}"
      FAIL_REGULAR_EXPRESSION "checked_run: FAILED")
  endif()
  fiber_set_test_environment(${ARG_NAME})
endfunction()
