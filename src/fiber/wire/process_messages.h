// The messages of a process's life on a worker: run it, terminate it, and how it ended.
// Internal.
#pragma once

#include <cstdint>
#include <string>

#include "fiber/invoke.h"
#include "fiber/wire/outgoing.h"

namespace fiber::internal::wire {

/// Master -> worker: run a process (a Process, a pool worker or a group member).
struct Run {
  uint64_t process = 0;
  /// A spawned worker stays (waiting in the reserve) after the process ends.
  bool stay_after = false;
  std::string name;
  detail::TaskSpec task;
  /// The GPUs the master gave this worker for the process, as its CUDA_VISIBLE_DEVICES; empty:
  /// the worker's own value.
  std::string visible_gpus;

  Outgoing encode() const;
  static Run decode(const bridge::Received& in);
};

/// Master -> worker: raise `signal` (SIGTERM or SIGKILL) while `process` runs.
struct Terminate {
  uint64_t process = 0;
  int signal = 15;  ///< SIGTERM

  Outgoing encode() const;
  static Terminate decode(const bridge::Received& in);
};

/// Worker -> master: a process ended.
struct Exited {
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

  Outgoing encode() const;
  static Exited decode(const bridge::Received& in);
};

}  // namespace fiber::internal::wire

namespace fiber::internal::wire {

/// True for a worker's last message on its link: Goodbye, or Exited with worker_leaves.
bool is_last_word(const Outgoing& out);

}  // namespace fiber::internal::wire
