// The messages of a process's life on a worker: run it, terminate it, and how it ended.
// Internal.
#pragma once

#include <cstdint>
#include <string>

#include "fiber/invoke.h"
#include "fiber/wire/message_codec.h"

namespace fiber::internal::wire {

/// Master -> worker: run a process (a Process, a pool worker or a group member).
struct Run {
  FIBER_WIRE_MESSAGE(Run, Kind::kRun)
  uint64_t process = 0;
  /// A spawned worker stays (waiting in the reserve) after the process ends.
  bool stay_after = false;
  std::string name;
  detail::TaskSpec task;
  /// The GPUs the master gave this worker for the process, as its CUDA_VISIBLE_DEVICES; empty:
  /// the worker's own value.
  std::string visible_gpus;

  static void fields(auto& self, auto& f) {
    f.id(self.process);
    f.bits(self.stay_after);
    f.body(self.name);
    f.body(self.task);
    f.body(self.visible_gpus);
  }
};

/// Master -> worker: raise `signal` (SIGTERM or SIGKILL) while `process` runs.
struct Terminate {
  FIBER_WIRE_MESSAGE(Terminate, Kind::kTerminate)
  uint64_t process = 0;
  int signal = 15;  ///< SIGTERM

  static void fields(auto& self, auto& f) {
    f.id(self.process);
    f.aux(self.signal);
  }
  void validate() const { termination_signal(static_cast<uint64_t>(signal)); }
};

/// Worker -> master: a process ended.
struct Exited {
  FIBER_WIRE_MESSAGE(Exited, Kind::kExited)
  uint64_t process = 0;
  /// 0 on return, 1 on an uncaught exception, n after exit(n), minus the signal number when the
  /// runtime ended it as if by that signal (a group member stopped with its group).
  int code = 0;
  /// How it ended, when not by returning: "uncaught std::runtime_error: boom", "called exit(3)".
  std::string error;
  /// The worker process ends too: this is its last message.
  bool worker_leaves = false;
  /// ...and it ends without MPI_Finalize (its runtime stopped it mid-work): the rest of its MPI
  /// job may then wait in a finalize that never completes.
  bool without_finalize = false;

  static void fields(auto& self, auto& f) {
    f.id(self.process);
    f.bits(self.worker_leaves, self.without_finalize);
    f.body(self.code);
    f.body(self.error);
  }
};

/// True for a worker's last message on its link: Goodbye, or Exited with worker_leaves.
bool is_last_word(const Outgoing& out);

}  // namespace fiber::internal::wire
