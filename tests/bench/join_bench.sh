#!/usr/bin/env bash
# Runs join_bench: an ompi-server, the master under mpirun, and for every round the master asks
# for, a new independent `mpirun -n 2` job joining it with FIBER_CONNECT.
# Usage: join_bench.sh <join_bench binary> <repeats>   (prints the master's JSON line)
set -uo pipefail
bin="$1"
repeats="$2"
source "$(dirname "$0")/../mpi/name_server.sh"

start_master "$bin" "$repeats" "$work"
served=""
while kill -0 "$master" 2> /dev/null; do
  request="$(cat "$work/request" 2> /dev/null || true)"
  if [ -n "$request" ] && [ "$request" != "$served" ] && [ "$request" != done ]; then
    served="$request"
    FIBER_CONNECT="$(cat "$work/address")" mpirun --ompi-server "$server" --enable-recovery \
      --oversubscribe -n 2 "$bin" > /dev/null &
    pids+=($!)
  fi
  sleep 0.005
done
wait "$master"
