# Every build folder of a checkout (build/, build-openmpi4/, build-mpich/, ...) compiles through
# one ccache under the checkout's .ccache/, so that what does not depend on the MPI (fiber::base,
# the Kubernetes client and controller and their tests) is compiled once, not once per MPI.
# The base directory and no hashing of the build folder make a file's compilation the same in
# every folder; only the debug information's compilation directory then names the first one.
option(FIBER_CCACHE "Compile through ccache, shared by the checkout's build folders" ON)
if(FIBER_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(FIBER_CCACHE_PROGRAM ccache)
  if(FIBER_CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env "CCACHE_DIR=${PROJECT_SOURCE_DIR}/.ccache"
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=1 ${FIBER_CCACHE_PROGRAM})
  endif()
endif()
