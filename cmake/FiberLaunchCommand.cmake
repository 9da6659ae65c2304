# The command line of a test program in one launch mode. One definition for the tests CMake
# registers itself (FiberTesting.cmake) and for those a program's listing gives at build time
# (FiberDiscoverGtests.cmake), so that both kinds run alike. Needs FIBER_CHECKED_RUN and
# FIBER_MPIRUN.
#
# fiber_launch_command(out mode ranks_killed) sets `out` to the words to put before the program
# and its arguments:
#   singleton   ./prog
#   mpirunN     mpirun <recovery option> --oversubscribe -n N ./prog (mpirun1, mpirun3...)
# both through tests/checked_run.sh, which judges the program by the exit status it reports
# (fiber::testing::init). ranks_killed true: the test kills processes of its job on purpose, so
# under mpirun the launcher's exit status is not held against it.
function(fiber_launch_command out mode ranks_killed)
  set(checks --status)
  if(mode STREQUAL "singleton")
    # No launcher: the exit status is the program's own, and must be 0 too.
    set(launcher "")
  elseif(mode MATCHES "^mpirun([0-9]+)$")
    set(launcher ${FIBER_MPIRUN} -n ${CMAKE_MATCH_1})
    if(ranks_killed)
      list(APPEND checks --ranks-killed)
    endif()
  else()
    message(FATAL_ERROR "unknown launch mode ${mode}")
  endif()
  set(${out} ${FIBER_CHECKED_RUN} ${checks} -- ${launcher} PARENT_SCOPE)
endfunction()
