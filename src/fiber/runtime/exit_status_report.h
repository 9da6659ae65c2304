// A program run under a launcher whose own exit status says nothing about the program's (Open
// MPI 4.1's mpirun with recovery on exits 0 whatever its ranks did): the process that starts the
// launcher names a file in FIBER_EXIT_STATUS_FILE, the program's master writes its exit status
// there as it exits, and the starting process exits with that status. Used by a FiberJob's
// launcher pod and by `fibermpi run`. Free of MPI. Internal.
#pragma once

#include <string>
#include <vector>

namespace fiber::detail {

/// The variable naming the file the program's master reports its exit status in.
inline constexpr const char* kExitStatusFileVariable = "FIBER_EXIT_STATUS_FILE";

/// In the program's master, as it exits: writes `status` to the file FIBER_EXIT_STATUS_FILE
/// names. Does nothing where the variable is unset. Async-signal-unsafe; call from exit
/// handlers.
void report_exit_status(int status);

/// Starts `command` (a launcher's command line; argv[0] is looked up on PATH) with
/// FIBER_EXIT_STATUS_FILE set to a fresh file in `directory`, passes on to it the termination
/// signals this process receives (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2), waits for
/// it, and returns the program's exit status: the one its master reported; else, when the
/// launcher failed (a non-zero status, a signal: 128 + its number) that one; else 1, with a line
/// on stderr naming `program` as having ended without reporting (it crashed or was killed).
/// 127 when the launcher cannot be started (said on stderr).
int run_reporting_exit_status(const std::vector<std::string>& command, const std::string& directory,
                              const std::string& program);

}  // namespace fiber::detail
