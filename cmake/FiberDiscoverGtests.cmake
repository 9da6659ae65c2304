# Run at build time (cmake -D SETTINGS=... -P) for a program of fiber_add_gtest_launch_tests
# (FiberTesting.cmake): asks the program for its tests and writes its CTest entries to
# `tests_file`, which CTest includes. SETTINGS is the file of the program's settings.
#
# Anything that would leave a test without an entry stops the build instead: a listing that fails
# or that this script cannot read, tests of a kind without a launch mode, two Fault tests that
# would get one entry name, settings for a Fault test the program does not have.
cmake_minimum_required(VERSION 3.22)
include(${SETTINGS})
include(${CMAKE_CURRENT_LIST_DIR}/FiberLaunchCommand.cmake)

function(fail message)
  message(FATAL_ERROR "${program}: ${message}")
endfunction()

# A filter in the environment would hide tests from the listing.
unset(ENV{GTEST_FILTER})
# tests/mpi/test_main.cc answers --gtest_list_tests before fiber::init: no MPI, no process.
execute_process(COMMAND ${binary} --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  fail("--gtest_list_tests failed (${status}):\n${errors}${listing}")
endif()

# The listing gives each suite as "Suite." and its tests below it as "  Test", each line followed
# by "  # ..." for typed and parameterized tests.
set(shared_tests "")
set(fault_tests "")
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ ]+)\\.(  #.*)?$")
    set(suite ${CMAKE_MATCH_1})
  elseif(line MATCHES "^  ([^ ]+)(  #.*)?$" AND DEFINED suite)
    set(test ${suite}.${CMAKE_MATCH_1})
    if(suite MATCHES "Fault$")
      list(APPEND fault_tests ${test})
    else()
      list(APPEND shared_tests ${test})
    endif()
  elseif(NOT line STREQUAL "")
    fail("unexpected line in the output of --gtest_list_tests: '${line}'")
  endif()
endforeach()

if(shared_tests AND NOT LAUNCH)
  list(JOIN shared_tests " " names)
  fail("no LAUNCH modes for its tests outside *Fault suites: ${names}")
endif()
foreach(test IN LISTS FAULT_TEST_SETTINGS)
  if(NOT test IN_LIST fault_tests)
    fail("fiber_set_fault_test names ${test}: the program has no such test in a *Fault suite")
  endif()
endforeach()

set(content "# The CTest entries of ${program}, written from its tests by FiberDiscoverGtests.cmake\n")

# Appends to `content` the entry `name`: the program in `mode` with `args`, and its properties.
function(add_entry name mode ranks_killed args timeout labels environment)
  fiber_launch_command(launch ${mode} "${ranks_killed}")
  set(words "")
  foreach(word IN LISTS launch binary args)
    string(APPEND words " [==[${word}]==]")
  endforeach()
  set(environment "FIBER_TEST_MODE=${mode}" ${mpi_environment} ${environment})
  set(properties "TIMEOUT ${timeout} LABELS [==[${labels}]==] ENVIRONMENT [==[${environment}]==]")
  if(mpi_environment_modification)
    string(APPEND properties " ENVIRONMENT_MODIFICATION [==[${mpi_environment_modification}]==]")
  endif()
  string(APPEND content "add_test([==[${name}]==]${words})\n"
    "set_tests_properties([==[${name}]==] PROPERTIES ${properties})\n")
  set(content "${content}" PARENT_SCOPE)
endfunction()

if(shared_tests)
  foreach(mode IN LISTS LAUNCH)
    set(labels ${LABELS})
    if(mode IN_LIST SMOKE)
      list(APPEND labels smoke)
    endif()
    add_entry(${program}.${mode} ${mode} FALSE --gtest_filter=-*Fault.* ${TIMEOUT} "${labels}"
      "${ENVIRONMENT}")
  endforeach()
endif()

# A Fault test's entries are named after the test alone (pool_fault_test.singleton.ResizeUp...):
# the suite is the same Fault suite for most.
set(entry_names "")
foreach(test IN LISTS fault_tests)
  string(REGEX REPLACE "^[^.]*\\." "" entry ${test})
  if(entry IN_LIST entry_names)
    fail("two Fault tests named ${entry}: their entries would share a name; rename one")
  endif()
  list(APPEND entry_names ${entry})

  set(modes ${FAULT_LAUNCH})
  set(timeout ${FAULT_TIMEOUT})
  set(environment ${FAULT_ENVIRONMENT})
  if(test IN_LIST FAULT_TEST_SETTINGS)
    if(LAUNCH.${test})
      set(modes ${LAUNCH.${test}})
    endif()
    if(TIMEOUT.${test})
      set(timeout ${TIMEOUT.${test}})
    endif()
    list(APPEND environment ${ENVIRONMENT.${test}})
  endif()
  if(NOT modes)
    fail("no FAULT_LAUNCH modes for ${test}")
  endif()
  foreach(mode IN LISTS modes)
    set(name ${program}.${mode}.${entry})
    add_entry(${name} ${mode} TRUE --gtest_filter=${test} ${timeout} "${FAULT_LABELS}"
      "${environment}")
    # gtest would run nothing in this entry, which fails it: CTest shows it as disabled instead.
    if(test MATCHES "^DISABLED_|\\.DISABLED_")
      string(APPEND content "set_tests_properties([==[${name}]==] PROPERTIES DISABLED TRUE)\n")
    endif()
  endforeach()
endforeach()

file(WRITE ${tests_file} "${content}")
