// What a pool needs of the master besides processes and messages (ProcessHost): where its
// workers run, and the lock its callback thread takes. Internal; everything is called with the
// runtime's lock held unless it says.
#pragma once

#include <mutex>

#include "fiber/process/process_host.h"

namespace fiber::internal {

class PoolHost : public ProcessHost {
 public:
  /// It runs on a rank of the static world (never killed by fibermpi).
  virtual bool on_static_rank_locked(const ProcessState& process) const = 0;
  /// It runs in a job that joined through the rendezvous.
  virtual bool on_joined_job_locked(const ProcessState& process) const = 0;
  /// The runtime's lock (taken by the pool's callback thread).
  virtual std::unique_lock<std::mutex> lock() = 0;
};

}  // namespace fiber::internal
