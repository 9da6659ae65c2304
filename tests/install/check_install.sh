#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds an outside project against it with
# find_package(FiberMPI) and runs it. Each step's output is shown only when the step fails.
set -euo pipefail
build_dir="$1"
source_dir="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

quietly() {
  if ! "$@" > "$work/step.log" 2>&1; then
    echo "failed: $*"
    cat "$work/step.log"
    exit 1
  fi
}

quietly cmake --install "$build_dir" --prefix "$work/prefix"

# Only public headers are installed, and the umbrella header pulls in neither <mpi.h> nor any of
# the runtime's internals (fiber/mpi.h is the one public header that includes <mpi.h>).
for internal in mpi_bridge fiber/runtime fiber/master fiber/worker fiber/wire; do
  if [ -e "$work/prefix/include/$internal" ]; then
    echo "failed: internal headers installed: include/$internal"
    exit 1
  fi
done
echo '#include <fiber/fiber.h>' > "$work/umbrella.cc"
if ! c++ -std=c++20 -fsyntax-only -H -I"$work/prefix/include" "$work/umbrella.cc" 2> "$work/includes.txt"; then
  echo "failed: fiber/fiber.h does not compile on its own from the installed headers"
  cat "$work/includes.txt"
  exit 1
fi
if grep -E '/mpi\.h$|mpi-ext\.h$' "$work/includes.txt"; then
  echo "failed: fiber/fiber.h pulls in <mpi.h>"
  exit 1
fi
quietly cmake -S "$source_dir/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release
quietly cmake --build "$work/build"
"$work/build/consumer"
