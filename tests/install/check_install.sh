#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds an outside project against it with
# find_package(FiberMPI) and runs it. Each step's output is shown only when the step fails.
set -euo pipefail
# Usage: check_install.sh BUILD_DIR [--each-header]  (--each-header: also compile each installed
# header on its own)
build_dir="$1"
each_header="${2:-}"
case "$each_header" in
  "" | --each-header) ;;
  *) echo "check_install.sh: unknown option $each_header (use --each-header)" >&2; exit 2 ;;
esac
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

# Only the public headers are installed (include/ of the source tree, nothing from src/), and the
# umbrella header pulls in neither <mpi.h> nor any of the runtime's internals (fiber/mpi.h and
# fiber/boost_mpi.h are the public headers that include <mpi.h>).
installed="$(cd "$work/prefix/include" && find . -type f | sed 's|^\./||' | sort)"
public="$(cd "$source_dir/../../include" && find . -type f | sed 's|^\./||' | sort)"
if [ "$installed" != "$public" ]; then
  echo "failed: the installed headers are not include/ of the source tree:"
  diff <(echo "$public") <(echo "$installed") || true
  exit 1
fi
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
  -DCMAKE_BUILD_TYPE=Release \
  ${each_header:+-DFIBER_INSTALLED_INCLUDE_DIR="$work/prefix/include"}
quietly cmake --build "$work/build"
"$work/build/consumer"
