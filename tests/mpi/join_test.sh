#!/usr/bin/env bash
# Runs join_test: an ompi-server, the master under mpirun, and a second, independent mpirun job
# of 2 ranks that joins it with FIBER_CONNECT. Usage: join_test.sh <join_test binary> join|leave|kill
set -uo pipefail
bin="$1"
scenario="$2"
source "$(dirname "$0")/name_server.sh"

start_master "$bin" "$scenario" "$work/port"
wait_for_file "$work/port" || exit 1

FIBER_CONNECT="$(cat "$work/port")" mpirun --ompi-server "$server" --enable-recovery \
  --oversubscribe -n 2 "$bin" &
client=$!
pids+=($client)

wait "$master"
master_rc=$?
echo "master exited with $master_rc"
if [ "$scenario" != kill ]; then
  # The joined job ends cleanly: when the master ends, or when it was asked to leave.
  wait "$client"
  client_rc=$?
  echo "joined job exited with $client_rc"
  [ "$client_rc" -eq 0 ] || exit 1
fi
exit "$master_rc"
