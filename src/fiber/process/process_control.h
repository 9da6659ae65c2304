// Starting, watching and ending Processes, whichever side of the run does it: the master itself,
// or a worker whose code starts Processes (nesting), which asks the master. The public Process
// goes through this. Internal.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "fiber/engine/link.h"
#include "fiber/invoke.h"
#include "fiber/process/process_state.h"

namespace fiber::internal {

class ProcessControl {
 public:
  virtual ~ProcessControl() = default;
  /// The state of a new, unstarted Process of this process.
  virtual std::shared_ptr<ProcessState> new_process(detail::TaskSpec task) = 0;
  /// Starts it; throws UsageError when it was started before.
  virtual void start_process(const std::shared_ptr<ProcessState>& process) = 0;
  /// Ends it with `signal` (SIGTERM or SIGKILL), in band: the worker raises it once it knows the
  /// process.
  virtual void terminate(const std::shared_ptr<ProcessState>& process, int signal) = 0;
  /// Waits until it ends or the deadline passes; true when it ended.
  virtual bool wait_ended(const std::shared_ptr<ProcessState>& process,
                          std::optional<Clock::time_point> deadline) = 0;
  /// Waits until it has a pid (or ended); returns it, 0 if it never ran.
  virtual int wait_pid(const std::shared_ptr<ProcessState>& process) = 0;
  /// Its children that were started and have not ended.
  virtual std::vector<std::shared_ptr<ProcessState>> live_children() = 0;
};

}  // namespace fiber::internal
