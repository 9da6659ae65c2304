// Everything the master knows about one fiber::Process (a pool worker is one too). Internal.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "fiber/invoke.h"

namespace fiber::internal {

/// The process id of the master itself (its queue operations, current_process()).
inline constexpr uint64_t kMasterId = 0;

enum class ProcessStatus { kCreated, kPending, kRunning, kEnded };

struct Slot;

/// Guarded by the runtime's lock.
struct ProcessState {
  uint64_t id = 0;
  std::string name;
  detail::TaskSpec task;
  bool daemon = false;
  ProcessStatus status = ProcessStatus::kCreated;
  std::optional<int> exitcode;
  int pid = 0;
  std::string host;
  std::exception_ptr start_error;  ///< Why it never ran (spawn or handshake failure).
  /// How it ended when not by returning, as its worker reported it ("uncaught ...: ...").
  std::string error;
  int signal_sent = 0;
  Slot* slot = nullptr;
  uint64_t pool = 0;   ///< The pool it serves as a worker, 0 for a plain Process.
  uint64_t group = 0;  ///< The group it is a member of, 0 for none.
  /// The process whose code started it: the master, or a worker's process (nesting), which is
  /// told when it is placed and ends, and takes it along when it ends.
  uint64_t owner = kMasterId;
  /// The worker process it runs in leaves when it ends instead of waiting in the reserve (a pool
  /// worker at maxtasksperchild wants a fresh process next).
  bool retire_worker_after = false;
  /// It runs only in a process that has run nothing before (Pool::Options::fresh_processes).
  bool needs_fresh_process = false;
  /// Cores its worker is bound to while it runs there (a pool's cpus_per_worker).
  int cores = 1;
  /// GPUs its worker is given while it runs there, when on the master's host (a pool's
  /// gpus_per_worker).
  int gpus = 0;
};

/// "name (pid N)".
std::string describe(const ProcessState& process);
/// How it ended: "... exited with code 3", "... was killed by signal 9", "... could not start",
/// with its worker's account when there is one ("... exited with code 1 (uncaught ...)").
std::string describe_exit(const ProcessState& process, std::optional<int> code);

}  // namespace fiber::internal
