#!/usr/bin/env bash
# Runs one test command and fails when the program failed, whatever its launcher says.
# Open MPI 4.1's `mpirun --enable-recovery` exits 0 even when rank 0 exits with an error, and Open
# MPI 5's mpirun exits non-zero once any process was killed, on purpose or not. With --status the
# program's own exit status decides: test programs write it at exit to FIBER_TEST_STATUS_FILE
# (fiber::testing::report_status_at_exit), and a program that wrote none did not get to its end.
# With --ranks-killed (tests that kill processes of the job) a non-zero launcher status is
# accepted when the program itself reported success.
# On failure the last line says "checked_run: FAILED", so tests matched by output fail too.
# Usage: checked_run.sh [--status] [--ranks-killed] -- command [args...]
set -uo pipefail
use_status=0
ranks_killed=0
while [ $# -gt 0 ]; do
  case "$1" in
    --status) use_status=1 ;;
    --ranks-killed) ranks_killed=1 ;;
    --) shift; break ;;
    *) echo "checked_run: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ $# -gt 0 ] || { echo "checked_run: no command given" >&2; exit 2; }

status_file=""
if [ "$use_status" = 1 ]; then
  status_file="$(mktemp)"
  trap 'rm -f "$status_file"' EXIT
  export FIBER_TEST_STATUS_FILE="$status_file"
fi

"$@"
rc=$?

fail() {
  echo "checked_run: FAILED: $*"
  exit 1
}
if [ "$use_status" = 1 ]; then
  status="$(cat "$status_file" 2> /dev/null)"
  [ -n "$status" ] || fail "the program reported no exit status (launcher status $rc): it did not reach its end"
  [ "$status" = 0 ] || fail "the program exited with status $status (launcher status $rc)"
  if [ "$rc" != 0 ] && [ "$ranks_killed" = 0 ]; then
    fail "the launcher exited with status $rc although the program reported success"
  fi
  exit 0
fi
[ "$rc" = 0 ] || fail "exit status $rc"
exit 0
