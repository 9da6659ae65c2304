// A program run under a launcher whose own exit status says nothing about the program's (Open
// MPI 4.1's mpirun with recovery on exits 0 whatever its ranks did): the process that starts the
// launcher names a file in FIBER_EXIT_STATUS_FILE, the program's master writes its exit status
// there as it exits, and the starting process exits with that status. Used by a FiberJob's
// launcher pod and by `fibermpi run`. Free of MPI. Internal.
#pragma once

#include <string>
#include <vector>

#include "fiber/base/config_file.h"

namespace fiber::internal {

/// The variable naming the file the program's master reports its exit status in.
inline constexpr const char* kExitStatusFileVariable = "FIBER_EXIT_STATUS_FILE";

/// In the program's master, as it exits: writes `status` to the file FIBER_EXIT_STATUS_FILE
/// names. Does nothing where the variable is unset, and after a first report. Async-signal-
/// unsafe; call from exit handlers.
void report_exit_status(int status);

/// True in the process whose exit status is the program's: rank 0 of the launcher's job, or a
/// program started alone; never a worker fibermpi started (FIBER_WORKER), one joining a master
/// (FIBER_CONNECT) or a FiberJob's worker pod.
bool is_program_master(const EnvironmentLookup& environment);

/// How a launcher run through run_reporting_exit_status is judged when no report arrives.
struct ExitReportExpectation {
  /// The program's master writes a report wherever it ends (a fibermpi program whose rank 0 can
  /// reach the report's folder): none means it crashed or was killed, and 1 is returned.
  bool expected = true;
  /// Otherwise, why a report may be missing ("it is not a fibermpi program"): said on stderr
  /// with the launcher's own status, which is returned.
  std::string why_missing;
};

/// Starts `command` (a launcher's command line; argv[0] is looked up on PATH, or on the
/// system's default path when PATH is unset) with FIBER_EXIT_STATUS_FILE naming a file in a
/// fresh private folder (mode 0700) made in `directory`, passes on to it the termination
/// signals this process is sent by another process (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
/// SIGUSR2; a terminal's Ctrl-C reaches the launcher by itself; a signal ignored here stays
/// ignored), waits for it, and returns the program's exit status: the one its master reported;
/// else, when SIGTERM, SIGINT, SIGHUP or SIGQUIT reached this process meanwhile (however sent)
/// and the launcher failed or a report was due, 128 + its number, as a shell says of a command a
/// signal ended; else, when the launcher failed (a non-zero status, a signal: 128 + its number)
/// that one; else as `expectation` says. 127 when the launcher cannot be started (said on
/// stderr).
int run_reporting_exit_status(const std::vector<std::string>& command, const std::string& directory,
                              const std::string& program,
                              const ExitReportExpectation& expectation = {});

}  // namespace fiber::internal
