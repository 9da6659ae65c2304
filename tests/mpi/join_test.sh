#!/usr/bin/env bash
# Runs join_test: an ompi-server, the master under mpirun, and a second, independent mpirun job
# of 2 ranks that joins it with FIBER_CONNECT.
# Usage: join_test.sh <join_test binary> join|leave|kill|token|wrong-token
#   join, leave, kill  no join token: both sides warn that joining is unguarded
#   token              the same token on both sides (FIBER_JOIN_TOKEN_FILE): the join scenario,
#                      through the master's guarded turns, and no warning
#   wrong-token        another token on the joining job: it is refused with a clear line on both
#                      sides and ends, the master's map is exact
set -uo pipefail
bin="$1"
scenario="$2"
source "$(dirname "$0")/name_server.sh"

mode="$scenario"
joiner_token=()
# The warning for joining without a token is what the join scenario checks, and the lines
# refusing a wrong token are what wrong-token checks: warnings, which FIBER_QUIET would hide.
case "$scenario" in join | wrong-token) unset FIBER_QUIET ;; esac
case "$scenario" in
  token | wrong-token)
    openssl rand -hex 32 > "$work/token"
    openssl rand -hex 32 > "$work/other-token"
    export FIBER_JOIN_TOKEN_FILE="$work/token"
    joiner_token=(FIBER_JOIN_TOKEN_FILE="$work/token")
    [ "$scenario" = token ] && mode=join || {
      joiner_token=(FIBER_JOIN_TOKEN_FILE="$work/other-token")
      mode=refused
    } ;;
esac
failed=0
expect() {  # expect <log> <text> <what>
  if grep -qF -- "$2" "$1"; then echo "ok: $3"; else echo "FAILED: $3 (no '$2' in $1)"; failed=1; fi
}
refuse_line() {  # refuse_line <log> <text> <what>
  if grep -qF -- "$2" "$1"; then echo "FAILED: $3 ('$2' in $1)"; failed=1; else echo "ok: $3"; fi
}

start_master "$bin" "$mode" "$work/port" > "$work/master.log" 2>&1
unset FIBER_JOIN_TOKEN_FILE
wait_for_file "$work/port" || { cat "$work/master.log"; exit 1; }

if [ "$scenario" = wrong-token ]; then
  # Refused before any MPI connect: the job ends by itself, well within the limit.
  env "${joiner_token[@]}" FIBER_CONNECT="$(cat "$work/port")" timeout 60 \
    mpirun --ompi-server "$server" --oversubscribe -n 2 "$bin" > "$work/joiner.log" 2>&1
  joiner_rc=$?
  touch "$work/port.refused"
  wait "$master"
  master_rc=$?
  cat "$work/master.log"
  echo "--- the refused job (exit status $joiner_rc):"
  cat "$work/joiner.log"
  [ "$joiner_rc" -ne 0 ] && [ "$joiner_rc" -ne 124 ] && echo "ok: the refused job failed by itself" ||
    { echo "FAILED: the refused job's exit status is $joiner_rc"; failed=1; }
  expect "$work/master.log" "refused a joining job at " "the master logs the refusal"
  expect "$work/master.log" "it did not prove the job's join token" "the master says why"
  expect "$work/joiner.log" "did not prove the join token; refusing to join it" "the job says why"
  [ "$master_rc" -eq 0 ] && [ "$failed" -eq 0 ] && echo "join_test.sh wrong-token: OK"
  exit $((master_rc != 0 || failed != 0))
fi

env "${joiner_token[@]}" FIBER_CONNECT="$(cat "$work/port")" mpirun --ompi-server "$server" \
  --enable-recovery --oversubscribe -n 2 "$bin" > "$work/joiner.log" 2>&1 &
client=$!
pids+=($client)

wait "$master"
master_rc=$?
cat "$work/master.log"
echo "master exited with $master_rc"
if [ "$scenario" != kill ]; then
  # The joined job ends cleanly: when the master ends, or when it was asked to leave.
  wait "$client"
  client_rc=$?
  echo "joined job exited with $client_rc"
  [ "$client_rc" -eq 0 ] || { cat "$work/joiner.log"; exit 1; }
fi
warning="FIBER_JOIN_TOKEN_FILE is not set"
if [ "$scenario" = token ]; then
  expect "$work/port" "fiber-join://" "fiber::listen() gave the guarded turns' address"
  refuse_line "$work/master.log" "$warning" "no warning on the master"
  refuse_line "$work/joiner.log" "$warning" "no warning on the joined job"
  [ "$master_rc" -eq 0 ] && [ "$failed" -eq 0 ] && echo "join_test.sh token: OK"
elif [ "$scenario" = join ]; then
  expect "$work/master.log" "$warning: this master joins at" "the master warns"
  expect "$work/joiner.log" "$warning: this joining job joins at" "the joined job warns"
fi
exit $((master_rc != 0 || failed != 0))
