// A worker's last words when a signal kills it: the signal goes to a file in the run's directory,
// so the master can report "killed by signal N" for a process it could only see vanish. SIGTERM
// to a worker of a joined job is a request to leave cleanly instead. Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace fiber::internal {

/// Set (from the signal handler) when a worker of a joined job is asked to leave (SIGTERM).
inline std::atomic<bool> g_leave_requested{false};

/// Installs the handlers; `directory` is the run's directory (empty: nothing is reported).
/// `joined`: SIGTERM asks this worker to leave after its work instead of killing it.
void install_fatal_signal_reports(const std::string& directory, bool joined);
/// The process running now (0 when idle); a SIGTERM that arrives while idle is ignored once.
void set_running_process(uint64_t id);
uint64_t running_process();

}  // namespace fiber::internal
