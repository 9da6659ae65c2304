#!/usr/bin/env bash
# Runs scale_bench with joined workers (Open MPI 4.1): an ompi-server, the master under mpirun,
# and once it listens, one independent `mpirun -n <workers>` job whose ranks join its pool.
# Usage: scale_bench_joined.sh <scale_bench binary> <workers> [task_ms] [tasks_per_worker] [idle_s]
# (prints the master's JSON line)
set -uo pipefail
bin="$1"
workers="$2"
shift 2
source "$(dirname "$0")/../mpi/name_server.sh"

FIBER_SCALE_JOIN_DIR="$work" start_master "$bin" "$workers" "$@"
wait_for_file "$work/address" || exit 1
FIBER_CONNECT="$(cat "$work/address")" mpirun --ompi-server "$server" --enable-recovery \
  --oversubscribe -n "$workers" "$bin" "$workers" > /dev/null 2>&1 &
pids+=($!)
wait "$master"
