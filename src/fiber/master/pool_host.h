// What a pool needs of the master: processes to run its workers, messages to them, and the lock
// and clock it works under. A narrow interface, so that pool scheduling can be tested with a fake
// host and no MPI. Internal; everything is called with the runtime's lock held unless it says.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "fiber/invoke.h"
#include "fiber/master/process_state.h"
#include "fiber/wire/outgoing.h"

namespace fiber::detail {

class PoolHost {
 public:
  virtual ~PoolHost() = default;
  virtual std::shared_ptr<ProcessState> new_process_locked(TaskSpec task,
                                                           const std::string& name_prefix) = 0;
  virtual void start_process_locked(const std::shared_ptr<ProcessState>& process) = 0;
  /// SIGTERM for a running process; a pending one ends at once.
  virtual void terminate_locked(const std::shared_ptr<ProcessState>& process) = 0;
  /// Sends to the worker running `process`; dropped when it runs nowhere any more.
  virtual void send_to_process_locked(const ProcessState& process, const Outgoing& message) = 0;
  /// It runs on a rank of the static world (never killed by fibermpi).
  virtual bool on_static_rank_locked(const ProcessState& process) const = 0;
  /// It runs in a job that joined through the rendezvous.
  virtual bool on_joined_job_locked(const ProcessState& process) const = 0;
  /// The runtime's lock (taken by the pool's callback thread).
  virtual std::unique_lock<std::mutex> lock() = 0;
  virtual std::chrono::steady_clock::time_point now() const = 0;
};

}  // namespace fiber::detail
