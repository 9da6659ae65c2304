# Sourced by the scripts that run jobs joining a master (join_test.sh, tests/bench/join_bench.sh):
# makes a work directory, starts an ompi-server whose URI the jobs share, and on exit kills
# every process recorded in `pids` and removes the directory. Sets `work` and `server`;
# `start_master <program> <args...>` starts the master job and sets `master` to its pid.
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2> /dev/null; done
  wait 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
wait_for_file() {
  for _ in $(seq 1 600); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  echo "timed out waiting for $1" >&2
  return 1
}
ompi-server --no-daemonize -r "$work/uri" &
pids+=($!)
wait_for_file "$work/uri" || exit 1
server="file:$work/uri"
start_master() {
  mpirun --ompi-server "$server" --enable-recovery -n 1 "$@" &
  master=$!
  pids+=($master)
}
