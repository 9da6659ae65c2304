#!/usr/bin/env bash
# Runs one test command and fails when the program failed, whatever its launcher says.
# Open MPI 4.1's `mpirun --enable-recovery` exits 0 even when rank 0 exits with an error, and Open
# MPI 5's mpirun exits non-zero once any process was killed, on purpose or not. With --status the
# program's own exit status decides: test programs write it at exit to FIBER_TEST_STATUS_FILE
# (fiber::testing::report_status_at_exit), and a program that wrote none did not get to its end.
# With --ranks-killed (tests that kill processes of the job) a non-zero launcher status is
# accepted when the program itself reported success.
# On failure the last line says "checked_run: FAILED", so tests matched by output fail too.
# Each run gets a TMPDIR of its own, removed at its end: the launcher's session directory and its
# PMIx rendezvous files go there, so a file left by an earlier run (a launcher killed at a
# timeout, whose pid a later one reuses) or by a run beside it cannot stop this one's launcher
# before the program starts.
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

run_tmpdir="$(mktemp -d "${TMPDIR:-/tmp}/fiber-run.XXXXXX")" || {
  echo "checked_run: FAILED: cannot make a temporary directory under ${TMPDIR:-/tmp}"
  exit 1
}
trap 'rm -rf "$run_tmpdir"' EXIT
export TMPDIR="$run_tmpdir"

status_file=""
if [ "$use_status" = 1 ]; then
  status_file="$run_tmpdir/exit-status"
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
