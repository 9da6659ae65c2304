// What the master's parts that run work in processes (pools, groups) need of the master:
// processes, messages to them and the clock. A narrow interface, so that their decisions can
// be tested with a fake host and no MPI. Internal; everything is called with the runtime's lock
// held.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "fiber/invoke.h"
#include "fiber/process/process_state.h"
#include "fiber/wire/outgoing.h"

namespace fiber::internal {

class ProcessHost {
 public:
  virtual ~ProcessHost() = default;
  virtual std::shared_ptr<ProcessState> new_process_locked(detail::TaskSpec task,
                                                           const std::string& name_prefix) = 0;
  virtual void start_process_locked(const std::shared_ptr<ProcessState>& process) = 0;
  /// `signal` (SIGTERM or SIGKILL) for a running process; a pending one ends at once.
  virtual void terminate_locked(const std::shared_ptr<ProcessState>& process, int signal) = 0;
  /// Sends to the worker running `process`; dropped when it runs nowhere any more.
  virtual void send_to_process_locked(const ProcessState& process, const Outgoing& message) = 0;
  virtual std::chrono::steady_clock::time_point now() const = 0;
};

}  // namespace fiber::internal
