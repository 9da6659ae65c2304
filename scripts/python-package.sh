# Sourced by scripts/setup and scripts/test: installs the Python front end into a virtual
# environment of the checkout the way users install it (pip install .: an isolated build with
# pyproject.toml's requirements), unless the sources it is built from are those of the package
# already installed there.
#   install_package VENV BUILD_FOLDER MPI [pip options...]
# The package's engine shares the checkout's ccache with a build folder of the same MPI when the
# build folder sits beside it (the same relative paths) and the compile commands match: the
# compiler CMake takes for the build folders (ccache keys on the compiler's name, and
# scikit-build-core would take Python's, x86_64-linux-gnu-g++) and FIBER_WERROR=ON.
fibermpi_package_sources() {
  find pyproject.toml CMakeLists.txt cmake python src mpi_bridge tools k8s/client \
    -type f -not -name '*.pyc' -print0 | sort -z | xargs -0 sha1sum | sha1sum | cut -d' ' -f1
}
install_package() {
  local venv="$1" build_folder="$2" package_mpi="$3" sources
  shift 3
  sources="$(fibermpi_package_sources)"
  if [ "$(cat "$venv/fibermpi-sources.sha1" 2> /dev/null)" != "$sources" ] ||
      ! "$venv/bin/python" -c 'import fibermpi' 2> /dev/null; then
    rm -rf "$build_folder" "$venv/fibermpi-sources.sha1"
    FIBER_MPI="$package_mpi" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      --config-settings=build-dir="$build_folder" \
      --config-settings=cmake.define.CMAKE_CXX_COMPILER="$(command -v c++)" \
      --config-settings=cmake.define.FIBER_WERROR=ON "$@" .
    echo "$sources" > "$venv/fibermpi-sources.sha1"
  fi
}
# .venv-openmpi4/: the package built against Debian's Open MPI 4.1 (the Kubernetes mode's MPI: a
# FiberJob's pods meet through its ompi-server): the Python launcher and worker pods of the
# development cluster's FiberJobs (whose pods run on this machine's filesystem) and what
# scripts/images --prebuilt puts in fibermpi/python:dev. Its build folder sits beside
# build-openmpi4/, whose engine it shares. scripts/setup makes the environment and its other
# packages.
install_openmpi4_package() {
  install_package .venv-openmpi4 build-python-openmpi4 openmpi4
}
