# Helpers to register tests that start real MPI processes. Every such test gets a timeout, because
# a spawn or connect bug shows up as a hang, runs as root the way CI does, and is run through
# tests/checked_run.sh so that a failure cannot hide behind the launcher's exit status.

set(FIBER_TEST_ENV
  "OMPI_ALLOW_RUN_AS_ROOT=1"
  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "OMPI_MCA_rmaps_base_oversubscribe=1"
  "FIBER_QUIET=1"
  "FIBER_SPAWN_TIMEOUT_S=30"
  "FIBER_STACKS_WHEN_STUCK=1"
  ${FIBER_MPI_TEST_ENV})
set(FIBER_CHECKED_RUN ${PROJECT_SOURCE_DIR}/tests/checked_run.sh)

# unit_tests builds the programs of the tests of label unit and nothing else: a build folder that
# runs only those (the sanitizer pass of scripts/test) need not build the rest.
add_custom_target(unit_tests)
# fiber_add_unit_test_program(target...) adds programs that tests of label unit run.
function(fiber_add_unit_test_program)
  add_dependencies(unit_tests ${ARGN})
endfunction()
set(FIBER_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})
include(${FIBER_CMAKE_DIR}/FiberLaunchCommand.cmake)

# mpirun with the option that keeps a job alive when one of its processes dies, and
# oversubscription (tests start more processes than CI has cores).
if(FIBER_MPI STREQUAL "openmpi5")
  set(FIBER_MPIRUN ${MPIEXEC_EXECUTABLE} --with-ft ulfm --prtemca state_base_recoverable 1
                   --oversubscribe)
elseif(FIBER_MPI STREQUAL "mpich")
  # Hydra oversubscribes without being asked; it has no recovery fibermpi can use
  # (launch_recipe.cc says why).
  set(FIBER_MPIRUN ${MPIEXEC_EXECUTABLE})
else()
  set(FIBER_MPIRUN ${MPIEXEC_EXECUTABLE} --enable-recovery --oversubscribe)
endif()

# mpirun as a user runs it with no recovery option: oversubscription only (hydra's mpiexec
# oversubscribes unasked and knows no --oversubscribe).
if(FIBER_MPI STREQUAL "mpich")
  set(FIBER_MPIRUN_PLAIN ${MPIEXEC_EXECUTABLE})
else()
  set(FIBER_MPIRUN_PLAIN ${MPIEXEC_EXECUTABLE} --oversubscribe)
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
# registers one CTest entry per launch mode (see FiberLaunchCommand.cmake) of a program that is
# not a GoogleTest program, or of a test run that repeats named tests in another setting.
# FIBER_TEST_MODE tells the program which mode it runs in.
function(fiber_add_launch_tests)
  cmake_parse_arguments(ARG "RANKS_KILLED" "TARGET;TIMEOUT;SUFFIX" "LAUNCH;LABELS;ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 180)
  endif()
  foreach(mode IN LISTS ARG_LAUNCH)
    fiber_launch_command(launch ${mode} "${ARG_RANKS_KILLED}")
    set(test_name ${ARG_TARGET}.${mode}${ARG_SUFFIX})
    add_test(NAME ${test_name} COMMAND ${launch} $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS})
    set_tests_properties(${test_name} PROPERTIES
      TIMEOUT ${ARG_TIMEOUT}
      LABELS "${ARG_LABELS}"
      ENVIRONMENT "FIBER_TEST_MODE=${mode}")
    fiber_set_test_environment(${test_name})
  endforeach()
endfunction()

# fiber_add_gtest_launch_tests(TARGET name
#     [LAUNCH mode...] [TIMEOUT s] [LABELS l...] [ENVIRONMENT e...] [SMOKE mode...]
#     [FAULT_LAUNCH mode...] [FAULT_TIMEOUT s] [FAULT_LABELS l...] [FAULT_ENVIRONMENT e...])
# registers the tests of a GoogleTest program built on tests/mpi/test_main.cc. They are not
# named here: each build of the program lists them (--gtest_list_tests), so a new or renamed test
# runs without a change to CMake.
#  - A test of a suite whose name ends in "Fault" kills processes of its job. Once one was killed,
#    Open MPI 4.1 may leave a later spawn stuck, so each such test is a program run of its own:
#    <name>.<mode>.<test> for each FAULT_LAUNCH mode, with the launcher's status not held against
#    it (RANKS_KILLED of fiber_add_launch_tests).
#  - All the other tests share one program run per LAUNCH mode, <name>.<mode>, and with it the
#    warm reserve of spawned workers (a run per test would be far too slow on CI's cores).
# ENVIRONMENT and FAULT_ENVIRONMENT come after the environment of this build's MPI. SMOKE: the
# shared entries of these modes also get the label smoke (the subset scripts/test runs on the
# other MPI). The build of the program fails if it has tests of a kind for which no mode is given.
# fiber_set_fault_test after this call changes the entries of one Fault test.
function(fiber_add_gtest_launch_tests)
  cmake_parse_arguments(ARG "" "TARGET;TIMEOUT;FAULT_TIMEOUT"
    "LAUNCH;LABELS;ENVIRONMENT;SMOKE;FAULT_LAUNCH;FAULT_LABELS;FAULT_ENVIRONMENT" ${ARGN})
  foreach(timeout TIMEOUT FAULT_TIMEOUT)
    if(NOT ARG_${timeout})
      set(ARG_${timeout} 180)
    endif()
  endforeach()
  set_property(TARGET ${ARG_TARGET} PROPERTY FIBER_GTEST_PROGRAM TRUE)
  foreach(key LAUNCH TIMEOUT LABELS ENVIRONMENT SMOKE
      FAULT_LAUNCH FAULT_TIMEOUT FAULT_LABELS FAULT_ENVIRONMENT)
    set_property(TARGET ${ARG_TARGET} PROPERTY FIBER_GTEST_${key} "${ARG_${key}}")
  endforeach()

  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}_tests)
  set(settings_file ${dir}/settings.cmake)
  set(tests_file ${dir}/tests.cmake)
  # The settings are written once this folder's CMakeLists.txt is read to its end, so that the
  # fiber_set_fault_test calls after this one are in them. (A deferred call reads its arguments
  # when it runs: EVAL puts their values in now.)
  cmake_language(EVAL CODE "cmake_language(DEFER CALL _fiber_write_gtest_settings
    [==[${ARG_TARGET}]==] [==[${settings_file}]==] [==[${tests_file}]==])")
  # A custom command rather than a POST_BUILD step: it runs again when only the settings changed.
  add_custom_command(OUTPUT ${tests_file}
    COMMAND ${CMAKE_COMMAND} -D SETTINGS=${settings_file}
            -P ${FIBER_CMAKE_DIR}/FiberDiscoverGtests.cmake
    DEPENDS ${ARG_TARGET} ${settings_file} ${FIBER_CMAKE_DIR}/FiberDiscoverGtests.cmake
            ${FIBER_CMAKE_DIR}/FiberLaunchCommand.cmake
    COMMENT "Listing the tests of ${ARG_TARGET}"
    VERBATIM)
  add_custom_target(${ARG_TARGET}_tests ALL DEPENDS ${tests_file})

  # CTest reads the entries when it starts. Before the first build there is no list yet: a failing
  # placeholder entry says so, rather than the program's tests being absent without a word.
  set(include_file ${dir}/include.cmake)
  file(WRITE ${include_file}
    "if(EXISTS [==[${tests_file}]==])\n"
    "  include([==[${tests_file}]==])\n"
    "else()\n"
    "  add_test([==[${ARG_TARGET}.NOT_BUILT]==] [==[${CMAKE_COMMAND}]==] -E false)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()

# fiber_set_fault_test(TARGET name TEST Suite.Test [LAUNCH mode...] [TIMEOUT s]
#                      [ENVIRONMENT e...])
# gives one Fault test of a program of fiber_add_gtest_launch_tests its own launch modes or
# timeout (instead of FAULT_LAUNCH, FAULT_TIMEOUT) and more environment (after
# FAULT_ENVIRONMENT). The program's build fails if it has no such Fault test, so that a renamed
# test cannot leave its settings behind.
function(fiber_set_fault_test)
  cmake_parse_arguments(ARG "" "TARGET;TEST;TIMEOUT" "LAUNCH;ENVIRONMENT" ${ARGN})
  get_property(registered TARGET ${ARG_TARGET} PROPERTY FIBER_GTEST_PROGRAM)
  if(NOT registered)
    message(FATAL_ERROR
      "fiber_set_fault_test: call fiber_add_gtest_launch_tests(TARGET ${ARG_TARGET}) first")
  endif()
  get_property(tests TARGET ${ARG_TARGET} PROPERTY FIBER_GTEST_FAULT_TEST_SETTINGS)
  if(ARG_TEST IN_LIST tests)
    message(FATAL_ERROR "fiber_set_fault_test: ${ARG_TARGET} ${ARG_TEST} has its settings already")
  endif()
  set_property(TARGET ${ARG_TARGET} APPEND PROPERTY FIBER_GTEST_FAULT_TEST_SETTINGS ${ARG_TEST})
  foreach(key LAUNCH TIMEOUT ENVIRONMENT)
    set_property(TARGET ${ARG_TARGET} PROPERTY FIBER_GTEST_${key}.${ARG_TEST} "${ARG_${key}}")
  endforeach()
endfunction()

# Appends to the variable named by content_var a line that sets `name` to `value`; brackets need
# no escaping of the list separators and quotes in values.
function(_fiber_append_setting content_var name value)
  set(${content_var} "${${content_var}}set(${name} [==[${value}]==])\n" PARENT_SCOPE)
endfunction()

# Writes what FiberDiscoverGtests.cmake needs to know of a program, one set() a value, through
# file(GENERATE) for the paths of programs ($<TARGET_FILE:...>) that settings may hold.
function(_fiber_write_gtest_settings target settings_file tests_file)
  set(content "")
  _fiber_append_setting(content program ${target})
  _fiber_append_setting(content binary $<TARGET_FILE:${target}>)
  _fiber_append_setting(content tests_file ${tests_file})
  _fiber_append_setting(content FIBER_CHECKED_RUN ${FIBER_CHECKED_RUN})
  _fiber_append_setting(content FIBER_MPIRUN "${FIBER_MPIRUN}")
  _fiber_append_setting(content mpi_environment "${FIBER_TEST_ENV}")
  _fiber_append_setting(content mpi_environment_modification "${FIBER_MPI_TEST_ENV_MODS}")
  foreach(key LAUNCH TIMEOUT LABELS ENVIRONMENT SMOKE
      FAULT_LAUNCH FAULT_TIMEOUT FAULT_LABELS FAULT_ENVIRONMENT FAULT_TEST_SETTINGS)
    get_property(value TARGET ${target} PROPERTY FIBER_GTEST_${key})
    _fiber_append_setting(content ${key} "${value}")
  endforeach()
  get_property(fault_tests TARGET ${target} PROPERTY FIBER_GTEST_FAULT_TEST_SETTINGS)
  foreach(test IN LISTS fault_tests)
    foreach(key LAUNCH TIMEOUT ENVIRONMENT)
      get_property(value TARGET ${target} PROPERTY FIBER_GTEST_${key}.${test})
      _fiber_append_setting(content ${key}.${test} "${value}")
    endforeach()
  endforeach()
  file(GENERATE OUTPUT ${settings_file} CONTENT "${content}")
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

# fiber_add_pytest(NAME name FILE test_file.py [TIMEOUT s] [LABELS l...] [ENVIRONMENT VAR=value...])
# registers a pytest file, run by the checkout's .venv in this folder's build directory, skips
# reported (-rs), no bytecode or cache written into the source tree.
function(fiber_add_pytest)
  cmake_parse_arguments(ARG "" "NAME;FILE;TIMEOUT" "LABELS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${ARG_NAME}
           COMMAND ${PROJECT_SOURCE_DIR}/.venv/bin/python -m pytest -q -rs -p no:cacheprovider
                   ${ARG_FILE}
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;${ARG_ENVIRONMENT}")
endfunction()
