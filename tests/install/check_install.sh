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
quietly cmake -S "$source_dir/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release
quietly cmake --build "$work/build"
"$work/build/consumer"
